/*
 * topdownconv.c: BART -> top-down transformer (see topdownconv.h).
 */
#include "arch/topdownconv.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "arch/convdir.h"
#include "weights/params.h"

void topdownconv_opts_default(topdownconv_opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_len = 16384;
	o->window_size = 1024;
	o->bottom_up = -1;
	o->segment_layers = 2;
}

/* The top-down config.json: the source's keys, then the top-down ones. */
static json_t *new_config(const convdir *cv, const topdownconv_opts *o, int n1, lc_err *err)
{
	json_t *root = convdir_config(cv, "BartTopDownForConditionalGeneration", o->name, err);

	if (!root)
		return NULL;
	convdir_bart_generation(cv, root);
	json_object_set_new(root, "model_type", json_string("bart_topdown"));
	json_object_set_new(root, "max_decoder_position_embeddings",
	                    json_integer(cv->sc.max_positions));
	json_object_set_new(root, "window_size", json_integer(o->window_size));
	json_object_set_new(root, "bottom_up_layers", json_integer(n1));
	json_object_set_new(root, "top_down_layers", json_integer(cv->sc.num_layers - n1));
	json_object_set_new(root, "segment_layers", json_integer(o->segment_layers));
	json_object_set_new(root, "pool_kernel", json_integer(32));
	json_object_set_new(root, "pool_stride", json_integer(24));
	json_object_set_new(root, "pool_type", json_string(o->adapool ? "adapool" : "avg"));
	json_object_set_new(root, "max_segments", json_integer(o->max_segments));
	return root;
}

/* The BART tensor a top-down parameter starts from (see topdownconv.h),
 * into from; 0 when it starts at zero (AdaPool's tagger). */
static int source_name(const char *name, int L, int n2, char *from, size_t n)
{
	int i, k = 0;

	if (!strncmp(name, "model.encoder.pool_tagger.", 26))
		return 0;
	if (sscanf(name, "model.encoder.top_layers.%d.%n", &i, &k) == 1 && k > 0) {
		snprintf(from, n, "model.encoder.layers.%d.%s", L - n2 + i, name + k);
		return 1;
	}
	snprintf(from, n, "%s", name);
	if (strstr(name, ".cross_attn")) {
		char *p = strstr(from, ".cross_attn");
		/* ".cross_attn." -> ".self_attn.", "_layer_norm" kept */
		memmove(p + 10, p + 11, strlen(p + 11) + 1);
		memcpy(p, ".self_attn", 10);
	}
	return 1;
}

int topdown_convert(const char *src, const char *dst, const topdownconv_opts *o, lc_err *err)
{
	char from[PARAM_NAME];
	convdir cv;
	const lc_config *sc = &cv.sc;
	int rc = -1, n1;

	if (convdir_open(&cv, src, dst, o->max_len, o->progress, o->ctx, err) < 0)
		goto out;
	if (strcmp(sc->arch->name, "bart")) {
		lc_fail(err, "%s: a %s model; lc-convert --to topdown converts BART", cv.cfg_path,
		        sc->arch->name);
		goto out;
	}
	n1 = o->bottom_up >= 0 ? o->bottom_up : (2 * sc->num_layers + 1) / 3;
	if (n1 > sc->num_layers) {
		lc_fail(err, "--bottom-up-layers %d: the model has %d encoder layers", n1,
		        sc->num_layers);
		goto out;
	}
	if (o->segment_layers < 0 || o->segment_layers > sc->num_layers) {
		lc_fail(err, "--segment-layers %d: the model has %d encoder layers to copy them from",
		        o->segment_layers, sc->num_layers);
		goto out;
	}
	if (o->max_len % sc->max_positions) {
		lc_fail(err, "--max-len %d is not a multiple of the model's %d positions (the position "
		        "table is repeated as BART-LS's conversion does)", o->max_len, sc->max_positions);
		goto out;
	}
	if (convdir_read(&cv, err) < 0 || convdir_target(&cv, new_config(&cv, o, n1, err), err) < 0)
		goto out;
	for (uint32_t k = 0; k < params_count(cv.p); k++) {
		const lc_param *e = params_at(cv.p, k), *se;
		float *to = cv.base + e->off;
		int has;

		if (!source_name(e->name, sc->num_layers, o->segment_layers, from, sizeof from)) {
			memset(to, 0, e->numel * sizeof *to);
			continue;
		}
		if ((has = convdir_source(&cv, from, e, to, &se, err)) < 0)
			goto out;
		if (!has)
			continue;
		if (!strcmp(e->name, "model.encoder.embed_positions.weight"))
			convdir_tile_positions(*se->slot, se->dims[0], to, e->dims[0], e->dims[1]);
		else if (se->numel != e->numel) {
			lc_fail(err, "%s: tensor %s does not fit the converted configuration", src, from);
			goto out;
		} else
			memcpy(to, *se->slot, e->numel * sizeof *to);
	}
	rc = convdir_write(&cv, err);
out:
	convdir_close(&cv);
	return rc;
}
