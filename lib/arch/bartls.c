/*
 * bartls.c: BART-LS (Xiong et al. 2022, "Adapting Pretrained Text-to-Text
 * Models for Long Text Sequences"; facebookresearch/bart_ls): BART whose
 * encoder runs block attention in every layer and adds pooled attention
 * in the top pooling_layers (ops/bartlsattn.h); the decoder is BART's,
 * with a position table of its own size.
 *
 *   input: right-padded with pad to a multiple of block_size (the
 *          authors' collate_tokens); the padding mask (those pads and
 *          any pad id in the document) goes to every layer
 *   embeddings: shared[id] * s + pos[p + 2], p the token's place among
 *          the non-pads (fairseq's make_positions), s = 1 unless
 *          scale_embedding; layernorm_embedding; pad rows then zeroed
 *   layers: post-LN; x = LN1(x + a) with a = block attention (out_proj
 *          included), in a pooled layer x = LN1(x + a + cross), cross =
 *          the pooled attention of a; then the feed-forward
 *   output: the L real rows (lc-encode writes those of non-pad tokens:
 *          encoder_keep); no final LayerNorm
 *
 * Weight names: transformers-style ("model.encoder.layers.N...", plus
 * model.encoder.layers.N.pool_attn.{q,k,v,out}_proj for the pooled
 * layers), and the same without "model." as fairseq writes them, with
 * fairseq's names of the shared embedding and its version buffers.
 */
#include "arch/bartls.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/bartlstrain.h"
#include "arch/model.h"
#include "base/clock.h"
#include "ops/norm.h"
#include "weights/config.h"

#define D1(a) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), 0, 0 })

/* ---------------------------------------------------------- config.json */

static int bartls_config(const json_t *root, const char *path, lc_config *c, lc_err *err)
{
	poolattn_spec ps;
	const char *why;

	if (bart_config(root, path, c, err) < 0)
		return -1;
	if (cfg_int(root, "block_size", 1024, 1, 1 << 20, &c->block_size, path, err) ||
	    cfg_int(root, "pooling_layers", 4, 0, c->num_layers, &c->pooling_layers, path, err) ||
	    cfg_int(root, "pool_kernel", 18, 1, 1 << 20, &c->pool_kernel, path, err) ||
	    cfg_int(root, "pool_stride", 12, 1, 1 << 20, &c->pool_stride, path, err) ||
	    cfg_int(root, "pool_padding", 9, 0, 1 << 20, &c->pool_padding, path, err) ||
	    cfg_int(root, "max_decoder_position_embeddings", c->max_positions, 1, 1 << 24,
	            &c->max_dec_positions, path, err))
		return -1;
	ps = (poolattn_spec){ c->enc_heads, c->d_model, c->pool_kernel, c->pool_stride,
	                      c->pool_padding };
	if (c->pooling_layers && (why = poolattn_spec_invalid(&ps)))
		return lc_fail(err, "%s: %s (pool_kernel %d, pool_stride %d, pool_padding %d)", path, why,
		               c->pool_kernel, c->pool_stride, c->pool_padding);
	if (c->pooling_layers && poolattn_len(&ps, c->block_size) < 1)
		return lc_fail(err, "%s: block_size %d is shorter than the pooling window allows "
		               "(pool_kernel %d, pool_padding %d)", path, c->block_size, c->pool_kernel,
		               c->pool_padding);
	return 0;
}

static void bartls_info(const lc_config *c, FILE *f)
{
	bart_info(c, f);
	fprintf(f, "max_decoder_position_embeddings\t%d\nblock_size\t%d\npooling_layers\t%d\n",
	        c->max_dec_positions, c->block_size, c->pooling_layers);
	fprintf(f, "pool_kernel\t%d\npool_stride\t%d\npool_padding\t%d\n", c->pool_kernel,
	        c->pool_stride, c->pool_padding);
}

/* ----------------------------------------------------------- parameters */

static void bartls_weights_free(void *p)
{
	bartls_weights *w = p;

	if (!w)
		return;
	free(w->pool);
	free(w->b.enc);
	free(w->b.dec);
	free(w);
}

