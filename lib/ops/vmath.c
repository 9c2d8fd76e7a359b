/*
 * vmath.c: see vmath.h. The scalar functions are the reference; the AVX2
 * ones compute the same formulas eight lanes at a time (with FMA), for
 * whole blocks of 8, the rest in scalar (exp_sum, gelu_new, the max and
 * the sums and products also 16 at a time, with AVX-512).
 */
#include "ops/vmath.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "base/cpu.h"
#include "base/dtype.h"
#include "compute/compute.h"

#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f            /* ln 2 = LN2_HI + LN2_LO, LN2_HI exact in few bits */
#define LN2_LO (-2.12194440e-4f)
#define EXP_LO (-87.33654f)            /* below: 0 */
#define EXP_HI 88.0f
/* Cephes expf's polynomial for exp(r) - 1 - r, over r^2 */
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f
/* Abramowitz and Stegun 7.1.26 */
#define EP 0.3275911f
#define A1 0.254829592f
#define A2 (-0.284496736f)
#define A3 1.421413741f
#define A4 (-1.453152027f)
#define A5 1.061405429f
#define RSQRT2 0.70710678118654752f

static float exp1(float x)
{
	float n, r, z, p, f;
	uint32_t u;

	if (x < EXP_LO)
		return 0.0f;
	if (x > EXP_HI)
		x = EXP_HI;
	n = nearbyintf(x * LOG2E);
	r = x - n * LN2_HI;
	r = r - n * LN2_LO;
	z = r * r;
	p = P0;
	p = p * r + P1;
	p = p * r + P2;
	p = p * r + P3;
	p = p * r + P4;
	p = p * r + P5;
	p = p * z + r + 1.0f;
	u = (uint32_t)((int32_t)n + 127) << 23;
	memcpy(&f, &u, sizeof f);
	return p * f;
}

static float gelu1(float x)
{
	float y = x * RSQRT2, a = fabsf(y), t = 1.0f / (1.0f + EP * a), e;

	e = 1.0f - t * (A1 + t * (A2 + t * (A3 + t * (A4 + t * A5)))) * exp1(-a * a);
	return 0.5f * x * (1.0f + (y < 0 ? -e : e));
}

/* 0.5 x (1 + tanh(y)) = x / (1 + exp(-2y)), y = sqrt(2/pi) (x + 0.044715 x^3) */
#define GC0 0.7978845608028654f
#define GC1 0.044715f

static float gelu_tanh1(float x)
{
	float y = GC0 * (x + GC1 * x * x * x);

	return x / (1.0f + exp1(-2.0f * y));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256 exp8(__m256 x)
{
	__m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(EXP_LO), _CMP_LT_OQ), n, r, z, p;
	__m256i e;

	x = _mm256_min_ps(x, _mm256_set1_ps(EXP_HI));
	n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)),
	                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
	z = _mm256_mul_ps(r, r);
	p = _mm256_set1_ps(P0);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P1));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P2));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P3));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P4));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P5));
	p = _mm256_add_ps(_mm256_fmadd_ps(p, z, r), _mm256_set1_ps(1.0f));
	/* n >= -126 here (lanes below EXP_LO are zeroed) */
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
	return _mm256_andnot_ps(under, p);
}

AVX2 static double exp_sum_avx2(const float *x, float sub, float *y, int64_t n)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	__m256 m = _mm256_set1_ps(sub);
	double s[4], sum;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
		_mm256_storeu_ps(y + i, v);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
	}
	_mm256_storeu_pd(s, _mm256_add_pd(s0, s1));
	sum = (s[0] + s[1]) + (s[2] + s[3]);
	for (; i < n; i++) {
		y[i] = exp1(x[i] - sub);
		sum += y[i];
	}
	return sum;
}

/* The same, 16 lanes at a time where the processor has AVX-512 (the
 * decoder's online softmax: 4% of a bf16 step at 131,072 states in
 * AVX2). Each lane computes what exp8's does, so y is the same; the sum
 * is taken in another order. */
#define AVX512 __attribute__((target("avx512f")))

AVX512 static inline __m512 exp16(__m512 x)
{
	__mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_LT_OQ);
	__m512 n, r, z, p;
	__m512i e;

	x = _mm512_min_ps(x, _mm512_set1_ps(EXP_HI));
	n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
	                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
	z = _mm512_mul_ps(r, r);
	p = _mm512_set1_ps(P0);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P1));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P2));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P3));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P4));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P5));
	p = _mm512_add_ps(_mm512_fmadd_ps(p, z, r), _mm512_set1_ps(1.0f));
	e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
	p = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
	return _mm512_maskz_mov_ps((__mmask16)~under, p);
}

