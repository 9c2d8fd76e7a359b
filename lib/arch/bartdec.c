/*
 * bartdec.c: BART's decoder, one token per row and step (see bart.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/bart.h"
#include "base/arena.h"
#include "compute/compute.h"
#include "ops/attn.h"
#include "ops/dropout.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/xattn.h"

typedef struct bdec {
	const lc_config *c;
	const bart_weights *W;
	int d, H, dk, ff, V, nl;
	float escale;                   /* embeddings times sqrt(d) or 1 */
	float qscale;                   /* head_dim^-0.5 */
	const float *lm;                /* [V, d] */
} bdec;

typedef struct bstate {
	const bdec *b;
	dec_groups gs;                  /* the documents (a group's own: LSG's masked copy) */
	int nrow, rcap, gmax, max_steps, pos, nth;
	float *kc, *vc;                 /* [nl, rcap, max_steps, d] self-attention cache */
	float *tmp_cache;               /* [rcap, max_steps, d] */
	int32_t *src;                   /* [rcap] */
	float *x, *q, *k, *v, *o, *t;   /* [nrow, d] */
	float *qp, *ctx;                /* [nrow H, d] */
	float *h;                       /* [nrow, ff] */
	float *P;                       /* [H, max_steps] */
	xattn_work *xw;
} bstate;

void *bartdec_open(const lc_config *c, const bart_weights *w, lc_err *err)
{
	bdec *b;

	if (c->num_decoder_layers < 1 || c->d_model % c->num_heads) {
		lc_fail(err, "decoder: unsupported configuration (%d layers, d_model %d, %d heads)",
		        c->num_decoder_layers, c->d_model, c->num_heads);
		return NULL;
	}
	if (!(b = calloc(1, sizeof *b))) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	b->c = c;
	b->W = w;
	b->d = c->d_model;
	b->H = c->num_heads;
	b->dk = b->d / b->H;
	b->ff = c->d_ff;
	b->V = c->vocab_size;
	b->nl = c->num_decoder_layers;
	b->escale = c->scale_embedding ? sqrtf((float)b->d) : 1.0f;
	b->qscale = 1.0f / sqrtf((float)b->dk);
	b->lm = c->tie_word_embeddings ? w->shared : w->lm_head;
	return b;
}

void bartdec_close(void *d)
{
	free(d);
}

void bartdec_state_free(void *p)
{
	bstate *s = p;

	if (!s)
		return;
	dec_groups_free(&s->gs); free(s->src); free(s->kc); free(s->vc); free(s->tmp_cache); free(s->x); free(s->q); free(s->k);
	free(s->v); free(s->o); free(s->t); free(s->qp); free(s->ctx); free(s->h); free(s->P);
	xattn_work_free(s->xw);
	free(s);
}

/* LSG with mask_first_token: the authors' encoder zeroes the first
 * token's attention mask in place, and generate() hands the same mask to
 * the cross-attention, so the decoder never sees that row; unless it is
 * the only one (a one-token document without the global rows): every
 * key masked, their softmax is uniform over it, and it is read whole. */
static int mask_first(const bdec *b, dec_group *g, lc_err *err)
{
	int64_t row = b->c->pass_global_tokens ? b->c->num_global_tokens : 0, L = g->L;
	const float *enc = g->E;
	size_t d = (size_t)b->d;

	if (L <= 1)
		return 0;
	if (row == 0) {
		g->E = enc + d;
	} else if (row < L) {
		if (!(g->own = lc_calloc_f32((uint64_t)L - 1, d, 1)))
			return lc_fail(err, "decoder: out of memory");
		memcpy(g->own, enc, (size_t)row * d * sizeof *enc);
		memcpy(g->own + row * (int64_t)d, enc + (row + 1) * (int64_t)d,
		       (size_t)(L - row - 1) * d * sizeof *enc);
		g->E = g->own;
	}
	g->L = row < L ? L - 1 : L;
	return 0;
}

