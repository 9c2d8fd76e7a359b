/*
 * test_topdown: the top-down encoder against the unofficial implementation
 * of Pang et al. (facebookresearch/bart_ls, top_down.py and block.py;
 * tests/data/topdown: embed 64, 4 heads, window 16, 2 bottom-up, 2
 * segment and 2 top-down layers): every stage (embeddings, bottom-up
 * layers, layer 0's block attention, the pooled segments, the segment
 * layers, the top-down layers) at every golden length, unpadded (raw:
 * 32, 100, 1000) and padded with <pad> to a multiple of 32 (pad32: 1, 31,
 * 32, 100, 1000 and the batch of two, each document alone), from the
 * oracle's weight file under fairseq's names; lc's own padding of inputs
 * shorter than the pooling kernel against pad32/L1 and L31; the encoder
 * as programs run it (2 threads); the transformers-style names
 * params_write gives (the same bits); configuration and input refusals;
 * lc-convert --to topdown's mapping from BART (topdownconv.h), tensor by
 * tensor, AdaPool's zero tagger included.
 */
#include <stdint.h>
#include <unistd.h>

#include <jansson.h>

#include "arch/encoder.h"
#include "arch/model.h"
#include "arch/topdown.h"
#include "arch/topdownconv.h"
#include "weights/params.h"
#include "weights/safetensors.h"
#include "t.h"
#include "t_dec.h"
#include "t_oracle.h"

#define TOL 1e-5
#define D 64

static double worst;
static char dir_fs[] = "/tmp/lc-test-topdown-XXXXXX";

static void *golden(const char *rel, size_t *n)
{
	return t_oracle_golden("topdown/oracle", rel, n);
}

static void check(const char *what, const float *got, const char *rel, size_t off, size_t n)
{
	t_oracle_check("topdown/oracle", TOL, &worst, what, got, rel, off, n);
}

/* <cs> (raw/L100, pad32/batch...), document b of B: every stage, all T
 * rows (pads included: their bottom-up rows are averaged into the
 * segments) */
static void stage_case(lc_model *m, lc_encoder *e, const char *cs, size_t b, size_t B, size_t S)
{
	char rel[128], what[160];
	size_t n;
	int32_t *tok = NULL;
	topdown_stages st;
	lc_err err;
	size_t T;

	snprintf(rel, sizeof rel, "%s/tokens.i32", cs);
	if (!T_OK((tok = golden(rel, &n)) != NULL, "%s", rel))
		return;
	T = n / B;
	if (T_OK(topdown_encode_stages(m, tok + b * T, (int64_t)T, &st, &err) == 0, "%s: %s", cs,
	         err.msg)) {
		static const char *const tn[] = { "bu0", "bu1", "td0", "td1" }, *const sn[] = { "seg0",
		                                                                             "seg1" };
		float *tl[] = { st.bu[0], st.bu[1], st.td[0], st.td[1] };
		T_EQ_I(st.T, (int64_t)T);
		T_EQ_I(st.S, (int64_t)S);
		snprintf(what, sizeof what, "%s[%zu] emb", cs, b);
		snprintf(rel, sizeof rel, "%s/emb.f32", cs);
		check(what, st.emb, rel, b * T * D, T * D);
		snprintf(what, sizeof what, "%s[%zu] bu0_attn", cs, b);
		snprintf(rel, sizeof rel, "%s/bu0_attn.f32", cs);
		check(what, st.bu0_attn, rel, b * T * D, T * D);
		for (int i = 0; i < 4; i++) {
			snprintf(what, sizeof what, "%s[%zu] %s", cs, b, tn[i]);
			snprintf(rel, sizeof rel, "%s/%s.f32", cs, tn[i]);
			check(what, tl[i], rel, b * T * D, T * D);
		}
		snprintf(what, sizeof what, "%s[%zu] seg_pool", cs, b);
		snprintf(rel, sizeof rel, "%s/seg_pool.f32", cs);
		check(what, st.seg_pool, rel, b * S * D, S * D);
		for (int i = 0; i < 2; i++) {
			snprintf(what, sizeof what, "%s[%zu] %s", cs, b, sn[i]);
			snprintf(rel, sizeof rel, "%s/%s.f32", cs, sn[i]);
			check(what, st.seg[i], rel, b * S * D, S * D);
		}
		topdown_stages_free(&st);
	}
	{
		/* as programs run it */
		float *out = malloc(T * D * sizeof *out);
		T_EQ_I(encoder_out_len(e, (int64_t)T), (int64_t)T);
		T_OK(encoder_run(e, tok + b * T, (int64_t)T, out, NULL, NULL, &err) == 0, "%s",
		     err.msg);
		snprintf(what, sizeof what, "%s[%zu] encoder_run, 2 threads", cs, b);
		snprintf(rel, sizeof rel, "%s/td1.f32", cs);
		check(what, out, rel, b * T * D, T * D);
		free(out);
	}
	free(tok);
}

