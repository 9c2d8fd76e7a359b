/*
 * barttrain.c: BART's training halves (see barttrain.h).
 */
#include "arch/barttrain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute.h"
#include "ops/act.h"
#include "ops/attn.h"
#include "ops/dropout.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/xattn.h"

static float *mask_new(lc_arena *a, int64_t n, double p, uint64_t *rng)
{
	float *m;

	if (p <= 0)
		return NULL;
	if ((m = lc_arena_f32(a, n)))
		dropout_mask(m, n, p, rng);
	return m;
}

/* x [n] *= m where a mask is given */
static void apply(float *x, const float *m, int64_t n)
{
	if (m)
		dropout_apply(x, m, n);
}

/* ------------------------------------------------- the full attention */

typedef struct full_tape {
	float *P;                       /* [H, R, R] probabilities */
} full_tape;

static attn_spec full_spec(const lc_config *c)
{
	int dk = c->d_model / c->enc_heads;
	attn_spec sp = { .causal = 0, .heads = c->enc_heads, .dk = dk,
	                 .scale = 1.0f / sqrtf((float)dk) };
	return sp;
}

int bart_sa_full_fw(void *ctx, int layer, const float *q, const float *k, const float *v,
                    int64_t R, float *o, lc_arena *a, void **tape, lc_err *err)
{
	const lc_config *c = ctx;
	attn_spec sp = full_spec(c);
	full_tape *t = lc_arena_bytes(a, sizeof *t);

	(void)layer;
	if (!t || !(t->P = lc_arena_f32(a, (int64_t)sp.heads * R * R)))
		return lc_fail(err, "out of memory (attention over %lld tokens)", (long long)R);
	attn_fw(&sp, q, c->d_model, k, v, c->d_model, R, 0, o, c->d_model, t->P);
	*tape = t;
	return 0;
}

int bart_sa_full_bw(void *ctx, int layer, void *tape, const float *q, const float *k,
                    const float *v, int64_t R, float *dout, float *dq, float *dk, float *dv,
                    lc_err *err)
{
	const lc_config *c = ctx;
	attn_spec sp = full_spec(c);
	full_tape *t = tape;
	float *work = malloc((size_t)((int64_t)sp.heads * R * R) * sizeof *work);

	(void)layer;
	if (!work)
		return lc_fail(err, "out of memory (attention over %lld tokens)", (long long)R);
	attn_bw(&sp, q, c->d_model, k, v, c->d_model, R, 0, dout, c->d_model, t->P, dq, dk, dv,
	        work);
	free(work);
	return 0;
}

/* ---------------------------------------------------------- embeddings */

/* What the embeddings keep: x = LN(shared[ids] s + pos[t + 2]) * mask. */
typedef struct emb_tape {
	int32_t *ids;                   /* [n] */
	float *e, *mean, *rstd;         /* [n, d] sum before the norm, [n], [n] */
	float *m;                       /* [n, d] or NULL */
} emb_tape;

static int emb_fw(const lc_config *c, const float *shared, const float *pos, const float *ln_w,
                  const float *ln_b, const int32_t *ids, int64_t n, lc_arena *a, double p,
                  uint64_t *rng, emb_tape *t, float *x)
{
	int d = c->d_model;
	float scale = c->scale_embedding ? sqrtf((float)d) : 1.0f;

	t->ids = lc_arena_bytes(a, n * (int64_t)sizeof *t->ids);
	t->e = lc_arena_f32(a, n * d);
	t->mean = lc_arena_f32(a, n);
	t->rstd = lc_arena_f32(a, n);
	t->m = mask_new(a, n * d, p, rng);
	if (!lc_arena_ok(a))
		return -1;
	memcpy(t->ids, ids, (size_t)n * sizeof *ids);
	for (int64_t i = 0; i < n; i++)
		bart_embed_row(c, shared, pos, ids[i], i, scale, t->e + i * d);
	layernorm_fw(t->e, n, d, ln_w, ln_b, c->eps, x, t->mean, t->rstd);
	apply(x, t->m, n * d);
	return 0;
}

