/* Unit tests of the stream format: round trips, framing, limits and damage. */
#include "t.h"

#include <stdint.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/crc32c.h"
#include "base/dtype.h"
#include "stream/convert.h"
#include "stream/stream.h"

/* Writes docs into a memory buffer; returns its size. */
static size_t write_stream(lc_doc *docs, int n, char **buf)
{
	size_t len;
	FILE *f = open_memstream(buf, &len);
	lc_err err;
	lc_writer *w = stream_writer_new(f, &err);

	T_OK(w != NULL, "%s", err.msg);
	for (int i = 0; i < n; i++)
		T_OK(stream_write_doc(w, &docs[i], &err) == 0, "%s", err.msg);
	T_OK(stream_writer_close(w, &err) == 0, "%s", err.msg);
	fclose(f);
	return len;
}

/* Reads every document; returns the count, or -1 (message in err). */
static int read_all(const void *buf, size_t len, lc_doc *out, int max, lc_err *err)
{
	FILE *f = fmemopen((void *)buf, len ? len : 1, "rb");
	lc_reader *r;
	lc_doc d = {0};
	int n = 0, rc;

	if (len == 0) {
		fclose(f);
		f = fopen("/dev/null", "rb");
	}
	r = stream_reader_new(f, "mem", err);
	while ((rc = stream_read_doc(r, &d, err)) > 0) {
		if (out && n < max) {
			out[n] = d;
			memset(&d, 0, sizeof d);
		}
		n++;
	}
	doc_free(&d);
	stream_reader_free(r);
	fclose(f);
	return rc < 0 ? -1 : n;
}

static void fill(lc_tensor *t)
{
	uint8_t *p = t->data;
	for (uint64_t i = 0; i < t->nbytes; i++)
		p[i] = (uint8_t)(i * 131 + t->dtype * 7 + t->rank);
}

static void test_roundtrip_dtypes_ranks(void)
{
	lc_doc d;
	lc_err err;
	char *buf = NULL;
	size_t len;
	lc_doc back[1];

	T_OK(doc_init(&d, "every dtype", &err) == 0, "%s", err.msg);
	meta_set(&d.meta, "source", "a\tb\nc\\", &err);
	for (int dt = 1; dt < LC_DTYPE_END; dt++)
		for (uint32_t rank = 0; rank <= LC_MAX_RANK; rank++) {
			uint64_t dims[LC_MAX_RANK];
			char name[32];
			for (uint32_t k = 0; k < rank; k++)
				dims[k] = 1 + (k + dt) % 3;
			snprintf(name, sizeof name, "%s/%u", lc_dtype_name(dt), rank);
			lc_tensor *t = doc_add_tensor(&d, name, dt, rank, dims, &err);
			T_OK(t != NULL, "%s", err.msg);
			fill(t);
			meta_setf(&t->meta, "rank", &err, "%u", rank);
		}
	len = write_stream(&d, 1, &buf);
	T_OK(len % 8 == 0, "stream length %zu is not a multiple of 8", len);
	T_EQ_I(read_all(buf, len, back, 1, &err), 1);
	T_EQ_S(back[0].name, "every dtype");
	T_EQ_S(meta_get(&back[0].meta, "source"), "a\tb\nc\\");
	T_EQ_I(back[0].nrec, d.nrec);
	for (uint32_t i = 0; i < d.nrec && i < back[0].nrec; i++) {
		lc_tensor *a = &d.rec[i].t, *b = &back[0].rec[i].t;
		T_EQ_S(a->name, b->name);
		T_EQ_I(a->dtype, b->dtype);
		T_EQ_I(a->rank, b->rank);
		T_OK(memcmp(a->dims, b->dims, a->rank * 8) == 0, "dims of %s", a->name);
		T_OK(a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0, "data of %s", a->name);
		T_OK(((uintptr_t)b->data & 7) == 0, "data of %s not aligned", a->name);
		T_EQ_S(meta_get(&b->meta, "rank"), meta_get(&a->meta, "rank"));
	}
	doc_free(&back[0]);
	doc_free(&d);
	free(buf);
}

