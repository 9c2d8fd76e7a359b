/*
 * topdown.c: the top-down transformer (Pang et al. 2022, "Long Document
 * Summarization with Top-down and Bottom-up Inference"), as the
 * unofficial implementation in facebookresearch/bart_ls computes it
 * (fairseq/models/long_transformers/top_down.py and block.py): BART whose
 * encoder runs
 *
 *   embeddings: as BART's; pads (ids == pad_token_id) use no position and
 *          their rows are zeroed after layernorm_embedding
 *   bottom-up layers (layers 0 .. n1-1): post-LN, block attention of
 *          window_size with position 0 a global token (ops/bartlsattn.h)
 *   segments: AvgPool1d(pool_kernel, pool_stride) over time of the last
 *          bottom-up output, no padding, S = (T - kernel) / stride + 1;
 *          pads are averaged in as they are; or AdaPool (pool_type
 *          "adapool"): the windows weighted by an importance tagger
 *          p_t = sigmoid(x_t . w + b), seg = sum p_t x_t / sum p_t
 *   segment layers (top_layers): post-LN, full attention over the S
 *          segments, no mask
 *   top-down layers (layers n1 .. n1+n3-1): a = block attention of x
 *          (out_proj included), c = MHA(query a, key = value = the
 *          segments) with cross_attn's projections, x = LN1(x + (a + c)/2),
 *          then the feed-forward
 *   output: the last top-down layer; no final LayerNorm
 *
 * The decoder is BART's (with max_decoder_position_embeddings, as
 * BART-LS). The authors' code refuses fewer than pool_kernel positions
 * (AvgPool1d has no window); lc pads such an input with pad tokens to
 * pool_kernel, as their data pipeline pads batches, and returns the real
 * rows (the oracle's pad32/L1 and L31 cases).
 *
 * Weight names: transformers-style "model.encoder.layers.N..." (N < n1:
 * bottom-up, then top-down, with .cross_attn.{q,k,v,out}_proj and
 * .cross_attn_layer_norm), "model.encoder.top_layers.M..." (segment
 * layers), "model.encoder.pool_tagger.{weight,bias}" (AdaPool), and the
 * same without "model." as fairseq writes them.
 */
#include "arch/topdown.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/barttrain.h"
#include "arch/model.h"
#include "base/clock.h"
#include "ops/bartlsattn.h"
#include "ops/linear.h"
#include "ops/lsgattn.h"
#include "ops/norm.h"
#include "ops/segattn.h"
#include "weights/config.h"

#define D1(a) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), 0, 0 })

/* ---------------------------------------------------------- config.json */

static int td_config(const json_t *root, const char *path, lc_config *c, lc_err *err)
{
	const char *kind;
	int n3, nl;

	if (bart_config(root, path, c, err) < 0)
		return -1;
	nl = c->num_layers;
	/* top_down_layers' default, the rest, is range-checked as a given value */
	if (cfg_int(root, "bottom_up_layers", 8, 0, 1024, &c->td_bottom_up, path, err) ||
	    cfg_int(root, "top_down_layers", nl - c->td_bottom_up, 0, 1024, &n3, path, err) ||
	    cfg_int(root, "segment_layers", 2, 0, 1024, &c->td_segment_layers, path, err) ||
	    cfg_int(root, "window_size", 1024, 1, 1 << 20, &c->block_size, path, err) ||
	    cfg_int(root, "pool_kernel", 32, 1, 1 << 20, &c->pool_kernel, path, err) ||
	    cfg_int(root, "pool_stride", 24, 1, 1 << 20, &c->pool_stride, path, err) ||
	    cfg_int(root, "max_segments", 0, 0, 1 << 24, &c->td_max_segments, path, err) ||
	    cfg_str(root, "pool_type", "avg", &kind, path, err) ||
	    cfg_int(root, "max_decoder_position_embeddings", c->max_positions, 1, 1 << 24,
	            &c->max_dec_positions, path, err))
		return -1;
	if (c->td_bottom_up + n3 != nl)
		return lc_fail(err, "%s: encoder_layers %d is not bottom_up_layers %d + top_down_layers "
		               "%d", path, nl, c->td_bottom_up, n3);
	if (strcmp(kind, "avg") && strcmp(kind, "adapool"))
		return lc_fail(err, "%s: pool_type \"%s\" is not \"avg\" or \"adapool\"", path, kind);
	c->td_adapool = !strcmp(kind, "adapool");
	c->pool_padding = 0;
	return 0;
}

