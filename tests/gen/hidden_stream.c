/*
 * hidden_stream: packs golden encoder outputs (raw little-endian float32
 * [L, d] files, e.g. the oracle's cases/L0064/enc_out.f32) into an lc
 * stream of "hidden" documents, as lc-encode writes them, so that
 * lc-decode's tests do not depend on the encoder. Used once, by hand:
 *
 *   cc -Ilib tests/gen/hidden_stream.c build/liblc.a ... -o /tmp/hs
 *   /tmp/hs 64 NAME=FILE... > tests/data/locost/hidden.lcs
 *
 * With -b first, the tensors are bf16, each value rounded to nearest even
 * (as lc-encode --dtype bf16 writes them; bench/speed.sh's bf16 states).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "stream/stream.h"

int main(int argc, char **argv)
{
	lc_err err;
	lc_writer *w;
	int i, d, b16 = argc > 1 && !strcmp(argv[1], "-b");

	argv += b16;
	argc -= b16;
	if (argc < 3)
		return 2;
	d = atoi(argv[1]);
	if (!(w = stream_writer_new(stdout, &err)))
		goto fail;
	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		FILE *f;
		long n;
		uint64_t dims[2];
		lc_doc doc = {0};
		lc_tensor *t;

		if (!eq)
			return 2;
		*eq = 0;
		if (!(f = fopen(eq + 1, "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0)
			return 1;
		rewind(f);
		dims[0] = (uint64_t)n / 4 / (uint64_t)d;
		dims[1] = (uint64_t)d;
		if (doc_init(&doc, argv[i], &err) < 0 ||
		    !(t = doc_add_tensor(&doc, "hidden", b16 ? LC_BF16 : LC_F32, 2, dims, &err)))
			goto fail;
		if (b16) {      /* a row at a time */
			float *row = malloc((size_t)d * sizeof *row);

			for (uint64_t r = 0; row && r < dims[0]; r++) {
				if (fread(row, sizeof *row, (size_t)d, f) != (size_t)d)
					return 1;
				lc_f32_to_bf16_n(row, (uint64_t)d, (uint16_t *)t->data + r * (uint64_t)d);
			}
			if (!row)
				return 1;
			free(row);
		} else if (fread(t->data, 1, (size_t)n, f) != (size_t)n) {
			return 1;
		}
		fclose(f);
		if (stream_write_doc(w, &doc, &err) < 0)
			goto fail;
		doc_free(&doc);
	}
	if (stream_writer_close(w, &err) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "hidden_stream: %s\n", err.msg);
	return 1;
}
