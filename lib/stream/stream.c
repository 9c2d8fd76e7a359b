/*
 * The lc stream format; the specification is man/man5/lc-stream.5.
 *
 * Record = 24-byte header + body + zero padding to a multiple of 8:
 *   0  "LCSR"      4  u16 kind   6  u16 flags   8  u64 body length
 *   16 u32 CRC-32C of bytes 0..15   20 u32 CRC-32C of the body
 * Every field is read and written byte by byte in little-endian order.
 *
 * The reader trusts nothing: the header CRC is checked before the length
 * is believed, every length is checked against its limit, and bodies are
 * read into buffers that grow only as bytes actually arrive, so a hostile
 * length on a short input costs at most what the input really holds.
 */
#include "stream/doc_int.h"

#include "base/arena.h"
#include "base/crc32c.h"
#include "base/fault.h"
#include "base/machine.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HDR_LEN 24
#define VERSION 1
static const uint8_t MAGIC[4] = {'L', 'C', 'S', 'R'};

/* ---------- little-endian fields ---------- */

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t pad8(uint64_t n) { return (8 - (n & 7)) & 7; }

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static void swap_elems(void *data, uint64_t nbytes, size_t size)
{
	uint8_t *p = data;
	for (uint64_t i = 0; i + size <= nbytes; i += size)
		for (size_t a = 0, b = size - 1; a < b; a++, b--) {
			uint8_t t = p[i + a];
			p[i + a] = p[i + b];
			p[i + b] = t;
		}
}
#endif

/* ---------- metadata on the wire ---------- */

/* Encoded size of a metadata block: u32 count, then (u32 klen, u32 vlen, key, val)*. */
static uint64_t meta_wire_len(const lc_meta *m)
{
	uint64_t n = 4;
	for (uint32_t i = 0; i < m->n; i++)
		n += 8 + strlen(m->kv[i].key) + strlen(m->kv[i].val);
	return n;
}

static uint8_t *meta_encode(uint8_t *p, const lc_meta *m)
{
	put32(p, m->n);
	p += 4;
	for (uint32_t i = 0; i < m->n; i++) {
		size_t kl = strlen(m->kv[i].key), vl = strlen(m->kv[i].val);
		put32(p, (uint32_t)kl);
		put32(p + 4, (uint32_t)vl);
		memcpy(p + 8, m->kv[i].key, kl);
		memcpy(p + 8 + kl, m->kv[i].val, vl);
		p += 8 + kl + vl;
	}
	return p;
}

