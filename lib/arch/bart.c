/*
 * bart.c: BART's config.json, its parameters and its encoder (see bart.h);
 * the decoder is in bartdec.c.
 */
#include "arch/bart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/barttrain.h"
#include "arch/model.h"
#include "base/clock.h"
#include "base/parallel.h"
#include "compute/compute.h"
#include "compute/dev.h"
#include "ops/dropout.h"
#include "ops/lsgattn.h"
#include "ops/segattn.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "weights/config.h"

#define D1(a) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), 0, 0 })

/* ---------------------------------------------------------- config.json */

/* Keys of older BART-family configs that change the computation; lc
 * refuses a value other than BART's. */
static int refuse_bool(const json_t *root, const char *key, int want, const char *path,
                       lc_err *err)
{
	int v;

	if (cfg_bool(root, key, want, &v, path, err) < 0)
		return -1;
	if (v != want)
		return lc_fail(err, "%s: \"%s\": %s is not BART (an mBART-style or other variant lc "
		               "does not run)", path, key, v ? "true" : "false");
	return 0;
}

int bart_config(const json_t *root, const char *path, lc_config *c, lc_err *err)
{
	const char *act;
	int a, extra;

	if (cfg_int(root, "d_model", 1024, 1, 1 << 16, &c->d_model, path, err) ||
	    cfg_int(root, "encoder_layers", 12, 0, 1024, &c->num_layers, path, err) ||
	    cfg_int(root, "decoder_layers", 12, 0, 1024, &c->num_decoder_layers, path, err) ||
	    cfg_int(root, "encoder_attention_heads", 16, 1, 1024, &c->enc_heads, path, err) ||
	    cfg_int(root, "decoder_attention_heads", 16, 1, 1024, &c->num_heads, path, err) ||
	    cfg_int(root, "encoder_ffn_dim", 4096, 1, 1 << 20, &c->enc_ff, path, err) ||
	    cfg_int(root, "decoder_ffn_dim", 4096, 1, 1 << 20, &c->d_ff, path, err) ||
	    cfg_int(root, "vocab_size", 50265, 1, 1 << 24, &c->vocab_size, path, err) ||
	    cfg_int(root, "max_position_embeddings", 1024, 1, 1 << 24, &c->max_positions, path, err) ||
	    cfg_int(root, "pad_token_id", 1, 0, INT32_MAX, &c->pad_id, path, err) ||
	    cfg_int(root, "bos_token_id", 0, 0, INT32_MAX, &c->bos_id, path, err) ||
	    cfg_int(root, "eos_token_id", 2, 0, INT32_MAX, &c->eos_id, path, err) ||
	    cfg_int(root, "decoder_start_token_id", 2, 0, INT32_MAX, &c->decoder_start_id, path, err) ||
	    cfg_int(root, "extra_pos_embeddings", 2, 0, 1 << 20, &extra, path, err) ||
	    cfg_num(root, "init_std", 0.02, 0, 1e3, &c->init_std, path, err) ||
	    cfg_bool(root, "scale_embedding", 0, &c->scale_embedding, path, err) ||
	    cfg_bool(root, "tie_word_embeddings", 1, &c->tie_word_embeddings, path, err) ||
	    cfg_str(root, "activation_function", "gelu", &act, path, err) ||
	    refuse_bool(root, "is_encoder_decoder", 1, path, err) ||
	    refuse_bool(root, "normalize_before", 0, path, err) ||
	    refuse_bool(root, "add_final_layer_norm", 0, path, err) ||
	    refuse_bool(root, "static_position_embeddings", 0, path, err) ||
	    refuse_bool(root, "add_bias_logits", 0, path, err) ||
	    refuse_bool(root, "normalize_embedding", 1, path, err))
		return -1;
	if (extra != 2)
		return lc_fail(err, "%s: \"extra_pos_embeddings\" %d: BART's position offset is 2", path,
		               extra);
	/* the encoders embed pads (LSG's padding to whole blocks, the
	 * top-down transformer's): its row must exist */
	if (c->pad_id >= c->vocab_size)
		return lc_fail(err, "%s: pad_token_id %d is outside the vocabulary (vocab_size %d)",
		               path, c->pad_id, c->vocab_size);
	if ((a = act_parse(act)) < 0)
		return lc_fail(err, "%s: activation_function \"%s\" is not one lc has (gelu, gelu_new, "
		               "gelu_fast, gelu_pytorch_tanh, relu, silu, swish)", path, act);
	if (c->d_model % c->enc_heads || c->d_model % c->num_heads)
		return lc_fail(err, "%s: d_model %d is not a multiple of the attention heads (%d, %d)",
		               path, c->d_model, c->enc_heads, c->num_heads);
	c->act = (enum lc_act)a;
	c->d_kv = c->d_model / c->num_heads;
	c->eps = BART_EPS;
	return 0;
}