/* The blocks of 16 of exp_sum_avx512 and exp_sum_bf16_avx512, in a
 * function with x, sub, n and int64_t i in scope: v = exp(x[i..] - sub),
 * STORE keeps it, and the sum of the values (in double, by lanes) is
 * left in double sum; i is where the scalar tail starts. */
#define EXP_SUM16(STORE)                                                                 \
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();                      \
	for (; i + 16 <= n; i += 16) {                                                   \
		__m512 v = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_set1_ps(sub))); \
		STORE;                                                                   \
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));      \
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(                 \
		                           _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))); \
	}                                                                                \
	sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1))

AVX512 static double exp_sum_avx512(const float *x, float sub, float *y, int64_t n)
{
	double sum;
	int64_t i = 0;

	EXP_SUM16(_mm512_storeu_ps(y + i, v));
	for (; i < n; i++) {
		y[i] = exp1(x[i] - sub);
		sum += y[i];
	}
	return sum;
}

/* exp_sum_avx512's values rounded to bf16 as they are made, as
 * cmp_bf16_pack rounds them (VCVTNEPS2BF16 by blocks of 16, the tail by
 * lc_f32_to_bf16), with its sum: the same bits as the two passes, without
 * the fp32 values' store and reload (the bf16 decoder's weights): with
 * vm_max in AVX-512 too, a bf16 greedy step at 131,072 states 0.113-0.116
 * s against 0.115-0.126, one thread over 8,192 in cache 0.770 ms against
 * 0.782-0.799 (alternating runs, Zen 5). */
#ifdef LC_CC_AVX512_BF16
__attribute__((target("avx512f,avx512bf16"))) static double
exp_sum_bf16_avx512(const float *x, float sub, uint16_t *y, int64_t n)
{
	double sum;
	int64_t i = 0;

	EXP_SUM16(_mm256_storeu_si256((__m256i *)(void *)(y + i), (__m256i)_mm512_cvtneps_pbh(v)));
	for (; i < n; i++) {
		float e = exp1(x[i] - sub);

		y[i] = lc_f32_to_bf16(e);
		sum += e;
	}
	return sum;
}
#endif

AVX2 static void gelu_avx2(const float *x, float *y, int64_t n)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), u = _mm256_mul_ps(v, _mm256_set1_ps(RSQRT2));
		__m256 a = _mm256_andnot_ps(sign, u), t, p, e;
		t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(EP), a, one));
		p = _mm256_fmadd_ps(t, _mm256_set1_ps(A5), _mm256_set1_ps(A4));
		p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(A3));
		p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(A2));
		p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(A1));
		p = _mm256_mul_ps(t, p);
		e = _mm256_fnmadd_ps(p, exp8(_mm256_xor_ps(sign, _mm256_mul_ps(a, a))), one);
		e = _mm256_or_ps(e, _mm256_and_ps(sign, u));      /* erf is odd */
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v),
		                                      _mm256_add_ps(one, e)));
	}
	for (; i < n; i++)
		y[i] = gelu1(x[i]);
}

AVX2 static void gelu_tanh_avx2(const float *x, const float *g, float *y, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v), r;
		__m256 u = _mm256_mul_ps(_mm256_set1_ps(-2.0f * GC0),
		                         _mm256_fmadd_ps(_mm256_set1_ps(GC1), v3, v));
		r = _mm256_div_ps(v, _mm256_add_ps(one, exp8(u)));
		if (g)
			r = _mm256_mul_ps(r, _mm256_loadu_ps(g + i));
		_mm256_storeu_ps(y + i, r);
	}
	for (; i < n; i++)
		y[i] = g ? gelu_tanh1(x[i]) * g[i] : gelu_tanh1(x[i]);
}

AVX2 static void mul_avx2(const float *a, const float *b, float *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
	for (; i < n; i++)
		y[i] = a[i] * b[i];
}

AVX2 static double sumsq_avx2(const float *x, int64_t n)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	double s[4], sum;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		__m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
		__m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
		s0 = _mm256_fmadd_pd(lo, lo, s0);
		s1 = _mm256_fmadd_pd(hi, hi, s1);
	}
	_mm256_storeu_pd(s, _mm256_add_pd(s0, s1));
	sum = (s[0] + s[1]) + (s[2] + s[3]);
	for (; i < n; i++)
		sum += (double)x[i] * x[i];
	return sum;
}

