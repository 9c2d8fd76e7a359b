/*
 * norm: the normalisations of the model layer, forward and backward.
 *
 * RMSNorm (T5, LOCOST): y[r] = w * (x[r] * s[r]), s[r] = 1 / sqrt(mean(x[r]^2) + eps),
 * the mean of squares in double, s rounded to float, each product in float.
 *
 * LayerNorm (BART): y[r] = (x[r] - mean) * s[r] * w + b, s[r] = 1 / sqrt(var + eps),
 * mean and (biased) variance in double, as torch computes them in float
 * with a wider accumulator.
 */
#ifndef LC_NORM_H
#define LC_NORM_H

#include <stdint.h>

/* x, y [R, d] (y may equal x); w [d]; rstd [R] gets s when non-NULL (the
 * backward needs it). */
void rmsnorm_fw(const float *x, int64_t R, int d, const float *w, float eps, float *y,
                float *rstd);

/* The residual and the norm after it, row by row while a row is in cache:
 * x[r] += a[r] (each sum rounded), then y[r] = RMSNorm(x[r]) as above. */
void rmsnorm_fw_res(float *x, const float *a, int64_t R, int d, const float *w, float eps,
                    float *y, float *rstd);

/* Given dy [R, d]: dx [R, d] += d loss / dx, dw [d] += d loss / dw (either
 * may be NULL). x and rstd are the forward's. */
void rmsnorm_bw(const float *dy, const float *x, const float *rstd, const float *w, int64_t R,
                int d, float *dx, float *dw);

/* x, y [R, d] (y may equal x); w, b [d]; rstd [R] and mean [R] get the
 * statistics when non-NULL. */
void layernorm_fw(const float *x, int64_t R, int d, const float *w, const float *b, float eps,
                  float *y, float *mean, float *rstd);

/* Given dy [R, d]: dx += , dw += , db += (each may be NULL). */
void layernorm_bw(const float *dy, const float *x, const float *mean, const float *rstd,
                  const float *w, int64_t R, int d, float *dx, float *dw, float *db);

#endif
