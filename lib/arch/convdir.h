/*
 * convdir: what the model converters (lsgconv.h, bartlsconv.h) share: the
 * tiling of a position table, JSON files written as transformers writes
 * them, the tokenizer files of a converted directory, and the removal of
 * a half-written one.
 */
#ifndef LC_CONVDIR_H
#define LC_CONVDIR_H

#include <stdint.h>

#include <jansson.h>

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

/* The converted model in tmp (model.safetensors from p and base [params_total],
 * config.json from cfg, the tokenizer files of src as convdir_tokenizer),
 * then tmp renamed to dst: 0, or -1 and err (tmp is left to the caller's
 * convdir_remove). */
int convdir_commit(const lc_params *p, const float *base, const json_t *cfg, const char *src,
                   int max_len, const char *tmp, const char *dst, lc_err *err);

/* What a failed conversion wrote into dir, then dir. */
void convdir_remove(const char *dir);

#endif
