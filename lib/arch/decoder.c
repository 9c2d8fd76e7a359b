/*
 * decoder.c: the T5 decoder step (see decoder.h for the semantics and the
 * cross-attention formulation).
 */
#include "arch/decoder.h"
#include "base/parallel.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Encoder rows per cross-attention chunk: bounds the score buffer to
 * nrow * heads * XCHUNK floats whatever L is. */
#define XCHUNK 512

enum act_kind { ACT_GELU_TANH, ACT_GELU_ERF, ACT_RELU, ACT_SILU };

typedef struct dec_layer {
	const float *sa_ln;             /* [d] */
	const float *sa_q, *sa_k, *sa_v;/* [inner, d] */
	const float *sa_o;              /* [d, inner] */
	const float *ca_ln;             /* [d] */
	const float *ca_q, *ca_k, *ca_v;/* [inner, d] */
	const float *ca_o;              /* [d, inner] */
	const float *ff_ln;             /* [d] */
	const float *wi0, *wi1;         /* [d_ff, d] (wi1 NULL when not gated; wi0 is then "wi") */
	const float *wo;                /* [d, d_ff] */
} dec_layer;

struct lc_decoder {
	lc_config cfg;
	int d, inner, nh, dkv, dff, V, nl;
	int gated;
	enum act_kind act;
	float out_scale;                /* d^-0.5 when tied, else 1 */
	const float *shared;            /* [V, d] */
	const float *lm_head;           /* [V, d] */
	const float *rel_bias;          /* [rel_buckets, nh] */
	const float *final_ln;          /* [d] */
	dec_layer *layer;               /* [nl] */
};

struct dec_state {
	const lc_decoder *dec;
	const float *enc;               /* [L, d], not owned */
	int64_t L;
	int nrow, max_steps, pos;
	float *kc, *vc;                 /* [nl, nrow, max_steps, inner] */
	float *tmp_cache;               /* [nrow, max_steps, inner], reorder scratch */
	float *bias;                    /* [nh, max_steps]: bias for rp = 0..max_steps-1 */
	float *x;                       /* [nrow, d] residual stream */
	float *h;                       /* [nrow, d] normed */
	float *q, *k, *v;               /* [nrow, inner] */
	float *att;                     /* [nrow, inner] */
	float *sc;                      /* [max_steps] self-attention scores */
	float *qp;                      /* [nrow * nh, d] queries in model space */
	float *acc;                     /* [nrow * nh, d] context accumulators */
	int nth;                        /* threads */
	float *xs;                      /* [nth, nrow * nh, XCHUNK] chunk scores */
	float *mx, *sum;                /* [nth, nrow * nh] running max and sum */
	float *pacc;                    /* [nth, nrow * nh, d] per-thread context partials */
	float *f0, *f1;                 /* [nrow, d_ff] */
	float *dtmp;                    /* [nrow, d] */
};

int decoder_rel_bucket(int64_t rp, int num_buckets, int max_distance)
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

static const float *W(lc_model *m, const char *name, uint64_t a, uint64_t b, lc_err *err)
{
	uint64_t dims[2] = { a, b };
	return model_tensor(m, name, b ? 2 : 1, dims, err);
}