void bart_info(const lc_config *c, FILE *f)
{
	fprintf(f, "d_model\t%d\nencoder_layers\t%d\ndecoder_layers\t%d\n", c->d_model, c->num_layers,
	        c->num_decoder_layers);
	fprintf(f, "encoder_attention_heads\t%d\ndecoder_attention_heads\t%d\n", c->enc_heads,
	        c->num_heads);
	fprintf(f, "encoder_ffn_dim\t%d\ndecoder_ffn_dim\t%d\nvocab_size\t%d\n", c->enc_ff, c->d_ff,
	        c->vocab_size);
	fprintf(f, "max_position_embeddings\t%d\nactivation_function\t%s\nscale_embedding\t%d\n",
	        c->max_positions, act_name(c->act), c->scale_embedding);
	fprintf(f, "tie_word_embeddings\t%d\n", c->tie_word_embeddings);
	fprintf(f, "pad_id\t%d\nbos_id\t%d\neos_id\t%d\ndecoder_start_id\t%d\n", c->pad_id, c->bos_id,
	        c->eos_id, c->decoder_start_id);
}

/* ----------------------------------------------------------- parameters */

void bart_declare_attn(lc_params *p, bart_attn *a, int d, const char *prefix, const char *ln)
{
	const unsigned nd = PARAM_NO_DECAY;

	params_add(p, &a->wk, param_init_matrix, 0, D2(d, d), "%s.k_proj.weight", prefix);
	params_add(p, &a->bk, param_init_bias, nd, D1(d), "%s.k_proj.bias", prefix);
	params_add(p, &a->wv, param_init_matrix, 0, D2(d, d), "%s.v_proj.weight", prefix);
	params_add(p, &a->bv, param_init_bias, nd, D1(d), "%s.v_proj.bias", prefix);
	params_add(p, &a->wq, param_init_matrix, 0, D2(d, d), "%s.q_proj.weight", prefix);
	params_add(p, &a->bq, param_init_bias, nd, D1(d), "%s.q_proj.bias", prefix);
	params_add(p, &a->wo, param_init_matrix, 0, D2(d, d), "%s.out_proj.weight", prefix);
	params_add(p, &a->bo, param_init_bias, nd, D1(d), "%s.out_proj.bias", prefix);
	params_add(p, &a->ln_w, param_init_norm, nd, D1(d), "%s.weight", ln);
	params_add(p, &a->ln_b, param_init_bias, nd, D1(d), "%s.bias", ln);
}

void bart_declare_ffn(lc_params *p, bart_ffn *f, int d, int ffn, const char *prefix)
{
	const unsigned nd = PARAM_NO_DECAY;

	params_add(p, &f->w1, param_init_matrix, 0, D2(ffn, d), "%s.fc1.weight", prefix);
	params_add(p, &f->b1, param_init_bias, nd, D1(ffn), "%s.fc1.bias", prefix);
	params_add(p, &f->w2, param_init_matrix, 0, D2(d, ffn), "%s.fc2.weight", prefix);
	params_add(p, &f->b2, param_init_bias, nd, D1(d), "%s.fc2.bias", prefix);
	params_add(p, &f->ln_w, param_init_norm, nd, D1(d), "%s.final_layer_norm.weight", prefix);
	params_add(p, &f->ln_b, param_init_bias, nd, D1(d), "%s.final_layer_norm.bias", prefix);
}

void bart_weights_free(void *p)
{
	bart_weights *w = p;

	if (!w)
		return;
	free(w->enc);
	free(w->dec);
	free(w);
}

/* The one declaration of BART's parameters, under transformers' names
 * (BartForConditionalGeneration's state dict). */
void *bart_declare(const lc_config *c, lc_params *p)
{
	bart_weights *w = calloc(1, sizeof *w);

	if (!w || bart_declare_into(c, p, w) < 0) {
		bart_weights_free(w);
		return NULL;
	}
	bart_declare_fairseq_names(p, c);
	return w;
}

