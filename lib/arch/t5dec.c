/*
 * t5dec.c: the T5 decoder: its parameters, one forward for generation and
 * training, and the backward (see t5dec.h).
 */
#include "arch/t5dec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/machine.h"
#include "compute/compute.h"
#include "ops/attn.h"
#include "ops/dropout.h"
#include "ops/embed.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/xattn.h"

#define D1(a) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), 0, 0 })

/* ------------------------------------------------------------ parameters */

void t5dec_declare_embed(const lc_config *c, t5dec_weights *w, lc_params *p)
{
	params_add(p, &w->shared, param_init_normal, 0, D2(c->vocab_size, c->d_model),
	           "shared.weight");
	params_alias(p, "encoder.embed_tokens.weight", "shared.weight");
	params_alias(p, "decoder.embed_tokens.weight", "shared.weight");
	if (c->tie_word_embeddings)
		params_alias(p, "lm_head.weight", "shared.weight");
	else
		params_add(p, &w->lm_head, param_init_normal, 0, D2(c->vocab_size, c->d_model),
		           "lm_head.weight");
}

int t5dec_declare_layers(const lc_config *c, t5dec_weights *w, lc_params *p)
{
	int d = c->d_model, ff = c->d_ff, in = c->num_heads * c->d_kv;
	const unsigned nd = PARAM_NO_DECAY;

	if (!(w->layer = calloc((size_t)(c->num_decoder_layers ? c->num_decoder_layers : 1),
	                        sizeof *w->layer)))
		return -1;
	for (int i = 0; i < c->num_decoder_layers; i++) {
		t5dec_layer *L = &w->layer[i];
		const char *b = "decoder.block.%d.layer.";
		char s[64];
		snprintf(s, sizeof s, b, i);
		params_add(p, &L->sa_q, param_init_matrix, 0, D2(in, d), "%s0.SelfAttention.q.weight", s);
		params_add(p, &L->sa_k, param_init_matrix, 0, D2(in, d), "%s0.SelfAttention.k.weight", s);
		params_add(p, &L->sa_v, param_init_matrix, 0, D2(in, d), "%s0.SelfAttention.v.weight", s);
		params_add(p, &L->sa_o, param_init_matrix, 0, D2(d, in), "%s0.SelfAttention.o.weight", s);
		if (i == 0)
			params_add(p, &w->rel_bias, param_init_matrix, 0,
			           D2(c->rel_buckets, c->num_heads),
			           "%s0.SelfAttention.relative_attention_bias.weight", s);
		params_add(p, &L->ca_q, param_init_matrix, 0, D2(in, d), "%s1.EncDecAttention.q.weight", s);
		params_add(p, &L->ca_k, param_init_matrix, 0, D2(in, d), "%s1.EncDecAttention.k.weight", s);
		params_add(p, &L->ca_v, param_init_matrix, 0, D2(in, d), "%s1.EncDecAttention.v.weight", s);
		params_add(p, &L->ca_o, param_init_matrix, 0, D2(d, in), "%s1.EncDecAttention.o.weight", s);
		params_add(p, &L->sa_ln, param_init_norm, nd, D1(d), "%s0.layer_norm.weight", s);
		params_add(p, &L->ca_ln, param_init_norm, nd, D1(d), "%s1.layer_norm.weight", s);
		params_add(p, &L->ff_ln, param_init_norm, nd, D1(d), "%s2.layer_norm.weight", s);
		if (c->is_gated_act) {
			params_add(p, &L->wi0, param_init_matrix, 0, D2(ff, d), "%s2.DenseReluDense.wi_0.weight", s);
			params_add(p, &L->wi1, param_init_matrix, 0, D2(ff, d), "%s2.DenseReluDense.wi_1.weight", s);
		} else {
			params_add(p, &L->wi0, param_init_matrix, 0, D2(ff, d), "%s2.DenseReluDense.wi.weight", s);
		}
		params_add(p, &L->wo, param_init_matrix, 0, D2(d, ff), "%s2.DenseReluDense.wo.weight", s);
	}
	if (c->num_decoder_layers > 0)
		params_add(p, &w->final_ln, param_init_norm, nd, D1(d), "decoder.final_layer_norm.weight");
	return 0;
}

void t5dec_weights_free(t5dec_weights *w)
{
	free(w->layer);
	w->layer = NULL;
}

int t5dec_check(const lc_config *c, lc_err *err)
{
	if (c->d_model <= 0 || c->num_heads <= 0 || c->d_kv <= 0 || c->d_ff <= 0 ||
	    c->vocab_size <= 0 || c->num_decoder_layers <= 0 || c->rel_buckets < 2 ||
	    c->rel_max_distance <= c->rel_buckets / 2)
		return lc_fail(err, "decoder: unsupported configuration (d_model %d, heads %d, d_kv %d, "
		               "d_ff %d, vocab %d, decoder layers %d, buckets %d, max distance %d)",
		               c->d_model, c->num_heads, c->d_kv, c->d_ff, c->vocab_size,
		               c->num_decoder_layers, c->rel_buckets, c->rel_max_distance);
	return 0;
}

