/*
 * vmath: the elementwise functions the layers spend their non-GEMM time
 * in, over arrays, with AVX2 and FMA when the CPU has them (checked once
 * at run time) and the same formulas in scalar code otherwise:
 *
 *   exp   Cephes' expf: n = round(x log2 e), a degree-7 polynomial in
 *         x - n ln 2, times 2^n; within 2 ulp of exp for x in
 *         [-87.3, 88.7], 0 below (x = -inf or -FLT_MAX included)
 *   gelu_new  x / (1 + exp(-2y)), y = sqrt(2/pi) (x + 0.044715 x^3), which
 *         is 0.5 x (1 + tanh y), with the exp above
 *   erf   Abramowitz and Stegun 7.1.26: 1 - t (a1 + t (a2 + ...)) e^-x^2,
 *         t = 1 / (1 + 0.3275911 |x|), odd; the formula is within 1.5e-7
 *         of erf, and GELU computed with it in float within 3e-7 |x|
 *
 * The two paths can differ in the last bit (FMA); each is deterministic.
 */
#ifndef LC_VMATH_H
#define LC_VMATH_H

#include <stdint.h>

/* on 0: the scalar code from now on, 1: the widest vectors the CPU has
 * (AVX-512 for vm_exp_sum, vm_exp_sum_bf16, vm_max, vm_gelu_tanh, vm_mul,
 * vm_addc, vm_madd, vm_sumsq, vm_scale_mul and ops/ssm's kernels, else
 * AVX2; the default), 2: AVX2 at most, -1: no change; returns the setting.
 * For tests. */
int vm_simd(int on);

/* exp(x), the scalar formula. */
float vm_expf(float x);

/* y[i] = exp(x[i] - sub), y may be x; returns the sum of the y[i] in double. */
double vm_exp_sum(const float *x, float sub, float *y, int64_t n);

/* y[i] = exp(x[i] - sub) rounded to bf16 as cmp_bf16_pack rounds it;
 * returns vm_exp_sum's sum (the same bits as vm_exp_sum, then
 * cmp_bf16_pack). x may be overwritten with the fp32 values. */
double vm_exp_sum_bf16(float *x, float sub, uint16_t *y, int64_t n);

/* y[i] = 0.5 x (1 + erf(x / sqrt 2)) (GELU), y may be x. */
void vm_gelu(const float *x, float *y, int64_t n);

/* y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (gelu_new), times
 * g[i] unless g is NULL; y may be x or g. */
void vm_gelu_tanh(const float *x, const float *g, float *y, int64_t n);

/* y[i] = a[i] b[i]; y may be a or b. */
void vm_mul(const float *a, const float *b, float *y, int64_t n);

/* y[i] = x[i] + c; y may be x. */
void vm_addc(const float *x, float c, float *y, int64_t n);

/* y[i] = c[i] + s x[i], the product rounded, then the sum (no fused
 * multiply-add: the scalar expression's bits; with s = 1, c[i] + x[i]);
 * y may be c or x. */
void vm_madd(const float *c, float s, const float *x, float *y, int64_t n);

/* The sum of x[i]^2, in double. */
double vm_sumsq(const float *x, int64_t n);

/* y[i] = w[i] (x[i] s); y may be x. */
void vm_scale_mul(const float *x, float s, const float *w, float *y, int64_t n);

/* The largest x[i] (-inf for n = 0). */
float vm_max(const float *x, int64_t n);

/* y[i] = (float)(x[i] * s), s in double; y may be x. */
void vm_scale(const float *x, double s, float *y, int64_t n);

/* y[i] = y[i] a + x[i] b, rounded as that C expression (two products and
 * a sum, no fused multiply-add). */
void vm_axpby(const float *x, float b, float a, float *y, int64_t n);

#endif
