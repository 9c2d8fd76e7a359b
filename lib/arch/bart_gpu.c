/*
 * bart_gpu.c: the BART family's encoder layers (bart.h's
 * bart_enc_layers_post) with every layer on the GPU (compute/dev.h): the
 * residual stream, the projections q, k, v, the attention's output and
 * the feed-forward in blocks of rows stay in the GPU's memory from the
 * first layer's input to the last layer's output; only x goes up and
 * comes down. The projections are cuBLAS products with the weights the
 * GPU keeps (cmp_dev_weight), each post-LN sublayer one kernel.
 *
 * The attention runs where the architecture has it on the GPU (attn_dev:
 * BART's dense attention, LSG's blocks, whose sparse slots are picked or
 * pooled on the CPU from copies of the keys and values); otherwise, and
 * for an architecture's step after out_proj (post: BART-LS's pooled
 * attention, the top-down transformer's token-to-segment attention), on
 * the CPU over copies, as bart_enc_layers_post runs them, then back up.
 */
#include "arch/bart.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "compute/compute.h"
#include "compute/dev.h"

#define FF_ROWS 16384           /* feed-forward rows per block */

static atomic_llong runs;

long long bart_gpu_runs(void)
{
	return atomic_load(&runs);
}

/* A layer's weights on the GPU. */
struct dlayer {
	const float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *ln1w, *ln1b;
	const float *w1, *b1, *w2, *b2, *ln2w, *ln2b;
};

static int up(const float **d, const float *h, int64_t n)
{
	*d = cmp_dev_weight(h, n);
	return !*d;
}

static int layer_up(const bart_enc_layer *L, int64_t d, int64_t ff, struct dlayer *w)
{
	const bart_attn *a = &L->sa;
	const bart_ffn *f = &L->ff;

	return up(&w->wq, a->wq, d * d) | up(&w->bq, a->bq, d) | up(&w->wk, a->wk, d * d) |
	       up(&w->bk, a->bk, d) | up(&w->wv, a->wv, d * d) | up(&w->bv, a->bv, d) |
	       up(&w->wo, a->wo, d * d) | up(&w->bo, a->bo, d) | up(&w->ln1w, a->ln_w, d) |
	       up(&w->ln1b, a->ln_b, d) | up(&w->w1, f->w1, ff * d) | up(&w->b1, f->b1, ff) |
	       up(&w->w2, f->w2, d * ff) | up(&w->b2, f->b2, d) | up(&w->ln2w, f->ln_w, d) |
	       up(&w->ln2b, f->ln_b, d);
}

