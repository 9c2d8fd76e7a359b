/*
 * bartlsattn: the two attentions of the BART-LS encoder (Xiong et al.
 * 2022, facebookresearch/bart_ls: xformers' block_noglobal and
 * PoolEncoderLayer), forward and backward.
 *
 * Rows are the T positions of one document, already right-padded to a
 * multiple of the block size; pad [T] marks the padding (1 = pad), or is
 * NULL for no mask at all (the authors' encoder_padding_mask=None). Rows
 * of q, k, v, out hold the heads side by side (heads x dk floats, row
 * stride ld).
 *
 * Block attention: non-overlapping blocks of bs rows, no global token.
 *
 *     S[h, i, j] = (q_h[i] . k_h[j]) scale          i, j in the same block
 *     S[h, i, j] = -10000 (assigned) unless both i and j are real
 *     out_h[i] = softmax_j(S[h, i]) v_h           (the bs keys of the block)
 *
 * A real query gives pad keys zero weight; a pad query averages v over
 * its whole block. The backward recomputes the probabilities (nothing is
 * kept between the passes); masked scores are constants, so they pass no
 * gradient to q and k.
 *
 * With global0 (the top-down transformer's BlockSelfAttention, Pang et
 * al. 2022 as bart_ls's top_down.py/block.py implement it), T need not be
 * a multiple of bs (the last block is cut short: the keys past T would
 * only be masked), and position 0 is a global token, pad or not:
 *
 *     i != 0: the bs block scores, -10000 unless i and j are both real
 *             and j != 0, plus one score (q_h[i] . k_h[0]) scale that is
 *             never masked; one softmax over the bs + 1;
 *             out_h[i] = sum_j p_ij v_h[j] + p_i0' v_h[0]
 *     i == 0: every key, -10000 where j != 0 is a pad
 *
 * (so a pad query attends almost only to token 0).
 *
 * Pooled attention (PoolEncoderLayer), on a [T, d], the block attention's
 * output after its out_proj, with its own projections W:
 *
 *     K = a Wk^T + bk, V = a Wv^T + bv; with a mask, K and V rows of pads = 0
 *     Kp, Vp [Tp, d] = AvgPool1d(kernel, stride, padding) over time,
 *         count_include_pad (the divisor is always kernel), floor mode:
 *         Tp = (T + 2 padding - kernel) / stride + 1
 *     PM[j] = 1 iff every in-range position of window j is a pad
 *     Q = a Wq^T + bq; O_h = softmax((Q_h Kp_h^T) scale, PM keys -inf) Vp_h
 *         (no further projection of Kp, Vp)
 *     cross = O Wo^T + bo
 *
 * The layer then adds a + cross to its input before the LayerNorm.
 * Work is spread over nth threads (par_for); products go through
 * compute/compute.h.
 */
#ifndef LC_BARTLSATTN_H
#define LC_BARTLSATTN_H

#include <stdint.h>

#include "base/err.h"

/* ------------------------------------------------------ block attention */

typedef struct blkattn_spec {
	int heads, dk;
	int bs;                     /* block_size; T % bs == 0 unless global0 */
	float scale;                /* dk^-0.5 */
	int global0;                /* position 0 a global token (top-down) */
} blkattn_spec;

/* out [T, ld] (the heads' columns) from q, k, v [T, ld]. */
int blkattn_fw(const blkattn_spec *s, const float *q, const float *k, const float *v, int64_t ld,
               int64_t T, const unsigned char *pad, float *out, int nth, lc_err *err);
/* The same with q, k, v and out in the GPU's memory (pad the CPU's), for
 * an encoder whose layers run there (arch/bart_gpu.c; the caller holds
 * the device's lock): one plan of ops/segattn.h. 0 done, 1 not taken
 * (heads over 128 values, or no GPU memory for the plan), -1 err. */
int blkattn_fw_dev(const blkattn_spec *s, const float *q, const float *k, const float *v,
                   int64_t ld, int64_t T, const unsigned char *pad, float *out, lc_err *err);

