/*
 * doc.c: the stream's records in memory: dtypes, metadata, tensors and
 * documents (stream.h); stream.c reads and writes them on the wire.
 */
#include "stream/doc_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------- dtypes ---------- */

static const struct { const char *name; size_t size; } dtypes[LC_DTYPE_END] = {
	[LC_U8] = {"u8", 1},   [LC_I8] = {"i8", 1},     [LC_I16] = {"i16", 2},
	[LC_U16] = {"u16", 2}, [LC_I32] = {"i32", 4},   [LC_U32] = {"u32", 4},
	[LC_I64] = {"i64", 8}, [LC_U64] = {"u64", 8},   [LC_F16] = {"f16", 2},
	[LC_BF16] = {"bf16", 2}, [LC_F32] = {"f32", 4}, [LC_F64] = {"f64", 8},
};

size_t lc_dtype_size(enum lc_dtype t)
{
	return t > 0 && t < LC_DTYPE_END ? dtypes[t].size : 0;
}

const char *lc_dtype_name(enum lc_dtype t)
{
	return t > 0 && t < LC_DTYPE_END ? dtypes[t].name : "?";
}

int lc_dtype_parse(const char *s)
{
	for (int t = 1; t < LC_DTYPE_END; t++)
		if (strcmp(s, dtypes[t].name) == 0)
			return t;
	return -1;
}

/* ---------- metadata ---------- */

int meta_key_ok(const char *k, size_t n)
{
	if (n == 0 || n > LC_MAX_KEY)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)k[i] <= 0x20 || (unsigned char)k[i] >= 0x7f || k[i] == '=')
			return 0;
	return 1;
}

const char *meta_get(const lc_meta *m, const char *key)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (strcmp(m->kv[i].key, key) == 0)
			return m->kv[i].val;
	return NULL;
}

int meta_set(lc_meta *m, const char *key, const char *val, lc_err *err)
{
	char *v;
	lc_kv *kv;

	if (!meta_key_ok(key, strlen(key)))
		return lc_fail(err, "bad metadata key '%s' (printable ASCII without '=', 1-%d bytes)",
		               key, LC_MAX_KEY);
	if (!(v = strdup(val)))
		return lc_fail(err, "out of memory");
	for (uint32_t i = 0; i < m->n; i++)
		if (strcmp(m->kv[i].key, key) == 0) {
			free(m->kv[i].val);
			m->kv[i].val = v;
			return 0;
		}
	if (m->n >= LC_MAX_NMETA || !(kv = realloc(m->kv, (m->n + 1) * sizeof *kv))) {
		free(v);
		return lc_fail(err, "too many metadata entries");
	}
	m->kv = kv;
	if (!(kv[m->n].key = strdup(key))) {
		free(v);
		return lc_fail(err, "out of memory");
	}
	kv[m->n++].val = v;
	return 0;
}

int meta_setf(lc_meta *m, const char *key, lc_err *err, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return meta_set(m, key, buf, err);
}

int meta_copy(lc_meta *dst, const lc_meta *src, lc_err *err)
{
	for (uint32_t i = 0; i < src->n; i++)
		if (meta_set(dst, src->kv[i].key, src->kv[i].val, err) < 0)
			return -1;
	return 0;
}

int meta_del(lc_meta *m, const char *key)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (strcmp(m->kv[i].key, key) == 0) {
			free(m->kv[i].key);
			free(m->kv[i].val);
			memmove(&m->kv[i], &m->kv[i + 1], (m->n - i - 1) * sizeof *m->kv);
			m->n--;
			return 1;
		}
	return 0;
}

void meta_free(lc_meta *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		free(m->kv[i].key);
		free(m->kv[i].val);
	}
	free(m->kv);
	m->kv = NULL;
	m->n = 0;
}

/* ---------- tensors and documents ---------- */

int tensor_shape_bytes(enum lc_dtype dtype, uint32_t rank, const uint64_t *dims,
                       uint64_t *numel, uint64_t *nbytes)
{
	uint64_t n = 1, size = lc_dtype_size(dtype);

	for (uint32_t i = 0; i < rank; i++) {
		if (dims[i] && n > LC_MAX_RECORD / dims[i])
			return -1;
		n *= dims[i];
	}
	if (size && n > LC_MAX_RECORD / size)
		return -1;
	*numel = n;
	*nbytes = n * size;
	return 0;
}

