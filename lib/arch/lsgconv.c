/*
 * lsgconv.c: BART -> LSG-BART conversion (see lsgconv.h).
 */
#include "arch/lsgconv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "arch/arch.h"
#include "arch/convdir.h"
#include "arch/model.h"
#include "ops/lsgattn.h"
#include "weights/config.h"
#include "weights/params.h"
#include "weights/safetensors.h"

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

/* The LSG config.json: the source's keys, then the converter's. */
static json_t *new_config(const json_t *src, int is_lsg, const char *dst, const lsgconv_opts *o,
                          lc_err *err)
{
	json_t *root = json_deep_copy(src), *am = json_object(), *arch = json_array();
	static const char *const bools[][2] = {
		{ "adaptive", "1" }, { "mask_first_token", "0" },
		{ "pass_global_tokens_to_decoder", "1" }, { "pool_with_global", "1" },
	};
	int bad = !root || !am || !arch;

	for (size_t i = 0; !bad && i < sizeof auto_map / sizeof *auto_map; i++)
		bad |= json_object_set_new(am, auto_map[i][0], json_string(auto_map[i][1])) < 0;
	bad |= !root || json_array_append_new(arch, json_string("LSGBartForConditionalGeneration")) < 0;
	if (bad) {
		json_decref(root);
		json_decref(am);
		json_decref(arch);
		lc_fail(err, "out of memory");
		return NULL;
	}
	json_object_set_new(root, "architectures", arch);
	json_object_set_new(root, "auto_map", am);
	json_object_set_new(root, "base_model_prefix", json_string("lsg"));
	json_object_set_new(root, "_name_or_path", json_string(o->name ? o->name : dst));
	json_object_set_new(root, "max_position_embeddings", json_integer(o->max_len));
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
		const char *eq = strchr(o->set[i], '=');
		char key[128];
		json_error_t je;
		json_t *v;
		if (!eq || eq == o->set[i] || (size_t)(eq - o->set[i]) >= sizeof key) {
			json_decref(root);
			lc_fail(err, "--set %s: expected KEY=VALUE", o->set[i]);
			return NULL;
		}
		memcpy(key, o->set[i], (size_t)(eq - o->set[i]));
		key[eq - o->set[i]] = 0;
		if (!(v = json_loads(eq + 1, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je))) {
			json_decref(root);
			lc_fail(err, "--set %s: the value is not JSON (%s); a string needs quotes", key,
			        je.text);
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

static void note(const lsgconv_opts *o, const char *what)
{
	if (o->progress)
		o->progress(o->ctx, what);
}

int lsg_convert(const char *src, const char *dst, const lsgconv_opts *o, lc_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *scfg = NULL, *dcfg = NULL;
	lc_model *m = NULL;
	lc_config c;
	lc_params *p = NULL;
	void *w = NULL;
	float *base = NULL;
	int is_lsg, made = 0, rc = -1;
	struct stat st;

	if (o->max_len < 1 || o->max_len > (1 << 24))
		return lc_fail(err, "--max-len %d is outside 1..%d", o->max_len, 1 << 24);
	if (stat(dst, &st) == 0)
		return lc_fail(err, "%s exists; lc-convert writes a new directory", dst);
	snprintf(path, sizeof path, "%s/config.json", src);
	if (!(scfg = cfg_load(path, err)))
		return -1;
	if (arch_config_json(scfg, path, &c, err) < 0)
		goto out;
	if (strcmp(c.arch->name, "bart") && strcmp(c.arch->name, "lsg-bart")) {
		lc_fail(err, "%s: a %s model; lc-convert converts BART and LSG-BART", path, c.arch->name);
		goto out;
	}
	is_lsg = c.lsg;
	note(o, "reading the model");
	if (!(m = model_open(src, err)))
		goto out;
	if (!is_lsg && o->mask_id < 0) {
		lc_fail(err, "%s: the tokenizer has no mask token (the converter adds its embedding "
		        "to the global tokens)", src);
		goto out;
	}
	if (!(dcfg = new_config(scfg, is_lsg, dst, o, err)))
		goto out;
	if (arch_config_json(dcfg, "the converted config.json", &c, err) < 0)
		goto out;
	if (!(w = arch_weights_new(&c, NULL, &p, err)))
		goto out;
	if (!(base = malloc((params_total(p) ? params_total(p) : 1) * sizeof *base))) {
		lc_fail(err, "out of memory for %llu parameters", (unsigned long long)params_total(p));
		goto out;
	}
	note(o, "converting the weights");
	for (uint32_t k = 0; k < params_count(p); k++) {
		const lc_param *e = params_at(p, k);
		const lc_param *se = params_find(model_params(m), e->name);
		float *to = base + e->off;
		const float *from;
		int is_pos = strstr(e->name, ".embed_positions.weight") != NULL;
		int is_glob = !strcmp(e->name, "model.encoder.global_embeddings.weight");

		if (is_glob && !is_lsg) {
			const lc_param *pe = params_find(model_params(m), "model.encoder.embed_positions.weight");
			const lc_param *sh = params_find(model_params(m), "model.shared.weight");
			int32_t bos = o->bos_id >= 0 ? o->bos_id : c.bos_id;
			if (bos < 0 || bos >= c.vocab_size || o->mask_id >= c.vocab_size) {
				lc_fail(err, "%s: the tokenizer's <s> %d or <mask> %d is outside the model's "
				        "vocabulary of %d", src, bos, o->mask_id, c.vocab_size);
				goto out;
			}
			if (make_globals(*pe->slot, pe->dims[0], e->dims[1], *sh->slot, bos, o->mask_id,
			                 to, err) < 0)
				goto out;
			continue;
		}
		if (!se || !*se->slot) {
			if (e->flags & PARAM_OPTIONAL) {
				memset(to, 0, e->numel * sizeof *to);
				continue;
			}
			lc_fail(err, "%s: no tensor %s", src, e->name);
			goto out;
		}
		from = *se->slot;
		if (is_pos)
			convdir_tile_positions(from, se->dims[0], to, e->dims[0], e->dims[1]);
		else
			memcpy(to, from, e->numel * sizeof *to);
	}
	/* a directory beside dst, renamed into place when whole */
	snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", dst);
	if (!mkdtemp(tmp)) {
		lc_fail(err, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	made = 1;
	note(o, "writing");
	if (convdir_commit(p, base, dcfg, src, o->max_len, tmp, dst, err) < 0)
		goto out;
	made = 0;
	rc = 0;
out:
	if (made)
		convdir_remove(tmp);
	free(base);
	if (w)
		arch_weights_free(&c, w, p);
	model_free(m);
	json_decref(scfg);
	json_decref(dcfg);
	return rc;
}
