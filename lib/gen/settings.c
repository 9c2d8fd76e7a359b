#include "gen/settings.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/fileio.h"

/* Which file transformers takes generation settings from: the directory's
 * generation_config.json, else its config.json (as arch/model.c does). */
static void gen_file(const char *dir, char *path, size_t n, const char **name)
{
	struct stat sb;

	snprintf(path, n, "%s/generation_config.json", dir);
	*name = "generation_config.json";
	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
		return;
	snprintf(path, n, "%s/config.json", dir);
	*name = "config.json";
}

/* A key's JSON value: NULL when absent or null. */
static const json_t *key(const json_t *root, const char *k)
{
	const json_t *v = json_object_get(root, k);

	return v && !json_is_null(v) ? v : NULL;
}

/* What arch/model.c's lc_gencfg does not hold: the sampling keys and
 * num_return_sequences. */
static int read_more(gen_settings *g, const lc_model *m, lc_err *err)
{
	char path[4096];
	const char *name;
	json_error_t je;
	json_t *root;
	const json_t *v;
	int rc = -1;

	gen_file(model_dir(m), path, sizeof path, &name);
	{
		struct stat sb;
		if (stat(path, &sb) < 0)
			return 0;   /* a fairseq checkpoint's directory has neither file */
	}
	if (lc_small_file(path, LC_MAX_JSON_FILE, "config file", err) < 0)
		return -1;
	if (!(root = json_load_file(path, 0, &je)))
		return lc_fail(err, "%s: %s", path, je.text);
	if (!json_is_object(root)) {
		lc_fail(err, "%s: not a JSON object", path);
		goto out;
	}
	if ((v = key(root, "do_sample"))) {
		if (!json_is_boolean(v)) {
			lc_fail(err, "%s: \"do_sample\" must be true or false", path);
			goto out;
		}
		g->o.do_sample = json_is_true(v);
		g->src[GEN_DO_SAMPLE] = name;
	}
	if ((v = key(root, "temperature"))) {
		if (!json_is_number(v) || !isfinite(json_number_value(v))) {
			lc_fail(err, "%s: \"temperature\" must be a number", path);
			goto out;
		}
		g->o.temperature = json_number_value(v);
		g->src[GEN_TEMPERATURE] = name;
	}
	/* "top_k": null turns top-k off in transformers (not its default 50) */
	if (json_is_null(json_object_get(root, "top_k"))) {
		g->o.top_k = 0;
		g->src[GEN_TOP_K] = name;
	} else if ((v = key(root, "top_k"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > INT32_MAX) {
			lc_fail(err, "%s: \"top_k\" must be an integer >= 0", path);
			goto out;
		}
		g->o.top_k = (int)json_integer_value(v);
		g->src[GEN_TOP_K] = name;
	}
	if ((v = key(root, "top_p"))) {
		if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1)) {
			lc_fail(err, "%s: \"top_p\" must be a number in [0, 1]", path);
			goto out;
		}
		g->o.top_p = json_number_value(v);
		g->src[GEN_TOP_P] = name;
	}
	if ((v = key(root, "num_return_sequences"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1024) {
			lc_fail(err, "%s: \"num_return_sequences\" must be an integer in [1, 1024]", path);
			goto out;
		}
		g->o.num_return = (int)json_integer_value(v);
		g->src[GEN_NUM_RETURN] = name;
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* transformers' two processors: eos is forbidden while fewer than
 * min_new_tokens new tokens or, the start token counted, min_length tokens */
static int min_new(const gen_settings *g)
{
	int by_length = g->min_length > 1 ? g->min_length - 1 : 0;
	return g->min_new_tokens > by_length ? g->min_new_tokens : by_length;
}

int gen_settings_init(gen_settings *g, const lc_model *m, lc_err *err)
{
	const lc_config *c = model_config(m);
	const lc_gencfg *f = model_generation(m);
	const char *src = f->source ? f->source : "model";

	search_opts_default(&g->o);
	g->o.max_new = 256;
	g->min_new_tokens = g->o.min_new;
	g->min_length = 0;
	for (int k = 0; k < GEN_NKEYS; k++)
		g->src[k] = "lc default";
	g->o.vocab = c->vocab_size;
	g->o.start_id = f->decoder_start >= 0 ? f->decoder_start : c->decoder_start_id;
	g->o.eos_id = f->eos >= 0 ? f->eos : f->eos_none ? -1 : c->eos_id;
	_Static_assert(LC_GEN_EOS_MAX - 1 <= SEARCH_EOS_EXTRA, "room for a listed eos_token_id");
	if (f->eos >= 0) {      /* a list's others: generate() stops at any */
		g->o.neos_extra = f->neos_extra;
		for (int i = 0; i < f->neos_extra; i++)
			g->o.eos_extra[i] = f->eos_extra[i];
	}
	{
		/* the model's own: config.json, or a fairseq checkpoint's args */
		const char *cs = model_config_source(m), *b = cs ? strrchr(cs, '/') : NULL;
		const char *own = b ? b + 1 : cs ? cs : "config.json";
		g->src[GEN_START] = f->decoder_start >= 0 ? src : own;
		g->src[GEN_EOS] = f->eos >= 0 || f->eos_none ? src : own;
	}
#define SET(cond, field, value, key) do { if (cond) { g->o.field = value; g->src[key] = src; } } while (0)
	SET(f->num_beams >= 1, num_beams, f->num_beams, GEN_BEAMS);
	SET(f->max_new >= 1, max_new, f->max_new, GEN_MAX_NEW);
	if (f->min_new >= 0) {
		g->min_new_tokens = f->min_new;
		g->src[GEN_MIN_NEW] = src;
	}
	if (f->min_length >= 0) {
		g->min_length = f->min_length;
		g->src[GEN_MIN_LENGTH] = src;
	}
	g->o.min_new = min_new(g);
	SET(!isnan(f->length_penalty), length_penalty, f->length_penalty, GEN_LENGTH_PENALTY);
	SET(f->no_repeat_ngram >= 0, no_repeat_ngram, f->no_repeat_ngram, GEN_NO_REPEAT_NGRAM);
	SET(!isnan(f->repetition_penalty), repetition_penalty, f->repetition_penalty,
	    GEN_REPETITION_PENALTY);
	SET(f->early_stopping >= 0, early_stopping, f->early_stopping, GEN_EARLY_STOPPING);
	SET(f->forced_bos >= 0, forced_bos, f->forced_bos, GEN_FORCED_BOS);
	SET(f->forced_eos >= 0, forced_eos, f->forced_eos, GEN_FORCED_EOS);
#undef SET
	if (f->forced_eos_default)
		g->src[GEN_FORCED_EOS] = "config.json has none: BartConfig's default";
	if (read_more(g, m, err) < 0)
		return -1;
	if (f->start_none)
		return lc_fail(err, "%s: %s gives neither decoder_start_token_id nor bos_token_id "
		               "(generate() refuses it)", model_dir(m), src);
	return 0;
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
	SET(GEN_LENGTH_PENALTY, length_penalty);
	SET(GEN_NO_REPEAT_NGRAM, no_repeat_ngram);
	SET(GEN_REPETITION_PENALTY, repetition_penalty);
	SET(GEN_EARLY_STOPPING, early_stopping);
	SET(GEN_FORCED_BOS, forced_bos);
	SET(GEN_FORCED_EOS, forced_eos);
	SET(GEN_DO_SAMPLE, do_sample);
	SET(GEN_TEMPERATURE, temperature);
	SET(GEN_TOP_K, top_k);
	SET(GEN_TOP_P, top_p);
	SET(GEN_NUM_RETURN, num_return);
	SET(GEN_SEED, seed);
#undef SET
	if (given[GEN_MAX_LENGTH] && !given[GEN_MAX_NEW]) {
		o->max_new = cl->max_new;
		gen_settings_cli(g, GEN_MAX_NEW);
	}
	if (given[GEN_MIN_NEW]) {
		g->min_new_tokens = cl->min_new;
		gen_settings_cli(g, GEN_MIN_NEW);
	}
	o->min_new = min_new(g);
}

void gen_settings_print(const gen_settings *g, FILE *f)
{
	const search_opts *o = &g->o;

	fprintf(f, "num_beams\t%d\t%s\n", o->num_beams, g->src[GEN_BEAMS]);
	fprintf(f, "max_new_tokens\t%d\t%s\n", o->max_new, g->src[GEN_MAX_NEW]);
	fprintf(f, "max_length\t%d\t%s\n", o->max_new + 1, g->src[GEN_MAX_NEW]);
	fprintf(f, "min_new_tokens\t%d\t%s\n", g->min_new_tokens, g->src[GEN_MIN_NEW]);
	fprintf(f, "min_length\t%d\t%s\n", g->min_length, g->src[GEN_MIN_LENGTH]);
	fprintf(f, "length_penalty\t%g\t%s\n", o->length_penalty, g->src[GEN_LENGTH_PENALTY]);
	fprintf(f, "no_repeat_ngram_size\t%d\t%s\n", o->no_repeat_ngram, g->src[GEN_NO_REPEAT_NGRAM]);
	fprintf(f, "repetition_penalty\t%g\t%s\n", o->repetition_penalty,
	        g->src[GEN_REPETITION_PENALTY]);
	fprintf(f, "early_stopping\t%s\t%s\n", search_early_name((enum search_early)o->early_stopping),
	        g->src[GEN_EARLY_STOPPING]);
	if (o->forced_bos >= 0)
		fprintf(f, "forced_bos_token_id\t%ld\t%s\n", (long)o->forced_bos, g->src[GEN_FORCED_BOS]);
	else
		fprintf(f, "forced_bos_token_id\tnone\t%s\n", g->src[GEN_FORCED_BOS]);
	if (o->forced_eos >= 0)
		fprintf(f, "forced_eos_token_id\t%ld\t%s\n", (long)o->forced_eos, g->src[GEN_FORCED_EOS]);
	else
		fprintf(f, "forced_eos_token_id\tnone\t%s\n", g->src[GEN_FORCED_EOS]);
	fprintf(f, "do_sample\t%s\t%s\n", o->do_sample ? "true" : "false", g->src[GEN_DO_SAMPLE]);
	fprintf(f, "temperature\t%g\t%s\n", o->temperature, g->src[GEN_TEMPERATURE]);
	fprintf(f, "top_k\t%d\t%s\n", o->top_k, g->src[GEN_TOP_K]);
	fprintf(f, "top_p\t%g\t%s\n", o->top_p, g->src[GEN_TOP_P]);
	fprintf(f, "num_return_sequences\t%d\t%s\n", o->num_return, g->src[GEN_NUM_RETURN]);
	fprintf(f, "seed\t%llu\t%s\n", (unsigned long long)o->seed, g->src[GEN_SEED]);
	fprintf(f, "decoder_start_token_id\t%ld\t%s\n", (long)o->start_id, g->src[GEN_START]);
	if (o->eos_id >= 0) {
		fprintf(f, "eos_token_id\t%ld", (long)o->eos_id);
		for (int i = 0; i < o->neos_extra; i++)
			fprintf(f, " %ld", (long)o->eos_extra[i]);
		fprintf(f, "\t%s\n", g->src[GEN_EOS]);
	} else
		fprintf(f, "eos_token_id\tnone\t%s\n", g->src[GEN_EOS]);
}