/* dx [n, d] (overwritten) of the embeddings' output into the tables. */
static void emb_bw(const lc_config *c, const emb_tape *t, int64_t n, const float *ln_w,
                   float *dx, float *G_ln_w, float *G_ln_b, float *G_shared, float *G_pos,
                   float *de)
{
	int d = c->d_model;
	float scale = c->scale_embedding ? sqrtf((float)d) : 1.0f;

	apply(dx, t->m, n * d);
	memset(de, 0, (size_t)(n * d) * sizeof *de);
	layernorm_bw(dx, t->e, t->mean, t->rstd, ln_w, n, d, de, G_ln_w, G_ln_b);
	for (int64_t i = 0; i < n; i++) {
		float *gs = G_shared + (int64_t)t->ids[i] * d, *gp = G_pos + (i + 2) * d;
		const float *g = de + i * d;
		for (int j = 0; j < d; j++) {
			gs[j] += g[j] * scale;
			gp[j] += g[j];
		}
	}
}

/* ------------------------------------------------------------- pieces */

/* A sublayer's residual and norm: y = LN(x + m t), keeping the sum. */
typedef struct addnorm {
	float *s, *mean, *rstd;         /* [R, d], [R], [R] */
	float *m;                       /* [R, d] or NULL */
} addnorm;

static int addnorm_alloc(addnorm *an, int64_t R, int d, lc_arena *a, double p, uint64_t *rng)
{
	an->s = lc_arena_f32(a, R * d);
	an->mean = lc_arena_f32(a, R);
	an->rstd = lc_arena_f32(a, R);
	an->m = mask_new(a, R * d, p, rng);
	return lc_arena_ok(a) ? 0 : -1;
}

static void addnorm_fw(addnorm *an, const float *x, const float *t, int64_t R, int d,
                       const float *w, const float *b, float eps, float *y)
{
	residual_add(an->s, x, t, an->m, R * d);
	layernorm_fw(an->s, R, d, w, b, eps, y, an->mean, an->rstd);
}

/* Given dy: ds (written) = d loss / d(x + m t); dt (written) = m ds. The
 * residual's gradient, dx += ds, is the caller's. */
static void addnorm_bw(const addnorm *an, const float *dy, int64_t R, int d, const float *w,
                       float *Gw, float *Gb, float *ds, float *dt)
{
	memset(ds, 0, (size_t)(R * d) * sizeof *ds);
	layernorm_bw(dy, an->s, an->mean, an->rstd, w, R, d, ds, Gw, Gb);
	for (int64_t i = 0; i < R * d; i++)
		dt[i] = an->m ? ds[i] * an->m[i] : ds[i];
}

/* The feed-forward's tape: a = x w1^T + b1, f = act(a). */
typedef struct ffn_tape {
	float *a, *f;                   /* [R, ff] */
	addnorm an;
} ffn_tape;

static int ffn_fw(const lc_config *c, const bart_ffn *F, int ff, const float *x, int64_t R,
                  lc_arena *a, double p, uint64_t *rng, ffn_tape *t, float *tmp, float *y)
{
	int d = c->d_model;

	t->a = lc_arena_f32(a, R * ff);
	t->f = lc_arena_f32(a, R * ff);
	if (addnorm_alloc(&t->an, R, d, a, p, rng) < 0)
		return -1;
	linear_fw(t->a, x, F->w1, F->b1, R, ff, d, 0.0f, 1);
	act_fw(c->act, t->a, NULL, R * ff, t->f);
	linear_fw(tmp, t->f, F->w2, F->b2, R, d, ff, 0.0f, 1);
	addnorm_fw(&t->an, x, tmp, R, d, F->ln_w, F->ln_b, c->eps, y);
	return 0;
}

/* dy [R, d] of y given, x the input: dx (written). Scratch: ds, dt [R, d],
 * da [R, ff]. */
static void ffn_bw(const lc_config *c, const bart_ffn *F, bart_ffn *G, int ff, const ffn_tape *t,
                   const float *x, const float *dy, int64_t R, float *dx, float *dt, float *da)
{
	int d = c->d_model;

	addnorm_bw(&t->an, dy, R, d, F->ln_w, G->ln_w, G->ln_b, dx, dt);
	memset(da, 0, (size_t)(R * ff) * sizeof *da);
	linear_bw(dt, t->f, F->w2, R, d, ff, da, G->w2, G->b2);
	act_bw(c->act, t->a, NULL, da, R * ff, da, NULL);
	linear_bw(da, x, F->w1, R, ff, d, dx, G->w1, G->b1);
}