lc_decoder *decoder_new(lc_model *m, lc_err *err)
{
	const lc_config *c = model_config(m);
	lc_decoder *d;
	char nm[256];
	int i;

	if (c->d_model <= 0 || c->num_heads <= 0 || c->d_kv <= 0 || c->d_ff <= 0 ||
	    c->vocab_size <= 0 || c->num_decoder_layers <= 0 || c->rel_buckets < 2 ||
	    c->rel_max_distance <= c->rel_buckets / 2) {
		lc_fail(err, "decoder: unsupported configuration (d_model %d, heads %d, d_kv %d, "
		        "d_ff %d, vocab %d, decoder layers %d, buckets %d, max distance %d)",
		        c->d_model, c->num_heads, c->d_kv, c->d_ff, c->vocab_size,
		        c->num_decoder_layers, c->rel_buckets, c->rel_max_distance);
		return NULL;
	}
	d = calloc(1, sizeof *d);
	if (!d) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	d->cfg = *c;
	d->d = c->d_model;
	d->nh = c->num_heads;
	d->dkv = c->d_kv;
	d->inner = c->num_heads * c->d_kv;
	d->dff = c->d_ff;
	d->V = c->vocab_size;
	d->nl = c->num_decoder_layers;
	d->gated = c->is_gated_act;
	if (!strcmp(c->act, "gelu_new") || !strcmp(c->act, "gelu_pytorch_tanh") ||
	    !strcmp(c->act, "gelu_fast"))
		d->act = ACT_GELU_TANH;
	else if (!strcmp(c->act, "gelu"))
		d->act = ACT_GELU_ERF;
	else if (!strcmp(c->act, "relu"))
		d->act = ACT_RELU;
	else if (!strcmp(c->act, "silu") || !strcmp(c->act, "swish"))
		d->act = ACT_SILU;
	else {
		lc_fail(err, "decoder: unsupported activation \"%s\"", c->act);
		goto fail;
	}
	d->out_scale = c->tie_word_embeddings ? (float)(1.0 / sqrt((double)d->d)) : 1.0f;
	d->layer = calloc((size_t)d->nl, sizeof *d->layer);
	if (!d->layer) {
		lc_fail(err, "decoder: out of memory");
		goto fail;
	}
#define GET(dst, a, b, ...) do { snprintf(nm, sizeof nm, __VA_ARGS__); \
		if (!((dst) = W(m, nm, (a), (b), err))) goto fail; } while (0)
	GET(d->shared, (uint64_t)d->V, (uint64_t)d->d, "shared.weight");
	if (c->tie_word_embeddings)
		d->lm_head = d->shared;
	else
		GET(d->lm_head, (uint64_t)d->V, (uint64_t)d->d, "lm_head.weight");
	GET(d->rel_bias, (uint64_t)c->rel_buckets, (uint64_t)d->nh,
	    "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
	GET(d->final_ln, (uint64_t)d->d, 0, "decoder.final_layer_norm.weight");
	for (i = 0; i < d->nl; i++) {
		dec_layer *L = &d->layer[i];
		uint64_t dm = (uint64_t)d->d, in = (uint64_t)d->inner, ff = (uint64_t)d->dff;
		const char *p = "decoder.block.";

		GET(L->sa_ln, dm, 0, "%s%d.layer.0.layer_norm.weight", p, i);
		GET(L->sa_q, in, dm, "%s%d.layer.0.SelfAttention.q.weight", p, i);
		GET(L->sa_k, in, dm, "%s%d.layer.0.SelfAttention.k.weight", p, i);
		GET(L->sa_v, in, dm, "%s%d.layer.0.SelfAttention.v.weight", p, i);
		GET(L->sa_o, dm, in, "%s%d.layer.0.SelfAttention.o.weight", p, i);
		GET(L->ca_ln, dm, 0, "%s%d.layer.1.layer_norm.weight", p, i);
		GET(L->ca_q, in, dm, "%s%d.layer.1.EncDecAttention.q.weight", p, i);
		GET(L->ca_k, in, dm, "%s%d.layer.1.EncDecAttention.k.weight", p, i);
		GET(L->ca_v, in, dm, "%s%d.layer.1.EncDecAttention.v.weight", p, i);
		GET(L->ca_o, dm, in, "%s%d.layer.1.EncDecAttention.o.weight", p, i);
		GET(L->ff_ln, dm, 0, "%s%d.layer.2.layer_norm.weight", p, i);
		if (d->gated) {
			GET(L->wi0, ff, dm, "%s%d.layer.2.DenseReluDense.wi_0.weight", p, i);
			GET(L->wi1, ff, dm, "%s%d.layer.2.DenseReluDense.wi_1.weight", p, i);
		} else {
			GET(L->wi0, ff, dm, "%s%d.layer.2.DenseReluDense.wi.weight", p, i);
		}
		GET(L->wo, dm, ff, "%s%d.layer.2.DenseReluDense.wo.weight", p, i);
	}
#undef GET
	return d;
fail:
	lc_prefix(err, "decoder");
	decoder_free(d);
	return NULL;
}

void decoder_free(lc_decoder *d)
{
	if (!d)
		return;
	free(d->layer);
	free(d);
}

const lc_config *decoder_config(const lc_decoder *d)
{
	return &d->cfg;
}

void decoder_state_free(dec_state *s)
{
	if (!s)
		return;
	free(s->kc); free(s->vc); free(s->tmp_cache); free(s->bias);
	free(s->x); free(s->h); free(s->q); free(s->k); free(s->v); free(s->att);
	free(s->sc); free(s->qp); free(s->acc); free(s->xs); free(s->mx); free(s->sum); free(s->pacc);
	free(s->f0); free(s->f1); free(s->dtmp);
	free(s);
}

