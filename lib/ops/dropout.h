/*
 * dropout: inverted dropout for training, and the dropout-then-residual
 * step of every pre-norm block.
 *
 * A mask holds 0 (dropped, probability p) or 1 / (1 - p) per element,
 * drawn from a SplitMix64 stream (base/rng.h) whose state the caller
 * keeps, so that a seed fixes every mask of a run.
 */
#ifndef LC_DROPOUT_H
#define LC_DROPOUT_H

#include <stdint.h>

/* mask [n] from the stream at *state (advanced). */
void dropout_mask(float *mask, int64_t n, double p, uint64_t *state);

/* y[i] *= mask[i]. */
void dropout_apply(float *y, const float *mask, int64_t n);

/* out[i] = res[i] + mask[i] * y[i] (mask NULL: res[i] + y[i]); out may
 * be res or y. */
void residual_add(float *out, const float *res, const float *y, const float *mask, int64_t n);

#endif