int t5_rel_bucket(int64_t rp, int num_buckets, int max_distance)
{
	int max_exact = num_buckets / 2;
	double v;
	int64_t b;

	if (rp < 0)
		rp = 0;
	if (rp < max_exact)
		return (int)rp;
	/* The float32 and float64 evaluations agree for every rp <= 200000
	 * (oracle README); float64 is used here. */
	v = log((double)rp / max_exact) / log((double)max_distance / max_exact) *
	    (num_buckets - max_exact);
	if (!(v < (double)num_buckets))
		return num_buckets - 1;
	b = max_exact + (int64_t)v;
	return b < num_buckets - 1 ? (int)b : num_buckets - 1;
}

/* ------------------------------------------------------------- forward */

typedef struct t5dec {
	const lc_config *c;
	const t5dec_weights *W;
	int d, inner, nh, dkv, dff, V, nl;
	float out_scale;                /* d^-0.5 when tied, else 1 */
	const float *lm;                /* [V, d]: lm_head, or shared when tied */
} t5dec;

static void t5_init(t5dec *t, const lc_config *c, const t5dec_weights *W)
{
	t->c = c;
	t->W = W;
	t->d = c->d_model;
	t->nh = c->num_heads;
	t->dkv = c->d_kv;
	t->inner = c->num_heads * c->d_kv;
	t->dff = c->d_ff;
	t->V = c->vocab_size;
	t->nl = c->num_decoder_layers;
	t->out_scale = c->tie_word_embeddings ? (float)(1.0 / sqrt((double)t->d)) : 1.0f;
	t->lm = c->tie_word_embeddings ? W->shared : W->lm_head;
}

/* What training keeps of one layer (rows T of one target). */
typedef struct tape_layer {
	float *x1, *x2;                 /* [T, d] inputs of the cross and feed-forward sublayers */
	float *r0, *r1, *r2;            /* [T] RMSNorm scales */
	float *h0, *h1, *h2;            /* [T, d] normed inputs */
	float *q, *k, *v;               /* [T, inner] self-attention */
	float *P;                       /* [nh, T, T] its probabilities */
	float *o;                       /* [T, inner] its context */
	float *cq;                      /* [T, inner] cross queries */
	float *qp, *ctx;                /* [T nh, d] queries and contexts in model space */
	float *lse;                     /* [T nh] */
	float *co;                      /* [T, inner] cross values */
	float *a, *b, *f;               /* [T, d_ff] */
	float *m0, *m1, *m2;            /* [T, d] dropout masks, or NULL */
} tape_layer;

typedef struct t5_tape {
	int64_t T, Le;
	const float *E;
	int32_t *in;                    /* [T] decoder inputs */
	int *bucket;                    /* [T] by distance */
	float *bias;                    /* [nh, T] */
	float *me;                      /* [T, d] embedding mask, or NULL */
	float **x0;                     /* [nl + 1] block inputs [T, d]; x0[nl] the last output */
	float *rf, *hf;                 /* [T], [T, d] final norm (scaled) */
	tape_layer *L;                  /* [nl] */
} t5_tape;

/* The buffers of one forward over N = nrow x T rows. Generation gets them
 * from its state; training points most of them into the tape. */
typedef struct fwd {
	int nrow, rcap;                 /* rows; the caches' rows per layer */
	int64_t T, pos;
	const dec_groups *gs;           /* the documents: encoder states and rows */
	float *kc, *vc;                 /* caches [nl, rcap, ms, inner] */
	int64_t ms;
	const float *bias;              /* [nh, ldb] by distance */
	int64_t ldb;
	xattn_work *xw;
	int nth;
	float *x, *h, *q, *k, *v, *att, *qp, *ctx, *f0, *f1, *P;   /* generation */
	double p;                       /* dropout (training) */
	uint64_t *rng;
	lc_arena *arena;
	t5_tape *tape;
} fwd;

/* x_next = x + mask (a W^T); in place (x_next == x) without a mask: the
 * product accumulates into x. */
static void out_residual(float *xn, const float *x, const float *a, const float *W, int64_t N,
                         int dout, int din, const float *mask, int nth)
{
	if (xn == x && !mask) {
		linear_fw(xn, a, W, NULL, N, dout, din, 1.0f, nth);
		return;
	}
	linear_fw(xn, a, W, NULL, N, dout, din, 0.0f, nth);
	residual_add(xn, x, xn, mask, N * dout);
}

static float *mask_new(fwd *f, int64_t n)
{
	float *m;

	if (!f->tape || f->p <= 0)
		return NULL;
	if ((m = lc_arena_f32(f->arena, n)))
		dropout_mask(m, n, f->p, f->rng);
	return m;
}

