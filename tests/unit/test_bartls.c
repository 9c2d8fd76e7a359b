/*
 * test_bartls: the BART-LS encoder against the authors' code
 * (facebookresearch/bart_ls, tests/data/bartls: embed 64, 4 heads, 3
 * layers of which the top 2 pooled, block_size 16): single layers
 * (block layer and pooled layer, with and without the padding mask, the
 * block attention's output, the pooled keys, values, key mask and the
 * pooled attention's output) and the whole encoder after each layer at
 * L = 1, 15, 16, 17, 100, 1000 and the batch of two (each document alone:
 * its real rows do not depend on the batch's padded length), from the
 * oracle's weight file under fairseq's names; the same numbers from the
 * transformers-style names params_write gives; configuration and input
 * refusals; the BART -> BART-LS conversion against the authors'
 * initialize_models_long_denoising.py (convert/).
 */
#include <stdint.h>
#include <unistd.h>

#include <jansson.h>

#include "arch/bartls.h"
#include "arch/bartlsconv.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "base/arena.h"
#include "weights/params.h"
#include "weights/safetensors.h"
#include "t.h"
#include "t_dec.h"
#include "t_oracle.h"

#define TOL 1e-5
#define D 64

static double worst;
static char dir_fs[] = "/tmp/lc-test-bartls-XXXXXX";

static void *golden(const char *rel, size_t *n)
{
	return t_oracle_golden("bartls/bartls", rel, n);
}

static void check(const char *what, const float *got, const char *rel, size_t off, size_t n)
{
	t_oracle_check("bartls/bartls", TOL, &worst, what, got, rel, off, n);
}

static const char *lens[] = { "L1", "L15", "L16", "L17", "L100", "L1000" };
static const int Tp_of[] = { 2, 2, 2, 3, 10, 85 };

/* layers/<case>: layer 0 (block) and 1 (pooled) on x, with and without the mask */
static void layers_case(lc_model *m, const char *cs, size_t b, size_t T, int want_tp)
{
	char rel[128], what[160];
	size_t n, nm;
	float *x0 = NULL, *x = NULL, *a = NULL, *cross = NULL;
	int32_t *mask = NULL;
	unsigned char *pad = NULL;
	poolattn_tape tape;
	lc_err err;

	snprintf(rel, sizeof rel, "layers/%s/x.f32", cs);
	x0 = golden(rel, &n);
	snprintf(rel, sizeof rel, "layers/%s/mask.i32", cs);
	mask = golden(rel, &nm);
	if (!T_OK(x0 && mask && n >= (b + 1) * T * D && nm >= (b + 1) * T, "%s inputs", cs))
		goto out;
	x = malloc(T * D * sizeof *x);
	a = malloc(T * D * sizeof *a);
	cross = malloc(T * D * sizeof *cross);
	pad = malloc(T);
	for (size_t i = 0; i < T; i++)
		pad[i] = mask[b * T + i] == 1;
	for (int layer = 0; layer < 2; layer++)
		for (int masked = 1; masked >= 0; masked--) {
			const char *nm_ = layer ? "pool" : "block";
			int full = !strcmp(cs, "batch") ? 0 : 1;
			if (!masked && !full)
				continue;
			memcpy(x, x0 + b * T * D, T * D * sizeof *x);
			memset(&tape, 0, sizeof tape);
			if (!T_OK(bartls_layer(m, layer, x, T, masked ? pad : NULL, a, cross, &tape, &err) == 0,
			          "%s", err.msg))
				continue;
			snprintf(what, sizeof what, "layers/%s[%zu] %s_%s", cs, b, nm_, masked ? "pad" : "nomask");
			snprintf(rel, sizeof rel, "layers/%s/%s_%s.f32", cs, nm_, masked ? "pad" : "nomask");
			check(what, x, rel, b * T * D, T * D);
			if (!full)
				goto next;
			if (masked) {
				snprintf(rel, sizeof rel, "layers/%s/%s_pad_attn.f32", cs, nm_);
				check(rel, a, rel, 0, T * D);
			}
			if (layer == 1) {
				size_t tp = (size_t)tape.Tp;
				T_EQ_I(tp, want_tp);
				snprintf(rel, sizeof rel, "layers/%s/pool_%s_k.f32", cs, masked ? "pad" : "nomask");
				check(rel, tape.kp, rel, 0, tp * D);
				if (masked) {
					int32_t *km;
					size_t nk;
					int same = 1;
					snprintf(rel, sizeof rel, "layers/%s/pool_pad_v.f32", cs);
					check(rel, tape.vp, rel, 0, tp * D);
					snprintf(rel, sizeof rel, "layers/%s/pool_pad_cross.f32", cs);
					check(rel, cross, rel, 0, T * D);
					snprintf(rel, sizeof rel, "layers/%s/pool_pad_kmask.i32", cs);
					km = golden(rel, &nk);
					if (T_OK(km && nk == tp, "%s: %zu pooled keys", rel, nk))
						for (size_t j = 0; j < tp; j++)
							same &= (km[j] != 0) == (tape.pm[j] != 0);
					T_OK(same, "%s: the pooled key mask", rel);
					free(km);
				}
			}
next:
			poolattn_tape_free(&tape);
		}
out:
	free(x0);
	free(x);
	free(a);
	free(cross);
	free(mask);
	free(pad);
}

