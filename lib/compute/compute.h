/*
 * compute: the one seam between the operations and the machine's numeric
 * libraries (DESIGN.md section 5). Every matrix product, batch of
 * products and FFT of the model layer goes through this interface; the
 * CPU implementation (compute/cpu.c) is OpenBLAS (cblas), oneDNN's matmul
 * (compute/dnnl.c, where built with it and faster) and FFTW3 single
 * precision. A CUDA implementation replaces it function by
 * function; nothing above ops/ calls a numeric library directly.
 *
 * Matrices are row-major float32. Threads: lc parallelises around the
 * libraries (par_for over rows, channels or documents), so every function
 * here runs on the calling thread, except cmp_gemm_par, which splits one
 * product over nth threads itself.
 */
#ifndef LC_COMPUTE_H
#define LC_COMPUTE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

/* Sets the libraries' own threading off (lc's threads call them one per
 * thread) and has OpenBLAS make its buffers, one for each processor this
 * process may use, while there is room for them. Idempotent; the model
 * layer calls it first, before any large allocation. -1 and err (may be
 * NULL) when the buffers could not be had (an address-space limit). */
int cmp_init(lc_err *err);

enum cmp_trans { CMP_N = 0, CMP_T = 1 };

/* C[M, N] = alpha op(A) op(B) + beta C, op(A) [M, K], op(B) [K, N];
 * lda, ldb, ldc are the row strides of A, B and C as stored. */
void cmp_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
              float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
              float beta, float *C, int64_t ldc);

/* The same product split over nth threads: up to 1024 rows by blocks of
 * 256 columns of C (128 up to XK_GEMM_ROWS rows: the decoder's
 * projections), taller ones by blocks of 256 rows (an encoder's), in
 * either case the same blocks whatever nth, so the result is the same
 * bits for every thread count. */
void cmp_gemm_par(int nth, enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                  int64_t ldb, float beta, float *C, int64_t ldc);

/* batch independent products C_i = alpha op(A_i) op(B_i) + beta C_i with
 * A_i = A + i * sA, B_i = B + i * sB, C_i = C + i * sC (attention heads). */
void cmp_gemm_batch(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
                    int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
                    int64_t batch);

/* The same, the products shared out over nth threads (each one whole on
 * one thread: the same bits for every nth); the GPU takes the batch in
 * one call as above. */
void cmp_gemm_batch_par(int nth, enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N,
                        int64_t K, float alpha, const float *A, int64_t lda, int64_t sA,
                        const float *B, int64_t ldb, int64_t sB, float beta, float *C,
                        int64_t ldc, int64_t sC, int64_t batch);

/* --- the device ----------------------------------------------------------
 *
 * Where the products run: "cpu", or "cuda" (an NVIDIA GPU through cuBLAS,
 * in a build with CUDA=1: compute/cuda.c; the weights stay on the GPU,
 * the rest of the work and its data on the CPU, except what model layers
 * run whole there through compute/dev.h; products too small to be worth
 * the bus stay on the CPU, $LC_CUDA_ALL=1 sends them too). NULL: $LC_DEVICE when
 * set, else cuda where this lc has CUDA and a GPU answers, else cpu.
 * Asked for and absent, or a bad name: -1 saying why. warn(ctx, msg)
 * (NULL: nothing) says the first product the GPU failed, which then runs
 * on the CPU, as does every later failed one. Call before the first
 * product and before cmp_set_compute.
 */
int cmp_set_device(const char *name, void (*warn)(void *ctx, const char *msg), void *ctx,
                   lc_err *err);

/* --- the products' library and precision ------------------------------
 *
 * cpu.c picks OpenBLAS or oneDNN per shape class (one table there);
 * $LC_GEMM=openblas or onednn forces one (benchmarks, tests). Precision:
 * f32 (default), or bf16: the products with a constant operand (a
 * model's weights: the projections, feed-forwards and output layer) with
 * bf16 operands and fp32 accumulation, on AVX512-BF16 or AMX through
 * oneDNN and lc's kernels, on a GPU of compute capability 8.0 and up
 * through cuBLAS; cmp_gemm's products of two activations (attention) stay fp32
 * (the cross-attention over encoder states has its own bf16 kernels,
 * below). With $LC_BF16_EMULATE=1 the same products' operands are
 * rounded to bf16 and multiplied in fp32 on any processor (the same
 * numbers up to summation order: a measurement aid).
 */

