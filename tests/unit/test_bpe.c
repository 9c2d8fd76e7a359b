/*
 * test_bpe: byte-level BPE against transformers' GPT2Tokenizer and
 * BartTokenizer (tests/data/bart/tokenizer, from the oracle):
 *
 *  - GPT-2's vocabulary on 2,036 lines, with and without add_prefix_space:
 *    ids, tokens, decoded text, and decoded text with clean-up;
 *  - the BART vocabulary's 54 cases: <s> ... </s>, <mask> with lstrip,
 *    pairs, decoding with and without special tokens;
 *  - the same tokenizer read from tokenizer.json;
 *  - malformed files refused with a message.
 */
#include <stdint.h>

#include <jansson.h>

#include "t.h"
#include "text/bpe.h"

/* The n-th line of a file (split on '\n' only) into *line; 0 at the end. */
typedef struct lines {
	char *buf;
	size_t len, pos;
} lines;

static int lines_open(lines *l, const char *rel)
{
	memset(l, 0, sizeof *l);
	l->buf = t_slurp(t_data(rel), &l->len);
	return l->buf != NULL;
}

static int lines_next(lines *l, const char **s, size_t *n)
{
	size_t e;

	if (l->pos >= l->len)
		return 0;
	for (e = l->pos; e < l->len && l->buf[e] != '\n'; e++)
		;
	*s = l->buf + l->pos;
	*n = e - l->pos;
	l->pos = e + 1;
	return 1;
}

