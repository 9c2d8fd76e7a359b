/* libFuzzer target: the stream reader on arbitrary bytes must fail
 * cleanly or read documents that write back and read again the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size ? size : 1, "rb");
	lc_err err;
	lc_reader *r;
	lc_doc d = {0};
	char *out = NULL;
	size_t olen = 0;
	FILE *o = open_memstream(&out, &olen);
	lc_writer *w = stream_writer_new(o, &err);

	if (!size) {
		fclose(f);
		f = fopen("/dev/null", "rb");
	}
	r = stream_reader_new(f, "fuzz", &err);
	int rc;
	while ((rc = stream_read_doc(r, &d, &err)) > 0)
		if (stream_write_doc(w, &d, &err) < 0)
			abort();
	doc_free(&d);
	stream_reader_free(r);
	fclose(f);
	stream_writer_close(w, &err);
	fclose(o);
	if (rc == 0) {
		/* What was read whole must read back whole from its rewrite. */
		FILE *g = fmemopen(out, olen, "rb");
		lc_reader *r2 = stream_reader_new(g, "rewrite", &err);
		while ((rc = stream_read_doc(r2, &d, &err)) > 0)
			;
		if (rc < 0)
			abort();
		doc_free(&d);
		stream_reader_free(r2);
		fclose(g);
	}
	free(out);
	return 0;
}
