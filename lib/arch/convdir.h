/*
 * convdir: what the model converters (lsgconv.h, bartlsconv.h,
 * topdownconv.h) share: their steps (the source read, the converted
 * model's parameters made, the new directory written whole), the tiling
 * of a position table, JSON files written as transformers writes them and
 * the tokenizer files of a converted directory.
 */
#ifndef LC_CONVDIR_H
#define LC_CONVDIR_H

#include <limits.h>
#include <stdint.h>

#include <jansson.h>

#include "arch/arch.h"
#include "base/err.h"
#include "weights/params.h"

/* new [rows, d] from old [n, d] (BART's offset of 2): new[0..1] =
 * old[0..1], new[2 + k] = old[2 + k mod (n - 2)]. */
void convdir_tile_positions(const float *old, uint64_t n, float *new, uint64_t rows, uint64_t d);

/* root written to dir/name as transformers writes its JSON files (ascii:
 * non-ASCII escaped, as config.json). */
int convdir_write_json(const char *dir, const char *name, const json_t *root, int ascii,
                       lc_err *err);

/* Into dir: src's tokenizer_config.json with model_max_length = max_len,
 * and src's other tokenizer files and generation_config.json copied
 * (each when src has it). */
int convdir_tokenizer(const char *src, const char *dir, int max_len, lc_err *err);

/* A conversion under way: the source directory (its config.json, then its
 * model), the converted configuration and the converted parameters'
 * values, filled by the converter between convdir_target and
 * convdir_write. Every step says its failure in err; convdir_close frees
 * what was made, whatever step failed. */
typedef struct convdir {
	const char *src, *dst;
	int max_len;                        /* the new max_position_embeddings */
	void (*progress)(void *ctx, const char *what);
	void *ctx;
	char cfg_path[PATH_MAX];            /* src/config.json, for messages */
	char dstbuf[PATH_MAX];              /* dst without trailing slashes ("out/") */
	json_t *scfg;                       /* src/config.json */
	lc_config sc;                       /* as lc reads it */
	lc_model *m;                        /* the source model (convdir_read) */
	json_t *dcfg;                       /* the converted config.json (convdir_target) */
	lc_config c;                        /* as lc reads it */
	lc_params *p;                       /* its parameters */
	void *w;
	float *base;                        /* their values [params_total(p)] */
} convdir;

/* Checks max_len and that dst does not exist yet, and reads src's
 * config.json (scfg, sc). */
int convdir_open(convdir *cv, const char *src, const char *dst, int max_len,
                 void (*progress)(void *ctx, const char *what), void *ctx, lc_err *err);

/* A copy of the source's config.json with architectures [cls],
 * _name_or_path (name, else dst as given) and max_position_embeddings
 * max_len: the start of every converted config.json. */
json_t *convdir_config(const convdir *cv, const char *cls, const char *name, lc_err *err);

/* Into root, the config.json of a target not read as a BartConfig
 * (BART-LS, top-down): the generation settings that a BART source's
 * config.json leaves to BartConfig (forced_eos_token_id 2, and the
 * forced_bos_token_id of force_bos_token_to_be_generated), written out so
 * that the converted model generates as the source does. After
 * convdir_read. */
void convdir_bart_generation(const convdir *cv, json_t *root);

/* The source model (m). */
int convdir_read(convdir *cv, lc_err *err);

/* The converted config.json (dcfg: taken, also on failure), read as c,
 * and its parameters p with room for their values in base. */
int convdir_target(convdir *cv, json_t *dcfg, lc_err *err);

/* The source tensor called name, for the converted parameter e whose
 * values are at to: 1 with *se; 0 when the source lacks it and e is
 * optional (to zeroed); -1 and err when it lacks a tensor e needs. */
int convdir_source(const convdir *cv, const char *name, const lc_param *e, float *to,
                   const lc_param **se, lc_err *err);

/* dst, whole or not at all: model.safetensors from p and base, config.json
 * from dcfg, the tokenizer files of src (as convdir_tokenizer), written
 * into a directory beside dst and renamed to it. */
int convdir_write(convdir *cv, lc_err *err);

void convdir_close(convdir *cv);

#endif