AVX2 static void scale_mul_avx2(const float *x, float s, const float *w, float *y, int64_t n)
{
	__m256 k = _mm256_set1_ps(s);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(w + i),
		                                      _mm256_mul_ps(_mm256_loadu_ps(x + i), k)));
	for (; i < n; i++)
		y[i] = w[i] * (x[i] * s);
}

AVX2 static float max_avx2(const float *x, int64_t n)
{
	__m256 m = _mm256_set1_ps(-INFINITY);
	float v[8], mx = -INFINITY;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
	_mm256_storeu_ps(v, m);
	for (int k = 0; k < 8; k++)
		mx = v[k] > mx ? v[k] : mx;
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	return mx;
}

/* max_avx2's result (a max is exact: any order gives it), 16 at a time */
AVX512 static float max_avx512(const float *x, int64_t n)
{
	__m512 m = _mm512_set1_ps(-INFINITY);
	float mx, t;
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		m = _mm512_max_ps(_mm512_loadu_ps(x + i), m);
	mx = _mm512_reduce_max_ps(m);
	t = max_avx2(x + i, n - i);
	return t > mx ? t : mx;
}

AVX2 static void scale_avx2(const float *x, double s, float *y, int64_t n)
{
	__m256d k = _mm256_set1_pd(s);
	int64_t i = 0;

	for (; i + 4 <= n; i += 4)
		_mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), k)));
	for (; i < n; i++)
		y[i] = (float)(x[i] * s);
}

AVX2 static void axpby_avx2(const float *x, float b, float a, float *y, int64_t n)
{
	__m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(y + i), va),
		                                      _mm256_mul_ps(_mm256_loadu_ps(x + i), vb)));
	for (; i < n; i++)
		y[i] = y[i] * a + x[i] * b;
}

AVX2 static void addc_avx2(const float *x, float c, float *y, int64_t n)
{
	__m256 k = _mm256_set1_ps(c);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(x + i), k));
	for (; i < n; i++)
		y[i] = x[i] + c;
}

AVX2 static void madd_avx2(const float *c, float s, const float *x, float *y, int64_t n)
{
	__m256 k = _mm256_set1_ps(s);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(c + i),
		                                      _mm256_mul_ps(_mm256_loadu_ps(x + i), k)));
	for (; i < n; i++)
		y[i] = c[i] + s * x[i];
}

/* 16 lanes at a time, each computing what the AVX2 lane does (the same
 * operations, divisions and fused multiply-adds included), so the results
 * are the same bits: gelu_new was 2.7% of a bf16 encode in AVX2, the bias
 * additions (scalar, before) 2.7%. */
AVX512 static void gelu_tanh_avx512(const float *x, const float *g, float *y, int64_t n)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i), v3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v), r;
		__m512 u = _mm512_mul_ps(_mm512_set1_ps(-2.0f * GC0),
		                         _mm512_fmadd_ps(_mm512_set1_ps(GC1), v3, v));
		r = _mm512_div_ps(v, _mm512_add_ps(one, exp16(u)));
		if (g)
			r = _mm512_mul_ps(r, _mm512_loadu_ps(g + i));
		_mm512_storeu_ps(y + i, r);
	}
	gelu_tanh_avx2(x + i, g ? g + i : NULL, y + i, n - i);
}

AVX512 static void mul_avx512(const float *a, const float *b, float *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
	mul_avx2(a + i, b + i, y + i, n - i);
}

AVX512 static void addc_avx512(const float *x, float c, float *y, int64_t n)
{
	__m512 k = _mm512_set1_ps(c);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(x + i), k));
	addc_avx2(x + i, c, y + i, n - i);
}

AVX512 static void madd_avx512(const float *c, float s, const float *x, float *y, int64_t n)
{
	__m512 k = _mm512_set1_ps(s);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(c + i),
		                                      _mm512_mul_ps(_mm512_loadu_ps(x + i), k)));
	madd_avx2(c + i, s, x + i, y + i, n - i);
}

/* Four chains of double sums: the AVX2 form's two wait on the latency of
 * their multiply-adds. A 256 x 768 RMSNorm in cache took 20 us against 36
 * (in the encoder, whose rows come from memory, within noise). Another
 * grouping of the sum, so within the double sum's rounding of the AVX2
 * and plain forms, not their bits. */
