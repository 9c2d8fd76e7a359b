/*
 * settings: the generation settings in force for a model, and where each
 * came from. lc's defaults (transformers' GenerationConfig defaults, but
 * 256 new tokens at most, not 19) are overridden by what the model's
 * generation_config.json or config.json say (arch/model.h), which the
 * command line overrides in turn. The decoder start, eos and vocabulary
 * come from config.json.
 */
#ifndef LC_SETTINGS_H
#define LC_SETTINGS_H

#include <stdio.h>

#include "arch/model.h"
#include "gen/search.h"

enum gen_key {
	GEN_BEAMS, GEN_MAX_NEW, GEN_MIN_NEW, GEN_LENGTH_PENALTY, GEN_NO_REPEAT_NGRAM,
	GEN_REPETITION_PENALTY, GEN_EARLY_STOPPING, GEN_FORCED_BOS, GEN_FORCED_EOS, GEN_NKEYS
};

typedef struct gen_settings {
	search_opts o;
	const char *src[GEN_NKEYS];   /* "lc default", the model's file, "command line" */
} gen_settings;

/* lc's defaults, then the model's. */
void gen_settings_init(gen_settings *g, const lc_model *m);
/* Marks key as set on the command line (after changing g->o). */
void gen_settings_cli(gen_settings *g, enum gen_key k);
/* The command line's values: for each key with given[key], its field of
 * cl replaces g's, marked as from the command line. */
void gen_settings_override(gen_settings *g, const search_opts *cl, const int given[GEN_NKEYS]);
/* key\tvalue\tsource lines. */
void gen_settings_print(const gen_settings *g, FILE *f);

#endif
