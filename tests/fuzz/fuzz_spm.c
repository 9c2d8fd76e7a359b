/*
 * fuzz_spm: the SentencePiece model reader (lib/spm.h) on arbitrary bytes.
 * A model that loads must also encode and decode without trouble.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/spm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *texts[] = {
		"", "Hello, world!", "  lots   of\tspace  ", "\xe2\x96\x81 x \xe2\x96\x81",
		"<sep>a<mask>b <extra_id_0> c<extra_id_99>", "caf\xc3\xa9 \xef\xac\x81 \xe6\x97\xa5\xe6\x9c\xac",
		"\xff\xfe bad \xed\xa0\x80 utf8 \xe3\x81", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80 1234",
	};
	lc_err err;
	spm_model *m = spm_load(data, size, &err);
	spm_enc e = {0};
	char *out = NULL;
	size_t len, cap = 0;

	if (!m)
		return 0;
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		if (spm_encode(m, texts[i], strlen(texts[i]), SPM_ENC_PIECES | SPM_ENC_EXTRA, &e, &err) == 0)
			spm_decode(m, e.ids, e.n, &out, &len, &cap, &err);
	}
	{
		int32_t ids[64];
		int32_t v = spm_vocab_size(m);
		size_t n = 0;
		for (int32_t i = 0; i < v && n < 64; i++)
			ids[n++] = i;
		spm_decode(m, ids, n, &out, &len, &cap, &err);
		for (size_t i = 0; i < n; i++)
			ids[i] = v - 1 - (int32_t)i >= 0 ? v - 1 - (int32_t)i : 0;
		spm_decode(m, ids, n, &out, &len, &cap, &err);
	}
	free(out);
	spm_enc_free(&e);
	spm_free(m);
	return 0;
}