/* A record larger than the reader's growth by doubling (LC_HUGE_MIN, past
 * which it takes the rest at once): its bytes come back, and a stream cut
 * before, at and after the step is an error, not a short record. */
static void test_large_record(void)
{
	uint64_t dims[1] = { 5 * (LC_HUGE_MIN / 4) + 3 };
	size_t cuts[] = { 1u << 20, LC_HUGE_MIN - 8, LC_HUGE_MIN, LC_HUGE_MIN + 64,
	                  3 * LC_HUGE_MIN };
	lc_doc d, back[1];
	lc_err err;
	char *buf = NULL;
	size_t len;
	lc_tensor *t;

	T_OK(doc_init(&d, "large", &err) == 0, "%s", err.msg);
	t = doc_add_tensor(&d, "hidden", LC_F32, 1, dims, &err);
	T_OK(t != NULL, "%s", err.msg);
	fill(t);
	len = write_stream(&d, 1, &buf);
	T_EQ_I(read_all(buf, len, back, 1, &err), 1);
	T_OK(back[0].nrec == 1 && back[0].rec[0].t.nbytes == t->nbytes &&
	     memcmp(back[0].rec[0].t.data, t->data, t->nbytes) == 0, "the large record's bytes");
	doc_free(&back[0]);
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
		T_EQ_I(read_all(buf, cuts[i], NULL, 0, &err), -1);
		T_OK(strstr(err.msg, "truncated") != NULL, "cut at %zu: %s", cuts[i], err.msg);
	}
	doc_free(&d);
	free(buf);
}

static void test_empty_and_many(void)
{
	enum { N = 3000 };
	lc_doc *docs = calloc(N, sizeof *docs), *back = calloc(N, sizeof *back);
	lc_err err;
	char *buf = NULL;
	size_t len;
	int n;

	for (int i = 0; i < N; i++) {
		char name[32];
		uint64_t dim = (uint64_t)(i % 5);
		snprintf(name, sizeof name, "doc-%d", i);
		doc_init(&docs[i], name, &err);
		if (i % 3) {
			lc_tensor *t = doc_add_tensor(&docs[i], "tokens", LC_I32, 1, &dim, &err);
			for (uint64_t k = 0; k < dim; k++)
				((int32_t *)t->data)[k] = i * 10 + (int)k;
		}
	}
	len = write_stream(docs, N, &buf);
	n = read_all(buf, len, back, N, &err);
	T_EQ_I(n, N);
	int bad = 0;
	for (int i = 0; i < n && i < N; i++) {
		if (strcmp(back[i].name, docs[i].name) || back[i].index != (uint64_t)i ||
		    back[i].nrec != docs[i].nrec ||
		    (docs[i].nrec && memcmp(back[i].rec[0].t.data, docs[i].rec[0].t.data,
		                            docs[i].rec[0].t.nbytes)))
			bad++;
		doc_free(&back[i]);
		doc_free(&docs[i]);
	}
	T_OK(bad == 0, "%d of %d documents differ after the round trip", bad, N);
	free(buf);
	/* A stream with no documents at all is valid. */
	len = write_stream(NULL, 0, &buf);
	T_EQ_I(read_all(buf, len, NULL, 0, &err), 0);
	free(buf);
	free(docs);
	free(back);
}

static void test_truncation_every_byte(void)
{
	lc_doc d[2];
	lc_err err;
	char *buf = NULL;
	size_t len;
	uint64_t dim = 3;

	doc_init(&d[0], "a", &err);
	doc_add_tensor(&d[0], "tokens", LC_I32, 1, &dim, &err);
	doc_init(&d[1], "b", &err);
	meta_set(&d[1].meta, "k", "v", &err);
	doc_add_tensor(&d[1], "x", LC_F32, 1, &dim, &err);
	len = write_stream(d, 2, &buf);
	int bad = 0;
	for (size_t cut = 0; cut < len; cut++) {
		err.msg[0] = 0;
		if (read_all(buf, cut, NULL, 0, &err) != -1 || !strstr(err.msg, "byte ")) {
			bad++;
			printf("# cut at %zu not detected: %s\n", cut, err.msg);
		}
	}
	T_OK(bad == 0, "%d truncations undetected", bad);
	/* Every flipped bit is detected too. */
	bad = 0;
	for (size_t i = 0; i < len * 8; i++) {
		buf[i / 8] ^= (char)(1 << (i % 8));
		if (read_all(buf, len, NULL, 0, &err) != -1)
			bad++;
		buf[i / 8] ^= (char)(1 << (i % 8));
	}
	T_OK(bad == 0, "%d bit flips undetected", bad);
	/* A message names the document in which the damage is. */
	buf[len - 40] ^= 1;
	T_EQ_I(read_all(buf, len, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "\"b\"") != NULL, "message does not name the document: %s", err.msg);
	free(buf);
	doc_free(&d[0]);
	doc_free(&d[1]);
}

