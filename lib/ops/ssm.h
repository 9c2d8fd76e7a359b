/*
 * ssm: the S4D convolution kernels of one LOCOST layer and the
 * bidirectional FFT convolution, one channel at a time.
 *
 * Kernels (oracle README): dt = exp(log_dt[h]), A_n = -exp(inv_A_real) +
 * i A_imag, coef[c,n] = B_n C[c,n] (exp(dt A_n) - 1) / A_n (expm1 in
 * double), K_c[l] = 2 Re sum_n coef[c,n] exp(dt A_n l). They are
 * evaluated as a blocked real GEMM (rows: blocks of SSM_KBLOCK lags with
 * the anchors exp(dt A l0) advanced in double; columns: exp(dt A j),
 * j < SSM_KBLOCK, in double), so cost is nch x T x 2 N2 multiply-adds in
 * BLAS, and no H x N x L temporary exists. T, the support, is the
 * smallest length whose rigorous tail bound
 *     sum_c sum_{l>=T} |K_c[l]| <= sum_c,n 2|coef[c,n]| e^{-r_n T} / (1 - e^{-r_n})
 * (r_n = dt exp(inv_A_real[n])) is at most SSM_TAIL x sum_c,n 2|coef[c,n]|;
 * beyond it the kernel is treated as zero (it is not, but below fp32
 * resolution of the sum it feeds).
 *
 * Convolution: y[t] = sum_{s<=t} K0[t-s] k[s] + sum_{s>=t} K1[s-t] k[s]
 * (both kernels contribute at lag 0), by real FFTs of size n >= L + T - 1
 * with K1[j] placed at index n - j; plans are made once per size (ssm_plans)
 * and reused by every channel and thread.
 */
#ifndef LC_SSM_H
#define LC_SSM_H

#include <stdint.h>

#include "base/err.h"

#define SSM_KBLOCK 256          /* lags per kernel GEMM row */
#define SSM_TAIL   1e-7         /* truncation budget, relative to sum 2|coef| */

typedef struct ssm_params {
	int H, N2, nch;             /* channels, complex modes, kernels (2: bidirectional) */
	const float *log_dt;        /* [H] */
	const float *inv_A_real;    /* [H, N2] */
	const float *A_imag;        /* [H, N2] */
	const float *B;             /* [H, N2, 2] (re, im) */
	const float *C;             /* [nch, H, N2, 2]; c = 0 causal (K0), 1 anti-causal (K1) */
} ssm_params;

/* Scratch for one thread's kernel evaluation of up to Tmax lags. */
typedef struct ssm_kwork ssm_kwork;
ssm_kwork *ssm_kwork_new(int N2, int nch, int64_t Tmax, lc_err *err);
void ssm_kwork_free(ssm_kwork *w);

/* The support T of channel h's kernels for a length-L input (1 <= T <= L). */
int64_t ssm_support(const ssm_params *p, int h, int64_t L);

/* K[c*ldk + l] = K_c[h, l] for l < T, c < nch. ldk >= T. */
int ssm_kernel(const ssm_params *p, int h, int64_t T, float *K, int64_t ldk, ssm_kwork *w,
               lc_err *err);

/* FFT plans for one transform size, shared by threads. */
typedef struct ssm_plans ssm_plans;
/* Smallest size >= need of the form 2^a 3^b 5^c 7^d with a >= 1. */
int64_t ssm_fft_size(int64_t need);
ssm_plans *ssm_plans_new(int64_t n, lc_err *err);   /* not thread-safe (FFTW planner) */
int64_t ssm_plans_n(const ssm_plans *p);
void ssm_plans_free(ssm_plans *p);

/* Per-thread FFT buffers for size n. */
typedef struct ssm_cwork ssm_cwork;
ssm_cwork *ssm_cwork_new(int64_t n, lc_err *err);
void ssm_cwork_free(ssm_cwork *w);

/* y[0..L) = bidirectional conv of x[0..L) with K0[0..T), K1[0..T) (K1 may
 * be NULL: causal only) + D * x. n = ssm_plans_n(pl) must be >= L + T - 1.
 * y may equal x (in place). */
void ssm_conv(const ssm_plans *pl, ssm_cwork *w, const float *x, int64_t L,
              const float *K0, const float *K1, int64_t T, float D, float *y);

#endif