/* Cross-attention folded, in model space: co [N, inner] from cq. */
static void cross_folded(const t5dec *t, fwd *f, const t5dec_layer *L, tape_layer *tl,
                         const float *cq, float *co)
{
	int64_t N = (int64_t)f->nrow * f->T, T = f->T;
	int d = t->d, in = t->inner, nh = t->nh, dkv = t->dkv;
	float *qp = tl ? tl->qp : f->qp, *ctx = tl ? tl->ctx : f->ctx;

	/* qp[r nh + h] = W_k,h^T q_h: (N x dkv) . (dkv x d) per head */
	cmp_gemm_batch_par(f->nth, CMP_N, CMP_N, N, d, dkv, 1.0f, cq, in, dkv, L->ca_k, d,
	                   (int64_t)dkv * d, 0.0f, qp, (int64_t)nh * d, d, nh);
	/* each document's rows over its own states */
	for (int g = 0; g < f->gs->n; g++) {
		const dec_group *gr = &f->gs->g[g];
		int64_t r0 = (int64_t)gr->row0 * T * nh, nr = (int64_t)gr->nrow * T * nh;
		if (!gr->E16)
			xattn_fw_any(f->xw, qp + r0 * d, nr, gr->E, gr->Edev, gr->L, d, ctx + r0 * d,
			             tl ? tl->lse + r0 : NULL);
		else if (xattn_fw_dev(f->xw, qp + r0 * d, nr, gr->Edev, gr->L, d, ctx + r0 * d,
		                      NULL) == 0)       /* on the GPU */
			continue;
		else if (cmp_bf16_active())
			xattn_fw_bf16(f->xw, qp + r0 * d, nr, gr->E16, gr->L, d, ctx + r0 * d, NULL);
		else    /* a bf16 stream in fp32 arithmetic */
			xattn_fw_w16(f->xw, qp + r0 * d, nr, gr->E16, gr->L, d, ctx + r0 * d, NULL);
	}
	/* values: co[r, h dkv..] = W_v,h . ctx[r, h]: (N x d) . (d x dkv) per head */
	cmp_gemm_batch_par(f->nth, CMP_N, CMP_T, N, dkv, d, 1.0f, ctx, (int64_t)nh * d, d,
	                   L->ca_v, d, (int64_t)dkv * d, 0.0f, co, in, dkv, nh);
}