/* ------------------------------------------------------------- encoder */

typedef struct enc_layer_tape {
	float *x;                       /* [L, d] the layer's input */
	float *q, *k, *v, *o;           /* [L, d] */
	void *sa;                       /* the attention's own */
	void *post;                     /* sa->post_fw's own */
	addnorm an;                     /* after the attention */
	float *x1;                      /* [L, d] */
	ffn_tape ff;
} enc_layer_tape;

/* The layers of a stack (bart_train_layers_fw). */
typedef struct layers_tape {
	int nl;
	int64_t R;
	enc_layer_tape *l;              /* [nl] */
} layers_tape;

/* The embeddings (bart_train_embed_fw). */
typedef struct embed_tape {
	int64_t L;
	emb_tape emb;
} embed_tape;

typedef struct enc_tape {
	int64_t L, R;                   /* tokens, rows (R >= L: padded) */
	embed_tape *emb;
	layers_tape *layers;
} enc_tape;

void *bart_train_embed_fw(const lc_config *c, const bart_weights *W, const int32_t *src,
                          int64_t L, int64_t R, lc_arena *a, double p, uint64_t *rng, float **x,
                          lc_err *err)
{
	int d = c->d_model;
	embed_tape *t;

	if (L < 1 || L > c->max_positions) {
		lc_fail(err, "source of %lld tokens: BART takes 1 to %d (max_position_embeddings)",
		        (long long)L, c->max_positions);
		return NULL;
	}
	for (int64_t i = 0; i < L; i++)
		if (src[i] < 0 || src[i] >= c->vocab_size) {
			lc_fail(err, "source token %lld: id %ld is outside the vocabulary [0, %d)",
			        (long long)i, (long)src[i], c->vocab_size);
			return NULL;
		}
	/* the padding rows stay zero: the arena's arrays are */
	if (!(t = lc_arena_bytes(a, sizeof *t)) || !(*x = lc_arena_f32(a, R * d)) ||
	    emb_fw(c, W->shared, W->enc_pos, W->enc_ln_w, W->enc_ln_b, src, L, a, p, rng, &t->emb,
	           *x) < 0) {
		lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
		return NULL;
	}
	t->L = L;
	return t;
}

int bart_train_embed_bw(const lc_config *c, const bart_weights *W, bart_weights *G, void *tape,
                        float *dx, lc_err *err)
{
	embed_tape *t = tape;
	float *de = malloc((size_t)(t->L * c->d_model) * sizeof *de);

	if (!de)
		return lc_fail(err, "out of memory (source of %lld tokens)", (long long)t->L);
	emb_bw(c, &t->emb, t->L, W->enc_ln_w, dx, G->enc_ln_w, G->enc_ln_b, G->shared, G->enc_pos,
	       de);
	free(de);
	return 0;
}

void *bart_train_layers_fw(const lc_config *c, const bart_enc_layer *layers,
                           const bart_sa_train *sa, const float *x0, int64_t R, lc_arena *a,
                           double p, uint64_t *rng, float **out, lc_err *err)
{
	int d = c->d_model, nl = c->num_layers;
	layers_tape *tp;
	const float *x = x0;
	float *tmp;

	tp = lc_arena_bytes(a, sizeof *tp);
	if (!tp || !(tp->l = lc_arena_bytes(a, (int64_t)(nl ? nl : 1) * (int64_t)sizeof *tp->l)) ||
	    !(tmp = lc_arena_f32(a, R * d)))
		goto oom;
	tp->nl = nl;
	tp->R = R;
	for (int li = 0; li < nl; li++) {
		const bart_enc_layer *Ly = &layers[li];
		enc_layer_tape *l = &tp->l[li];
		float *y;

		l->x = (float *)x;
		l->q = lc_arena_f32(a, R * d); l->k = lc_arena_f32(a, R * d);
		l->v = lc_arena_f32(a, R * d); l->o = lc_arena_f32(a, R * d);
		l->x1 = lc_arena_f32(a, R * d);
		y = lc_arena_f32(a, R * d);
		if (!lc_arena_ok(a) || addnorm_alloc(&l->an, R, d, a, p, rng) < 0)
			goto oom;
		linear_fw(l->q, x, Ly->sa.wq, Ly->sa.bq, R, d, d, 0.0f, 1);
		linear_fw(l->k, x, Ly->sa.wk, Ly->sa.bk, R, d, d, 0.0f, 1);
		linear_fw(l->v, x, Ly->sa.wv, Ly->sa.bv, R, d, d, 0.0f, 1);
		if (sa->fw(sa->ctx, li, l->q, l->k, l->v, R, l->o, a, &l->sa, err) < 0)
			return NULL;
		linear_fw(tmp, l->o, Ly->sa.wo, Ly->sa.bo, R, d, d, 0.0f, 1);
		if (sa->post_fw && sa->post_fw(sa->ctx, li, tmp, R, a, &l->post, err) < 0)
			return NULL;
		addnorm_fw(&l->an, x, tmp, R, d, Ly->sa.ln_w, Ly->sa.ln_b, c->eps, l->x1);
		if (ffn_fw(c, &Ly->ff, c->enc_ff, l->x1, R, a, p, rng, &l->ff, tmp, y) < 0)
			goto oom;
		x = y;
	}
	*out = (float *)x;
	return tp;
oom:
	lc_fail(err, "out of memory (%lld rows)", (long long)R);
	return NULL;
}

