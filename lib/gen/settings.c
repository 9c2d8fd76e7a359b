#include "gen/settings.h"

#include <math.h>

void gen_settings_init(gen_settings *g, const lc_model *m)
{
	const lc_config *c = model_config(m);
	const lc_gencfg *f = model_generation(m);
	const char *src = f->source ? f->source : "model";

	search_opts_default(&g->o);
	g->o.max_new = 256;
	for (int k = 0; k < GEN_NKEYS; k++)
		g->src[k] = "lc default";
	g->o.vocab = c->vocab_size;
	g->o.start_id = c->decoder_start_id;
	g->o.eos_id = c->eos_id;
#define SET(cond, field, value, key) do { if (cond) { g->o.field = value; g->src[key] = src; } } while (0)
	SET(f->num_beams >= 1, num_beams, f->num_beams, GEN_BEAMS);
	SET(f->max_new >= 1, max_new, f->max_new, GEN_MAX_NEW);
	SET(f->min_new >= 0, min_new, f->min_new, GEN_MIN_NEW);
	SET(!isnan(f->length_penalty), length_penalty, f->length_penalty, GEN_LENGTH_PENALTY);
	SET(f->no_repeat_ngram >= 0, no_repeat_ngram, f->no_repeat_ngram, GEN_NO_REPEAT_NGRAM);
	SET(!isnan(f->repetition_penalty), repetition_penalty, f->repetition_penalty,
	    GEN_REPETITION_PENALTY);
	SET(f->early_stopping >= 0, early_stopping, f->early_stopping, GEN_EARLY_STOPPING);
	SET(f->forced_bos >= 0, forced_bos, f->forced_bos, GEN_FORCED_BOS);
	SET(f->forced_eos >= 0, forced_eos, f->forced_eos, GEN_FORCED_EOS);
#undef SET
}

void gen_settings_cli(gen_settings *g, enum gen_key k)
{
	g->src[k] = "command line";
}

void gen_settings_override(gen_settings *g, const search_opts *cl, const int given[GEN_NKEYS])
{
	search_opts *o = &g->o;

#define SET(key, field) do { if (given[key]) { o->field = cl->field; gen_settings_cli(g, key); } } while (0)
	SET(GEN_BEAMS, num_beams);
	SET(GEN_MAX_NEW, max_new);
	SET(GEN_MIN_NEW, min_new);
	SET(GEN_LENGTH_PENALTY, length_penalty);
	SET(GEN_NO_REPEAT_NGRAM, no_repeat_ngram);
	SET(GEN_REPETITION_PENALTY, repetition_penalty);
	SET(GEN_EARLY_STOPPING, early_stopping);
	SET(GEN_FORCED_BOS, forced_bos);
	SET(GEN_FORCED_EOS, forced_eos);
#undef SET
}

void gen_settings_print(const gen_settings *g, FILE *f)
{
	static const char *const early[] = { "false", "true", "never" };
	const search_opts *o = &g->o;

	fprintf(f, "num_beams\t%d\t%s\n", o->num_beams, g->src[GEN_BEAMS]);
	fprintf(f, "max_new_tokens\t%d\t%s\n", o->max_new, g->src[GEN_MAX_NEW]);
	fprintf(f, "min_new_tokens\t%d\t%s\n", o->min_new, g->src[GEN_MIN_NEW]);
	fprintf(f, "length_penalty\t%g\t%s\n", o->length_penalty, g->src[GEN_LENGTH_PENALTY]);
	fprintf(f, "no_repeat_ngram_size\t%d\t%s\n", o->no_repeat_ngram, g->src[GEN_NO_REPEAT_NGRAM]);
	fprintf(f, "repetition_penalty\t%g\t%s\n", o->repetition_penalty,
	        g->src[GEN_REPETITION_PENALTY]);
	fprintf(f, "early_stopping\t%s\t%s\n", early[o->early_stopping], g->src[GEN_EARLY_STOPPING]);
	if (o->forced_bos >= 0)
		fprintf(f, "forced_bos_token_id\t%ld\t%s\n", (long)o->forced_bos, g->src[GEN_FORCED_BOS]);
	else
		fprintf(f, "forced_bos_token_id\tnone\t%s\n", g->src[GEN_FORCED_BOS]);
	if (o->forced_eos >= 0)
		fprintf(f, "forced_eos_token_id\t%ld\t%s\n", (long)o->forced_eos, g->src[GEN_FORCED_EOS]);
	else
		fprintf(f, "forced_eos_token_id\tnone\t%s\n", g->src[GEN_FORCED_EOS]);
	fprintf(f, "decoder_start_token_id\t%ld\tconfig.json\n", (long)o->start_id);
	fprintf(f, "eos_token_id\t%ld\tconfig.json\n", (long)o->eos_id);
}
