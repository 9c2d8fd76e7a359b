/*
 * decoder: a model's decoder, whatever its architecture, one token per
 * row and step over the encoder's states: what generation (gen/search.h)
 * drives. A dec_state decodes nrow hypotheses (beams) over one encoding,
 * or several documents at once (a batch: each document its own encoding
 * and rows, all stepped together so that the projections of every row
 * are one matrix product); the encoder states are read, not copied (the
 * caller owns them).
 *
 * The semantics of each architecture's decoder are in its header (the
 * T5 decoder of LOCOST: arch/t5dec.h).
 */
#ifndef LC_DECODER_H
#define LC_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "arch/model.h"
#include "base/err.h"

typedef struct lc_decoder lc_decoder;
typedef struct dec_state dec_state;

/* The decoder of m (which must outlive it); NULL and err if the model has
 * none or its configuration is one lc cannot decode. */
lc_decoder *decoder_new(lc_model *m, lc_err *err);
void decoder_free(lc_decoder *d);
const lc_config *decoder_config(const lc_decoder *d);

/* A decoding state over enc [L, d_model] (float32, row-major; must outlive
 * the state) for nrow rows and at most max_steps tokens fed per row. The
 * states are checked first: no rows, or a NaN or infinity (naming its
 * row), is an error, never a summary of nothing. */
dec_state *decoder_state_new(const lc_decoder *d, const float *enc, int64_t L, int nrow,
                             int max_steps, lc_err *err);

/* The check of encoder states [L, d_model] every state makes: no rows,
 * or a NaN or infinity (naming its row), is an error. */
int decoder_check_states(const lc_decoder *d, const float *enc, int64_t L, lc_err *err);
/* The same on bf16 states. */
int decoder_check_states16(const lc_decoder *d, const uint16_t *enc, int64_t L, lc_err *err);

/* 1 when the decoder takes bf16 states as such (dec_input.enc16): LOCOST's
 * under --compute bf16, whose cross-attention reads bf16, and in fp32
 * where the cross-attention's kernels widen them as they read them
 * (cmp_xk_widens: the bits of their float32 copy); a bf16 stream then
 * needs no float32 copy. */
int decoder_reads_bf16(const lc_decoder *d);

/* One document of a batch (dec_input, arch/arch.h): its encoder states
 * [L, d_model] (float32, outliving the state) and its rows. */
/* A state over n documents; their rows follow each other in document
 * order (document i's rows start at the sum of the earlier nrow). Each
 * row's logits are those a state of its document alone would give, up to
 * float summation order. The first document whose states are unusable
 * fails the whole batch, and err names its index ("document 3 of the batch: ..."). */
dec_state *decoder_batch_new(const lc_decoder *d, const dec_input *in, int n, int max_steps,
                             lc_err *err);

/* Drops the documents i with keep[i] == 0 (finished ones): their rows
 * go, the others keep their order and histories. keep [documents left]. */
int decoder_batch_keep(dec_state *s, const int *keep, lc_err *err);

/* Documents and rows in the state now. */
int decoder_docs(const dec_state *s);
int decoder_rows(const dec_state *s);

/* The memory the states made from now on may use for cross-attention
 * caches (ops/xcache.h): a document decoded with several rows (beams,
 * samples) then reads each cached layer's keys and values at each step
 * instead of folding them into every row's queries: its rows share one
 * pass over memory instead of each doing 4 nh L d_model multiply-adds a
 * layer. The keys and values, 2 L nh d_kv numbers a layer and document
 * (bf16 under --compute bf16), are computed at the first step, for as
 * many layers as the budget holds, from the first; 0: none. A document
 * decoded with one row (greedy) folds every layer unless greedy_too: the
 * cache then reads more bytes a step than the folded products take time
 * on the machines measured (lc-decode(1)). The default budget is a
 * quarter of the memory this process may use (machine_memory: a cgroup's
 * limit within the machine's); more than all of it is an error. Either
 * way the logits agree up to float summation order (and bf16's rounding
 * of the keys and values). */
int decoder_set_cross_cache(lc_decoder *d, uint64_t bytes, int greedy_too, lc_err *err);
/* The cache's memory; from [cap] says what set it: "--cross-cache", or
 * the default's reckoning (a quarter of machine_memory). */
uint64_t decoder_cross_cache(const lc_decoder *d, char *from, size_t cap);
/* Layers with a cross-attention cache (0 before the first step). */
int decoder_cross_cached(const dec_state *s);

void decoder_state_free(dec_state *s);

/* Threads for the steps (default 1). With up to 1024 rows the logits are
 * the same bits for every thread count (compute/compute.h, ops/xattn.h);
 * lc-decode keeps its batches within that. */
int decoder_state_threads(dec_state *s, int nthreads, lc_err *err);

/* Feeds one token per row (tokens [rows]) at the next position and writes
 * the next-token logits [rows, vocab_size]. The first call is position 0
 * (feed the decoder start token). Fails after max_steps. */
int decoder_step(dec_state *s, const int32_t *tokens, float *logits, lc_err *err);

/* Beam reordering: row r takes the history of row src[r] (src [rows], each
 * in [0, rows)); several rows may take the same source. In a batch, a row
 * takes only a row of its own document. */
int decoder_reorder(dec_state *s, const int32_t *src, lc_err *err);

/* Number of tokens fed so far (the next position). */
int decoder_pos(const dec_state *s);

#endif