int bart_train_layers_bw(const lc_config *c, const bart_enc_layer *layers, bart_enc_layer *G,
                         const bart_sa_train *sa, void *tape, float *dx, lc_err *err)
{
	layers_tape *tp = tape;
	int64_t R = tp->R;
	int d = c->d_model, ff = c->enc_ff;
	lc_arena a = { 0 };
	float *d1, *dt, *da, *dq, *dk, *dv;
	int rc = -1;

	d1 = lc_arena_f32(&a, R * d); dt = lc_arena_f32(&a, R * d);
	da = lc_arena_f32(&a, R * ff);
	dq = lc_arena_f32(&a, R * d); dk = lc_arena_f32(&a, R * d); dv = lc_arena_f32(&a, R * d);
	if (!lc_arena_ok(&a)) {
		lc_fail(err, "out of memory (%lld rows)", (long long)R);
		goto out;
	}
	for (int li = tp->nl - 1; li >= 0; li--) {
		const bart_enc_layer *Ly = &layers[li];
		bart_enc_layer *Lg = &G[li];
		enc_layer_tape *l = &tp->l[li];

		/* dx: of the layer's output; d1: of x1 */
		ffn_bw(c, &Ly->ff, &Lg->ff, ff, &l->ff, l->x1, dx, R, d1, dt, da);
		/* x1 = LN(x + m (o wo^T + bo)): dx of the input, dt of the attention's output */
		addnorm_bw(&l->an, d1, R, d, Ly->sa.ln_w, Lg->sa.ln_w, Lg->sa.ln_b, dx, dt);
		if (sa->post_bw && sa->post_bw(sa->ctx, li, l->post, dt, R, err) < 0)
			goto out;
		memset(d1, 0, (size_t)(R * d) * sizeof *d1);
		linear_bw(dt, l->o, Ly->sa.wo, R, d, d, d1, Lg->sa.wo, Lg->sa.bo);
		memset(dq, 0, (size_t)(R * d) * sizeof *dq);
		memset(dk, 0, (size_t)(R * d) * sizeof *dk);
		memset(dv, 0, (size_t)(R * d) * sizeof *dv);
		if (sa->bw(sa->ctx, li, l->sa, l->q, l->k, l->v, R, d1, dq, dk, dv, err) < 0)
			goto out;
		linear_bw(dq, l->x, Ly->sa.wq, R, d, d, dx, Lg->sa.wq, Lg->sa.bq);
		linear_bw(dk, l->x, Ly->sa.wk, R, d, d, dx, Lg->sa.wk, Lg->sa.bk);
		linear_bw(dv, l->x, Ly->sa.wv, R, d, d, dx, Lg->sa.wv, Lg->sa.bv);
	}
	rc = 0;
out:
	lc_arena_free(&a);
	return rc;
}

