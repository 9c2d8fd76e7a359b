/*
 * t5dec: the T5 decoder (LOCOST's; internal to the arch layer and its
 * tests: programs use arch/decoder.h).
 *
 * Semantics are those of the LOCOST reference (tests/data/locost, from
 * the oracle's README): pre-norm blocks (RMSNorm, no bias), self-attention
 * without 1/sqrt(d_kv) scaling, causal, with the unidirectional bucketed
 * relative position bias of block 0 added in every layer; cross-attention
 * over the encoder states without position bias; the feed-forward
 * wo(act(wi_0 x) * wi_1 x) (or wo(act(wi x)) when not gated); the final
 * norm; logits = final_norm(h) * d_model^-0.5 . shared^T when the
 * embeddings are tied (lm_head.weight otherwise, unscaled).
 *
 * One forward serves generation and training: it feeds T tokens to each
 * of nrow rows at positions pos..pos+T-1 over a key/value cache of the
 * self-attention. Generation feeds one token per row and step (rows are
 * beams); training feeds a whole target to one row, keeping what the
 * backward needs. Cross-attention keeps no cache: per layer and head the
 * query is projected into model space and attends to the encoder states
 * themselves (ops/xattn.h), so memory does not grow with the encoder's
 * length; the price is 2 x layers x heads x L x d_model multiply-adds per
 * generated token and row.
 */
#ifndef LC_T5DEC_H
#define LC_T5DEC_H

#include <stdint.h>

#include "arch/arch.h"

typedef struct t5dec_layer {
	float *sa_ln;                   /* [d] */
	float *sa_q, *sa_k, *sa_v;      /* [inner, d], inner = heads x d_kv */
	float *sa_o;                    /* [d, inner] */
	float *ca_ln;                   /* [d] */
	float *ca_q, *ca_k, *ca_v;      /* [inner, d] */
	float *ca_o;                    /* [d, inner] */
	float *ff_ln;                   /* [d] */
	float *wi0, *wi1;               /* [d_ff, d]; wi1 NULL when not gated (wi0 is then "wi") */
	float *wo;                      /* [d, d_ff] */
} t5dec_layer;

typedef struct t5dec_weights {
	float *shared;                  /* [V, d] shared.weight, the embeddings (the encoder's too) */
	float *lm_head;                 /* [V, d] lm_head.weight; unset when tied (shared is used) */
	float *rel_bias;                /* [buckets, heads] block 0's relative position bias */
	float *final_ln;                /* [d] */
	t5dec_layer *layer;             /* [num_decoder_layers] */
} t5dec_weights;

/* Declares shared.weight (aliases encoder.embed_tokens.weight and
 * decoder.embed_tokens.weight) and lm_head.weight (an alias of shared
 * when tied). */
void t5dec_declare_embed(const lc_config *c, t5dec_weights *w, lc_params *p);
/* Declares the decoder blocks and the final norm; allocates w->layer
 * (freed by t5dec_weights_free). -1 when out of memory. */
int t5dec_declare_layers(const lc_config *c, t5dec_weights *w, lc_params *p);
void t5dec_weights_free(t5dec_weights *w);

/* Checks that c is a configuration this decoder runs. */
int t5dec_check(const lc_config *c, lc_err *err);

/* T5's unidirectional relative-position bucket for rp = query - key >= 0. */
int t5_rel_bucket(int64_t rp, int num_buckets, int max_distance);

/* Generation (the lc_dec_ops of architectures with this decoder). */
void *t5dec_open(const lc_config *c, const t5dec_weights *w, lc_err *err);
void t5dec_close(void *d);
void *t5dec_state_new(const void *d, const dec_input *in, int n, int max_steps, lc_err *err);
void t5dec_state_free(void *s);
int t5dec_state_threads(void *s, int nthreads, lc_err *err);
int t5dec_step(void *s, const int32_t *tokens, float *logits, lc_err *err);
int t5dec_reorder(void *s, const int32_t *src, lc_err *err);
int t5dec_keep(void *s, const int *keep, lc_err *err);
dec_groups *t5dec_groups(void *s);
int t5dec_pos(const void *s);

/* Training, teacher-forced (the decoder half of lc_train_ops). */
void *t5dec_train_fw(const lc_config *c, const t5dec_weights *W, const float *E, int64_t Le,
                     const int32_t *in, int64_t T, lc_arena *a, double p, uint64_t *rng,
                     float **logits, lc_err *err);
int t5dec_train_bw(const lc_config *c, const t5dec_weights *W, t5dec_weights *G, void *tape,
                   float *dlogits, float *dE, lc_err *err);

#endif