/* calloc of a*b*c floats with overflow checks. */
static float *falloc(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t n;

	if (a == 0 || b == 0 || c == 0)
		return calloc(1, sizeof(float));
	if (b > UINT64_MAX / a || c > UINT64_MAX / (a * b))
		return NULL;
	n = a * b * c;
	if (n > SIZE_MAX / sizeof(float))
		return NULL;
	return calloc((size_t)n, sizeof(float));
}

dec_state *decoder_state_new(const lc_decoder *d, const float *enc, int64_t L,
                             int nrow, int max_steps, lc_err *err)
{
	dec_state *s;
	uint64_t nl = (uint64_t)d->nl, nr, ms, in = (uint64_t)d->inner, dm = (uint64_t)d->d;
	int h, rp;

	if (nrow < 1 || max_steps < 1 || L < 0 || (L > 0 && !enc)) {
		lc_fail(err, "decoder: bad state size (rows %d, steps %d, L %lld)",
		        nrow, max_steps, (long long)L);
		return NULL;
	}
	nr = (uint64_t)nrow;
	ms = (uint64_t)max_steps;
	s = calloc(1, sizeof *s);
	if (!s) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	s->dec = d;
	s->enc = enc;
	s->L = L;
	s->nrow = nrow;
	s->max_steps = max_steps;
	s->kc = falloc(nl * nr, ms, in);
	s->vc = falloc(nl * nr, ms, in);
	s->tmp_cache = falloc(nr, ms, in);
	s->bias = falloc((uint64_t)d->nh, ms, 1);
	s->x = falloc(nr, dm, 1);
	s->h = falloc(nr, dm, 1);
	s->q = falloc(nr, in, 1);
	s->k = falloc(nr, in, 1);
	s->v = falloc(nr, in, 1);
	s->att = falloc(nr, in, 1);
	s->sc = falloc(ms, 1, 1);
	s->qp = falloc(nr * (uint64_t)d->nh, dm, 1);
	s->acc = falloc(nr * (uint64_t)d->nh, dm, 1);
	s->nth = 1;
	s->xs = falloc(nr * (uint64_t)d->nh, XCHUNK, 1);
	s->mx = falloc(nr * (uint64_t)d->nh, 1, 1);
	s->sum = falloc(nr * (uint64_t)d->nh, 1, 1);
	s->pacc = falloc(nr * (uint64_t)d->nh, dm, 1);
	s->f0 = falloc(nr, (uint64_t)d->dff, 1);
	s->f1 = falloc(nr, (uint64_t)d->dff, 1);
	s->dtmp = falloc(nr, dm, 1);
	if (!s->kc || !s->vc || !s->tmp_cache || !s->bias || !s->x || !s->h || !s->q ||
	    !s->k || !s->v || !s->att || !s->sc || !s->qp || !s->acc || !s->xs || !s->mx ||
	    !s->sum || !s->pacc || !s->f0 || !s->f1 || !s->dtmp) {
		lc_fail(err, "decoder: out of memory for %d rows x %d steps", nrow, max_steps);
		decoder_state_free(s);
		return NULL;
	}
	for (rp = 0; rp < max_steps; rp++) {
		int b = decoder_rel_bucket(rp, d->cfg.rel_buckets, d->cfg.rel_max_distance);
		for (h = 0; h < d->nh; h++)
			s->bias[(size_t)h * ms + (size_t)rp] = d->rel_bias[(size_t)b * d->nh + h];
	}
	return s;
}

int decoder_pos(const dec_state *s)
{
	return s->pos;
}

/* out[r] = w * x[r] / sqrt(mean(x[r]^2) + eps), rows of n. */
static void rms_norm(float *out, const float *x, const float *w, int rows, int n, double eps)
{
	int r, i;

	for (r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * n;
		float *o = out + (size_t)r * n;
		double ss = 0, inv;

		for (i = 0; i < n; i++)
			ss += (double)xr[i] * xr[i];
		inv = 1.0 / sqrt(ss / n + eps);
		for (i = 0; i < n; i++)
			o[i] = (float)(w[i] * (xr[i] * inv));
	}
}

/* C[m,n] (+)= A[m,k] . B[n,k]^T : a linear layer with HF [out, in] weights. */
static void linear(float *C, const float *A, const float *B, int m, int n, int k, float beta)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, A, k, B, k,
	            beta, C, n);
}

/* linear() split over threads by blocks of output features. */
struct lin_job {
	float *C;
	const float *A, *B;
	int m, n, k, parts;
	float beta;
};