static void test_concatenation(void)
{
	lc_doc d;
	lc_err err;
	char *a = NULL, *cat;
	size_t la;
	lc_doc back[4];

	doc_init(&d, "x", &err);
	la = write_stream(&d, 1, &a);
	cat = malloc(3 * la);
	memcpy(cat, a, la);
	memcpy(cat + la, a, la);
	memcpy(cat + 2 * la, a, la);
	T_EQ_I(read_all(cat, 3 * la, back, 4, &err), 3);
	T_EQ_I(back[2].index, 2);
	for (int i = 0; i < 3; i++)
		doc_free(&back[i]);
	/* A stream cut inside the second part is still an error. */
	T_EQ_I(read_all(cat, 2 * la - 8, NULL, 0, &err), -1);
	/* Garbage after an end-of-stream record is an error, not ignored. */
	memset(cat + la, 'x', la);
	T_EQ_I(read_all(cat, 2 * la, NULL, 0, &err), -1);
	free(a);
	free(cat);
	doc_free(&d);
}

/* stream_each_batch: what one batch saw. */
struct seen {
	char names[64][16];
	int sizes[16], nb, nd, fail_at;     /* fail_at: fail in the batch holding this doc */
};

static int on_batch(lc_doc *docs, int n, void *ctx, int *bad, lc_err *err)
{
	struct seen *s = ctx;

	s->sizes[s->nb++] = n;
	for (int i = 0; i < n; i++) {
		if (s->nd == s->fail_at) {
			*bad = i;
			return lc_fail(err, "failed here");
		}
		snprintf(s->names[s->nd++], 16, "%s", docs[i].name);
	}
	return 0;
}