void *bart_train_enc_fw(const lc_config *c, const bart_weights *W, const bart_sa_train *sa,
                        const int32_t *src, int64_t L, lc_arena *a, double p, uint64_t *rng,
                        float **E, lc_err *err)
{
	int64_t R = L;
	enc_tape *tp;
	float *x;

	if (sa->rows && L >= 1 && (R = sa->rows(sa->ctx, L)) < L) {
		lc_fail(err, "source of %lld tokens: no rows to run over", (long long)L);
		return NULL;
	}
	if (!(tp = lc_arena_bytes(a, sizeof *tp))) {
		lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
		return NULL;
	}
	tp->L = L;
	tp->R = R;
	if (!(tp->emb = bart_train_embed_fw(c, W, src, L, R, a, p, rng, &x, err)) ||
	    !(tp->layers = bart_train_layers_fw(c, W->enc, sa, x, R, a, p, rng, E, err)))
		return NULL;
	return tp;
}

int bart_train_enc_bw(const lc_config *c, const bart_weights *W, bart_weights *G,
                      const bart_sa_train *sa, void *tape, const float *dE, lc_err *err)
{
	enc_tape *tp = tape;
	int64_t L = tp->L, R = tp->R;
	int d = c->d_model;
	float *dx = calloc((size_t)(R * d), sizeof *dx);
	int rc = -1;

	if (!dx)
		return lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
	/* the padding rows' gradient is 0 */
	memcpy(dx, dE, (size_t)(L * d) * sizeof *dx);
	if (bart_train_layers_bw(c, W->enc, G->enc, sa, tp->layers, dx, err) == 0 &&
	    bart_train_embed_bw(c, W, G, tp->emb, dx, err) == 0)
		rc = 0;
	free(dx);
	return rc;
}

/* ------------------------------------------------------------- decoder */

typedef struct dec_layer_tape {
	float *x;                       /* [T, d] input */
	float *q, *k, *v;               /* [T, d] self-attention (q scaled) */
	float *P;                       /* [H, T, T] */
	float *o;                       /* [T, d] */
	addnorm an0;
	float *x1;                      /* [T, d] */
	float *cq;                      /* [T, d] cross queries (scaled) */
	float *qp, *ctx;                /* [T H, d] in model space */
	float *lse;                     /* [T H] */
	float *co;                      /* [T, d] cross values, with bv */
	addnorm an1;
	float *x2;                      /* [T, d] */
	ffn_tape ff;
} dec_layer_tape;

typedef struct dec_tape {
	int64_t T, Le;
	const float *E;
	emb_tape emb;
	dec_layer_tape *l;
	float *out;                     /* [T, d] the last layer's */
} dec_tape;

static float qscale_of(const lc_config *c)
{
	return 1.0f / sqrtf((float)(c->d_model / c->num_heads));
}