static void td_info(const lc_config *c, FILE *f)
{
	bart_info(c, f);
	fprintf(f, "max_decoder_position_embeddings\t%d\nwindow_size\t%d\n", c->max_dec_positions,
	        c->block_size);
	fprintf(f, "bottom_up_layers\t%d\nsegment_layers\t%d\ntop_down_layers\t%d\n",
	        c->td_bottom_up, c->td_segment_layers, c->num_layers - c->td_bottom_up);
	fprintf(f, "pool_type\t%s\npool_kernel\t%d\npool_stride\t%d\nmax_segments\t%d\n",
	        c->td_adapool ? "adapool" : "avg", c->pool_kernel, c->pool_stride,
	        c->td_max_segments);
}

/* ----------------------------------------------------------- parameters */

static void td_weights_free(void *p)
{
	topdown_weights *w = p;

	if (!w)
		return;
	free(w->seg);
	free(w->cross);
	free(w->b.enc);
	free(w->b.dec);
	free(w);
}

static int n_td(const lc_config *c)
{
	return c->num_layers - c->td_bottom_up;
}

static void *td_declare(const lc_config *c, lc_params *p)
{
	topdown_weights *w = calloc(1, sizeof *w);
	int d = c->d_model;

	if (!w || bart_declare_into(c, p, &w->b) < 0 ||
	    !(w->seg = calloc((size_t)c->td_segment_layers + 1, sizeof *w->seg)) ||
	    !(w->cross = calloc((size_t)n_td(c) + 1, sizeof *w->cross))) {
		td_weights_free(w);
		return NULL;
	}
	for (int i = 0; i < n_td(c); i++) {
		char pre[96], ln[96];
		int li = c->td_bottom_up + i;
		snprintf(pre, sizeof pre, "model.encoder.layers.%d.cross_attn", li);
		snprintf(ln, sizeof ln, "model.encoder.layers.%d.cross_attn_layer_norm", li);
		bart_declare_attn(p, &w->cross[i], d, pre, ln);
	}
	for (int i = 0; i < c->td_segment_layers; i++) {
		char pre[96], ln[96];
		snprintf(pre, sizeof pre, "model.encoder.top_layers.%d.self_attn", i);
		snprintf(ln, sizeof ln, "model.encoder.top_layers.%d.self_attn_layer_norm", i);
		bart_declare_attn(p, &w->seg[i].sa, d, pre, ln);
		snprintf(pre, sizeof pre, "model.encoder.top_layers.%d", i);
		bart_declare_ffn(p, &w->seg[i].ff, d, c->enc_ff, pre);
	}
	/* new weights as BART's: N(0, init_std), zero biases, unit norms */
	bart_init_hf(c, p, 0);
	if (c->td_adapool) {
		/* zero: every weight sigmoid(0), AdaPool starts as the average */
		params_add(p, &w->tag_w, param_init_bias, PARAM_NO_DECAY, D2(1, d),
		           "model.encoder.pool_tagger.weight");
		params_add(p, &w->tag_b, param_init_bias, PARAM_NO_DECAY, D1(1),
		           "model.encoder.pool_tagger.bias");
	}
	bart_declare_fairseq_names(p, c);
	return w;
}

/* ------------------------------------------------------------- encoder */

typedef struct tdenc {
	const lc_config *c;
	const topdown_weights *W;
	int threads, dk;
	blkattn_spec bs;
	poolattn_spec ps;
	const unsigned char *pad;          /* [T] */
	int64_t T, S;
	const float *segs;                 /* [S, d], the segment layers' output */
	float *q, *k, *v, *o;              /* top-down scratch: [T, d], [S, d] x 2, [T, d] */
	int gemm_only;
	int layer0;                        /* the layer a one-layer call runs */
	topdown_stages *st;                /* tests: the stages, or NULL */
} tdenc;

static void enc_close(void *p)
{
	free(p);
}

