/*
 * norm: the normalisations of the model layer, forward and backward.
 *
 * RMSNorm (T5, LOCOST): y[r] = w * (x[r] * s[r]), s[r] = 1 / sqrt(mean(x[r]^2) + eps),
 * the mean of squares in double, s rounded to float, each product in float.
 */
#ifndef LC_NORM_H
#define LC_NORM_H

#include <stdint.h>

/* x, y [R, d] (y may equal x); w [d]; rstd [R] gets s when non-NULL (the
 * backward needs it). */
void rmsnorm_fw(const float *x, int64_t R, int d, const float *w, float eps, float *y,
                float *rstd);

/* Given dy [R, d]: dx [R, d] += d loss / dx, dw [d] += d loss / dw (either
 * may be NULL). x and rstd are the forward's. */
void rmsnorm_bw(const float *dy, const float *x, const float *rstd, const float *w, int64_t R,
                int d, float *dx, float *dw);

#endif