void *bart_train_dec_fw(const lc_config *c, const bart_weights *W, const float *E, int64_t Le,
                        const int32_t *in, int64_t T, lc_arena *a, double p, uint64_t *rng,
                        float **logits, lc_err *err)
{
	int d = c->d_model, H = c->num_heads, dk = d / H, nl = c->num_decoder_layers;
	int V = c->vocab_size;
	float qs = qscale_of(c), *x, *tmp;
	const float *lm = c->tie_word_embeddings ? W->shared : W->lm_head;
	attn_spec sp = { .causal = 1, .heads = H, .dk = dk, .scale = 1.0f };
	dec_tape *tp;
	xattn_work *xw = NULL;

	if (T < 1 || T > bart_dec_positions(c)) {
		lc_fail(err, "target of %lld tokens: the decoder takes 1 to %d (its positions)",
		        (long long)T, bart_dec_positions(c));
		return NULL;
	}
	for (int64_t i = 0; i < T; i++)
		if (in[i] < 0 || in[i] >= V) {
			lc_fail(err, "decoder input %lld: id %ld is outside the vocabulary [0, %d)",
			        (long long)i, (long)in[i], V);
			return NULL;
		}
	tp = lc_arena_bytes(a, sizeof *tp);
	if (!tp || !(tp->l = lc_arena_bytes(a, (int64_t)(nl ? nl : 1) * (int64_t)sizeof *tp->l)) ||
	    !(tmp = lc_arena_f32(a, T * d)) || !(*logits = lc_arena_f32(a, T * V)))
		goto oom;
	tp->T = T;
	tp->E = E;
	tp->Le = Le;
	x = lc_arena_f32(a, T * d);
	if (!x || emb_fw(c, W->shared, W->dec_pos, W->dec_ln_w, W->dec_ln_b, in, T, a, p, rng,
	                 &tp->emb, x) < 0)
		goto oom;
	if (!(xw = xattn_work_new(T * H, d, 1, err)))
		return NULL;
	for (int li = 0; li < nl; li++) {
		const bart_dec_layer *Ly = &W->dec[li];
		dec_layer_tape *l = &tp->l[li];
		float *y;

		l->x = x;
		l->q = lc_arena_f32(a, T * d); l->k = lc_arena_f32(a, T * d);
		l->v = lc_arena_f32(a, T * d); l->o = lc_arena_f32(a, T * d);
		l->P = lc_arena_f32(a, (int64_t)H * T * T);
		l->x1 = lc_arena_f32(a, T * d); l->cq = lc_arena_f32(a, T * d);
		l->qp = lc_arena_f32(a, T * H * d); l->ctx = lc_arena_f32(a, T * H * d);
		l->lse = lc_arena_f32(a, T * H); l->co = lc_arena_f32(a, T * d);
		l->x2 = lc_arena_f32(a, T * d);
		y = lc_arena_f32(a, T * d);
		if (!lc_arena_ok(a) || addnorm_alloc(&l->an0, T, d, a, p, rng) < 0 ||
		    addnorm_alloc(&l->an1, T, d, a, p, rng) < 0)
			goto oom;

		/* causal self-attention: q scaled after its bias, as inference does */
		linear_fw(l->q, x, Ly->sa.wq, Ly->sa.bq, T, d, d, 0.0f, 1);
		for (int64_t i = 0; i < T * d; i++)
			l->q[i] *= qs;
		linear_fw(l->k, x, Ly->sa.wk, Ly->sa.bk, T, d, d, 0.0f, 1);
		linear_fw(l->v, x, Ly->sa.wv, Ly->sa.bv, T, d, d, 0.0f, 1);
		attn_fw(&sp, l->q, d, l->k, l->v, d, T, 0, l->o, d, l->P);
		linear_fw(tmp, l->o, Ly->sa.wo, Ly->sa.bo, T, d, d, 0.0f, 1);
		addnorm_fw(&l->an0, x, tmp, T, d, Ly->sa.ln_w, Ly->sa.ln_b, c->eps, l->x1);

		/* cross-attention in model space (bart.h: the key bias cancels) */
		linear_fw(l->cq, l->x1, Ly->ca.wq, Ly->ca.bq, T, d, d, 0.0f, 1);
		for (int64_t i = 0; i < T * d; i++)
			l->cq[i] *= qs;
		cmp_gemm_batch(CMP_N, CMP_N, T, d, dk, 1.0f, l->cq, d, dk, Ly->ca.wk, d,
		               (int64_t)dk * d, 0.0f, l->qp, (int64_t)H * d, d, H);
		xattn_fw(xw, l->qp, T * H, E, Le, d, l->ctx, l->lse);
		cmp_gemm_batch(CMP_N, CMP_T, T, dk, d, 1.0f, l->ctx, (int64_t)H * d, d, Ly->ca.wv, d,
		               (int64_t)dk * d, 0.0f, l->co, d, dk, H);
		for (int64_t r = 0; r < T; r++)
			for (int j = 0; j < d; j++)
				l->co[r * d + j] += Ly->ca.bv[j];
		linear_fw(tmp, l->co, Ly->ca.wo, Ly->ca.bo, T, d, d, 0.0f, 1);
		addnorm_fw(&l->an1, l->x1, tmp, T, d, Ly->ca.ln_w, Ly->ca.ln_b, c->eps, l->x2);

		if (ffn_fw(c, &Ly->ff, c->d_ff, l->x2, T, a, p, rng, &l->ff, tmp, y) < 0)
			goto oom;
		x = y;
	}
	xattn_work_free(xw);
	tp->out = x;
	linear_fw(*logits, x, lm, NULL, T, V, d, 0.0f, 1);
	for (int64_t r = 0; r < T; r++)
		for (int j = 0; j < V; j++)
			(*logits)[r * V + j] += W->final_logits_bias[j];
	return tp;
oom:
	xattn_work_free(xw);
	lc_fail(err, "out of memory (target of %lld tokens)", (long long)T);
	return NULL;
}

