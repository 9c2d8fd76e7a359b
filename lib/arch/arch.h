/*
 * arch: what an architecture is to the rest of lc, and the registry that
 * picks one from a model directory's config.json.
 *
 * An architecture is one small file (arch/<name>.c) that defines an
 * lc_arch: how to read its config.json keys into lc_config (once: the
 * activation, the flags and the sizes are parsed there and nowhere else),
 * the one declaration of its parameters (weights/params.h: names, shapes
 * in terms of the config, tied aliases, initial values) into its struct
 * of weight pointers, and its encoder, decoder and training halves, wired
 * from the operations in ops/. Adding an architecture is that file plus
 * one line in the table of arch.c.
 *
 * The registry matches config.json's "architectures" (Hugging Face class
 * names) first, then "model_type"; a config with neither is LOCOST, lc's
 * first architecture (the configs lc wrote before there were others).
 *
 * Programs do not use this header: they open models (arch/model.h) and
 * run encoders and decoders (arch/encoder.h, arch/decoder.h), whatever
 * the architecture. The trainer (train/) uses the training halves.
 */
#ifndef LC_ARCH_H
#define LC_ARCH_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/arena.h"
#include "base/err.h"
#include "ops/act.h"
#include "ops/xcache.h"
#include "weights/params.h"

typedef struct lc_arch lc_arch;
typedef struct lc_model lc_model;

/* A model's configuration, parsed once from config.json. Fields that an
 * architecture does not have stay 0. */
typedef struct lc_config {
	const lc_arch *arch;
	int d_model, d_ff, d_kv;
	int num_layers, num_decoder_layers;  /* encoder and decoder blocks */
	int num_heads;
	int vocab_size;
	float eps;                           /* layer_norm_epsilon */
	enum lc_act act;                     /* the feed-forward's activation */
	int is_gated_act;                    /* T5's gated feed-forward: act(x wi_0) * (x wi_1) */
	int tie_word_embeddings;
	int pad_id, eos_id, decoder_start_id;
	/* T5 decoder */
	int rel_buckets, rel_max_distance;   /* relative_attention_num_buckets / _max_distance */
	/* LOCOST encoder */
	int d_state;                         /* 2 x complex modes */
	int num_ssm_heads;
	int bidirectional, gating, use_fast_fft_conv;
	/* BART (num_heads and d_ff are the decoder's) */
	int enc_heads, enc_ff;               /* encoder_attention_heads, encoder_ffn_dim */
	int max_positions;                   /* max_position_embeddings: longest input and output */
	int scale_embedding;                 /* embeddings times sqrt(d_model) */
	int bos_id;
	/* LSG-BART's encoder attention (ops/lsgattn.h); lsg 0: BART's */
	int lsg;
	int block_size, sparse_block_size, sparsity_factor;
	int sparsity_type;                   /* enum lsg_sparsity */
	int num_global_tokens;               /* global rows before the tokens, 1..512 */
	int adaptive;                        /* pad the input to a block multiple */
	int mask_first_token;                /* no attention to the first token */
	int pool_with_global;                /* without pass_global_tokens: row 0 becomes global 0 */
	int pass_global_tokens;              /* pass_global_tokens_to_decoder */
	int lsh_pre_rounds;                  /* lsh_num_pre_rounds */
	/* BART-LS: block attention (block_size) in every encoder layer, pooled
	 * attention in the top pooling_layers; the decoder's own position
	 * table (0: max_positions, as BART) */
	int pooling_layers, pool_kernel, pool_stride, pool_padding;
	int max_dec_positions;               /* max_decoder_position_embeddings */
	/* top-down transformer (block_size = window_size, pool_kernel and
	 * pool_stride the segments' pooling, padding 0; num_layers = the
	 * bottom-up then the top-down layers) */
	int td_bottom_up, td_segment_layers; /* bottom_up_layers, segment_layers */
	int td_max_segments;                 /* max_segments; 0: no limit */
	int td_adapool;                      /* pool_type "adapool" (else "avg") */
	/* BART, BART-LS: the std of new weights (init_std, transformers'
	 * _init_weights) */
	double init_std;
} lc_config;

/* The most ids an eos_token_id list may give (transformers stops at any of
 * them; 2 or 3 in the models that list them). */
#define LC_GEN_EOS_MAX 16

/* Generation settings a model directory asks for (generation_config.json,
 * else config.json, or config.json when generation_config.json says
 * "_from_model_config": transformers then rebuilds it from config.json),
 * as transformers' GenerationConfig reads them; a field is -1 (NAN for
 * the doubles) when the files leave it unset. */