/* transformers' BartPretrainedModel._init_weights, by module kind: every
 * matrix (linear weights, lm_head, the embeddings and position tables)
 * N(0, init_std), the shared embedding's padding row 0; biases 0;
 * LayerNorm weights 1; final_logits_bias (a buffer) 0. */
void bart_init_hf(const lc_config *c, lc_params *p, uint32_t first)
{
	for (uint32_t k = first; k < params_count(p); k++) {
		const lc_param *e = params_at(p, k);
		size_t n = strlen(e->name);
		int weight = n > 7 && !strcmp(e->name + n - 7, ".weight");
		int norm = strstr(e->name, "layer_norm") || strstr(e->name, "layernorm");

		if (!strcmp(e->name, "final_logits_bias") || !weight)
			params_set_init(p, k, param_init_zero, 0, -1);
		else if (norm)
			params_set_init(p, k, param_init_one, 0, -1);
		else
			params_set_init(p, k, NULL, c->init_std, !strcmp(e->name, "model.shared.weight") ?
			                c->pad_id : -1);
	}
}

int bart_declare_into(const lc_config *c, lc_params *p, bart_weights *w)
{
	int d = c->d_model, npos = c->max_positions + 2;
	const unsigned nd = PARAM_NO_DECAY;
	uint32_t first = params_count(p);

	if (!(w->enc = calloc((size_t)(c->num_layers ? c->num_layers : 1), sizeof *w->enc)) ||
	    !(w->dec = calloc((size_t)(c->num_decoder_layers ? c->num_decoder_layers : 1),
	                      sizeof *w->dec)))
		return -1;
	params_add(p, &w->shared, param_init_normal, 0, D2(c->vocab_size, d), "model.shared.weight");
	params_alias(p, "model.encoder.embed_tokens.weight", "model.shared.weight");
	params_alias(p, "model.decoder.embed_tokens.weight", "model.shared.weight");
	if (c->tie_word_embeddings)
		params_alias(p, "lm_head.weight", "model.shared.weight");
	else
		params_add(p, &w->lm_head, param_init_normal, 0, D2(c->vocab_size, d), "lm_head.weight");
	/* a buffer, zero in new models: checkpoints may lack it */
	params_add(p, &w->final_logits_bias, param_init_bias, nd | PARAM_OPTIONAL,
	           D2(1, c->vocab_size), "final_logits_bias");
	params_add(p, &w->enc_pos, param_init_normal, 0, D2(npos, d), "model.encoder.embed_positions.weight");
	params_add(p, &w->enc_ln_w, param_init_norm, nd, D1(d), "model.encoder.layernorm_embedding.weight");
	params_add(p, &w->enc_ln_b, param_init_bias, nd, D1(d), "model.encoder.layernorm_embedding.bias");
	for (int i = 0; i < c->num_layers; i++) {
		char pre[64], ln[96];
		snprintf(pre, sizeof pre, "model.encoder.layers.%d", i);
		snprintf(ln, sizeof ln, "%s.self_attn_layer_norm", pre);
		snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ".self_attn");
		bart_declare_attn(p, &w->enc[i].sa, d, pre, ln);
		snprintf(pre, sizeof pre, "model.encoder.layers.%d", i);
		bart_declare_ffn(p, &w->enc[i].ff, d, c->enc_ff, pre);
	}
	params_add(p, &w->dec_pos, param_init_normal, 0, D2(bart_dec_positions(c) + 2, d),
	           "model.decoder.embed_positions.weight");
	params_add(p, &w->dec_ln_w, param_init_norm, nd, D1(d), "model.decoder.layernorm_embedding.weight");
	params_add(p, &w->dec_ln_b, param_init_bias, nd, D1(d), "model.decoder.layernorm_embedding.bias");
	for (int i = 0; i < c->num_decoder_layers; i++) {
		char pre[64], at[96], ln[96];
		snprintf(pre, sizeof pre, "model.decoder.layers.%d", i);
		snprintf(at, sizeof at, "%s.self_attn", pre);
		snprintf(ln, sizeof ln, "%s.self_attn_layer_norm", pre);
		bart_declare_attn(p, &w->dec[i].sa, d, at, ln);
		snprintf(at, sizeof at, "%s.encoder_attn", pre);
		snprintf(ln, sizeof ln, "%s.encoder_attn_layer_norm", pre);
		bart_declare_attn(p, &w->dec[i].ca, d, at, ln);
		bart_declare_ffn(p, &w->dec[i].ff, d, c->d_ff, pre);
	}
	bart_init_hf(c, p, first);
	return 0;
}

