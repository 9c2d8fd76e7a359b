/*
 * ssm: the S4D convolution of one LOCOST layer, channel by channel: the
 * kernels from their parameters, the bidirectional FFT convolution, and
 * the backward of both.
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
 * resolution of the sum it feeds). Training uses the full length (T = L).
 *
 * Convolution: y[t] = sum_{s<=t} K0[t-s] k[s] + sum_{s>=t} K1[s-t] k[s]
 * + D k[t] (both kernels contribute at lag 0), by real FFTs of a size
 * n >= L + T - 1 from the compute seam (plans shared, made once per size)
 * with K1[j] placed at index n - j; at inference, kernels much shorter
 * than L by blocks of a smaller n (overlap-save, ssm_conv_size).
 *
 * Backward: the convolution's input gradient is the circular correlation
 * of dy with the placed kernel, the kernels' gradient that of dy with the
 * input, both by FFT; the kernel parameters' gradients follow from
 * dK by the chain rule through the discretisation (Wirtinger derivatives
 * of the complex modes), in double.
 *
 * Random initial values (S4D-Lin style, for new models): ssm_init_*.
 */
#ifndef LC_SSM_H
#define LC_SSM_H

#include <stdint.h>

#include "base/err.h"
#include "compute/compute.h"

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

/* Gradients of the same parameters, same shapes; accumulated (+=). */
typedef struct ssm_grads {
	float *log_dt, *inv_A_real, *A_imag, *B, *C;
} ssm_grads;

/* Scratch for one thread's kernel evaluation of up to Tmax lags. */
typedef struct ssm_kwork ssm_kwork;
ssm_kwork *ssm_kwork_new(int N2, int nch, int64_t Tmax, lc_err *err);
void ssm_kwork_free(ssm_kwork *w);

/* The support T of channel h's kernels for a length-L input (1 <= T <= L). */
int64_t ssm_support(const ssm_params *p, int h, int64_t L);

/* Channel h's discretised modes, as the kernels use them (in double):
 * dtA [N2] and coef [nch][N2], complex as (re, im) pairs, so that
 * K_c[h, l] = 2 Re sum_n coef[c, n] exp(dtA[n] l) (for devices that
 * evaluate the kernels themselves: arch/locost_gpu.c). */
void ssm_modes(const ssm_params *p, int h, double *dtA, double *coef);

/* K[c*ldk + l] = K_c[h, l] for l < T, c < nch. ldk >= T. */
int ssm_kernel(const ssm_params *p, int h, int64_t T, float *K, int64_t ldk, ssm_kwork *w,
               lc_err *err);

/* Given dK[c*ldk + l] = d loss / d K_c[h, l] for l < T, adds the gradients
 * of channel h's parameters to g. Thread-safe for distinct h. */
int ssm_kernel_backward(const ssm_params *p, int h, int64_t T, const float *dK, int64_t ldk,
                        const ssm_grads *g, lc_err *err);

/* One thread's convolution buffers for transform sizes up to nmax. */
typedef struct ssm_cwork ssm_cwork;
ssm_cwork *ssm_cwork_new(int64_t nmax, lc_err *err);
void ssm_cwork_free(ssm_cwork *w);

/* The transform size for inputs of length L and kernels of T lags in one
 * cycle (cmp_fft_size(L + T - 1)). */
int64_t ssm_fft_size(int64_t L, int64_t T);

/* The transform size ssm_conv runs fastest at for inputs of length L and
 * kernels of T lags, both directions when bidir: ssm_fft_size(L, T), or
 * for short kernels a smaller size convolved block by block (overlap-save:
 * at 600,000 tokens a kernel of 2,000 lags took 16K-point blocks for a
 * third of the whole transforms' time, by fft_cost's model).
 * $LC_FFT_BLOCKS=0: always one cycle (tests and benchmarks). */
int64_t ssm_conv_size(int64_t L, int64_t T, int bidir);

/* y[0..L) = bidirectional conv of x[0..L) with K0[0..T), K1[0..T) (K1 may
 * be NULL: causal only) + D * x. n = cmp_fft_n(pl) >= L + T - 1 (one
 * cycle), or blocks of n - ctx outputs, ctx = T - 1 for one direction,
 * 2 (T - 1) for both: ssm_conv_size's sizes (n >= 2 ctx); a size leaving
 * blocks of fewer than max(T - 1, 1) outputs is an error. y may equal x
 * (in place). */
int ssm_conv(const cmp_fft *pl, ssm_cwork *w, const float *x, int64_t L, const float *K0,
             const float *K1, int64_t T, float D, float *y, lc_err *err);

/* The backward of ssm_conv for output gradient dy[0..L): adds to dx[0..L),
 * dK0[0..T), dK1[0..T) (when K1 is given) and *dD. */
void ssm_conv_backward(const cmp_fft *pl, ssm_cwork *w, const float *x, int64_t L,
                       const float *K0, const float *K1, int64_t T, float D, const float *dy,
                       float *dx, float *dK0, float *dK1, double *dD);

/* Initial values, for element j of a parameter of shape dims[rank] (as
 * declared above), given g, a standard normal draw, and rng for further
 * draws: log_dt uniform in [log 1e-3, log 1e-1]; inv_A_real log 0.5 +
 * noise; A_imag pi n (1 + noise) + noise, n = j mod N2; B 1 + noise
 * (real parts) or noise (imaginary parts); C and D 0.5 g. */
double ssm_init_log_dt(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
double ssm_init_inv_A_real(uint64_t j, uint32_t rank, const uint64_t *dims, double g,
                           uint64_t *rng);
double ssm_init_A_imag(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
double ssm_init_B(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);
double ssm_init_half(uint64_t j, uint32_t rank, const uint64_t *dims, double g, uint64_t *rng);

#endif