static void test_batches(void)
{
	char path[2][256], *buf = NULL;
	char *paths[2] = { path[0], path[1] };
	lc_doc d[7];
	lc_err err;
	struct seen s;
	size_t len;
	FILE *f;

	for (int i = 0; i < 7; i++) {
		char nm[8];
		snprintf(nm, sizeof nm, "d%d", i);
		doc_init(&d[i], nm, &err);
		doc_add_tensor(&d[i], "x", LC_U8, 1, (uint64_t[]){ 100 }, &err);
	}
	/* five documents in the first file, two in the second */
	for (int k = 0; k < 2; k++) {
		snprintf(path[k], sizeof path[k], "%s/lc-batch-%d-%d.lcs", getenv("TMPDIR") ?
		         getenv("TMPDIR") : "/tmp", (int)getpid(), k);
		len = write_stream(d + 5 * k, k ? 2 : 5, &buf);
		f = fopen(path[k], "wb");
		T_OK(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0, "writing %s", path[k]);
		free(buf);
		buf = NULL;
	}
	memset(&s, 0, sizeof s);
	s.fail_at = -1;
	T_OK(stream_each_batch(2, paths, 3, UINT64_MAX, on_batch, &s, &err) == 0, "%s", err.msg);
	/* batches span files; names in order */
	T_EQ_I(s.nb, 3);
	T_OK(s.sizes[0] == 3 && s.sizes[1] == 3 && s.sizes[2] == 1, "batch sizes %d %d %d",
	     s.sizes[0], s.sizes[1], s.sizes[2]);
	T_EQ_I(s.nd, 7);
	T_EQ_S(s.names[4], "d4");
	T_EQ_S(s.names[6], "d6");
	/* the byte limit: 250 bytes hold two documents of 100; the third would
	 * go over, so it starts the next batch */
	memset(&s, 0, sizeof s);
	s.fail_at = -1;
	T_OK(stream_each_batch(2, paths, 64, 250, on_batch, &s, &err) == 0, "%s", err.msg);
	T_OK(s.nb == 4 && s.sizes[0] == 2 && s.sizes[1] == 2 && s.sizes[2] == 2 && s.sizes[3] == 1,
	     "by bytes: %d batches", s.nb);
	T_EQ_I(s.nd, 7);
	/* a document over the limit by itself comes alone */
	memset(&s, 0, sizeof s);
	s.fail_at = -1;
	T_OK(stream_each_batch(2, paths, 64, 50, on_batch, &s, &err) == 0, "%s", err.msg);
	T_OK(s.nb == 7 && s.sizes[0] == 1 && s.sizes[6] == 1, "over the limit: %d batches", s.nb);
	T_EQ_S(s.names[6], "d6");
	/* a failure names the document it is about, not the last one read */
	memset(&s, 0, sizeof s);
	s.fail_at = 4;
	T_OK(stream_each_batch(2, paths, 3, UINT64_MAX, on_batch, &s, &err) < 0 &&
	     strstr(err.msg, "document \"d4\": failed here") && strstr(err.msg, path[0]),
	     "%s", err.msg);
	/* a damaged second file: the documents before it are processed first */
	f = fopen(path[1], "r+b");
	T_OK(f && fseek(f, -8, SEEK_END) == 0 && fputc('x', f) != EOF && fclose(f) == 0, "damage");
	memset(&s, 0, sizeof s);
	s.fail_at = -1;
	T_OK(stream_each_batch(2, paths, 64, UINT64_MAX, on_batch, &s, &err) < 0 &&
	     strstr(err.msg, path[1]), "%s", err.msg);
	T_EQ_I(s.nd, 7);
	T_EQ_I(s.nb, 1);
	for (int k = 0; k < 2; k++)
		remove(path[k]);
	for (int i = 0; i < 7; i++)
		doc_free(&d[i]);
}

/* Builds a record by hand, as a future version of lc might write it. */
static size_t raw_record(uint8_t *p, uint16_t kind, uint16_t flags, const void *body, uint64_t len)
{
	uint8_t h[24] = {'L', 'C', 'S', 'R'};
	uint32_t c;

	h[4] = (uint8_t)kind;
	h[5] = (uint8_t)(kind >> 8);
	h[6] = (uint8_t)flags;
	for (int i = 0; i < 8; i++)
		h[8 + i] = (uint8_t)(len >> (8 * i));
	c = lc_crc32c(0, h, 16);
	for (int i = 0; i < 4; i++)
		h[16 + i] = (uint8_t)(c >> (8 * i));
	c = lc_crc32c(0, body, len);
	for (int i = 0; i < 4; i++)
		h[20 + i] = (uint8_t)(c >> (8 * i));
	memcpy(p, h, 24);
	memcpy(p + 24, body, len);
	memset(p + 24 + len, 0, (8 - len % 8) % 8);
	return 24 + len + (8 - len % 8) % 8;
}