void *bartdec_state_new(const void *dp, const dec_input *in, int n, int max_steps, lc_err *err)
{
	const bdec *b = dp;
	bstate *s;
	uint64_t nr, ms = (uint64_t)max_steps, d = (uint64_t)b->d;
	uint64_t H = (uint64_t)b->H;

	if (max_steps > bart_dec_positions(b->c)) {
		lc_fail(err, "decoder: %d steps are more than the model's %d positions "
		        "(%s); give fewer new tokens", max_steps, bart_dec_positions(b->c),
		        b->c->max_dec_positions ? "max_decoder_position_embeddings"
		                                : "max_position_embeddings");
		return NULL;
	}
	if (!(s = calloc(1, sizeof *s))) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	if (dec_groups_init(&s->gs, in, n, err) < 0) {
		free(s);
		return NULL;
	}
	s->b = b;
	for (int i = 0; i < n; i++) {
		if (b->c->mask_first_token && s->gs.g[i].L > 0 && mask_first(b, &s->gs.g[i], err) < 0) {
			bartdec_state_free(s);
			return NULL;
		}
		if (in[i].nrow > s->gmax)
			s->gmax = in[i].nrow;
	}
	dec_groups_to_device(&s->gs, (int)d);   /* after mask_first's copies */
	s->nrow = s->rcap = s->gs.nrow;
	nr = (uint64_t)s->nrow;
	s->max_steps = max_steps;
	s->nth = 1;
	s->kc = lc_calloc_f32((uint64_t)b->nl * nr, ms, d);
	s->vc = lc_calloc_f32((uint64_t)b->nl * nr, ms, d);
	s->tmp_cache = lc_calloc_f32(nr, ms, d);
	s->src = calloc(nr, sizeof *s->src);
	s->x = lc_calloc_f32(nr, d, 1);
	s->q = lc_calloc_f32(nr, d, 1);
	s->k = lc_calloc_f32(nr, d, 1);
	s->v = lc_calloc_f32(nr, d, 1);
	s->o = lc_calloc_f32(nr, d, 1);
	s->t = lc_calloc_f32(nr, d, 1);
	s->qp = lc_calloc_f32(nr * H, d, 1);
	s->ctx = lc_calloc_f32(nr * H, d, 1);
	s->h = lc_calloc_f32(nr, (uint64_t)b->ff, 1);
	s->P = lc_calloc_f32(H, ms, 1);
	if (!s->kc || !s->vc || !s->tmp_cache || !s->src || !s->x || !s->q || !s->k || !s->v ||
	    !s->o || !s->t || !s->qp || !s->ctx || !s->h || !s->P) {
		lc_fail(err, "decoder: out of memory for %d rows x %d steps", s->nrow, max_steps);
		bartdec_state_free(s);
		return NULL;
	}
	if (!(s->xw = xattn_work_new((int64_t)s->gmax * b->H, b->d, 1, err))) {
		bartdec_state_free(s);
		return NULL;
	}
	return s;
}

int bartdec_state_threads(void *p, int nthreads, lc_err *err)
{
	bstate *s = p;

	if (xattn_work_renew(&s->xw, (int64_t)s->gmax * s->b->H, s->b->d, nthreads, err) < 0)
		return -1;
	s->nth = nthreads;
	return 0;
}

int bartdec_pos(const void *p)
{
	return ((const bstate *)p)->pos;
}

/* x = LN(x + t) */
static void add_norm(float *x, const float *t, int64_t n, int d, const float *w, const float *b)
{
	residual_add(x, x, t, NULL, n * d);
	layernorm_fw(x, n, d, w, b, BART_EPS, x, NULL, NULL);
}

/* Cross-attention folded, in model space: the key bias cancels in the
 * softmax, the value bias adds once. */
static void cross_folded(bstate *s, const bart_dec_layer *Ly)
{
	int n = s->nrow, d = s->b->d, H = s->b->H, dk = s->b->dk;

	cmp_gemm_batch_par(s->nth, CMP_N, CMP_N, n, d, dk, 1.0f, s->q, d, dk, Ly->ca.wk, d,
	                   (int64_t)dk * d, 0.0f, s->qp, (int64_t)H * d, d, H);
	/* each document's rows over its own states */
	for (int g = 0; g < s->gs.n; g++) {
		const dec_group *gr = &s->gs.g[g];
		int64_t r0 = (int64_t)gr->row0 * H;
		xattn_fw_any(s->xw, s->qp + r0 * d, (int64_t)gr->nrow * H, gr->E, gr->Edev, gr->L,
		             d, s->ctx + r0 * d, NULL);
	}
	cmp_gemm_batch_par(s->nth, CMP_N, CMP_T, n, dk, d, 1.0f, s->ctx, (int64_t)H * d, d,
	                   Ly->ca.wv, d, (int64_t)dk * d, 0.0f, s->o, d, dk, H);
	for (int r = 0; r < n; r++)
		for (int j = 0; j < d; j++)
			s->o[(size_t)r * d + j] += Ly->ca.bv[j];
}

/* The cross-attention caches, at the first step (with the step's
 * threads). */
static int xcache_build(bstate *s, lc_err *err)
{
	const bdec *b = s->b;
	xcache_w w[b->nl];

	for (int li = 0; li < b->nl; li++) {
		const bart_dec_layer *Ly = &b->W->dec[li];
		w[li] = (xcache_w){ Ly->ca.wk, Ly->ca.bk, Ly->ca.wv, Ly->ca.bv };
	}
	return dec_groups_xcache(&s->gs, b->nl, b->H, b->dk, b->d, w, s->nth, err);
}

