#include "ops/ssm.h"

/* fftw3.h first: with <complex.h> before it, fftwf_complex would be a C99 complex. */
#include <fftw3.h>

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#ifndef CMPLX   /* glibc defines it for gcc only */
#define CMPLX(x, y) ((double complex)((double)(x) + _Complex_I * (double)(y)))
#endif

/* ------------------------------------------------------------- kernels */

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

/* dtA[n] and coef[c][n] of channel h, in double. */
static void discretize(const ssm_params *p, int h, double complex *dtA, double complex *coef)
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
		for (int c = 0; c < p->nch; c++) {
			const float *C = p->C + (((size_t)c * (size_t)p->H + (size_t)h) * (size_t)N2 + (size_t)n) * 2;
			coef[c * N2 + n] = Bc * CMPLX((double)C[0], (double)C[1]) * ratio;
		}
	}
}

static double tail_bound(const double complex *dtA, const double complex *coef, int N2, int nch,
                         int64_t T)
{
	double s = 0;

	for (int n = 0; n < N2; n++) {
		double r = -creal(dtA[n]), den = -expm1(-r), mag = 0;
		if (!(r > 0) || !(den > 0))
			return INFINITY;
		for (int c = 0; c < nch; c++)
			mag += 2.0 * cabs(coef[c * N2 + n]);
		s += mag * exp(-r * (double)T) / den;
	}
	return s;
}

