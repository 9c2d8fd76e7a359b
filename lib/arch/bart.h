/*
 * bart: BART (transformers' modeling_bart, 4.36), internal to the arch
 * layer and its tests; the base of LSG-BART, BART-LS and the top-down
 * transformer.
 *
 *   embeddings: x = LN_emb(shared[ids] * s + pos[t + 2]), s = sqrt(d_model)
 *               with scale_embedding, else 1; the position table has
 *               max_position_embeddings + 2 rows (BART's offset of 2)
 *   encoder layer: x = LN(x + SA(x)); x = LN(x + fc2(act(fc1(x))))
 *   decoder layer: x = LN(x + causal SA(x)); x = LN(x + CA(x, enc));
 *                  x = LN(x + fc2(act(fc1(x))))
 *   attention: q = (x Wq^T + bq) / sqrt(head_dim); softmax(q k^T) v; out_proj
 *   logits = x shared^T + final_logits_bias (lm_head.weight when untied)
 *
 * Post-LN, LayerNorm eps 1e-5, biases on every projection, no final layer
 * norm after the stacks. The decoder's cross-attention keeps no key/value
 * cache (ops/xattn.h): the key bias cancels in the softmax and the value
 * bias adds once.
 */
#ifndef LC_BART_H
#define LC_BART_H

#include "arch/arch.h"

extern const lc_arch arch_bart;

typedef struct bart_attn {
	float *wq, *bq, *wk, *bk, *wv, *bv;   /* [d, d], [d] */
	float *wo, *bo;                       /* [d, d], [d] */
	float *ln_w, *ln_b;                   /* the LayerNorm after its residual */
} bart_attn;

typedef struct bart_ffn {
	float *w1, *b1;                       /* [ffn, d], [ffn] */
	float *w2, *b2;                       /* [d, ffn], [d] */
	float *ln_w, *ln_b;                   /* final_layer_norm */
} bart_ffn;

typedef struct bart_enc_layer {
	bart_attn sa;
	bart_ffn ff;
} bart_enc_layer;

typedef struct bart_dec_layer {
	bart_attn sa, ca;
	bart_ffn ff;
} bart_dec_layer;

typedef struct bart_weights {
	float *shared;                        /* [V, d] model.shared.weight */
	float *lm_head;                       /* [V, d]; unset when tied (shared is used) */
	float *final_logits_bias;             /* [1, V] */
	float *enc_pos, *dec_pos;             /* [max_positions + 2, d] */
	float *enc_ln_w, *enc_ln_b;           /* layernorm_embedding */
	float *dec_ln_w, *dec_ln_b;
	float *global_emb;                    /* [512, d] LSG's global tokens; unset in BART */
	bart_enc_layer *enc;                  /* [num_layers] */
	bart_dec_layer *dec;                  /* [num_decoder_layers] */
} bart_weights;

#define BART_EPS 1e-5f

/* The decoder's positions: max_positions, unless the architecture gives
 * the decoder a table of its own (BART-LS extends only the encoder's). */
static inline int bart_dec_positions(const lc_config *c)
{
	return c->max_dec_positions ? c->max_dec_positions : c->max_positions;
}

/* One attention block's projections with biases, declared under prefix
 * (".q_proj.weight" and the others are appended); the LayerNorm's name
 * is given apart. */
void bart_declare_attn(lc_params *p, bart_attn *a, int d, const char *prefix, const char *ln);
void bart_declare_ffn(lc_params *p, bart_ffn *f, int d, int ffn, const char *prefix);

/* BART's config.json keys into c; its parameters (LSG adds to them). */
int bart_config(const json_t *root, const char *path, lc_config *c, lc_err *err);
void *bart_declare(const lc_config *c, lc_params *p);
/* The same into w, zeroed, that an architecture's own struct begins with
 * (it frees w->enc and w->dec); -1 when out of memory. */
int bart_declare_into(const lc_config *c, lc_params *p, bart_weights *w);
/* The initial values (lc-train --config, model_write_random) of the
 * parameters declared from index `first` on: transformers' _init_weights
 * with c->init_std (bart_declare_into calls it on its own). */
void bart_init_hf(const lc_config *c, lc_params *p, uint32_t first);
/* fairseq's names (its checkpoints' state dicts) as aliases of the BART
 * parameters declared in p so far, and its version buffers ignored;
 * bart_declare calls it last, and a declaration that adds parameters under
 * "model." may call it again (names already known are skipped). */
