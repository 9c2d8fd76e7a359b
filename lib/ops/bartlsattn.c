/*
 * bartlsattn.c: BART-LS's block and pooled attention (see bartlsattn.h).
 */
#include "ops/bartlsattn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/parallel.h"
#include "compute/compute.h"
#include "ops/linear.h"
#include "ops/softmax.h"

#define QROWS 256                /* query rows per product: bounds the scratch */
#define MASKED (-10000.0f)       /* block_noglobal assigns it to masked scores */

/* ------------------------------------------------------ block attention */

typedef struct blk_run {
	const blkattn_spec *s;
	const float *q, *k, *v, *dout;
	float *out, *dq, *dk, *dv;
	const unsigned char *pad;
	int64_t ld, T, nb, nc;       /* blocks, query chunks per block */
	float *scratch;
	int64_t sn;                  /* floats of scratch per thread */
} blk_run;

/* P [m, bs]: the probabilities of queries r0.. (m rows) of the block that
 * starts at row b0, head h. */
static void blk_probs(const blk_run *r, int64_t off, int64_t b0, int64_t r0, int64_t m, float *P)
{
	const blkattn_spec *s = r->s;
	int bs = s->bs;

	cmp_gemm(CMP_N, CMP_T, m, bs, s->dk, s->scale, r->q + r0 * r->ld + off, r->ld,
	         r->k + b0 * r->ld + off, r->ld, 0.0f, P, bs);
	if (r->pad)
		for (int64_t i = 0; i < m; i++) {
			float *p = P + i * bs;
			if (r->pad[r0 + i]) {
				for (int j = 0; j < bs; j++)
					p[j] = MASKED;
				continue;
			}
			for (int j = 0; j < bs; j++)
				if (r->pad[b0 + j])
					p[j] = MASKED;
		}
	softmax_fw(P, m, bs, bs);
}

static void blk_fw_job(void *ctx, int64_t j, int tid)
{
	const blk_run *r = ctx;
	const blkattn_spec *s = r->s;
	int64_t h = j / (r->nb * r->nc), b = j / r->nc % r->nb, c = j % r->nc;
	int64_t off = h * s->dk, b0 = b * s->bs, r0 = b0 + c * QROWS;
	int64_t m = s->bs - c * QROWS < QROWS ? s->bs - c * QROWS : QROWS;
	float *P = r->scratch + tid * r->sn;

	blk_probs(r, off, b0, r0, m, P);
	cmp_gemm(CMP_N, CMP_N, m, s->dk, s->bs, 1.0f, P, s->bs, r->v + b0 * r->ld + off, r->ld, 0.0f,
	         r->out + r0 * r->ld + off, r->ld);
}

/* One head and block: its query chunks one after the other (they add to
 * the block's dk and dv). */
static void blk_bw_job(void *ctx, int64_t j, int tid)
{
	const blk_run *r = ctx;
	const blkattn_spec *s = r->s;
	int bs = s->bs;
	int64_t h = j / r->nb, b = j % r->nb, off = h * s->dk, b0 = b * bs, ld = r->ld;
	float *P = r->scratch + tid * r->sn, *dP = P + (int64_t)QROWS * bs;

	for (int64_t c = 0; c < r->nc; c++) {
		int64_t r0 = b0 + c * QROWS, m = bs - c * QROWS < QROWS ? bs - c * QROWS : QROWS;

		blk_probs(r, off, b0, r0, m, P);
		cmp_gemm(CMP_T, CMP_N, bs, s->dk, m, 1.0f, P, bs, r->dout + r0 * ld + off, ld, 1.0f,
		         r->dv + b0 * ld + off, ld);
		cmp_gemm(CMP_N, CMP_T, m, bs, s->dk, 1.0f, r->dout + r0 * ld + off, ld,
		         r->v + b0 * ld + off, ld, 0.0f, dP, bs);
		softmax_bw(P, dP, m, bs, bs);
		/* masked scores are assigned constants: no gradient */
		if (r->pad)
			for (int64_t i = 0; i < m; i++)
				for (int jj = 0; jj < bs; jj++)
					if (r->pad[r0 + i] || r->pad[b0 + jj])
						dP[i * bs + jj] = 0.0f;
		cmp_gemm(CMP_N, CMP_N, m, s->dk, bs, s->scale, dP, bs, r->k + b0 * ld + off, ld, 1.0f,
		         r->dq + r0 * ld + off, ld);
		cmp_gemm(CMP_T, CMP_N, bs, s->dk, m, s->scale, dP, bs, r->q + r0 * ld + off, ld, 1.0f,
		         r->dk + b0 * ld + off, ld);
	}
}

