/*
 * settings: the generation settings in force for a model, and where each
 * came from. lc's defaults (transformers' GenerationConfig defaults, but
 * 256 new tokens at most, not 19) are overridden by what the model's
 * generation_config.json says, or config.json when there is none or
 * when generation_config.json was made from it (arch/arch.h's lc_gencfg;
 * as transformers reads them; the keys of search.h's options, plus
 * do_sample, temperature, top_k, top_p and num_return_sequences), which
 * the command line overrides in turn. The decoder start and eos come
 * from generation_config.json when it has them (transformers generates
 * with those), else config.json; the vocabulary from config.json.
 *
 * Lengths: max_new_tokens is max_length - 1 (the decoder start token
 * counts in max_length); where one source gives both, max_new_tokens
 * wins, as in transformers; a later source's either one replaces an
 * earlier source's (a command-line max_length beats the file's
 * max_new_tokens). The two minimums both apply, as transformers' two
 * processors do: eos is forbidden before max(min_length - 1,
 * min_new_tokens) new tokens, each from the last source that gives it
 * (the command line's --min-new is min_new_tokens).
 */
#ifndef LC_SETTINGS_H
#define LC_SETTINGS_H

#include <stdio.h>

#include "arch/model.h"
#include "base/err.h"
#include "gen/search.h"

enum gen_key {
	GEN_BEAMS, GEN_MAX_NEW, GEN_MIN_NEW, GEN_LENGTH_PENALTY, GEN_NO_REPEAT_NGRAM,
	GEN_REPETITION_PENALTY, GEN_EARLY_STOPPING, GEN_FORCED_BOS, GEN_FORCED_EOS,
	GEN_DO_SAMPLE, GEN_TEMPERATURE, GEN_TOP_K, GEN_TOP_P, GEN_NUM_RETURN, GEN_SEED,
	GEN_START, GEN_EOS,         /* from the model only */
	GEN_MIN_LENGTH,             /* from the model only: min_length */
	GEN_MAX_LENGTH,             /* given[] only: cl->max_new holds max_length - 1 */
	GEN_NKEYS
};

typedef struct gen_settings {
	search_opts o;              /* o.seed: the user's seed (search_seed makes each search's);
	                             * o.min_new: the larger of the two below */
	int min_new_tokens;         /* transformers' min_new_tokens */
	int min_length;             /* its min_length (the start token counted) */
	const char *src[GEN_NKEYS]; /* "lc default", the model's file, "command line", ... */
} gen_settings;

/* lc's defaults, then the model's; -1 and err if the model's file has a
 * key of the wrong type. */
int gen_settings_init(gen_settings *g, const lc_model *m, lc_err *err);
/* Marks key as set on the command line (after changing g->o). */
void gen_settings_cli(gen_settings *g, enum gen_key k);
/* The command line's values: for each key with given[key], its field of
 * cl replaces g's, marked as from the command line. GEN_MAX_LENGTH
 * (cl->max_new = max_length - 1) counts only without GEN_MAX_NEW. */
void gen_settings_override(gen_settings *g, const search_opts *cl, const int given[GEN_NKEYS]);
/* key\tvalue\tsource lines. */
void gen_settings_print(const gen_settings *g, FILE *f);

#endif
