/*
 * config: reading config.json (Hugging Face's model configuration) with
 * the checks every key needs: the type, a range, a default or "required".
 * Messages name the file and the key. Nothing here knows an architecture;
 * each architecture's config parser (arch/) is a list of these calls.
 */
#ifndef LC_CONFIG_H
#define LC_CONFIG_H

#include <limits.h>

#include <jansson.h>

#include "base/err.h"

#define CFG_REQUIRED INT_MIN   /* as cfg_int's default: the key must be present */
#define CFG_UNSET (INT_MIN + 1) /* as cfg_int's default: a missing key gives CFG_UNSET */

/* The JSON object in path (duplicate keys refused); NULL and err otherwise. */
json_t *cfg_load(const char *path, lc_err *err);
/* The same from buf[len]; label names it in messages. */
json_t *cfg_parse(const char *buf, size_t len, const char *label, lc_err *err);

/* Each: 0, or -1 and err. A missing key or JSON null takes the default;
 * cfg_int's must lie in [lo, hi] too (defaults derived from other keys
 * can fall outside), unless it is CFG_REQUIRED or CFG_UNSET. */
int cfg_int(const json_t *root, const char *key, int def, int lo, int hi, int *out,
            const char *path, lc_err *err);
int cfg_bool(const json_t *root, const char *key, int def, int *out, const char *path,
             lc_err *err);
int cfg_num(const json_t *root, const char *key, double def, double lo, double hi, double *out,
            const char *path, lc_err *err);
/* *out points into root (valid while root lives), or is def. */
int cfg_str(const json_t *root, const char *key, const char *def, const char **out,
            const char *path, lc_err *err);

/* root as transformers writes config.json (json.dumps(indent=2,
 * sort_keys=True) and a newline): keys sorted, floats as Python's repr,
 * non-ASCII as \uXXXX when ensure_ascii (config.json; tokenizer_config.json
 * is written without). A string to free; NULL when out of memory. */
char *cfg_dump_hf(const json_t *root, int ensure_ascii);

#endif