/* Fewer real tokens than the pooling kernel, unpadded: lc pads them to
 * 32 itself, as pad32/L1 and pad32/L31 were padded. */
static void short_case(lc_encoder *e, const char *cs, int64_t L)
{
	char rel[128], what[160];
	size_t n;
	int32_t *tok = NULL;
	float *out = malloc((size_t)L * D * sizeof *out);
	lc_err err;

	snprintf(rel, sizeof rel, "%s/tokens.i32", cs);
	if (T_OK((tok = golden(rel, &n)) != NULL, "%s", rel) &&
	    T_OK(encoder_run(e, tok, L, out, NULL, NULL, &err) == 0, "%s", err.msg)) {
		snprintf(what, sizeof what, "%s unpadded (%lld tokens)", cs, (long long)L);
		snprintf(rel, sizeof rel, "%s/td1.f32", cs);
		check(what, out, rel, 0, (size_t)L * D);
	}
	free(tok);
	free(out);
}

static void test_goldens(void)
{
	lc_err err;
	lc_model *m = model_open(dir_fs, 0, &err);
	lc_encoder *e = m ? encoder_new(m, 2, &err) : NULL;
	static const struct { const char *cs; size_t S; } cases[] = {
		{ "raw/L32", 1 }, { "raw/L100", 3 }, { "raw/L1000", 41 },
		{ "pad32/L1", 1 }, { "pad32/L31", 1 }, { "pad32/L32", 1 }, { "pad32/L100", 5 },
		{ "pad32/L1000", 42 },
	};

	if (!T_OK(m && e, "%s", err.msg))
		goto out;
	T_EQ_S(model_config(m)->arch->name, "bart-topdown");
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
		stage_case(m, e, cases[k].cs, 0, 1, cases[k].S);
	stage_case(m, e, "pad32/batch", 0, 2, 5);
	stage_case(m, e, "pad32/batch", 1, 2, 5);
	short_case(e, "pad32/L1", 1);
	short_case(e, "pad32/L31", 31);
out:
	encoder_free(e);
	model_free(m);
}

/* The tensors the file of transformers-style names holds. */
static void hf_names(const st_file *f)
{
	T_OK(st_find(f, "model.encoder.layers.2.cross_attn.out_proj.bias") != NULL,
	     "HF name of a top-down layer's cross-attention");
	T_OK(st_find(f, "model.encoder.top_layers.1.fc2.weight") != NULL,
	     "HF name of a segment layer");
	T_OK(st_find(f, "model.shared.weight") && !st_find(f, "encoder.version"),
	     "HF names only");
	T_OK(!st_find(f, "model.encoder.layers.1.cross_attn.q_proj.weight"),
	     "no cross-attention in a bottom-up layer");
}

/* The transformers-style names (params_write, as lc-convert writes) give
 * the same states, bit for bit. */
static void test_hf_names(void)
{
	char dir[] = "/tmp/lc-test-topdown-hf-XXXXXX";
	size_t n;
	int32_t *tok = golden("raw/L1000/tokens.i32", &n);

	t_oracle_hf_names(dir_fs, dir, "topdown/config.json", D, tok, hf_names);
	free(tok);
}

