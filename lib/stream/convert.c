#include "stream/convert.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/dtype.h"

static int werr(lc_err *err)
{
	return lc_fail(err, "write error: %s", strerror(errno));
}

int convert_ids_doc(lc_doc *d, const char *name, const char *line, size_t len, lc_err *err)
{
	uint64_t n = 0, cap = 0;
	int32_t *ids = NULL;
	lc_tensor *t;
	size_t i = 0;

	while (i < len) {
		int64_t v = 0;
		size_t start;

		if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\f' || line[i] == '\v') {
			i++;
			continue;
		}
		start = i;
		while (i < len && line[i] >= '0' && line[i] <= '9') {
			v = v * 10 + (line[i] - '0');
			if (v > INT32_MAX) {
				free(ids);
				return lc_fail(err, "%s: id at column %zu is above %d", name, start + 1, INT32_MAX);
			}
			i++;
		}
		if (i == start || (i < len && !strchr(" \t\r\f\v", line[i]))) {
			free(ids);
			return lc_fail(err, "%s: column %zu: expected a decimal token id", name, i + 1);
		}
		if (n == cap) {
			int32_t *q = realloc(ids, (cap = cap ? 2 * cap : 64) * sizeof *q);
			if (!q) {
				free(ids);
				return lc_fail(err, "out of memory");
			}
			ids = q;
		}
		ids[n++] = (int32_t)v;
	}
	if (doc_init(d, name, err) < 0 || !(t = doc_add_tensor(d, "tokens", LC_I32, 1, &n, err))) {
		free(ids);
		return -1;
	}
	if (n)
		memcpy(t->data, ids, n * sizeof *ids);
	free(ids);
	return 0;
}

int convert_text_doc(lc_doc *d, const char *name, const char *text, size_t len, lc_err *err)
{
	uint64_t n = len;
	lc_tensor *t;

	if (doc_init(d, name, err) < 0 || !(t = doc_add_tensor(d, "text", LC_U8, 1, &n, err)))
		return -1;
	memcpy(t->data, text, len);
	return 0;
}

int convert_write_ids(FILE *f, const int32_t *ids, size_t n, lc_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (fprintf(f, i ? " %" PRId32 : "%" PRId32, ids[i]) < 0)
			return werr(err);
	return fputc('\n', f) == EOF ? werr(err) : 0;
}

void convert_nth_name(char *buf, size_t size, const char *name, int i)
{
	snprintf(buf, size, i ? "%s.%d" : "%s", name, i + 1);
}

int convert_summaries(const lc_doc *d, const char *name, enum lc_dtype dt,
                      const lc_tensor **t, lc_err *err)
{
	char nm[64];
	int n = 0;

	for (; n < CONVERT_MAX_SEQS; n++) {
		convert_nth_name(nm, sizeof nm, name, n);
		if (!(t[n] = doc_find(d, nm)))
			break;
		if (t[n]->dtype != dt || t[n]->rank != 1)
			return lc_fail(err, "\"%s\" is %s of rank %u, not %s of rank 1", nm,
			               lc_dtype_name(t[n]->dtype), t[n]->rank, lc_dtype_name(dt));
	}
	convert_nth_name(nm, sizeof nm, name, n);
	if (n == CONVERT_MAX_SEQS && doc_find(d, nm))
		return lc_fail(err, "more than %d \"%s\" records", CONVERT_MAX_SEQS, name);
	return n ? n : lc_fail(err, "no \"%s\" record (%s, rank 1)", name, lc_dtype_name(dt));
}

int convert_print_ids(FILE *f, const lc_doc *d, lc_err *err)
{
	const lc_tensor *t[CONVERT_MAX_SEQS];
	int n = convert_summaries(d, "tokens", LC_I32, t, err);

	for (int i = 0; i < n; i++)
		if (convert_write_ids(f, t[i]->data, t[i]->dims[0], err) < 0)
			return -1;
	return n < 0 ? -1 : 0;
}

int convert_print_raw(FILE *f, const lc_doc *d, lc_err *err)
{
	for (uint32_t i = 0; i < d->nrec; i++) {
		const lc_tensor *t = &d->rec[i].t;
		if (d->rec[i].kind != LC_REC_TENSOR || !t->nbytes)
			continue;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "convert_print_raw: write the byte-swapped payload on big-endian hosts"
#endif
		if (fwrite(t->data, 1, t->nbytes, f) != t->nbytes)
			return werr(err);
	}
	return 0;
}

/* Writes s escaped for a tab-separated field. */
static int put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		const char *e = *s == '\t' ? "\\t" : *s == '\n' ? "\\n" : *s == '\r' ? "\\r"
		              : *s == '\\' ? "\\\\" : NULL;
		if (e ? fputs(e, f) == EOF : fputc(*s, f) == EOF)
			return -1;
	}
	return 0;
}

static int put_meta(FILE *f, const lc_meta *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (fprintf(f, "\t%s=", m->kv[i].key) < 0 || put_escaped(f, m->kv[i].val) < 0)
			return -1;
	return fputc('\n', f) == EOF ? -1 : 0;
}

