#include "ops/ssm.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/rng.h"
#include "ops/vmath.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif


#ifndef CMPLX   /* glibc defines it for gcc only */
#define CMPLX(x, y) ((double complex)((double)(x) + _Complex_I * (double)(y)))
#endif

/* ------------------------------------------------------------- kernels */

/* a b, as C's complex product computes it (ac - bd, ad + bc) without its
 * check for NaN results (Annex G's call into __muldc3): the kernels' power
 * chains are finite (|exp(dtA)| < 1 for decaying modes), and the check's
 * compare and branch on every step were most of ssm_kernel's own time. */
static inline double complex cmul(double complex a, double complex b)
{
	double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);

	return CMPLX(ar * br - ai * bi, ar * bi + ai * br);
}

struct ssm_kwork {
	int N2, nch;
	int64_t nbmax;
	double complex *dtA;    /* [N2] */
	double complex *coef;   /* [nch][N2] */
	double complex *z;      /* [N2] running anchors */
	float *A;               /* [nch * nbmax][2 N2] */
	float *V;               /* [2 N2][SSM_KBLOCK] */
	float *out;             /* [nch * nbmax][SSM_KBLOCK] */
};

ssm_kwork *ssm_kwork_new(int N2, int nch, int64_t Tmax, lc_err *err)
{
	ssm_kwork *w = calloc(1, sizeof *w);
	int64_t nb = (Tmax + SSM_KBLOCK - 1) / SSM_KBLOCK;

	if (nb < 1)
		nb = 1;
	if (w) {
		w->N2 = N2;
		w->nch = nch;
		w->nbmax = nb;
		w->dtA = malloc((size_t)N2 * sizeof *w->dtA);
		w->coef = malloc((size_t)(nch * N2) * sizeof *w->coef);
		w->z = malloc((size_t)N2 * sizeof *w->z);
		w->A = malloc((size_t)(nch * nb) * (size_t)(2 * N2) * sizeof *w->A);
		w->V = malloc((size_t)(2 * N2) * SSM_KBLOCK * sizeof *w->V);
		w->out = malloc((size_t)(nch * nb) * SSM_KBLOCK * sizeof *w->out);
	}
	if (!w || !w->dtA || !w->coef || !w->z || !w->A || !w->V || !w->out) {
		ssm_kwork_free(w);
		lc_fail(err, "out of memory for SSM kernel scratch (%lld lags)", (long long)Tmax);
		return NULL;
	}
	return w;
}

void ssm_kwork_free(ssm_kwork *w)
{
	if (!w)
		return;
	free(w->dtA);
	free(w->coef);
	free(w->z);
	free(w->A);
	free(w->V);
	free(w->out);
	free(w);
}

/* dtA[n] and coef[c][n] of channel h, in double; A[n] and E[n] = exp(dtA[n]) - 1
 * too when asked (the backward needs them). */
static void discretize(const ssm_params *p, int h, double complex *dtA, double complex *coef,
                       double complex *Aout, double complex *Eout)
{
	double dt = exp((double)p->log_dt[h]);
	int N2 = p->N2;

	for (int n = 0; n < N2; n++) {
		double ar = -exp((double)p->inv_A_real[h * N2 + n]);
		double ai = (double)p->A_imag[h * N2 + n];
		double x = dt * ar, y = dt * ai, s = sin(0.5 * y);
		/* exp(dtA) - 1 without cancellation */
		double complex em1 = CMPLX(expm1(x) * cos(y) - 2.0 * s * s, exp(x) * sin(y));
		double complex A = CMPLX(ar, ai);
		double complex ratio = em1 / A;
		double complex Bc = CMPLX((double)p->B[(h * N2 + n) * 2], (double)p->B[(h * N2 + n) * 2 + 1]);
		dtA[n] = CMPLX(x, y);
		if (Aout)
			Aout[n] = A;
		if (Eout)
			Eout[n] = em1;
		for (int c = 0; c < p->nch; c++) {
			const float *C = p->C + (((size_t)c * (size_t)p->H + (size_t)h) * (size_t)N2 + (size_t)n) * 2;
			coef[c * N2 + n] = Bc * CMPLX((double)C[0], (double)C[1]) * ratio;
		}
	}
}

