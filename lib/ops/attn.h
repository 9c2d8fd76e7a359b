/*
 * attn: multi-head self-attention, forward and backward. Causal: the
 * decoder's self-attention over a key/value cache, for one new token per
 * step in generation and for a whole target at once in training. Full:
 * an encoder's self-attention, every query to every key.
 *
 * Queries at positions pos..pos+T-1 attend to keys at positions
 * 0..pos+T-1 (causal: each to those not after itself):
 *
 *     S[h, i, j] = scale q_h[i] . k_h[j] + bias[h, pos + i - j]   (causal: j <= pos + i)
 *     P = softmax_j(S);  out_h[i] = sum_j P[h, i, j] v_h[j]
 *
 * Rows of q, k, v and out hold the heads side by side (heads x dk floats);
 * bias (T5's relative position bias, by distance, causal only) may be NULL.
 */
#ifndef LC_ATTN_H
#define LC_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct attn_spec {
	int causal;                 /* 1: keys after the query are masked */
	int heads, dk;              /* row width heads x dk */
	float scale;                /* 1 for T5, dk^-0.5 for BART */
	const float *bias;          /* [heads, ldb] by distance, or NULL */
	int64_t ldb;                /* >= pos + T */
} attn_spec;

/* q [T, ldq], k and v [pos + T, ldk], out [T, ldo]. P [heads, T, pos + T]
 * receives the probabilities (the backward needs them; otherwise scratch). */
void attn_fw(const attn_spec *s, const float *q, int64_t ldq, const float *k,
             const float *v, int64_t ldk, int64_t T, int64_t pos, float *out, int64_t ldo,
             float *P);

/* Given dout [T, ldo]: dq [T, ldq] +=, dk and dv [pos + T, ldk] +=. P (the
 * forward's) is replaced by dS = d loss / d S (for a bias gradient: sum
 * dS[h, i, j] over i - j = distance). work: heads x T x (pos + T) floats. */
void attn_bw(const attn_spec *s, const float *q, int64_t ldq, const float *k,
             const float *v, int64_t ldk, int64_t T, int64_t pos, const float *dout,
             int64_t ldo, float *P, float *dq, float *dk, float *dv, float *work);

/* Beam reordering of key/value caches: ncache caches of nl layers, each
 * layer rcap rows of `stride` floats of which the first `used` hold the
 * steps so far. Of the nin rows in use, row r (r < nout) takes row
 * src[r]'s history (src [nout], each in [0, nin), repeats allowed); nout
 * < nin drops rows (a finished document of a batch). tmp: nout x stride
 * floats. */
int attn_cache_reorder(float *const *caches, int ncache, int nl, int rcap, int nin, int nout,
                       size_t stride, size_t used, const int32_t *src, float *tmp, lc_err *err);

#endif