int convert_print_info(FILE *f, const lc_doc *d, lc_err *err)
{
	if (fprintf(f, "doc\t%" PRIu64 "\t", d->index) < 0 || put_escaped(f, d->name) < 0 ||
	    put_meta(f, &d->meta) < 0)
		return werr(err);
	for (uint32_t i = 0; i < d->nrec; i++) {
		const lc_rec *r = &d->rec[i];
		if (fprintf(f, "%s\t%" PRIu64 "\t", r->kind == LC_REC_TENSOR ? "tensor" : "record",
		            d->index) < 0 || put_escaped(f, d->name) < 0)
			return werr(err);
		if (r->kind != LC_REC_TENSOR) {
			if (fprintf(f, "\t%u\t%" PRIu64 "\n", r->kind, r->body_len) < 0)
				return werr(err);
			continue;
		}
		if (fputc('\t', f) == EOF || put_escaped(f, r->t.name) < 0 ||
		    fprintf(f, "\t%s\t", lc_dtype_name(r->t.dtype)) < 0)
			return werr(err);
		char shape[LC_MAX_RANK * 21];
		tensor_shape(&r->t, shape, sizeof shape);
		if (fputs(shape, f) == EOF)
			return werr(err);
		if (put_meta(f, &r->t.meta) < 0)
			return werr(err);
	}
	return 0;
}

int convert_print_text(FILE *f, const lc_doc *d, lc_err *err)
{
	const lc_tensor *t[CONVERT_MAX_SEQS];
	int n = convert_summaries(d, "text", LC_U8, t, err);

	for (int i = 0; i < n; i++)
		if (fwrite(t[i]->data, 1, t[i]->nbytes, f) != t[i]->nbytes || fputc('\n', f) == EOF)
			return werr(err);
	return n < 0 ? -1 : 0;
}

int convert_token_ids(const lc_doc *d, int64_t vocab, int32_t **ids, int64_t *np, lc_err *err)
{
	const lc_tensor *t = doc_find(d, "tokens");
	uint64_t n;
	int32_t *p;

	if (!t)
		return lc_fail(err, "no \"tokens\" tensor");
	if (doc_count(d, "tokens") > 1)
		return lc_fail(err, "%u \"tokens\" tensors: which are its ids?", doc_count(d, "tokens"));
	if (t->rank != 1)
		return lc_fail(err, "\"tokens\" has rank %u, not 1", t->rank);
	n = t->dims[0];
	if (!(p = malloc((n ? n : 1) * sizeof *p)))
		return lc_fail(err, "out of memory for %" PRIu64 " tokens", n);
	for (uint64_t i = 0; i < n; i++) {
		int64_t v;
		switch (t->dtype) {
		case LC_I32: v = ((const int32_t *)t->data)[i]; break;
		case LC_U32: v = ((const uint32_t *)t->data)[i]; break;
		case LC_I64: v = ((const int64_t *)t->data)[i]; break;
		case LC_U64: {
			uint64_t u = ((const uint64_t *)t->data)[i];
			v = u > INT64_MAX ? INT64_MAX : (int64_t)u;
			break;
		}
		case LC_U16: v = ((const uint16_t *)t->data)[i]; break;
		case LC_I16: v = ((const int16_t *)t->data)[i]; break;
		case LC_U8: v = ((const uint8_t *)t->data)[i]; break;
		case LC_I8: v = ((const int8_t *)t->data)[i]; break;
		default:
			free(p);
			return lc_fail(err, "\"tokens\" has dtype %s, not an integer type",
			               lc_dtype_name(t->dtype));
		}
		if (v < 0 || v >= vocab) {
			free(p);
			return lc_fail(err, "token %" PRIu64 " is %" PRId64 ", outside the model's "
			               "vocabulary [0, %" PRId64 ")", i, v, vocab);
		}
		p[i] = (int32_t)v;
	}
	*ids = p;
	*np = (int64_t)n;
	return 0;
}

const float *convert_f32_view(const lc_tensor *t, float **buf, uint64_t *cap, lc_err *err)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < t->rank; i++)
		n *= t->dims[i];
	if (t->dtype == LC_F32)
		return t->data;
	if (t->dtype != LC_BF16 && t->dtype != LC_F16) {
		lc_fail(err, "\"%s\" has dtype %s; f32, bf16 or f16 expected", t->name,
		        lc_dtype_name(t->dtype));
		return NULL;
	}
	if (n > *cap) {
		float *p = n <= SIZE_MAX / sizeof *p ? realloc(*buf, n * sizeof *p) : NULL;
		if (!p) {
			lc_fail(err, "out of memory for %" PRIu64 " values", n);
			return NULL;
		}
		*buf = p;
		*cap = n;
		lc_huge_hint(p, n * sizeof *p);
	}
	/* payloads are host order in memory: these converters read little-endian words */
	if (t->dtype == LC_BF16)
		lc_bf16_to_f32_n(t->data, n, *buf);
	else
		lc_f16_to_f32_n(t->data, n, *buf);
	return *buf;
}

void convert_tensor_to_bf16(lc_tensor *t)
{
	uint64_t n = t->nbytes / 4;

	if (t->dtype != LC_F32)
		return;
	lc_f32_to_bf16_n(t->data, n, t->data);
	t->dtype = LC_BF16;
	t->nbytes = n * 2;
}
