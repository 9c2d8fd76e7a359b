/*
 * fft.c: the FFT convolutions' transforms on the CPU (compute.h's
 * cmp_rfft and cmp_irfft_mul). A real signal of n points (n even) is
 * transformed as the complex signal of its n/2 pairs (even sample + i odd
 * sample) by FFTW3 single precision, planned by estimate, on the calling
 * thread (FFTW without its threads library); the two half-spectra are
 * separated into the real signal's spectrum here, and the inverse's
 * spectrum is put together the same way, in the pass that multiplies
 * two spectra.
 *
 * Why not FFTW's own real transforms: its estimated plans for them ran
 * 1.4-2 times as long as its complex transforms of half the size (pairs
 * of forward and inverse, n = 16,000 to 131,712, Zen 5: their plans do the
 * real-to-complex step in SSE2 codelets, the complex ones in AVX), and
 * the separation here costs a tenth of a transform. Measured plans
 * (FFTW_MEASURE) choose by timing, so a run's numbers would depend on
 * the machine's load; estimates are the same every run.
 */
/* fftw3.h first: with <complex.h> before it, fftwf_complex would be a C99 complex. */
#include <fftw3.h>

#include "compute/compute.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/machine.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

struct cmp_fft {
	int64_t n;
	fftwf_plan fwd, inv;            /* complex, of n/2 points */
	float *tw;                      /* [n/4 + 1] complex: e^(-2 pi i k / n) */
};

struct cmp_fftcache {
	pthread_mutex_t mu;
	cmp_fft **p;
	int n, cap;
};

struct cmp_fftws {
	int64_t nmax;
	float *x;                          /* [nmax] real signal in and out */
	fftwf_complex *prod;               /* [nmax/2 + 1] the half-size transform's input
	                                    * or output (FFTW's inverse destroys it) */
	fftwf_complex *s[CMP_FFT_SLOTS];   /* [nmax/2 + 1] spectra */
};

static int smooth_odd(int64_t r)
{
	while (r % 3 == 0) r /= 3;
	while (r % 5 == 0) r /= 5;
	while (r % 7 == 0) r /= 7;
	return r == 1;
}

int64_t cmp_fft_size_smooth(int64_t need)
{
	int64_t m = need < 2 ? 2 : need;

	if (m % 2)
		m++;
	for (;; m += 2) {
		int64_t r = m;
		while (r % 2 == 0) r /= 2;
		if (smooth_odd(r))
			return m;
	}
}

/* FFTW's estimated plans (FFTW_ESTIMATE: measured plans choose by timing,
 * and a run's numbers would then depend on the machine's load) ran the
 * smallest smooth sizes 1.25-1.45x slower on average than the best size
 * within 15% above them, r2c and c2r of 1,000 to 1,200,000 points on
 * Zen 5; the slow ones have few factors of 2 (a = 1..4) or many (a power
 * of two beyond 16,384 ran at 1.4-1.5x the best near it, 2^20 at 1.3x).
 * Sizes with 2^5..2^10 came to 1.07-1.20x the best. The complex
 * transforms of half the size that replaced those (above) rank them
 * alike: at 9 needs from 3,000 to 900,000 this rule's size took the least
 * time of three (it, the smallest smooth size and the power of two from
 * need on) but twice, within 9% (3000: 4096; 70,000: 70,000 itself). */
int64_t cmp_fft_size(int64_t need)
{
	int64_t m = need < 2 ? 2 : need;

	if (m <= 1024)
		return cmp_fft_size_smooth(m);
	for (m = (m + 31) / 32 * 32;; m += 32) {
		int64_t r = m / 32;
		int a = 5;
		while (r % 2 == 0 && a <= 10) {
			r /= 2;
			a++;
		}
		if ((a <= 10 && smooth_odd(r)) || (m <= 16384 && (m & (m - 1)) == 0))
			return m;
	}
}

/* FFTW's planner is not thread-safe (only fftwf_execute is): every plan
 * made or destroyed anywhere in the process goes through this lock, since
 * several caches (one per encoder) may plan at once. */
static pthread_mutex_t planner_mu = PTHREAD_MUTEX_INITIALIZER;

static void fft_free(cmp_fft *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&planner_mu);
	if (p->fwd)
		fftwf_destroy_plan(p->fwd);
	if (p->inv)
		fftwf_destroy_plan(p->inv);
	pthread_mutex_unlock(&planner_mu);
	free(p->tw);
	free(p);
}

