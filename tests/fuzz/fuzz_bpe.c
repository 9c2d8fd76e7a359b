/* libFuzzer target: the byte-level BPE tokenizer's files on arbitrary
 * bytes. The first byte picks which file the rest is (vocab.json,
 * merges.txt, tokenizer.json or tokenizer_config.json; 'D': fairseq's
 * dict.txt over vocab.json and merges.txt; 'T': the text, over a config
 * whose added tokens strip and join as single words, one with spaces in
 * it; the others are a small valid set); a tokenizer that loads must
 * encode and decode a text with every id in range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char vocab[] = "{\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2, \"<unk>\": 3, \"a\": 4, "
                            "\"b\": 5, \"ab\": 6, \"\\u0120\": 7, \"\\u0120a\": 8, \"<mask>\": 9}";
static const char merges[] = "#version: 0.2\na b\n\xc4\xa0 a\n";
/* a legacy tokenizer's map: roles and additional special tokens, objects and texts */
static const char special[] = "{\"mask_token\": {\"content\": \"<mask>\", \"lstrip\": true}, "
                              "\"additional_special_tokens\": [\"ab\", {\"content\": \"<z>\", "
                              "\"rstrip\": true}]}";
static const char config[] = "{\"tokenizer_class\": \"BartTokenizer\", \"added_tokens_decoder\": "
                             "{\"9\": {\"content\": \"<mask>\", \"lstrip\": true, \"special\": true}}}";

/* added tokens for the added tokens' split (bpe.c: encode_parts) */
static const char words[] = "{\"tokenizer_class\": \"BartTokenizer\", \"added_tokens_decoder\": {"
                            "\"9\": {\"content\": \"<mask>\", \"lstrip\": true, \"single_word\": true},"
                            "\"10\": {\"content\": \"<z>\", \"rstrip\": true, \"single_word\": true},"
                            "\"11\": {\"content\": \" <w>\", \"lstrip\": true, \"rstrip\": true,"
                            "\"single_word\": true}, \"12\": {\"content\": \"ab \", \"rstrip\": true},"
                            "\"13\": {\"content\": \"<z>a\", \"single_word\": true}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = "ab a <mask> \xff\xfe b\xc3\xa9 <s>";
	size_t tlen = strlen(text);
	bpe_files f;
	bpe_model *m;
	lc_err err;
	const char *rest = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;

	if (!size)
		return 0;
	memset(&f, 0, sizeof f);
	f.vocab = vocab;
	f.vocab_len = sizeof vocab - 1;
	f.merges = merges;
	f.merges_len = sizeof merges - 1;
	f.config = config;
	f.config_len = sizeof config - 1;
	f.label = "fuzz";
	if (data[0] == 'T') {
		f.config = words;
		f.config_len = sizeof words - 1;
		text = rest;
		tlen = n;
	} else if (data[0] == 'D') {   /* fairseq's dict.txt over the vocabulary as encoder.json */
		f.config = NULL;
		f.config_len = 0;
		f.dict = rest;
		f.dict_len = n;
	} else switch (data[0] % 6) {
	case 0: f.vocab = rest; f.vocab_len = n; break;
	case 1: f.merges = rest; f.merges_len = n; break;
	case 2: f.vocab = f.merges = NULL; f.vocab_len = f.merges_len = 0;
	        f.tokenizer = rest; f.tokenizer_len = n; break;
	case 3: f.config = rest; f.config_len = n; break;
	/* a config without added_tokens_decoder: the legacy files */
	case 4: f.config = NULL; f.config_len = 0; f.added = rest; f.added_len = n;
	        f.special = special; f.special_len = sizeof special - 1; break;
	case 5: f.config = NULL; f.config_len = 0; f.tokenizer = rest; f.tokenizer_len = n;
	        f.special = special; f.special_len = sizeof special - 1; break;
	}
	if ((m = bpe_load(&f, &err))) {
		bpe_enc e = { 0 };
		char *out = NULL;
		size_t olen, cap = 0;
		if (bpe_encode(m, text, tlen, BPE_ENC_SPECIAL | BPE_ENC_PIECES, &e, &err) == 0) {
			for (size_t i = 0; i < e.n; i++)
				if (e.ids[i] < 0 || e.ids[i] >= bpe_vocab_size(m))
					abort();
			bpe_decode(m, e.ids, e.n, BPE_DEC_CLEANUP, &out, &olen, &cap, &err);
		}
		free(out);
		bpe_enc_free(&e);
		bpe_free(m);
	}
	return 0;
}
