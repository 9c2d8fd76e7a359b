/*
 * topdownconv.c: BART -> top-down transformer (see topdownconv.h).
 */
#include "arch/topdownconv.h"

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
#include "weights/config.h"
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
static json_t *new_config(const json_t *src, const lc_config *c, const char *dst,
                          const topdownconv_opts *o, int n1, lc_err *err)
{
	json_t *root = json_deep_copy(src), *arch = json_array();

	if (!root || !arch ||
	    json_array_append_new(arch, json_string("BartTopDownForConditionalGeneration"))) {
		json_decref(root);
		json_decref(arch);
		lc_fail(err, "out of memory");
		return NULL;
	}
	json_object_set_new(root, "architectures", arch);
	json_object_set_new(root, "model_type", json_string("bart_topdown"));
	json_object_set_new(root, "_name_or_path", json_string(o->name ? o->name : dst));
	json_object_set_new(root, "max_position_embeddings", json_integer(o->max_len));
	json_object_set_new(root, "max_decoder_position_embeddings",
	                    json_integer(c->max_positions));
	json_object_set_new(root, "window_size", json_integer(o->window_size));
	json_object_set_new(root, "bottom_up_layers", json_integer(n1));
	json_object_set_new(root, "top_down_layers", json_integer(c->num_layers - n1));
	json_object_set_new(root, "segment_layers", json_integer(o->segment_layers));
	json_object_set_new(root, "pool_kernel", json_integer(32));
	json_object_set_new(root, "pool_stride", json_integer(24));
	json_object_set_new(root, "pool_type", json_string(o->adapool ? "adapool" : "avg"));
	json_object_set_new(root, "max_segments", json_integer(o->max_segments));
	return root;
}

static void note(const topdownconv_opts *o, const char *what)
{
	if (o->progress)
		o->progress(o->ctx, what);
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
	char path[PATH_MAX], tmp[PATH_MAX], from[PARAM_NAME];
	json_t *scfg = NULL, *dcfg = NULL;
	lc_model *m = NULL;
	lc_config c, sc;
	lc_params *p = NULL;
	void *w = NULL;
	float *base = NULL;
	int made = 0, rc = -1, n1;
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
		lc_fail(err, "%s: a %s model; lc-convert --to topdown converts BART", path,
		        sc.arch->name);
		goto out;
	}
	n1 = o->bottom_up >= 0 ? o->bottom_up : (2 * sc.num_layers + 1) / 3;
	if (n1 > sc.num_layers) {
		lc_fail(err, "--bottom-up-layers %d: the model has %d encoder layers", n1,
		        sc.num_layers);
		goto out;
	}
	if (o->segment_layers < 0 || o->segment_layers > sc.num_layers) {
		lc_fail(err, "--segment-layers %d: the model has %d encoder layers to copy them from",
		        o->segment_layers, sc.num_layers);
		goto out;
	}
	if (o->max_len % sc.max_positions) {
		lc_fail(err, "--max-len %d is not a multiple of the model's %d positions (the position "
		        "table is repeated as BART-LS's conversion does)", o->max_len, sc.max_positions);
		goto out;
	}
	note(o, "reading the model");
	if (!(m = model_open(src, err)))
		goto out;
	if (!(dcfg = new_config(scfg, &sc, dst, o, n1, err)))
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
		const lc_param *se;
		float *to = base + e->off;

		if (!source_name(e->name, sc.num_layers, o->segment_layers, from, sizeof from)) {
			memset(to, 0, e->numel * sizeof *to);
			continue;
		}
		se = params_find(model_params(m), from);
		if (!se || !*se->slot) {
			memset(to, 0, e->numel * sizeof *to);
			if (e->flags & PARAM_OPTIONAL)
				continue;
			lc_fail(err, "%s: no tensor %s", src, from);
			goto out;
		}
		if (!strcmp(e->name, "model.encoder.embed_positions.weight"))
			convdir_tile_positions(*se->slot, se->dims[0], to, e->dims[0], e->dims[1]);
		else if (se->numel != e->numel) {
			lc_fail(err, "%s: tensor %s does not fit the converted configuration", src, from);
			goto out;
		} else
			memcpy(to, *se->slot, e->numel * sizeof *to);
	}
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