static void refuse(const char *keys, const char *want)
{
	t_oracle_refuse("topdown/config.json", keys, want);
}

static void test_refusals(void)
{
	lc_err err;
	lc_model *m = model_open(dir_fs, 0, &err);
	lc_encoder *e = m ? encoder_new(m, 1, &err) : NULL;
	int32_t ids[1025] = { 0 };
	float *out = malloc(1025 * D * sizeof *out);
	json_error_t je;
	json_t *root = json_load_file(t_data("topdown/config.json"), 0, &je);
	lc_config c;

	refuse("{\"encoder_layers\": 5}", "bottom_up_layers 2 + top_down_layers");
	refuse("{\"pool_type\": \"max\"}", "pool_type");
	/* the defaults (8 bottom-up, the rest top-down) on 4 layers: found by fuzz_config */
	refuse("{\"bottom_up_layers\": null, \"top_down_layers\": null}",
	       "\"top_down_layers\" is missing, and its default -4 is outside [0, 1024]");
	refuse("{\"bottom_up_layers\": 5, \"top_down_layers\": 0}",
	       "encoder_layers 4 is not bottom_up_layers 5 + top_down_layers 0");
	refuse("{\"window_size\": 0}", "window_size");
	refuse("{\"pool_stride\": 0}", "pool_stride");
	if (T_OK(root != NULL, "config")) {
		json_object_set_new(root, "max_segments", json_integer(10));
		json_object_set_new(root, "pool_type", json_string("adapool"));
		T_OK(arch_config_json(root, "config.json", &c, &err) == 0, "%s", err.msg);
		T_EQ_I(c.td_max_segments, 10);
		T_EQ_I(c.td_adapool, 1);
		json_decref(root);
	}
	if (!T_OK(m && e, "%s", err.msg))
		goto out;
	T_EQ_I(encoder_max_len(e), 1024);
	T_OK(encoder_run(e, ids, 0, out, NULL, NULL, &err) < 0 && strstr(err.msg, "empty"), "%s",
	     err.msg);
	T_OK(encoder_run(e, ids, 1025, out, NULL, NULL, &err) < 0 && strstr(err.msg, "1024"), "%s",
	     err.msg);
	ids[3] = 200;
	T_OK(encoder_run(e, ids, 10, out, NULL, NULL, &err) < 0 && strstr(err.msg, "vocabulary"),
	     "%s", err.msg);
out:
	free(out);
	encoder_free(e);
	model_free(m);
}

static const float *tensor(lc_model *m, const char *name, uint64_t *n)
{
	const lc_param *e = params_find(model_params(m), name);

	*n = e ? e->numel : 0;
	return e ? *e->slot : NULL;
}

/* dst's tensor a equals src's tensor b (rows: the first `rows` floats) */
static int same_tensor(lc_model *d, const char *a, lc_model *s, const char *b)
{
	uint64_t na, nb;
	const float *x = tensor(d, a, &na), *y = tensor(s, b, &nb);

	return x && y && na == nb && !memcmp(x, y, na * sizeof *x);
}