static int has_nul(const uint8_t *p, size_t n)
{
	return memchr(p, 0, n) != NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No key twice, found by sorting: comparing each key with every other
 * took a hostile record of 65,536 keys 17 s of CPU time. */
static int meta_unique(const lc_meta *m, lc_err *err)
{
	char **k;
	int rc = 0;

	if (m->n < 2)
		return 0;
	if (!(k = malloc(m->n * sizeof *k)))
		return lc_fail(err, "out of memory");
	for (uint32_t i = 0; i < m->n; i++)
		k[i] = m->kv[i].key;
	qsort(k, m->n, sizeof *k, cmp_str);
	for (uint32_t i = 1; i < m->n && rc == 0; i++)
		if (strcmp(k[i - 1], k[i]) == 0)
			rc = lc_fail(err, "metadata key '%s' appears twice", k[i]);
	free(k);
	return rc;
}

/* Decodes exactly len bytes at p into m (which must be empty). */
static int meta_decode(lc_meta *m, const uint8_t *p, uint64_t len, lc_err *err)
{
	uint64_t off = 4;
	uint32_t n;

	if (len < 4)
		return lc_fail(err, "metadata block of %llu bytes is too short", (unsigned long long)len);
	n = get32(p);
	if (n > LC_MAX_NMETA || n > (len - 4) / 8)
		return lc_fail(err, "metadata claims %u entries in %llu bytes", n, (unsigned long long)len);
	if (n && !(m->kv = calloc(n, sizeof *m->kv)))
		return lc_fail(err, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t kl, vl;
		if (len - off < 8)
			return lc_fail(err, "metadata entry %u runs past its block", i);
		kl = get32(p + off);
		vl = get32(p + off + 4);
		off += 8;
		if (kl > len - off || vl > len - off - kl)
			return lc_fail(err, "metadata entry %u runs past its block", i);
		if (!meta_key_ok((const char *)p + off, kl))
			return lc_fail(err, "metadata entry %u has a bad key", i);
		if (has_nul(p + off + kl, vl))
			return lc_fail(err, "metadata entry %u has a NUL byte in its value", i);
		if (!(m->kv[i].key = strndup((const char *)p + off, kl)) ||
		    !(m->kv[i].val = strndup((const char *)p + off + kl, vl))) {
			m->n = i + 1;
			return lc_fail(err, "out of memory");
		}
		m->n = i + 1;
		off += kl + vl;
	}
	if (off != len)
		return lc_fail(err, "metadata block has %llu stray bytes", (unsigned long long)(len - off));
	return meta_unique(m, err);
}

/* ---------- reading ---------- */

enum rstate { R_START, R_OUTSIDE, R_DONE };

struct lc_reader {
	FILE *f;
	char *label;
	uint64_t off;        /* bytes consumed */
	uint64_t rec_off;    /* offset of the record being read */
	enum rstate state;
	uint64_t ndocs;      /* documents in the current stream segment */
	uint64_t index;      /* documents read in all */
	const char *doc;     /* name of the document being read, for messages */
	char *prev;          /* the last document read whole, for messages between documents */
};

lc_reader *stream_reader_new(FILE *f, const char *label, lc_err *err)
{
	lc_reader *r = calloc(1, sizeof *r);

	if (!r || !(r->label = strdup(!label || strcmp(label, "-") == 0 ? "stdin" : label))) {
		free(r);
		lc_fail(err, "out of memory");
		return NULL;
	}
	r->f = f;
	return r;
}

void stream_reader_free(lc_reader *r)
{
	if (r) {
		free(r->label);
		free(r->prev);
		free(r);
	}
}

uint64_t stream_reader_offset(const lc_reader *r)
{
	return r->off;
}

__attribute__((format(printf, 3, 4)))
static int rfail(lc_reader *r, lc_err *err, const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (r->doc)
		return lc_fail(err, "%s: document %llu \"%.200s\": byte %llu: %s", r->label,
		               (unsigned long long)r->index, r->doc, (unsigned long long)r->rec_off, what);
	if (r->prev)
		return lc_fail(err, "%s: after document %llu \"%.200s\": byte %llu: %s", r->label,
		               (unsigned long long)r->index - 1, r->prev,
		               (unsigned long long)r->rec_off, what);
	return lc_fail(err, "%s: byte %llu: %s", r->label, (unsigned long long)r->rec_off, what);
}

/* Reads up to n bytes; returns how many (short only at EOF or error). */
static size_t rd(lc_reader *r, void *p, size_t n)
{
	size_t got = n ? fread(p, 1, n, r->f) : 0;
	r->off += got;
	return got;
}

static int rd_exact(lc_reader *r, void *p, size_t n, lc_err *err)
{
	if (rd(r, p, n) != n)
		return ferror(r->f) ? rfail(r, err, "read error: %s", strerror(errno))
		                    : rfail(r, err, "truncated stream (input ends inside a record)");
	return 0;
}

/* Reads n bytes into a fresh buffer that grows by doubling as data
 * arrives, so that a short stream whose header lies allocates little.
 * Once LC_HUGE_MIN bytes have come, a record that fits the memory this
 * process may use takes the rest at once (address space: pages are only
 * committed as data fills them), in 2 MiB pages where the kernel gives
 * them: a record that large is encoder states, which every decoder layer
 * reads at every step (bf16 greedy at 600K states, 0.446 s a step
 * against 0.490 in 4 KiB pages), and doubling would move it (realloc's
 * mremap splits 2 MiB pages). A larger one goes on doubling, to fail
 * where the data outgrows memory, or ends as truncated. */
static int rd_alloc(lc_reader *r, uint64_t n, uint8_t **out, lc_err *err)
{
	uint64_t have = 0, cap = n < (1u << 20) ? n : (1u << 20);
	uint8_t *p = malloc(cap ? cap : 1), *q;

	if (!p)
		return rfail(r, err, "out of memory");
	while (have < n) {
		if (have == cap) {
			if (cap * 2 > n || (cap >= LC_HUGE_MIN && n <= machine_memory(NULL)))
				cap = n;
			else
				cap *= 2;
			if (!(q = realloc(p, cap))) {
				free(p);
				return rfail(r, err, "out of memory for a %llu-byte record",
				             (unsigned long long)n);
			}
			p = q;
			lc_huge_hint(p + have, cap - have);
		}
		if (rd_exact(r, p + have, cap - have, err) < 0) {
			free(p);
			return -1;
		}
		have = cap;
	}
	*out = p;
	return 0;
}

/* Consumes and checks the zero padding after a body of len bytes. */
static int rd_pad(lc_reader *r, uint64_t len, lc_err *err)
{
	uint8_t pad[8];
	uint64_t n = pad8(len);

	if (rd_exact(r, pad, n, err) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		if (pad[i])
			return rfail(r, err, "corrupt record (non-zero padding)");
	return 0;
}

struct rhdr {
	uint16_t kind, flags;
	uint64_t len;
	uint32_t bcrc;
};

/* 1: header read; 0: clean EOF before any byte; -1: error. */
static int rd_header(lc_reader *r, struct rhdr *h, lc_err *err)
{
	uint8_t b[HDR_LEN];
	size_t got;

	r->rec_off = r->off;
	got = rd(r, b, HDR_LEN);
	if (got == 0 && !ferror(r->f))
		return 0;
	if (got < 4 || memcmp(b, MAGIC, 4) != 0) {
		if (got >= 4 && memcmp(b, MAGIC, 4) != 0)
			return rfail(r, err, r->off == got ? "not an lc stream (bad magic)"
			                                   : "corrupt stream (bad record magic)");
		return ferror(r->f) ? rfail(r, err, "read error: %s", strerror(errno))
		                    : rfail(r, err, "truncated stream (input ends inside a record header)");
	}
	if (got < HDR_LEN)
		return rfail(r, err, "truncated stream (input ends inside a record header)");
	if (lc_crc32c(0, b, 16) != get32(b + 16))
		return rfail(r, err, "corrupt record header (CRC mismatch)");
	h->kind = get16(b + 4);
	h->flags = get16(b + 6);
	h->len = get64(b + 8);
	h->bcrc = get32(b + 20);
	if (h->len > LC_MAX_RECORD)
		return rfail(r, err, "record of %llu bytes is above the %llu-byte limit",
		             (unsigned long long)h->len, (unsigned long long)LC_MAX_RECORD);
	return 1;
}

/* Reads a small body of a fixed or bounded size. */
static int rd_body(lc_reader *r, const struct rhdr *h, uint8_t **body, lc_err *err)
{
	if (rd_alloc(r, h->len, body, err) < 0)
		return -1;
	if (lc_crc32c(0, *body, h->len) != h->bcrc) {
		free(*body);
		*body = NULL;
		return rfail(r, err, "corrupt record (CRC mismatch)");
	}
	if (rd_pad(r, h->len, err) < 0) {
		free(*body);
		*body = NULL;
		return -1;
	}
	return 0;
}

static int read_tensor(lc_reader *r, const struct rhdr *h, lc_tensor *t, lc_err *err)
{
	uint8_t fixed[16 + 8 * LC_MAX_RANK], *var = NULL;
	uint64_t fixlen, name_len, meta_len, data_off, numel, nbytes, varlen;
	uint32_t crc;
	int dtype;

	memset(t, 0, sizeof *t);
	if (h->len < 16)
		return rfail(r, err, "tensor record of %llu bytes is too short", (unsigned long long)h->len);
	if (rd_exact(r, fixed, 16, err) < 0)
		return -1;
	dtype = fixed[0];
	t->rank = fixed[1];
	name_len = get32(fixed + 4);
	meta_len = get32(fixed + 8);
	data_off = get32(fixed + 12);
	if (!lc_dtype_size(dtype))
		return rfail(r, err, "tensor of unknown dtype %d", dtype);
	if (t->rank > LC_MAX_RANK)
		return rfail(r, err, "tensor of rank %u (the limit is %d)", t->rank, LC_MAX_RANK);
	fixlen = 16 + 8 * (uint64_t)t->rank;
	if (fixed[2] || fixed[3])
		return rfail(r, err, "tensor record with a non-zero reserved field");
	if (name_len > LC_MAX_NAME || meta_len > LC_MAX_META)
		return rfail(r, err, "tensor name of %llu bytes or metadata of %llu (the limits are %d "
		             "and %u)", (unsigned long long)name_len, (unsigned long long)meta_len,
		             LC_MAX_NAME, LC_MAX_META);
	varlen = name_len + meta_len;
	if (data_off & 7 || data_off < fixlen + varlen || data_off - fixlen - varlen >= 8 ||
	    data_off > h->len)
		return rfail(r, err, "tensor record with an inconsistent layout");
	if (rd_exact(r, fixed + 16, fixlen - 16, err) < 0)
		return -1;
	for (uint32_t i = 0; i < t->rank; i++)
		t->dims[i] = get64(fixed + 16 + 8 * i);
	t->dtype = dtype;
	if (tensor_shape_bytes(dtype, t->rank, t->dims, &numel, &nbytes) < 0 ||
	    nbytes != h->len - data_off)
		return rfail(r, err, "tensor shape does not match its record length");
	crc = lc_crc32c(0, fixed, fixlen);
	if (rd_alloc(r, data_off - fixlen, &var, err) < 0)
		return -1;
	crc = lc_crc32c(crc, var, data_off - fixlen);
	/* The data: its own allocation, so that it needs no copy later. */
	if (rd_alloc(r, nbytes, (uint8_t **)&t->data, err) < 0)
		goto fail;
	t->nbytes = nbytes;
	crc = lc_crc32c(crc, t->data, nbytes);
	if (crc != h->bcrc) {
		rfail(r, err, "corrupt record (CRC mismatch)");
		goto fail;
	}
	if (rd_pad(r, h->len, err) < 0)
		goto fail;
	for (uint64_t i = varlen; i < data_off - fixlen; i++)
		if (var[i]) {
			rfail(r, err, "corrupt record (non-zero padding)");
			goto fail;
		}
	if (has_nul(var, name_len)) {
		rfail(r, err, "tensor name with a NUL byte");
		goto fail;
	}
	if (!(t->name = strndup((char *)var, name_len))) {
		rfail(r, err, "out of memory");
		goto fail;
	}
	if (meta_decode(&t->meta, var + name_len, meta_len, err) < 0) {
		char m[sizeof err->msg];
		snprintf(m, sizeof m, "%s", err ? err->msg : "");
		rfail(r, err, "tensor '%s': %s", t->name, m);
		goto fail;
	}
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	swap_elems(t->data, nbytes, lc_dtype_size(dtype));
#endif
	free(var);
	return 0;
fail:
	free(var);
	tensor_free(t);
	return -1;
}

static int parse_begin(lc_reader *r, const uint8_t *b, uint64_t len, lc_doc *d, lc_err *err)
{
	uint64_t nl, ml;

	if (len < 8)
		return rfail(r, err, "document header of %llu bytes is too short", (unsigned long long)len);
	nl = get32(b);
	ml = get32(b + 4);
	if (nl > LC_MAX_NAME || ml > LC_MAX_META)
		return rfail(r, err, "document name of %llu bytes or metadata of %llu (the limits are %d "
		             "and %u)", (unsigned long long)nl, (unsigned long long)ml, LC_MAX_NAME,
		             LC_MAX_META);
	if (8 + nl + ml != len)
		return rfail(r, err, "document header with an inconsistent layout");
	if (has_nul(b + 8, nl))
		return rfail(r, err, "document name with a NUL byte");
	if (!(d->name = strndup((const char *)b + 8, nl)))
		return rfail(r, err, "out of memory");
	if (meta_decode(&d->meta, b + 8 + nl, ml, err) < 0) {
		char m[sizeof err->msg];
		snprintf(m, sizeof m, "%s", err ? err->msg : "");
		return rfail(r, err, "document header: %s", m);
	}
	return 0;
}

int stream_read_doc(lc_reader *r, lc_doc *d, lc_err *err)
{
	struct rhdr h;
	uint8_t *body = NULL;
	int rc;

	doc_free(d);
	r->doc = NULL;
	for (;;) {
		if ((rc = rd_header(r, &h, err)) <= 0) {
			if (rc < 0)
				return -1;
			if (r->state == R_DONE)
				return 0;
			if (r->state == R_START && r->off == 0)
				return rfail(r, err, "empty input (not an lc stream)");
			/* a writer that failed before its first document (a missing
			 * input at the head of a pipeline) leaves just the start */
			if (r->state == R_OUTSIDE && r->index == 0)
				return rfail(r, err, "truncated stream (it ends after its start, before "
				             "any document: the program writing it failed?)");
			return rfail(r, err, "truncated stream (no end-of-stream record)");
		}
		if (r->state != R_OUTSIDE && h.kind != LC_REC_START)
			return rfail(r, err, r->off == HDR_LEN ? "not an lc stream (no start record)"
			                                       : "record after the end of the stream");
		switch (h.kind) {
		case LC_REC_START:
			if (r->state == R_OUTSIDE)
				return rfail(r, err, "start record inside a stream");
			if (h.len != 8 || rd_body(r, &h, &body, err) < 0)
				return h.len != 8 ? rfail(r, err, "bad start record") : -1;
			rc = get32(body);
			{
				uint32_t zero = get32(body + 4);
				free(body);
				if (rc == VERSION && zero)
					return rfail(r, err, "start record with a non-zero reserved field");
			}
			if (rc != VERSION)
				return rfail(r, err, "stream format version %d (this reader knows %d)", rc, VERSION);
			r->state = R_OUTSIDE;
			r->ndocs = 0;
			continue;
		case LC_REC_EOS:
			if (h.len != 8 || rd_body(r, &h, &body, err) < 0)
				return h.len != 8 ? rfail(r, err, "bad end-of-stream record") : -1;
			{
				uint64_t n = get64(body);
				free(body);
				if (n != r->ndocs)
					return rfail(r, err, "end-of-stream record counts %llu documents, the stream had %llu",
					             (unsigned long long)n, (unsigned long long)r->ndocs);
			}
			r->state = R_DONE;
			continue;
		case LC_REC_DOC_BEGIN:
			break;
		case LC_REC_TENSOR:
		case LC_REC_DOC_END:
			return rfail(r, err, "record outside a document");
		default:
			if (h.flags & LC_FLAG_CRITICAL)
				return rfail(r, err, "record of unknown kind %u marked critical", h.kind);
			if (rd_body(r, &h, &body, err) < 0)
				return -1;
			free(body);
			continue;
		}
		break;
	}
	/* A document: DOC_BEGIN, records, DOC_END. */
	if (h.len > 8 + LC_MAX_NAME + LC_MAX_META)
		return rfail(r, err, "document header above the size limits");
	if (rd_body(r, &h, &body, err) < 0)
		return -1;
	rc = parse_begin(r, body, h.len, d, err);
	free(body);
	if (rc < 0) {
		doc_free(d);
		return -1;
	}
	d->index = r->index;
	r->doc = d->name;
	for (;;) {
		lc_rec *rec;

		if ((rc = rd_header(r, &h, err)) <= 0) {
			if (rc == 0)
				rfail(r, err, "truncated stream (document not ended)");
			goto fail;
		}
		if (h.kind == LC_REC_DOC_END) {
			uint64_t n;
			if (h.len != 8) {
				rfail(r, err, "bad document end record");
				goto fail;
			}
			if (rd_body(r, &h, &body, err) < 0)
				goto fail;
			n = get64(body);
			free(body);
			if (n != d->nrec) {
				rfail(r, err, "document end counts %llu records, the document had %u",
				      (unsigned long long)n, d->nrec);
				goto fail;
			}
			break;
		}
		if (h.kind == LC_REC_START || h.kind == LC_REC_DOC_BEGIN || h.kind == LC_REC_EOS) {
			rfail(r, err, "document not ended before a new %s",
			      h.kind == LC_REC_DOC_BEGIN ? "document" : "stream record");
			goto fail;
		}
		if (h.kind != LC_REC_TENSOR && (h.flags & LC_FLAG_CRITICAL)) {
			rfail(r, err, "record of unknown kind %u marked critical", h.kind);
			goto fail;
		}
		if (!(rec = doc_push(d, err)))
			goto fail;
		rec->kind = h.kind;
		rec->flags = h.flags;
		if (h.kind == LC_REC_TENSOR)
			rc = read_tensor(r, &h, &rec->t, err);
		else if ((rc = rd_body(r, &h, &body, err)) == 0) {
			rec->body = body;
			rec->body_len = h.len;
		}
		if (rc < 0) {
			d->nrec--;
			goto fail;
		}
	}
	r->doc = NULL;
	free(r->prev);
	r->prev = strdup(d->name);   /* NULL (out of memory): messages without it */
	r->index++;
	r->ndocs++;
	return 1;
fail:
	r->doc = NULL;
	doc_free(d);
	return -1;
}

int stream_sniff(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	return len >= 8 && memcmp(b, MAGIC, 4) == 0 && get16(b + 4) == LC_REC_START;
}

/* ---------- writing ---------- */

struct lc_writer {
	FILE *f;
	uint64_t ndocs;
	uint64_t nrec;       /* records in the open document */
	int in_doc;
};

static int wr(lc_writer *w, const void *p, size_t n, lc_err *err)
{
	lc_fault_point("stream");      /* tests: a producer killed mid-stream */
	if (n && fwrite(p, 1, n, w->f) != n)
		return lc_fail(err, "write error: %s", strerror(errno));
	return 0;
}

static int wr_header(lc_writer *w, uint16_t kind, uint16_t flags, uint64_t len,
                     uint32_t bcrc, lc_err *err)
{
	uint8_t b[HDR_LEN];

	memcpy(b, MAGIC, 4);
	put16(b + 4, kind);
	put16(b + 6, flags);
	put64(b + 8, len);
	put32(b + 16, lc_crc32c(0, b, 16));
	put32(b + 20, bcrc);
	return wr(w, b, HDR_LEN, err);
}

static int wr_pad(lc_writer *w, uint64_t len, lc_err *err)
{
	static const uint8_t zero[8];
	return wr(w, zero, pad8(len), err);
}

/* A record whose whole body is in memory. */
static int wr_record(lc_writer *w, uint16_t kind, uint16_t flags, const void *body,
                     uint64_t len, lc_err *err)
{
	if (wr_header(w, kind, flags, len, lc_crc32c(0, body, len), err) < 0 ||
	    wr(w, body, len, err) < 0 || wr_pad(w, len, err) < 0)
		return -1;
	return 0;
}

static int wr_u64_record(lc_writer *w, uint16_t kind, uint64_t v, lc_err *err)
{
	uint8_t b[8];
	put64(b, v);
	return wr_record(w, kind, 0, b, 8, err);
}

lc_writer *stream_writer_new(FILE *f, lc_err *err)
{
	lc_writer *w = calloc(1, sizeof *w);
	uint8_t b[8] = {0};

	if (!w) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	w->f = f;
	put32(b, VERSION);
	if (wr_record(w, LC_REC_START, 0, b, 8, err) < 0) {
		free(w);
		return NULL;
	}
	return w;
}

int stream_write_begin(lc_writer *w, const char *name, const lc_meta *meta, lc_err *err)
{
	static const lc_meta none;
	uint64_t nl = strlen(name), ml;
	uint8_t *b;
	int rc;

	if (w->in_doc)
		return lc_fail(err, "document \"%s\" begun inside another", name);
	if (!meta)
		meta = &none;
	ml = meta_wire_len(meta);
	if (nl > LC_MAX_NAME || ml > LC_MAX_META)
		return lc_fail(err, "document \"%.100s\": name or metadata above the limits", name);
	if (!(b = malloc(8 + nl + ml)))
		return lc_fail(err, "out of memory");
	put32(b, (uint32_t)nl);
	put32(b + 4, (uint32_t)ml);
	memcpy(b + 8, name, nl);
	meta_encode(b + 8 + nl, meta);
	rc = wr_record(w, LC_REC_DOC_BEGIN, 0, b, 8 + nl + ml, err);
	free(b);
	w->in_doc = 1;
	w->nrec = 0;
	return rc;
}

int stream_write_tensor(lc_writer *w, const lc_tensor *t, lc_err *err)
{
	uint64_t numel, nbytes, nl = strlen(t->name), ml = meta_wire_len(&t->meta);
	uint64_t fixlen = 16 + 8 * (uint64_t)t->rank, data_off, len;
	uint8_t *head;
	uint32_t crc;
	int rc;

	if (!w->in_doc)
		return lc_fail(err, "tensor '%s' written outside a document", t->name);
	if (!lc_dtype_size(t->dtype) || t->rank > LC_MAX_RANK || nl > LC_MAX_NAME || ml > LC_MAX_META ||
	    tensor_shape_bytes(t->dtype, t->rank, t->dims, &numel, &nbytes) < 0 || nbytes != t->nbytes)
		return lc_fail(err, "tensor '%.100s': bad dtype, shape or size", t->name);
	data_off = fixlen + nl + ml;
	data_off += pad8(data_off);
	len = data_off + nbytes;
	if (len > LC_MAX_RECORD)
		return lc_fail(err, "tensor '%.100s' is larger than the format allows", t->name);
	if (!(head = calloc(1, data_off)))
		return lc_fail(err, "out of memory");
	head[0] = (uint8_t)t->dtype;
	head[1] = (uint8_t)t->rank;
	put32(head + 4, (uint32_t)nl);
	put32(head + 8, (uint32_t)ml);
	put32(head + 12, (uint32_t)data_off);
	for (uint32_t i = 0; i < t->rank; i++)
		put64(head + 16 + 8 * i, t->dims[i]);
	memcpy(head + fixlen, t->name, nl);
	meta_encode(head + fixlen + nl, &t->meta);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	swap_elems(t->data, nbytes, lc_dtype_size(t->dtype));
#endif
	crc = lc_crc32c(lc_crc32c(0, head, data_off), t->data, nbytes);
	rc = wr_header(w, LC_REC_TENSOR, 0, len, crc, err);
	if (rc == 0)
		rc = wr(w, head, data_off, err);
	if (rc == 0)
		rc = wr(w, t->data, nbytes, err);
	if (rc == 0)
		rc = wr_pad(w, len, err);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	swap_elems(t->data, nbytes, lc_dtype_size(t->dtype));
#endif
	free(head);
	w->nrec++;
	return rc;
}

int stream_write_end(lc_writer *w, lc_err *err)
{
	if (!w->in_doc)
		return lc_fail(err, "document end without a document");
	w->in_doc = 0;
	w->ndocs++;
	return wr_u64_record(w, LC_REC_DOC_END, w->nrec, err);
}

static int named(const char *name, const char *const *skip)
{
	for (; skip && *skip; skip++)
		if (!strcmp(name, *skip))
			return 1;
	return 0;
}

int stream_write_records(lc_writer *w, const lc_doc *d, const char *const *skip, lc_err *err)
{
	for (uint32_t i = 0; i < d->nrec; i++) {
		const lc_rec *r = &d->rec[i];
		if (r->kind == LC_REC_TENSOR) {
			if (!named(r->t.name, skip) && stream_write_tensor(w, &r->t, err) < 0)
				return -1;
		} else {
			if (wr_record(w, r->kind, r->flags, r->body, r->body_len, err) < 0)
				return -1;
			w->nrec++;
		}
	}
	return 0;
}

int stream_write_doc(lc_writer *w, const lc_doc *d, lc_err *err)
{
	if (stream_write_begin(w, d->name, &d->meta, err) < 0 ||
	    stream_write_records(w, d, NULL, err) < 0)
		return -1;
	return stream_write_end(w, err);
}

int tensor_shape(const lc_tensor *t, char *buf, size_t n)
{
	size_t o = 0;

	buf[0] = 0;
	if (t->rank == 0)
		return snprintf(buf, n, "-");
	for (uint32_t k = 0; k < t->rank && k < LC_MAX_RANK && o < n; k++)
		o += (size_t)snprintf(buf + o, n - o, k ? "x%llu" : "%llu",
		                      (unsigned long long)t->dims[k]);
	return (int)o;
}

int stream_writer_close(lc_writer *w, lc_err *err)
{
	int rc = 0;

	if (w->in_doc)
		rc = lc_fail(err, "stream closed inside a document");
	else if (wr_u64_record(w, LC_REC_EOS, w->ndocs, err) < 0 || fflush(w->f) != 0)
		rc = lc_fail(err, "write error: %s", strerror(errno));
	free(w);
	return rc;
}

void stream_writer_abort(lc_writer *w)
{
	if (w)
		fflush(w->f);
	free(w);
}