/* The first pooled layer. */
static int first_pooled(const lc_config *c)
{
	return c->num_layers - c->pooling_layers;
}

static void *bartls_declare(const lc_config *c, lc_params *p)
{
	bartls_weights *w = calloc(1, sizeof *w);
	static const char *const proj[] = { "q", "k", "v", "out" };
	const unsigned nd = PARAM_NO_DECAY;
	int d = c->d_model;

	if (!w || bart_declare_into(c, p, &w->b) < 0 ||
	    !(w->pool = calloc((size_t)(c->num_layers ? c->num_layers : 1), sizeof *w->pool))) {
		bartls_weights_free(w);
		return NULL;
	}
	for (int i = first_pooled(c); i < c->num_layers; i++) {
		poolattn_w *a = &w->pool[i];
		float **slot[4][2] = { { &a->wq, &a->bq }, { &a->wk, &a->bk }, { &a->wv, &a->bv },
		                       { &a->wo, &a->bo } };
		for (int k = 0; k < 4; k++) {
			params_add(p, slot[k][0], param_init_matrix, 0, D2(d, d),
			           "model.encoder.layers.%d.pool_attn.%s_proj.weight", i, proj[k]);
			params_add(p, slot[k][1], param_init_bias, nd, D1(d),
			           "model.encoder.layers.%d.pool_attn.%s_proj.bias", i, proj[k]);
		}
	}
	/* new weights as BART's and lc-convert's: N(0, init_std), zero biases */
	bart_init_hf(c, p, 0);
	/* fairseq's names (released checkpoints), the pooled attention's too */
	bart_declare_fairseq_names(p, c);
	return w;
}

/* ------------------------------------------------------------- encoder */

typedef struct lsenc {
	const lc_config *c;
	const bartls_weights *W;
	int threads;
	blkattn_spec bs;
	poolattn_spec ps;
	/* the current input */
	const unsigned char *pad;          /* [T], or NULL: no mask */
	int64_t T;
	int layer0;                        /* index of the first layer run (bartls_layer) */
	int gemm_only;
	int keep_tape;                     /* bartls_layer: the tape outlives the run */
	poolattn_tape tape;
	float *cross;                      /* [T, d] */
	float *dbg_a, *dbg_cross;          /* bartls_layer's copies, or NULL */
} lsenc;

static void enc_close(void *p)
{
	lsenc *e = p;

	if (!e)
		return;
	poolattn_tape_free(&e->tape);
	free(e->cross);
	free(e);
}

static void *enc_open(lc_model *m, int threads, lc_err *err)
{
	lsenc *e = calloc(1, sizeof *e);
	const lc_config *c = model_config(m);
	int dk = c->d_model / c->enc_heads;

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	e->c = c;
	e->W = model_weights(m);
	e->threads = threads < 1 ? 1 : threads;
	e->bs = (blkattn_spec){ c->enc_heads, dk, c->block_size, 1.0f / sqrtf((float)dk), 0 };
	e->ps = (poolattn_spec){ c->enc_heads, c->d_model, c->pool_kernel, c->pool_stride,
	                         c->pool_padding };
	return e;
}

static int64_t enc_out_len(const void *e, int64_t L)
{
	(void)e;
	return L;
}

static int64_t enc_max_len(const void *p)
{
	return ((const lsenc *)p)->c->max_positions;
}

static int block_attn(void *ctx, int layer, float *q, const float *k, const float *v, int64_t R,
                      float *o, lc_err *err)
{
	lsenc *e = ctx;

	(void)layer;
	return blkattn_fw(&e->bs, q, k, v, e->c->d_model, R, e->pad, o, e->threads, err);
}

/* The same on the GPU (arch/bart_gpu.c). */
static int block_attn_dev(void *ctx, int layer, const float *q, const float *k, const float *v,
                          int64_t R, float *o, lc_err *err)
{
	lsenc *e = ctx;

	(void)layer;
	return blkattn_fw_dev(&e->bs, q, k, v, e->c->d_model, R, e->pad, o, err);
}

