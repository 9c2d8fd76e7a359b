/*
 * bartlstrain.c: BART-LS's lc_train_ops (arch_bart_ls's .train), BART's
 * training halves (barttrain.h) with BART-LS's encoder plugged in:
 *
 *   - the source is padded with pad rows to a multiple of block_size
 *     (rows), zero after the embeddings, as in inference (bartls.c);
 *   - every layer's self-attention is the block attention under the
 *     padding mask (bart_sa_train fw/bw);
 *   - in the top pooling_layers, the pooled attention of a (the block
 *     attention's output after out_proj) is added: the residual adds
 *     a + cross (the post_fw/post_bw hook); dropout, when asked, masks
 *     that sum as BART masks the attention's output;
 *   - the decoder gets the L real rows; its halves are BART's, over
 *     BART-LS's own decoder position table.
 *
 * Gradients of the pooled attention's projections go to G's pool[].
 * Everything runs on one thread per example (lc-train spreads examples).
 */
#include "arch/bartlstrain.h"

#include <math.h>
#include <string.h>

#include "arch/barttrain.h"
#include "arch/bartls.h"

/* One example's encoder: what the plugs read, kept in the arena. */
typedef struct ls_ctx {
	const lc_config *c;
	const bartls_weights *W;
	const bartls_weights *G;          /* set for the backward */
	blkattn_spec bs;
	poolattn_spec ps;
	unsigned char *pad;               /* [R] 1 = pad */
	lc_arena *a;
} ls_ctx;

typedef struct ls_tape {
	ls_ctx ctx;
	void *bart;                       /* barttrain's tape */
} ls_tape;

/* A pooled layer's: its input a and the pooled attention's tape. */
typedef struct pool_tape {
	float *a;                         /* [R, d] */
	poolattn_tape t;
} pool_tape;

static int first_pooled(const lc_config *c)
{
	return c->num_layers - c->pooling_layers;
}

static int64_t ls_rows(void *ctx, int64_t L)
{
	const ls_ctx *x = ctx;
	int64_t bs = x->c->block_size;

	return (L + bs - 1) / bs * bs;
}

static int ls_sa_fw(void *ctx, int layer, const float *q, const float *k, const float *v,
                    int64_t R, float *o, lc_arena *a, void **tape, lc_err *err)
{
	ls_ctx *x = ctx;

	(void)layer;
	(void)a;
	*tape = NULL;               /* the backward recomputes the probabilities */
	return blkattn_fw(&x->bs, q, k, v, x->c->d_model, R, x->pad, o, 1, err);
}

static int ls_sa_bw(void *ctx, int layer, void *tape, const float *q, const float *k,
                    const float *v, int64_t R, float *dout, float *dq, float *dk, float *dv,
                    lc_err *err)
{
	ls_ctx *x = ctx;

	(void)layer;
	(void)tape;
	return blkattn_bw(&x->bs, q, k, v, x->c->d_model, R, x->pad, dout, dq, dk, dv, 1, err);
}

static int ls_post_fw(void *ctx, int layer, float *t, int64_t R, lc_arena *a, void **tape,
                      lc_err *err)
{
	ls_ctx *x = ctx;
	int64_t n = R * x->c->d_model, Tp;
	pool_tape *pt;
	float *cross;

	*tape = NULL;
	if (layer < first_pooled(x->c))
		return 0;
	Tp = poolattn_len(&x->ps, R);
	pt = lc_arena_bytes(a, sizeof *pt);
	cross = lc_arena_f32(a, n);
	if (pt) {
		pt->a = lc_arena_f32(a, n);
		pt->t = (poolattn_tape){ .T = R, .Tp = Tp, .q = lc_arena_f32(a, n),
		                         .o = lc_arena_f32(a, n),
		                         .kp = lc_arena_f32(a, Tp * x->c->d_model),
		                         .vp = lc_arena_f32(a, Tp * x->c->d_model),
		                         .pm = lc_arena_bytes(a, Tp) };
	}
	if (!lc_arena_ok(a) || Tp < 1)
		return lc_fail(err, "out of memory (pooled attention over %lld rows)", (long long)R);
	memcpy(pt->a, t, (size_t)n * sizeof *t);
	if (poolattn_fw(&x->ps, &x->W->pool[layer], pt->a, R, x->pad, &pt->t, cross, 0, 1, err) < 0)
		return -1;
	for (int64_t i = 0; i < n; i++)
		t[i] += cross[i];
	*tape = pt;
	return 0;
}

static int ls_post_bw(void *ctx, int layer, void *tape, float *dt, int64_t R, lc_err *err)
{
	ls_ctx *x = ctx;
	pool_tape *pt = tape;
	int64_t n = R * x->c->d_model;
	float *dcross;
	int rc;

	if (layer < first_pooled(x->c))
		return 0;
	/* t = a + cross(a): da = dt + cross's backward of dt */
	if (!(dcross = lc_arena_f32(x->a, n)))
		return lc_fail(err, "out of memory (pooled attention over %lld rows)", (long long)R);
	memcpy(dcross, dt, (size_t)n * sizeof *dt);
	rc = poolattn_bw(&x->ps, &x->W->pool[layer], pt->a, x->pad, &pt->t, dcross, dt,
	                 &x->G->pool[layer], 1, err);
	return rc;
}

static bart_sa_train plug(ls_ctx *x)
{
	bart_sa_train sa = { ls_sa_fw, ls_sa_bw, x, ls_rows, ls_post_fw, ls_post_bw };
	return sa;
}

static void *tr_enc_fw(void *sh, int part, const void *W, const int32_t *src, int64_t L,
                       lc_arena *a, double p, uint64_t *rng, float **E, int64_t *Le, lc_err *err)
{
	const lc_config *c = sh;
	ls_tape *tp = lc_arena_bytes(a, sizeof *tp);
	int dk = c->d_model / c->enc_heads;
	bart_sa_train sa;
	int64_t R;

	(void)part;
	if (!tp) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	tp->ctx = (ls_ctx){ .c = c, .W = W,
	                    .bs = { c->enc_heads, dk, c->block_size, 1.0f / sqrtf((float)dk), 0 },
	                    .ps = { c->enc_heads, c->d_model, c->pool_kernel, c->pool_stride,
	                            c->pool_padding },
	                    .a = a };
	R = L > 0 ? ls_rows(&tp->ctx, L) : 1;
	if (!(tp->ctx.pad = lc_arena_bytes(a, R))) {
		lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
		return NULL;
	}
	for (int64_t i = L; i < R; i++)
		tp->ctx.pad[i] = 1;
	sa = plug(&tp->ctx);
	if (!(tp->bart = bart_train_enc_fw(c, W, &sa, src, L, a, p, rng, E, err)))
		return NULL;
	*Le = L;
	return tp;
}

static int tr_enc_bw(void *sh, int part, const void *W, void *G, void *tape, const float *dE,
                     lc_err *err)
{
	ls_tape *tp = tape;
	lc_arena scratch = { 0 };
	bart_sa_train sa;
	int rc;

	(void)part;
	(void)W;
	tp->ctx.G = G;
	tp->ctx.a = &scratch;
	sa = plug(&tp->ctx);
	rc = bart_train_enc_bw(sh, W, G, &sa, tp->bart, dE, err);
	lc_arena_free(&scratch);
	return rc;
}

const lc_train_ops bartls_train_ops = {
	bart_train_shared_new, bart_train_shared_free, bart_train_step_begin, bart_train_step_end,
	tr_enc_fw, tr_enc_bw, bart_train_ops_dec_fw, bart_train_ops_dec_bw,
};
