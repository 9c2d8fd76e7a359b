/*
 * lsgattn: LSG attention (Condevaux 2023; the authors' modeling_lsg_bart),
 * the encoder self-attention of LSG-BART: local + sparse + global, linear
 * in the input length. Forward only (inference).
 *
 * The rows are ng global rows followed by T token rows; q, k, v and out
 * hold the heads side by side (heads x dk floats per row, row stride ld).
 * kmask [ng + T] is additive: 0, or -FLT_MAX for a key nobody may see
 * (padding; the first token with mask_first_token). Scores are
 * scale * q.k + mask, one softmax per query over all its keys.
 *
 *   T <= 2 bs: dense, every query to every key.
 *   otherwise (T a multiple of bs, bs = block_size):
 *     the global queries attend to every key;
 *     the queries of block b attend to the ng global keys, sbs sparse
 *     slots on each side of their window, and the 3 bs tokens of blocks
 *     b-1, b, b+1 (slots and tokens out of range are absent).
 *   The sparse sequence has T/sf slots per head, compressed from the
 *   token keys and values (sf = sparsity_factor; c = min(bs, sbs)):
 *     stride         slot i = token i sf + (h mod sf)
 *     block_stride   slot i = token B bs + (j + h bs/sf) mod bs, B = i div (bs/sf), j = i mod (bs/sf)
 *     norm           per chunk of c tokens, the c/sf keys of largest L2 norm (masked: norm 0)
 *     pooling        mean of the unmasked tokens of each group of sf (sum / (count + 1e-6));
 *                    the slot is masked when the group has none
 *     bos_pooling    softmax(q0 . k / sqrt(dk) + mask)-weighted sum over each group, q0 the
 *                    first token's query; every slot visible (the authors' mean of -FLT_MAX
 *                    masks overflows to -inf and is reset to 0)
 *     lsh            per chunk of c tokens, pre rounds into c buckets then a round into c/sf:
 *                    bucket = argmax [x R, -x R] of the normalised key x; sums / (count + 1e-8),
 *                    masked when empty; R are the draws given in the spec
 *   With sf = 1 every token is a slot.
 */
#ifndef LC_LSGATTN_H
#define LC_LSGATTN_H

#include <stdint.h>

#include "base/err.h"

enum lsg_sparsity {
	LSG_NONE, LSG_NORM, LSG_POOLING, LSG_STRIDE, LSG_BLOCK_STRIDE, LSG_BOS_POOLING, LSG_LSH,
};

/* "none", "norm", ... (config.json's sparsity_type); -1 when unknown. */
int lsg_sparsity_parse(const char *s);
const char *lsg_sparsity_name(enum lsg_sparsity t);

typedef struct lsg_spec {
	int heads, dk;
	float scale;                 /* 1/sqrt(dk) */
	int ng;                      /* global rows */
	int bs, sbs, sf;             /* block_size, sparse_block_size, sparsity_factor */
	enum lsg_sparsity type;
	int lsh_rounds;              /* lsh: pre rounds + 1 */
	const float *lsh_R;          /* lsh: the rounds' draws one after the other, each
	                              * [heads][dk][n] with n = c/2 (pre rounds), then c/(2 sf) */
} lsg_spec;

/* Why bs, sbs, sf and the type cannot run (the authors' code fails on
 * them too), or NULL when they can. */
const char *lsg_spec_invalid(int bs, int sbs, int sf, enum lsg_sparsity type);

/* Floats of one lsh draw of round r (0-based; the last is the final round). */
int64_t lsg_lsh_draw_len(const lsg_spec *s, int round);

/* Full attention, every query row to every key row (R rows; kmask
 * additive [R] or NULL), by blocks of 64 query rows: one matrix product
 * for the scores of a block, one for its output, no R x R matrix. LSG's
 * dense case and BART's encoder. */
int attn_full_fw(int heads, int dk, float scale, const float *q, const float *k, const float *v,
                 int64_t ld, int64_t R, const float *kmask, float *out, int nth, lc_err *err);

/* The attention of q over k, v (rows ng + T) into out; nth threads.
 * T > 2 bs needs T % bs == 0 (and, for norm and lsh, T % c == 0). */
int lsg_attn_fw(const lsg_spec *s, const float *q, const float *k, const float *v, int64_t ld,
                int64_t T, const float *kmask, float *out, int nth, lc_err *err);

/* The same with q, k, v and out in the GPU's memory (kmask the CPU's),
 * for an encoder whose layers run there (arch/bart_gpu.c; the caller
 * holds the device's lock): one plan of ops/segattn.h, the sparse slots
 * picked or pooled on the CPU from copies of the token rows' keys and
 * values. 0 done, 1 not taken (heads over 128 values, or no GPU memory
 * for the plan: the caller attends on the CPU), -1 err. */
int lsg_attn_fw_dev(const lsg_spec *s, const float *q, const float *k, const float *v,
                    int64_t ld, int64_t T, const float *kmask, float *out, int nth, lc_err *err);

#endif