/* Plans are made on buffers from fftwf_malloc, and executed on others
 * from it: the same alignment, as FFTW's new-array execute requires. */
#define FFT_ROOM ((uint64_t)32 << 20)
static cmp_fft *fft_new(int64_t n, lc_err *err)
{
	int64_t m = n / 2, h = m / 2;
	cmp_fft *p = NULL;
	fftwf_complex *x = NULL, *xf = NULL;

	if (n < 2 || n % 2 || m > INT_MAX) {
		lc_fail(err, "FFT size %lld: not an even size from 2 to 2^32", (long long)n);
		return NULL;
	}
	/* before anything is touched: FFTW aborts the process where its
	 * planner's own allocations fail */
	if (!machine_room(FFT_ROOM + (uint64_t)n * 32)) {
		lc_fail(err, "out of memory for FFT plans of size %lld (ulimit -v?)", (long long)n);
		return NULL;
	}
	p = calloc(1, sizeof *p);
	x = fftwf_malloc((size_t)m * sizeof *x);
	xf = fftwf_malloc((size_t)m * sizeof *xf);
	if (!p || !x || !xf || !(p->tw = malloc((size_t)(h + 1) * 2 * sizeof *p->tw))) {
		lc_fail(err, "out of memory for FFT plans of size %lld", (long long)n);
		goto fail;
	}
	p->n = n;
	/* in double, then rounded: 1 and -i exactly where they fall */
	for (int64_t k = 0; k <= h; k++) {
		double a = 2.0 * 3.141592653589793 * (double)k / (double)n;
		double c = k == 0 ? 1.0 : 4 * k == n ? 0.0 : cos(a);
		double s = k == 0 ? 0.0 : 4 * k == n ? 1.0 : sin(a);
		p->tw[2 * k] = (float)c;
		p->tw[2 * k + 1] = (float)(0.0 - s);
	}
	pthread_mutex_lock(&planner_mu);
	p->fwd = fftwf_plan_dft_1d((int)m, x, xf, FFTW_FORWARD, FFTW_ESTIMATE);
	p->inv = fftwf_plan_dft_1d((int)m, xf, x, FFTW_BACKWARD, FFTW_ESTIMATE);
	pthread_mutex_unlock(&planner_mu);
	if (!p->fwd || !p->inv) {
		lc_fail(err, "FFTW could not plan size %lld", (long long)n);
		goto fail;
	}
	fftwf_free(x);
	fftwf_free(xf);
	return p;
fail:
	fftwf_free(x);
	fftwf_free(xf);
	fft_free(p);
	return NULL;
}

cmp_fftcache *cmp_fftcache_new(lc_err *err)
{
	cmp_fftcache *c = calloc(1, sizeof *c);

	if (!c) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void cmp_fftcache_free(cmp_fftcache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++)
		fft_free(c->p[i]);
	free(c->p);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

const cmp_fft *cmp_fft_get(cmp_fftcache *c, int64_t n, lc_err *err)
{
	cmp_fft *p = NULL;

	/* the FFTW planner is not thread-safe: one lock around lookup and planning */
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < c->n; i++)
		if (c->p[i]->n == n) {
			p = c->p[i];
			break;
		}
	if (!p) {
		if (c->n == c->cap) {
			int nc = c->cap ? 2 * c->cap : 8;
			cmp_fft **np = realloc(c->p, (size_t)nc * sizeof *np);
			if (!np) {
				pthread_mutex_unlock(&c->mu);
				lc_fail(err, "out of memory");
				return NULL;
			}
			c->p = np;
			c->cap = nc;
		}
		if ((p = fft_new(n, err)))
			c->p[c->n++] = p;
	}
	pthread_mutex_unlock(&c->mu);
	return p;
}

int64_t cmp_fft_n(const cmp_fft *p)
{
	return p->n;
}

cmp_fftws *cmp_fftws_new(int64_t nmax, lc_err *err)
{
	cmp_fftws *w = calloc(1, sizeof *w);
	size_t nf = (size_t)(nmax / 2 + 1);
	int ok;

	if (w) {
		w->nmax = nmax;
		w->x = fftwf_malloc((size_t)nmax * sizeof *w->x);
		w->prod = fftwf_malloc(nf * sizeof *w->prod);
		ok = w->x && w->prod;
		for (int s = 0; s < CMP_FFT_SLOTS; s++)
			ok &= (w->s[s] = fftwf_malloc(nf * sizeof *w->s[s])) != NULL;
		if (ok)
			return w;
	}
	cmp_fftws_free(w);
	lc_fail(err, "out of memory for FFT buffers of size %lld", (long long)nmax);
	return NULL;
}

