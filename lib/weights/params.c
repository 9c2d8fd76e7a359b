#include "weights/params.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "base/rng.h"

typedef struct alias {
	char name[PARAM_NAME];
	uint32_t target;
} alias;

struct lc_params {
	lc_param *p;
	uint32_t n, cap;
	alias *a;
	uint32_t na, acap;
	char (*ign)[PARAM_NAME];    /* names loading skips */
	uint32_t ni, icap;
	uint64_t total;
	float **owned;          /* converted copies, one per parameter (NULL where mapped) */
	void *region;           /* the copies out of a file mapping, in one (lc_big_alloc) */
	size_t region_n;
	char err[256];          /* the first declaration error */
};

double param_init_matrix(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rng;
	return 0.9 * g / sqrt((double)(rank > 1 ? dims[1] : dims[0]));
}

double param_init_normal(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)rng;
	return g;
}

double param_init_norm(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)rng;
	return 1 + 0.1 * g;
}

double param_init_bias(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)rng;
	return 0.1 * g;
}

double param_init_zero(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)g; (void)rng;
	return 0;
}

double param_init_one(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)g; (void)rng;
	return 1;
}

void params_set_init(lc_params *p, uint32_t i, param_init_fn init, double std, int64_t zero_row)
{
	if (i >= p->n)
		return;
	p->p[i].init = init;
	p->p[i].std = std;
	p->p[i].zero_row = zero_row;
}

lc_params *params_new(void)
{
	return calloc(1, sizeof(lc_params));
}

void params_free(lc_params *p)
{
	if (!p)
		return;
	if (p->owned)
		for (uint32_t i = 0; i < p->n; i++)
			free(p->owned[i]);
	free(p->owned);
	lc_big_free(p->region, p->region_n);
	free(p->p);
	free(p->a);
	free(p->ign);
	free(p);
}

__attribute__((format(printf, 2, 3)))
static void decl_error(lc_params *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof p->err, fmt, ap);
	va_end(ap);
}

static int64_t find_decl(const lc_params *p, const char *name)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (strcmp(p->p[i].name, name) == 0)
			return i;
	return -1;
}

void params_add(lc_params *p, float **slot, param_init_fn init, unsigned flags,
                const uint64_t dims[PARAM_RANK], const char *fmt, ...)
{
	lc_param *e;
	va_list ap;
	uint64_t n = 1;
	int len;

	if (p->err[0])
		return;
	if (p->n == p->cap) {
		uint32_t nc = p->cap ? 2 * p->cap : 64;
		lc_param *np = realloc(p->p, nc * sizeof *np);
		if (!np) {
			decl_error(p, "out of memory declaring parameters");
			return;
		}
		p->p = np;
		p->cap = nc;
	}
	e = &p->p[p->n];
	memset(e, 0, sizeof *e);
	va_start(ap, fmt);
	len = vsnprintf(e->name, sizeof e->name, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof e->name) {
		decl_error(p, "parameter name too long: %s...", e->name);
		return;
	}
	if (find_decl(p, e->name) >= 0) {
		decl_error(p, "parameter \"%s\" declared twice", e->name);
		return;
	}
	while (e->rank < PARAM_RANK && dims[e->rank]) {
		e->dims[e->rank] = dims[e->rank];
		if (dims[e->rank] > (UINT64_MAX >> 4) / n) {
			decl_error(p, "parameter \"%s\": shape too large", e->name);
			return;
		}
		n *= dims[e->rank++];
	}
	if (e->rank == 0) {
		decl_error(p, "parameter \"%s\" has no shape", e->name);
		return;
	}
	e->numel = n;
	e->off = p->total;
	e->flags = flags;
	e->init = init;
	e->std = 0;
	e->zero_row = -1;
	e->slot = slot;
	p->total += n;
	p->n++;
}

void params_alias(lc_params *p, const char *name, const char *target)
{
	int64_t t = find_decl(p, target);

	if (p->err[0])
		return;
	if (t < 0) {
		decl_error(p, "alias \"%s\" of undeclared parameter \"%s\"", name, target);
		return;
	}
	if (p->na == p->acap) {
		uint32_t nc = p->acap ? 2 * p->acap : 8;
		alias *na = realloc(p->a, nc * sizeof *na);
		if (!na) {
			decl_error(p, "out of memory declaring parameters");
			return;
		}
		p->a = na;
		p->acap = nc;
	}
	snprintf(p->a[p->na].name, sizeof p->a[p->na].name, "%s", name);
	p->a[p->na++].target = (uint32_t)t;
}

void params_ignore(lc_params *p, const char *name)
{
	if (p->err[0])
		return;
	if (p->ni == p->icap) {
		uint32_t nc = p->icap ? 2 * p->icap : 8;
		char (*ni)[PARAM_NAME] = realloc(p->ign, nc * sizeof *ni);
		if (!ni) {
			decl_error(p, "out of memory declaring parameters");
			return;
		}
		p->ign = ni;
		p->icap = nc;
	}
	snprintf(p->ign[p->ni++], PARAM_NAME, "%s", name);
}