AVX512 static double sumsq_avx512(const float *x, int64_t n)
{
	__m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	double sum;
	int64_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
		__m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
		__m512d c = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16));
		__m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24));
		s0 = _mm512_fmadd_pd(a, a, s0);
		s1 = _mm512_fmadd_pd(b, b, s1);
		s2 = _mm512_fmadd_pd(c, c, s2);
		s3 = _mm512_fmadd_pd(d, d, s3);
	}
	sum = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)));
	return sum + sumsq_avx2(x + i, n - i);
}

/* the same numbers as the AVX2 form, 16 at a time */
AVX512 static void scale_mul_avx512(const float *x, float s, const float *w, float *y, int64_t n)
{
	__m512 k = _mm512_set1_ps(s);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(w + i),
		                                      _mm512_mul_ps(_mm512_loadu_ps(x + i), k)));
	scale_mul_avx2(x + i, s, w + i, y + i, n - i);
}

static atomic_int allowed = 1;

int vm_simd(int on)
{
	if (on >= 0)
		atomic_store_explicit(&allowed, on, memory_order_relaxed);
	return atomic_load_explicit(&allowed, memory_order_relaxed);
}

static int have_avx2(void)
{
	return atomic_load_explicit(&allowed, memory_order_relaxed) && cpu_avx2_fma();
}

static int have_avx512(void)
{
	return atomic_load_explicit(&allowed, memory_order_relaxed) == 1 && cpu_avx512f();
}
#else
int vm_simd(int on)
{
	(void)on;
	return 0;
}

static int have_avx2(void)
{
	return 0;
}
#endif

double vm_exp_sum(const float *x, float sub, float *y, int64_t n)
{
	double sum = 0;

#ifdef AVX2
	if (have_avx512())
		return exp_sum_avx512(x, sub, y, n);
	if (have_avx2())
		return exp_sum_avx2(x, sub, y, n);
#endif
	for (int64_t i = 0; i < n; i++) {
		y[i] = exp1(x[i] - sub);
		sum += y[i];
	}
	return sum;
}

double vm_exp_sum_bf16(float *x, float sub, uint16_t *y, int64_t n)
{
	double sum;

#ifdef LC_CC_AVX512_BF16
	if (have_avx512() && cpu_avx512_bf16())
		return exp_sum_bf16_avx512(x, sub, y, n);
#endif
	sum = vm_exp_sum(x, sub, x, n);
	cmp_bf16_pack(x, 1, n, n, y, n);
	return sum;
}

void vm_gelu(const float *x, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx2()) {
		gelu_avx2(x, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = gelu1(x[i]);
}

void vm_gelu_tanh(const float *x, const float *g, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx512()) {
		gelu_tanh_avx512(x, g, y, n);
		return;
	}
	if (have_avx2()) {
		gelu_tanh_avx2(x, g, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = g ? gelu_tanh1(x[i]) * g[i] : gelu_tanh1(x[i]);
}

void vm_mul(const float *a, const float *b, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx512()) {
		mul_avx512(a, b, y, n);
		return;
	}
	if (have_avx2()) {
		mul_avx2(a, b, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] * b[i];
}

void vm_madd(const float *c, float s, const float *x, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx512()) {
		madd_avx512(c, s, x, y, n);
		return;
	}
	if (have_avx2()) {
		madd_avx2(c, s, x, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = c[i] + s * x[i];
}

void vm_addc(const float *x, float c, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx512()) {
		addc_avx512(x, c, y, n);
		return;
	}
	if (have_avx2()) {
		addc_avx2(x, c, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] + c;
}

double vm_sumsq(const float *x, int64_t n)
{
	double s = 0;

#ifdef AVX2
	if (have_avx512())
		return sumsq_avx512(x, n);
	if (have_avx2())
		return sumsq_avx2(x, n);
#endif
	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return s;
}

void vm_scale_mul(const float *x, float s, const float *w, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx512()) {
		scale_mul_avx512(x, s, w, y, n);
		return;
	}
	if (have_avx2()) {
		scale_mul_avx2(x, s, w, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = w[i] * (x[i] * s);
}

float vm_max(const float *x, int64_t n)
{
	float mx = -INFINITY;

#ifdef AVX2
	if (have_avx512())
		return max_avx512(x, n);
	if (have_avx2())
		return max_avx2(x, n);
#endif
	for (int64_t i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	return mx;
}

void vm_scale(const float *x, double s, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx2()) {
		scale_avx2(x, s, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = (float)(x[i] * s);
}

void vm_axpby(const float *x, float b, float a, float *y, int64_t n)
{
#ifdef AVX2
	if (have_avx2()) {
		axpby_avx2(x, b, a, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = y[i] * a + x[i] * b;
}

float vm_expf(float x)
{
	return exp1(x);
}