static void test_unknown_records(void)
{
	uint8_t buf[512], start[8] = {1}, zero8[8] = {0}, one8[8] = {1}, begin[9] = {1, 0, 0, 0, 4, 0, 0, 0, 'd'};
	uint8_t meta0[4] = {0}, future[5] = "hello";
	size_t n = 0;
	lc_doc back[1];
	lc_err err;
	char *out = NULL;
	size_t olen;

	memcpy(begin + 8, "d", 1);
	{
		uint8_t b[13];
		memcpy(b, begin, 9);
		memcpy(b + 9, meta0, 4);
		n += raw_record(buf + n, LC_REC_START, 0, start, 8);
		n += raw_record(buf + n, 99, 0, future, 5);            /* outside: skipped */
		n += raw_record(buf + n, LC_REC_DOC_BEGIN, 0, b, 13);
		n += raw_record(buf + n, 77, 0, future, 5);            /* inside: kept */
		one8[0] = 1;
		n += raw_record(buf + n, LC_REC_DOC_END, 0, one8, 8);
		one8[0] = 1;
		n += raw_record(buf + n, LC_REC_EOS, 0, one8, 8);
	}
	(void)zero8;
	T_EQ_I(read_all(buf, n, back, 1, &err), 1);
	T_EQ_I(back[0].nrec, 1);
	T_EQ_I(back[0].rec[0].kind, 77);
	T_OK(back[0].rec[0].body_len == 5 && memcmp(back[0].rec[0].body, "hello", 5) == 0, "body kept");
	/* Written back, the unknown record passes through. */
	{
		FILE *f = open_memstream(&out, &olen);
		lc_writer *w = stream_writer_new(f, &err);
		stream_write_doc(w, &back[0], &err);
		stream_writer_close(w, &err);
		fclose(f);
		lc_doc again[1];
		T_EQ_I(read_all(out, olen, again, 1, &err), 1);
		T_EQ_I(again[0].rec[0].kind, 77);
		doc_free(&again[0]);
		free(out);
	}
	doc_free(&back[0]);
	/* The same record marked critical is refused. */
	n = 0;
	n += raw_record(buf + n, LC_REC_START, 0, start, 8);
	n += raw_record(buf + n, 99, LC_FLAG_CRITICAL, future, 5);
	n += raw_record(buf + n, LC_REC_EOS, 0, zero8, 8);
	T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "critical") != NULL, "%s", err.msg);
}

/* The start of a stream, a document's beginning and the header of a
 * record (of an unknown kind) claiming 60 GiB; returns its length. */
static size_t claim_60g(uint8_t *p)
{
	uint8_t start[8] = {1}, begin[13] = {1, 0, 0, 0, 4, 0, 0, 0, 'd', 0, 0, 0, 0};
	uint8_t h[24] = {'L', 'C', 'S', 'R', 77, 0, 0, 0, 0, 0, 0, 0, 15, 0, 0, 0};
	uint32_t c = lc_crc32c(0, h, 16);
	size_t n = 0;

	n += raw_record(p + n, LC_REC_START, 0, start, 8);
	n += raw_record(p + n, LC_REC_DOC_BEGIN, 0, begin, 13);
	for (int i = 0; i < 4; i++)
		h[16 + i] = (uint8_t)(c >> (8 * i));
	memcpy(p + n, h, sizeof h);
	return n + sizeof h;
}

static void test_absurd_sizes(void)
{
	uint8_t buf[512], start[8] = {1}, eos[8] = {1};
	uint8_t begin[13] = {1, 0, 0, 0, 4, 0, 0, 0, 'd', 0, 0, 0, 0};
	uint8_t t[16 + 16 + 8] = {0};
	size_t n = 0;
	lc_err err;

	/* A tensor claiming 2^40 x 2^40 elements: refused before any allocation. */
	t[0] = LC_F32;
	t[1] = 2;
	t[8] = 4;                 /* meta_len: an empty block */
	t[12] = 40;               /* data_off */
	t[16 + 5] = 1;            /* dims[0] = 2^40 */
	t[24 + 5] = 1;            /* dims[1] = 2^40 */
	n += raw_record(buf + n, LC_REC_START, 0, start, 8);
	n += raw_record(buf + n, LC_REC_DOC_BEGIN, 0, begin, 13);
	n += raw_record(buf + n, LC_REC_TENSOR, 0, t, 40);
	n += raw_record(buf + n, LC_REC_DOC_END, 0, eos, 8);
	n += raw_record(buf + n, LC_REC_EOS, 0, eos, 8);
	T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "shape") || strstr(err.msg, "large"), "%s", err.msg);
	/* Rank 9. */
	t[1] = 9;
	n = 0;
	n += raw_record(buf + n, LC_REC_START, 0, start, 8);
	n += raw_record(buf + n, LC_REC_DOC_BEGIN, 0, begin, 13);
	n += raw_record(buf + n, LC_REC_TENSOR, 0, t, 40);
	T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "rank") != NULL, "%s", err.msg);
	/* A record claiming 60 GiB on a short input: an error, not an OOM. */
	n = claim_60g(buf);
	T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "truncated") != NULL, "%s", err.msg);
	/* The same after more than LC_HUGE_MIN bytes of it came, past which
	 * the reader takes a record's rest at once where it fits memory: 60
	 * GiB is not asked for at once (an allocator may abort on it, as
	 * AddressSanitizer's does), and ends truncated. */
	{
		size_t body = LC_HUGE_MIN + (1u << 20);
		uint8_t *b = calloc(1, sizeof buf + body);

		if (T_OK(b != NULL, "calloc")) {
			n = claim_60g(b) + body;
			T_EQ_I(read_all(b, n, NULL, 0, &err), -1);
			T_OK(strstr(err.msg, "truncated") != NULL, "%s", err.msg);
		}
		free(b);
	}
	/* Not a stream at all. */
	T_EQ_I(read_all("hello world, this is text\n", 26, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "not an lc stream") != NULL, "%s", err.msg);
	T_EQ_I(read_all("", 0, NULL, 0, &err), -1);
}