static void test_layers(void)
{
	lc_err err;
	lc_model *m = model_open(dir_fs, 0, &err);

	if (!T_OK(m != NULL, "%s", err.msg))
		return;
	T_EQ_S(model_config(m)->arch->name, "bart-ls");
	for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
		size_t n;
		int32_t *mask;
		char rel[64];
		snprintf(rel, sizeof rel, "layers/%s/mask.i32", lens[k]);
		mask = golden(rel, &n);
		if (T_OK(mask != NULL, "%s", rel))
			layers_case(m, lens[k], 0, n, Tp_of[k]);
		free(mask);
	}
	layers_case(m, "batch", 0, 112, 10);
	layers_case(m, "batch", 1, 112, 10);
	model_free(m);
}

/* stack/<case>, document b of B: every layer's real rows (all T rows when
 * the document fills the case's length, as the single cases do) */
static void stack_case(lc_model *m, lc_encoder *e, const char *cs, size_t b, size_t B)
{
	char rel[128], what[160];
	size_t n;
	int32_t *tok = NULL, *mask = NULL;
	int64_t L = 0, T, Tw;
	lc_err err;

	snprintf(rel, sizeof rel, "stack/%s/tokens.i32", cs);
	tok = golden(rel, &n);
	snprintf(rel, sizeof rel, "stack/%s/mask.i32", cs);
	mask = golden(rel, &n);
	if (!T_OK(tok && mask, "%s", cs))
		goto out;
	Tw = (int64_t)(n / B);
	while (L < Tw && mask[b * (size_t)Tw + (size_t)L] != 1)
		L++;
	for (int nl = 0; nl <= 3; nl++) {
		float *rows = NULL;
		static const char *const names[] = { "emb", "layer0", "layer1", "layer2" };
		int64_t keep;
		if (!T_OK(bartls_encode_layers(m, tok + b * (size_t)Tw, L, nl, &rows, &T, &err) == 0,
		          "%s: %s", cs, err.msg))
			continue;
		keep = B == 1 ? T : L;
		if (B == 1)
			T_EQ_I(T, Tw);
		snprintf(rel, sizeof rel, "stack/%s/%s.f32", cs, names[nl]);
		snprintf(what, sizeof what, "stack/%s[%zu] %s (%lld rows)", cs, b, names[nl],
		         (long long)keep);
		check(what, rows, rel, b * (size_t)Tw * D, (size_t)keep * D);
		free(rows);
	}
	{
		float *out = malloc((size_t)L * D * sizeof *out);
		T_EQ_I(encoder_out_len(e, L), L);
		T_OK(encoder_run(e, tok + b * (size_t)Tw, L, out, NULL, NULL, &err) == 0, "%s", err.msg);
		snprintf(rel, sizeof rel, "stack/%s/layer2.f32", cs);
		snprintf(what, sizeof what, "stack/%s[%zu] encoder_run, 2 threads", cs, b);
		check(what, out, rel, b * (size_t)Tw * D, (size_t)L * D);
		free(out);
	}
out:
	free(tok);
	free(mask);
}