/* After a layer's block attention: t = a (+ cross in a pooled layer). */
static int pooled(void *ctx, int layer, float *t, int64_t R, lc_err *err)
{
	lsenc *e = ctx;
	int li = e->layer0 + layer, d = e->c->d_model;

	if (e->dbg_a)
		memcpy(e->dbg_a, t, (size_t)(R * d) * sizeof *t);
	if (li < first_pooled(e->c))
		return 0;
	if (poolattn_fw(&e->ps, &e->W->pool[li], t, R, e->pad, &e->tape, e->cross, e->gemm_only,
	                e->threads, err) < 0)
		return -1;
	if (e->dbg_cross)
		memcpy(e->dbg_cross, e->cross, (size_t)(R * d) * sizeof *t);
	if (!e->gemm_only)
		for (int64_t i = 0; i < R * d; i++)
			t[i] += e->cross[i];
	return 0;
}

/* Layers [layer0, layer0 + nl) over x [T, d] in place. */
static int run_layers(lsenc *e, float *x, int64_t T, int layer0, int nl, lc_err *err)
{
	const lc_config *c = e->c;
	bart_weights W = e->W->b;
	int rc;

	if (nl < 0 || layer0 + nl > c->num_layers)
		nl = c->num_layers - layer0;
	if (nl == 0)
		return 0;
	poolattn_tape_free(&e->tape);
	if (layer0 + nl > first_pooled(c)) {
		if (poolattn_tape_init(&e->tape, &e->ps, T, err) < 0)
			return -1;
		if (!(e->cross = malloc((size_t)(T * c->d_model) * sizeof *e->cross))) {
			poolattn_tape_free(&e->tape);
			return lc_fail(err, "out of memory (%lld positions)", (long long)T);
		}
	}
	W.enc += layer0;
	e->layer0 = layer0;
	e->T = T;
	rc = bart_enc_layers_post(c, &W, x, T, nl, e->threads, e->gemm_only, block_attn,
	                          block_attn_dev, pooled, e, err);
	free(e->cross);
	e->cross = NULL;
	if (!e->keep_tape)
		poolattn_tape_free(&e->tape);
	return rc;
}

/* The padded length of L tokens: the next multiple of block_size. */
static int64_t padded(const lc_config *c, int64_t L)
{
	return (L + c->block_size - 1) / c->block_size * c->block_size;
}

/* All T rows after the embeddings and nlayers layers (< 0: all) into
 * *rows [*T, d] (the caller frees). gemm_only (ids NULL): products only. */
static int encode_rows(lsenc *e, const int32_t *ids, int64_t L, int nlayers, float **rows,
                       int64_t *Tout, lc_err *err)
{
	const lc_config *c = e->c;
	const bart_weights *W = &e->W->b;
	int d = c->d_model;
	int64_t T = padded(c, L);
	float scale = c->scale_embedding ? sqrtf((float)d) : 1.0f, *x;
	unsigned char *pad;
	int rc;

	*rows = NULL;
	if (L < 1)
		return lc_fail(err, "empty input (no tokens)");
	if (L > c->max_positions)
		return lc_fail(err, "input of %lld tokens is longer than the model's %d positions "
		               "(max_position_embeddings)", (long long)L, c->max_positions);
	for (int64_t i = 0; ids && i < L; i++)
		if (ids[i] < 0 || ids[i] >= c->vocab_size)
			return lc_fail(err, "token %lld: id %ld is outside the vocabulary [0, %d)",
			               (long long)i, (long)ids[i], c->vocab_size);
	x = calloc((size_t)(T * d), sizeof *x);
	pad = calloc((size_t)T, 1);
	if (!x || !pad) {
		free(x);
		free(pad);
		return lc_fail(err, "out of memory (%lld tokens)", (long long)L);
	}
	/* pads: the padding to a block multiple, and pad ids inside the
	 * document, which the authors' code masks the same way (fairseq's
	 * positions skip them: the tokens after one move up a place) */
	for (int64_t i = 0; i < T; i++)
		pad[i] = i >= L || (ids && ids[i] == c->pad_id);
	if (!e->gemm_only) {
		int64_t real = 0;
		/* the pads' rows are zeroed after the LayerNorm: only the real
		 * rows are computed */
		for (int64_t i = 0; i < L; i++)
			if (!pad[i])
				bart_embed_row(c, W->shared, W->enc_pos, ids[i], real++, scale, x + i * d);
		layernorm_fw(x, L, d, W->enc_ln_w, W->enc_ln_b, c->eps, x, NULL, NULL);
		for (int64_t i = 0; i < L; i++)
			if (pad[i])
				memset(x + i * d, 0, (size_t)d * sizeof *x);
	}
	e->pad = pad;
	rc = run_layers(e, x, T, 0, nlayers, err);
	e->pad = NULL;
	free(pad);
	if (rc < 0) {
		free(x);
		return -1;
	}
	*rows = x;
	*Tout = T;
	return 0;
}