static void test_meta(void)
{
	lc_meta m = {0};
	lc_err err;

	T_EQ_I(meta_set(&m, "a", "1", &err), 0);
	T_EQ_I(meta_set(&m, "a", "2", &err), 0);
	T_EQ_I(m.n, 1);
	T_EQ_S(meta_get(&m, "a"), "2");
	T_EQ_I(meta_set(&m, "bad key", "x", &err), -1);
	T_EQ_I(meta_set(&m, "k=v", "x", &err), -1);
	T_EQ_I(meta_set(&m, "", "x", &err), -1);
	T_OK(meta_get(&m, "b") == NULL, "absent key");
	meta_free(&m);
	/* CRC-32C check value of "123456789". */
	T_EQ_I(lc_crc32c(0, "123456789", 9), 0xE3069283u);
	T_EQ_I(lc_crc32c(lc_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
	T_EQ_I(lc_dtype_parse("bf16"), LC_BF16);
	T_EQ_I(lc_dtype_size(LC_F64), 8);
}

/* lc_first_nonfinite, which checks every float tensor read (scanned 64
 * at a time): the first NaN or infinity wherever it falls against the
 * blocks, the largest finite values and the subnormals passed. */
static void test_nonfinite(void)
{
	enum { N = 1000 };
	static const uint32_t bad[] = { 0x7fc00000u, 0x7f800000u, 0xff800000u, 0xffc00001u };
	static const char *const name[] = { "NaN", "inf", "-inf", "NaN" };
	static const int64_t at[] = { 0, 1, 63, 64, 65, 127, 128, 511, 959, 960, 998, 999 };
	float x[N];
	const char *what;
	int ok = 1;

	for (int i = 0; i < N; i++) {
		uint32_t u = i % 3 == 0 ? 0x7f7fffffu : i % 3 == 1 ? 0x80000001u : 0x3f800000u;
		memcpy(&x[i], &u, 4);
	}
	T_OK(lc_first_nonfinite(x, N, &what) == -1, "finite: none");
	for (size_t b = 0; b < sizeof bad / sizeof *bad; b++)
		for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
			float y[N];
			memcpy(y, x, sizeof y);
			memcpy(&y[at[k]], &bad[b], 4);
			memcpy(&y[N - 1], &bad[b], 4);     /* a later one too */
			what = "";
			ok &= lc_first_nonfinite(y, N, &what) == at[k] && !strcmp(what, name[b]);
			ok &= lc_first_nonfinite(y, (uint64_t)at[k], &what) == -1;
		}
	T_OK(ok, "the first non-finite value, at every place against the blocks");
	{
		static const uint16_t bad16[] = { 0x7fc0u, 0x7f80u, 0xff80u, 0xffc1u };
		uint16_t h[N];
		for (int i = 0; i < N; i++)
			h[i] = i % 3 == 0 ? 0x7f7fu : i % 3 == 1 ? 0x8001u : 0x3f80u;
		T_OK(lc_first_nonfinite_bf16(h, N, &what) == -1, "bf16 finite: none");
		ok = 1;
		for (size_t b = 0; b < sizeof bad16 / sizeof *bad16; b++)
			for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
				uint16_t g[N];
				memcpy(g, h, sizeof g);
				g[at[k]] = g[N - 1] = bad16[b];
				what = "";
				ok &= lc_first_nonfinite_bf16(g, N, &what) == at[k] && !strcmp(what, name[b]);
				ok &= lc_first_nonfinite_bf16(g, (uint64_t)at[k], &what) == -1;
			}
		T_OK(ok, "bf16: the first non-finite value, at every place against the blocks");
	}
}

