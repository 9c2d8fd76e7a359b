/*
 * model: a model directory in the Hugging Face layout (DESIGN.md section
 * 4): config.json, model.safetensors or pytorch_model.bin, and the
 * tokenizer; or a fairseq checkpoint (weights/fairseq.h), whose arguments
 * are translated into config.json's keys. The architecture comes from config.json (arch/arch.h); its
 * declaration of parameters is matched against the weight file, which
 * must hold exactly those tensors (tied aliases allowed) with their
 * shapes and a float dtype. Weights are mapped from the file when they
 * are aligned float32, converted to float32 once otherwise.
 *
 * Encoders and decoders of any architecture are opened on a model
 * (arch/encoder.h, arch/decoder.h).
 */
#ifndef LC_MODEL_H
#define LC_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arch/arch.h"
#include "base/err.h"

/* Opens DIR, or DIR's weight file given directly (then used whatever else
 * the directory holds; a *.pt file is a fairseq checkpoint). A directory
 * without config.json is opened as its one *.pt file (several: an error
 * listing them). err names the file and the problem. flags:
 * MODEL_COPY copies a model.safetensors' weights out of the file's
 * mapping into the process's memory (params_bind_tensors: the decoders,
 * which read every weight once a token, at half the speed from the
 * mapping here; it costs the load about a second a GB on this virtual
 * machine, which an encoder's few passes over the weights do not win
 * back: 64K tokens encoded in the same time either way). */
#define MODEL_COPY 1u
/* A directory holding MODEL_FRESH_MARK is an lc-train run's that has not
 * written its first checkpoint (random initial weights, or a run killed
 * before it): refused unless flags has MODEL_FRESH (lc-train's own). */
#define MODEL_FRESH 2u
#define MODEL_FRESH_MARK ".lc-train-fresh"
lc_model *model_open(const char *dir, unsigned flags, lc_err *err);
void model_free(lc_model *m);

/* The model directory to use: opt if given, else $LC_MODEL, else the
 * share directory's models/demo, the bundled demo model (base/share.h:
 * $LC_SHARE, the build tree's share/, the installed one). Writes it into
 * buf[n]; returns buf. model_open's message for that default directory
 * says it is the default and where it came from. */
const char *model_locate(const char *opt, char *buf, size_t n);

const lc_config *model_config(const lc_model *m);
const char *model_dir(const lc_model *m);
/* A model opened from a fairseq checkpoint: the config.json (text) its
 * arguments translate to, which a model directory of it holds (lc-train's
 * checkpoints); NULL for a model with a config.json. */
const char *model_config_text(const lc_model *m);
/* Where the configuration came from: DIR/config.json, or a fairseq
 * checkpoint's "FILE.pt (fairseq args)". */
const char *model_config_source(const lc_model *m);
/* The architecture's struct of weight pointers, bound to the file's data. */
const void *model_weights(const lc_model *m);
const lc_params *model_params(const lc_model *m);

/* The parameter `name` (or an alias) as float32, shape checked against
 * dims[rank]; NULL and err if absent or mis-shaped. Lives as long as m. */
const float *model_tensor(const lc_model *m, const char *name, uint32_t rank,
                          const uint64_t *dims, lc_err *err);

uint64_t model_nparams(const lc_model *m);        /* distinct parameters, aliases once */
uint64_t model_nbytes(const lc_model *m);         /* bytes of weight data in the file */
const char *model_fingerprint(const lc_model *m); /* short hex id of config + weights */

/* The generation settings the model's files ask for (arch.h). */
const lc_gencfg *model_generation(const lc_model *m);
/* The generation settings of root, the JSON of path (named in errors);
 * src: the file's name as the settings will name it ("generation_config.json"
 * reads that file's own decoder start and eos), kept by g. hf_bart: a
 * config.json read as BartConfig fills it in. (model_open's reader, apart
 * for tests/fuzz.) */
int model_gencfg_parse(const json_t *root, const char *path, const char *src, int hf_bart,
                       lc_gencfg *g, lc_err *err);

/* lc-encode --info: the configuration and sizes as key\tvalue lines. */
void model_info(const lc_model *m, FILE *f);

/* Writes DIR/model.safetensors with random float32 weights for every
 * parameter DIR/config.json declares (each parameter's declared initial
 * values), deterministic in seed. For tests, benchmarks and new models
 * (lc-encode --random-weights, lc-train --config). */
int model_write_random(const char *dir, uint64_t seed, lc_err *err);

#endif