static int enc_run(void *p, const int32_t *ids, int64_t L, float *out,
                   void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	lsenc *e = p;
	float *x;
	int64_t T;

	if (encode_rows(e, ids, L, -1, &x, &T, err) < 0)
		return -1;
	memcpy(out, x, (size_t)(L * e->c->d_model) * sizeof *out);
	free(x);
	if (progress)
		progress(ctx, e->c->num_layers, e->c->num_layers);
	return 0;
}

static int enc_gemm_only(void *p, int64_t L, double *seconds, lc_err *err)
{
	lsenc *e = p;
	float *x;
	int64_t T;
	double t0 = clock_now();
	int rc;

	e->gemm_only = 1;
	rc = encode_rows(e, NULL, L, -1, &x, &T, err);
	e->gemm_only = 0;
	*seconds = clock_now() - t0;
	free(x);
	return rc;
}

int bartls_encode_layers(lc_model *m, const int32_t *ids, int64_t L, int nlayers, float **rows,
                         int64_t *T, lc_err *err)
{
	lsenc *e = enc_open(m, 1, err);
	int rc;

	if (!e)
		return -1;
	rc = encode_rows(e, ids, L, nlayers, rows, T, err);
	enc_close(e);
	return rc;
}

int bartls_layer(lc_model *m, int layer, float *x, int64_t T, const unsigned char *pad, float *a,
                 float *cross, poolattn_tape *tape, lc_err *err)
{
	lsenc *e = enc_open(m, 1, err);
	int rc = -1;

	if (!e)
		return -1;
	if (layer < 0 || layer >= e->c->num_layers) {
		lc_fail(err, "layer %d of %d", layer, e->c->num_layers);
		goto out;
	}
	e->pad = pad;
	e->dbg_a = a;
	e->keep_tape = 1;
	e->dbg_cross = layer >= first_pooled(e->c) ? cross : NULL;
	rc = run_layers(e, x, T, layer, 1, err);
	if (rc == 0 && tape && layer >= first_pooled(e->c)) {
		*tape = e->tape;
		memset(&e->tape, 0, sizeof e->tape);
	}
out:
	enc_close(e);
	return rc;
}

static int64_t enc_keep(const void *p, const int32_t *ids, int64_t L, float *out)
{
	return bart_keep_nonpad(((const lsenc *)p)->c, ids, L, out);
}

static const lc_enc_ops bartls_enc_ops = {
	.open = enc_open, .close = enc_close, .out_len = enc_out_len, .max_len = enc_max_len,
	.run = enc_run, .gemm_only = enc_gemm_only, .keep = enc_keep,
};

/* ------------------------------------------------------------- the arch */

static const char *const hf_classes[] = { "BartLSForConditionalGeneration", NULL };

const lc_arch arch_bart_ls = {
	.name = "bart-ls",
	.hf_classes = hf_classes,
	.model_type = "bart_ls",
	.config = bartls_config,
	.declare = bartls_declare,
	.weights_free = bartls_weights_free,
	.info = bartls_info,
	.enc = &bartls_enc_ops,
	.dec = &bart_dec_ops,             /* BART's decoder */
	.train = &bartls_train_ops,
};