void cmp_fftws_free(cmp_fftws *w)
{
	if (!w)
		return;
	fftwf_free(w->x);
	fftwf_free(w->prod);
	for (int s = 0; s < CMP_FFT_SLOTS; s++)
		fftwf_free(w->s[s]);
	free(w);
}

float *cmp_fft_signal(cmp_fftws *w)
{
	return w->x;
}

/* ------------------------------------------- separating the half-spectra
 *
 * With z = DFT of the n/2 pairs (x[2t] + i x[2t+1]) and w = e^(-2 pi i/n),
 * the real signal's spectrum is X[k] = E[k] + w^k O[k], k = 0..n/2, where
 * E[k] = (z[k] + conj z[m-k]) / 2 and O[k] = -i (z[k] - conj z[m-k]) / 2
 * are the spectra of the even and of the odd samples (m = n/2, z[m] =
 * z[0]). Taken in pairs k, m - k with P = w^k O[k] (w^(m-k) = -conj w^k):
 * X[k] = E[k] + P, X[m-k] = conj(E[k] - P). The inverse puts the pairs'
 * transform back together from a spectrum Y: with S = Y[k] + conj Y[m-k],
 * D = Y[k] - conj Y[m-k] and Q = D conj(w^k), it is S + i Q at k and
 * conj(S - i Q) at m - k; FFTW's unnormalised inverse of it gives the
 * pairs of the real signal (the scale 1/n is in the product Y = A B / n).
 *
 * The vector forms below compute every number with the operations and in
 * the order of the plain loops (products rounded apart, then sums, no
 * fused multiply-add; a + (-b) is a - b), so every path gives the same
 * bits (cmp_xk_simd chooses the path, for tests). They take 8 (AVX-512)
 * or 4 (AVX2) pairs at a time, k ascending and m - k descending, while
 * the two runs stay apart and short of the middle, from k = 1; the
 * plain loop does k = 0 and the rest, the middle among it. Scalar, the
 * separation took about as long as the complex transforms saved. */

/* the product of spectra a b, or a conj(b), scaled: into y[0..1] */
static inline void spec_prod(const float *a, const float *b, float s, int conj_b, float *y)
{
	if (conj_b) {
		y[0] = (a[0] * b[0] + a[1] * b[1]) * s;
		y[1] = (a[1] * b[0] - a[0] * b[1]) * s;
	} else {
		y[0] = (a[0] * b[0] - a[1] * b[1]) * s;
		y[1] = (a[0] * b[1] + a[1] * b[0]) * s;
	}
}

/* X[k], X[m-k] from the half-size transform z, pairs k0..k1 */
static void split_c(const float *z, const float *tw, float *X, int64_t m, int64_t k0, int64_t k1)
{
	for (int64_t k = k0; k <= k1; k++) {
		int64_t j = m - k, jz = k ? j : 0;
		float ar = z[2 * k], ai = z[2 * k + 1], br = z[2 * jz], bi = z[2 * jz + 1];
		float er = 0.5f * (ar + br), ei = 0.5f * (ai - bi);
		float dr = ar - br, di = ai + bi;
		float ur = 0.5f * di, ui = 0.5f * -dr;       /* O[k] */
		float wr = tw[2 * k], wi = tw[2 * k + 1];
		float pr = wr * ur - wi * ui, pi = wr * ui + wi * ur;

		X[2 * k] = er + pr;
		X[2 * k + 1] = ei + pi;
		X[2 * j] = er - pr;
		X[2 * j + 1] = pi - ei;
	}
}

/* The inverse's input Z[k], Z[m-k] from spectra A and B, pairs k0..k1
 * (Z[m] is not written; in the middle, k = m - k, the second stands) */