static void test_stack(void)
{
	lc_err err;
	lc_model *m = model_open(dir_fs, 0, &err);
	lc_encoder *e = m ? encoder_new(m, 2, &err) : NULL;

	if (!T_OK(m && e, "%s", err.msg))
		goto out;
	for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
		stack_case(m, e, lens[k], 0, 1);
	stack_case(m, e, "batch", 0, 2);
	stack_case(m, e, "batch", 1, 2);
out:
	encoder_free(e);
	model_free(m);
}

/* The training encoder (arch_bart_ls.train's enc_fw, dropout 0) on the
 * same cases: its L states are layer2's real rows. */
static void train_stack_case(lc_model *m, const char *cs, size_t b, size_t B)
{
	const lc_config *c = model_config(m);
	const lc_train_ops *ops = c->arch->train;
	char rel[128], what[160];
	size_t n;
	int32_t *tok = NULL, *mask = NULL;
	int64_t L = 0, Tw, Le = 0;
	lc_arena a = { 0 };
	uint64_t rng = 1;
	float *E = NULL;
	void *sh = NULL;
	lc_err err;

	snprintf(rel, sizeof rel, "stack/%s/tokens.i32", cs);
	tok = golden(rel, &n);
	snprintf(rel, sizeof rel, "stack/%s/mask.i32", cs);
	mask = golden(rel, &n);
	if (!T_OK(tok && mask && ops, "%s: goldens and training ops", cs))
		goto out;
	Tw = (int64_t)(n / B);
	while (L < Tw && mask[b * (size_t)Tw + (size_t)L] != 1)
		L++;
	if (!T_OK((sh = ops->shared_new(c, 1, &err)) &&
	          ops->enc_fw(sh, 0, model_weights(m), tok + b * (size_t)Tw, L, &a, 0, &rng, &E,
	                      &Le, &err), "%s: %s", cs, err.msg))
		goto out;
	T_EQ_I(Le, L);
	snprintf(rel, sizeof rel, "stack/%s/layer2.f32", cs);
	snprintf(what, sizeof what, "stack/%s[%zu] training encoder (%lld rows)", cs, b,
	         (long long)L);
	check(what, E, rel, b * (size_t)Tw * D, (size_t)L * D);
out:
	if (sh)
		ops->shared_free(sh);
	lc_arena_free(&a);
	free(tok);
	free(mask);
}

static void test_train_stack(void)
{
	lc_err err;
	lc_model *m = model_open(dir_fs, 0, &err);
	double w0 = worst;

	if (!T_OK(m != NULL, "%s", err.msg))
		return;
	worst = 0;
	for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
		train_stack_case(m, lens[k], 0, 1);
	train_stack_case(m, "batch", 0, 2);
	train_stack_case(m, "batch", 1, 2);
	printf("# training encoder vs the stack goldens: %.3g (relative)\n", worst);
	worst = fmax(worst, w0);
	model_free(m);
}

/* The tensors the file of transformers-style names holds. */
static void hf_names(const st_file *f)
{
	T_OK(st_find(f, "model.encoder.layers.2.pool_attn.out_proj.bias") != NULL,
	     "HF name of a pooled layer's projection");
	T_OK(st_find(f, "model.shared.weight") && !st_find(f, "encoder.version"),
	     "HF names only");
	T_OK(!st_find(f, "model.encoder.layers.0.pool_attn.q_proj.weight"),
	     "no pooled attention in the block layer");
}

/* The transformers-style names (params_write, as lc-convert writes) give
 * the same states, bit for bit. */
static void test_hf_names(void)
{
	char dir[] = "/tmp/lc-test-bartls-hf-XXXXXX";
	size_t n;
	int32_t *tok = golden("stack/L1000/tokens.i32", &n);

	t_oracle_hf_names(dir_fs, dir, "bartls/config.json", D, tok, hf_names);
	free(tok);
}

static void refuse(const char *keys, const char *want)
{
	t_oracle_refuse("bartls/config.json", keys, want);
}