/* p[0, n) holds weights that stay unchanged until cmp_constant_drop(p):
 * bf16 products read a bf16 copy of them made once, and the products that
 * read them are the ones bf16 applies to. The model layer declares every
 * tensor it loads; training, which changes them, runs fp32. */
void cmp_constant(const float *p, int64_t n);
void cmp_constant_drop(const float *p);

/* Sets the precision by name ("f32", "bf16"; NULL: f32) and checks
 * $LC_GEMM and $LC_BF16_EMULATE. Call before the first product. bf16
 * where it cannot run leaves f32 in force and says why in note (else
 * note is empty): the program prints it once. -1 on a bad name or
 * variable. */
int cmp_set_compute(const char *name, char *note, size_t cap, lc_err *err);

/* "gemm\t<libraries>\ncompute\t<precision>\n" for the programs' --info. */
void cmp_info(FILE *f);

/* x rounded to the nearest bf16 value (ties to even; NaN stays NaN). */
float cmp_bf16_round(float x);

/* 1 when --compute bf16 is in effect (on the hardware, or emulated). */
int cmp_bf16_active(void);

/* y[r ldy + c] = bf16(x[r ld + c]), to nearest even (vectorised where
 * the processor converts: it reads denormals as zero there). */
void cmp_bf16_pack(const float *x, int64_t rows, int64_t cols, int64_t ld, uint16_t *y,
                   int64_t ldy);

/* --- Cross-attention kernels (compute/xkern.c) ---------------------------
 *
 * The two products of attention over encoder states without a cache
 * (ops/xattn.c), for few query rows R (a dozen to a few dozen) against a
 * chunk of c encoder rows of width d, where a general GEMM runs far below
 * the machine's peak. Register tiles with AVX-512 or AVX2 + FMA where the
 * CPU has them (checked once at run time), plain C otherwise; the AVX2
 * and C paths add in the same order (xkern.c), differing only by fused
 * rounding, AVX-512 in 16 lanes. Any sizes;
 * row strides in floats; one thread. bf16 forms below, for the
 * decoder's bf16 copy of the states under --compute bf16.
 */

/* S[r, j] = sum_k Q[r, k] E[j, k]: Q [R, d], E [c, d], S [R, c]. */
void cmp_xk_scores(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                   const float *E, int64_t lde, float *S, int64_t lds);

/* C[r, k] += sum_j P[r, j] E[j, k]: P [R, c], E [c, n], C [R, n]. */
void cmp_xk_accum(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                  const float *E, int64_t lde, float *C, int64_t ldc);
/* The same, bringing the next chunk, rows next [cn <= c, n] (lde apart),
 * into cache as it goes, for the scores that read it next (NULL: none).
 * The same bits as cmp_xk_accum. */
void cmp_xk_accum_ahead(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                        const float *E, int64_t lde, float *C, int64_t ldc, const float *next,
                        int64_t cn);

/* The same over bf16 states held as such, in fp32 arithmetic (each value
 * of E widened, exactly, as it is loaded): where cmp_xk_widens(), the
 * same bits as cmp_xk_scores and cmp_xk_accum_ahead on E's float32 copy,
 * with half the bytes read (AVX2 and plain C; an AVX-512 path keeps its
 * own order, and the caller makes the copy there). */
int cmp_xk_widens(void);
void cmp_xk_scores_w16(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                       const uint16_t *E, int64_t lde, float *S, int64_t lds);
void cmp_xk_accum_w16(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                      const uint16_t *E, int64_t lde, float *C, int64_t ldc,
                      const uint16_t *next, int64_t cn);

/* The same in bf16 (--compute bf16, cmp_bf16_active): Q, E and the
 * accumulation's P in bf16, the products exact in fp32, fp32 sums. With
 * AVX512-BF16 both use its dot products (twice the multiply-adds of
 * fp32; the accumulation interleaves pairs of rows of E as it loads
 * them); elsewhere plain C, the same numbers up to the order of the
 * sums. */
void cmp_xk_scores_bf16(int64_t R, int64_t c, int64_t d, const uint16_t *Q, int64_t ldq,
                        const uint16_t *E, int64_t lde, float *S, int64_t lds);
void cmp_xk_accum_bf16(int64_t R, int64_t c, int64_t n, const uint16_t *P, int64_t ldp,
                       const uint16_t *E, int64_t lde, float *C, int64_t ldc);

