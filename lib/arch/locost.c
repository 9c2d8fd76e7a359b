#include "arch/locost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "base/parallel.h"
#include "ops/ssm.h"

enum act { ACT_GELU_NEW, ACT_GELU, ACT_RELU, ACT_SILU };

typedef struct layer {
	const float *prenorm;          /* [d] */
	const float *wq, *bq;          /* [d, d], [d] (NULL without gating) */
	const float *wk, *bk;          /* [d, d], [d] */
	const float *D;                /* [d] */
	const float *wo, *bo;          /* [d, d], [d] */
	const float *ln;               /* [d] */
	const float *wi0, *wi1;        /* [d_ff, d] (wi1 NULL when not gated) */
	const float *wff;              /* [d, d_ff] */
	ssm_params sp;
} layer;

struct locost {
	lc_model *m;
	int d, dff, V, nl, gating, gated_ff, threads;
	enum act act;
	float eps;
	const float *shared;           /* [V, d] */
	const float *final;            /* [d] */
	layer *ly;                     /* [nl] */
};

static void set_blas_threads(void)
{
	/* We parallelise around BLAS: every call runs on one thread. */
	openblas_set_num_threads(1);
}

#define P1(field, fmt, a) do { uint64_t dd_[1] = { (a) }; char nm_[160]; \
	snprintf(nm_, sizeof nm_, fmt, i); \
	if (!(field = model_tensor(m, nm_, 1, dd_, err))) goto fail; } while (0)
#define P2(field, fmt, a, b) do { uint64_t dd_[2] = { (a), (b) }; char nm_[160]; \
	snprintf(nm_, sizeof nm_, fmt, i); \
	if (!(field = model_tensor(m, nm_, 2, dd_, err))) goto fail; } while (0)

locost *locost_new(lc_model *m, int threads, lc_err *err)
{
	const lc_config *c = model_config(m);
	locost *e = calloc(1, sizeof *e);
	uint64_t d, dff, n2, nch;
	int i = 0;

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	e->m = m;
	e->d = c->d_model;
	e->dff = c->d_ff;
	e->V = c->vocab_size;
	e->nl = c->num_layers;
	e->gating = c->gating;
	e->gated_ff = c->is_gated_act;
	e->eps = (float)c->eps;
	e->threads = threads < 1 ? 1 : threads;
	if (!strcmp(c->act, "gelu_new"))
		e->act = ACT_GELU_NEW;
	else if (!strcmp(c->act, "gelu"))
		e->act = ACT_GELU;
	else if (!strcmp(c->act, "relu"))
		e->act = ACT_RELU;
	else
		e->act = ACT_SILU;
	d = (uint64_t)e->d;
	dff = (uint64_t)e->dff;
	n2 = (uint64_t)c->d_state / 2;
	nch = c->bidirectional ? 2 : 1;
	{
		uint64_t dims[2] = { (uint64_t)e->V, d };
		if (!(e->shared = model_tensor(m, "shared.weight", 2, dims, err)))
			goto fail;
		if (!(e->final = model_tensor(m, "encoder.final_layer_norm.weight", 1, dims + 1, err)))
			goto fail;
	}
	if (!(e->ly = calloc((size_t)(e->nl ? e->nl : 1), sizeof *e->ly))) {
		lc_fail(err, "out of memory");
		goto fail;
	}
	for (i = 0; i < e->nl; i++) {
		layer *L = &e->ly[i];
		P1(L->prenorm, "encoder.block.%d.layer.0.layer_prenorm.weight", d);
		if (e->gating) {
			P2(L->wq, "encoder.block.%d.layer.0.ssm_layer.q_proj.weight", d, d);
			P1(L->bq, "encoder.block.%d.layer.0.ssm_layer.q_proj.bias", d);
		}
		P2(L->wk, "encoder.block.%d.layer.0.ssm_layer.k_proj.weight", d, d);
		P1(L->bk, "encoder.block.%d.layer.0.ssm_layer.k_proj.bias", d);
		P1(L->D, "encoder.block.%d.layer.0.ssm_layer.D", d);
		P2(L->wo, "encoder.block.%d.layer.0.ssm_layer.output_linear.weight", d, d);
		P1(L->bo, "encoder.block.%d.layer.0.ssm_layer.output_linear.bias", d);
		P1(L->ln, "encoder.block.%d.layer.1.layer_norm.weight", d);
		if (e->gated_ff) {
			P2(L->wi0, "encoder.block.%d.layer.1.DenseReluDense.wi_0.weight", dff, d);
			P2(L->wi1, "encoder.block.%d.layer.1.DenseReluDense.wi_1.weight", dff, d);
		} else {
			P2(L->wi0, "encoder.block.%d.layer.1.DenseReluDense.wi.weight", dff, d);
		}
		P2(L->wff, "encoder.block.%d.layer.1.DenseReluDense.wo.weight", d, dff);
		L->sp.H = e->d;
		L->sp.N2 = (int)n2;
		L->sp.nch = (int)nch;
		P1(L->sp.log_dt, "encoder.block.%d.layer.0.ssm_layer.kernel.log_dt", d);
		P2(L->sp.inv_A_real, "encoder.block.%d.layer.0.ssm_layer.kernel.inv_A_real", d, n2);
		P2(L->sp.A_imag, "encoder.block.%d.layer.0.ssm_layer.kernel.A_imag", d, n2);
		{
			uint64_t db[3] = { d, n2, 2 }, dc[4] = { nch, d, n2, 2 };
			char nm[160];
			snprintf(nm, sizeof nm, "encoder.block.%d.layer.0.ssm_layer.kernel.B", i);
			if (!(L->sp.B = model_tensor(m, nm, 3, db, err)))
				goto fail;
			snprintf(nm, sizeof nm, "encoder.block.%d.layer.0.ssm_layer.kernel.C", i);
			if (!(L->sp.C = model_tensor(m, nm, 4, dc, err)))
				goto fail;
		}
	}
	set_blas_threads();
	return e;
fail:
	locost_free(e);
	return NULL;
}

