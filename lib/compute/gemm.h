/*
 * gemm.h: inside compute/ only: the libraries' products behind cmp_gemm.
 * cpu.c chooses per product (OpenBLAS or oneDNN, fp32 or bf16); dnnl.c
 * is oneDNN's matmul, the only file that includes dnnl.h. Built without
 * oneDNN (LC_HAVE_DNNL undefined), dnnl.c's functions say it is absent.
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

/* --- bf16 operands (compute/bf16.c) --- */

/* 1 when [x, x + n) lies inside a region declared with cmp_constant. */
int cmp_is_constant(const float *x, int64_t n);

/* The bf16 copy of [x, x + n), laid out as the fp32 region (the same row
 * strides), made on first use; NULL when x is not constant or there is no
 * memory for the copy (the caller converts per call). */
const uint16_t *cmp_bf16_constant(const float *x, int64_t n);

#endif
