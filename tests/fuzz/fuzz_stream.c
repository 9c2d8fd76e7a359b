/* libFuzzer target: the stream reader on arbitrary bytes must fail
 * cleanly or read documents that write back and read again the same.
 *
 * Mutated bytes almost never keep a record's CRCs right, so the reader
 * would refuse nearly every input at its first header: an input whose
 * first byte is odd is the rest with every record's CRCs recomputed
 * (the records walked by their claimed lengths), which lets the fuzzer
 * reach the parsing of bodies; an even first byte (the seeds' 'L')
 * leaves the bytes as they are, CRC checks and all. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "stream/stream.h"

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void fix_crcs(uint8_t *b, size_t n)
{
	for (size_t p = 0; p + 24 <= n;) {
		uint64_t len = le64(b + p + 8), avail = n - p - 24;
		put_le32(b + p + 16, lc_crc32c(0, b + p, 16));
		put_le32(b + p + 20, lc_crc32c(0, b + p + 24, len < avail ? len : avail));
		if (len > avail)
			break;
		p += 24 + len + ((8 - (len & 7)) & 7);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data0, size_t size)
{
	uint8_t *copy = NULL;
	const uint8_t *data = data0;

	if (size && (data0[0] & 1)) {
		if (!(copy = malloc(size)))
			return 0;
		memcpy(copy, data0 + 1, size - 1);
		fix_crcs(copy, --size);
		data = copy;
	}
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
	free(copy);
	return 0;
}