void locost_free(locost *e)
{
	if (!e)
		return;
	free(e->ly);
	free(e);
}

/* ------------------------------------------------------------ row math */

/* out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w */
static void rmsnorm_rows(const float *x, int64_t R, int d, const float *w, float eps, float *out)
{
	for (int64_t r = 0; r < R; r++) {
		const float *xr = x + r * d;
		float *o = out + r * d;
		double ss = 0;
		float s;
		for (int i = 0; i < d; i++)
			ss += (double)xr[i] * xr[i];
		s = (float)(1.0 / sqrt(ss / d + (double)eps));
		for (int i = 0; i < d; i++)
			o[i] = w[i] * (xr[i] * s);
	}
}

/* exp(x) for x in [-87, 88], about 2 ulp; written to vectorise. */
static inline float fast_expf(float x)
{
	float n, r, p;
	int32_t i;
	uint32_t u;
	float f;

	x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
	n = nearbyintf(x * 1.44269504088896341f);
	r = x - n * 0.693145751953125f;
	r = r - n * 1.428606765330187e-06f;
	p = 1.0f / 720;
	p = p * r + 1.0f / 120;
	p = p * r + 1.0f / 24;
	p = p * r + 1.0f / 6;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	i = (int32_t)n;
	u = (uint32_t)(i + 127) << 23;
	memcpy(&f, &u, 4);
	return p * f;
}