/* y [R, n] = x [R, k] W^T + b on the GPU, W [n, k] one of the model's. */
static void linear(float *y, const float *x, const float *w, const float *b, int64_t R,
                   int64_t n, int64_t k)
{
	cmp_dev_gemm_w(CMP_N, CMP_T, R, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
	cmp_dev_bias_cols(y, R, n, n, b);
}

typedef struct gbuf {
	float *X, *Q, *K, *V, *O, *T, *H;       /* the GPU's */
	float *hq, *hk, *hv, *ho;               /* the CPU's, for the work done there */
} gbuf;

static void gbuf_free(gbuf *b)
{
	cmp_dev_free(b->X);
	cmp_dev_free(b->Q);
	cmp_dev_free(b->K);
	cmp_dev_free(b->V);
	cmp_dev_free(b->O);
	cmp_dev_free(b->T);
	cmp_dev_free(b->H);
	free(b->hq);
	free(b->hk);
	free(b->hv);
	free(b->ho);
}

static int host(float **p, int64_t n, lc_err *err)
{
	if (!*p && !(*p = malloc((size_t)n * sizeof **p)))
		return lc_fail(err, "out of memory (%lld floats)", (long long)n);
	return 0;
}

/* Layer li's attention on the CPU over copies of q, k, v, its output put
 * in b->O. The device is unlocked meanwhile: the CPU's attention may
 * queue work of its own on the GPU (ops/segattn.h). */
static int attn_host(gbuf *b, int64_t R, int64_t d, int li, bart_attn_fn attn, void *ctx,
                     lc_err *err)
{
	int64_t n = R * d;
	int rc;

	if (host(&b->hq, n, err) < 0 || host(&b->hk, n, err) < 0 || host(&b->hv, n, err) < 0 ||
	    host(&b->ho, n, err) < 0)
		return -1;
	cmp_dev_get(b->hq, b->Q, n);
	cmp_dev_get(b->hk, b->K, n);
	cmp_dev_get(b->hv, b->V, n);
	if (cmp_dev_check(err) < 0)
		return -1;
	cmp_dev_unlock();
	rc = attn(ctx, li, b->hq, b->hk, b->hv, R, b->ho, err);
	cmp_dev_lock();
	if (rc < 0)
		return -1;
	cmp_dev_put(b->O, b->ho, n);
	return 0;
}

/* post over a copy of t [R, d] (b->T), then back up. */
static int post_host(gbuf *b, int64_t R, int64_t d, int li, bart_post_fn post, void *ctx,
                     lc_err *err)
{
	int64_t n = R * d;
	int rc;

	if (host(&b->ho, n, err) < 0)
		return -1;
	cmp_dev_get(b->ho, b->T, n);
	if (cmp_dev_check(err) < 0)
		return -1;
	cmp_dev_unlock();
	rc = post(ctx, li, b->ho, R, err);
	cmp_dev_lock();
	if (rc < 0)
		return -1;
	cmp_dev_put(b->T, b->ho, n);
	return 0;
}

static int run(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
               bart_attn_fn attn, bart_attn_dev_fn attn_dev, bart_post_fn post, void *ctx,
               lc_err *err)
{
	int64_t d = c->d_model, ff = c->enc_ff, RB = R < FF_ROWS ? R : FF_ROWS;
	gbuf b = { 0 };
	struct dlayer *w = malloc((size_t)nl * sizeof *w);
	int rc = -1;

	if (!w)
		return lc_fail(err, "out of memory");
	/* every layer's weights up first: a model too large for the GPU
	 * stops here, before any work */
	for (int li = 0; li < nl; li++)
		if (layer_up(&W->enc[li], d, ff, &w[li]))
			goto declined;
	if (!(b.X = cmp_dev_alloc(R * d)) || !(b.Q = cmp_dev_alloc(R * d)) ||
	    !(b.K = cmp_dev_alloc(R * d)) || !(b.V = cmp_dev_alloc(R * d)) ||
	    !(b.O = cmp_dev_alloc(R * d)) || !(b.T = cmp_dev_alloc(R * d)) ||
	    !(b.H = cmp_dev_alloc(RB * ff)))
		goto declined;
	cmp_dev_put(b.X, x, R * d);
	for (int li = 0; li < nl; li++) {
		const struct dlayer *l = &w[li];
		int a = 1;

		linear(b.Q, b.X, l->wq, l->bq, R, d, d);
		linear(b.K, b.X, l->wk, l->bk, R, d, d);
		linear(b.V, b.X, l->wv, l->bv, R, d, d);
		if (attn_dev && (a = attn_dev(ctx, li, b.Q, b.K, b.V, R, b.O, err)) < 0)
			goto out;
		if (a == 1 && attn_host(&b, R, d, li, attn, ctx, err) < 0)
			goto out;
		linear(b.T, b.O, l->wo, l->bo, R, d, d);
		if (post && post_host(&b, R, d, li, post, ctx, err) < 0)
			goto out;
		cmp_dev_add_layernorm(b.X, b.T, R, (int)d, l->ln1w, l->ln1b, c->eps);
		for (int64_t r0 = 0; r0 < R; r0 += RB) {
			int64_t m = R - r0 < RB ? R - r0 : RB;
			linear(b.H, b.X + r0 * d, l->w1, l->b1, m, ff, d);
			cmp_dev_act((int)c->act, b.H, NULL, m * ff, b.H);
			linear(b.T + r0 * d, b.H, l->w2, l->b2, m, d, ff);
		}
		cmp_dev_add_layernorm(b.X, b.T, R, (int)d, l->ln2w, l->ln2b, c->eps);
		if (cmp_dev_check(err) < 0)
			goto out;
	}
	cmp_dev_get(x, b.X, R * d);
	if (cmp_dev_check(err) < 0)
		goto out;
	atomic_fetch_add(&runs, 1);
	rc = 0;
	goto out;
declined: {
	char why[128];
	snprintf(why, sizeof why, "no GPU memory for its weights or %lld rows; its layers run on "
	         "the CPU", (long long)R);
	cmp_dev_say("an encoder", why);
	rc = 1;
}
out:
	if (rc) {
		lc_err e2;
		cmp_dev_check(&e2);     /* drains what this run queued (an error is err's) */
	}
	gbuf_free(&b);
	free(w);
	return rc;
}

int bart_gpu_layers(const lc_config *c, const bart_weights *W, float *x, int64_t R, int nl,
                    bart_attn_fn attn, bart_attn_dev_fn attn_dev, bart_post_fn post, void *ctx,
                    lc_err *err)
{
	int rc;

	cmp_dev_lock();
	rc = run(c, W, x, R, nl, attn, attn_dev, post, ctx, err);
	cmp_dev_unlock();
	return rc;
}