static void test_refusals(void)
{
	lc_err err;
	lc_model *m = model_open(dir_fs, 0, &err);
	lc_encoder *e = m ? encoder_new(m, 1, &err) : NULL;
	int32_t ids[1025] = { 0 };
	float *out = malloc(1025 * D * sizeof *out);

	refuse("{\"pooling_layers\": 4}", "pooling_layers");
	/* the default 4 on fewer layers: found by fuzz_model */
	refuse("{\"pooling_layers\": null, \"encoder_layers\": 3}",
	       "\"pooling_layers\" is missing, and its default 4 is outside [0, 3]");
	refuse("{\"pool_padding\": 10}", "padding");
	refuse("{\"block_size\": 4, \"pool_padding\": 0}", "block_size 4");
	refuse("{\"block_size\": 0}", "block_size");
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


/* The conversion against the authors' initialize_models_long_denoising.py
 * (convert/): their tiny BART encoder (vocabulary 154, 64 positions) as a
 * BART directory, converted to vocabulary 200 and 1024 positions. */
static void test_convert(void)
{
	char src[] = "/tmp/lc-test-bartls-src-XXXXXX", dst[600] = "", path[700];
	static const char cfg[] =
		"{\"architectures\": [\"BartForConditionalGeneration\"], \"model_type\": \"bart\", "
		"\"d_model\": 64, \"encoder_layers\": 3, \"decoder_layers\": 0, "
		"\"encoder_attention_heads\": 4, \"decoder_attention_heads\": 4, "
		"\"encoder_ffn_dim\": 128, \"decoder_ffn_dim\": 128, \"vocab_size\": 154, "
		"\"max_position_embeddings\": 64, \"scale_embedding\": false}\n";
	static float dpos[66 * D], ones[D], zeros[D];
	lc_err err;
	st_file *f = NULL, *g = NULL;
	st_tensor *t = NULL;
	char (*names)[PARAM_NAME] = NULL;
	uint32_t n = 0, k;
	bartlsconv_opts o;
	size_t ng;
	float *want;
	const st_tensor *x, *y;
	int copied = 0, same = 1;

	if (!T_OK(mkdtemp(src) && (f = st_open(t_data("bartls/bartls/convert/bart_encoder.safetensors"), &err)),
	          "setup"))
		goto out;
	snprintf(path, sizeof path, "%s/config.json", src);
	T_OK(t_write_file(path, cfg, sizeof cfg - 1) == 0, "%s", path);
	k = st_count(f);
	t = calloc(k + 3, sizeof *t);
	names = calloc(k + 3, sizeof *names);
	for (uint32_t i = 0; i < k; i++) {
		const st_tensor *s = st_at(f, i);
		if (!strcmp(s->name, "encoder.version"))
			continue;
		t[n] = *s;
		snprintf(names[n], PARAM_NAME, "%s%s", "model.",
		         strcmp(s->name, "encoder.embed_tokens.weight") ? s->name : "shared.weight");
		t[n].name = names[n];
		n++;
	}
	for (int i = 0; i < D; i++)
		ones[i] = 1;
	t[n++] = (st_tensor){ .name = "model.decoder.embed_positions.weight", .dtype = ST_F32,
	                      .rank = 2, .dims = { 66, D }, .numel = 66 * D, .nbytes = sizeof dpos,
	                      .data = (const unsigned char *)dpos };
	t[n++] = (st_tensor){ .name = "model.decoder.layernorm_embedding.weight", .dtype = ST_F32,
	                      .rank = 1, .dims = { D }, .numel = D, .nbytes = sizeof ones,
	                      .data = (const unsigned char *)ones };
	t[n++] = (st_tensor){ .name = "model.decoder.layernorm_embedding.bias", .dtype = ST_F32,
	                      .rank = 1, .dims = { D }, .numel = D, .nbytes = sizeof zeros,
	                      .data = (const unsigned char *)zeros };
	snprintf(path, sizeof path, "%s/model.safetensors", src);
	if (!T_OK(st_write(path, t, n, &err) == 0, "%s", err.msg))
		goto out;
	bartlsconv_opts_default(&o);
	o.max_len = 1024;
	o.block_size = 16;
	o.pooling_layers = 2;
	o.vocab_size = 200;
	snprintf(dst, sizeof dst, "%s/ls", src);
	if (!T_OK(bartls_convert(src, dst, &o, &err) == 0, "%s", err.msg))
		goto out;
	snprintf(path, sizeof path, "%s/model.safetensors", dst);
	if (!T_OK((g = st_open(path, &err)) != NULL, "%s", err.msg))
		goto out;
	want = golden("convert/long_embed_tokens.f32", &ng);
	x = st_find(g, "model.shared.weight");
	T_OK(want && x && x->nbytes == ng * 4 && !memcmp(x->data, want, x->nbytes),
	     "the embeddings as the authors' (rows beyond 154 = row 153)");
	free(want);
	want = golden("convert/long_embed_positions_from2.f32", &ng);
	x = st_find(g, "model.encoder.embed_positions.weight");
	y = st_find(f, "encoder.embed_positions.weight");
	T_OK(want && x && x->dims[0] == 1026 && ng == 1024 * D &&
	     !memcmp(x->data + 2 * D * 4, want, ng * 4), "positions 2.. as the authors' (tiled)");
	T_OK(x && y && !memcmp(x->data, y->data, 2 * D * 4), "positions 0 and 1 are BART's");
	free(want);
	x = st_find(g, "model.decoder.embed_positions.weight");
	T_OK(x && x->dims[0] == 66 && !memcmp(x->data, dpos, sizeof dpos), "decoder positions kept");
	for (uint32_t i = 0; i < st_count(f); i++) {
		char nm[PARAM_NAME];
		y = st_at(f, i);
		if (strstr(y->name, "embed_") || !strcmp(y->name, "encoder.version"))
			continue;
		snprintf(nm, sizeof nm, "model.%s", y->name);
		x = st_find(g, nm);
		same &= x && x->nbytes == y->nbytes && !memcmp(x->data, y->data, x->nbytes);
		copied++;
	}
	T_OK(same && copied == 50, "the %d copied tensors of report.json copied", copied);
	for (int l = 0; l < 3; l++)
		for (int p = 0; p < 4; p++) {
			static const char *const pr[] = { "q", "k", "v", "out" };
			char nm[PARAM_NAME];
			double s2 = 0, mx = 0;
			snprintf(nm, sizeof nm, "model.encoder.layers.%d.pool_attn.%s_proj.weight", l, pr[p]);
			x = st_find(g, nm);
			if (l == 0) {
				T_OK(!x, "%s: layer 0 is not pooled", nm);
				continue;
			}
			if (!T_OK(x && x->numel == D * D, "%s", nm))
				continue;
			for (uint64_t j = 0; j < x->numel; j++) {
				float v;
				memcpy(&v, x->data + 4 * j, 4);
				s2 += (double)v * v;
			}
			T_OK(fabs(sqrt(s2 / (double)x->numel) - 0.02) < 0.002, "%s: std %.4f", nm,
			     sqrt(s2 / (double)x->numel));
			snprintf(nm, sizeof nm, "model.encoder.layers.%d.pool_attn.%s_proj.bias", l, pr[p]);
			x = st_find(g, nm);
			for (uint64_t j = 0; x && j < x->numel; j++) {
				float v;
				memcpy(&v, x->data + 4 * j, 4);
				mx = fmax(mx, fabs(v));
			}
			T_OK(x && mx == 0, "%s is 0", nm);
		}
	{
		lc_model *m = model_open(dst, 0, &err);
		T_OK(m && model_config(m)->pooling_layers == 2 && model_config(m)->block_size == 16,
		     "the converted directory opens as BART-LS: %s", m ? "" : err.msg);
		model_free(m);
	}
out:
	st_close(f);
	st_close(g);
	free(t);
	free(names);
	if (dst[0])
		t_rm_dir(dst);
	snprintf(path, sizeof path, "%s/ls/tokenizer_config.json", src);
	unlink(path);
	t_rm_dir(src);
}

int main(void)
{
	if (!T_OK(mkdtemp(dir_fs) && t_oracle_fairseq_dir(dir_fs, "bartls/config.json", "bartls/bartls/model.safetensors", D, 1) == 0, "fairseq-named model directory"))
		return t_done();
	T_RUN(test_layers);
	T_RUN(test_stack);
	T_RUN(test_train_stack);
	T_RUN(test_hf_names);
	T_RUN(test_refusals);
	T_RUN(test_convert);
	t_rm_dir(dir_fs);
	printf("worst error relative to the golden's largest value: %.3g\n", worst);
	return t_done();
}