/* sum_n mag[n] e^{-r_n T} / den[n], the tail bound at T, from each mode's
 * sum_c 2|coef[c,n]|, r_n and den[n] = 1 - e^{-r_n} (made once a channel:
 * the bisection evaluates the bound some twenty times). */
static double tail_bound(const double *mag, const double *r, const double *den, int N2, int64_t T)
{
	double s = 0;

	for (int n = 0; n < N2; n++)
		s += mag[n] * exp(-r[n] * (double)T) / den[n];
	return s;
}

void ssm_modes(const ssm_params *p, int h, double *dtA, double *coef)
{
	int N2 = p->N2 > 0 ? p->N2 : 1;
	double complex a[N2], k[N2 * (p->nch > 0 ? p->nch : 1)];

	discretize(p, h, a, k, NULL, NULL);
	for (int n = 0; n < p->N2; n++) {
		dtA[2 * n] = creal(a[n]);
		dtA[2 * n + 1] = cimag(a[n]);
	}
	for (int i = 0; i < p->N2 * p->nch; i++) {
		coef[2 * i] = creal(k[i]);
		coef[2 * i + 1] = cimag(k[i]);
	}
}

int64_t ssm_support(const ssm_params *p, int h, int64_t L)
{
	int N2 = p->N2 > 0 ? p->N2 : 1;
	double complex dtA[N2], coef[N2 * (p->nch > 0 ? p->nch : 1)];
	double mag[N2], r[N2], den[N2];
	double S = 0, lim;
	int64_t lo = 1, hi = L;

	if (L <= 1)
		return L < 1 ? 1 : L;
	discretize(p, h, dtA, coef, NULL, NULL);
	for (int n = 0; n < p->N2; n++) {
		r[n] = -creal(dtA[n]);
		den[n] = -expm1(-r[n]);
		if (!(r[n] > 0) || !(den[n] > 0))
			return L;       /* a mode that does not decay: no bound */
		mag[n] = 0;
		for (int c = 0; c < p->nch; c++)
			mag[n] += 2.0 * cabs(coef[c * p->N2 + n]);
		S += mag[n];
	}
	lim = SSM_TAIL * S;
	if (!(tail_bound(mag, r, den, p->N2, L) <= lim))
		return L;
	while (lo < hi) {   /* smallest T with tail(T) <= lim */
		int64_t mid = lo + (hi - lo) / 2;
		if (tail_bound(mag, r, den, p->N2, mid) <= lim)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The two loops of ssm_kernel below that make its GEMM's operands, 8
 * doubles at a time where the processor has AVX-512 (and vm_simd allows
 * it): each number computed by the operations cmul and the scalar loops
 * use (products rounded apart, no fused multiply-add), so the same bits.
 * Scalar, they and their exponentials were 3% of a bf16 encode at 65,536
 * tokens. */
#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512D __attribute__((target("avx512f")))

/* re[r], im[r] = a pw[r], r < 32, pw given as (pr, pi) */
AVX512D static void lags512(double complex a, const double *pr, const double *pi, float *re,
                            float *im)
{
	__m512d ar = _mm512_set1_pd(creal(a)), ai = _mm512_set1_pd(cimag(a));

	for (int r = 0; r < 32; r += 8) {
		__m512d br = _mm512_loadu_pd(pr + r), bi = _mm512_loadu_pd(pi + r);
		__m512d vr = _mm512_sub_pd(_mm512_mul_pd(ar, br), _mm512_mul_pd(ai, bi));
		__m512d vi = _mm512_add_pd(_mm512_mul_pd(ar, bi), _mm512_mul_pd(ai, br));
		_mm256_storeu_ps(re + r, _mm512_cvtpd_ps(vr));
		_mm256_storeu_ps(im + r, _mm512_cvtpd_ps(vi));
	}
}

/* Modes n0 .. n0 + 7 of every row of A (see ssm_kernel) */
AVX512D static void arows512(const ssm_kwork *w, int n0, int64_t nb, float *A)
{
	int N2 = w->N2, nch = w->nch, KB = SSM_KBLOCK;
	double tr[8], ti[8];
	__m512d sr, si, zr = _mm512_setzero_pd(), zi = _mm512_setzero_pd(), cr[2], ci[2];
	const __m512d two = _mm512_set1_pd(2.0), neg = _mm512_set1_pd(-1.0);

	for (int k = 0; k < 8; k++) {
		double complex st = cexp(w->dtA[n0 + k] * (double)KB);
		tr[k] = creal(st), ti[k] = cimag(st);
	}
	sr = _mm512_loadu_pd(tr), si = _mm512_loadu_pd(ti);
	for (int c = 0; c < nch && c < 2; c++) {
		for (int k = 0; k < 8; k++)
			tr[k] = creal(w->coef[c * N2 + n0 + k]), ti[k] = cimag(w->coef[c * N2 + n0 + k]);
		cr[c] = _mm512_loadu_pd(tr), ci[c] = _mm512_loadu_pd(ti);
	}
	for (int64_t b = 0; b < nb; b++) {
		__m512d nr;

		if (b % 64 == 0) {
			for (int k = 0; k < 8; k++) {
				double complex z = cexp(w->dtA[n0 + k] * (double)(b * KB));
				tr[k] = creal(z), ti[k] = cimag(z);
			}
			zr = _mm512_loadu_pd(tr), zi = _mm512_loadu_pd(ti);
		}
		for (int c = 0; c < nch; c++) {
			float *row = A + (size_t)(c * nb + b) * (size_t)(2 * N2);
			__m512d ar = _mm512_sub_pd(_mm512_mul_pd(cr[c], zr), _mm512_mul_pd(ci[c], zi));
			__m512d ai = _mm512_add_pd(_mm512_mul_pd(cr[c], zi), _mm512_mul_pd(ci[c], zr));
			_mm256_storeu_ps(row + n0, _mm512_cvtpd_ps(_mm512_mul_pd(two, ar)));
			_mm256_storeu_ps(row + N2 + n0,
			                 _mm512_cvtpd_ps(_mm512_mul_pd(neg, _mm512_mul_pd(two, ai))));
		}
		nr = _mm512_sub_pd(_mm512_mul_pd(zr, sr), _mm512_mul_pd(zi, si));
		zi = _mm512_add_pd(_mm512_mul_pd(zr, si), _mm512_mul_pd(zi, sr));
		zr = nr;
	}
}

/* Whether this call takes the loops above. */
static int wide(const ssm_kwork *w)
{
	return w->N2 % 8 == 0 && w->nch <= 2 && SSM_KBLOCK % 32 == 0 && vm_simd(-1) == 1 &&
	       cpu_avx512f();
}
#endif

int ssm_kernel(const ssm_params *p, int h, int64_t T, float *K, int64_t ldk, ssm_kwork *w,
               lc_err *err)
{
	int N2 = p->N2, nch = p->nch, KB = SSM_KBLOCK;
	int64_t nb = (T + KB - 1) / KB;

	if (T < 1 || ldk < T)
		return lc_fail(err, "ssm_kernel: bad length %lld", (long long)T);
	if (nb > w->nbmax || N2 != w->N2 || nch != w->nch)
		return lc_fail(err, "ssm_kernel: scratch too small");
	discretize(p, h, w->dtA, w->coef, NULL, NULL);
#if defined(__x86_64__) && defined(__GNUC__)
	int wv = wide(w);
#endif
	/* V[n][j] = Re exp(dtA j), V[N2 + n][j] = Im exp(dtA j): the anchors
	 * exp(dtA j0) (every 32 lags) times the 32 powers exp(dtA r), so that
	 * one chain of products is 32 long, not KB (a chain runs at the
	 * multiply's latency: it was most of ssm_kernel's own time) */
	for (int n = 0; n < N2; n++) {
		double complex pw[32], z = 1, step = cexp(w->dtA[n]);
		for (int r = 0; r < 32; r++) {
			pw[r] = z;
			z = cmul(z, step);
		}
#if defined(__x86_64__) && defined(__GNUC__)
		if (wv) {
			double pr[32], pi[32];
			for (int r = 0; r < 32; r++)
				pr[r] = creal(pw[r]), pi[r] = cimag(pw[r]);
			for (int j0 = 0; j0 < KB; j0 += 32)
				lags512(j0 ? cexp(w->dtA[n] * (double)j0) : 1, pr, pi,
				        w->V + (size_t)n * KB + (size_t)j0,
				        w->V + (size_t)(N2 + n) * KB + (size_t)j0);
			continue;
		}
#endif
		for (int j0 = 0; j0 < KB; j0 += 32) {
			double complex a = j0 ? cexp(w->dtA[n] * (double)j0) : 1;
			for (int r = 0; r < 32 && j0 + r < KB; r++) {
				double complex v = cmul(a, pw[r]);
				w->V[(size_t)n * KB + (size_t)(j0 + r)] = (float)creal(v);
				w->V[(size_t)(N2 + n) * KB + (size_t)(j0 + r)] = (float)cimag(v);
			}
		}
	}
	/* A[(c nb + b)][n] = Re a, [N2 + n] = -Im a, a = 2 coef exp(dtA b KB) */
	for (int n = 0; n < N2; n++) {
#if defined(__x86_64__) && defined(__GNUC__)
		if (wv) {
			arows512(w, n, nb, w->A);
			n += 7;
			continue;
		}
#endif
		double complex step = cexp(w->dtA[n] * (double)KB), z = 1;
		for (int64_t b = 0; b < nb; b++) {
			if (b % 64 == 0)
				z = cexp(w->dtA[n] * (double)(b * KB));
			for (int c = 0; c < nch; c++) {
				double complex a = 2.0 * cmul(w->coef[c * N2 + n], z);
				float *row = w->A + (size_t)(c * nb + b) * (size_t)(2 * N2);
				row[n] = (float)creal(a);
				row[N2 + n] = (float)-cimag(a);
			}
			z = cmul(z, step);
		}
	}
	cmp_gemm(CMP_N, CMP_N, nch * nb, KB, 2 * N2, 1.0f, w->A, 2 * N2, w->V, KB, 0.0f, w->out, KB);
	for (int c = 0; c < nch; c++)
		memcpy(K + (size_t)c * (size_t)ldk, w->out + (size_t)c * (size_t)nb * KB,
		       (size_t)T * sizeof *K);
	return 0;
}


#define ANCHOR 64   /* powers re-anchored with cexp() every ANCHOR lags */

int ssm_kernel_backward(const ssm_params *p, int h, int64_t T, const float *dK, int64_t ldk,
                        const ssm_grads *g, lc_err *err)
{
	int N2 = p->N2, nch = p->nch, H = p->H;
	double complex *buf = malloc((size_t)N2 * (5 + 3 * (size_t)nch) * sizeof *buf);
	double complex *dtA, *A, *E, *zl, *z, *coef, *P, *Q;
	double dt = exp((double)p->log_dt[h]), gdt = 0;

	if (!buf)
		return lc_fail(err, "out of memory");
	dtA = buf;
	A = buf + N2;
	E = buf + 2 * N2;
	zl = buf + 3 * N2;
	z = buf + 4 * N2;
	coef = buf + 5 * N2;
	P = coef + nch * N2;
	Q = P + nch * N2;
	discretize(p, h, dtA, coef, A, E);
	for (int n = 0; n < N2; n++)
		z[n] = cexp(dtA[n]);
	for (int k = 0; k < nch * N2; k++)
		P[k] = Q[k] = 0;
	/* P_c = sum_l dK_c[l] conj(z)^l, Q_c = sum_l l dK_c[l] conj(z)^l */
	for (int64_t l = 0; l < T; l++) {
		if (l % ANCHOR == 0)
			for (int n = 0; n < N2; n++)
				zl[n] = conj(cexp(dtA[n] * (double)l));
		for (int c = 0; c < nch; c++) {
			double gk = dK[(size_t)c * (size_t)ldk + (size_t)l];
			if (gk == 0)
				continue;
			for (int n = 0; n < N2; n++) {
				P[c * N2 + n] += gk * zl[n];
				Q[c * N2 + n] += gk * (double)l * zl[n];
			}
		}
		for (int n = 0; n < N2; n++)
			zl[n] *= conj(z[n]);
	}
	for (int n = 0; n < N2; n++) {
		double complex Bc = CMPLX(p->B[(h * N2 + n) * 2], p->B[(h * N2 + n) * 2 + 1]);
		double complex gB = 0, gdtA = 0, gA = 0, ez = E[n] + 1;
		for (int c = 0; c < nch; c++) {
			size_t ci = (((size_t)c * (size_t)H + (size_t)h) * (size_t)N2 + (size_t)n) * 2;
			double complex Cc = CMPLX(p->C[ci], p->C[ci + 1]);
			/* K = 2 Re sum coef z^l: Wirtinger gradients G_x = dL/dRe + i dL/dIm */
			double complex gcoef = 2.0 * P[c * N2 + n];
			double complex gc = gcoef * conj(Bc * E[n] / A[n]);
			g->C[ci] += (float)creal(gc);
			g->C[ci + 1] += (float)cimag(gc);
			gB += gcoef * conj(Cc * E[n] / A[n]);
			gdtA += 2.0 * conj(coef[c * N2 + n]) * Q[c * N2 + n];
			gdtA += gcoef * conj(Bc * Cc * ez / A[n]);
			gA += gcoef * conj(-Bc * Cc * E[n] / (A[n] * A[n]));
		}
		g->B[(h * N2 + n) * 2] += (float)creal(gB);
		g->B[(h * N2 + n) * 2 + 1] += (float)cimag(gB);
		gA += gdtA * dt;
		gdt += creal(gdtA * conj(A[n]));
		g->inv_A_real[h * N2 + n] += (float)(creal(A[n]) * creal(gA));
		g->A_imag[h * N2 + n] += (float)cimag(gA);
	}
	g->log_dt[h] += (float)(gdt * dt);
	free(buf);
	return 0;
}

/* ----------------------------------------------------------- convolution */

struct ssm_cwork {
	int64_t nmax;
	cmp_fftws *fw;
	float *save;    /* [nmax / 2 + 1] a block's left context (T - 1 <= B / 2), which in
	                 * place its outputs overwrite */
};

enum { S_KER, S_X, S_DY };      /* spectrum slots */

ssm_cwork *ssm_cwork_new(int64_t nmax, lc_err *err)
{
	ssm_cwork *w = calloc(1, sizeof *w);

	if (!w) {
		lc_fail(err, "out of memory for FFT buffers of size %lld", (long long)nmax);
		return NULL;
	}
	w->nmax = nmax;
	if (!(w->save = malloc((size_t)(nmax > 0 ? nmax / 2 + 1 : 1) * sizeof *w->save))) {
		lc_fail(err, "out of memory for FFT buffers of size %lld", (long long)nmax);
		ssm_cwork_free(w);
		return NULL;
	}
	if (!(w->fw = cmp_fftws_new(nmax, err))) {
		ssm_cwork_free(w);
		return NULL;
	}
	return w;
}

void ssm_cwork_free(ssm_cwork *w)
{
	if (!w)
		return;
	cmp_fftws_free(w->fw);
	free(w->save);
	free(w);
}

int64_t ssm_fft_size(int64_t L, int64_t T)
{
	return cmp_fft_size(L + T - 1);
}

/* Nanoseconds a point of a real transform and its inverse each take, a
 * model of FFTW's estimated plans at cmp_fft_size's sizes on 2 threads
 * of Zen 5: about 0.065 log2 n while a transform's buffers stay in the
 * core's caches (to 16K points), growing by 15% per doubling beyond
 * (measured 0.8 ns a point at 16K, 1.4 at 128K, 1.9 at 256K-512K, 2.5 at
 * 1M, 2.9 at 2M). It need only rank the choices of ssm_conv_size. Fitted
 * to FFTW's real transforms; compute/fft.c's, which replaced them, ran
 * 1.5-2.2x faster up to 256K points and 1.2-1.35x beyond: refitted to
 * them, the model made no difference a bf16 encode of 65,536 tokens
 * showed (13.65-13.80 s against 13.71-13.88, alternating). */
static double fft_cost(int64_t n)
{
	double lg = log2((double)n);

	return (double)n * 0.065 * lg * (1.0 + 0.15 * (lg > 14.0 ? lg - 14.0 : 0.0));
}

int64_t ssm_conv_size(int64_t L, int64_t T, int bidir)
{
	int64_t whole = ssm_fft_size(L, T), best = whole;
	int64_t ctx = (T - 1) * (bidir ? 2 : 1);
	double cbest = 3.0 * fft_cost(whole);
	const char *v = getenv("LC_FFT_BLOCKS");

	if (v && !strcmp(v, "0"))       /* tests and benchmarks: one cycle always */
		return whole;

	/* blocks of B points give B - ctx outputs each; B >= 2 ctx keeps at
	 * least half of every block */
	for (int64_t p = 1024; p < whole; p *= 2) {
		int64_t B = cmp_fft_size(p), nb;
		double c;

		if (B < 2 * ctx || B >= whole)
			continue;
		nb = (L + (B - ctx) - 1) / (B - ctx);
		c = (2.0 * (double)nb + 1.0) * fft_cost(B);
		if (c < cbest) {
			cbest = c;
			best = B;
		}
	}
	return best;
}

/* The spectrum of the kernels, K0 at lags 0..T-1 and K1[j] at n - j,
 * placed straight into the workspace's signal buffer. */
static void kernel_spectrum(const cmp_fft *pl, ssm_cwork *w, const float *K0, const float *K1,
                            int64_t T)
{
	int64_t n = cmp_fft_n(pl);
	float *g = cmp_fft_signal(w->fw);

	memset(g, 0, (size_t)n * sizeof *g);
	memcpy(g, K0, (size_t)T * sizeof *g);
	if (K1) {
		g[0] += K1[0];
		for (int64_t j = 1; j < T; j++)
			g[n - j] = K1[j];
	}
	cmp_rfft(pl, w->fw, S_KER, g, n);
}

/* Overlap-save: block k's outputs [s, s + b) are the valid middle of the
 * circular convolution of x[s - left, s - left + B) (zeros outside x),
 * b = B - left - right. In place, a block's outputs overwrite the left
 * context of the next, so that is kept before they are written. */
static void conv_blocks(const cmp_fft *pl, ssm_cwork *w, const float *x, int64_t L, int64_t T,
                        int bidir, float D, float *y)
{
	int64_t B = cmp_fft_n(pl), left = T - 1, right = bidir ? T - 1 : 0, b = B - left - right;
	float *g = cmp_fft_signal(w->fw), *prev = w->save;

	memset(prev, 0, (size_t)left * sizeof *prev);
	for (int64_t s = 0; s < L; s += b) {
		int64_t nb = L - s < b ? L - s : b;
		int64_t in = L - s < nb + right ? L - s : nb + right;     /* x[s, s + in) */
		const float *c;

		memcpy(g, prev, (size_t)left * sizeof *g);
		memcpy(g + left, x + s, (size_t)in * sizeof *g);
		memset(g + left + in, 0, (size_t)(B - left - in) * sizeof *g);
		if (nb == b)    /* b >= left: the next block's context lies in these outputs */
			memcpy(prev, x + s + nb - left, (size_t)left * sizeof *prev);
		cmp_rfft(pl, w->fw, S_X, g, B);
		c = cmp_irfft_mul(pl, w->fw, S_X, S_KER, 0);
		vm_madd(c + left, D, x + s, y + s, nb);
	}
}

int ssm_conv(const cmp_fft *pl, ssm_cwork *w, const float *x, int64_t L, const float *K0,
             const float *K1, int64_t T, float D, float *y, lc_err *err)
{
	int64_t n = cmp_fft_n(pl), left = T - 1, ctx = K1 ? 2 * left : left;
	const float *c;

	if (n < L + T - 1 && n - ctx < (left > 1 ? left : 1))
		return lc_fail(err, "ssm_conv: transform size %lld too small for kernels of %lld lags",
		               (long long)n, (long long)T);
	kernel_spectrum(pl, w, K0, K1, T);
	if (n < L + T - 1) {
		conv_blocks(pl, w, x, L, T, K1 != NULL, D, y);
		return 0;
	}
	cmp_rfft(pl, w->fw, S_X, x, L);
	c = cmp_irfft_mul(pl, w->fw, S_X, S_KER, 0);
	vm_madd(c, D, x, y, L);         /* x is read before y is written (in place allowed) */
	return 0;
}

void ssm_conv_backward(const cmp_fft *pl, ssm_cwork *w, const float *x, int64_t L,
                       const float *K0, const float *K1, int64_t T, float D, const float *dy,
                       float *dx, float *dK0, float *dK1, double *dD)
{
	int64_t n = cmp_fft_n(pl);
	const float *c;
	double sD = 0;

	for (int64_t j = 0; j < L; j++)
		sD += (double)dy[j] * x[j];
	*dD += sD;
	kernel_spectrum(pl, w, K0, K1, T);
	cmp_rfft(pl, w->fw, S_DY, dy, L);
	/* dx = dy correlated with the placed kernels */
	c = cmp_irfft_mul(pl, w->fw, S_DY, S_KER, 1);
	for (int64_t j = 0; j < L; j++)
		dx[j] += c[j] + D * dy[j];
	/* dK = dy correlated with x: lag j at index j (K0) and n - j (K1) */
	cmp_rfft(pl, w->fw, S_X, x, L);
	c = cmp_irfft_mul(pl, w->fw, S_DY, S_X, 1);
	for (int64_t j = 0; j < T; j++)
		dK0[j] += c[j];
	if (K1 && dK1) {
		dK1[0] += c[0];
		for (int64_t j = 1; j < T; j++)
			dK1[j] += c[n - j];
	}
}

/* ---------------------------------------------------------- initial values */

double ssm_init_log_dt(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)g;
	return log(1e-3) + lc_rng_unif(rng) * (log(1e-1) - log(1e-3));
}

double ssm_init_inv_A_real(uint64_t j, uint32_t rank, const uint64_t *dims, double g,
                           uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)rng;
	return log(0.5) + 0.2 * g;
}

double ssm_init_A_imag(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	uint64_t N2 = rank > 1 && dims[1] ? dims[1] : 1;

	return 3.141592653589793 * (double)(j % N2) * (1 + 0.05 * g) + 0.1 * lc_rng_normal(rng);
}

double ssm_init_B(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)rank; (void)dims; (void)rng;
	return (j % 2 ? 0.0 : 1.0) + 0.2 * g;
}

double ssm_init_half(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng)
{
	(void)j; (void)rank; (void)dims; (void)rng;
	return 0.5 * g;
}