static int blk_check(const blkattn_spec *s, int64_t T, lc_err *err)
{
	if (s->bs < 1 || s->heads < 1 || s->dk < 1)
		return lc_fail(err, "block attention: block_size %d, %d heads of %d", s->bs, s->heads,
		               s->dk);
	if (T < 0 || T % s->bs)
		return lc_fail(err, "block attention: %lld rows are not a multiple of block_size %d",
		               (long long)T, s->bs);
	return 0;
}

int blkattn_fw(const blkattn_spec *s, const float *q, const float *k, const float *v, int64_t ld,
               int64_t T, const unsigned char *pad, float *out, int nth, lc_err *err)
{
	blk_run r = { .s = s, .q = q, .k = k, .v = v, .out = out, .pad = pad, .ld = ld, .T = T };

	if (blk_check(s, T, err) < 0)
		return -1;
	if (nth < 1)
		nth = 1;
	r.nb = T / s->bs;
	r.nc = (s->bs + QROWS - 1) / QROWS;
	r.sn = (int64_t)QROWS * s->bs;
	if (!(r.scratch = malloc((size_t)(nth * r.sn) * sizeof *r.scratch)))
		return lc_fail(err, "out of memory (block attention, block_size %d)", s->bs);
	par_for(nth, s->heads * r.nb * r.nc, blk_fw_job, &r);
	free(r.scratch);
	return 0;
}

int blkattn_bw(const blkattn_spec *s, const float *q, const float *k, const float *v, int64_t ld,
               int64_t T, const unsigned char *pad, const float *dout, float *dq, float *dk,
               float *dv, int nth, lc_err *err)
{
	blk_run r = { .s = s, .q = q, .k = k, .v = v, .dout = dout, .dq = dq, .dk = dk, .dv = dv,
	              .pad = pad, .ld = ld, .T = T };

	if (blk_check(s, T, err) < 0)
		return -1;
	if (nth < 1)
		nth = 1;
	r.nb = T / s->bs;
	r.nc = (s->bs + QROWS - 1) / QROWS;
	r.sn = 2 * (int64_t)QROWS * s->bs;
	if (!(r.scratch = malloc((size_t)(nth * r.sn) * sizeof *r.scratch)))
		return lc_fail(err, "out of memory (block attention, block_size %d)", s->bs);
	par_for(nth, s->heads * r.nb, blk_bw_job, &r);
	free(r.scratch);
	return 0;
}

/* ----------------------------------------------------- pooled attention */

const char *poolattn_spec_invalid(const poolattn_spec *s)
{
	if (s->heads < 1 || s->d < 1 || s->d % s->heads)
		return "d_model is not a multiple of the heads";
	if (s->kernel < 1 || s->stride < 1)
		return "the pooling kernel and stride must be positive";
	if (s->padding < 0 || s->padding > s->kernel / 2)
		return "the pooling padding must be between 0 and half the kernel";
	return NULL;
}

int64_t poolattn_len(const poolattn_spec *s, int64_t T)
{
	int64_t n = T + 2 * (int64_t)s->padding - s->kernel;

	return n < 0 ? 0 : n / s->stride + 1;
}

