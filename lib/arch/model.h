/*
 * model: a LOCOST model directory in the Hugging Face layout (DESIGN.md
 * section 4): config.json, model.safetensors or pytorch_model.bin, and
 * spiece.model. The weight files are read by the safetensors and
 * torchzip modules; this module resolves names (tied aliases such as
 * lm_head.weight and *.embed_tokens.weight -> shared.weight), checks
 * shapes and hands out float32 views.
 *
 * API shared by the encoder (locost) and the decoder (decoder) modules.
 */
#ifndef LC_MODEL_H
#define LC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct lc_config {
	int d_model, d_ff, d_kv, d_state;    /* d_state = 2 * complex modes (N2 = d_state / 2) */
	int num_layers, num_decoder_layers;
	int num_heads, num_ssm_heads;
	int vocab_size;
	int rel_buckets, rel_max_distance;   /* relative_attention_num_buckets / _max_distance */
	double eps;                          /* layer_norm_epsilon */
	int pad_id, eos_id, decoder_start_id;
	int bidirectional, gating, use_fast_fft_conv, tie_word_embeddings;
	int is_gated_act;
	char act[32];                        /* dense_act_fn, e.g. "gelu_new" */
} lc_config;

typedef struct lc_model lc_model;

/* Opens DIR (or DIR's files): parses config.json, maps/reads the weights,
 * validates every tensor the configuration requires (present, shape,
 * dtype) and refuses a missing, extra or mis-shaped tensor. */
lc_model *model_open(const char *dir, lc_err *err);

/* The model directory to use: opt if given, else $LC_MODEL, else
 * $LC_SHARE/models/demo, else the installed share directory's
 * models/demo (the bundled demo model). Writes it into buf[n]; returns buf. */
const char *model_locate(const char *opt, char *buf, size_t n);
const lc_config *model_config(const lc_model *m);

/* The parameter `name` (Hugging Face name) as float32, shape checked
 * against dims[rank]. Mapped when the file stores it as F32; converted
 * once and cached otherwise. NULL and err if absent or mis-shaped. The
 * pointer lives as long as the model. */
const float *model_tensor(lc_model *m, const char *name, uint32_t rank,
                          const uint64_t *dims, lc_err *err);

uint64_t model_nparams(const lc_model *m);        /* distinct parameters, aliases once */
uint64_t model_nbytes(const lc_model *m);         /* bytes of weight data */
const char *model_fingerprint(const lc_model *m); /* short hex id of config + weights */
const char *model_dir(const lc_model *m);
void model_free(lc_model *m);

/* Writes DIR/model.safetensors with random float32 weights for every
 * parameter DIR/config.json requires (S4D-Lin style kernel parameters,
 * scaled normal matrices), deterministic in seed. For tests and
 * benchmarks (lc-encode --random-weights). */
int model_write_random(const char *dir, uint64_t seed, lc_err *err);

#endif
