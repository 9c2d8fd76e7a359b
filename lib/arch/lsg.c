/*
 * lsg.c: LSG-BART (the authors' modeling_lsg_bart, ccdv-ai/
 * convert_checkpoint_to_lsg): BART whose encoder self-attention is LSG
 * attention (ops/lsgattn.h) over num_global_tokens global rows and the
 * tokens; the decoder is BART's.
 *
 *   input: with adaptive, a length T > 2 block_size is right-padded with
 *          pad to a block multiple (masked keys; positions go on)
 *   embeddings: the global rows of model.encoder.global_embeddings.weight
 *          (no scale, no position), then BART's token embeddings; then
 *          layernorm_embedding over all rows
 *   layers: BART's, with LSG attention (dense when the padded length is
 *          at most 2 block_size)
 *   output: pass_global_tokens_to_decoder: the ng global rows and the T
 *          token rows; otherwise the T token rows, the first replaced by
 *          the first global row when pool_with_global
 *
 * lsh draws random projections. The authors draw them with torch.randn in
 * every forward pass (two runs differ unless torch is seeded); lc draws
 * them once per layer from a fixed seed, so a document always gets the
 * same states. lsg_encode_layers takes given draws (the tests use the
 * oracle's recorded ones).
 */
#include "arch/lsg.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/bart.h"
#include "arch/model.h"
#include "base/clock.h"
#include "base/rng.h"
#include "ops/lsgattn.h"
#include "ops/norm.h"
#include "weights/config.h"

#define LSG_GLOBAL_ROWS 512            /* rows of global_embeddings */
#define LSH_SEED 0x4c53474c5348ull     /* "LSGLSH": lc's fixed projections */

/* ---------------------------------------------------------- config.json */

static int lsg_config(const json_t *root, const char *path, lc_config *c, lc_err *err)
{
	const char *st = NULL;
	const json_t *jt = json_object_get(root, "sparsity_type");
	const char *why;
	int t;

	if (bart_config(root, path, c, err) < 0)
		return -1;
	if (cfg_int(root, "block_size", 128, 1, 1 << 20, &c->block_size, path, err) ||
	    cfg_int(root, "sparse_block_size", 128, 0, 1 << 20, &c->sparse_block_size, path, err) ||
	    cfg_int(root, "sparsity_factor", 2, 1, 1 << 20, &c->sparsity_factor, path, err) ||
	    cfg_int(root, "num_global_tokens", 1, INT32_MIN, INT32_MAX, &c->num_global_tokens, path,
	            err) ||
	    cfg_bool(root, "adaptive", 1, &c->adaptive, path, err) ||
	    cfg_bool(root, "mask_first_token", 0, &c->mask_first_token, path, err) ||
	    cfg_bool(root, "pool_with_global", 1, &c->pool_with_global, path, err) ||
	    cfg_bool(root, "pass_global_tokens_to_decoder", 1, &c->pass_global_tokens, path, err) ||
	    cfg_int(root, "lsh_num_pre_rounds", 1, 0, 64, &c->lsh_pre_rounds, path, err))
		return -1;
	/* null is the authors' None: no sparse attention */
	if (jt && !json_is_null(jt) && cfg_str(root, "sparsity_type", "norm", &st, path, err) < 0)
		return -1;
	if (!jt)
		st = "norm";
	if (!st)
		t = LSG_NONE;
	else if ((t = lsg_sparsity_parse(st)) < 0)
		return lc_fail(err, "%s: sparsity_type \"%s\" is not one of none, norm, pooling, "
		               "stride, block_stride, bos_pooling, lsh", path, st);
	c->sparsity_type = t;
	if (c->num_global_tokens < 1 || c->num_global_tokens > LSG_GLOBAL_ROWS)
		return lc_fail(err, "%s: num_global_tokens %d is outside 1..%d", path,
		               c->num_global_tokens, LSG_GLOBAL_ROWS);
	if ((why = lsg_spec_invalid(c->block_size, c->sparse_block_size, c->sparsity_factor,
	                            (enum lsg_sparsity)t)))
		return lc_fail(err, "%s: %s (block_size %d, sparse_block_size %d, sparsity_factor %d, "
		               "sparsity_type %s)", path, why, c->block_size, c->sparse_block_size,
		               c->sparsity_factor, lsg_sparsity_name((enum lsg_sparsity)t));
	/* as the authors' config does: mask_first_token needs the pooling */
	if (c->mask_first_token)
		c->pool_with_global = 1;
	c->lsg = 1;
	return 0;
}