static void test_convert(void)
{
	char dst[] = "/tmp/lc-test-topdown-conv-XXXXXX", out[600], name[160], from[160];
	const char *src = t_data("bart/tiny_bart");
	topdownconv_opts o;
	lc_err err;
	lc_model *s = NULL, *d = NULL;
	static const char *const parts[] = { "self_attn.q_proj.weight", "self_attn.out_proj.bias",
	                                     "self_attn_layer_norm.weight", "fc1.weight",
	                                     "fc2.bias", "final_layer_norm.bias" };
	int ok = 1;
	uint64_t n, ns;
	const float *pos, *spos, *tag;

	if (!T_OK(mkdtemp(dst) != NULL, "tmp"))
		return;
	snprintf(out, sizeof out, "%s/td", dst);
	topdownconv_opts_default(&o);
	o.max_len = 2048;
	o.window_size = 16;
	o.adapool = 1;
	if (!T_OK(topdown_convert(src, out, &o, &err) == 0, "%s", err.msg))
		goto out;
	s = model_open(src, 0, &err);
	d = model_open(out, 0, &err);
	if (!T_OK(s && d, "%s", err.msg))
		goto out;
	T_EQ_S(model_config(d)->arch->name, "bart-topdown");
	T_EQ_I(model_config(d)->td_bottom_up, 1);            /* two thirds of 2, rounded */
	T_EQ_I(model_config(d)->td_segment_layers, 2);
	T_EQ_I(model_config(d)->td_adapool, 1);
	for (int l = 0; l < 2; l++)
		for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
			snprintf(name, sizeof name, "model.encoder.layers.%d.%s", l, parts[k]);
			ok &= same_tensor(d, name, s, name);
			snprintf(name, sizeof name, "model.encoder.top_layers.%d.%s", l, parts[k]);
			snprintf(from, sizeof from, "model.encoder.layers.%d.%s", l, parts[k]);
			ok &= same_tensor(d, name, s, from);
		}
	T_OK(ok, "encoder layers copied; segment layers = BART's last two");
	ok = same_tensor(d, "model.encoder.layers.1.cross_attn.k_proj.weight", s,
	                 "model.encoder.layers.1.self_attn.k_proj.weight") &&
	     same_tensor(d, "model.encoder.layers.1.cross_attn_layer_norm.bias", s,
	                 "model.encoder.layers.1.self_attn_layer_norm.bias");
	T_OK(ok, "the top-down layer's cross-attention = its self-attention");
	T_OK(!tensor(d, "model.encoder.layers.0.cross_attn.k_proj.weight", &n),
	     "no cross-attention in the bottom-up layer");
	tag = tensor(d, "model.encoder.pool_tagger.weight", &n);
	ok = tag && n == 64;
	for (uint64_t i = 0; ok && i < n; i++)
		ok = tag[i] == 0;
	T_OK(ok, "AdaPool's tagger starts at zero");
	pos = tensor(d, "model.encoder.embed_positions.weight", &n);
	spos = tensor(s, "model.encoder.embed_positions.weight", &ns);
	ok = pos && spos && n == 2050 * 64 && ns == 1026 * 64 &&
	     !memcmp(pos, spos, ns * sizeof *pos) &&
	     !memcmp(pos + 1026 * 64, spos + 2 * 64, 1024 * 64 * sizeof *pos);
	T_OK(ok, "encoder positions tiled to 2048");
	ok = same_tensor(d, "model.decoder.embed_positions.weight", s,
	                 "model.decoder.embed_positions.weight") &&
	     same_tensor(d, "model.decoder.layers.1.encoder_attn.v_proj.weight", s,
	                 "model.decoder.layers.1.encoder_attn.v_proj.weight");
	T_OK(ok, "the decoder copied");
	o.segment_layers = 3;
	snprintf(out, sizeof out, "%s/x", dst);
	T_OK(topdown_convert(src, out, &o, &err) < 0 && strstr(err.msg, "--segment-layers 3"),
	     "%s", err.msg);
	o.segment_layers = 2;
	o.bottom_up = 3;
	T_OK(topdown_convert(src, out, &o, &err) < 0 && strstr(err.msg, "--bottom-up-layers 3"),
	     "%s", err.msg);
out:
	model_free(s);
	model_free(d);
	snprintf(out, sizeof out, "rm -rf '%s'", dst);
	T_OK(system(out) == 0, "cleanup");
}

int main(void)
{
	if (!T_OK(mkdtemp(dir_fs) && t_oracle_fairseq_dir(dir_fs, "topdown/config.json", "topdown/oracle/model.safetensors", D, 0) == 0, "fairseq-named model directory"))
		return t_done();
	T_RUN(test_goldens);
	T_RUN(test_hf_names);
	T_RUN(test_refusals);
	T_RUN(test_convert);
	t_rm_dir(dir_fs);
	printf("worst error relative to the golden's largest value: %.3g\n", worst);
	return t_done();
}