typedef struct lc_gencfg {
	int num_beams;
	int max_new;                         /* max_new_tokens, else max_length - 1 */
	int min_new;                         /* min_new_tokens */
	int min_length;                      /* min_length (counting the start token); both
	                                      * minimums apply */
	double length_penalty, repetition_penalty;
	int no_repeat_ngram;
	int early_stopping;                  /* 0 false, 1 true, 2 "never" */
	int forced_bos, forced_eos;          /* token ids */
	int forced_eos_default;              /* forced_eos is BartConfig's, config.json has none */
	int eos, decoder_start;              /* generation_config.json's, which transformers
	                                        prefers to config.json's */
	int eos_extra[LC_GEN_EOS_MAX - 1];   /* the ids eos_token_id lists after eos */
	int neos_extra;
	int eos_none, start_none;            /* generation_config.json has no eos_token_id (none:
	                                      * transformers then never stops at one), or neither
	                                      * decoder_start_token_id nor bos_token_id */
	const char *ignored;                 /* a key set that lc does not apply
	                                        (bad_words_ids, ...), or NULL */
	const char *source;                  /* the file they came from, or NULL */
} lc_gencfg;

/* The encoder, as programs run it (arch/encoder.h dispatches to these). */
typedef struct lc_enc_ops {
	void *(*open)(lc_model *m, int threads, lc_err *err);
	void (*close)(void *e);
	int64_t (*out_len)(const void *e, int64_t L);   /* rows of the states for L tokens */
	int64_t (*max_len)(const void *e);              /* longest input; NULL: no limit */
	int (*run)(void *e, const int32_t *ids, int64_t L, float *out,
	           void (*progress)(void *ctx, int done, int total), void *ctx, lc_err *err);
	/* optional: time only the products of a length-L input (benchmarks) */
	int (*gemm_only)(void *e, int64_t L, double *seconds, lc_err *err);
	/* optional: moves the rows of out [out_len(L)] that the decoder reads
	 * to its front, in order, and returns how many (the top-down model's
	 * decoder masks the rows of pad tokens); NULL: all of them */
	int64_t (*keep)(const void *e, const int32_t *ids, int64_t L, float *out);
} lc_enc_ops;

/* One document of a decoding batch (arch/decoder.h). */
typedef struct dec_input {
	const float *enc;           /* [L, d_model] float32, or NULL with enc16 */
	int64_t L;
	int nrow;
	/* The states as bf16 instead, for a decoder that reads them so
	 * (decoder_reads_bf16): no float32 copy is made. */
	const uint16_t *enc16;
} dec_input;

typedef struct dec_groups dec_groups;

/* The decoder, one token per row and step (arch/decoder.h). */
typedef struct lc_dec_ops {
	void *(*open)(lc_model *m, lc_err *err);
	void (*close)(void *d);
	/* the documents' inputs, checked (arch/decoder.c) */
	void *(*state_new)(const void *d, const dec_input *in, int n, int max_steps, lc_err *err);
	void (*state_free)(void *s);
	int (*state_threads)(void *s, int nthreads, lc_err *err);
	int (*step)(void *s, const int32_t *tokens, float *logits, lc_err *err);
	int (*reorder)(void *s, const int32_t *src, lc_err *err);
	int (*keep)(void *s, const int *keep, lc_err *err);
	int (*pos)(const void *s);
	dec_groups *(*groups)(void *s);
	/* 1: under --compute bf16 its cross-attention reads bf16 states, and
	 * takes them as such (dec_input.enc16) */
	int bf16_states;
} lc_dec_ops;

/* The documents of a decoding state, kept by each architecture's state
 * (arch/decoder.c does the bookkeeping): a document's encoder states as
 * its cross-attention reads them (an architecture may substitute its own
 * copy, `own`, freed with the group), its rows, and rows in all. */
typedef struct dec_group {
	const float *E;
	int64_t L;
	int nrow, row0;
	float *own;
	const uint16_t *E16;        /* bf16 states (--compute bf16), or NULL */
	uint16_t *own16;            /* E16 when it is the state's own copy */
	xcache *xc;                 /* its cross-attention cache (first xlayers layers), or NULL */
	float *Edev;                /* E on the GPU (compute/dev.h), or NULL */
} dec_group;

struct dec_groups {
	int n, nrow;
	int rcap;                   /* rows at creation: the caches' layer stride */
	dec_group *g;               /* [n] */
	/* cross-attention caches (ops/xcache.h): their budget in bytes, set by
	 * decoder_batch_new; the layers that have them (the first xlayers, for
	 * every document; 0 until an architecture builds them) */
	uint64_t xbudget;
	int xgreedy;                /* also when every document has one row */
	int xdefault;               /* xbudget is the default's, not the user's */
	int xlayers;
};

/* From checked inputs; -1 and err when out of memory. */
int dec_groups_init(dec_groups *gs, const dec_input *in, int n, lc_err *err);
/* Each document's states (of width d) copied to the GPU (Edev) where the
 * device is one, so that their cross-attention runs there in fp32
 * (ops/xattn.h's xattn_fw_any, xattn_fw_dev; no caches are built then):
 * E, or where E16 is set (--compute bf16) its values, so the GPU reads
 * what the CPU's bf16 kernels would. Where the GPU has no memory for
 * them, said once, they stay the CPU's alone. */
void dec_groups_to_device(dec_groups *gs, int d);
/* Drops the groups with !keep[i], fills src [the new nrow] with the old row
 * of each row kept, and returns the new number of rows. */