/* Given dout [T, ld]: dq, dk, dv [T, ld] += (row stride ld). */
int blkattn_bw(const blkattn_spec *s, const float *q, const float *k, const float *v, int64_t ld,
               int64_t T, const unsigned char *pad, const float *dout, float *dq, float *dk,
               float *dv, int nth, lc_err *err);

/* ----------------------------------------------------- pooled attention */

typedef struct poolattn_spec {
	int heads, d;               /* d = heads x dk */
	int kernel, stride, padding;
} poolattn_spec;

/* The projections [d, d] and biases [d] (HF layout, y = x W^T + b); the
 * backward's gradients in the same struct bound to gradient arrays. */
typedef struct poolattn_w {
	float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo;
} poolattn_w;

/* Why the spec cannot run (AvgPool1d refuses it too), or NULL. */
const char *poolattn_spec_invalid(const poolattn_spec *s);

/* Tp for T positions; 0 when T is too short for one window. */
int64_t poolattn_len(const poolattn_spec *s, int64_t T);

/* What the forward leaves for the backward (and the tests): Q [T, d],
 * Kp, Vp [Tp, d], O [T, d] (before out_proj), pm [Tp] (1 = masked;
 * all 0 without a mask). */
typedef struct poolattn_tape {
	int64_t T, Tp;
	float *q, *kp, *vp, *o;
	unsigned char *pm;
} poolattn_tape;

int poolattn_tape_init(poolattn_tape *t, const poolattn_spec *s, int64_t T, lc_err *err);
void poolattn_tape_free(poolattn_tape *t);

/* cross [T, d] from a [T, d] (row stride d). gemm_only: only the four
 * projections' products (the benchmarks' floor; the rest is skipped). */
int poolattn_fw(const poolattn_spec *s, const poolattn_w *W, const float *a, int64_t T,
                const unsigned char *pad, poolattn_tape *t, float *cross, int gemm_only, int nth,
                lc_err *err);

/* Given dcross [T, d] and the forward's tape: da [T, d] +=, G's
 * gradients += (each of G's pointers may be NULL: not wanted). */
int poolattn_bw(const poolattn_spec *s, const poolattn_w *W, const float *a,
                const unsigned char *pad, const poolattn_tape *t, const float *dcross, float *da,
                const poolattn_w *G, int nth, lc_err *err);

/* ---------------------------------------------- top-down segments */

/* The top-down transformer's segments (AvgPool1d(kernel, stride) of its
 * bottom-up output, padding 0 in bart_ls's code): s->heads unused, y [S, d]
 * with S = poolattn_len(s, T) (T < kernel: none). dx += in the backward. */
void segpool_fw(const poolattn_spec *s, const float *x, int64_t T, float *y, int nth);
void segpool_bw(const poolattn_spec *s, int64_t T, const float *dy, float *dx, int nth);

/* AdaPool (Pang et al. 2022): the same windows, weighted by an importance
 * tagger: p_t = sigmoid(x_t . u + b) [T] (kept for the backward),
 * y_j = sum_t p_t x_t / sum_t p_t over window j. With u = 0 every p_t is
 * sigmoid(b) and y is the average pooling. Backward: dx +=, du [d] +=,
 * db += (du, db may be NULL). */
void adapool_fw(const poolattn_spec *s, const float *x, int64_t T, const float *u, float b,
                float *p, float *y, int nth);
int adapool_bw(const poolattn_spec *s, const float *x, int64_t T, const float *u, const float *p,
               const float *y, const float *dy, float *dx, float *du, float *db, int nth,
               lc_err *err);

/* The top-down layers' cross-attention core: o_h = softmax((q_h k_h^T)
 * dk^-0.5) v_h, T queries over S keys, no mask (projections outside);
 * q, k, v, o rows of width d = heads x dk. Backward: dq, dk, dv +=. */
int segxattn_fw(int heads, int d, const float *q, int64_t T, const float *k, const float *v,
                int64_t S, float *o, int nth, lc_err *err);
int segxattn_bw(int heads, int d, const float *q, int64_t T, const float *k, const float *v,
                int64_t S, const float *dout, float *dq, float *dk, float *dv, int nth,
                lc_err *err);

#endif