/* A product of the seam's (cmp_gemm's contract) in these kernels where
 * they beat the libraries (compute/cpu.c's choice): few rows
 * (M <= XK_GEMM_ROWS), op(A) = A, alpha 1, beta 0 or 1, and AVX2 or
 * AVX-512 here. op(B) = B^T runs the scores' tiles (each row of B, a
 * weight matrix's output row, read once from memory for all M rows: the
 * decoder's projections at memory speed; 1 x 256 x 768 blocks of 600 MB
 * of weights on two threads: 55 GB/s, oneDNN's matmul 31), op(B) = B the
 * accumulation's.
 * Each element is summed in one order wherever its column falls in the
 * call, so a product split by columns has the same bits. 0: done, -1:
 * not such a product (nothing written). */
#define XK_GEMM_ROWS 16
int cmp_xk_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                float beta, float *C, int64_t ldc);
/* The same under --compute bf16 with AVX512-BF16, for A B^T only, with B
 * a weight matrix (cmp_constant): its bf16 copy read by the bf16 scores'
 * tiles, A rounded to bf16 for the call; exact products, fp32 sums (the
 * numbers of oneDNN's bf16 matmul up to the order of the sums). */
int cmp_xk_gemm_bf16(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc);

/* on 0: the plain C kernels from now on, 1: the widest vectors the CPU has
 * (AVX-512, else AVX2; the default), 2: AVX2 at most, -1: no change;
 * returns the setting. For tests and benchmarks. The FFT convolutions'
 * products of spectra (cmp_irfft_mul) follow it too. */
int cmp_xk_simd(int on);

/* --- FFT convolutions ---------------------------------------------------
 *
 * Real signals of length n (a transform size), their spectra (n/2 + 1
 * complex values) held in a thread's workspace slots, and the inverse of
 * a product of two spectra:
 *
 *     cmp_rfft(p, w, s, x, len)        slot s = RFFT(x[0..len) zero-padded to n)
 *     y = cmp_irfft_mul(p, w, a, b, c)  y[0..n) = IRFFT(A * B) / n   (c: A * conj(B))
 *
 * A * B is the spectrum of the circular convolution of the two signals,
 * A * conj(B) that of their circular correlation (the backward pass).
 * Plans are made once per size (cmp_fftcache) and shared by threads; each
 * thread owns a workspace (cmp_fftws) for sizes up to the one it was made
 * for. The slots keep their spectra across calls, so a spectrum is
 * computed once and used in several products.
 */
#define CMP_FFT_SLOTS 3

typedef struct cmp_fft cmp_fft;
typedef struct cmp_fftcache cmp_fftcache;
typedef struct cmp_fftws cmp_fftws;

/* The size from need on that these FFTs (FFTW's, planned by estimate) run
 * fastest at, measured: up to 1024 the smallest 2^a 3^b 5^c 7^d (a >= 1);
 * above, the smallest 2^a 3^b 5^c 7^d with 5 <= a <= 10, or a power of two
 * up to 16,384. */
int64_t cmp_fft_size(int64_t need);

/* The smallest size >= need of the form 2^a 3^b 5^c 7^d, a >= 1 (cuFFT's
 * sizes: compute/dev.h's convolutions). */
int64_t cmp_fft_size_smooth(int64_t need);

/* Plans by size, made on first use; cmp_fft_get is thread-safe. */
cmp_fftcache *cmp_fftcache_new(lc_err *err);
void cmp_fftcache_free(cmp_fftcache *c);
const cmp_fft *cmp_fft_get(cmp_fftcache *c, int64_t n, lc_err *err);
int64_t cmp_fft_n(const cmp_fft *p);

/* A thread's buffers for transforms of size up to nmax. */
cmp_fftws *cmp_fftws_new(int64_t nmax, lc_err *err);
void cmp_fftws_free(cmp_fftws *w);

/* The workspace's signal buffer [nmax]: a signal written there in full
 * (len = n) is transformed without a copy. */
float *cmp_fft_signal(cmp_fftws *w);

void cmp_rfft(const cmp_fft *p, cmp_fftws *w, int slot, const float *x, int64_t len);
/* The result lives in w's signal buffer until the next call on w. The
 * 1/n scaling is applied to the product before the inverse transform. */
const float *cmp_irfft_mul(const cmp_fft *p, cmp_fftws *w, int a, int b, int conj_b);

#endif
