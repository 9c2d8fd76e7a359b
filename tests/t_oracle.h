/*
 * t_oracle: what the encoder-oracle tests share (test_bartls,
 * test_topdown): the oracle's goldens (raw little-endian f32 or i32 files)
 * and the check of a result against one, a model directory of the
 * oracle's weights under fairseq's names (what the oracle's code loads),
 * the same states from the transformers-style names params_write gives,
 * and a configuration refused. Include after t.h and t_dec.h.
 */
#ifndef LC_T_ORACLE_H
#define LC_T_ORACLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "arch/arch.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "weights/params.h"
#include "weights/safetensors.h"

/* Golden rel of the oracle folder dir (under tests/data): its 4-byte
 * elements in *n; NULL if it cannot be read. */
static inline void *t_oracle_golden(const char *dir, const char *rel, size_t *n)
{
	char p[256];
	size_t len = 0;
	void *v;

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	v = t_slurp(t_data(p), &len);
	*n = len / 4;
	return v;
}

/* got[n] against golden rel's elements [off, off + n) (t_rel_err, tol);
 * *worst gets the largest error so far. */
static inline void t_oracle_check(const char *dir, double tol, double *worst, const char *what,
                                  const float *got, const char *rel, size_t off, size_t n)
{
	size_t ng;
	float *g = t_oracle_golden(dir, rel, &ng);

	if (T_OK(got && g && ng >= off + n, "%s: golden %s", what, rel))
		*worst = fmax(*worst, t_rel_err(what, got, g + off, n, tol));
	free(g);
}

static inline int t_write_file(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "w");
	int ok = f && fwrite(s, 1, n, f) == n;

	return (f && fclose(f) == 0 && ok) ? 0 : -1;
}