int64_t ssm_support(const ssm_params *p, int h, int64_t L)
{
	double complex dtA[p->N2 > 0 ? p->N2 : 1], coef[p->N2 * p->nch > 0 ? p->N2 * p->nch : 1];
	double S = 0, lim;
	int64_t lo = 1, hi = L;

	if (L <= 1)
		return L < 1 ? 1 : L;
	discretize(p, h, dtA, coef);
	for (int i = 0; i < p->N2 * p->nch; i++)
		S += 2.0 * cabs(coef[i]);
	lim = SSM_TAIL * S;
	if (!(tail_bound(dtA, coef, p->N2, p->nch, L) <= lim))
		return L;
	while (lo < hi) {   /* smallest T with tail(T) <= lim */
		int64_t mid = lo + (hi - lo) / 2;
		if (tail_bound(dtA, coef, p->N2, p->nch, mid) <= lim)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int ssm_kernel(const ssm_params *p, int h, int64_t T, float *K, int64_t ldk, ssm_kwork *w,
               lc_err *err)
{
	int N2 = p->N2, nch = p->nch, KB = SSM_KBLOCK;
	int64_t nb = (T + KB - 1) / KB;

	if (T < 1 || ldk < T)
		return lc_fail(err, "ssm_kernel: bad length %lld", (long long)T);
	if (nb > w->nbmax || N2 != w->N2 || nch != w->nch)
		return lc_fail(err, "ssm_kernel: scratch too small");
	discretize(p, h, w->dtA, w->coef);
	/* V[n][j] = Re exp(dtA j), V[N2 + n][j] = Im exp(dtA j) */
	for (int n = 0; n < N2; n++) {
		double complex z = 1, step = cexp(w->dtA[n]);
		for (int j = 0; j < KB; j++) {
			if (j % 32 == 0)
				z = cexp(w->dtA[n] * (double)j);
			w->V[(size_t)n * KB + (size_t)j] = (float)creal(z);
			w->V[(size_t)(N2 + n) * KB + (size_t)j] = (float)cimag(z);
			z *= step;
		}
	}
	/* A[(c nb + b)][n] = Re a, [N2 + n] = -Im a, a = 2 coef exp(dtA b KB) */
	for (int n = 0; n < N2; n++) {
		double complex step = cexp(w->dtA[n] * (double)KB), z = 1;
		for (int64_t b = 0; b < nb; b++) {
			if (b % 64 == 0)
				z = cexp(w->dtA[n] * (double)(b * KB));
			for (int c = 0; c < nch; c++) {
				double complex a = 2.0 * w->coef[c * N2 + n] * z;
				float *row = w->A + (size_t)(c * nb + b) * (size_t)(2 * N2);
				row[n] = (float)creal(a);
				row[N2 + n] = (float)-cimag(a);
			}
			z *= step;
		}
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(nch * nb), KB, 2 * N2,
	            1.0f, w->A, 2 * N2, w->V, KB, 0.0f, w->out, KB);
	for (int c = 0; c < nch; c++)
		memcpy(K + (size_t)c * (size_t)ldk, w->out + (size_t)c * (size_t)nb * KB,
		       (size_t)T * sizeof *K);
	return 0;
}

/* ---------------------------------------------------------------- FFTs */

struct ssm_plans {
	int64_t n;
	fftwf_plan fwd, inv;
};

struct ssm_cwork {
	int64_t n;
	float *x, *g;                 /* [n] */
	fftwf_complex *xf, *gf;       /* [n/2 + 1] */
};

int64_t ssm_fft_size(int64_t need)
{
	int64_t m = need < 2 ? 2 : need;

	if (m % 2)
		m++;
	for (;; m += 2) {
		int64_t r = m;
		while (r % 2 == 0) r /= 2;
		while (r % 3 == 0) r /= 3;
		while (r % 5 == 0) r /= 5;
		while (r % 7 == 0) r /= 7;
		if (r == 1)
			return m;
	}
}

ssm_plans *ssm_plans_new(int64_t n, lc_err *err)
{
	ssm_plans *p = calloc(1, sizeof *p);
	float *x = fftwf_malloc((size_t)n * sizeof *x);
	fftwf_complex *xf = fftwf_malloc((size_t)(n / 2 + 1) * sizeof *xf);

	if (!p || !x || !xf || n > INT32_MAX) {
		lc_fail(err, "out of memory for FFT plans of size %lld", (long long)n);
		goto fail;
	}
	p->n = n;
	p->fwd = fftwf_plan_dft_r2c_1d((int)n, x, xf, FFTW_ESTIMATE);
	p->inv = fftwf_plan_dft_c2r_1d((int)n, xf, x, FFTW_ESTIMATE);
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
	ssm_plans_free(p);
	return NULL;
}

int64_t ssm_plans_n(const ssm_plans *p) { return p->n; }

void ssm_plans_free(ssm_plans *p)
{
	if (!p)
		return;
	if (p->fwd)
		fftwf_destroy_plan(p->fwd);
	if (p->inv)
		fftwf_destroy_plan(p->inv);
	free(p);
}

ssm_cwork *ssm_cwork_new(int64_t n, lc_err *err)
{
	ssm_cwork *w = calloc(1, sizeof *w);

	if (w) {
		w->n = n;
		w->x = fftwf_malloc((size_t)n * sizeof *w->x);
		w->g = fftwf_malloc((size_t)n * sizeof *w->g);
		w->xf = fftwf_malloc((size_t)(n / 2 + 1) * sizeof *w->xf);
		w->gf = fftwf_malloc((size_t)(n / 2 + 1) * sizeof *w->gf);
	}
	if (!w || !w->x || !w->g || !w->xf || !w->gf) {
		ssm_cwork_free(w);
		lc_fail(err, "out of memory for FFT buffers of size %lld", (long long)n);
		return NULL;
	}
	return w;
}

void ssm_cwork_free(ssm_cwork *w)
{
	if (!w)
		return;
	fftwf_free(w->x);
	fftwf_free(w->g);
	fftwf_free(w->xf);
	fftwf_free(w->gf);
	free(w);
}

void ssm_conv(const ssm_plans *pl, ssm_cwork *w, const float *x, int64_t L,
              const float *K0, const float *K1, int64_t T, float D, float *y)
{
	int64_t n = pl->n, nf = n / 2 + 1, j;
	float s = 1.0f / (float)n;

	/* bidirectional kernel: K0 at lags 0..T-1, K1[j] at n - j */
	memset(w->g, 0, (size_t)n * sizeof *w->g);
	memcpy(w->g, K0, (size_t)T * sizeof *w->g);
	if (K1) {
		w->g[0] += K1[0];
		for (j = 1; j < T; j++)
			w->g[n - j] = K1[j];
	}
	memcpy(w->x, x, (size_t)L * sizeof *w->x);
	memset(w->x + L, 0, (size_t)(n - L) * sizeof *w->x);
	fftwf_execute_dft_r2c(pl->fwd, w->g, w->gf);
	fftwf_execute_dft_r2c(pl->fwd, w->x, w->xf);
	for (j = 0; j < nf; j++) {
		float ar = w->xf[j][0], ai = w->xf[j][1], br = w->gf[j][0], bi = w->gf[j][1];
		w->xf[j][0] = (ar * br - ai * bi) * s;
		w->xf[j][1] = (ar * bi + ai * br) * s;
	}
	/* y = conv + D x; x is read before y is written (in place allowed) */
	fftwf_execute_dft_c2r(pl->inv, w->xf, w->g);
	for (j = 0; j < L; j++)
		y[j] = w->g[j] + D * x[j];
}
