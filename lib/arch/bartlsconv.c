/*
 * bartlsconv.c: BART -> BART-LS conversion (see bartlsconv.h).
 */
#include "arch/bartlsconv.h"

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
#include "base/rng.h"
#include "weights/config.h"
#include "weights/params.h"

#define INIT_STD 0.02                /* init_bert_params */

void bartlsconv_opts_default(bartlsconv_opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_len = 16384;
	o->block_size = 1024;
	o->pooling_layers = 4;
	o->vocab_size = -1;
}

/* The BART-LS config.json: the source's keys, then BART-LS's. */
static json_t *new_config(const json_t *src, const lc_config *c, const char *dst,
                          const bartlsconv_opts *o, lc_err *err)
{
	json_t *root = json_deep_copy(src), *arch = json_array();

	if (!root || !arch || json_array_append_new(arch, json_string("BartLSForConditionalGeneration"))) {
		json_decref(root);
		json_decref(arch);
		lc_fail(err, "out of memory");
		return NULL;
	}
	json_object_set_new(root, "architectures", arch);
	json_object_set_new(root, "model_type", json_string("bart_ls"));
	json_object_set_new(root, "_name_or_path", json_string(o->name ? o->name : dst));
	json_object_set_new(root, "max_position_embeddings", json_integer(o->max_len));
	json_object_set_new(root, "max_decoder_position_embeddings",
	                    json_integer(c->max_positions));
	json_object_set_new(root, "block_size", json_integer(o->block_size));
	json_object_set_new(root, "pooling_layers", json_integer(o->pooling_layers));
	json_object_set_new(root, "pool_kernel", json_integer(18));
	json_object_set_new(root, "pool_stride", json_integer(12));
	json_object_set_new(root, "pool_padding", json_integer(9));
	if (o->vocab_size > 0)
		json_object_set_new(root, "vocab_size", json_integer(o->vocab_size));
	return root;
}

static void note(const bartlsconv_opts *o, const char *what)
{
	if (o->progress)
		o->progress(o->ctx, what);
}

/* to [rows, d] from from [n, d]: the n rows, then copies of the last. */
static void grow_rows(const float *from, uint64_t n, float *to, uint64_t rows, uint64_t d)
{
	memcpy(to, from, n * d * sizeof *to);
	for (uint64_t r = n; r < rows; r++)
		memcpy(to + r * d, from + (n - 1) * d, d * sizeof *to);
}

int bartls_convert(const char *src, const char *dst, const bartlsconv_opts *o, lc_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *scfg = NULL, *dcfg = NULL;
	lc_model *m = NULL;
	lc_config c, sc;
	lc_params *p = NULL;
	void *w = NULL;
	float *base = NULL;
	uint64_t rng = lc_mix64(o->seed ^ 0x424152544c53ull);   /* "BARTLS" */
	int made = 0, rc = -1;
	struct stat st;

	if (o->max_len < 1 || o->max_len > (1 << 24))
		return lc_fail(err, "--max-len %d is outside 1..%d", o->max_len, 1 << 24);
	if (stat(dst, &st) == 0)
		return lc_fail(err, "%s exists; lc-convert writes a new directory", dst);
	snprintf(path, sizeof path, "%s/config.json", src);
	if (!(scfg = cfg_load(path, err)))
		return -1;
	if (arch_config_json(scfg, path, &sc, err) < 0)
		goto out;
	if (strcmp(sc.arch->name, "bart")) {
		lc_fail(err, "%s: a %s model; lc-convert --to bart_ls converts BART", path,
		        sc.arch->name);
		goto out;
	}
	if (o->max_len % sc.max_positions) {
		lc_fail(err, "--max-len %d is not a multiple of the model's %d positions (the authors' "
		        "initialisation repeats BART's position table)", o->max_len, sc.max_positions);
		goto out;
	}
	if (o->pooling_layers < 0 || o->pooling_layers > sc.num_layers) {
		lc_fail(err, "--pooling-layers %d: the model has %d encoder layers", o->pooling_layers,
		        sc.num_layers);
		goto out;
	}
	if (o->vocab_size > 0 && o->vocab_size < sc.vocab_size) {
		lc_fail(err, "--vocab-size %d is smaller than the model's %d", o->vocab_size,
		        sc.vocab_size);
		goto out;
	}
	note(o, "reading the model");
	if (!(m = model_open(src, err)))
		goto out;
	if (!(dcfg = new_config(scfg, &sc, dst, o, err)))
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

		if (strstr(e->name, ".pool_attn.")) {
			for (uint64_t j = 0; j < e->numel; j++)
				to[j] = e->rank == 2 ? (float)(INIT_STD * lc_rng_normal(&rng)) : 0.0f;
			continue;
		}
		if (!se || !*se->slot) {
			memset(to, 0, e->numel * sizeof *to);
			if (e->flags & PARAM_OPTIONAL)
				continue;
			lc_fail(err, "%s: no tensor %s", src, e->name);
			goto out;
		}
		if (!strcmp(e->name, "model.encoder.embed_positions.weight"))
			convdir_tile_positions(*se->slot, se->dims[0], to, e->dims[0], e->dims[1]);
		else if (!strcmp(e->name, "final_logits_bias")) {
			memset(to, 0, e->numel * sizeof *to);
			memcpy(to, *se->slot, se->numel * sizeof *to);
		} else if (se->numel != e->numel) {
			/* the shared embedding, lm_head: a larger vocabulary */
			if (se->rank != 2 || se->dims[1] != e->dims[1] || se->dims[0] > e->dims[0]) {
				lc_fail(err, "%s: tensor %s does not fit the converted configuration", src,
				        e->name);
				goto out;
			}
			grow_rows(*se->slot, se->dims[0], to, e->dims[0], e->dims[1]);
		} else
			memcpy(to, *se->slot, e->numel * sizeof *to);
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