/* a[i] = act(a[i]) * (b ? b[i] : 1) */
static void act_mul(enum act act, float *a, const float *b, int64_t n)
{
	int64_t i;

	switch (act) {
	case ACT_GELU_NEW:
		/* 0.5 x (1 + tanh(y)) = x / (1 + exp(-2y)), y = sqrt(2/pi)(x + 0.044715 x^3) */
		for (i = 0; i < n; i++) {
			float x = a[i], y = 0.7978845608028654f * (x + 0.044715f * x * x * x);
			float g = x / (1.0f + fast_expf(-2.0f * y));
			a[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_GELU:
		for (i = 0; i < n; i++) {
			float x = a[i], g = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
			a[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_RELU:
		for (i = 0; i < n; i++) {
			float g = a[i] > 0 ? a[i] : 0;
			a[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_SILU:
		for (i = 0; i < n; i++) {
			float x = a[i], g = x / (1.0f + fast_expf(-x));
			a[i] = b ? g * b[i] : g;
		}
		break;
	}
}

/* outT[o * ldo + r] = sum_i W[o, i] u[r, i] + b[o] for r < R, o < dout */
static void proj_T(const float *W, const float *b, const float *u, int64_t R, int dout, int din,
                   float *outT, int64_t ldo)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dout, (int)R, din, 1.0f, W, din, u, din,
	            0.0f, outT, (int)ldo);
	if (b)
		for (int o = 0; o < dout; o++) {
			float *row = outT + (int64_t)o * ldo, bo = b[o];
			for (int64_t r = 0; r < R; r++)
				row[r] += bo;
		}
}

/* h[R, d] += gT^T Wo^T + bo, gT [d, ldg] channel-major */
static void out_proj(const float *Wo, const float *bo, const float *gT, int64_t ldg, int64_t R,
                     int d, float *h, int add_bias)
{
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasTrans, (int)R, d, d, 1.0f, gT, (int)ldg, Wo, d,
	            1.0f, h, d);
	if (add_bias && bo)
		for (int64_t r = 0; r < R; r++)
			for (int i = 0; i < d; i++)
				h[r * d + i] += bo[i];
}

/* h[R, d] += FF(n) with scratch a, b [R, d_ff] */
static void ff_rows(const locost *e, const layer *L, const float *n, int64_t R, float *h,
                    float *a, float *b, int nonlin)
{
	int d = e->d, f = e->dff;

	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, f, d, 1.0f, n, d, L->wi0, d,
	            0.0f, a, f);
	if (L->wi1)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, f, d, 1.0f, n, d, L->wi1, d,
		            0.0f, b, f);
	if (nonlin)
		act_mul(e->act, a, L->wi1 ? b : NULL, R * f);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, d, f, 1.0f, a, f, L->wff, f,
	            1.0f, h, d);
}

/* ------------------------------------------------------------- encoding */

typedef struct tscratch {
	float *u;          /* [ROWS, d] */
	float *qT;         /* [d, ROWS] */
	float *a, *b;      /* [ROWS, d_ff] */
	float *K;          /* [nch, Tmax] */
	ssm_kwork *kw;
	ssm_cwork *cw;
} tscratch;

typedef struct run {
	locost *e;
	const layer *L;
	float *h;          /* [L, d] residual stream (the output) */
	float *kT;         /* [d, L] k, then the SSM output */
	int64_t len, nblk;
	int64_t *T;        /* [d] kernel support of this layer's channels */
	const ssm_plans *pl;
	tscratch *ts;      /* [threads] */
	int gemm_only;
	int failed;
	lc_err err;
} run;

static void blk_range(const run *r, int64_t b, int64_t *r0, int64_t *R)
{
	*r0 = b * LOCOST_ROWS;
	*R = r->len - *r0 < LOCOST_ROWS ? r->len - *r0 : LOCOST_ROWS;
}

/* pass 1: kT[:, rows] = Wk RMSNorm(h[rows])^T + bk */
static void pass_k(void *ctx, int64_t b, int tid)
{
	run *r = ctx;
	const locost *e = r->e;
	tscratch *s = &r->ts[tid];
	int64_t r0, R;

	blk_range(r, b, &r0, &R);
	if (!r->gemm_only)
		rmsnorm_rows(r->h + r0 * e->d, R, e->d, r->L->prenorm, e->eps, s->u);
	proj_T(r->L->wk, r->gemm_only ? NULL : r->L->bk, s->u, R, e->d, e->d, r->kT + r0, r->len);
}

/* pass 2: channel h: kT[h, :] = conv(kT[h, :]) + D k */
static void pass_conv(void *ctx, int64_t h, int tid)
{
	run *r = ctx;
	const layer *L = r->L;
	tscratch *s = &r->ts[tid];
	int64_t T = r->T[h];
	lc_err err;

	if (ssm_kernel(&L->sp, (int)h, T, s->K, T, s->kw, &err) < 0) {
		if (!r->failed) {
			r->failed = 1;
			r->err = err;
		}
		return;
	}
	ssm_conv(r->pl, s->cw, r->kT + h * r->len, r->len, s->K, L->sp.nch > 1 ? s->K + T : NULL, T,
	         L->D[h], r->kT + h * r->len);
}

