/*
 * decoder: the T5 / LongT5 decoder of a LOCOST model, one token at a time.
 *
 * Semantics are those of the reference (tests/data/locost, from the
 * oracle's README): pre-norm blocks (RMSNorm, no bias), self-attention
 * without 1/sqrt(d_kv) scaling, causal, with the unidirectional bucketed
 * relative position bias of block 0 added in every layer; cross-attention
 * over the encoder states without position bias; the feed-forward
 * wo(act(wi_0 x) * wi_1 x) (or wo(act(wi x)) when not gated); the final
 * norm; logits = final_norm(h) * d_model^-0.5 . shared^T when the
 * embeddings are tied (lm_head.weight otherwise, unscaled).
 *
 * A dec_state decodes nrow hypotheses (beams) over one encoding. It keeps
 * the self-attention keys and values of the tokens fed so far (the usual
 * cache, [layers, nrow, steps, heads*d_kv]), but NO cross-attention cache:
 * per layer and head the query is projected into model space,
 * q' = W_k,h^T q_h [d_model], and scores are q' . enc[s]; the context is
 * c = sum_s a_s enc[s] [d_model], then v_h = W_v,h c. The encoder states
 * [L, d_model] are only read (the caller owns them), so extra memory does
 * not grow with L (per thread: nrow * heads * (512 + d_model) floats of
 * chunk scores and partial sums, merged exactly); the price is
 * 2 * layers * heads * L * d_model multiply-adds per generated token and
 * row (about heads times the d_kv-sized dot products of a K/V cache).
 */
#ifndef LC_DECODER_H
#define LC_DECODER_H

#include <stdint.h>

#include "base/err.h"
#include "arch/model.h"

typedef struct lc_decoder lc_decoder;
typedef struct dec_state dec_state;

/* Resolves and shape-checks every decoder weight of m (which must outlive
 * the decoder). NULL and err if one is missing or mis-shaped, or the
 * configuration is one this decoder does not implement. */
lc_decoder *decoder_new(lc_model *m, lc_err *err);
void decoder_free(lc_decoder *d);
const lc_config *decoder_config(const lc_decoder *d);

/* T5's unidirectional relative-position bucket for rp = query - key >= 0. */
int decoder_rel_bucket(int64_t rp, int num_buckets, int max_distance);

/* A decoding state over enc [L, d_model] (float32, row-major; not copied,
 * must outlive the state) for nrow rows and at most max_steps tokens fed
 * per row. L may be 0 (cross-attention then contributes nothing). */
dec_state *decoder_state_new(const lc_decoder *d, const float *enc, int64_t L,
                             int nrow, int max_steps, lc_err *err);
void decoder_state_free(dec_state *s);

/* Threads for the steps (default 1): cross-attention splits the encoder
 * rows, the projections split their outputs. Call OpenBLAS single-threaded
 * (openblas_set_num_threads(1)) when using more than one. Results differ
 * from the single-threaded ones only by float summation order. */
int decoder_state_threads(dec_state *s, int nthreads, lc_err *err);

/* Feeds one token per row (tokens [nrow]) at the next position and writes
 * the next-token logits, logits [nrow, vocab_size]. The first call is
 * position 0 (feed the decoder start token). Fails after max_steps. */
int decoder_step(dec_state *s, const int32_t *tokens, float *logits, lc_err *err);

/* Beam reordering: row r takes the history (cache) of row src[r] (src [nrow],
 * each in [0, nrow)); several rows may take the same source. */
int decoder_reorder(dec_state *s, const int32_t *src, lc_err *err);

/* Number of tokens fed so far (the next position). */
int decoder_pos(const dec_state *s);

#endif
