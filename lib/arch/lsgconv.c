/*
 * lsgconv.c: BART -> LSG-BART conversion (see lsgconv.h).
 */
#include "arch/lsgconv.h"

#include <string.h>

#include <jansson.h>

#include "arch/convdir.h"
#include "arch/model.h"
#include "weights/params.h"

#define GLOBAL_ROWS 512
#define GLOBAL_STRIDE 64          /* the converter's global_positional_stride */

static const char *const auto_map[][2] = {
	{ "AutoConfig", "modeling_lsg_bart.LSGBartConfig" },
	{ "AutoModel", "modeling_lsg_bart.LSGBartModel" },
	{ "AutoModelForCausalLM", "modeling_lsg_bart.LSGBartForCausalLM" },
	{ "AutoModelForQuestionAnswering", "modeling_lsg_bart.LSGBartForQuestionAnswering" },
	{ "AutoModelForSeq2SeqLM", "modeling_lsg_bart.LSGBartForConditionalGeneration" },
	{ "AutoModelForSequenceClassification", "modeling_lsg_bart.LSGBartForSequenceClassification" },
};

void lsgconv_opts_default(lsgconv_opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_len = 4096;
	o->block_size = o->sparse_block_size = o->sparsity_factor = o->num_global_tokens = -1;
	o->bos_id = o->mask_id = -1;
}

static int set_int(json_t *root, const char *key, int v, int def, int keep)
{
	if (v < 0 && keep && json_object_get(root, key))
		return 0;
	return json_object_set_new(root, key, json_integer(v < 0 ? def : v));
}

/* A --set "KEY=JSON": key (below LSG_SET_KEY bytes) and *v, or -1 and err. */
static int parse_set(const char *kv, char *key, json_t **v, lc_err *err)
{
	const char *eq = strchr(kv, '=');
	json_error_t je;

	if (!eq || eq == kv || (size_t)(eq - kv) >= LSG_SET_KEY)
		return lc_fail(err, "--set %s: expected KEY=VALUE (VALUE in JSON)", kv);
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = 0;
	if (!(*v = json_loads(eq + 1, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je)))
		return lc_fail(err, "--set %s: the value is not JSON (%s); a string needs quotes", key,
		               je.text);
	return 0;
}

int lsg_set_check(const char *kv, lc_err *err)
{
	char key[LSG_SET_KEY];
	json_t *v;

	if (parse_set(kv, key, &v, err) < 0)
		return -1;
	json_decref(v);
	return 0;
}

/* The LSG config.json: the source's keys, then the converter's. */
static json_t *new_config(const convdir *cv, int is_lsg, const lsgconv_opts *o, lc_err *err)
{
	json_t *root = convdir_config(cv, "LSGBartForConditionalGeneration", o->name, err);
	json_t *am = json_object();
	static const char *const bools[][2] = {
		{ "adaptive", "1" }, { "mask_first_token", "0" },
		{ "pass_global_tokens_to_decoder", "1" }, { "pool_with_global", "1" },
	};
	int bad = !root || !am;

	for (size_t i = 0; !bad && i < sizeof auto_map / sizeof *auto_map; i++)
		bad |= json_object_set_new(am, auto_map[i][0], json_string(auto_map[i][1])) < 0;
	if (bad) {
		if (root)
			lc_fail(err, "out of memory");
		json_decref(root);
		json_decref(am);
		return NULL;
	}
	json_object_set_new(root, "auto_map", am);
	json_object_set_new(root, "base_model_prefix", json_string("lsg"));
	set_int(root, "block_size", o->block_size, 128, is_lsg);
	set_int(root, "sparse_block_size", o->sparse_block_size, 128, is_lsg);
	set_int(root, "sparsity_factor", o->sparsity_factor, 2, is_lsg);
	set_int(root, "num_global_tokens", o->num_global_tokens, 1, is_lsg);
	set_int(root, "lsh_num_pre_rounds", -1, 1, 1);
	if (o->sparsity_type)
		json_object_set_new(root, "sparsity_type", json_string(o->sparsity_type));
	else if (!json_object_get(root, "sparsity_type"))
		json_object_set_new(root, "sparsity_type", json_string("norm"));
	for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
		if (!json_object_get(root, bools[i][0]))
			json_object_set_new(root, bools[i][0], json_boolean(bools[i][1][0] == '1'));
	for (int i = 0; i < o->nset; i++) {
		char key[LSG_SET_KEY];
		json_t *v;
		if (parse_set(o->set[i], key, &v, err) < 0) {
			json_decref(root);
			return NULL;
		}
		json_object_set_new(root, key, v);
	}
	return root;
}