/* Fields the format says are zero are refused when they are not (they
 * were read past and written back as zero: an ill-formed input passed on
 * as valid), and a name or metadata over the limits says which limit. */
static void test_reserved_and_limits(void)
{
	static uint8_t buf[2 * LC_MAX_NAME + 256];
	uint8_t start[8] = {1}, bad_start[8] = {1, 0, 0, 0, 7}, zero8[8] = {0}, one8[8] = {1};
	uint8_t begin[13] = {1, 0, 0, 0, 4, 0, 0, 0, 'd', 0, 0, 0, 0};
	/* a rank-0 u8 tensor named "t": dtype, rank, the two zero bytes, name
	 * length 1, metadata length 4, data offset 24; name, metadata, pad, data */
	uint8_t tensor[25] = {LC_U8, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 24, 0, 0, 0, 't'};
	static uint8_t longb[8 + LC_MAX_NAME + 1 + 4];
	lc_err err;
	size_t n;


	n = raw_record(buf, LC_REC_START, 0, bad_start, 8);
	n += raw_record(buf + n, LC_REC_EOS, 0, zero8, 8);
	T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "start record with a non-zero reserved field") != NULL, "%s", err.msg);

	for (int bad = 0; bad < 3; bad++) {
		lc_doc back[1] = {{0}};   /* freed whether or not the read filled it */
		tensor[2] = bad == 1;
		tensor[3] = bad == 2;
		n = raw_record(buf, LC_REC_START, 0, start, 8);
		n += raw_record(buf + n, LC_REC_DOC_BEGIN, 0, begin, 13);
		n += raw_record(buf + n, LC_REC_TENSOR, 0, tensor, 25);
		n += raw_record(buf + n, LC_REC_DOC_END, 0, one8, 8);
		n += raw_record(buf + n, LC_REC_EOS, 0, one8, 8);
		if (bad == 0) {
			T_OK(read_all(buf, n, back, 1, &err) == 1, "%s", err.msg);
			doc_free(&back[0]);
		} else {
			T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
			T_OK(strstr(err.msg, "tensor record with a non-zero reserved field") != NULL, "%s",
			     err.msg);
		}
	}

	/* a document name of LC_MAX_NAME + 1 bytes */
	longb[0] = (uint8_t)(LC_MAX_NAME + 1);
	longb[1] = (uint8_t)((LC_MAX_NAME + 1) >> 8);
	longb[4] = 4;
	memset(longb + 8, 'x', LC_MAX_NAME + 1);
	n = raw_record(buf, LC_REC_START, 0, start, 8);
	n += raw_record(buf + n, LC_REC_DOC_BEGIN, 0, longb, sizeof longb);
	n += raw_record(buf + n, LC_REC_DOC_END, 0, zero8, 8);
	n += raw_record(buf + n, LC_REC_EOS, 0, one8, 8);
	T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
	T_OK(strstr(err.msg, "document name of 4097 bytes or metadata of 4 (the limits are 4096 "
	                     "and 16777216)") != NULL, "%s", err.msg);
}

/* A document header with LC_MAX_NMETA keys: all distinct, it reads (the
 * duplicate check compared every pair: 17 s of CPU a record); the last
 * one a repeat of an early one, the error names it. */