/* Removes a model directory: its config.json and model.safetensors. */
static inline void t_rm_dir(const char *dir)
{
	char p[512];

	snprintf(p, sizeof p, "%s/config.json", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	unlink(p);
	rmdir(dir);
}

/* dir: config.json (a copy of config, under tests/data) and
 * model.safetensors = the oracle's tensors (weights, under tests/data;
 * fairseq names, embedding width d) plus the decoder's position table
 * (1026 rows) and layernorm_embedding, which the encoder oracles lack;
 * with tie, the shared embedding also under its decoder name, as
 * checkpoints hold it. */
static inline int t_oracle_fairseq_dir(const char *dir, const char *config, const char *weights,
                                       int d, int tie)
{
	char path[512], *cfg;
	size_t n;
	lc_err err;
	st_file *f;
	st_tensor *t;
	uint32_t k;
	float *dpos = malloc(1026 * (size_t)d * sizeof *dpos), *ones = malloc(d * sizeof *ones);
	float *zeros = calloc((size_t)d, sizeof *zeros);
	int rc = -1;

	cfg = t_slurp(t_data(config), &n);
	snprintf(path, sizeof path, "%s/config.json", dir);
	if (!dpos || !ones || !zeros || !cfg || t_write_file(path, cfg, n) < 0 ||
	    !(f = st_open(t_data(weights), &err))) {
		free(cfg);
		goto out;
	}
	free(cfg);
	k = st_count(f);
	t = calloc(k + 4, sizeof *t);
	for (uint32_t i = 0; i < k; i++)
		t[i] = *st_at(f, i);
	if (tie) {
		t[k + 3] = *st_find(f, "encoder.embed_tokens.weight");
		t[k + 3].name = "decoder.embed_tokens.weight";
	}
	for (int i = 0; i < 1026 * d; i++)
		dpos[i] = (float)(i % 7) * 0.1f;
	for (int i = 0; i < d; i++)
		ones[i] = 1;
	t[k] = (st_tensor){ .name = "decoder.embed_positions.weight", .dtype = ST_F32, .rank = 2,
	                    .dims = { 1026, (uint64_t)d }, .numel = 1026 * (uint64_t)d,
	                    .nbytes = 1026 * (uint64_t)d * 4, .data = (const unsigned char *)dpos };
	t[k + 1] = (st_tensor){ .name = "decoder.layernorm_embedding.weight", .dtype = ST_F32,
	                        .rank = 1, .dims = { (uint64_t)d }, .numel = (uint64_t)d,
	                        .nbytes = (uint64_t)d * 4, .data = (const unsigned char *)ones };
	t[k + 2] = (st_tensor){ .name = "decoder.layernorm_embedding.bias", .dtype = ST_F32,
	                        .rank = 1, .dims = { (uint64_t)d }, .numel = (uint64_t)d,
	                        .nbytes = (uint64_t)d * 4, .data = (const unsigned char *)zeros };
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	rc = st_write(path, t, k + 3 + !!tie, &err);
	free(t);
	st_close(f);
out:
	free(dpos);
	free(ones);
	free(zeros);
	return rc;
}

/* The transformers-style names (params_write, as lc-convert writes) of
 * the model in fairseq_dir, written to a new directory tmpl (mkdtemp's)
 * with a copy of config: names() checks which tensors the file holds;
 * then the new directory's encoder on 3 threads gives the same bits as
 * fairseq_dir's on one, over the 1000 tokens of golden tokens. */
static inline void t_oracle_hf_names(const char *fairseq_dir, char *tmpl, const char *config,
                                     int d, int32_t *tok, void (*names)(const st_file *f))
{
	char path[512];
	lc_err err;
	lc_model *m = model_open(fairseq_dir, 0, &err), *h = NULL;
	lc_encoder *e = NULL, *eh = NULL;
	size_t ncfg;
	char *cfg = t_slurp(t_data(config), &ncfg);
	float *o1 = malloc(1000 * (size_t)d * sizeof *o1), *o2 = malloc(1000 * (size_t)d * sizeof *o2);
	st_file *f = NULL;

	if (!T_OK(m && tok && cfg && mkdtemp(tmpl), "setup"))
		goto out;
	snprintf(path, sizeof path, "%s/config.json", tmpl);
	T_OK(t_write_file(path, cfg, ncfg) == 0, "%s", path);
	snprintf(path, sizeof path, "%s/model.safetensors", tmpl);
	T_OK(params_write(model_params(m), NULL, path, &err) == 0, "%s", err.msg);
	if (T_OK((f = st_open(path, &err)) != NULL, "%s", err.msg)) {
		names(f);
		st_close(f);
	}
	h = model_open(tmpl, 0, &err);
	if (!T_OK(h != NULL, "%s", err.msg))
		goto out;
	e = encoder_new(m, 1, &err);
	eh = encoder_new(h, 3, &err);
	if (!T_OK(e && eh, "%s", err.msg))
		goto out;
	T_OK(encoder_run(e, tok, 1000, o1, NULL, NULL, &err) == 0, "%s", err.msg);
	T_OK(encoder_run(eh, tok, 1000, o2, NULL, NULL, &err) == 0, "%s", err.msg);
	T_OK(!memcmp(o1, o2, 1000 * (size_t)d * sizeof *o1), "HF names, 3 threads: the same bits");
out:
	encoder_free(e);
	encoder_free(eh);
	model_free(m);
	model_free(h);
	t_rm_dir(tmpl);
	free(cfg);
	free(o1);
	free(o2);
}

/* config (under tests/data) with the JSON object keys merged in is
 * refused, with a message holding want. */
static inline void t_oracle_refuse(const char *config, const char *keys, const char *want)
{
	json_error_t je;
	json_t *root = json_load_file(t_data(config), 0, &je), *kw = json_loads(keys, 0, &je);
	lc_config c;
	lc_err err;

	if (!T_OK(root && kw, "%s", keys))
		return;
	json_object_update(root, kw);
	T_OK(arch_config_json(root, "config.json", &c, &err) < 0 && strstr(err.msg, want),
	     "%s: %s", keys, err.msg);
	json_decref(root);
	json_decref(kw);
}

#endif