int poolattn_tape_init(poolattn_tape *t, const poolattn_spec *s, int64_t T, lc_err *err)
{
	const char *why = poolattn_spec_invalid(s);
	int64_t Tp = poolattn_len(s, T), d = s->d;

	memset(t, 0, sizeof *t);
	if (why)
		return lc_fail(err, "pooled attention: %s (d %d, %d heads, kernel %d, stride %d, "
		               "padding %d)", why, s->d, s->heads, s->kernel, s->stride, s->padding);
	if (Tp < 1)
		return lc_fail(err, "pooled attention: %lld positions are fewer than the pooling "
		               "kernel %d allows", (long long)T, s->kernel);
	t->T = T;
	t->Tp = Tp;
	t->q = malloc((size_t)(T * d) * sizeof *t->q);
	t->o = malloc((size_t)(T * d) * sizeof *t->o);
	t->kp = malloc((size_t)(Tp * d) * sizeof *t->kp);
	t->vp = malloc((size_t)(Tp * d) * sizeof *t->vp);
	t->pm = calloc((size_t)Tp, 1);
	if (!t->q || !t->o || !t->kp || !t->vp || !t->pm) {
		poolattn_tape_free(t);
		return lc_fail(err, "out of memory (pooled attention, %lld positions)", (long long)T);
	}
	return 0;
}

void poolattn_tape_free(poolattn_tape *t)
{
	free(t->q);
	free(t->o);
	free(t->kp);
	free(t->vp);
	free(t->pm);
	memset(t, 0, sizeof *t);
}

/* The positions [*t0, *t1) of window j inside [0, T). */
static void window(const poolattn_spec *s, int64_t T, int64_t j, int64_t *t0, int64_t *t1)
{
	int64_t a = j * s->stride - s->padding, b = a + s->kernel;

	*t0 = a < 0 ? 0 : a;
	*t1 = b > T ? T : b;
}

typedef struct pool_run {
	const poolattn_spec *s;
	const float *x;              /* forward: x in, y out; backward: dy in y, dx out */
	float *y, *dx;
	int64_t T, Tp;
} pool_run;

/* y[j] = sum of x over window j / kernel (torch sums in order, then divides) */
static void pool_fw_job(void *ctx, int64_t j, int tid)
{
	const pool_run *r = ctx;
	int d = r->s->d;
	int64_t t0, t1;
	float *y = r->y + j * d;

	(void)tid;
	window(r->s, r->T, j, &t0, &t1);
	memset(y, 0, (size_t)d * sizeof *y);
	for (int64_t t = t0; t < t1; t++)
		for (int c = 0; c < d; c++)
			y[c] += r->x[t * d + c];
	for (int c = 0; c < d; c++)
		y[c] /= (float)r->s->kernel;
}

/* x[t] += the windows' dy containing t / kernel (y is dy, x is dx) */
static void pool_bw_job(void *ctx, int64_t t, int tid)
{
	const pool_run *r = ctx;
	const poolattn_spec *s = r->s;
	int d = s->d;
	int64_t lo = t + s->padding - s->kernel + 1, hi = (t + s->padding) / s->stride;
	float *dx = r->dx + t * d;

	(void)tid;
	lo = lo <= 0 ? 0 : (lo + s->stride - 1) / s->stride;
	if (hi >= r->Tp)
		hi = r->Tp - 1;
	for (int64_t j = lo; j <= hi; j++)
		for (int c = 0; c < d; c++)
			dx[c] += r->y[j * d + c] / (float)s->kernel;
}

typedef struct xat_run {
	const poolattn_spec *s;
	const poolattn_tape *t;
	const float *dO;
	float *dQ, *dKp, *dVp;
	int64_t nq;
	float scale;
	float *scratch;
	int64_t sn;
} xat_run;

/* P [m, Tp] of queries r0.. of head h */
static void xat_probs(const xat_run *r, int64_t off, int64_t r0, int64_t m, float *P)
{
	const poolattn_tape *t = r->t;
	int d = r->s->d, dk = d / r->s->heads;
	int64_t Tp = t->Tp;

	cmp_gemm(CMP_N, CMP_T, m, Tp, dk, r->scale, t->q + r0 * d + off, d, t->kp + off, d, 0.0f,
	         P, Tp);
	for (int64_t j = 0; j < Tp; j++)
		if (t->pm[j])
			for (int64_t i = 0; i < m; i++)
				P[i * Tp + j] = -INFINITY;
	softmax_fw(P, m, Tp, Tp);
}