/* pass 3: gating, output_linear, residual, feed-forward, residual */
static void pass_rest(void *ctx, int64_t b, int tid)
{
	run *r = ctx;
	const locost *e = r->e;
	const layer *L = r->L;
	tscratch *s = &r->ts[tid];
	int d = e->d;
	int64_t r0, R;
	float *h;

	blk_range(r, b, &r0, &R);
	h = r->h + r0 * d;
	if (!r->gemm_only)
		rmsnorm_rows(h, R, d, L->prenorm, e->eps, s->u);
	if (L->wq) {
		proj_T(L->wq, r->gemm_only ? NULL : L->bq, s->u, R, d, d, s->qT, R);
		if (!r->gemm_only)
			for (int c = 0; c < d; c++) {
				float *q = s->qT + (int64_t)c * R;
				const float *y = r->kT + (int64_t)c * r->len + r0;
				for (int64_t j = 0; j < R; j++)
					q[j] *= y[j];
			}
		out_proj(L->wo, L->bo, s->qT, R, R, d, h, !r->gemm_only);
	} else {
		out_proj(L->wo, L->bo, r->kT + r0, r->len, R, d, h, !r->gemm_only);
	}
	if (!r->gemm_only)
		rmsnorm_rows(h, R, d, L->ln, e->eps, s->u);
	ff_rows(e, L, s->u, R, h, s->a, s->b, !r->gemm_only);
}

static void free_scratch(tscratch *ts, int n)
{
	if (!ts)
		return;
	for (int t = 0; t < n; t++) {
		free(ts[t].u);
		free(ts[t].qT);
		free(ts[t].a);
		free(ts[t].b);
		free(ts[t].K);
		ssm_kwork_free(ts[t].kw);
		ssm_cwork_free(ts[t].cw);
	}
	free(ts);
}