static void lsg_info(const lc_config *c, FILE *f)
{
	bart_info(c, f);
	fprintf(f, "block_size\t%d\nsparse_block_size\t%d\nsparsity_factor\t%d\nsparsity_type\t%s\n",
	        c->block_size, c->sparse_block_size, c->sparsity_factor,
	        lsg_sparsity_name((enum lsg_sparsity)c->sparsity_type));
	fprintf(f, "num_global_tokens\t%d\nadaptive\t%d\nmask_first_token\t%d\n",
	        c->num_global_tokens, c->adaptive, c->mask_first_token);
	fprintf(f, "pool_with_global\t%d\npass_global_tokens_to_decoder\t%d\nlsh_num_pre_rounds\t%d\n",
	        c->pool_with_global, c->pass_global_tokens, c->lsh_pre_rounds);
}

/* BART's parameters and the global embeddings. */
static void *lsg_declare(const lc_config *c, lc_params *p)
{
	bart_weights *w = bart_declare(c, p);

	if (w)
		params_add(p, &w->global_emb, param_init_normal, 0,
		           (const uint64_t[PARAM_RANK]){ LSG_GLOBAL_ROWS, (uint64_t)c->d_model, 0, 0 },
		           "model.encoder.global_embeddings.weight");
	return w;
}

/* ------------------------------------------------------------- encoder */

typedef struct lenc {
	const lc_config *c;
	const bart_weights *W;
	int threads;
	lsg_spec sp;
	float *R;                          /* lsh: [layers][rounds] draws */
	int64_t Rlayer;                    /* floats of one layer's draws */
	const float *kmask;                /* of the current input */
	int64_t T;                         /* padded token rows of the current input */
} lenc;

static void enc_close(void *p)
{
	lenc *e = p;

	if (e)
		free(e->R);
	free(e);
}

static void *enc_open(lc_model *m, int threads, lc_err *err)
{
	lenc *e = calloc(1, sizeof *e);
	const lc_config *c = model_config(m);

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	e->c = c;
	e->W = model_weights(m);
	e->threads = threads < 1 ? 1 : threads;
	e->sp = (lsg_spec){
		.heads = c->enc_heads, .dk = c->d_model / c->enc_heads,
		.scale = 1.0f / sqrtf((float)(c->d_model / c->enc_heads)), .ng = c->num_global_tokens,
		.bs = c->block_size, .sbs = c->sparse_block_size, .sf = c->sparsity_factor,
		.type = (enum lsg_sparsity)c->sparsity_type, .lsh_rounds = c->lsh_pre_rounds + 1,
	};
	if (e->sp.type == LSG_LSH && e->sp.sf > 1 && e->sp.sf != e->sp.sbs) {
		uint64_t rng = LSH_SEED;
		for (int r = 0; r < e->sp.lsh_rounds; r++)
			e->Rlayer += lsg_lsh_draw_len(&e->sp, r);
		if (!(e->R = malloc((size_t)(e->Rlayer * (c->num_layers ? c->num_layers : 1)) *
		                    sizeof *e->R))) {
			enc_close(e);
			lc_fail(err, "out of memory");
			return NULL;
		}
		for (int64_t i = 0; i < e->Rlayer * c->num_layers; i++)
			e->R[i] = (float)lc_rng_normal(&rng);
	}
	return e;
}