/* fairseq's names of the parameters declared so far (its checkpoints'
 * state dicts): transformers' BART names are fairseq's behind "model.",
 * except the tied embedding, which fairseq holds as encoder.embed_tokens,
 * decoder.embed_tokens and decoder.output_projection; the encoder's and
 * decoder's "version" buffers are not parameters. Names already known
 * are left alone, so a declaration built on this one may call it again.
 * Classification heads, which generation does not use, are skipped. */
void bart_declare_fairseq_names(lc_params *p, const lc_config *c)
{
	static const char *const shared[] = { "encoder.embed_tokens.weight",
	                                      "decoder.embed_tokens.weight" };
	uint32_t n = params_count(p);

	for (uint32_t i = 0; i < n; i++) {
		const char *name = params_at(p, i)->name;
		if (!strncmp(name, "model.", 6) && strcmp(name, "model.shared.weight") &&
		    !params_find(p, name + 6))
			params_alias(p, name + 6, name);
	}
	for (int k = 0; k < 2; k++)
		if (!params_find(p, shared[k]))
			params_alias(p, shared[k], "model.shared.weight");
	if (!params_find(p, "decoder.output_projection.weight"))
		params_alias(p, "decoder.output_projection.weight",
		             c->tie_word_embeddings ? "model.shared.weight" : "lm_head.weight");
	params_ignore(p, "encoder.version");
	params_ignore(p, "decoder.version");
	/* sentence classification heads (bart.large.mnli): not for generation */
	params_ignore(p, "classification_heads.*");
}

/* ------------------------------------------------------------- encoder */

int64_t bart_keep_nonpad(const lc_config *c, const int32_t *ids, int64_t L, float *out)
{
	int64_t d = c->d_model, n = 0;

	for (int64_t i = 0; i < L; i++)
		if (ids[i] != c->pad_id) {
			if (n != i)
				memmove(out + n * d, out + i * d, (size_t)d * sizeof *out);
			n++;
		}
	return n ? n : L;   /* all pads: nothing moved, every row kept */
}

void bart_embed_row(const lc_config *c, const float *shared, const float *pos, int32_t id,
                    int64_t t, float scale, float *row)
{
	const float *tok = shared + (int64_t)id * c->d_model, *p = pos + (t + 2) * c->d_model;

	for (int j = 0; j < c->d_model; j++)
		row[j] = tok[j] * scale + p[j];
}

typedef struct benc {
	const lc_config *c;
	const bart_weights *W;
	int d, H, dk, ff, threads;
} benc;

static void *enc_open(lc_model *m, int threads, lc_err *err)
{
	benc *e = calloc(1, sizeof *e);

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	e->c = model_config(m);
	e->W = model_weights(m);
	e->d = e->c->d_model;
	e->H = e->c->enc_heads;
	e->dk = e->d / e->H;
	e->ff = e->c->enc_ff;
	e->threads = threads < 1 ? 1 : threads;
	return e;
}

static void enc_close(void *e)
{
	free(e);
}

static int64_t enc_out_len(const void *e, int64_t L)
{
	(void)e;
	return L;
}

static int64_t enc_max_len(const void *p)
{
	return ((const benc *)p)->c->max_positions;
}

/* BART's self-attention: every query to every key (ops/lsgattn.h). */
static int full_attn_fw(void *ctx, int layer, float *q, const float *k, const float *v, int64_t R,
                        float *o, lc_err *err)
{
	const benc *e = ctx;

	(void)layer;
	return attn_full_fw(e->H, e->dk, 1.0f / sqrtf((float)e->dk), q, k, v, e->d, R, NULL, o,
	                    e->threads, err);
}

/* The same on the GPU (arch/bart_gpu.c): q, k, v, o there. */
static int full_attn_dev(void *ctx, int layer, const float *q, const float *k, const float *v,
                         int64_t R, float *o, lc_err *err)
{
	const benc *e = ctx;

	(void)layer;
	return sa_dense_dev(e->H, e->dk, 1.0f / sqrtf((float)e->dk), q, e->d, R, k, v, e->d, R,
	                    NULL, o, e->d, err);
}

/* The row-wise steps of a layer, split over threads by blocks of rows:
 * x = LN(x + t) (ln_w set), or h = act(h). Each row as computed alone. */