int dec_groups_keep(dec_groups *gs, const int *keep, int32_t *src);
void dec_groups_free(dec_groups *gs);
/* The cross-attention caches, at a state's first step (an architecture
 * gives its layers' projections w [nl] and the step's threads): for the
 * first xlayers = min(nl, xbudget / the bytes of one layer for all
 * documents) layers, every document's, from its states (E, else E16),
 * bf16 under --compute bf16; 0 layers when the budget holds none, or when
 * every document has one row (but xgreedy). Nothing when built already
 * or without a budget. Out of memory for them, the default's budget
 * (xdefault) takes half the layers, down to none (the cache only saves
 * time); a budget the user set is -1 and err. */
int dec_groups_xcache(dec_groups *gs, int nl, int nh, int dk, int d, const xcache_w *w,
                      int nth, lc_err *err);
/* Cross-attention of cached layer li: o [nrow T, nh dk] from the queries
 * q [nrow T, nh dk], each document's rows over its own cache. */
void dec_groups_attend(const dec_groups *gs, int li, xattn_work *xw, const float *q, float *o,
                       int inner, int64_t T);

/* Training. Each half runs its forward on one example, keeping what its
 * backward needs (the tape) in the arena, then, given the gradient of its
 * output, adds the gradients of its parameters to G (a struct of weights
 * bound to a gradient array) and returns that of its input. Dropout
 * masks are drawn from *rng in a fixed order (p = 0: none). `part` is the
 * caller's thread slot (0 .. parts-1) for the shared state's scratch. */
typedef struct lc_train_ops {
	/* state shared by the examples of a step (LOCOST: the S4D kernels of
	 * every layer at the step's longest source), for `parts` threads */
	void *(*shared_new)(const lc_config *c, int parts, lc_err *err);
	void (*shared_free)(void *sh);
	int (*step_begin)(void *sh, const void *W, int64_t Lmax, int threads, lc_err *err);
	/* after the parts' gradients are summed into G: gradients that go
	 * through the shared state (the kernels' parameters) */
	int (*step_end)(void *sh, const void *W, void *G, int threads, lc_err *err);

	/* encoder: states *E [*Le, d_model] of src [L] */
	void *(*enc_fw)(void *sh, int part, const void *W, const int32_t *src, int64_t L,
	                lc_arena *a, double p, uint64_t *rng, float **E, int64_t *Le, lc_err *err);
	int (*enc_bw)(void *sh, int part, const void *W, void *G, void *tape, const float *dE,
	              lc_err *err);
	/* decoder, teacher-forced: logits [T, vocab] for inputs in [T] */
	void *(*dec_fw)(void *sh, const void *W, const float *E, int64_t Le, const int32_t *in,
	                int64_t T, lc_arena *a, double p, uint64_t *rng, float **logits, lc_err *err);
	/* dlogits [T, vocab] (may be overwritten); dE [Le, d_model] += */
	int (*dec_bw)(void *sh, const void *W, void *G, void *tape, float *dlogits, float *dE,
	              lc_err *err);
} lc_train_ops;

struct lc_arch {
	const char *name;                  /* "locost" */
	const char *const *hf_classes;     /* config.json "architectures" values, NULL-ended */
	const char *model_type;            /* config.json "model_type" */
	/* config.json -> c (c->arch is set by the caller) */
	int (*config)(const json_t *root, const char *path, lc_config *c, lc_err *err);
	/* A struct of weight pointers for c, every parameter declared into p
	 * with its slot in it (and its aliases); NULL only when out of memory.
	 * The same order every time: flat layouts and checkpoints rely on it. */
	void *(*declare)(const lc_config *c, lc_params *p);
	void (*weights_free)(void *w);
	/* lc-encode --info: key\tvalue lines of the configuration */
	void (*info)(const lc_config *c, FILE *f);
	const lc_enc_ops *enc;
	const lc_dec_ops *dec;             /* NULL: encoder only */
	const lc_train_ops *train;         /* NULL: inference only */
	/* transformers reads its config.json with BartConfig (or a subclass):
	 * its defaults and old keys apply to generation (arch/model.c) */
	int hf_bart;
};

/* The architecture config.json asks for; err names it when lc has none. */
const lc_arch *arch_find(const json_t *root, const char *path, lc_err *err);

/* Reads path (config.json) into c: the architecture, then its keys. */
int arch_config(const char *path, lc_config *c, lc_err *err);
/* The same from a parsed config.json; label names it in messages. */
int arch_config_json(const json_t *root, const char *label, lc_config *c, lc_err *err);

/* 0 when lc can make a model of the config.json at path (its keys read
 * and its parameters declared), else -1 and err naming it. */
int arch_config_check(const char *path, lc_err *err);

/* An architecture's weights struct with its declaration (both freed by
 * arch_weights_free); with base non-NULL the slots are bound to base
 * [params_total] (weights or gradients in the flat layout). */
void *arch_weights_new(const lc_config *c, float *base, lc_params **p, lc_err *err);
void arch_weights_free(const lc_config *c, void *w, lc_params *p);

#endif