static void test_many_keys(void)
{
	size_t nk = LC_MAX_NMETA, ml = 4 + nk * (8 + 6), bl = 8 + 1 + ml, n;
	uint8_t *b = malloc(bl), *buf = malloc(bl + 256), start[8] = {1}, one8[8] = {1};
	uint8_t zero8[8] = {0};
	lc_doc back[1] = {{0}};
	lc_err err;

	T_OK(b && buf, "malloc");
	if (!b || !buf)
		goto out;
	for (int dup = 0; dup < 2; dup++) {
		uint8_t *p = b;
		memset(b, 0, bl);
		p[0] = 1;
		p[4] = (uint8_t)ml;
		p[5] = (uint8_t)(ml >> 8);
		p[6] = (uint8_t)(ml >> 16);
		p[8] = 'd';
		p += 9;
		p[0] = (uint8_t)nk;
		p[1] = (uint8_t)(nk >> 8);
		p[2] = (uint8_t)(nk >> 16);
		p += 4;
		for (size_t i = 0; i < nk; i++, p += 14) {
			char key[7];
			snprintf(key, sizeof key, "k%05zu", dup && i == nk - 1 ? (size_t)7 : i);
			p[0] = 6;
			memcpy(p + 8, key, 6);
		}
		n = raw_record(buf, LC_REC_START, 0, start, 8);
		n += raw_record(buf + n, LC_REC_DOC_BEGIN, 0, b, bl);
		n += raw_record(buf + n, LC_REC_DOC_END, 0, zero8, 8);
		n += raw_record(buf + n, LC_REC_EOS, 0, one8, 8);
		if (!dup) {
			T_OK(read_all(buf, n, back, 1, &err) == 1, "%s", err.msg);
			T_EQ_I(back[0].meta.n, (int)nk);
			doc_free(&back[0]);
		} else {
			T_EQ_I(read_all(buf, n, NULL, 0, &err), -1);
			T_OK(strstr(err.msg, "metadata key 'k00007' appears twice") != NULL, "%s", err.msg);
		}
	}
out:
	free(b);
	free(buf);
}

/* A name over LC_MAX_NAME is refused, the message showing its start (the
 * callers, a tar member or a stream document, may not name it). */
static void test_long_name(void)
{
	char *name = malloc(LC_MAX_NAME + 2);
	lc_doc d;
	lc_err err;

	T_OK(name != NULL, "malloc");
	if (!name)
		return;
	memset(name, 'x', LC_MAX_NAME + 1);
	name[LC_MAX_NAME + 1] = 0;
	T_EQ_I(doc_init(&d, name, &err), -1);
	T_OK(strncmp(err.msg, "document name \"xxxx", 19) == 0 &&
	     strstr(err.msg, "...\" is 4097 bytes, longer than 4096") != NULL, "%s", err.msg);
	name[LC_MAX_NAME] = 0;
	T_EQ_I(doc_init(&d, name, &err), 0);
	doc_free(&d);
	free(name);
}

/* Two tensors of one name: doc_count sees both, and the readers of token
 * ids (lc-encode's) refuse the document rather than take the first. */
static void test_two_of_a_name(void)
{
	lc_doc d;
	lc_err err;
	uint64_t n = 2;
	int32_t *ids = NULL;
	int64_t L;

	T_OK(doc_init(&d, "twice", &err) == 0, "%s", err.msg);
	T_OK(doc_add_tensor(&d, "tokens", LC_I32, 1, &n, &err) != NULL, "%s", err.msg);
	T_EQ_I(doc_count(&d, "tokens"), 1);
	T_EQ_I(convert_token_ids(&d, 100, &ids, &L, &err), 0);
	free(ids);
	T_OK(doc_add_tensor(&d, "tokens", LC_I32, 1, &n, &err) != NULL, "%s", err.msg);
	T_EQ_I(doc_count(&d, "tokens"), 2);
	T_EQ_I(doc_count(&d, "hidden"), 0);
	T_EQ_I(convert_token_ids(&d, 100, &ids, &L, &err), -1);
	T_EQ_S(err.msg, "2 \"tokens\" tensors: which are its ids?");
	doc_free(&d);
}

int main(void)
{
	T_RUN(test_long_name);
	T_RUN(test_two_of_a_name);
	T_RUN(test_meta);
	T_RUN(test_roundtrip_dtypes_ranks);
	T_RUN(test_empty_and_many);
	T_RUN(test_truncation_every_byte);
	T_RUN(test_large_record);
	T_RUN(test_concatenation);
	T_RUN(test_batches);
	T_RUN(test_unknown_records);
	T_RUN(test_reserved_and_limits);
	T_RUN(test_many_keys);
	T_RUN(test_absurd_sizes);
	T_RUN(test_nonfinite);
	return t_done();
}