/* Feeds tokens [nrow, T] at positions pos..pos+T-1; logits [nrow T, V]. */
static int t5_forward(const t5dec *t, fwd *f, const int32_t *tokens, float *logits)
{
	const t5dec_weights *W = t->W;
	int64_t N = (int64_t)f->nrow * f->T, T = f->T, ms = f->ms;
	int d = t->d, in = t->inner, nh = t->nh, dkv = t->dkv, nth = f->nth;
	float eps = t->c->eps;
	t5_tape *tp = f->tape;
	attn_spec sp = { .causal = 1, .heads = nh, .dk = dkv, .scale = 1.0f, .bias = f->bias,
	                .ldb = f->ldb };
	float *x = tp ? tp->x0[0] : f->x;

	embed_fw(W->shared, d, tokens, N, 1.0f, x);
	if (tp && (tp->me = mask_new(f, N * d)))
		dropout_apply(x, tp->me, N * d);
	for (int li = 0; li < t->nl; li++) {
		const t5dec_layer *L = &W->layer[li];
		tape_layer *tl = tp ? &tp->L[li] : NULL;
		float *x1 = tl ? tl->x1 : x, *x2 = tl ? tl->x2 : x, *xn = tp ? tp->x0[li + 1] : x;
		float *kc = f->kc + (size_t)li * f->rcap * ms * in, *vc = f->vc + (size_t)li * f->rcap * ms * in;
		float *h, *q, *o, *cq, *co, *a, *b, *ff;

		/* self-attention */
		h = tl ? tl->h0 : f->h;
		rmsnorm_fw(x, N, d, L->sa_ln, eps, h, tl ? tl->r0 : NULL);
		q = tl ? tl->q : f->q;
		linear_fw(q, h, L->sa_q, NULL, N, in, d, 0.0f, nth);
		if (tl) {
			/* one row: the cache is the tape's k and v */
			linear_fw(tl->k, h, L->sa_k, NULL, N, in, d, 0.0f, nth);
			linear_fw(tl->v, h, L->sa_v, NULL, N, in, d, 0.0f, nth);
			kc = tl->k;
			vc = tl->v;
		} else {
			linear_fw(f->k, h, L->sa_k, NULL, N, in, d, 0.0f, nth);
			linear_fw(f->v, h, L->sa_v, NULL, N, in, d, 0.0f, nth);
			for (int r = 0; r < f->nrow; r++) {
				memcpy(kc + ((size_t)r * ms + (size_t)f->pos) * in, f->k + (size_t)r * T * in,
				       (size_t)(T * in) * sizeof(float));
				memcpy(vc + ((size_t)r * ms + (size_t)f->pos) * in, f->v + (size_t)r * T * in,
				       (size_t)(T * in) * sizeof(float));
			}
		}
		o = tl ? tl->o : f->att;
		for (int r = 0; r < f->nrow; r++)
			attn_fw(&sp, q + (size_t)r * T * in, in, kc + (size_t)r * ms * in,
			               vc + (size_t)r * ms * in, in, T, f->pos, o + (size_t)r * T * in, in,
			               tl ? tl->P : f->P);
		if (tl && !(tl->m0 = mask_new(f, N * d)) && f->p > 0)
			return -1;
		out_residual(x1, x, o, L->sa_o, N, d, in, tl ? tl->m0 : NULL, nth);

		/* cross-attention, in model space */
		h = tl ? tl->h1 : f->h;
		rmsnorm_fw(x1, N, d, L->ca_ln, eps, h, tl ? tl->r1 : NULL);
		cq = tl ? tl->cq : f->q;
		linear_fw(cq, h, L->ca_q, NULL, N, in, d, 0.0f, nth);
		co = tl ? tl->co : f->att;
		if (!tl && li < f->gs->xlayers)
			dec_groups_attend(f->gs, li, f->xw, cq, co, in, T);
		else
			cross_folded(t, f, L, tl, cq, co);
		if (tl && !(tl->m1 = mask_new(f, N * d)) && f->p > 0)
			return -1;
		out_residual(x2, x1, co, L->ca_o, N, d, in, tl ? tl->m1 : NULL, nth);

		/* feed-forward */
		h = tl ? tl->h2 : f->h;
		rmsnorm_fw(x2, N, d, L->ff_ln, eps, h, tl ? tl->r2 : NULL);
		a = tl ? tl->a : f->f0;
		b = tl ? tl->b : f->f1;
		ff = tl ? tl->f : f->f0;
		linear_fw(a, h, L->wi0, NULL, N, t->dff, d, 0.0f, nth);
		if (L->wi1)
			linear_fw(b, h, L->wi1, NULL, N, t->dff, d, 0.0f, nth);
		act_fw(t->c->act, a, L->wi1 ? b : NULL, N * t->dff, ff);
		if (tl && !(tl->m2 = mask_new(f, N * d)) && f->p > 0)
			return -1;
		out_residual(xn, x2, ff, L->wo, N, d, t->dff, tl ? tl->m2 : NULL, nth);
		x = xn;
	}
	{
		float *h = tp ? tp->hf : f->h;
		rmsnorm_fw(x, N, d, W->final_ln, eps, h, tp ? tp->rf : NULL);
		if (t->out_scale != 1.0f)
			for (int64_t i = 0; i < N * d; i++)
				h[i] *= t->out_scale;
		linear_fw(logits, h, t->lm, NULL, N, t->V, d, 0.0f, nth);
	}
	return 0;
}

/* ---------------------------------------------------------- generation */

typedef struct dstate {
	const t5dec *t;
	fwd f;
	dec_groups gs;
	int max_steps, pos, gmax;       /* gmax: rows of the largest document */
	float *tmp_cache;               /* [rcap, max_steps, inner], reorder scratch */
	int32_t *src;                   /* [rcap] */
	float *bias;                    /* [nh, max_steps] by distance */
} dstate;

void *t5dec_open(const lc_config *c, const t5dec_weights *w, lc_err *err)
{
	t5dec *t;

	if (t5dec_check(c, err) < 0)
		return NULL;
	if (!(t = calloc(1, sizeof *t))) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	t5_init(t, c, w);
	return t;
}

void t5dec_close(void *d)
{
	free(d);
}

void t5dec_state_free(void *p)
{
	dstate *s = p;
	fwd *f;

	if (!s)
		return;
	f = &s->f;
	free(f->kc); free(f->vc); free(f->x); free(f->h); free(f->q); free(f->k); free(f->v);
	free(f->att); free(f->qp); free(f->ctx); free(f->f0); free(f->f1); free(f->P);
	xattn_work_free(f->xw);
	free(s->tmp_cache);
	free(s->src);
	free(s->bias);
	dec_groups_free(&s->gs);
	free(s);
}

/* The cross-attention scratch's width: d for the folded layers, dkv for
 * the cached ones. */
static int xw_width(const t5dec *t)
{
	return t->d > t->dkv ? t->d : t->dkv;
}