#define ROWS 64

typedef struct rows_job {
	const lc_config *c;
	float *x, *h;
	const float *t, *ln_w, *ln_b;
	int64_t R;
} rows_job;

static void rows_one(void *ctx, int64_t i, int tid)
{
	const rows_job *j = ctx;
	int64_t r0 = i * ROWS, n = j->R - r0 < ROWS ? j->R - r0 : ROWS;
	int d = j->c->d_model, ff = j->c->enc_ff;

	(void)tid;
	if (j->ln_w) {
		residual_add(j->x + r0 * d, j->x + r0 * d, j->t + r0 * d, NULL, n * d);
		layernorm_fw(j->x + r0 * d, n, d, j->ln_w, j->ln_b, j->c->eps, j->x + r0 * d, NULL, NULL);
	} else {
		act_fw(j->c->act, j->h + r0 * ff, NULL, n * ff, j->h + r0 * ff);
	}
}

static void rows_run(int nth, const lc_config *c, int64_t R, float *x, const float *t,
                     const float *ln_w, const float *ln_b, float *h)
{
	rows_job j = { c, x, h, t, ln_w, ln_b, R };

	par_for(nth, (R + ROWS - 1) / ROWS, rows_one, &j);
}

int bart_enc_layers(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
                    int nth, int gemm_only, bart_attn_fn attn, bart_attn_dev_fn attn_dev,
                    void *ctx, lc_err *err)
{
	return bart_enc_layers_post(c, W, x, R, nl, nth, gemm_only, attn, attn_dev, NULL, ctx, err);
}

int bart_enc_layers_post(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
                         int nth, int gemm_only, bart_attn_fn attn, bart_attn_dev_fn attn_dev,
                         bart_post_fn post, void *ctx, lc_err *err)
{
	int d = c->d_model, ff = c->enc_ff;
	float *q = NULL, *k = NULL, *v = NULL, *o = NULL, *t = NULL, *h = NULL;
	int rc = -1;

	if (nl < 0 || nl > c->num_layers)
		nl = c->num_layers;
	if (nl == 0)
		return 0;
	if (cmp_init(err) < 0)
		return -1;
	/* on the GPU when a layer's products (q, k, v, out_proj, the
	 * feed-forward) are worth it; 1: no memory there, the CPU's */
	if (!gemm_only && cmp_dev_on() &&
	    cmp_dev_worth(R * (4 * (int64_t)d * d + 2 * (int64_t)d * ff))) {
		int g = bart_gpu_layers(c, W, x, R, nl, attn, attn_dev, post, ctx, err);
		if (g <= 0)
			return g;
	}
	q = malloc((size_t)(R * d) * sizeof *q);
	k = malloc((size_t)(R * d) * sizeof *k);
	v = malloc((size_t)(R * d) * sizeof *v);
	o = malloc((size_t)(R * d) * sizeof *o);
	t = malloc((size_t)(R * d) * sizeof *t);
	h = malloc((size_t)(R * ff) * sizeof *h);
	if (!q || !k || !v || !o || !t || !h) {
		lc_fail(err, "out of memory (%lld rows)", (long long)R);
		goto out;
	}
	for (int li = 0; li < nl; li++) {
		const bart_enc_layer *Ly = &W->enc[li];

		linear_fw(q, x, Ly->sa.wq, Ly->sa.bq, R, d, d, 0.0f, nth);
		linear_fw(k, x, Ly->sa.wk, Ly->sa.bk, R, d, d, 0.0f, nth);
		linear_fw(v, x, Ly->sa.wv, Ly->sa.bv, R, d, d, 0.0f, nth);
		if (!gemm_only && attn(ctx, li, q, k, v, R, o, err) < 0)
			goto out;
		linear_fw(t, o, Ly->sa.wo, Ly->sa.bo, R, d, d, 0.0f, nth);
		if (post && post(ctx, li, t, R, err) < 0)
			goto out;
		if (!gemm_only)
			rows_run(nth, c, R, x, t, Ly->sa.ln_w, Ly->sa.ln_b, NULL);
		linear_fw(h, x, Ly->ff.w1, Ly->ff.b1, R, ff, d, 0.0f, nth);
		if (!gemm_only)
			rows_run(nth, c, R, NULL, NULL, NULL, NULL, h);
		linear_fw(t, h, Ly->ff.w2, Ly->ff.b2, R, d, ff, 0.0f, nth);
		if (!gemm_only)
			rows_run(nth, c, R, x, t, Ly->ff.ln_w, Ly->ff.ln_b, NULL);
	}
	rc = 0;
out:
	free(q);
	free(k);
	free(v);
	free(o);
	free(t);
	free(h);
	return rc;
}

