/*
 * gemm.h: inside compute/ only: the libraries' products behind cmp_gemm.
 * cpu.c chooses per product (OpenBLAS or oneDNN, fp32 or bf16); dnnl.c
 * is oneDNN's matmul, the only file that includes dnnl.h. Built without
 * oneDNN (LC_HAVE_DNNL undefined), dnnl.c's functions say it is absent;
 * cuda.c is cuBLAS on a GPU, the only file that includes CUDA's headers.
 */
#ifndef LC_COMPUTE_GEMM_H
#define LC_COMPUTE_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "compute/compute.h"

/* C = alpha op(A) op(B) + beta C with oneDNN's matmul, on the calling
 * thread; bf16: operands converted to bf16, fp32 accumulation and result.
 * 0 when done, -1 when oneDNN is absent or cannot make the primitive
 * (the caller then uses OpenBLAS; C is untouched). */
int cmp_dnnl_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc, int bf16);

/* 1 when this build has oneDNN (its version in buf), else 0. */
int cmp_dnnl_present(char *buf, size_t cap);

/* 1 when a bf16 matmul primitive can be created on this processor. */
int cmp_dnnl_bf16_ok(void);

/* Frees the packed copies of the weights in the constant region that
 * starts at p (cmp_constant_drop). */
void cmp_dnnl_drop(const float *p);

/* --- bf16 operands (compute/bf16.c) --- */

/* 1 when [x, x + n) lies inside a region declared with cmp_constant. */
int cmp_is_constant(const float *x, int64_t n);

/* The bf16 copy of [x, x + n), laid out as the fp32 region (the same row
 * strides), made on first use; NULL when x is not constant or there is no
 * memory for the copy (the caller converts per call). */
const uint16_t *cmp_bf16_constant(const float *x, int64_t n);

/* The start of the constant region holding [x, x + n) and its length in
 * *len, or NULL (the GPU keeps its copies by region). */
const float *cmp_constant_base(const float *x, int64_t n, int64_t *len);

/* --- the GPU (compute/cuda.c, built with CUDA=1; elsewhere it says so) --- */

/* 1 when a GPU answers and cuBLAS runs on it (its name, memory and
 * cuBLAS version in buf), else 0 with why not in buf. Opens it once. */
int cmp_cuda_open(char *buf, size_t cap);

/* batch products C_i = alpha op(A_i) op(B_i) + beta C_i (A_i = A + i sA,
 * and so on) on the GPU, fp32, or with bf16 operands and fp32
 * accumulation. 0 when done; -1 on a CUDA error, the first one said
 * (cmp_cuda_on_fail), with C untouched (the caller computes it on the
 * CPU), or for bf16 on a GPU without it (said by cmp_set_compute). */
int cmp_cuda_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
                  int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
                  int64_t batch, int bf16);

/* 1 when the GPU has bf16 products (compute capability 8.0 and up). */
int cmp_cuda_bf16_ok(void);

/* Frees the GPU's copies of the constant region that starts at p. */
void cmp_cuda_drop(const float *p);

/* Where cmp_cuda_gemm says its first failure (NULL: nowhere). */
void cmp_cuda_on_fail(void (*warn)(void *ctx, const char *msg), void *ctx);

/* Says "CUDA: what: why" through that callback (the first time only). */
void cmp_cuda_say(const char *what, const char *why);

/* For compute/cudadev.c: the GPU's copy of a constant region's [x, x + n)
 * (cmp_dev_weight), and a product of GPU buffers (cmp_dev_gemm), fp32 or
 * bf16 as above, queued under the lock that serialises cuBLAS's use: 0,
 * or -1 with why. */
const float *cmp_cuda_resident(const float *x, int64_t n);
int cmp_cuda_gemm_dev(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc, int bf16, const char **why);

/* 1 when the device in force is cuda (cpu.c; a GPU answered then). */
int cmp_device_cuda(void);

#endif