static void *enc_open(lc_model *m, int threads, lc_err *err)
{
	tdenc *e = calloc(1, sizeof *e);
	const lc_config *c = model_config(m);

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	e->c = c;
	e->W = model_weights(m);
	e->threads = threads < 1 ? 1 : threads;
	e->dk = c->d_model / c->enc_heads;
	e->bs = (blkattn_spec){ c->enc_heads, e->dk, c->block_size, 1.0f / sqrtf((float)e->dk), 1 };
	e->ps = (poolattn_spec){ c->enc_heads, c->d_model, c->pool_kernel, c->pool_stride, 0 };
	return e;
}

static int64_t enc_out_len(const void *e, int64_t L)
{
	(void)e;
	return L;
}

/* The longest input: the position table, and max_segments when set. */
static int64_t td_max_len(const lc_config *c)
{
	int64_t n = c->max_positions;

	if (c->td_max_segments) {
		int64_t m = (int64_t)(c->td_max_segments - 1) * c->pool_stride + c->pool_kernel +
		            c->pool_stride - 1;
		if (m < n)
			n = m;
	}
	return n;
}

static int64_t enc_max_len(const void *p)
{
	return td_max_len(((const tdenc *)p)->c);
}

static int block_attn(void *ctx, int layer, float *q, const float *k, const float *v, int64_t R,
                      float *o, lc_err *err)
{
	tdenc *e = ctx;

	(void)layer;
	return blkattn_fw(&e->bs, q, k, v, e->c->d_model, R, e->pad, o, e->threads, err);
}

static int full_attn(void *ctx, int layer, float *q, const float *k, const float *v, int64_t R,
                     float *o, lc_err *err)
{
	tdenc *e = ctx;

	(void)layer;
	return attn_full_fw(e->c->enc_heads, e->dk, 1.0f / sqrtf((float)e->dk), q, k, v,
	                    e->c->d_model, R, NULL, o, e->threads, err);
}

/* The two on the GPU (arch/bart_gpu.c). */
static int block_attn_dev(void *ctx, int layer, const float *q, const float *k, const float *v,
                          int64_t R, float *o, lc_err *err)
{
	tdenc *e = ctx;

	(void)layer;
	return blkattn_fw_dev(&e->bs, q, k, v, e->c->d_model, R, e->pad, o, err);
}

static int full_attn_dev(void *ctx, int layer, const float *q, const float *k, const float *v,
                         int64_t R, float *o, lc_err *err)
{
	tdenc *e = ctx;
	int d = e->c->d_model;

	(void)layer;
	return sa_dense_dev(e->c->enc_heads, e->dk, 1.0f / sqrtf((float)e->dk), q, d, R, k, v, d, R,
	                    NULL, o, d, err);
}

static void keep(float **dst, const float *src, int64_t n)
{
	if ((*dst = malloc((size_t)n * sizeof **dst)))
		memcpy(*dst, src, (size_t)n * sizeof **dst);
}

/* Bottom-up layer 0's attention output, for the tests. */
static int bu_post(void *ctx, int layer, float *t, int64_t R, lc_err *err)
{
	tdenc *e = ctx;

	(void)err;
	if (e->st && e->layer0 + layer == 0 && !e->st->bu0_attn)
		keep(&e->st->bu0_attn, t, R * e->c->d_model);
	return 0;
}

/* Top-down layer `layer`: t = a becomes (a + c) / 2, c the attention of
 * a over the segments. */
static int td_post(void *ctx, int layer, float *t, int64_t R, lc_err *err)
{
	tdenc *e = ctx;
	const bart_attn *X = &e->W->cross[e->layer0 + layer];
	int d = e->c->d_model;
	int64_t S = e->S;

	linear_fw(e->q, t, X->wq, X->bq, R, d, d, 0.0f, e->threads);
	linear_fw(e->k, e->segs, X->wk, X->bk, S, d, d, 0.0f, e->threads);
	linear_fw(e->v, e->segs, X->wv, X->bv, S, d, d, 0.0f, e->threads);
	if (!e->gemm_only &&
	    segxattn_fw(e->c->enc_heads, d, e->q, R, e->k, e->v, S, e->o, e->threads, err) < 0)
		return -1;
	linear_fw(e->q, e->o, X->wo, X->bo, R, d, d, 0.0f, e->threads);
	if (!e->gemm_only)
		for (int64_t i = 0; i < R * d; i++)
			t[i] = (t[i] + e->q[i]) * 0.5f;
	return 0;
}