static void combine_c(const float *A, const float *B, const float *tw, float *Z, int64_t m,
                      float s, int conj_b, int64_t k0, int64_t k1)
{
	for (int64_t k = k0; k <= k1; k++) {
		int64_t j = m - k;
		float y1[2], y2[2];

		spec_prod(A + 2 * k, B + 2 * k, s, conj_b, y1);
		spec_prod(A + 2 * j, B + 2 * j, s, conj_b, y2);
		float sr = y1[0] + y2[0], si = y1[1] - y2[1];
		float dr = y1[0] - y2[0], di = y1[1] + y2[1];
		float wr = tw[2 * k], wi = tw[2 * k + 1];
		float qr = wr * dr + wi * di, qi = wr * di - wi * dr;

		Z[2 * k] = sr - qi;
		Z[2 * k + 1] = si + qr;
		if (k) {
			Z[2 * j] = sr + qi;
			Z[2 * j + 1] = qr - si;
		}
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The vector forms, written once (SEP_FNS) over one vector width's
 * operations on interleaved complex numbers (real, imaginary): V_T the
 * type, V_N the pairs a vector holds, V_LD / V_ST / V_SET / V_ADD / V_SUB
 * / V_MUL as named, V_LO / V_HI repeat the real / imaginary part, V_SW
 * swaps the parts, V_FI / V_FR negate the imaginary / real ones, V_R
 * reverses the numbers' order, V_BL takes the real parts of a and the
 * imaginary ones of b (V_XOR flips the bits given in each pair). Each
 * width defines them and instantiates SEP_FNS. */
#define V_FI(v) V_XOR(v, 0x8000000000000000ull)
#define V_FR(v) V_XOR(v, 0x80000000ull)
#define SEP_FNS(ATTR, PROD, SPLIT, COMBINE)                                                \
	ATTR static inline V_T PROD(const float *a, const float *b, V_T s, int conj_b)      \
	{                                                                                   \
		V_T va = V_LD(a), vb = V_LD(b);                                             \
		V_T p1 = V_MUL(V_LO(va), vb);           /* ar br, ar bi */                  \
		V_T p2 = V_MUL(V_HI(va), V_SW(vb));     /* ai bi, ai br */                  \
                                                                                            \
		return V_MUL(conj_b ? V_ADD(V_FI(p1), p2) : V_ADD(p1, V_FR(p2)), s);        \
	}                                                                                   \
                                                                                            \
	ATTR static int64_t SPLIT(const float *z, const float *tw, float *X, int64_t m)     \
	{                                                                                   \
		const V_T half = V_SET(0.5f);                                               \
		int64_t k = 1;                                                              \
                                                                                            \
		for (; 2 * k + 2 * (V_N - 1) < m; k += V_N) {                               \
			int64_t j = m - k - (V_N - 1);                                      \
			V_T a = V_LD(z + 2 * k), b = V_R(V_LD(z + 2 * j));                  \
			V_T e = V_MUL(half, V_ADD(a, V_FI(b)));                             \
			V_T o = V_MUL(half, V_FI(V_SW(V_SUB(a, V_FI(b)))));                 \
			V_T w = V_LD(tw + 2 * k);                                           \
			V_T p = V_ADD(V_MUL(V_LO(w), o), V_FR(V_MUL(V_HI(w), V_SW(o))));    \
                                                                                            \
			V_ST(X + 2 * k, V_ADD(e, p));                                       \
			V_ST(X + 2 * j, V_R(V_BL(V_SUB(e, p), V_SUB(p, e))));               \
		}                                                                           \
		return k;                                                                   \
	}                                                                                   \
                                                                                            \
	ATTR static int64_t COMBINE(const float *A, const float *B, const float *tw, float *Z, \
	                            int64_t m, float s, int conj_b)                         \
	{                                                                                   \
		const V_T vs = V_SET(s);                                                    \
		int64_t k = 1;                                                              \
                                                                                            \
		for (; 2 * k + 2 * (V_N - 1) < m; k += V_N) {                               \
			int64_t j = m - k - (V_N - 1);                                      \
			V_T y1 = PROD(A + 2 * k, B + 2 * k, vs, conj_b);                    \
			V_T y2 = V_R(PROD(A + 2 * j, B + 2 * j, vs, conj_b));               \
			V_T S = V_ADD(y1, V_FI(y2)), D = V_SUB(y1, V_FI(y2));               \
			V_T w = V_LD(tw + 2 * k);                                           \
			V_T q = V_ADD(V_MUL(V_LO(w), D), V_FI(V_MUL(V_HI(w), V_SW(D))));    \
			V_T q1 = V_SW(q);       /* qi, qr */                                \
                                                                                            \
			V_ST(Z + 2 * k, V_BL(V_SUB(S, q1), V_ADD(S, q1)));                  \
			V_ST(Z + 2 * j, V_R(V_BL(V_ADD(S, q1), V_SUB(q1, S))));             \
		}                                                                           \
		return k;                                                                   \
	}

/* AVX-512: 8 pairs */
#define V_T __m512
#define V_N 8
#define V_LD _mm512_loadu_ps
#define V_ST _mm512_storeu_ps
#define V_SET _mm512_set1_ps
#define V_ADD _mm512_add_ps
#define V_SUB _mm512_sub_ps
#define V_MUL _mm512_mul_ps
#define V_LO _mm512_moveldup_ps
#define V_HI _mm512_movehdup_ps
#define V_SW(v) _mm512_permute_ps(v, 0xb1)
#define V_XOR(v, bits) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), \
                                           _mm512_set1_epi64((long long)(bits))))