static int ignored(const lc_params *p, const char *name)
{
	for (uint32_t i = 0; i < p->ni; i++) {
		size_t n = strlen(p->ign[i]);
		if (n && p->ign[i][n - 1] == '*' ? strncmp(p->ign[i], name, n - 1) == 0
		                                : strcmp(p->ign[i], name) == 0)
			return 1;
	}
	return 0;
}

int params_status(const lc_params *p, lc_err *err)
{
	if (!p)
		return lc_fail(err, "out of memory declaring parameters");
	return p->err[0] ? lc_fail(err, "%s", p->err) : 0;
}

uint32_t params_count(const lc_params *p) { return p->n; }
const lc_param *params_at(const lc_params *p, uint32_t i) { return i < p->n ? &p->p[i] : NULL; }
uint64_t params_total(const lc_params *p) { return p->total; }

static int64_t find_alias(const lc_params *p, const char *name)
{
	for (uint32_t i = 0; i < p->na; i++)
		if (strcmp(p->a[i].name, name) == 0)
			return p->a[i].target;
	return -1;
}

const lc_param *params_find(const lc_params *p, const char *name)
{
	int64_t i = find_decl(p, name);

	if (i < 0)
		i = find_alias(p, name);
	return i >= 0 ? &p->p[i] : NULL;
}

/* ---------------------------------------------------------------- binding */

static void shape_str(char *buf, size_t n, uint32_t rank, const uint64_t *dims)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, n - o, "[");
	for (uint32_t i = 0; i < rank && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
	if (o < n)
		snprintf(buf + o, n - o, "]");
}

static int same_shape(const st_tensor *t, const lc_param *e)
{
	if (t->rank != e->rank)
		return 0;
	for (uint32_t i = 0; i < e->rank; i++)
		if (t->dims[i] != e->dims[i])
			return 0;
	return 1;
}

static int float_dtype(enum st_dtype t)
{
	return t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F64;
}

static int shape_error(const st_tensor *t, const lc_param *e, const char *label, lc_err *err)
{
	char a[96], b[96];

	shape_str(a, sizeof a, t->rank, t->dims);
	shape_str(b, sizeof b, e->rank, e->dims);
	return lc_fail(err, "%s: tensor \"%s\" has shape %s, the configuration needs %s", label,
	               t->name, a, b);
}

/* float32 data of t: into dst when given; else its own bytes when they
 * are aligned F32, else a copy (*owned, which the caller keeps). */
static float *as_f32(const st_tensor *t, float *dst, float **owned)
{
	const unsigned char *p = t->data;
	float *o = dst;

	*owned = NULL;
	if (!dst && t->dtype == ST_F32 && ((uintptr_t)p % sizeof(float)) == 0)
		return (float *)(uintptr_t)p;   /* read-only pages: weights are never written */
	if (!o && !(o = *owned = malloc((t->numel ? t->numel : 1) * sizeof *o)))
		return NULL;
	switch (t->dtype) {
	case ST_F32:
		memcpy(o, p, t->numel * sizeof *o);
		break;
	case ST_F64:
		for (uint64_t i = 0; i < t->numel; i++) {
			double v;
			memcpy(&v, p + 8 * i, 8);
			o[i] = (float)v;
		}
		break;
	case ST_BF16:
		lc_bf16_to_f32_n(p, t->numel, o);
		break;
	case ST_F16:
		lc_f16_to_f32_n(p, t->numel, o);
		break;
	default:
		memset(o, 0, t->numel * sizeof *o);
		break;
	}
	return o;
}

/* Two names of one tied parameter in a file: only with the same bytes
 * (fairseq checkpoints store the shared embedding under three names). */
static int same_tied(const st_tensor *a, const st_tensor *b, const char *label, lc_err *err)
{
	if (a->dtype == b->dtype && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes))
		return 0;
	return lc_fail(err, "%s: tensors \"%s\" and \"%s\" are one tied parameter in this "
	               "configuration but hold different values", label, a->name, b->name);
}

/* A copy's bytes in the region: whole cache lines. */
static size_t region_bytes(const lc_param *e)
{
	return (e->numel * sizeof(float) + 63) / 64 * 64;
}