int bartdec_step(void *p, const int32_t *tokens, float *logits, lc_err *err)
{
	bstate *s = p;
	const bdec *b = s->b;
	const bart_weights *W = b->W;
	int n = s->nrow, d = b->d, H = b->H, dk = b->dk, nth = s->nth;
	size_t ms = (size_t)s->max_steps;
	attn_spec sp = { .causal = 1, .heads = H, .dk = dk, .scale = 1.0f };

	if (s->pos >= s->max_steps)
		return lc_fail(err, "decoder: more than %d steps", s->max_steps);
	if (s->pos == 0 && xcache_build(s, err) < 0)
		return -1;
	for (int r = 0; r < n; r++) {
		if (tokens[r] < 0 || tokens[r] >= b->V)
			return lc_fail(err, "decoder: token id %ld out of range [0, %d)", (long)tokens[r],
			               b->V);
		bart_embed_row(b->c, W->shared, W->dec_pos, tokens[r], s->pos, b->escale,
		               s->x + (size_t)r * d);
	}
	layernorm_fw(s->x, n, d, W->dec_ln_w, W->dec_ln_b, BART_EPS, s->x, NULL, NULL);
	for (int li = 0; li < b->nl; li++) {
		const bart_dec_layer *Ly = &W->dec[li];
		float *kc = s->kc + (size_t)li * s->rcap * ms * d, *vc = s->vc + (size_t)li * s->rcap * ms * d;

		/* self-attention over the cache */
		linear_fw(s->q, s->x, Ly->sa.wq, Ly->sa.bq, n, d, d, 0.0f, nth);
		for (int64_t i = 0; i < (int64_t)n * d; i++)
			s->q[i] *= b->qscale;
		linear_fw(s->k, s->x, Ly->sa.wk, Ly->sa.bk, n, d, d, 0.0f, nth);
		linear_fw(s->v, s->x, Ly->sa.wv, Ly->sa.bv, n, d, d, 0.0f, nth);
		for (int r = 0; r < n; r++) {
			memcpy(kc + ((size_t)r * ms + (size_t)s->pos) * d, s->k + (size_t)r * d, (size_t)d * 4);
			memcpy(vc + ((size_t)r * ms + (size_t)s->pos) * d, s->v + (size_t)r * d, (size_t)d * 4);
			attn_fw(&sp, s->q + (size_t)r * d, d, kc + (size_t)r * ms * d, vc + (size_t)r * ms * d,
			        d, 1, s->pos, s->o + (size_t)r * d, d, s->P);
		}
		linear_fw(s->t, s->o, Ly->sa.wo, Ly->sa.bo, n, d, d, 0.0f, nth);
		add_norm(s->x, s->t, n, d, Ly->sa.ln_w, Ly->sa.ln_b);

		/* cross-attention in model space: the key bias cancels in the
		 * softmax, the value bias adds once */
		linear_fw(s->q, s->x, Ly->ca.wq, Ly->ca.bq, n, d, d, 0.0f, nth);
		for (int64_t i = 0; i < (int64_t)n * d; i++)
			s->q[i] *= b->qscale;
		if (li < s->gs.xlayers)   /* the biases in the cached keys and values */
			dec_groups_attend(&s->gs, li, s->xw, s->q, s->o, d, 1);
		else
			cross_folded(s, Ly);
		linear_fw(s->t, s->o, Ly->ca.wo, Ly->ca.bo, n, d, d, 0.0f, nth);
		add_norm(s->x, s->t, n, d, Ly->ca.ln_w, Ly->ca.ln_b);

		/* feed-forward */
		linear_fw(s->h, s->x, Ly->ff.w1, Ly->ff.b1, n, b->ff, d, 0.0f, nth);
		act_fw(b->c->act, s->h, NULL, (int64_t)n * b->ff, s->h);
		linear_fw(s->t, s->h, Ly->ff.w2, Ly->ff.b2, n, d, b->ff, 0.0f, nth);
		add_norm(s->x, s->t, n, d, Ly->ff.ln_w, Ly->ff.ln_b);
	}
	linear_fw(logits, s->x, b->lm, NULL, n, b->V, d, 0.0f, nth);
	for (int r = 0; r < n; r++)
		for (int j = 0; j < b->V; j++)
			logits[(size_t)r * b->V + j] += W->final_logits_bias[j];
	s->pos++;
	return 0;
}

static int reorder_rows(bstate *s, const int32_t *src, int nout, lc_err *err)
{
	float *caches[2] = { s->kc, s->vc };

	return attn_cache_reorder(caches, 2, s->b->nl, s->rcap, s->nrow, nout,
	                          (size_t)s->max_steps * s->b->d, (size_t)s->pos * s->b->d, src,
	                          s->tmp_cache, err);
}

int bartdec_reorder(void *p, const int32_t *src, lc_err *err)
{
	bstate *s = p;

	return reorder_rows(s, src, s->nrow, err);
}

int bartdec_keep(void *p, const int *keep, lc_err *err)
{
	bstate *s = p;
	int nout = dec_groups_keep(&s->gs, keep, s->src);

	if (reorder_rows(s, s->src, nout, err) < 0)
		return -1;
	s->nrow = nout;
	return 0;
}

dec_groups *bartdec_groups(void *p)
{
	return &((bstate *)p)->gs;
}
