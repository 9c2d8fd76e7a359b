/*
 * cudak.h: inside compute/ only: the launchers of lc's CUDA kernels
 * (compute/cudak.cu, built by nvcc with make CUDA=1), callable from C.
 * Each queues its kernel on the default stream and returns the launch's
 * cudaError_t as an int (0: queued). compute/dev.h says what each does;
 * pointers are the GPU's.
 */
#ifndef LC_COMPUTE_CUDAK_H
#define LC_COMPUTE_CUDAK_H

#include <stdint.h>

#include "compute/dev.h"

#ifdef __cplusplus
extern "C" {
#endif

int cudak_rmsnorm(const float *x, int64_t R, int d, const float *w, float eps, float *y);
/* x = LN(x + t) rowwise (t NULL: LN(x)) */
int cudak_addln(float *x, const float *t, int64_t R, int d, const float *w, const float *b,
                float eps);
/* x[r, c] += b[by_row ? r : c] */
int cudak_bias(float *x, int64_t R, int64_t C, int64_t ld, const float *b, int by_row);
int cudak_act(int k, const float *a, const float *b, int64_t n, float *out);
int cudak_mul(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t R, int64_t C);
/* xp [G, n]: rows g < cnt the first L values of x's row g, zeros elsewhere */
int cudak_pad(const float *x, int64_t ldx, int64_t L, int cnt, float *xp, int64_t n, int G);
/* gp [G, n]: the placed kernels of channels g < cnt (dev.h), zeros elsewhere */
int cudak_kernels(const double *dtA, const double *coef, int N2, int nch, const int64_t *T,
                  int64_t Tmax, int cnt, float *gp, int64_t n, int G);
/* rows of S [R, n] to their softmax; lse [R] or NULL */
int cudak_softmax(float *S, int64_t R, int64_t n, float *lse);
/* a[i] *= b[i] s over n complex values */
int cudak_cmul(void *a, const void *b, int64_t n, float s);
/* x[g, t] = c[g, t] + D[g] x[g, t], g < cnt, t < L */
int cudak_combine(float *x, int64_t ldx, int64_t L, int cnt, const float *c, int64_t n,
                  const float *D);
/* y [n] (bf16) = x [n] rounded to nearest, ties to even */
int cudak_to_bf16(const float *x, int64_t n, void *y);
/* the attention of groups g [ng] over segments s (dev.h; both the GPU's) */
int cudak_segattn(const cmp_dev_group *g, int64_t ng, const cmp_dev_seg *s, int dk, float scale);

#ifdef __cplusplus
}
#endif

#endif