/* global [512, d] from the original encoder positions pos [n + 2, d] */
static int make_globals(const float *pos, uint64_t n, uint64_t d, const float *shared,
                        int32_t bos, int32_t mask, float *g, lc_err *err)
{
	uint64_t rows = n - 2, factor, step;

	if (rows < GLOBAL_ROWS)
		return lc_fail(err, "the model has %llu positions; the converter draws random global "
		               "embeddings below 512, which lc cannot reproduce",
		               (unsigned long long)rows);
	rows -= rows % GLOBAL_ROWS;
	factor = rows / GLOBAL_ROWS;
	step = GLOBAL_STRIDE / factor;
	if (step < 1 || GLOBAL_ROWS % step)
		return lc_fail(err, "the model's %llu positions do not divide into the converter's "
		               "stride of %d", (unsigned long long)(n - 2), GLOBAL_STRIDE);
	/* kept rows r = 0..511 are P[r * factor]; viewed as [512/step, step]
	 * and transposed, output row a * (512/step) + b is kept row b * step + a */
	for (uint64_t a = 0; a < step; a++)
		for (uint64_t b = 0; b < GLOBAL_ROWS / step; b++)
			memcpy(g + (a * (GLOBAL_ROWS / step) + b) * d,
			       pos + (2 + (b * step + a) * factor) * d, d * sizeof *g);
	for (uint64_t j = 0; j < d; j++)
		g[j] += shared[(uint64_t)bos * d + j];
	for (uint64_t r = 1; r < GLOBAL_ROWS; r++)
		for (uint64_t j = 0; j < d; j++)
			g[r * d + j] += shared[(uint64_t)mask * d + j];
	return 0;
}

int lsg_convert(const char *src, const char *dst, const lsgconv_opts *o, lc_err *err)
{
	convdir cv;
	const lc_config *c = &cv.c;
	int is_lsg, rc = -1;

	if (convdir_open(&cv, src, dst, o->max_len, o->progress, o->ctx, err) < 0)
		goto out;
	if (strcmp(cv.sc.arch->name, "bart") && strcmp(cv.sc.arch->name, "lsg-bart")) {
		lc_fail(err, "%s: a %s model; lc-convert converts BART and LSG-BART", cv.cfg_path,
		        cv.sc.arch->name);
		goto out;
	}
	is_lsg = cv.sc.lsg;
	if (convdir_read(&cv, err) < 0)
		goto out;
	if (!is_lsg && o->mask_id < 0) {
		lc_fail(err, "%s: no tokenizer with a mask token (vocab.json and merges.txt, or "
		        "tokenizer.json, with <mask>): the converter adds its embedding to the "
		        "global tokens", src);
		goto out;
	}
	if (convdir_target(&cv, new_config(&cv, is_lsg, o, err), err) < 0)
		goto out;
	for (uint32_t k = 0; k < params_count(cv.p); k++) {
		const lc_param *e = params_at(cv.p, k), *se;
		float *to = cv.base + e->off;
		int has;

		if (!is_lsg && !strcmp(e->name, "model.encoder.global_embeddings.weight")) {
			const lc_params *sp = model_params(cv.m);
			const lc_param *pe = params_find(sp, "model.encoder.embed_positions.weight");
			const lc_param *sh = params_find(sp, "model.shared.weight");
			int32_t bos = o->bos_id >= 0 ? o->bos_id : c->bos_id;
			if (bos < 0 || bos >= c->vocab_size || o->mask_id >= c->vocab_size) {
				lc_fail(err, "%s: the tokenizer's <s> %d or <mask> %d is outside the model's "
				        "vocabulary of %d", src, bos, o->mask_id, c->vocab_size);
				goto out;
			}
			if (make_globals(*pe->slot, pe->dims[0], e->dims[1], *sh->slot, bos, o->mask_id,
			                 to, err) < 0)
				goto out;
			continue;
		}
		if ((has = convdir_source(&cv, e->name, e, to, &se, err)) < 0)
			goto out;
		if (!has)
			continue;
		/* --set may change a shape (d_model, vocab_size): the copy would
		 * read past the source's tensor; only the positions' rows grow */
		if (strstr(e->name, ".embed_positions.weight") && se->dims[1] == e->dims[1]) {
			convdir_tile_positions(*se->slot, se->dims[0], to, e->dims[0], e->dims[1]);
		} else if (se->numel != e->numel || strstr(e->name, ".embed_positions.weight")) {
			lc_fail(err, "%s: tensor %s does not fit the converted configuration (a --set "
			        "that changes a shape: d_model, vocab_size, an ffn_dim?)", src, e->name);
			goto out;
		} else {
			memcpy(to, *se->slot, e->numel * sizeof *to);
		}
	}
	rc = convdir_write(&cv, err);
out:
	convdir_close(&cv);
	return rc;
}