/* The embeddings (then nlayers layers; nlayers < 0: all) of ids[L] into out [L, d].
 * gemm_only (ids NULL, out zeros): only the layers' matrix products, for
 * the benchmark's floor. */
static int encode(benc *e, const int32_t *ids, int64_t L, float *out, int nlayers, int gemm_only,
                  lc_err *err)
{
	const lc_config *c = e->c;
	const bart_weights *W = e->W;
	int d = e->d;
	float scale = c->scale_embedding ? sqrtf((float)d) : 1.0f;

	if (L < 1)
		return lc_fail(err, "empty input (no tokens)");
	if (L > c->max_positions)
		return lc_fail(err, "input of %lld tokens is longer than the model's %d positions "
		               "(max_position_embeddings)", (long long)L, c->max_positions);
	for (int64_t i = 0; ids && i < L; i++)
		if (ids[i] < 0 || ids[i] >= c->vocab_size)
			return lc_fail(err, "token %lld: id %ld is outside the vocabulary [0, %d)",
			               (long long)i, (long)ids[i], c->vocab_size);
	for (int64_t i = 0; !gemm_only && i < L; i++)
		bart_embed_row(c, W->shared, W->enc_pos, ids[i], i, scale, out + i * d);
	if (!gemm_only)
		layernorm_fw(out, L, d, W->enc_ln_w, W->enc_ln_b, c->eps, out, NULL, NULL);
	return bart_enc_layers(c, W, out, L, nlayers, e->threads, gemm_only, full_attn_fw,
	                       full_attn_dev, e, err);
}

static int enc_run(void *p, const int32_t *ids, int64_t L, float *out,
                   void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	benc *e = p;
	int rc = encode(e, ids, L, out, -1, 0, err);

	if (rc == 0 && progress)
		progress(ctx, e->c->num_layers, e->c->num_layers);
	return rc;
}

static int enc_gemm_only(void *p, int64_t L, double *seconds, lc_err *err)
{
	benc *e = p;
	float *out;
	double t0;
	int rc;

	if (L < 1 || L > e->c->max_positions)
		return lc_fail(err, "length %lld is outside [1, %d]", (long long)L, e->c->max_positions);
	if (!(out = calloc((size_t)L * (size_t)e->d, sizeof *out)))
		return lc_fail(err, "out of memory (%lld tokens)", (long long)L);
	t0 = clock_now();
	rc = encode(e, NULL, L, out, -1, 1, err);
	*seconds = clock_now() - t0;
	free(out);
	return rc;
}

int bart_encode_layers(lc_model *m, const int32_t *ids, int64_t L, float *out, int nlayers,
                       lc_err *err)
{
	benc *e = enc_open(m, 1, err);
	int rc;

	if (!e)
		return -1;
	rc = encode(e, ids, L, out, nlayers, 0, err);
	enc_close(e);
	return rc;
}

static const lc_enc_ops bart_enc_ops = {
	.open = enc_open, .close = enc_close, .out_len = enc_out_len, .max_len = enc_max_len,
	.run = enc_run, .gemm_only = enc_gemm_only,
};

/* ------------------------------------------------------------- decoder */

static void *dec_open(lc_model *m, lc_err *err)
{
	return bartdec_open(model_config(m), model_weights(m), err);
}

const lc_dec_ops bart_dec_ops = {
	dec_open, bartdec_close, bartdec_state_new, bartdec_state_free, bartdec_state_threads,
	bartdec_step, bartdec_reorder, bartdec_keep, bartdec_pos, bartdec_groups, 0,
};

/* ------------------------------------------------------------- the arch */

static const char *const hf_classes[] = { "BartForConditionalGeneration", NULL };

const lc_arch arch_bart = {
	.name = "bart",
	.hf_classes = hf_classes,
	.model_type = "bart",
	.config = bart_config,
	.declare = bart_declare,
	.weights_free = bart_weights_free,
	.info = bart_info,
	.enc = &bart_enc_ops,
	.dec = &bart_dec_ops,
	.train = &bart_train_ops,
	.hf_bart = 1,
};
