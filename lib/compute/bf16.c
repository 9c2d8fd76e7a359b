/*
 * bf16.c: the operands of bf16 products (compute/gemm.h): fp32 matrices
 * rounded to bf16, and the one-time copies of the constant ones.
 *
 * A product with a model's weight matrix converts that matrix on every
 * call unless a copy is kept: the encoder multiplies 128-row blocks by a
 * 768 x 2048 matrix, so converting the weights would cost more than the
 * block's own rows (16 times more elements) and ate the whole gain of
 * bf16 (measured: lc-encode --compute bf16 no faster than fp32). The
 * model layer declares its weights constant (cmp_constant); the first
 * bf16 product that reads inside such a region converts the whole region
 * once, keeping its layout, so an operand's row stride is unchanged in the
 * copy. Regions are few (one per tensor) and kept sorted by address.
 */
#include "compute/gemm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/dtype.h"

#ifdef LC_CC_AVX512_BF16
#include <immintrin.h>
#endif

struct region {
	const float *p;
	int64_t n;
	uint16_t *copy;         /* NULL until a bf16 product first reads it */
	int failed;             /* out of memory once: convert per call instead */
};

static struct {
	pthread_mutex_t mu;
	struct region *r;
	int n, cap;
} rt = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };

/* The index of the region that starts at or before p (-1: none); under mu. */
static int find(const float *p)
{
	int lo = 0, hi = rt.n - 1, at = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if ((uintptr_t)rt.r[mid].p <= (uintptr_t)p)
			at = mid, lo = mid + 1;
		else
			hi = mid - 1;
	}
	return at;
}

void cmp_constant(const float *p, int64_t n)
{
	int at;

	if (!p || n <= 0)
		return;
	pthread_mutex_lock(&rt.mu);
	at = find(p);
	if (at >= 0 && rt.r[at].p == p) {       /* again: the same tensor */
		pthread_mutex_unlock(&rt.mu);
		return;
	}
	if (rt.n == rt.cap) {
		int cap = rt.cap ? 2 * rt.cap : 64;
		struct region *r = realloc(rt.r, (size_t)cap * sizeof *r);
		if (!r) {       /* unlisted: its products convert it per call, no harm */
			pthread_mutex_unlock(&rt.mu);
			return;
		}
		rt.r = r, rt.cap = cap;
	}
	memmove(rt.r + at + 2, rt.r + at + 1, (size_t)(rt.n - at - 1) * sizeof *rt.r);
	rt.r[at + 1] = (struct region){ p, n, NULL, 0 };
	rt.n++;
	pthread_mutex_unlock(&rt.mu);
}

void cmp_constant_drop(const float *p)
{
	int at;

	/* first, outside rt.mu: a GPU product holds cuda.c's lock, then this one */
	cmp_cuda_drop(p);
	cmp_dnnl_drop(p);
	pthread_mutex_lock(&rt.mu);
	at = find(p);
	if (at >= 0 && rt.r[at].p == p) {
		free(rt.r[at].copy);
		memmove(rt.r + at, rt.r + at + 1, (size_t)(rt.n - at - 1) * sizeof *rt.r);
		rt.n--;
	}
	if (rt.n == 0) {
		free(rt.r);
		rt.r = NULL, rt.cap = 0;
	}
	pthread_mutex_unlock(&rt.mu);
}

/* The region holding [x, x + n), or NULL; under mu. */
static struct region *holding(const float *x, int64_t n)
{
	int at = find(x);
	struct region *r = at >= 0 ? &rt.r[at] : NULL;

	if (!r || n > r->n - (x - r->p))
		return NULL;
	return r;
}

int cmp_is_constant(const float *x, int64_t n)
{
	int yes;

	pthread_mutex_lock(&rt.mu);
	yes = holding(x, n) != NULL;
	pthread_mutex_unlock(&rt.mu);
	return yes;
}

const float *cmp_constant_base(const float *x, int64_t n, int64_t *len)
{
	struct region *r;
	const float *p = NULL;

	pthread_mutex_lock(&rt.mu);
	if ((r = holding(x, n)))
		p = r->p, *len = r->n;
	pthread_mutex_unlock(&rt.mu);
	return p;
}

const uint16_t *cmp_bf16_constant(const float *x, int64_t n)
{
	struct region *r;
	const uint16_t *y = NULL;

	pthread_mutex_lock(&rt.mu);
	/* converted under the lock: threads asking at once wait for one copy */
	if ((r = holding(x, n)) && !r->copy && !r->failed) {
		if ((r->copy = malloc((size_t)r->n * sizeof *r->copy)))
			cmp_bf16_pack(r->p, 1, r->n, r->n, r->copy, r->n);
		else
			r->failed = 1;
	}
	if (r && r->copy)
		y = r->copy + (x - r->p);
	pthread_mutex_unlock(&rt.mu);
	return y;
}

#ifdef LC_CC_AVX512_BF16
/* 16 at a time with VCVTNEPS2BF16 (round to nearest even, as
 * lc_f32_to_bf16, except that it reads denormals as zero). */
__attribute__((target("avx512f,avx512bf16"))) static void pack512(const float *x, int64_t n,
                                                                   uint16_t *y)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
		_mm256_storeu_si256((__m256i *)(void *)(y + i), (__m256i)h);
	}
	for (; i < n; i++)
		y[i] = lc_f32_to_bf16(x[i]);
}
#endif

void cmp_bf16_pack(const float *x, int64_t rows, int64_t cols, int64_t ld, uint16_t *y,
                   int64_t ldy)
{
	for (int64_t r = 0; r < rows; r++) {
#ifdef LC_CC_AVX512_BF16
		if (cpu_avx512_bf16()) {
			pack512(x + r * ld, cols, y + r * ldy);
			continue;
		}
#endif
		lc_f32_to_bf16_n(x + r * ld, (uint64_t)cols, y + r * ldy);
	}
}