void bart_declare_fairseq_names(lc_params *p, const lc_config *c);
void bart_weights_free(void *w);
void bart_info(const lc_config *c, FILE *f);

/* The encoder ops' keep for models whose decoder masks the rows of pad
 * tokens (fairseq's encoder padding mask: BART-LS, top-down): the other
 * rows of out [L, d] moved to its front; their number (L for a document
 * of pads alone, whose rows all stay: every key masked, the authors'
 * softmax gives NaN, lc's none). */
int64_t bart_keep_nonpad(const lc_config *c, const int32_t *ids, int64_t L, float *out);

/* row[d] = shared[id] * scale + pos[t + 2] (an embedding at position t). */
void bart_embed_row(const lc_config *c, const float *shared, const float *pos, int32_t id,
                    int64_t t, float scale, float *row);

/* A layer's self-attention: o [R, d] from the projections q (unscaled,
 * may be overwritten), k, v [R, d]. */
typedef int (*bart_attn_fn)(void *ctx, int layer, float *q, const float *k, const float *v,
                            int64_t R, float *o, lc_err *err);

/* The same on the GPU, for an encoder whose layers run there
 * (arch/bart_gpu.c): q, k, v and o [R, d] in the GPU's memory, the
 * caller holding the device's lock (compute/dev.h). 0 done, 1 not
 * taken (attn then runs on copies), -1 err. */
typedef int (*bart_attn_dev_fn)(void *ctx, int layer, const float *q, const float *k,
                                const float *v, int64_t R, float *o, lc_err *err);

/* The first nl encoder layers (nl < 0: all) over x [R, d] in place, the
 * self-attention given by attn (and attn_dev, or NULL, where the layers
 * run on the GPU); nth threads. gemm_only: only the projections'
 * products (x is scratch), the benchmarks' floor.
 *
 * With the device cuda and a layer's products worth the GPU
 * (compute/dev.h's cmp_dev_worth), the layers run there whole
 * (bart_gpu_layers), else, and where the GPU has no memory for them, on
 * the CPU. */
int bart_enc_layers(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
                    int nth, int gemm_only, bart_attn_fn attn, bart_attn_dev_fn attn_dev,
                    void *ctx, lc_err *err);

/* The same with a step after each self-attention's out_proj: post may
 * add to its output t [R, d] before the residual (BART-LS's pooled
 * attention: x = LN(x + t + cross)); it runs in gemm_only mode too. */
typedef int (*bart_post_fn)(void *ctx, int layer, float *t, int64_t R, lc_err *err);
int bart_enc_layers_post(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
                         int nth, int gemm_only, bart_attn_fn attn, bart_attn_dev_fn attn_dev,
                         bart_post_fn post, void *ctx, lc_err *err);

/* nl layers of W over x [R, d] with every layer on the GPU
 * (arch/bart_gpu.c): attn_dev (or NULL) there, else attn and post (or
 * NULL) on the CPU over copies, the device unlocked meanwhile. 0 done
 * (x holds the output), 1 the GPU has no memory for them (said once; x
 * unchanged), -1 err. The device must be on (cmp_dev_on). */
int bart_gpu_layers(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
                    bart_attn_fn attn, bart_attn_dev_fn attn_dev, bart_post_fn post, void *ctx,
                    lc_err *err);
/* Encodes the GPU has run whole in this process (the tests count them). */
long long bart_gpu_runs(void);

/* The decoder (arch/bartdec.c): generation over encoder states; its
 * lc_dec_ops, shared by the architectures built on BART. */
extern const lc_dec_ops bart_dec_ops;
void *bartdec_open(const lc_config *c, const bart_weights *w, lc_err *err);
void bartdec_close(void *d);
void *bartdec_state_new(const void *d, const dec_input *in, int n, int max_steps, lc_err *err);
void bartdec_state_free(void *s);
int bartdec_state_threads(void *s, int nthreads, lc_err *err);
int bartdec_step(void *s, const int32_t *tokens, float *logits, lc_err *err);
int bartdec_reorder(void *s, const int32_t *src, lc_err *err);
int bartdec_keep(void *s, const int *keep, lc_err *err);
dec_groups *bartdec_groups(void *s);
int bartdec_pos(const void *s);

/* For tests: the encoder's hidden states after nlayers layers (0: after
 * layernorm_embedding) into out [L, d]. */
int bart_encode_layers(lc_model *m, const int32_t *ids, int64_t L, float *out, int nlayers,
                       lc_err *err);

#endif