int bart_train_dec_bw(const lc_config *c, const bart_weights *W, bart_weights *G, void *tape,
                      float *dlogits, float *dE, lc_err *err)
{
	dec_tape *tp = tape;
	int64_t T = tp->T;
	int d = c->d_model, H = c->num_heads, dk = d / H, V = c->vocab_size;
	float qs = qscale_of(c);
	const float *lm = c->tie_word_embeddings ? W->shared : W->lm_head;
	float *G_lm = c->tie_word_embeddings ? G->shared : G->lm_head;
	attn_spec sp = { .causal = 1, .heads = H, .dk = dk, .scale = 1.0f };
	lc_arena a = { 0 };
	float *dx, *d1, *dt, *da, *dq, *dk_, *dv, *work, *dctx, *dqp;
	int rc = -1;

	dx = lc_arena_f32(&a, T * d); d1 = lc_arena_f32(&a, T * d); dt = lc_arena_f32(&a, T * d);
	da = lc_arena_f32(&a, T * c->d_ff);
	dq = lc_arena_f32(&a, T * d); dk_ = lc_arena_f32(&a, T * d); dv = lc_arena_f32(&a, T * d);
	work = lc_arena_f32(&a, (int64_t)H * T * T);
	dctx = lc_arena_f32(&a, T * H * d); dqp = lc_arena_f32(&a, T * H * d);
	if (!lc_arena_ok(&a)) {
		lc_fail(err, "out of memory (target of %lld tokens)", (long long)T);
		goto out;
	}
	/* logits = x lm^T + final_logits_bias (a buffer: no gradient) */
	linear_bw(dlogits, tp->out, lm, T, V, d, dx, G_lm, NULL);
	for (int li = c->num_decoder_layers - 1; li >= 0; li--) {
		const bart_dec_layer *Ly = &W->dec[li];
		bart_dec_layer *Lg = &G->dec[li];
		dec_layer_tape *l = &tp->l[li];

		/* feed-forward: dx of the output -> d1 of x2 */
		ffn_bw(c, &Ly->ff, &Lg->ff, c->d_ff, &l->ff, l->x2, dx, T, d1, dt, da);

		/* cross-attention: x2 = LN(x1 + m (co wo^T + bo)); dx of x1 */
		addnorm_bw(&l->an1, d1, T, d, Ly->ca.ln_w, Lg->ca.ln_w, Lg->ca.ln_b, dx, dt);
		memset(d1, 0, (size_t)(T * d) * sizeof *d1);
		linear_bw(dt, l->co, Ly->ca.wo, T, d, d, d1, Lg->ca.wo, Lg->ca.bo);
		/* co_h = ctx_h W_v,h^T + bv_h */
		for (int64_t r = 0; r < T; r++)
			for (int j = 0; j < d; j++)
				Lg->ca.bv[j] += d1[r * d + j];
		cmp_gemm_batch(CMP_N, CMP_N, T, d, dk, 1.0f, d1, d, dk, Ly->ca.wv, d, (int64_t)dk * d,
		               0.0f, dctx, (int64_t)H * d, d, H);
		cmp_gemm_batch(CMP_T, CMP_N, dk, d, T, 1.0f, d1, d, dk, l->ctx, (int64_t)H * d, d,
		               1.0f, Lg->ca.wv, d, (int64_t)dk * d, H);
		if (xattn_bw(l->qp, T * H, tp->E, tp->Le, d, l->ctx, l->lse, dctx, dqp, dE, err) < 0)
			goto out;
		/* qp_h = cq_h W_k,h: dcq_h = dqp_h W_k,h^T, dW_k,h += cq_h^T dqp_h */
		cmp_gemm_batch(CMP_N, CMP_T, T, dk, d, 1.0f, dqp, (int64_t)H * d, d, Ly->ca.wk, d,
		               (int64_t)dk * d, 0.0f, dq, d, dk, H);
		cmp_gemm_batch(CMP_T, CMP_N, dk, d, T, 1.0f, l->cq, d, dk, dqp, (int64_t)H * d, d,
		               1.0f, Lg->ca.wk, d, (int64_t)dk * d, H);
		for (int64_t i = 0; i < T * d; i++)
			dq[i] *= qs;
		linear_bw(dq, l->x1, Ly->ca.wq, T, d, d, dx, Lg->ca.wq, Lg->ca.bq);

		/* self-attention: x1 = LN(x + m (o wo^T + bo)); dx of x */
		memcpy(d1, dx, (size_t)(T * d) * sizeof *d1);
		addnorm_bw(&l->an0, d1, T, d, Ly->sa.ln_w, Lg->sa.ln_w, Lg->sa.ln_b, dx, dt);
		memset(d1, 0, (size_t)(T * d) * sizeof *d1);
		linear_bw(dt, l->o, Ly->sa.wo, T, d, d, d1, Lg->sa.wo, Lg->sa.bo);
		memset(dq, 0, (size_t)(T * d) * sizeof *dq);
		memset(dk_, 0, (size_t)(T * d) * sizeof *dk_);
		memset(dv, 0, (size_t)(T * d) * sizeof *dv);
		attn_bw(&sp, l->q, d, l->k, l->v, d, T, 0, d1, d, l->P, dq, dk_, dv, work);
		for (int64_t i = 0; i < T * d; i++)
			dq[i] *= qs;
		linear_bw(dq, l->x, Ly->sa.wq, T, d, d, dx, Lg->sa.wq, Lg->sa.bq);
		linear_bw(dk_, l->x, Ly->sa.wk, T, d, d, dx, Lg->sa.wk, Lg->sa.bk);
		linear_bw(dv, l->x, Ly->sa.wv, T, d, d, dx, Lg->sa.wv, Lg->sa.bv);
	}
	emb_bw(c, &tp->emb, T, W->dec_ln_w, dx, G->dec_ln_w, G->dec_ln_b, G->shared, G->dec_pos, d1);
	rc = 0;
out:
	lc_arena_free(&a);
	return rc;
}