/* Layers of W (nl from `first`) over x [R, d], one call, or one layer at a
 * time when the tests keep every output in out[]. */
static int layers(tdenc *e, const bart_enc_layer *L0, int nl, float *x, int64_t R,
                  bart_attn_fn attn, bart_attn_dev_fn attn_dev, bart_post_fn post, float **out,
                  lc_err *err)
{
	lc_config c = *e->c;
	bart_weights W = e->W->b;

	c.num_layers = nl;
	W.enc = (bart_enc_layer *)L0;
	if (!out)
		return bart_enc_layers_post(&c, &W, x, R, nl, e->threads, e->gemm_only, attn,
		                            attn_dev, post, e, err);
	for (int i = 0; i < nl; i++) {
		int rc;
		W.enc = (bart_enc_layer *)L0 + i;
		c.num_layers = 1;
		e->layer0 = i;           /* post sees layer 0 each time */
		rc = bart_enc_layers_post(&c, &W, x, R, 1, e->threads, e->gemm_only, attn, attn_dev,
		                          post, e, err);
		e->layer0 = 0;
		if (rc < 0)
			return -1;
		keep(&out[i], x, R * e->c->d_model);
	}
	return 0;
}

/* ids [L] (NULL in gemm_only mode) through the encoder; *rows [T, d]
 * (T >= L) for the caller to free. */
static int encode(tdenc *e, const int32_t *ids, int64_t L, float **rows, lc_err *err)
{
	const lc_config *c = e->c;
	const topdown_weights *W = e->W;
	int d = c->d_model, n1 = c->td_bottom_up;
	int64_t T = L < c->pool_kernel ? c->pool_kernel : L, S, real = 0;
	float scale = c->scale_embedding ? sqrtf((float)d) : 1.0f, *x = NULL, *seg = NULL;
	float *p = NULL;
	unsigned char *pad = NULL;
	topdown_stages *st = e->st;
	int rc = -1;

	*rows = NULL;
	if (L < 1)
		return lc_fail(err, "empty input (no tokens)");
	if (L > td_max_len(c))
		return lc_fail(err, "input of %lld tokens is longer than the model allows (%lld: "
		               "max_position_embeddings %d, max_segments %d)", (long long)L,
		               (long long)td_max_len(c), c->max_positions, c->td_max_segments);
	for (int64_t i = 0; ids && i < L; i++)
		if (ids[i] < 0 || ids[i] >= c->vocab_size)
			return lc_fail(err, "token %lld: id %ld is outside the vocabulary [0, %d)",
			               (long long)i, (long)ids[i], c->vocab_size);
	S = poolattn_len(&e->ps, T);
	x = calloc((size_t)(T * d), sizeof *x);
	pad = calloc((size_t)T, 1);
	seg = calloc((size_t)(S * d), sizeof *seg);
	e->q = malloc((size_t)(T * d) * sizeof *e->q);
	e->o = malloc((size_t)(T * d) * sizeof *e->o);
	e->k = malloc((size_t)(S * d) * sizeof *e->k);
	e->v = malloc((size_t)(S * d) * sizeof *e->v);
	p = malloc((size_t)T * sizeof *p);
	if (!x || !pad || !seg || !e->q || !e->o || !e->k || !e->v || !p) {
		lc_fail(err, "out of memory (%lld tokens)", (long long)L);
		goto out;
	}
	for (int64_t i = 0; i < T; i++)
		pad[i] = i >= L || (ids && ids[i] == c->pad_id);
	if (!e->gemm_only) {
		for (int64_t i = 0; i < L; i++)
			if (!pad[i])
				bart_embed_row(c, W->b.shared, W->b.enc_pos, ids[i], real++, scale, x + i * d);
		layernorm_fw(x, L, d, W->b.enc_ln_w, W->b.enc_ln_b, c->eps, x, NULL, NULL);
		for (int64_t i = 0; i < T; i++)
			if (pad[i])
				memset(x + i * d, 0, (size_t)d * sizeof *x);
	}
	e->pad = pad;
	e->T = T;
	e->S = S;
	if (st) {
		st->T = T;
		st->S = S;
		st->nbu = n1;
		st->nseg = c->td_segment_layers;
		st->ntd = n_td(c);
		st->bu = calloc((size_t)n1 + 1, sizeof *st->bu);
		st->seg = calloc((size_t)st->nseg + 1, sizeof *st->seg);
		st->td = calloc((size_t)st->ntd + 1, sizeof *st->td);
		keep(&st->emb, x, T * d);
	}
	/* bu_post keeps what the tests look at (st) */
	if (layers(e, W->b.enc, n1, x, T, block_attn, block_attn_dev, st ? bu_post : NULL,
	           st ? st->bu : NULL, err) < 0)
		goto out;
	if (!e->gemm_only) {
		if (c->td_adapool)
			adapool_fw(&e->ps, x, T, W->tag_w, W->tag_b[0], p, seg, e->threads);
		else
			segpool_fw(&e->ps, x, T, seg, e->threads);
	}
	if (st)
		keep(&st->seg_pool, seg, S * d);
	if (layers(e, W->seg, c->td_segment_layers, seg, S, full_attn, full_attn_dev, NULL,
	           st ? st->seg : NULL, err) < 0)
		goto out;
	e->segs = seg;
	if (layers(e, W->b.enc + n1, n_td(c), x, T, block_attn, block_attn_dev, td_post,
	           st ? st->td : NULL, err) < 0)
		goto out;
	*rows = x;
	x = NULL;
	rc = 0;
out:
	e->pad = NULL;
	e->segs = NULL;
	free(x);
	free(pad);
	free(seg);
	free(p);
	free(e->q);
	free(e->o);
	free(e->k);
	free(e->v);
	e->q = e->o = e->k = e->v = NULL;
	return rc;
}

