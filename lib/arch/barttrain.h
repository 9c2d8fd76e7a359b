/*
 * barttrain: BART's training halves (internal to the arch layer and its
 * tests): the teacher-forced forward of the encoder and the decoder over
 * one example, keeping what the backward needs in an arena, and the
 * backward; bart_train_ops is arch_bart's lc_train_ops.
 *
 * The forward is bart.h's (post-LN, LayerNorm eps 1e-5, learned positions
 * at t + 2, embeddings times sqrt(d_model) with scale_embedding, biases
 * everywhere, logits = x shared^T + final_logits_bias) written over whole
 * sequences with the same ops as inference; the decoder's cross-attention
 * is ops/xattn.h's, as in generation.
 *
 * Dropout (p = lc-train's --dropout) is transformers' `dropout`, in its
 * places: after layernorm_embedding (encoder and decoder), and on each
 * sublayer's output before its residual (self-attention, cross-attention,
 * fc2). activation_dropout and attention_dropout are not applied (0 in
 * bart-base, bart-large and bart-large-cnn). Masks are drawn from *rng in
 * the forward's order: the embeddings, then per layer one mask per
 * sublayer.
 *
 * Gradients: into the shared embedding from the encoder input, the
 * decoder input and the tied logits (lm_head.weight when untied); never
 * into final_logits_bias, a buffer in transformers (its gradient stays 0,
 * so AdamW, which does not decay it, leaves it as it is); the cross-
 * attention's key bias gets an exact zero (it cancels in the softmax).
 *
 * THE SEAM for BART-like encoders (BART-LS, LSG): the encoder's
 * self-attention is a plug, bart_sa_train. Everything else of an encoder
 * layer (projections with biases, residuals, LayerNorms, feed-forward,
 * dropout) is bart_train_enc_fw / _bw; an architecture whose encoder is
 * "BART with another self-attention" fills a bart_sa_train with its
 * attention's forward (keeping its own tape in the arena) and backward,
 * and calls these with it from its own lc_train_ops, whose decoder
 * halves are bart_train_dec_fw / _bw unchanged (and whose shared state
 * may be bart_train_shared_*). bart_sa_full is BART's: every query to
 * every key, ops/attn.h's full attention. A BART-LS file would write:
 *
 *     static void *enc_fw(void *sh, int part, const void *W, const int32_t *src,
 *                         int64_t L, lc_arena *a, double p, uint64_t *rng,
 *                         float **E, int64_t *Le, lc_err *err)
 *     {
 *         bart_sa_train sa = { ls_attn_fw, ls_attn_bw, ctx };  // its block + pooled
 *         void *t = bart_train_enc_fw(c, W, &sa, src, L, a, p, rng, E, err);
 *         if (t) *Le = L;
 *         return t;
 *     }
 *     // enc_bw the same with bart_train_enc_bw (ctx reaching its gradients,
 *     // if its attention has parameters); dec_fw, dec_bw: bart_train_ops_dec_*.
 *
 * The layer index tells the plug which attention a layer has (BART-LS:
 * pooled attention in the top layers only). Two optional parts of the
 * plug serve encoders like BART-LS's (bartlstrain.c): rows, the source
 * padded (to a block multiple; the pad rows zero after the embeddings,
 * the states handed on the first L), and post_fw/post_bw, a hook after
 * out_proj (BART-LS's pooled attention of a, the residual adding
 * a + cross). BART leaves them NULL: its training is unchanged.
 */
#ifndef LC_BARTTRAIN_H
#define LC_BARTTRAIN_H

#include <stdint.h>

#include "arch/bart.h"
#include "base/arena.h"

/* One encoder layer's self-attention in training. q, k, v [R, d] are the
 * layer's projections with their biases (q NOT scaled by head_dim^-0.5:
 * the attention scales), heads side by side (enc_heads x d/enc_heads);
 * the layer keeps them until the backward, which gets them back. */
typedef struct bart_sa_train {
	/* o [R, d] (written); what bw needs beyond q, k, v goes into arena a
	 * (*tape, may stay NULL). -1 and err on failure. */
	int (*fw)(void *ctx, int layer, const float *q, const float *k, const float *v, int64_t R,
	          float *o, lc_arena *a, void **tape, lc_err *err);
	/* Given dout [R, d]: dq, dk, dv [R, d] += (zeroed by the caller).
	 * dout may be overwritten. The plug's own parameters, if any, get
	 * their gradients through ctx. */
	int (*bw)(void *ctx, int layer, void *tape, const float *q, const float *k, const float *v,
	          int64_t R, float *dout, float *dq, float *dk, float *dv, lc_err *err);
	void *ctx;
	/* Optional (0 / NULL in BART). rows: the rows the layers run over,
	 * the source padded (BART-LS: to a block multiple); rows L .. rows-1
	 * are zero after the embeddings and only the first L of the output
	 * are the encoder's states; 0: L. */
	int64_t (*rows)(void *ctx, int64_t L);
	/* After out_proj: t [R, d], the attention's output, is replaced by
	 * what the residual adds (BART-LS's pooled layers: a + cross); what
	 * post_bw needs goes into the arena (*tape). post_bw: given dt [R, d]
	 * of what was added, dt becomes the gradient of the attention's
	 * output. */
	int (*post_fw)(void *ctx, int layer, float *t, int64_t R, lc_arena *a, void **tape,
	               lc_err *err);
	int (*post_bw)(void *ctx, int layer, void *tape, float *dt, int64_t R, lc_err *err);
} bart_sa_train;