uint64_t tensor_numel(const lc_tensor *t)
{
	uint64_t n = 1;
	for (uint32_t i = 0; i < t->rank; i++)
		n *= t->dims[i];
	return n;
}

int tensor_init(lc_tensor *t, const char *name, enum lc_dtype dtype,
                uint32_t rank, const uint64_t *dims, lc_err *err)
{
	uint64_t numel, nbytes;

	memset(t, 0, sizeof *t);
	if (!lc_dtype_size(dtype))
		return lc_fail(err, "unknown dtype %d", (int)dtype);
	if (rank > LC_MAX_RANK)
		return lc_fail(err, "rank %u is above %d", rank, LC_MAX_RANK);
	if (strlen(name) > LC_MAX_NAME)
		return lc_fail(err, "tensor name is longer than %d bytes", LC_MAX_NAME);
	if (tensor_shape_bytes(dtype, rank, dims, &numel, &nbytes) < 0)
		return lc_fail(err, "tensor '%s' is larger than the format allows", name);
	if (!(t->name = strdup(name)) || !(t->data = calloc(1, nbytes ? nbytes : 1))) {
		free(t->name);
		t->name = NULL;
		return lc_fail(err, "out of memory for a %llu-byte tensor", (unsigned long long)nbytes);
	}
	t->dtype = dtype;
	t->rank = rank;
	memcpy(t->dims, dims, rank * sizeof *dims);
	t->nbytes = nbytes;
	return 0;
}

void tensor_free(lc_tensor *t)
{
	free(t->name);
	free(t->data);
	meta_free(&t->meta);
	memset(t, 0, sizeof *t);
}

int doc_init(lc_doc *d, const char *name, lc_err *err)
{
	memset(d, 0, sizeof *d);
	if (strlen(name) > LC_MAX_NAME)   /* its start names it: callers may not */
		return lc_fail(err, "document name \"%.64s...\" is %zu bytes, longer than %d",
		               name, strlen(name), LC_MAX_NAME);
	if (!(d->name = strdup(name)))
		return lc_fail(err, "out of memory");
	return 0;
}

lc_rec *doc_push(lc_doc *d, lc_err *err)
{
	if (d->nrec == d->cap) {
		uint32_t cap = d->cap ? 2 * d->cap : 4;
		lc_rec *r = realloc(d->rec, cap * sizeof *r);
		if (!r) {
			lc_fail(err, "out of memory");
			return NULL;
		}
		d->rec = r;
		d->cap = cap;
	}
	memset(&d->rec[d->nrec], 0, sizeof d->rec[0]);
	return &d->rec[d->nrec++];
}

lc_tensor *doc_add_tensor(lc_doc *d, const char *name, enum lc_dtype dtype,
                          uint32_t rank, const uint64_t *dims, lc_err *err)
{
	lc_tensor t;

	if (tensor_init(&t, name, dtype, rank, dims, err) < 0)
		return NULL;
	if (doc_take_tensor(d, &t, err) < 0) {
		tensor_free(&t);
		return NULL;
	}
	return &d->rec[d->nrec - 1].t;
}

int doc_take_tensor(lc_doc *d, lc_tensor *t, lc_err *err)
{
	lc_rec *r = doc_push(d, err);

	if (!r)
		return -1;
	r->kind = LC_REC_TENSOR;
	r->t = *t;
	memset(t, 0, sizeof *t);
	return 0;
}

lc_tensor *doc_find(const lc_doc *d, const char *name)
{
	for (uint32_t i = 0; i < d->nrec; i++)
		if (d->rec[i].kind == LC_REC_TENSOR && strcmp(d->rec[i].t.name, name) == 0)
			return &d->rec[i].t;
	return NULL;
}

uint32_t doc_count(const lc_doc *d, const char *name)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->nrec; i++)
		n += d->rec[i].kind == LC_REC_TENSOR && strcmp(d->rec[i].t.name, name) == 0;
	return n;
}

void doc_free(lc_doc *d)
{
	for (uint32_t i = 0; i < d->nrec; i++) {
		tensor_free(&d->rec[i].t);
		free(d->rec[i].body);
	}
	free(d->rec);
	free(d->name);
	meta_free(&d->meta);
	memset(d, 0, sizeof *d);
}