/* ids as "a b c" */
static void ids_str(const int32_t *ids, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	out[0] = 0;
	for (size_t i = 0; i < n && o + 16 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%ld", i ? " " : "", (long)ids[i]);
}

static void gpt2(int prefix)
{
	lc_err err;
	bpe_model *m = bpe_load_dir(t_data("bart/tokenizer/gpt2"), &err);
	const char *v = prefix ? "gpt2_prefix" : "gpt2";
	char rel[256];
	lines L, I, K, D, C;
	bpe_enc e = { 0 };
	char *out = NULL, *ids = malloc(1 << 20);
	size_t olen, ocap = 0;
	int nline = 0, bad_ids = 0, bad_tok = 0, bad_dec = 0, bad_clean = 0;
	const char *s, *x = "";
	size_t n, xn = 0;

	if (!T_OK(m != NULL, "%s", err.msg))
		return;
	T_OK(!bpe_wraps(m) && bpe_eos_id(m) == 50256 && bpe_vocab_size(m) == 50257,
	     "GPT-2: no wrapping, <|endoftext|> 50256, 50257 ids");
	lines_open(&L, "bart/tokenizer/lines.txt");
	snprintf(rel, sizeof rel, "bart/tokenizer/%s.ids.txt", v);
	lines_open(&I, rel);
	snprintf(rel, sizeof rel, "bart/tokenizer/%s.tokens.txt", v);
	lines_open(&K, rel);
	snprintf(rel, sizeof rel, "bart/tokenizer/%s.decoded.txt", v);
	lines_open(&D, rel);
	snprintf(rel, sizeof rel, "bart/tokenizer/%s.decoded_cleanup.txt", v);
	lines_open(&C, rel);
	if (!T_OK(L.buf && I.buf && K.buf && D.buf && C.buf, "%s goldens", v))
		return;
	/* the files end with "\n": lines.txt has 2,036 lines */
	while (nline < 2036 && lines_next(&L, &s, &n)) {
		nline++;
		if (bpe_encode(m, s, n, BPE_ENC_PIECES | (prefix ? BPE_ENC_PREFIX : 0), &e, &err) < 0) {
			T_OK(0, "line %d: %s", nline, err.msg);
			continue;
		}
		ids_str(e.ids, e.n, ids, 1 << 20);
		lines_next(&I, &x, &xn);
		if (strlen(ids) != xn || memcmp(ids, x, xn)) {
			if (bad_ids++ < 5)
				T_OK(0, "%s line %d ids:\n  got  %s\n  want %.*s", v, nline, ids, (int)xn, x);
		}
		lines_next(&K, &x, &xn);
		if (e.plen != xn || memcmp(e.pieces, x, xn)) {
			if (bad_tok++ < 5)
				T_OK(0, "%s line %d tokens:\n  got  %s\n  want %.*s", v, nline, e.pieces, (int)xn, x);
		}
		bpe_decode(m, e.ids, e.n, 0, &out, &olen, &ocap, &err);
		lines_next(&D, &x, &xn);
		if (olen != xn || memcmp(out, x, xn)) {
			if (bad_dec++ < 5)
				T_OK(0, "%s line %d decoded: %s", v, nline, out);
		}
		bpe_decode(m, e.ids, e.n, BPE_DEC_CLEANUP, &out, &olen, &ocap, &err);
		lines_next(&C, &x, &xn);
		if (olen != xn || memcmp(out, x, xn)) {
			if (bad_clean++ < 5)
				T_OK(0, "%s line %d decoded with clean-up: %s", v, nline, out);
		}
	}
	T_EQ_I(nline, 2036);
	T_OK(bad_ids == 0, "%s: %d of %d lines with other ids", v, bad_ids, nline);
	T_OK(bad_tok == 0, "%s: %d lines with other tokens", v, bad_tok);
	T_OK(bad_dec == 0, "%s: %d lines decoded otherwise", v, bad_dec);
	T_OK(bad_clean == 0, "%s: %d lines cleaned up otherwise", v, bad_clean);
	printf("# %s: %d lines, ids %d, tokens %d, decoded %d, clean-up %d differ (PCRE2 Unicode %s)\n",
	       v, nline, bad_ids, bad_tok, bad_dec, bad_clean, bpe_unicode_version());
	free(L.buf); free(I.buf); free(K.buf); free(D.buf); free(C.buf);
	free(out);
	free(ids);
	bpe_enc_free(&e);
	bpe_free(m);
}

static void test_gpt2(void) { gpt2(0); }
static void test_gpt2_prefix(void) { gpt2(1); }

static int same_ids(const int32_t *ids, size_t n, const json_t *a)
{
	if (!json_is_array(a) || json_array_size(a) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (json_integer_value(json_array_get(a, i)) != ids[i])
			return 0;
	return 1;
}

/* tokens as HF lists them: joined by ' ' */
static int same_tokens(const bpe_enc *e, const json_t *a)
{
	char buf[8192];
	size_t o = 0, i;
	json_t *x;

	json_array_foreach((json_t *)a, i, x)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", json_string_value(x));
	return e->plen == o && memcmp(e->pieces, buf, o) == 0;
}

static void bart_cases(bpe_model *m, const char *what)
{
	lines L;
	const char *s;
	size_t n, olen, ocap = 0;
	int ncase = 0, bad = 0;
	bpe_enc e = { 0 };
	char *out = NULL;
	lc_err err;

	if (!T_OK(lines_open(&L, "bart/tokenizer/bart_small/cases.jsonl"), "cases.jsonl"))
		return;
	while (lines_next(&L, &s, &n)) {
		json_error_t je;
		json_t *c = json_loadb(s, n, 0, &je);
		const char *text, *pair;
		int32_t ids[512];
		size_t nid = 0;
		int ok = 1;
		if (!c)
			continue;
		ncase++;
		text = json_string_value(json_object_get(c, "text"));
		pair = json_string_value(json_object_get(c, "text_pair"));
		if (!pair) {
			ok &= bpe_encode(m, text, strlen(text), BPE_ENC_SPECIAL | BPE_ENC_PIECES, &e, &err) == 0;
			ok &= same_ids(e.ids, e.n, json_object_get(c, "input_ids"));
			ok &= same_tokens(&e, json_object_get(c, "tokens"));
		} else {
			/* <s> A </s></s> B </s>, from the two texts' own ids */
			ok &= bpe_encode(m, text, strlen(text), 0, &e, &err) == 0;
			ids[nid++] = bpe_bos_id(m);
			for (size_t i = 0; i < e.n && nid < 500; i++)
				ids[nid++] = e.ids[i];
			ids[nid++] = bpe_eos_id(m);
			ids[nid++] = bpe_eos_id(m);
			ok &= bpe_encode(m, pair, strlen(pair), 0, &e, &err) == 0;
			for (size_t i = 0; i < e.n && nid < 510; i++)
				ids[nid++] = e.ids[i];
			ids[nid++] = bpe_eos_id(m);
			ok &= same_ids(ids, nid, json_object_get(c, "input_ids"));
		}
		/* decoding what the oracle produced */
		{
			const json_t *in = json_object_get(c, "input_ids");
			size_t k;
			json_t *x;
			nid = 0;
			json_array_foreach((json_t *)in, k, x)
				if (nid < 512)
					ids[nid++] = (int32_t)json_integer_value(x);
			ok &= bpe_decode(m, ids, nid, BPE_DEC_CLEANUP, &out, &olen, &ocap, &err) == 0 &&
			      !strcmp(out, json_string_value(json_object_get(c, "decoded")));
			ok &= bpe_decode(m, ids, nid, BPE_DEC_CLEANUP | BPE_DEC_SKIP_SPECIAL, &out, &olen,
			                 &ocap, &err) == 0 &&
			      !strcmp(out, json_string_value(json_object_get(c, "decoded_skip_special")));
		}
		if (!ok && bad++ < 5)
			T_OK(0, "%s: case %d (\"%s\"%s%s): ids, tokens or decoding differ (decoded: %s)", what,
			     ncase, text, pair ? ", \"" : "", pair ? pair : "", out ? out : "");
		json_decref(c);
	}
	T_EQ_I(ncase, 54);
	T_OK(bad == 0, "%s: %d of %d cases differ", what, bad, ncase);
	free(L.buf);
	free(out);
	bpe_enc_free(&e);
}

static void test_bart(void)
{
	lc_err err;
	bpe_model *m = bpe_load_dir(t_data("bart/tiny_bart"), &err);

	if (!T_OK(m != NULL, "%s", err.msg))
		return;
	T_OK(bpe_wraps(m) && bpe_bos_id(m) == 0 && bpe_eos_id(m) == 2 && bpe_pad_id(m) == 1,
	     "BART: <s> 0 ... </s> 2, pad 1");
	T_OK(bpe_is_special(m, 999) && !bpe_is_special(m, 998), "<mask> is special");
	bart_cases(m, "vocab.json + merges.txt");
	bpe_free(m);
}

/* The same vocabulary as tokenizer.json (as the fast tokenizer writes it). */
static void test_tokenizer_json(void)
{
	size_t vl, ml;
	char *vocab = t_slurp(t_data("bart/tiny_bart/vocab.json"), &vl);
	char *merges = t_slurp(t_data("bart/tiny_bart/merges.txt"), &ml);
	json_t *tj, *ms, *added;
	char *text, *line, *save = NULL;
	bpe_files f;
	bpe_model *m;
	lc_err err;
	json_error_t je;

	if (!T_OK(vocab && merges, "files"))
		return;
	vocab = realloc(vocab, vl + 1);
	vocab[vl] = 0;
	merges = realloc(merges, ml + 1);
	merges[ml] = 0;
	ms = json_array();
	for (line = strtok_r(strchr(merges, '\n') + 1, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		json_array_append_new(ms, json_string(line));
	added = json_pack("[{s:i,s:s,s:b,s:b},{s:i,s:s,s:b,s:b},{s:i,s:s,s:b,s:b},{s:i,s:s,s:b,s:b},"
	                  "{s:i,s:s,s:b,s:b}]",
	                  "id", 0, "content", "<s>", "lstrip", 0, "special", 1,
	                  "id", 1, "content", "<pad>", "lstrip", 0, "special", 1,
	                  "id", 2, "content", "</s>", "lstrip", 0, "special", 1,
	                  "id", 3, "content", "<unk>", "lstrip", 0, "special", 1,
	                  "id", 999, "content", "<mask>", "lstrip", 1, "special", 1);
	tj = json_pack("{s:o, s:{s:s, s:b}, s:{s:s}, s:{s:s, s:o, s:o}}", "added_tokens", added,
	               "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0,
	               "post_processor", "type", "RobertaProcessing",
	               "model", "type", "BPE", "vocab", json_loads(vocab, 0, &je), "merges", ms);
	text = json_dumps(tj, JSON_COMPACT);
	memset(&f, 0, sizeof f);
	f.tokenizer = text;
	f.tokenizer_len = strlen(text);
	f.label = "tokenizer.json";
	m = bpe_load(&f, &err);
	if (T_OK(m != NULL, "%s", err.msg)) {
		T_OK(bpe_wraps(m) && bpe_eos_id(m) == 2, "post_processor RobertaProcessing wraps");
		bart_cases(m, "tokenizer.json");
	}
	bpe_free(m);
	json_decref(tj);
	free(text);
	free(vocab);
	free(merges);
}

/* Malformed files: refused with a message naming the problem. */
static void refuse(const char *vocab, const char *merges, const char *config, const char *want)
{
	bpe_files f;
	lc_err err;
	bpe_model *m;

	memset(&f, 0, sizeof f);
	f.vocab = vocab;
	f.vocab_len = vocab ? strlen(vocab) : 0;
	f.merges = merges;
	f.merges_len = merges ? strlen(merges) : 0;
	f.config = config;
	f.config_len = config ? strlen(config) : 0;
	f.label = "t";
	m = bpe_load(&f, &err);
	T_OK(!m && strstr(err.msg, want), "want \"%s\", got: %s", want, m ? "(accepted)" : err.msg);
	bpe_free(m);
}

static void test_refusals(void)
{
	const char *v = "{\"a\": 0, \"b\": 1, \"ab\": 2}";

	refuse("{\"a\": 0,", "#v\na b\n", NULL, "vocab.json");
	refuse("[1, 2]", "#v\na b\n", NULL, "not a JSON object");
	refuse("{\"a\": -1}", "#v\n", NULL, "must be an integer");
	refuse("{\"a\": 2147483647}", "#v\n", NULL, "must be an integer");
	refuse("{\"a\": \"x\"}", "#v\n", NULL, "must be an integer");
	refuse("{\"a\": 0, \"b\": 0}", "#v\n", NULL, "two tokens");
	refuse(v, "#v\na\n", NULL, "line 2: 1 symbols");
	refuse(v, "#v\na b c\n", NULL, "line 2: 3 symbols");
	refuse(v, "#v\na \xe2\x82\xac\n", NULL, "byte-level alphabet");
	refuse(v, NULL, NULL, "without merges.txt");
	/* ids after the vocabulary's are added tokens' (add_tokens()), but
	 * not past 65,536 of them */
	refuse(v, "#v\na b\n", "{\"added_tokens_decoder\": {\"65539\": {\"content\": \"<x>\"}}}",
	       "id 65539 outside [0, 65539) (the vocabulary and 65536 ids after it)");
	refuse(v, "#v\na b\n", "{\"added_tokens_decoder\": {\"-1\": {\"content\": \"<x>\"}}}",
	       "\"-1\" is not an id with a content");
	/* 2^32 read as an int32 was id 0: an id past int32 is no id */
	refuse(v, "#v\na b\n",
	       "{\"added_tokens_decoder\": {\"4294967296\": {\"content\": \"<x>\"}}}",
	       "\"4294967296\" is not an id with a content");
	refuse(v, "#v\na b\n", "{\"tokenizer_class\": \"BartTokenizer\"}", "needs a cls_token and a sep_token");
	refuse(v, "#v\na b\n", "{\"bos_token\": 5}", "must be a string");
	{
		/* an id inside the range that vocab.json skips */
		bpe_files f;
		lc_err err;
		bpe_model *m;
		int32_t ids[2] = { 0, 1 };
		char *out = NULL;
		size_t ol, oc = 0;
		memset(&f, 0, sizeof f);
		f.vocab = "{\"a\": 0, \"b\": 2}";
		f.vocab_len = strlen(f.vocab);
		f.merges = "#v\n";
		f.merges_len = 3;
		f.label = "t";
		m = bpe_load(&f, &err);
		T_OK(m && bpe_decode(m, ids, 2, 0, &out, &ol, &oc, &err) < 0 &&
		     strstr(err.msg, "token 1: id 1 has no token in the vocabulary (a gap"), "%s",
		     m ? err.msg : "not loaded");
		free(out);
		bpe_free(m);
	}
	{
		bpe_files f;
		lc_err err;
		memset(&f, 0, sizeof f);
		f.vocab = v;
		f.vocab_len = (size_t)BPE_MAX_FILE + 1;   /* a size claim, not read */
		f.merges = "#v\n";
		f.merges_len = 3;
		T_OK(!bpe_load(&f, &err) && strstr(err.msg, "larger than"), "huge file: %s", err.msg);
		memset(&f, 0, sizeof f);
		T_OK(!bpe_load(&f, &err) && strstr(err.msg, "no vocab.json"), "no files: %s", err.msg);
	}
	/* a well-formed toy: "ab" merges, an unknown-free byte vocabulary is not needed to load */
	{
		bpe_files f;
		lc_err err;
		bpe_model *m;
		bpe_enc e = { 0 };
		memset(&f, 0, sizeof f);
		f.vocab = v;
		f.vocab_len = strlen(v);
		f.merges = "#v\na b\n";
		f.merges_len = strlen(f.merges);
		m = bpe_load(&f, &err);
		if (T_OK(m != NULL, "%s", err.msg)) {
			int rc = bpe_encode(m, "abab", 4, 0, &e, &err);
			T_OK(rc == 0 && e.n == 2 && e.ids[0] == 2 && e.ids[1] == 2, "merged: %zu ids", e.n);
			rc = bpe_encode(m, "abc", 3, 0, &e, &err);
			T_OK(rc < 0 && strstr(err.msg, "not in the vocabulary"),
			     "a byte outside the vocabulary without <unk>: %s", err.msg);
		}
		bpe_enc_free(&e);
		bpe_free(m);
		/* GPT2Tokenizer drops merges.txt's last line when no newline ends it */
		f.merges_len = strlen(f.merges) - 1;
		m = bpe_load(&f, &err);
		if (T_OK(m != NULL, "%s", err.msg)) {
			int rc = bpe_encode(m, "ab", 2, 0, &e, &err);
			T_OK(rc == 0 && e.n == 2 && e.ids[0] == 0 && e.ids[1] == 1, "unmerged: %zu ids", e.n);
		}
		bpe_enc_free(&e);
		bpe_free(m);
	}
}

int main(void)
{
	T_RUN(test_gpt2);
	T_RUN(test_gpt2_prefix);
	T_RUN(test_bart);
	T_RUN(test_tokenizer_json);
	T_RUN(test_refusals);
	return t_done();
}