int params_bind_tensors(lc_params *p, const st_tensor *(*at)(const void *file, uint32_t i),
                        void (*release)(const void *file, const st_tensor *t),
                        const void *file, uint32_t n, const char *label, lc_err *err)
{
	const st_tensor **src = calloc(p->n ? p->n : 1, sizeof *src);      /* under its name */
	const st_tensor **asrc = calloc(p->n ? p->n : 1, sizeof *asrc);    /* under an alias */
	size_t used = 0;        /* of the region */
	int rc = -1;

	if (params_status(p, err) < 0)
		goto out;
	if (!src || !asrc || (!p->owned && !(p->owned = calloc(p->n ? p->n : 1, sizeof *p->owned)))) {
		lc_fail(err, "%s: out of memory", label);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		const st_tensor *t = at(file, i);
		int64_t k = find_decl(p, t->name);
		if (k < 0 && (k = find_alias(p, t->name)) >= 0) {
			if (!same_shape(t, &p->p[k]))
				goto shape;
			if (!asrc[k])
				asrc[k] = t;
			else if (same_tied(asrc[k], t, label, err) < 0)
				goto out;
			continue;
		}
		if (k < 0 && ignored(p, t->name))
			continue;
		if (k < 0) {
			lc_fail(err, "%s: unexpected tensor \"%s\" (not a parameter of this configuration)",
			        label, t->name);
			goto out;
		}
		if (src[k]) {
			lc_fail(err, "%s: tensor \"%s\" appears twice", label, t->name);
			goto out;
		}
		if (!same_shape(t, &p->p[k]))
			goto shape;
		src[k] = t;
		continue;
shape:
		shape_error(t, &p->p[k], label, err);
		goto out;
	}
	for (uint32_t k = 0; k < p->n; k++) {
		const st_tensor *t = src[k] ? src[k] : asrc[k];
		if (src[k] && asrc[k] && same_tied(src[k], asrc[k], label, err) < 0)
			goto out;
		if (!t && (p->p[k].flags & PARAM_OPTIONAL))
			continue;
		if (!t) {
			lc_fail(err, "%s: tensor \"%s\" is missing", label, p->p[k].name);
			goto out;
		}
		if (!float_dtype(t->dtype)) {
			lc_fail(err, "%s: tensor \"%s\" has dtype %s (need F32, F16, BF16 or F64)", label,
			        t->name, st_dtype_name(t->dtype));
			goto out;
		}
	}
	lc_big_free(p->region, p->region_n);
	p->region = NULL;
	p->region_n = 0;
	if (release) {  /* the copies' region */
		size_t n = 0;
		for (uint32_t k = 0; k < p->n; k++)
			if (src[k] || asrc[k])
				n += region_bytes(&p->p[k]);
		/* no memory for a copy: the mapping's bytes, as without release */
		if (n && !(p->region = lc_big_alloc(n)))
			release = NULL;
		else
			p->region_n = n;
	}
	for (uint32_t k = 0; k < p->n; k++) {
		const st_tensor *t = src[k] ? src[k] : asrc[k];
		float *d, *dst = NULL;
		free(p->owned[k]);
		p->owned[k] = NULL;
		if (t && release) {
			dst = (float *)((char *)p->region + used);
			used += region_bytes(&p->p[k]);
		}
		if (!t)   /* optional and absent: zeros */
			d = p->owned[k] = calloc(p->p[k].numel, sizeof *d);
		else
			d = as_f32(t, dst, &p->owned[k]);
		if (d && t && release)
			release(file, t);
		if (!d) {
			lc_fail(err, "%s: out of memory converting \"%s\"", label, p->p[k].name);
			goto out;
		}
		*p->p[k].slot = d;
		p->p[k].src = t;
	}
	rc = 0;
out:
	free(src);
	free(asrc);
	return rc;
}

void params_bind_flat(lc_params *p, float *base)
{
	for (uint32_t k = 0; k < p->n; k++)
		*p->p[k].slot = base + p->p[k].off;
}

void params_copy_to_flat(const lc_params *p, float *base)
{
	for (uint32_t k = 0; k < p->n; k++)
		memcpy(base + p->p[k].off, *p->p[k].slot, p->p[k].numel * sizeof *base);
}

void params_init(const lc_params *p, float *base, uint64_t seed)
{
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;

	for (uint32_t k = 0; k < p->n; k++) {
		const lc_param *e = &p->p[k];
		float *v = base + e->off;
		for (uint64_t j = 0; j < e->numel; j++) {
			double g = lc_rng_normal(&s);
			if (e->std > 0)
				v[j] = e->rank == 2 && e->zero_row >= 0 &&
				       j / e->dims[1] == (uint64_t)e->zero_row ? 0.0f : (float)(e->std * g);
			else
				v[j] = (float)(e->init ? e->init(j, e->rank, e->dims, g, &s) : g);
		}
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

int params_write(const lc_params *p, const float *base, const char *path, lc_err *err)
{
	st_tensor *t = calloc(p->n ? p->n : 1, sizeof *t);
	int rc;

	if (!t)
		return lc_fail(err, "out of memory");
	for (uint32_t k = 0; k < p->n; k++) {
		const lc_param *e = &p->p[k];
		t[k].name = (char *)e->name;
		t[k].dtype = ST_F32;
		t[k].rank = e->rank;
		memcpy(t[k].dims, e->dims, e->rank * sizeof *e->dims);
		t[k].numel = e->numel;
		t[k].nbytes = 4 * e->numel;
		t[k].data = (const unsigned char *)(base ? base + e->off : *e->slot);
	}
	/* name order, as transformers' save_pretrained writes them */
	qsort(t, p->n, sizeof *t, by_name);
	rc = st_write(path, t, p->n, err);
	free(t);
	return rc;
}