#define V_R(v) _mm512_permutexvar_ps(_mm512_set_epi32(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, \
                                                      13, 12, 15, 14), v)
#define V_BL(a, b) _mm512_mask_blend_ps(0xAAAA, a, b)
SEP_FNS(__attribute__((target("avx512f"))), prod512, split512, combine512)
#undef V_T
#undef V_N
#undef V_LD
#undef V_ST
#undef V_SET
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_LO
#undef V_HI
#undef V_SW
#undef V_XOR
#undef V_R
#undef V_BL

/* AVX2: 4 pairs */
#define V_T __m256
#define V_N 4
#define V_LD _mm256_loadu_ps
#define V_ST _mm256_storeu_ps
#define V_SET _mm256_set1_ps
#define V_ADD _mm256_add_ps
#define V_SUB _mm256_sub_ps
#define V_MUL _mm256_mul_ps
#define V_LO _mm256_moveldup_ps
#define V_HI _mm256_movehdup_ps
#define V_SW(v) _mm256_permute_ps(v, 0xb1)
#define V_XOR(v, bits) _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_set1_epi64x((long long)(bits))))
#define V_R(v) _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(6, 7, 4, 5, 2, 3, 0, 1))
#define V_BL(a, b) _mm256_blend_ps(a, b, 0xAA)
SEP_FNS(__attribute__((target("avx2"))), prod256, split256, combine256)
#endif

/* 2: AVX-512, 1: AVX2, 0: the plain loops */
static int simd_level(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	int on = cmp_xk_simd(-1);

	if (on == 1 && cpu_avx512f())
		return 2;
	if (on >= 1 && cpu_avx2_fma())
		return 1;
#endif
	return 0;
}

void cmp_rfft(const cmp_fft *p, cmp_fftws *w, int slot, const float *x, int64_t len)
{
	int64_t n = p->n, m = n / 2, k = 1;
	const float *z = &w->prod[0][0];
	float *X = &w->s[slot][0][0];

	if (len > n)
		len = n;
	if (x != w->x)
		memcpy(w->x, x, (size_t)len * sizeof *w->x);
	memset(w->x + len, 0, (size_t)(n - len) * sizeof *w->x);
	fftwf_execute_dft(p->fwd, (fftwf_complex *)(void *)w->x, w->prod);
	split_c(z, p->tw, X, m, 0, 0);
#if defined(__x86_64__) && defined(__GNUC__)
	switch (simd_level()) {
	case 2: k = split512(z, p->tw, X, m); break;
	case 1: k = split256(z, p->tw, X, m); break;
	}
#endif
	split_c(z, p->tw, X, m, k, m / 2);
}

const float *cmp_irfft_mul(const cmp_fft *p, cmp_fftws *w, int a, int b, int conj_b)
{
	int64_t m = p->n / 2, k = 1;
	const float *A = &w->s[a][0][0], *B = &w->s[b][0][0];
	float *Z = &w->prod[0][0], s = 1.0f / (float)p->n;

	combine_c(A, B, p->tw, Z, m, s, conj_b, 0, 0);
#if defined(__x86_64__) && defined(__GNUC__)
	switch (simd_level()) {
	case 2: k = combine512(A, B, p->tw, Z, m, s, conj_b); break;
	case 1: k = combine256(A, B, p->tw, Z, m, s, conj_b); break;
	}
#endif
	combine_c(A, B, p->tw, Z, m, s, conj_b, k, m / 2);
	fftwf_execute_dft(p->inv, w->prod, (fftwf_complex *)(void *)w->x);
	return w->x;
}