void *t5dec_state_new(const void *dp, const dec_input *in, int n, int max_steps, lc_err *err)
{
	const t5dec *t = dp;
	dstate *s;
	fwd *f;
	uint64_t nl = (uint64_t)t->nl, nr, ms, inn = (uint64_t)t->inner, dm = (uint64_t)t->d;
	uint64_t nh = (uint64_t)t->nh;

	if (!(s = calloc(1, sizeof *s))) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	if (dec_groups_init(&s->gs, in, n, err) < 0) {
		free(s);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (in[i].nrow > s->gmax)
			s->gmax = in[i].nrow;
	/* --compute bf16: the cross-attention reads a bf16 copy of the states
	 * (half the bytes, AVX512-BF16's dot products); on the GPU their
	 * values (dec_groups_to_device), so a bf16 stream and float32 states
	 * rounded here decode alike on either device. A bf16 stream is taken
	 * as it is, also in fp32 arithmetic (decoder_reads_bf16) */
	for (int i = 0; i < n; i++) {
		dec_group *g = &s->gs.g[i];
		if (in[i].enc16) {
			g->E16 = in[i].enc16;
			continue;
		}
		if (!cmp_bf16_active())
			continue;
		if (!(g->own16 = malloc((size_t)g->L * dm * sizeof *g->own16 + 1))) {
			lc_fail(err, "decoder: out of memory for bf16 states (%lld x %llu)",
			        (long long)g->L, (unsigned long long)dm);
			t5dec_state_free(s);
			return NULL;
		}
		cmp_bf16_pack(g->E, g->L, (int64_t)dm, (int64_t)dm, g->own16, (int64_t)dm);
		g->E16 = g->own16;
	}
	dec_groups_to_device(&s->gs, t->d);
	nr = (uint64_t)s->gs.nrow;
	ms = (uint64_t)max_steps;
	{
		/* the self-attention's keys and values for every step: a model
		 * file asking 2^24 new tokens would otherwise grow into all of
		 * memory as it goes (T5's relative positions set no limit) */
		const char *bound;
		uint64_t mem = machine_memory(&bound);
		double need = 4.0 * (double)nr * (double)ms * (2.0 * (double)(nl * inn) + inn);
		if (mem && need > (double)mem) {
			lc_fail(err, "decoder: %d rows x %d steps need %.1f GiB for the self-attention "
			        "cache, more than the memory this process may use (%.1f GiB: %s); fewer "
			        "new tokens (--max-new) or beams", s->gs.nrow, max_steps,
			        need / 1073741824.0, (double)mem / 1073741824.0, bound);
			t5dec_state_free(s);
			return NULL;
		}
	}
	s->t = t;
	s->max_steps = max_steps;
	f = &s->f;
	f->nrow = f->rcap = s->gs.nrow;
	f->T = 1;
	f->gs = &s->gs;
	f->ms = max_steps;
	f->nth = 1;
	f->kc = lc_calloc_f32(nl * nr, ms, inn);
	f->vc = lc_calloc_f32(nl * nr, ms, inn);
	f->x = lc_calloc_f32(nr, dm, 1);
	f->h = lc_calloc_f32(nr, dm, 1);
	f->q = lc_calloc_f32(nr, inn, 1);
	f->k = lc_calloc_f32(nr, inn, 1);
	f->v = lc_calloc_f32(nr, inn, 1);
	f->att = lc_calloc_f32(nr, inn, 1);
	f->qp = lc_calloc_f32(nr * nh, dm, 1);
	f->ctx = lc_calloc_f32(nr * nh, dm, 1);
	f->f0 = lc_calloc_f32(nr, (uint64_t)t->dff, 1);
	f->f1 = lc_calloc_f32(nr, (uint64_t)t->dff, 1);
	f->P = lc_calloc_f32(nh, ms, 1);
	s->tmp_cache = lc_calloc_f32(nr, ms, inn);
	s->src = calloc(nr, sizeof *s->src);
	s->bias = lc_calloc_f32(nh, ms, 1);
	f->bias = s->bias;
	f->ldb = max_steps;
	if (!f->kc || !f->vc || !f->x || !f->h || !f->q || !f->k || !f->v || !f->att || !f->qp ||
	    !f->ctx || !f->f0 || !f->f1 || !f->P || !s->tmp_cache || !s->src || !s->bias) {
		lc_fail(err, "decoder: out of memory for %d rows x %d steps", s->gs.nrow, max_steps);
		t5dec_state_free(s);
		return NULL;
	}
	if (!(f->xw = xattn_work_new((int64_t)s->gmax * t->nh, xw_width(t), 1, err))) {
		t5dec_state_free(s);
		return NULL;
	}
	for (int rp = 0; rp < max_steps; rp++) {
		int b = t5_rel_bucket(rp, t->c->rel_buckets, t->c->rel_max_distance);
		for (int h = 0; h < t->nh; h++)
			s->bias[(size_t)h * ms + (size_t)rp] = t->W->rel_bias[(size_t)b * t->nh + h];
	}
	return s;
}

int t5dec_state_threads(void *p, int nthreads, lc_err *err)
{
	dstate *s = p;

	if (xattn_work_renew(&s->f.xw, (int64_t)s->gmax * s->t->nh, xw_width(s->t), nthreads,
	                     err) < 0)
		return -1;
	s->f.nth = nthreads;
	return 0;
}

int t5dec_pos(const void *p)
{
	return ((const dstate *)p)->pos;
}

dec_groups *t5dec_groups(void *p)
{
	return &((dstate *)p)->gs;
}

/* The cross-attention caches, at the first step (with the step's
 * threads): T5's cross-attention has no biases. */
static int xcache_build(dstate *s, lc_err *err)
{
	const t5dec *t = s->t;
	xcache_w w[t->nl > 0 ? t->nl : 1];

	for (int li = 0; li < t->nl; li++)
		w[li] = (xcache_w){ t->W->layer[li].ca_k, NULL, t->W->layer[li].ca_v, NULL };
	return dec_groups_xcache(&s->gs, t->nl, t->nh, t->dkv, t->d, w, s->f.nth, err);
}

int t5dec_step(void *p, const int32_t *tokens, float *logits, lc_err *err)
{
	dstate *s = p;

	if (s->pos >= s->max_steps)
		return lc_fail(err, "decoder: more than %d steps", s->max_steps);
	for (int r = 0; r < s->f.nrow; r++)
		if (tokens[r] < 0 || tokens[r] >= s->t->V)
			return lc_fail(err, "decoder: token id %ld out of range [0, %d)", (long)tokens[r],
			               s->t->V);
	if (s->pos == 0 && xcache_build(s, err) < 0)
		return -1;
	s->f.pos = s->pos;
	if (t5_forward(s->t, &s->f, tokens, logits) < 0)
		return lc_fail(err, "decoder: out of memory");
	s->pos++;
	return 0;
}

static int reorder_rows(dstate *s, const int32_t *src, int nout, lc_err *err)
{
	float *caches[2] = { s->f.kc, s->f.vc };

	return attn_cache_reorder(caches, 2, s->t->nl, s->f.rcap, s->f.nrow, nout,
	                          (size_t)s->max_steps * s->t->inner, (size_t)s->pos * s->t->inner,
	                          src, s->tmp_cache, err);
}

int t5dec_reorder(void *p, const int32_t *src, lc_err *err)
{
	dstate *s = p;

	return reorder_rows(s, src, s->f.nrow, err);
}

int t5dec_keep(void *p, const int *keep, lc_err *err)
{
	dstate *s = p;
	int nout = dec_groups_keep(&s->gs, keep, s->src);

	if (reorder_rows(s, s->src, nout, err) < 0)
		return -1;
	s->f.nrow = nout;
	return 0;
}

/* ------------------------------------------------------------ training */

void *t5dec_train_fw(const lc_config *c, const t5dec_weights *W, const float *E, int64_t Le,
                     const int32_t *in, int64_t T, lc_arena *a, double p, uint64_t *rng,
                     float **logits, lc_err *err)
{
	t5dec t;
	fwd f;
	t5_tape *tp;
	int d, inn, nh, dff;
	dec_group g1 = { .E = E, .L = Le, .nrow = 1 };
	dec_groups one = { .n = 1, .nrow = 1, .rcap = 1, .g = &g1 };

	t5_init(&t, c, W);
	d = t.d;
	inn = t.inner;
	nh = t.nh;
	dff = t.dff;
	memset(&f, 0, sizeof f);
	if (T < 1) {
		lc_fail(err, "empty target");
		return NULL;
	}
	tp = lc_arena_bytes(a, sizeof *tp);
	if (!tp)
		goto oom;
	tp->T = T;
	tp->E = E;
	tp->Le = Le;
	tp->in = lc_arena_bytes(a, T * (int64_t)sizeof *tp->in);
	tp->bucket = lc_arena_bytes(a, T * (int64_t)sizeof *tp->bucket);
	tp->bias = lc_arena_f32(a, (int64_t)nh * T);
	tp->x0 = lc_arena_bytes(a, (int64_t)(t.nl + 1) * (int64_t)sizeof *tp->x0);
	tp->L = lc_arena_bytes(a, (int64_t)(t.nl ? t.nl : 1) * (int64_t)sizeof *tp->L);
	tp->rf = lc_arena_f32(a, T);
	tp->hf = lc_arena_f32(a, T * d);
	*logits = lc_arena_f32(a, T * t.V);
	if (!lc_arena_ok(a))
		goto oom;
	for (int li = 0; li <= t.nl; li++)
		tp->x0[li] = lc_arena_f32(a, T * d);
	for (int li = 0; li < t.nl; li++) {
		tape_layer *l = &tp->L[li];
		l->x1 = lc_arena_f32(a, T * d); l->x2 = lc_arena_f32(a, T * d);
		l->r0 = lc_arena_f32(a, T); l->r1 = lc_arena_f32(a, T); l->r2 = lc_arena_f32(a, T);
		l->h0 = lc_arena_f32(a, T * d); l->h1 = lc_arena_f32(a, T * d); l->h2 = lc_arena_f32(a, T * d);
		l->q = lc_arena_f32(a, T * inn); l->k = lc_arena_f32(a, T * inn); l->v = lc_arena_f32(a, T * inn);
		l->P = lc_arena_f32(a, (int64_t)nh * T * T); l->o = lc_arena_f32(a, T * inn);
		l->cq = lc_arena_f32(a, T * inn);
		l->qp = lc_arena_f32(a, T * nh * d); l->ctx = lc_arena_f32(a, T * nh * d);
		l->lse = lc_arena_f32(a, T * nh); l->co = lc_arena_f32(a, T * inn);
		l->a = lc_arena_f32(a, T * dff); l->b = lc_arena_f32(a, T * dff);
		l->f = lc_arena_f32(a, T * dff);
	}
	if (!lc_arena_ok(a))
		goto oom;
	memcpy(tp->in, in, (size_t)T * sizeof *tp->in);
	for (int64_t rp = 0; rp < T; rp++) {
		tp->bucket[rp] = t5_rel_bucket(rp, c->rel_buckets, c->rel_max_distance);
		for (int h = 0; h < nh; h++)
			tp->bias[h * T + rp] = W->rel_bias[tp->bucket[rp] * nh + h];
	}
	f.nrow = f.rcap = 1;
	f.T = T;
	f.gs = &one;
	f.ms = T;
	f.bias = tp->bias;
	f.ldb = T;
	f.nth = 1;
	f.p = p;
	f.rng = rng;
	f.arena = a;
	f.tape = tp;
	f.kc = f.vc = tp->x0[0];        /* unused: the tape's k and v are the cache */
	if (!(f.xw = xattn_work_new(T * nh, d, 1, err)))
		return NULL;
	if (t5_forward(&t, &f, in, *logits) < 0 || !lc_arena_ok(a)) {
		xattn_work_free(f.xw);
		goto oom;
	}
	xattn_work_free(f.xw);
	return tp;
oom:
	lc_fail(err, "out of memory (target of %lld tokens)", (long long)T);
	return NULL;
}

int t5dec_train_bw(const lc_config *c, const t5dec_weights *W, t5dec_weights *G, void *tape,
                   float *dlogits, float *dE, lc_err *err)
{
	t5_tape *tp = tape;
	t5dec t;
	int64_t T = tp->T, Le = tp->Le;
	int d, in, nh, dkv, dff;
	float *dx, *dh, *dq, *dk, *dv, *dO, *work, *dA, *dB, *d1, *dctx, *dqp, *G_lm;
	lc_arena a = { 0 };
	int rc = -1;

	t5_init(&t, c, W);
	d = t.d;
	in = t.inner;
	nh = t.nh;
	dkv = t.dkv;
	dff = t.dff;
	G_lm = c->tie_word_embeddings ? G->shared : G->lm_head;
	dx = lc_arena_f32(&a, T * d); dh = lc_arena_f32(&a, T * d); d1 = lc_arena_f32(&a, T * d);
	dq = lc_arena_f32(&a, T * in); dk = lc_arena_f32(&a, T * in); dv = lc_arena_f32(&a, T * in);
	dO = lc_arena_f32(&a, T * in); work = lc_arena_f32(&a, (int64_t)nh * T * T);
	dA = lc_arena_f32(&a, T * dff); dB = lc_arena_f32(&a, T * dff);
	dctx = lc_arena_f32(&a, T * nh * d); dqp = lc_arena_f32(&a, T * nh * d);
	if (!lc_arena_ok(&a)) {
		lc_fail(err, "out of memory (target of %lld tokens)", (long long)T);
		goto out;
	}
	/* logits = hf lm^T, hf = scale * norm(x) */
	linear_bw(dlogits, tp->hf, t.lm, T, t.V, d, dh, G_lm, NULL);
	for (int64_t i = 0; i < T * d; i++)
		dh[i] *= t.out_scale;
	rmsnorm_bw(dh, tp->x0[t.nl], tp->rf, W->final_ln, T, d, dx, G->final_ln);
	for (int li = t.nl - 1; li >= 0; li--) {
		const t5dec_layer *L = &W->layer[li];
		t5dec_layer *Lg = &G->layer[li];
		tape_layer *l = &tp->L[li];
		attn_spec sp = { .causal = 1, .heads = nh, .dk = dkv, .scale = 1.0f, .bias = tp->bias,
		                .ldb = T };

		/* feed-forward: x_next = x2 + m2 (f wo^T) */
		for (int64_t i = 0; i < T * d; i++)
			d1[i] = l->m2 ? dx[i] * l->m2[i] : dx[i];
		memset(dA, 0, (size_t)(T * dff) * sizeof *dA);
		linear_bw(d1, l->f, L->wo, T, d, dff, dA, Lg->wo, NULL);
		act_bw(c->act, l->a, L->wi1 ? l->b : NULL, dA, T * dff, dA, L->wi1 ? dB : NULL);
		memset(dh, 0, (size_t)(T * d) * sizeof *dh);
		linear_bw(dA, l->h2, L->wi0, T, dff, d, dh, Lg->wi0, NULL);
		if (L->wi1)
			linear_bw(dB, l->h2, L->wi1, T, dff, d, dh, Lg->wi1, NULL);
		rmsnorm_bw(dh, l->x2, l->r2, L->ff_ln, T, d, dx, Lg->ff_ln);

		/* cross-attention: x2 = x1 + m1 (co Wo^T) */
		for (int64_t i = 0; i < T * d; i++)
			d1[i] = l->m1 ? dx[i] * l->m1[i] : dx[i];
		memset(dO, 0, (size_t)(T * in) * sizeof *dO);
		linear_bw(d1, l->co, L->ca_o, T, d, in, dO, Lg->ca_o, NULL);
		/* co_h = ctx_h W_v,h^T: dctx_h = dco_h W_v,h, dW_v,h += dco_h^T ctx_h */
		cmp_gemm_batch(CMP_N, CMP_N, T, d, dkv, 1.0f, dO, in, dkv, L->ca_v, d, (int64_t)dkv * d,
		               0.0f, dctx, (int64_t)nh * d, d, nh);
		cmp_gemm_batch(CMP_T, CMP_N, dkv, d, T, 1.0f, dO, in, dkv, l->ctx, (int64_t)nh * d, d,
		               1.0f, Lg->ca_v, d, (int64_t)dkv * d, nh);
		if (xattn_bw(l->qp, T * nh, tp->E, Le, d, l->ctx, l->lse, dctx, dqp, dE, err) < 0)
			goto out;
		/* qp_h = cq_h W_k,h: dcq_h = dqp_h W_k,h^T, dW_k,h += cq_h^T dqp_h */
		cmp_gemm_batch(CMP_N, CMP_T, T, dkv, d, 1.0f, dqp, (int64_t)nh * d, d, L->ca_k, d,
		               (int64_t)dkv * d, 0.0f, dq, in, dkv, nh);
		cmp_gemm_batch(CMP_T, CMP_N, dkv, d, T, 1.0f, l->cq, in, dkv, dqp, (int64_t)nh * d, d,
		               1.0f, Lg->ca_k, d, (int64_t)dkv * d, nh);
		memset(dh, 0, (size_t)(T * d) * sizeof *dh);
		linear_bw(dq, l->h1, L->ca_q, T, in, d, dh, Lg->ca_q, NULL);
		rmsnorm_bw(dh, l->x1, l->r1, L->ca_ln, T, d, dx, Lg->ca_ln);

		/* self-attention: x1 = x0 + m0 (o Wo^T) */
		for (int64_t i = 0; i < T * d; i++)
			d1[i] = l->m0 ? dx[i] * l->m0[i] : dx[i];
		memset(dO, 0, (size_t)(T * in) * sizeof *dO);
		linear_bw(d1, l->o, L->sa_o, T, d, in, dO, Lg->sa_o, NULL);
		memset(dq, 0, (size_t)(T * in) * sizeof *dq);
		memset(dk, 0, (size_t)(T * in) * sizeof *dk);
		memset(dv, 0, (size_t)(T * in) * sizeof *dv);
		attn_bw(&sp, l->q, in, l->k, l->v, in, T, 0, dO, in, l->P, dq, dk, dv, work);
		/* the bias of block 0 serves every layer: its gradient by distance */
		for (int h = 0; h < nh; h++) {
			const float *dS = l->P + (size_t)h * T * T;
			for (int64_t i = 0; i < T; i++)
				for (int64_t j = 0; j <= i; j++)
					G->rel_bias[tp->bucket[i - j] * nh + h] += dS[i * T + j];
		}
		memset(dh, 0, (size_t)(T * d) * sizeof *dh);
		linear_bw(dq, l->h0, L->sa_q, T, in, d, dh, Lg->sa_q, NULL);
		linear_bw(dk, l->h0, L->sa_k, T, in, d, dh, Lg->sa_k, NULL);
		linear_bw(dv, l->h0, L->sa_v, T, in, d, dh, Lg->sa_v, NULL);
		rmsnorm_bw(dh, tp->x0[li], l->r0, L->sa_ln, T, d, dx, Lg->sa_ln);
	}
	if (tp->me)
		dropout_apply(dx, tp->me, T * d);
	embed_bw(G->shared, d, tp->in, T, 1.0f, dx);
	rc = 0;
out:
	lc_arena_free(&a);
	return rc;
}