static int enc_run(void *p, const int32_t *ids, int64_t L, float *out,
                   void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	tdenc *e = p;
	float *x;
	int n = e->c->num_layers + e->c->td_segment_layers;

	if (encode(e, ids, L, &x, err) < 0)
		return -1;
	memcpy(out, x, (size_t)(L * e->c->d_model) * sizeof *out);
	free(x);
	if (progress)
		progress(ctx, n, n);
	return 0;
}

static int64_t enc_keep(const void *p, const int32_t *ids, int64_t L, float *out)
{
	return bart_keep_nonpad(((const tdenc *)p)->c, ids, L, out);
}

static int enc_gemm_only(void *p, int64_t L, double *seconds, lc_err *err)
{
	tdenc *e = p;
	float *x;
	double t0 = clock_now();
	int rc;

	e->gemm_only = 1;
	rc = encode(e, NULL, L, &x, err);
	e->gemm_only = 0;
	*seconds = clock_now() - t0;
	free(x);
	return rc;
}

int topdown_encode_stages(lc_model *m, const int32_t *ids, int64_t L, topdown_stages *st,
                          lc_err *err)
{
	tdenc *e = enc_open(m, 1, err);
	float *x;
	int rc;

	memset(st, 0, sizeof *st);
	if (!e)
		return -1;
	e->st = st;
	rc = encode(e, ids, L, &x, err);
	free(x);
	enc_close(e);
	return rc;
}