/* BART's full self-attention; ctx is the lc_config. */
int bart_sa_full_fw(void *ctx, int layer, const float *q, const float *k, const float *v,
                    int64_t R, float *o, lc_arena *a, void **tape, lc_err *err);
int bart_sa_full_bw(void *ctx, int layer, void *tape, const float *q, const float *k,
                    const float *v, int64_t R, float *dout, float *dq, float *dk, float *dv,
                    lc_err *err);

/* The encoder over src [L]: states *E [L, d] (in the arena; with sa->rows
 * the first L of the padded rows); the tape, or NULL and err. */
void *bart_train_enc_fw(const lc_config *c, const bart_weights *W, const bart_sa_train *sa,
                        const int32_t *src, int64_t L, lc_arena *a, double p, uint64_t *rng,
                        float **E, lc_err *err);
/* Given dE [L, d]: the encoder's gradients added to G. */
int bart_train_enc_bw(const lc_config *c, const bart_weights *W, bart_weights *G,
                      const bart_sa_train *sa, void *tape, const float *dE, lc_err *err);

/* The two parts of bart_train_enc_fw / _bw, for encoders that are several
 * stacks of BART layers with steps between them (the top-down
 * transformer: bottom-up layers, pooling, segment layers, top-down
 * layers). The embeddings of src [L] into *x [R, d] (R >= L rows, the
 * rest zero; in the arena), the tape, or NULL and err; the backward takes
 * dx [L, d] (overwritten) of the embeddings' L rows. */
void *bart_train_embed_fw(const lc_config *c, const bart_weights *W, const int32_t *src,
                          int64_t L, int64_t R, lc_arena *a, double p, uint64_t *rng, float **x,
                          lc_err *err);
int bart_train_embed_bw(const lc_config *c, const bart_weights *W, bart_weights *G, void *tape,
                        float *dx, lc_err *err);
/* c->num_layers layers of `layers` over x [R, d] (kept, not written):
 * *out [R, d] in the arena, the tape, or NULL and err (sa->rows is not
 * read: R is given). The backward takes dx [R, d] of the output and
 * leaves there that of the input; the layers' gradients are added to G
 * [c->num_layers]. */
void *bart_train_layers_fw(const lc_config *c, const bart_enc_layer *layers,
                           const bart_sa_train *sa, const float *x, int64_t R, lc_arena *a,
                           double p, uint64_t *rng, float **out, lc_err *err);
int bart_train_layers_bw(const lc_config *c, const bart_enc_layer *layers, bart_enc_layer *G,
                         const bart_sa_train *sa, void *tape, float *dx, lc_err *err);

/* The decoder, teacher-forced on in [T] over E [Le, d]: logits [T, V]. */
void *bart_train_dec_fw(const lc_config *c, const bart_weights *W, const float *E, int64_t Le,
                        const int32_t *in, int64_t T, lc_arena *a, double p, uint64_t *rng,
                        float **logits, lc_err *err);
/* Given dlogits [T, V] (overwritten): gradients added to G, dE [Le, d] +=. */
int bart_train_dec_bw(const lc_config *c, const bart_weights *W, bart_weights *G, void *tape,
                      float *dlogits, float *dE, lc_err *err);

/* The shared state of BART's lc_train_ops: the config alone (no per-step
 * state); usable as is by architectures that need none either. */
void *bart_train_shared_new(const lc_config *c, int parts, lc_err *err);
void bart_train_shared_free(void *sh);
int bart_train_step_begin(void *sh, const void *W, int64_t Lmax, int threads, lc_err *err);
int bart_train_step_end(void *sh, const void *W, void *G, int threads, lc_err *err);

/* lc_train_ops' decoder halves (bart_train_dec_fw / _bw) for every model
 * with BART's decoder whose weights begin with a bart_weights and whose
 * shared state is bart_train_shared_*'s. */
void *bart_train_ops_dec_fw(void *sh, const void *W, const float *E, int64_t Le,
                            const int32_t *in, int64_t T, lc_arena *a, double p, uint64_t *rng,
                            float **logits, lc_err *err);
int bart_train_ops_dec_bw(void *sh, const void *W, void *G, void *tape, float *dlogits,
                          float *dE, lc_err *err);

extern const lc_train_ops bart_train_ops;

#endif