static void lin_part(void *ctx, int64_t i, int tid)
{
	struct lin_job *j = ctx;
	int lo = (int)((int64_t)j->n * i / j->parts), hi = (int)((int64_t)j->n * (i + 1) / j->parts);

	(void)tid;
	if (hi > lo)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->m, hi - lo, j->k, 1.0f,
		            j->A, j->k, j->B + (size_t)lo * j->k, j->k, j->beta, j->C + lo, j->n);
}

static void plinear(const dec_state *s, float *C, const float *A, const float *B,
                    int m, int n, int k, float beta)
{
	struct lin_job j = { C, A, B, m, n, k, s->nth, beta };

	if (s->nth <= 1 || n < 256 * s->nth) {
		linear(C, A, B, m, n, k, beta);
		return;
	}
	par_for(s->nth, s->nth, lin_part, &j);
}

static float act(enum act_kind a, float x)
{
	switch (a) {
	case ACT_GELU_TANH: {
		double xd = x;
		return (float)(0.5 * xd * (1.0 + tanh(0.7978845608028654 * (xd + 0.044715 * xd * xd * xd))));
	}
	case ACT_GELU_ERF:
		return (float)(0.5 * x * (1.0 + erf(x / 1.4142135623730951)));
	case ACT_RELU:
		return x > 0 ? x : 0;
	case ACT_SILU:
		return (float)(x / (1.0 + exp(-(double)x)));
	}
	return x;
}

static void self_attention(dec_state *s, int li)
{
	const lc_decoder *d = s->dec;
	const dec_layer *L = &d->layer[li];
	size_t ms = (size_t)s->max_steps, in = (size_t)d->inner;
	int r, h, j, t = s->pos, n = s->nrow;

	plinear(s, s->q, s->h, L->sa_q, n, d->inner, d->d, 0);
	plinear(s, s->k, s->h, L->sa_k, n, d->inner, d->d, 0);
	plinear(s, s->v, s->h, L->sa_v, n, d->inner, d->d, 0);
	for (r = 0; r < n; r++) {
		float *kc = s->kc + (((size_t)li * n + r) * ms) * in;
		float *vc = s->vc + (((size_t)li * n + r) * ms) * in;

		memcpy(kc + (size_t)t * in, s->k + (size_t)r * in, in * sizeof(float));
		memcpy(vc + (size_t)t * in, s->v + (size_t)r * in, in * sizeof(float));
		for (h = 0; h < d->nh; h++) {
			const float *q = s->q + (size_t)r * in + (size_t)h * d->dkv;
			const float *bias = s->bias + (size_t)h * ms;
			float *o = s->att + (size_t)r * in + (size_t)h * d->dkv;
			float mx = -INFINITY;
			double sum = 0;
			int p;

			for (p = 0; p <= t; p++) {
				const float *kk = kc + (size_t)p * in + (size_t)h * d->dkv;
				float a = 0;
				for (j = 0; j < d->dkv; j++)
					a += q[j] * kk[j];
				a += bias[t - p];     /* rp = query - key */
				s->sc[p] = a;
				if (a > mx)
					mx = a;
			}
			for (p = 0; p <= t; p++) {
				s->sc[p] = expf(s->sc[p] - mx);
				sum += s->sc[p];
			}
			for (j = 0; j < d->dkv; j++)
				o[j] = 0;
			for (p = 0; p <= t; p++) {
				const float *vv = vc + (size_t)p * in + (size_t)h * d->dkv;
				float a = (float)(s->sc[p] / sum);
				for (j = 0; j < d->dkv; j++)
					o[j] += a * vv[j];
			}
		}
	}
	plinear(s, s->x, s->att, L->sa_o, n, d->d, d->inner, 1.0f);
}

int decoder_state_threads(dec_state *s, int nthreads, lc_err *err)
{
	uint64_t rows = (uint64_t)s->nrow * (uint64_t)s->dec->nh, t;
	float *xs, *mx, *sum, *pacc;

	if (nthreads < 1 || nthreads > 1024)
		return lc_fail(err, "decoder: bad thread count %d", nthreads);
	t = (uint64_t)nthreads;
	xs = falloc(t * rows, XCHUNK, 1);
	mx = falloc(t, rows, 1);
	sum = falloc(t, rows, 1);
	pacc = falloc(t * rows, (uint64_t)s->dec->d, 1);
	if (!xs || !mx || !sum || !pacc) {
		free(xs); free(mx); free(sum); free(pacc);
		return lc_fail(err, "decoder: out of memory for %d threads", nthreads);
	}
	free(s->xs); free(s->mx); free(s->sum); free(s->pacc);
	s->xs = xs;
	s->mx = mx;
	s->sum = sum;
	s->pacc = pacc;
	s->nth = nthreads;
	return 0;
}