static int lsg_set_lsh_draws(void *enc, int layer, const float *R, int64_t n, lc_err *err)
{
	lenc *e = enc;

	if (!e->R || layer < 0 || layer >= e->c->num_layers || n != e->Rlayer)
		return lc_fail(err, "lsh draws: layer %d of %d, %lld floats where %lld are used",
		               layer, e->c->num_layers, (long long)n, (long long)e->Rlayer);
	memcpy(e->R + layer * e->Rlayer, R, (size_t)n * sizeof *R);
	return 0;
}

static int64_t enc_out_len(const void *p, int64_t L)
{
	const lenc *e = p;

	return e->c->pass_global_tokens ? L + e->c->num_global_tokens : L;
}

/* The longest input whose padding to whole blocks still fits the
 * positions (lc-encode --truncate cuts to it): with max_position_embeddings
 * 4000 and blocks of 128, 3968. */
static int64_t enc_max_len(const void *p)
{
	const lc_config *c = ((const lenc *)p)->c;
	int64_t m = c->max_positions, bs = c->block_size;

	return m > 2 * bs && m % bs ? m - m % bs : m;
}

/* Layer layer's spec: the model's, with that layer's lsh draws. */
static lsg_spec layer_spec(const lenc *e, int layer)
{
	lsg_spec sp = e->sp;

	if (e->R)
		sp.lsh_R = e->R + layer * e->Rlayer;
	return sp;
}

static int lsg_attn(void *ctx, int layer, float *q, const float *k, const float *v, int64_t R,
                    float *o, lc_err *err)
{
	lenc *e = ctx;
	lsg_spec sp = layer_spec(e, layer);

	(void)R;
	return lsg_attn_fw(&sp, q, k, v, e->c->d_model, e->T, e->kmask, o, e->threads, err);
}

/* The same with the rows on the GPU (arch/bart_gpu.c). */
static int lsg_attn_dev(void *ctx, int layer, const float *q, const float *k, const float *v,
                        int64_t R, float *o, lc_err *err)
{
	lenc *e = ctx;
	lsg_spec sp = layer_spec(e, layer);

	(void)R;
	return lsg_attn_fw_dev(&sp, q, k, v, e->c->d_model, e->T, e->kmask, o, e->threads, err);
}

/* The padded length of an L-token input. */
static int64_t padded(const lc_config *c, int64_t L)
{
	if (c->adaptive && L > 2 * (int64_t)c->block_size && L % c->block_size)
		return L + c->block_size - L % c->block_size;
	return L;
}

/* All rows (ng + padded length) after nlayers layers (< 0: all) into
 * *rows [*R, d] (the caller frees). gemm_only: products only. */
static int encode_rows(lenc *e, const int32_t *ids, int64_t L, int nlayers, int gemm_only,
                       float **rows, int64_t *R, lc_err *err)
{
	const lc_config *c = e->c;
	const bart_weights *W = e->W;
	int d = c->d_model, ng = c->num_global_tokens;
	int64_t T = padded(c, L), n = ng + T;
	float scale = c->scale_embedding ? sqrtf((float)d) : 1.0f, *x, *km;
	int rc;

	*rows = NULL;
	if (L < 1)
		return lc_fail(err, "empty input (no tokens)");
	if (L > c->max_positions)
		return lc_fail(err, "input of %lld tokens is longer than the model's %d positions "
		               "(max_position_embeddings)", (long long)L, c->max_positions);
	if (T > c->max_positions)
		return lc_fail(err, "input of %lld tokens pads to %lld (a multiple of block_size %d), "
		               "more than the model's %d positions", (long long)L, (long long)T,
		               c->block_size, c->max_positions);
	if (T > 2 * (int64_t)c->block_size && T % c->block_size)
		return lc_fail(err, "input of %lld tokens is not a multiple of block_size %d and the "
		               "model's config has adaptive false", (long long)L, c->block_size);
	for (int64_t i = 0; ids && i < L; i++)
		if (ids[i] < 0 || ids[i] >= c->vocab_size)
			return lc_fail(err, "token %lld: id %ld is outside the vocabulary [0, %d)",
			               (long long)i, (long)ids[i], c->vocab_size);
	x = calloc((size_t)(n * d), sizeof *x);
	km = calloc((size_t)n, sizeof *km);
	if (!x || !km) {
		free(x);
		free(km);
		return lc_fail(err, "out of memory (%lld tokens)", (long long)L);
	}
	for (int64_t i = 0; i < T; i++)
		km[ng + i] = i >= L || (i == 0 && c->mask_first_token) ? -FLT_MAX : 0.0f;
	if (!gemm_only) {
		memcpy(x, W->global_emb, (size_t)ng * d * sizeof *x);
		for (int64_t i = 0; i < T; i++)
			bart_embed_row(c, W->shared, W->enc_pos, i < L ? ids[i] : c->pad_id, i, scale,
			               x + (ng + i) * d);
		layernorm_fw(x, n, d, W->enc_ln_w, W->enc_ln_b, c->eps, x, NULL, NULL);
	}
	e->kmask = km;
	e->T = T;
	rc = bart_enc_layers(c, W, x, n, nlayers, e->threads, gemm_only, lsg_attn, lsg_attn_dev, e,
	                     err);
	free(km);
	e->kmask = NULL;
	if (rc < 0) {
		free(x);
		return -1;
	}
	*rows = x;
	*R = n;
	return 0;
}