static tscratch *new_scratch(const locost *e, int n, int64_t Tmax, int64_t nfft, lc_err *err)
{
	tscratch *ts = calloc((size_t)n, sizeof *ts);
	size_t rd = (size_t)LOCOST_ROWS * (size_t)e->d, rf = (size_t)LOCOST_ROWS * (size_t)e->dff;
	int nch = e->nl ? e->ly[0].sp.nch : 1;

	if (!ts)
		goto oom;
	for (int t = 0; t < n; t++) {
		ts[t].u = calloc(rd, sizeof(float));
		ts[t].qT = calloc(rd, sizeof(float));
		ts[t].a = calloc(rf, sizeof(float));
		ts[t].b = calloc(rf, sizeof(float));
		if (!ts[t].u || !ts[t].qT || !ts[t].a || !ts[t].b)
			goto oom;
		if (Tmax > 0) {
			if (!(ts[t].K = malloc((size_t)nch * (size_t)Tmax * sizeof(float))))
				goto oom;
			if (!(ts[t].kw = ssm_kwork_new(e->ly[0].sp.N2, nch, Tmax, err)) ||
			    !(ts[t].cw = ssm_cwork_new(nfft, err))) {
				free_scratch(ts, n);
				return NULL;
			}
		}
	}
	return ts;
oom:
	free_scratch(ts, n);
	lc_fail(err, "out of memory for encoder scratch");
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int locost_encode(locost *e, const int32_t *ids, int64_t L, float *out, int nlayers,
                  locost_progress_fn progress, void *ctx, lc_err *err)
{
	int d = e->d, nl = nlayers < 0 || nlayers > e->nl ? e->nl : nlayers, threads = e->threads;
	int64_t *T = NULL, Tmax = 0, nmax = 0;
	ssm_plans **plans = NULL;
	float *kT = NULL;
	run r;
	int rc = -1;

	memset(&r, 0, sizeof r);
	if (L < 1)
		return lc_fail(err, "empty input (no tokens)");
	if ((uint64_t)L > (UINT64_MAX / 8) / (uint64_t)d || L > INT32_MAX / 2)
		return lc_fail(err, "input of %lld tokens is too long", (long long)L);
	for (int64_t t = 0; t < L; t++)
		if (ids[t] < 0 || ids[t] >= e->V)
			return lc_fail(err, "token %lld: id %ld is outside the vocabulary [0, %d)",
			               (long long)t, (long)ids[t], e->V);
	for (int64_t t = 0; t < L; t++)
		memcpy(out + t * d, e->shared + (int64_t)ids[t] * d, (size_t)d * sizeof *out);
	set_blas_threads();
	/* kernel supports and FFT sizes of every layer, up front */
	if (nl > 0) {
		T = malloc((size_t)nl * (size_t)d * sizeof *T);
		plans = calloc((size_t)nl, sizeof *plans);
		kT = malloc((size_t)L * (size_t)d * sizeof *kT);
		if (!T || !plans || !kT) {
			lc_fail(err, "out of memory (%lld tokens)", (long long)L);
			goto out;
		}
	}
	for (int i = 0; i < nl; i++) {
		int64_t tl = 1, n;
		for (int h = 0; h < d; h++) {
			int64_t t = ssm_support(&e->ly[i].sp, h, L);
			T[i * d + h] = t;
			if (t > tl)
				tl = t;
		}
		if (tl > Tmax)
			Tmax = tl;
		n = ssm_fft_size(L + tl - 1);
		for (int j = 0; j < i; j++)
			if (plans[j] && ssm_plans_n(plans[j]) == n)
				plans[i] = plans[j];
		if (!plans[i] && !(plans[i] = ssm_plans_new(n, err)))
			goto out;
		if (n > nmax)
			nmax = n;
	}
	r.e = e;
	r.h = out;
	r.kT = kT;
	r.len = L;
	r.nblk = (L + LOCOST_ROWS - 1) / LOCOST_ROWS;
	if (!(r.ts = new_scratch(e, threads, Tmax, nmax, err)))
		goto out;
	for (int i = 0; i < nl; i++) {
		r.L = &e->ly[i];
		r.T = T + i * d;
		r.pl = plans[i];
		par_for(threads, r.nblk, pass_k, &r);
		par_for(threads, d, pass_conv, &r);
		if (r.failed) {
			*err = r.err;
			goto out;
		}
		par_for(threads, r.nblk, pass_rest, &r);
		if (progress)
			progress(ctx, i + 1, e->nl);
	}
	if (nlayers < 0)
		for (int64_t t = 0; t < L; t += LOCOST_ROWS) {
			int64_t R = L - t < LOCOST_ROWS ? L - t : LOCOST_ROWS;
			rmsnorm_rows(out + t * d, R, d, e->final, e->eps, out + t * d);
		}
	rc = 0;
out:
	free_scratch(r.ts, threads);
	if (plans)
		for (int i = 0; i < nl; i++) {
			int dup = 0;
			for (int j = 0; j < i; j++)
				dup |= plans[j] == plans[i];
			if (!dup)
				ssm_plans_free(plans[i]);
		}
	free(plans);
	free(T);
	free(kT);
	return rc;
}

int locost_trace_layer(locost *e, int layer_ix, const float *x, int64_t L, locost_trace *t,
                       lc_err *err)
{
	const layer *ly;
	int d = e->d;
	float *u = NULL, *kT = NULL, *qT = NULL, *yT = NULL, *K = NULL;
	ssm_kwork *kw = NULL;
	ssm_cwork *cw = NULL;
	ssm_plans *pl = NULL;
	int rc = -1, nch;

	if (layer_ix < 0 || layer_ix >= e->nl)
		return lc_fail(err, "no layer %d", layer_ix);
	if (L < 1)
		return lc_fail(err, "empty input");
	ly = &e->ly[layer_ix];
	nch = ly->sp.nch;
	u = malloc((size_t)(L * d) * sizeof *u);
	kT = malloc((size_t)(L * d) * sizeof *kT);
	qT = malloc((size_t)(L * d) * sizeof *qT);
	yT = malloc((size_t)(L * d) * sizeof *yT);
	K = malloc((size_t)(nch * L) * sizeof *K);
	if (!u || !kT || !qT || !yT || !K) {
		lc_fail(err, "out of memory");
		goto out;
	}
	if (!(kw = ssm_kwork_new(ly->sp.N2, nch, L, err)) ||
	    !(pl = ssm_plans_new(ssm_fft_size(2 * L - 1), err)) ||
	    !(cw = ssm_cwork_new(ssm_plans_n(pl), err)))
		goto out;
	set_blas_threads();
	rmsnorm_rows(x, L, d, ly->prenorm, e->eps, u);
	proj_T(ly->wk, ly->bk, u, L, d, d, kT, L);
	if (ly->wq)
		proj_T(ly->wq, ly->bq, u, L, d, d, qT, L);
	else
		for (int64_t i = 0; i < L * d; i++)
			qT[i] = 1;
#define ROWMAJOR(dst, srcT) do { if (dst) for (int64_t r_ = 0; r_ < L; r_++) \
	for (int c_ = 0; c_ < d; c_++) (dst)[r_ * d + c_] = (srcT)[(int64_t)c_ * L + r_]; } while (0)
	if (t->prenorm)
		memcpy(t->prenorm, u, (size_t)(L * d) * sizeof *u);
	ROWMAJOR(t->k, kT);
	ROWMAJOR(t->q, qT);
	for (int h = 0; h < d; h++) {
		/* full-length kernels, as the reference (no truncation) */
		if (ssm_kernel(&ly->sp, h, L, K, L, kw, err) < 0)
			goto out;
		if (t->K0)
			memcpy(t->K0 + (int64_t)h * L, K, (size_t)L * sizeof *K);
		if (t->K1 && nch > 1)
			memcpy(t->K1 + (int64_t)h * L, K + L, (size_t)L * sizeof *K);
		ssm_conv(pl, cw, kT + (int64_t)h * L, L, K, nch > 1 ? K + L : NULL, L, 0.0f,
		         yT + (int64_t)h * L);
	}
	ROWMAJOR(t->conv, yT);
	for (int h = 0; h < d; h++)
		for (int64_t j = 0; j < L; j++)
			yT[(int64_t)h * L + j] += ly->D[h] * kT[(int64_t)h * L + j];
	ROWMAJOR(t->convD, yT);
	for (int64_t i = 0; i < L * d; i++)
		yT[i] *= qT[i];
	ROWMAJOR(t->gated, yT);
	if (t->ssm_out) {
		memset(t->ssm_out, 0, (size_t)(L * d) * sizeof *t->ssm_out);
		out_proj(ly->wo, ly->bo, yT, L, L, d, t->ssm_out, 1);
	}
#undef ROWMAJOR
	rc = 0;
out:
	free(u);
	free(kT);
	free(qT);
	free(yT);
	free(K);
	ssm_kwork_free(kw);
	ssm_cwork_free(cw);
	ssm_plans_free(pl);
	return rc;
}

