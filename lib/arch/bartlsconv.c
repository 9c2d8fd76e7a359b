/*
 * bartlsconv.c: BART -> BART-LS conversion (see bartlsconv.h).
 */
#include "arch/bartlsconv.h"

#include <string.h>

#include <jansson.h>

#include "arch/convdir.h"
#include "base/rng.h"
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
static json_t *new_config(const convdir *cv, const bartlsconv_opts *o, lc_err *err)
{
	json_t *root = convdir_config(cv, "BartLSForConditionalGeneration", o->name, err);

	if (!root)
		return NULL;
	convdir_bart_generation(cv, root);
	json_object_set_new(root, "model_type", json_string("bart_ls"));
	json_object_set_new(root, "max_decoder_position_embeddings",
	                    json_integer(cv->sc.max_positions));
	json_object_set_new(root, "block_size", json_integer(o->block_size));
	json_object_set_new(root, "pooling_layers", json_integer(o->pooling_layers));
	json_object_set_new(root, "pool_kernel", json_integer(18));
	json_object_set_new(root, "pool_stride", json_integer(12));
	json_object_set_new(root, "pool_padding", json_integer(9));
	if (o->vocab_size > 0)
		json_object_set_new(root, "vocab_size", json_integer(o->vocab_size));
	return root;
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
	convdir cv;
	const lc_config *sc = &cv.sc;
	uint64_t rng = lc_mix64(o->seed ^ 0x424152544c53ull);   /* "BARTLS" */
	int rc = -1;

	if (convdir_open(&cv, src, dst, o->max_len, o->progress, o->ctx, err) < 0)
		goto out;
	if (strcmp(sc->arch->name, "bart")) {
		lc_fail(err, "%s: a %s model; lc-convert --to bart_ls converts BART", cv.cfg_path,
		        sc->arch->name);
		goto out;
	}
	if (o->max_len % sc->max_positions) {
		lc_fail(err, "--max-len %d is not a multiple of the model's %d positions (the authors' "
		        "initialisation repeats BART's position table)", o->max_len, sc->max_positions);
		goto out;
	}
	if (o->pooling_layers < 0 || o->pooling_layers > sc->num_layers) {
		lc_fail(err, "--pooling-layers %d: the model has %d encoder layers", o->pooling_layers,
		        sc->num_layers);
		goto out;
	}
	if (o->vocab_size > 0 && o->vocab_size < sc->vocab_size) {
		lc_fail(err, "--vocab-size %d is smaller than the model's %d", o->vocab_size,
		        sc->vocab_size);
		goto out;
	}
	if (convdir_read(&cv, err) < 0 || convdir_target(&cv, new_config(&cv, o, err), err) < 0)
		goto out;
	for (uint32_t k = 0; k < params_count(cv.p); k++) {
		const lc_param *e = params_at(cv.p, k), *se;
		float *to = cv.base + e->off;
		int has;

		if (strstr(e->name, ".pool_attn.")) {
			for (uint64_t j = 0; j < e->numel; j++)
				to[j] = e->rank == 2 ? (float)(INIT_STD * lc_rng_normal(&rng)) : 0.0f;
			continue;
		}
		if ((has = convdir_source(&cv, e->name, e, to, &se, err)) < 0)
			goto out;
		if (!has)
			continue;
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
	rc = convdir_write(&cv, err);
out:
	convdir_close(&cv);
	return rc;
}