/* One thread's share of the encoder rows [L * i / nth, L * (i+1) / nth):
 * chunked scores with a running (online) softmax, leaving its max, sum
 * and unnormalized context in its slices of mx, sum and pacc. */
static void xattn_part(void *ctx, int64_t part, int tid)
{
	dec_state *s = ctx;
	int dm = s->dec->d, rows = s->nrow * s->dec->nh, r, j;
	int64_t lo = s->L * part / s->nth, hi = s->L * (part + 1) / s->nth, c0;
	float *xs = s->xs + (size_t)tid * rows * XCHUNK;
	float *mx = s->mx + (size_t)part * rows, *sum = s->sum + (size_t)part * rows;
	float *acc = s->pacc + (size_t)part * rows * dm;

	for (r = 0; r < rows; r++) {
		mx[r] = -INFINITY;
		sum[r] = 0;
	}
	memset(acc, 0, (size_t)rows * dm * sizeof(float));
	for (c0 = lo; c0 < hi; c0 += XCHUNK) {
		int c = (int)(hi - c0 < XCHUNK ? hi - c0 : XCHUNK);
		const float *E = s->enc + (size_t)c0 * dm;

		/* scores [rows, c] = qp . E^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, c, dm, 1.0f,
		            s->qp, dm, E, dm, 0.0f, xs, XCHUNK);
		for (r = 0; r < rows; r++) {
			float *sr = xs + (size_t)r * XCHUNK, m = mx[r], nm = m;
			double add = 0;

			for (j = 0; j < c; j++)
				if (sr[j] > nm)
					nm = sr[j];
			if (nm > m && m != -INFINITY) {
				float sc = expf(m - nm), *a = acc + (size_t)r * dm;
				for (j = 0; j < dm; j++)
					a[j] *= sc;
				sum[r] *= sc;
			}
			for (j = 0; j < c; j++) {
				sr[j] = expf(sr[j] - nm);
				add += sr[j];
			}
			sum[r] += (float)add;
			mx[r] = nm;
		}
		/* acc [rows, dm] += P [rows, c] . E [c, dm] */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dm, c, 1.0f,
		            xs, XCHUNK, E, dm, 1.0f, acc, dm);
	}
}

/* Cross-attention without a K/V cache (see decoder.h): one pass over the
 * encoder states per layer, split over threads by rows of enc, each in
 * chunks with a running softmax; the partials are merged exactly. */
static void cross_attention(dec_state *s, int li)
{
	const lc_decoder *d = s->dec;
	const dec_layer *L = &d->layer[li];
	int n = s->nrow, nh = d->nh, dm = d->d, dkv = d->dkv, h, r, i, t;
	int rows = n * nh, parts = s->nth;

	plinear(s, s->q, s->h, L->ca_q, n, d->inner, dm, 0);
	if (s->L == 0) {
		/* nothing to attend to: the context is zero */
		memset(s->att, 0, (size_t)n * d->inner * sizeof(float));
		linear(s->x, s->att, L->ca_o, n, dm, d->inner, 1.0f);
		return;
	}
	/* qp[r*nh + h] = W_k,h^T q_h: (n x dkv) . (dkv x dm) per head */
	for (h = 0; h < nh; h++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, dm, dkv, 1.0f,
		            s->q + (size_t)h * dkv, d->inner,
		            L->ca_k + (size_t)h * dkv * dm, dm,
		            0.0f, s->qp + (size_t)h * dm, nh * dm);
	if (parts > s->L)
		parts = (int)s->L;
	{
		int saved = s->nth;
		s->nth = parts;
		par_for(parts, parts, xattn_part, s);
		s->nth = saved;
	}
	/* merge: ctx = sum_t e^(m_t - M) acc_t / sum_t e^(m_t - M) sum_t */
	for (r = 0; r < rows; r++) {
		float M = -INFINITY, *a = s->acc + (size_t)r * dm;
		double tot = 0;

		for (t = 0; t < parts; t++)
			if (s->mx[(size_t)t * rows + r] > M)
				M = s->mx[(size_t)t * rows + r];
		memset(a, 0, (size_t)dm * sizeof(float));
		for (t = 0; t < parts; t++) {
			float w = s->mx[(size_t)t * rows + r] == -INFINITY ? 0.0f :
			          expf(s->mx[(size_t)t * rows + r] - M);
			const float *p = s->pacc + ((size_t)t * rows + r) * dm;
			if (w == 0.0f)
				continue;
			tot += (double)w * s->sum[(size_t)t * rows + r];
			for (i = 0; i < dm; i++)
				a[i] += w * p[i];
		}
		for (i = 0; i < dm; i++)
			a[i] = (float)(a[i] / tot);
	}
	/* values: att[r, h*dkv..] = W_v,h . ctx[r,h]: (n x dm) . (dm x dkv) per head */
	for (h = 0; h < nh; h++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, dkv, dm, 1.0f,
		            s->acc + (size_t)h * dm, nh * dm,
		            L->ca_v + (size_t)h * dkv * dm, dm,
		            0.0f, s->att + (size_t)h * dkv, d->inner);
	plinear(s, s->x, s->att, L->ca_o, n, dm, d->inner, 1.0f);
}