int locost_gemm_only(locost *e, int64_t L, double *seconds, lc_err *err)
{
	run r;
	float *h, *kT;
	double t0;
	int rc = -1;

	if (L < 1)
		return lc_fail(err, "empty input");
	memset(&r, 0, sizeof r);
	h = calloc((size_t)L * (size_t)e->d, sizeof *h);
	kT = calloc((size_t)L * (size_t)e->d, sizeof *kT);
	if (!h || !kT) {
		lc_fail(err, "out of memory (%lld tokens)", (long long)L);
		goto out;
	}
	r.e = e;
	r.h = h;
	r.kT = kT;
	r.len = L;
	r.nblk = (L + LOCOST_ROWS - 1) / LOCOST_ROWS;
	r.gemm_only = 1;
	if (!(r.ts = new_scratch(e, e->threads, 0, 0, err)))
		goto out;
	set_blas_threads();
	t0 = now();
	for (int i = 0; i < e->nl; i++) {
		r.L = &e->ly[i];
		par_for(e->threads, r.nblk, pass_k, &r);
		par_for(e->threads, r.nblk, pass_rest, &r);
	}
	*seconds = now() - t0;
	rc = 0;
out:
	free_scratch(r.ts, e->threads);
	free(h);
	free(kT);
	return rc;
}