static void xat_fw_job(void *ctx, int64_t j, int tid)
{
	const xat_run *r = ctx;
	int d = r->s->d, dk = d / r->s->heads;
	int64_t h = j / r->nq, r0 = j % r->nq * QROWS;
	int64_t m = r->t->T - r0 < QROWS ? r->t->T - r0 : QROWS, off = h * dk;
	float *P = r->scratch + tid * r->sn;

	xat_probs(r, off, r0, m, P);
	cmp_gemm(CMP_N, CMP_N, m, dk, r->t->Tp, 1.0f, P, r->t->Tp, r->t->vp + off, d, 0.0f,
	         r->t->o + r0 * d + off, d);
}

/* One head: its query chunks in turn (they add to its dKp, dVp). */
static void xat_bw_job(void *ctx, int64_t h, int tid)
{
	const xat_run *r = ctx;
	const poolattn_tape *t = r->t;
	int d = r->s->d, dk = d / r->s->heads;
	int64_t Tp = t->Tp, off = h * dk;
	float *P = r->scratch + tid * r->sn, *dP = P + (int64_t)QROWS * Tp;

	for (int64_t c = 0; c < r->nq; c++) {
		int64_t r0 = c * QROWS, m = t->T - r0 < QROWS ? t->T - r0 : QROWS;

		xat_probs(r, off, r0, m, P);
		cmp_gemm(CMP_T, CMP_N, Tp, dk, m, 1.0f, P, Tp, r->dO + r0 * d + off, d, 1.0f,
		         r->dVp + off, d);
		cmp_gemm(CMP_N, CMP_T, m, Tp, dk, 1.0f, r->dO + r0 * d + off, d, t->vp + off, d, 0.0f,
		         dP, Tp);
		softmax_bw(P, dP, m, Tp, Tp);   /* masked keys have P = 0, so dS = 0 */
		cmp_gemm(CMP_N, CMP_N, m, dk, Tp, r->scale, dP, Tp, t->kp + off, d, 1.0f,
		         r->dQ + r0 * d + off, d);
		cmp_gemm(CMP_T, CMP_N, Tp, dk, m, r->scale, dP, Tp, t->q + r0 * d + off, d, 1.0f,
		         r->dKp + off, d);
	}
}

static void zero_pad_rows(float *x, const unsigned char *pad, int64_t T, int d)
{
	for (int64_t i = 0; pad && i < T; i++)
		if (pad[i])
			memset(x + i * d, 0, (size_t)d * sizeof *x);
}