static void free_list(float **v, int n)
{
	for (int i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void topdown_stages_free(topdown_stages *st)
{
	free(st->emb);
	free(st->bu0_attn);
	free(st->seg_pool);
	free_list(st->bu, st->nbu);
	free_list(st->seg, st->nseg);
	free_list(st->td, st->ntd);
	memset(st, 0, sizeof *st);
}

static const lc_enc_ops td_enc_ops = {
	.open = enc_open, .close = enc_close, .out_len = enc_out_len, .max_len = enc_max_len,
	.keep = enc_keep,
	.run = enc_run, .gemm_only = enc_gemm_only,
};

/* ------------------------------------------------------------ training */

/* The encoder in training (barttrain.h's pieces): the embeddings over
 * R = max(L, pool_kernel) rows (pads zero), the bottom-up layers with the
 * global block attention, the pooling, the segment layers with BART's full
 * attention, the top-down layers with the cross-attention as the hook
 * after out_proj. Rows past L are pads, as in inference. */

typedef struct td_train {
	const lc_config *c;
	const topdown_weights *W;
	topdown_weights *G;                /* backward only */
	blkattn_spec bs;
	poolattn_spec ps;
	const unsigned char *pad;          /* [R] */
	const float *segs;                 /* [S, d] the segment layers' output */
	float *dsegs;                      /* [S, d] backward: its gradient */
	int64_t S;
	lc_config cbu, cseg, ctd;          /* the three stacks' configs (num_layers) */
} td_train;

typedef struct td_tape {
	int64_t L, R, S;
	unsigned char *pad;
	void *emb, *bu, *seg, *td;         /* barttrain's tapes */
	float *xbu;                        /* [R, d] the bottom-up output */
	float *pool, *p;                   /* [S, d] segments, [R] AdaPool's weights */
	float *segs;                       /* [S, d] the segment layers' output */
} td_tape;

static int tdt_blk_fw(void *ctx, int layer, const float *q, const float *k, const float *v,
                      int64_t R, float *o, lc_arena *a, void **tape, lc_err *err)
{
	td_train *t = ctx;

	(void)layer; (void)a; (void)tape;
	return blkattn_fw(&t->bs, q, k, v, t->c->d_model, R, t->pad, o, 1, err);
}

static int tdt_blk_bw(void *ctx, int layer, void *tape, const float *q, const float *k,
                      const float *v, int64_t R, float *dout, float *dq, float *dk, float *dv,
                      lc_err *err)
{
	td_train *t = ctx;

	(void)layer; (void)tape;
	return blkattn_bw(&t->bs, q, k, v, t->c->d_model, R, t->pad, dout, dq, dk, dv, 1, err);
}

/* What the cross-attention keeps: a (the block attention's output), its
 * query, the segments' keys and values, the attention's output. */
typedef struct tdx_tape {
	float *a, *q, *k, *v, *o;
} tdx_tape;

static int tdt_post_fw(void *ctx, int layer, float *t, int64_t R, lc_arena *a, void **tape,
                       lc_err *err)
{
	td_train *tt = ctx;
	const bart_attn *X = &tt->W->cross[layer];
	int d = tt->c->d_model;
	int64_t S = tt->S;
	tdx_tape *x = lc_arena_bytes(a, sizeof *x);
	float *cx;

	if (!x || !(x->a = lc_arena_f32(a, R * d)) || !(x->q = lc_arena_f32(a, R * d)) ||
	    !(x->k = lc_arena_f32(a, S * d)) || !(x->v = lc_arena_f32(a, S * d)) ||
	    !(x->o = lc_arena_f32(a, R * d)) || !(cx = lc_arena_f32(a, R * d)))
		return lc_fail(err, "out of memory (top-down layer, %lld rows)", (long long)R);
	memcpy(x->a, t, (size_t)(R * d) * sizeof *t);
	linear_fw(x->q, t, X->wq, X->bq, R, d, d, 0.0f, 1);
	linear_fw(x->k, tt->segs, X->wk, X->bk, S, d, d, 0.0f, 1);
	linear_fw(x->v, tt->segs, X->wv, X->bv, S, d, d, 0.0f, 1);
	if (segxattn_fw(tt->c->enc_heads, d, x->q, R, x->k, x->v, S, x->o, 1, err) < 0)
		return -1;
	linear_fw(cx, x->o, X->wo, X->bo, R, d, d, 0.0f, 1);
	for (int64_t i = 0; i < R * d; i++)
		t[i] = (t[i] + cx[i]) * 0.5f;
	*tape = x;
	return 0;
}

static int tdt_post_bw(void *ctx, int layer, void *tape, float *dt, int64_t R, lc_err *err)
{
	td_train *tt = ctx;
	const bart_attn *X = &tt->W->cross[layer];
	bart_attn *GX = &tt->G->cross[layer];
	tdx_tape *x = tape;
	int d = tt->c->d_model;
	int64_t S = tt->S;
	lc_arena ar = { 0 };
	float *dc = lc_arena_f32(&ar, R * d), *dO = lc_arena_f32(&ar, R * d);
	float *dq = lc_arena_f32(&ar, R * d), *dk = lc_arena_f32(&ar, S * d);
	float *dv = lc_arena_f32(&ar, S * d);
	int rc = -1;

	if (!lc_arena_ok(&ar)) {
		lc_fail(err, "out of memory (top-down layer, %lld rows)", (long long)R);
		goto out;
	}
	/* t = (a + c) / 2 */
	for (int64_t i = 0; i < R * d; i++)
		dc[i] = dt[i] *= 0.5f;
	linear_bw(dc, x->o, X->wo, R, d, d, dO, GX->wo, GX->bo);
	if (segxattn_bw(tt->c->enc_heads, d, x->q, R, x->k, x->v, S, dO, dq, dk, dv, 1, err) < 0)
		goto out;
	linear_bw(dq, x->a, X->wq, R, d, d, dt, GX->wq, GX->bq);
	linear_bw(dk, tt->segs, X->wk, S, d, d, tt->dsegs, GX->wk, GX->bk);
	linear_bw(dv, tt->segs, X->wv, S, d, d, tt->dsegs, GX->wv, GX->bv);
	rc = 0;
out:
	lc_arena_free(&ar);
	return rc;
}

static void tdt_init(td_train *t, const lc_config *c, const topdown_weights *W)
{
	int dk = c->d_model / c->enc_heads;

	memset(t, 0, sizeof *t);
	t->c = c;
	t->W = W;
	t->bs = (blkattn_spec){ c->enc_heads, dk, c->block_size, 1.0f / sqrtf((float)dk), 1 };
	t->ps = (poolattn_spec){ c->enc_heads, c->d_model, c->pool_kernel, c->pool_stride, 0 };
	t->cbu = t->cseg = t->ctd = *c;
	t->cbu.num_layers = c->td_bottom_up;
	t->cseg.num_layers = c->td_segment_layers;
	t->ctd.num_layers = n_td(c);
}

static void *tr_enc_fw(void *sh, int part, const void *Wv, const int32_t *src, int64_t L,
                       lc_arena *a, double p, uint64_t *rng, float **E, int64_t *Le, lc_err *err)
{
	const lc_config *c = sh;
	const topdown_weights *W = Wv;
	td_train t;
	bart_sa_train sbu, sseg, std;
	td_tape *tp = lc_arena_bytes(a, sizeof *tp);
	int d = c->d_model;
	float *x;

	(void)part;
	tdt_init(&t, c, W);
	if (!tp)
		goto oom;
	tp->L = L;
	tp->R = L < c->pool_kernel ? c->pool_kernel : L;
	tp->S = t.S = poolattn_len(&t.ps, tp->R);
	if (!(tp->pad = lc_arena_bytes(a, tp->R)) || !(tp->pool = lc_arena_f32(a, tp->S * d)) ||
	    !(tp->p = lc_arena_f32(a, tp->R)))
		goto oom;
	for (int64_t i = 0; i < tp->R; i++)
		tp->pad[i] = i >= L;
	t.pad = tp->pad;
	sbu = (bart_sa_train){ .fw = tdt_blk_fw, .bw = tdt_blk_bw, .ctx = &t };
	sseg = (bart_sa_train){ .fw = bart_sa_full_fw, .bw = bart_sa_full_bw, .ctx = &t.cseg };
	std = (bart_sa_train){ .fw = tdt_blk_fw, .bw = tdt_blk_bw, .ctx = &t,
	                       .post_fw = tdt_post_fw, .post_bw = tdt_post_bw };
	if (!(tp->emb = bart_train_embed_fw(c, &W->b, src, L, tp->R, a, p, rng, &x, err)))
		return NULL;
	if (!(tp->bu = bart_train_layers_fw(&t.cbu, W->b.enc, &sbu, x, tp->R, a, p, rng, &tp->xbu,
	                                    err)))
		return NULL;
	if (c->td_adapool)
		adapool_fw(&t.ps, tp->xbu, tp->R, W->tag_w, W->tag_b[0], tp->p, tp->pool, 1);
	else
		segpool_fw(&t.ps, tp->xbu, tp->R, tp->pool, 1);
	if (!(tp->seg = bart_train_layers_fw(&t.cseg, W->seg, &sseg, tp->pool, tp->S, a, p, rng,
	                                     &tp->segs, err)))
		return NULL;
	t.segs = tp->segs;
	if (!(tp->td = bart_train_layers_fw(&t.ctd, W->b.enc + c->td_bottom_up, &std, tp->xbu,
	                                    tp->R, a, p, rng, E, err)))
		return NULL;
	*Le = L;
	return tp;
oom:
	lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
	return NULL;
}

static int tr_enc_bw(void *sh, int part, const void *Wv, void *Gv, void *tape, const float *dE,
                     lc_err *err)
{
	const lc_config *c = sh;
	const topdown_weights *W = Wv;
	topdown_weights *G = Gv;
	td_tape *tp = tape;
	td_train t;
	bart_sa_train sbu, sseg, std;
	int d = c->d_model;
	lc_arena ar = { 0 };
	float *dx = lc_arena_f32(&ar, tp->R * d), *dp = lc_arena_f32(&ar, tp->S * d);
	int rc = -1;

	(void)part;
	tdt_init(&t, c, W);
	t.G = G;
	t.pad = tp->pad;
	t.S = tp->S;
	t.segs = tp->segs;
	t.dsegs = dp;
	if (!lc_arena_ok(&ar)) {
		lc_fail(err, "out of memory (source of %lld tokens)", (long long)tp->L);
		goto out;
	}
	sbu = (bart_sa_train){ .fw = tdt_blk_fw, .bw = tdt_blk_bw, .ctx = &t };
	sseg = (bart_sa_train){ .fw = bart_sa_full_fw, .bw = bart_sa_full_bw, .ctx = &t.cseg };
	std = (bart_sa_train){ .fw = tdt_blk_fw, .bw = tdt_blk_bw, .ctx = &t,
	                       .post_fw = tdt_post_fw, .post_bw = tdt_post_bw };
	/* the pads' rows pass no gradient from the output: only the L states are used */
	memcpy(dx, dE, (size_t)(tp->L * d) * sizeof *dx);
	if (bart_train_layers_bw(&t.ctd, W->b.enc + c->td_bottom_up, G->b.enc + c->td_bottom_up,
	                         &std, tp->td, dx, err) < 0 ||
	    bart_train_layers_bw(&t.cseg, W->seg, G->seg, &sseg, tp->seg, dp, err) < 0)
		goto out;
	/* dp: of the pooled segments; dx: of the bottom-up output (through the
	 * top-down layers' residuals and block attention) */
	if (c->td_adapool) {
		if (adapool_bw(&t.ps, tp->xbu, tp->R, W->tag_w, tp->p, tp->pool, dp, dx, G->tag_w,
		               G->tag_b, 1, err) < 0)
			goto out;
	} else
		segpool_bw(&t.ps, tp->R, dp, dx, 1);
	if (bart_train_layers_bw(&t.cbu, W->b.enc, G->b.enc, &sbu, tp->bu, dx, err) < 0 ||
	    bart_train_embed_bw(c, &W->b, &G->b, tp->emb, dx, err) < 0)
		goto out;
	rc = 0;
out:
	lc_arena_free(&ar);
	return rc;
}

static const lc_train_ops td_train_ops = {
	bart_train_shared_new, bart_train_shared_free, bart_train_step_begin, bart_train_step_end,
	tr_enc_fw, tr_enc_bw, bart_train_ops_dec_fw, bart_train_ops_dec_bw,
};

/* ------------------------------------------------------------- the arch */

static const char *const hf_classes[] = { "BartTopDownForConditionalGeneration", NULL };

const lc_arch arch_bart_topdown = {
	.name = "bart-topdown",
	.hf_classes = hf_classes,
	.model_type = "bart_topdown",
	.config = td_config,
	.declare = td_declare,
	.weights_free = td_weights_free,
	.info = td_info,
	.enc = &td_enc_ops,
	.dec = &bart_dec_ops,             /* BART's decoder */
	.train = &td_train_ops,
};