/* ------------------------------------------------------------ the ops */

void *bart_train_shared_new(const lc_config *c, int parts, lc_err *err)
{
	(void)parts;
	(void)err;
	return (void *)c;
}

void bart_train_shared_free(void *sh)
{
	(void)sh;
}

int bart_train_step_begin(void *sh, const void *W, int64_t Lmax, int threads, lc_err *err)
{
	(void)sh; (void)W; (void)Lmax; (void)threads; (void)err;
	return 0;
}

int bart_train_step_end(void *sh, const void *W, void *G, int threads, lc_err *err)
{
	(void)sh; (void)W; (void)G; (void)threads; (void)err;
	return 0;
}

static void *tr_enc_fw(void *sh, int part, const void *W, const int32_t *src, int64_t L,
                       lc_arena *a, double p, uint64_t *rng, float **E, int64_t *Le, lc_err *err)
{
	const lc_config *c = sh;
	bart_sa_train sa = { .fw = bart_sa_full_fw, .bw = bart_sa_full_bw, .ctx = (void *)c };
	void *t;

	(void)part;
	if ((t = bart_train_enc_fw(c, W, &sa, src, L, a, p, rng, E, err)))
		*Le = L;
	return t;
}

static int tr_enc_bw(void *sh, int part, const void *W, void *G, void *tape, const float *dE,
                     lc_err *err)
{
	const lc_config *c = sh;
	bart_sa_train sa = { .fw = bart_sa_full_fw, .bw = bart_sa_full_bw, .ctx = (void *)c };

	(void)part;
	return bart_train_enc_bw(c, W, G, &sa, tape, dE, err);
}

void *bart_train_ops_dec_fw(void *sh, const void *W, const float *E, int64_t Le,
                            const int32_t *in, int64_t T, lc_arena *a, double p, uint64_t *rng,
                            float **logits, lc_err *err)
{
	return bart_train_dec_fw(sh, W, E, Le, in, T, a, p, rng, logits, err);
}

int bart_train_ops_dec_bw(void *sh, const void *W, void *G, void *tape, float *dlogits,
                          float *dE, lc_err *err)
{
	return bart_train_dec_bw(sh, W, G, tape, dlogits, dE, err);
}

const lc_train_ops bart_train_ops = {
	bart_train_shared_new, bart_train_shared_free, bart_train_step_begin, bart_train_step_end,
	tr_enc_fw, tr_enc_bw, bart_train_ops_dec_fw, bart_train_ops_dec_bw,
};