int poolattn_fw(const poolattn_spec *s, const poolattn_w *W, const float *a, int64_t T,
                const unsigned char *pad, poolattn_tape *t, float *cross, int gemm_only, int nth,
                lc_err *err)
{
	int d = s->d, dk = d / s->heads;
	int64_t Tp = t->Tp;
	pool_run pr = { s, t->o, NULL, NULL, T, Tp };
	xat_run xr = { .s = s, .t = t, .scale = 1.0f / sqrtf((float)dk) };

	if (T != t->T)
		return lc_fail(err, "pooled attention: a tape of %lld positions for %lld",
		               (long long)t->T, (long long)T);
	if (nth < 1)
		nth = 1;
	if (gemm_only) {
		linear_fw(t->o, a, W->wk, NULL, T, d, d, 0.0f, nth);
		linear_fw(t->o, a, W->wv, NULL, T, d, d, 0.0f, nth);
		linear_fw(t->q, a, W->wq, NULL, T, d, d, 0.0f, nth);
		linear_fw(cross, t->o, W->wo, NULL, T, d, d, 0.0f, nth);
		return 0;
	}
	/* K then V through t->o (scratch until the attention writes it) */
	linear_fw(t->o, a, W->wk, W->bk, T, d, d, 0.0f, nth);
	zero_pad_rows(t->o, pad, T, d);
	pr.y = t->kp;
	par_for(nth, Tp, pool_fw_job, &pr);
	linear_fw(t->o, a, W->wv, W->bv, T, d, d, 0.0f, nth);
	zero_pad_rows(t->o, pad, T, d);
	pr.y = t->vp;
	par_for(nth, Tp, pool_fw_job, &pr);
	for (int64_t j = 0; j < Tp; j++) {
		int64_t t0, t1, all = 1;
		window(s, T, j, &t0, &t1);
		for (int64_t i = t0; pad && all && i < t1; i++)
			all = pad[i] != 0;
		t->pm[j] = pad && all;
	}
	linear_fw(t->q, a, W->wq, W->bq, T, d, d, 0.0f, nth);
	xr.nq = (T + QROWS - 1) / QROWS;
	xr.sn = (int64_t)QROWS * Tp;
	if (!(xr.scratch = malloc((size_t)(nth * xr.sn) * sizeof *xr.scratch)))
		return lc_fail(err, "out of memory (pooled attention, %lld positions)", (long long)T);
	par_for(nth, s->heads * xr.nq, xat_fw_job, &xr);
	free(xr.scratch);
	linear_fw(cross, t->o, W->wo, W->bo, T, d, d, 0.0f, nth);
	return 0;
}

int poolattn_bw(const poolattn_spec *s, const poolattn_w *W, const float *a,
                const unsigned char *pad, const poolattn_tape *t, const float *dcross, float *da,
                const poolattn_w *G, int nth, lc_err *err)
{
	int d = s->d, dk = d / s->heads;
	int64_t T = t->T, Tp = t->Tp;
	float *dO = calloc((size_t)(T * d), sizeof *dO), *dQ = calloc((size_t)(T * d), sizeof *dQ);
	float *dKp = calloc((size_t)(Tp * d), sizeof *dKp), *dVp = calloc((size_t)(Tp * d), sizeof *dVp);
	xat_run xr = { .s = s, .t = t, .dO = dO, .dQ = dQ, .dKp = dKp, .dVp = dVp,
	               .scale = 1.0f / sqrtf((float)dk) };
	pool_run pr = { s, NULL, NULL, dO, T, Tp };
	int rc = -1;

	if (nth < 1)
		nth = 1;
	xr.nq = (T + QROWS - 1) / QROWS;
	xr.sn = 2 * (int64_t)QROWS * Tp;
	xr.scratch = malloc((size_t)(nth * xr.sn) * sizeof *xr.scratch);
	if (!dO || !dQ || !dKp || !dVp || !xr.scratch) {
		lc_fail(err, "out of memory (pooled attention backward, %lld positions)", (long long)T);
		goto out;
	}
	linear_bw(dcross, t->o, W->wo, T, d, d, dO, G->wo, G->bo);
	par_for(nth, s->heads, xat_bw_job, &xr);
	linear_bw(dQ, a, W->wq, T, d, d, da, G->wq, G->bq);
	/* dK, then dV, through dO */
	memset(dO, 0, (size_t)(T * d) * sizeof *dO);
	pr.y = dKp;
	par_for(nth, T, pool_bw_job, &pr);
	zero_pad_rows(dO, pad, T, d);
	linear_bw(dO, a, W->wk, T, d, d, da, G->wk, G->bk);
	memset(dO, 0, (size_t)(T * d) * sizeof *dO);
	pr.y = dVp;
	par_for(nth, T, pool_bw_job, &pr);
	zero_pad_rows(dO, pad, T, d);
	linear_bw(dO, a, W->wv, T, d, d, da, G->wv, G->bv);
	rc = 0;
out:
	free(dO);
	free(dQ);
	free(dKp);
	free(dVp);
	free(xr.scratch);
	return rc;
}