static void feed_forward(dec_state *s, int li)
{
	const lc_decoder *d = s->dec;
	const dec_layer *L = &d->layer[li];
	int n = s->nrow;
	size_t i, tot = (size_t)n * d->dff;

	plinear(s, s->f0, s->h, L->wi0, n, d->dff, d->d, 0);
	if (d->gated) {
		plinear(s, s->f1, s->h, L->wi1, n, d->dff, d->d, 0);
		for (i = 0; i < tot; i++)
			s->f0[i] = act(d->act, s->f0[i]) * s->f1[i];
	} else {
		for (i = 0; i < tot; i++)
			s->f0[i] = act(d->act, s->f0[i]);
	}
	plinear(s, s->x, s->f0, L->wo, n, d->d, d->dff, 1.0f);
}

int decoder_step(dec_state *s, const int32_t *tokens, float *logits, lc_err *err)
{
	const lc_decoder *d = s->dec;
	int r, li, n = s->nrow;
	double eps = d->cfg.eps;
	size_t i;

	if (s->pos >= s->max_steps)
		return lc_fail(err, "decoder: more than %d steps", s->max_steps);
	for (r = 0; r < n; r++) {
		if (tokens[r] < 0 || tokens[r] >= d->V)
			return lc_fail(err, "decoder: token id %ld out of range [0, %d)",
			               (long)tokens[r], d->V);
		memcpy(s->x + (size_t)r * d->d, d->shared + (size_t)tokens[r] * d->d,
		       (size_t)d->d * sizeof(float));
	}
	for (li = 0; li < d->nl; li++) {
		const dec_layer *L = &d->layer[li];

		rms_norm(s->h, s->x, L->sa_ln, n, d->d, eps);
		self_attention(s, li);
		rms_norm(s->h, s->x, L->ca_ln, n, d->d, eps);
		cross_attention(s, li);
		rms_norm(s->h, s->x, L->ff_ln, n, d->d, eps);
		feed_forward(s, li);
	}
	rms_norm(s->h, s->x, d->final_ln, n, d->d, eps);
	if (d->out_scale != 1.0f)
		for (i = 0; i < (size_t)n * d->d; i++)
			s->h[i] *= d->out_scale;
	plinear(s, logits, s->h, d->lm_head, n, d->V, d->d, 0);
	s->pos++;
	return 0;
}

int decoder_reorder(dec_state *s, const int32_t *src, lc_err *err)
{
	const lc_decoder *d = s->dec;
	size_t ms = (size_t)s->max_steps, in = (size_t)d->inner, used = (size_t)s->pos * in;
	int r, li, n = s->nrow, identity = 1;

	for (r = 0; r < n; r++) {
		if (src[r] < 0 || src[r] >= n)
			return lc_fail(err, "decoder: reorder source %ld out of range [0, %d)",
			               (long)src[r], n);
		if (src[r] != r)
			identity = 0;
	}
	if (identity || used == 0)
		return 0;
	for (li = 0; li < d->nl; li++) {
		float *caches[2] = { s->kc, s->vc };
		int c;

		for (c = 0; c < 2; c++) {
			float *base = caches[c] + (size_t)li * n * ms * in;
			for (r = 0; r < n; r++)
				memcpy(s->tmp_cache + (size_t)r * ms * in,
				       base + (size_t)src[r] * ms * in, used * sizeof(float));
			for (r = 0; r < n; r++)
				memcpy(base + (size_t)r * ms * in,
				       s->tmp_cache + (size_t)r * ms * in, used * sizeof(float));
		}
	}
	return 0;
}