static int enc_run(void *p, const int32_t *ids, int64_t L, float *out,
                   void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	lenc *e = p;
	const lc_config *c = e->c;
	int d = c->d_model, ng = c->num_global_tokens;
	float *x;
	int64_t R;

	if (encode_rows(e, ids, L, -1, 0, &x, &R, err) < 0)
		return -1;
	if (c->pass_global_tokens) {
		memcpy(out, x, (size_t)((ng + L) * d) * sizeof *out);
	} else {
		if (c->pool_with_global)
			memcpy(x + (int64_t)ng * d, x, (size_t)d * sizeof *x);
		memcpy(out, x + (int64_t)ng * d, (size_t)(L * d) * sizeof *out);
	}
	free(x);
	if (progress)
		progress(ctx, c->num_layers, c->num_layers);
	return 0;
}

static int enc_gemm_only(void *p, int64_t L, double *seconds, lc_err *err)
{
	lenc *e = p;
	float *x;
	int64_t R;
	double t0 = clock_now();
	int rc = encode_rows(e, NULL, L, -1, 1, &x, &R, err);

	*seconds = clock_now() - t0;
	free(x);
	return rc;
}

int lsg_encode_layers(lc_model *m, const float *const *lsh_draws, const int32_t *ids, int64_t L,
                      int nlayers, float **rows, int64_t *R, lc_err *err)
{
	lenc *e = enc_open(m, 1, err);
	int rc = -1;

	if (!e)
		return -1;
	for (int i = 0; lsh_draws && i < e->c->num_layers; i++)
		if (lsg_set_lsh_draws(e, i, lsh_draws[i], e->Rlayer, err) < 0)
			goto out;
	rc = encode_rows(e, ids, L, nlayers, 0, rows, R, err);
out:
	enc_close(e);
	return rc;
}

static const lc_enc_ops lsg_enc_ops = {
	.open = enc_open, .close = enc_close, .out_len = enc_out_len, .max_len = enc_max_len,
	.run = enc_run, .gemm_only = enc_gemm_only,
};

/* ------------------------------------------------------------- the arch */

static const char *const hf_classes[] = { "LSGBartForConditionalGeneration", NULL };

const lc_arch arch_lsg_bart = {
	.name = "lsg-bart",
	.hf_classes = hf_classes,
	.model_type = NULL,                /* theirs says "bart" */
	.config = lsg_config,
	.declare = lsg_declare,
	.weights_free = bart_weights_free,
	.info = lsg_info,
	.enc = &lsg_enc_ops,
	.dec = &bart_dec_ops,             /* BART's decoder */
	.train = NULL,
	.hf_bart = 1,                      /* LSGBartConfig subclasses BartConfig */
};
