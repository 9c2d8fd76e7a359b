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
#include "ops/segattn.h"
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
	int64_t pw;                  /* floats of a row of P: bs, + 1 with global0 */
	float *scratch;
	int64_t sn;                  /* floats of scratch per thread */
	float *gacc;                 /* global0 backward: [heads x nb][2 dk], the jobs'
	                              * shares of dk and dv of row 0 */
} blk_run;

/* Whether score (i, j) of a block is assigned MASKED. */
static int blk_masked(const blk_run *r, int64_t i, int64_t j)
{
	if (r->s->global0)
		return i == 0 || j == 0 || (r->pad && (r->pad[i] || r->pad[j]));
	return r->pad && (r->pad[i] || r->pad[j]);
}

/* The keys of the block that starts at row b0 (global0: the last is cut
 * at T). */
static int64_t blk_keys(const blk_run *r, int64_t b0)
{
	return r->T - b0 < r->s->bs ? r->T - b0 : r->s->bs;
}

/* P [m, pw]: the probabilities of queries r0.. (m rows) of the block that
 * starts at row b0, head h; with global0, column bs is token 0's. */
static void blk_probs(const blk_run *r, int64_t off, int64_t b0, int64_t r0, int64_t m, float *P)
{
	const blkattn_spec *s = r->s;
	int bs = s->bs;
	int64_t nk = blk_keys(r, b0), pw = r->pw;

	cmp_gemm(CMP_N, CMP_T, m, nk, s->dk, s->scale, r->q + r0 * r->ld + off, r->ld,
	         r->k + b0 * r->ld + off, r->ld, 0.0f, P, pw);
	if (s->global0)
		cmp_gemm(CMP_N, CMP_T, m, 1, s->dk, s->scale, r->q + r0 * r->ld + off, r->ld, r->k + off,
		         r->ld, 0.0f, P + bs, pw);
	for (int64_t i = 0; i < m; i++) {
		float *p = P + i * pw;
		for (int64_t j = nk; j < bs; j++)
			p[j] = MASKED;
		if (r->pad || s->global0)
			for (int64_t j = 0; j < nk; j++)
				if (blk_masked(r, r0 + i, b0 + j))
					p[j] = MASKED;
	}
	softmax_fw(P, m, pw, pw);
}

/* Query rows of chunk c of the block at b0 (0: none, past T). */
static int64_t blk_rows(const blk_run *r, int64_t b0, int64_t c)
{
	int64_t r0 = b0 + c * QROWS, m = r->s->bs - c * QROWS < QROWS ? r->s->bs - c * QROWS : QROWS;

	if (r0 >= r->T)
		return 0;
	return r->T - r0 < m ? r->T - r0 : m;
}

static void blk_fw_job(void *ctx, int64_t j, int tid)
{
	const blk_run *r = ctx;
	const blkattn_spec *s = r->s;
	int64_t h = j / (r->nb * r->nc), b = j / r->nc % r->nb, c = j % r->nc;
	int64_t off = h * s->dk, b0 = b * s->bs, r0 = b0 + c * QROWS, m = blk_rows(r, b0, c);
	float *P = r->scratch + tid * r->sn;

	if (m < 1)
		return;
	blk_probs(r, off, b0, r0, m, P);
	cmp_gemm(CMP_N, CMP_N, m, s->dk, blk_keys(r, b0), 1.0f, P, r->pw, r->v + b0 * r->ld + off,
	         r->ld, 0.0f, r->out + r0 * r->ld + off, r->ld);
	if (s->global0)
		cmp_gemm(CMP_N, CMP_N, m, s->dk, 1, 1.0f, P + s->bs, r->pw, r->v + off, r->ld, 1.0f,
		         r->out + r0 * r->ld + off, r->ld);
}

/* global0: query 0 of head h over every key, P [T] */
static void blk_row0_probs(const blk_run *r, int64_t off, float *P)
{
	cmp_gemm(CMP_N, CMP_T, 1, r->T, r->s->dk, r->s->scale, r->q + off, r->ld, r->k + off, r->ld,
	         0.0f, P, r->T);
	for (int64_t j = 1; r->pad && j < r->T; j++)
		if (r->pad[j])
			P[j] = MASKED;
	softmax_fw(P, 1, r->T, r->T);
}

static void blk_row0_fw_job(void *ctx, int64_t h, int tid)
{
	const blk_run *r = ctx;
	int64_t off = h * r->s->dk;
	float *P = r->scratch + tid * r->sn;

	blk_row0_probs(r, off, P);
	cmp_gemm(CMP_N, CMP_N, 1, r->s->dk, r->T, 1.0f, P, r->T, r->v + off, r->ld, 0.0f,
	         r->out + off, r->ld);
}

static void blk_row0_bw_job(void *ctx, int64_t h, int tid)
{
	const blk_run *r = ctx;
	int64_t off = h * r->s->dk, T = r->T, ld = r->ld;
	int dk = r->s->dk;
	float *P = r->scratch + tid * r->sn, *dP = P + T;

	blk_row0_probs(r, off, P);
	cmp_gemm(CMP_T, CMP_N, T, dk, 1, 1.0f, P, T, r->dout + off, ld, 1.0f, r->dv + off, ld);
	cmp_gemm(CMP_N, CMP_T, 1, T, dk, 1.0f, r->dout + off, ld, r->v + off, ld, 0.0f, dP, T);
	softmax_bw(P, dP, 1, T, T);
	for (int64_t j = 1; r->pad && j < T; j++)
		if (r->pad[j])
			dP[j] = 0.0f;
	cmp_gemm(CMP_N, CMP_N, 1, dk, T, r->s->scale, dP, T, r->k + off, ld, 1.0f, r->dq + off, ld);
	cmp_gemm(CMP_T, CMP_N, T, dk, 1, r->s->scale, dP, T, r->q + off, ld, 1.0f, r->dk + off, ld);
}

/* One head and block: its query chunks one after the other (they add to
 * the block's dk and dv; with global0, row 0's shares go to gacc). */
static void blk_bw_job(void *ctx, int64_t j, int tid)
{
	const blk_run *r = ctx;
	const blkattn_spec *s = r->s;
	int bs = s->bs, dk = s->dk;
	int64_t h = j / r->nb, b = j % r->nb, off = h * dk, b0 = b * bs, ld = r->ld, pw = r->pw;
	int64_t nk = blk_keys(r, b0);
	float *P = r->scratch + tid * r->sn, *dP = P + (int64_t)QROWS * pw;
	float *gk = r->gacc ? r->gacc + j * 2 * dk : NULL, *gv = gk ? gk + dk : NULL;

	for (int64_t c = 0; c < r->nc; c++) {
		int64_t r0 = b0 + c * QROWS, m = blk_rows(r, b0, c);

		if (m < 1)
			break;
		blk_probs(r, off, b0, r0, m, P);
		if (s->global0 && r0 == 0)      /* query 0's output is the global row's */
			memset(P, 0, (size_t)pw * sizeof *P);
		cmp_gemm(CMP_T, CMP_N, nk, dk, m, 1.0f, P, pw, r->dout + r0 * ld + off, ld, 1.0f,
		         r->dv + b0 * ld + off, ld);
		cmp_gemm(CMP_N, CMP_T, m, nk, dk, 1.0f, r->dout + r0 * ld + off, ld,
		         r->v + b0 * ld + off, ld, 0.0f, dP, pw);
		if (s->global0) {
			cmp_gemm(CMP_T, CMP_N, 1, dk, m, 1.0f, P + bs, pw, r->dout + r0 * ld + off, ld,
			         1.0f, gv, dk);
			cmp_gemm(CMP_N, CMP_T, m, 1, dk, 1.0f, r->dout + r0 * ld + off, ld, r->v + off, ld,
			         0.0f, dP + bs, pw);
			for (int64_t i = 0; i < m; i++)
				for (int64_t jj = nk; jj < bs; jj++)
					dP[i * pw + jj] = 0.0f;
		}
		softmax_bw(P, dP, m, pw, pw);
		/* masked scores are assigned constants: no gradient */
		if (r->pad || s->global0)
			for (int64_t i = 0; i < m; i++)
				for (int64_t jj = 0; jj < nk; jj++)
					if (blk_masked(r, r0 + i, b0 + jj))
						dP[i * pw + jj] = 0.0f;
		cmp_gemm(CMP_N, CMP_N, m, dk, nk, s->scale, dP, pw, r->k + b0 * ld + off, ld, 1.0f,
		         r->dq + r0 * ld + off, ld);
		cmp_gemm(CMP_T, CMP_N, nk, dk, m, s->scale, dP, pw, r->q + r0 * ld + off, ld, 1.0f,
		         r->dk + b0 * ld + off, ld);
		if (s->global0) {
			cmp_gemm(CMP_N, CMP_N, m, dk, 1, s->scale, dP + bs, pw, r->k + off, ld, 1.0f,
			         r->dq + r0 * ld + off, ld);
			cmp_gemm(CMP_T, CMP_N, 1, dk, m, s->scale, dP + bs, pw, r->q + r0 * ld + off, ld,
			         1.0f, gk, dk);
		}
	}
}

static int blk_check(const blkattn_spec *s, int64_t T, lc_err *err)
{
	if (s->bs < 1 || s->heads < 1 || s->dk < 1)
		return lc_fail(err, "block attention: block_size %d, %d heads of %d", s->bs, s->heads,
		               s->dk);
	if (T < 0 || (!s->global0 && T % s->bs))
		return lc_fail(err, "block attention: %lld rows are not a multiple of block_size %d",
		               (long long)T, s->bs);
	return 0;
}

/* The run's sizes; scratch of `per` P-sized buffers for nth threads (and
 * the global row's). */
static int blk_setup(blk_run *r, int per, int nth, lc_err *err)
{
	const blkattn_spec *s = r->s;
	int64_t row0 = s->global0 ? per * r->T : 0;

	r->nb = (r->T + s->bs - 1) / s->bs;
	r->nc = (s->bs + QROWS - 1) / QROWS;
	r->pw = s->bs + (s->global0 != 0);
	r->sn = per * (int64_t)QROWS * r->pw;
	if (r->sn < row0)
		r->sn = row0;
	if (!(r->scratch = malloc((size_t)(nth * r->sn + 1) * sizeof *r->scratch)))
		return lc_fail(err, "out of memory (block attention, block_size %d)", s->bs);
	return 0;
}

/* pad flags [n] as floats (1 for a pad), or NULL when out of memory */
static float *pad_floats(const unsigned char *pad, int64_t n)
{
	float *f = malloc((size_t)(n ? n : 1) * sizeof *f);

	for (int64_t i = 0; f && i < n; i++)
		f[i] = pad[i] ? 1.0f : 0.0f;
	return f;
}

/* blkattn_fw on the GPU (ops/segattn.h), q, k, v and out the CPU's or
 * (dev) already the GPU's (the caller holding the device's lock): 0 done,
 * 1 the CPU's to do.
 * Every masked score is assigned, so a pad flag on the segment (and on
 * the rows) is the CPU's blk_masked; with global0, key 0 is a segment of
 * its own, never masked, and is left out of block 0's keys (which mask
 * it), and row 0 attends to every key with only the keys' pads masked. */
static int blk_dev(const blkattn_spec *s, const float *q, const float *k, const float *v,
                   int64_t ld, int64_t T, const unsigned char *pad, float *out, int dev,
                   lc_err *err)
{
	void (*rows)(sa_plan *, const float *, int64_t) = dev ? sa_buf_dev : sa_buf;
	sa_plan *p = sa_new(s->dk, s->scale);
	int64_t w = (int64_t)s->heads * s->dk, n = (T - 1) * ld + w, bs = s->bs;
	float *pf = pad ? pad_floats(pad, T) : NULL;
	int rc;

	if (!p || (pad && !pf)) {
		sa_free(p);
		free(pf);
		return lc_fail(err, "out of memory (an attention's plan)");
	}
	rows(p, q, n);
	rows(p, k, n);
	rows(p, v, n);
	if (pf)
		sa_buf(p, pf, T);
	for (int h = 0; h < s->heads; h++) {
		int64_t off = (int64_t)h * s->dk;
		for (int64_t b0 = 0; b0 < T; b0 += bs) {
			int64_t r0 = s->global0 && b0 == 0 ? 1 : b0, e = T - b0 < bs ? T : b0 + bs;
			const float *rp = pf && r0 < T ? pf + r0 : NULL;
			if (s->global0)
				sa_seg(p, k + off, v + off, ld, 1, NULL, NULL);
			sa_seg(p, k + r0 * ld + off, v + r0 * ld + off, ld, e - r0, NULL, rp);
			sa_rows(p, q + r0 * ld + off, ld, e - r0, r0 * ld + off, ld, rp);
		}
		if (s->global0) {
			sa_seg(p, k + off, v + off, ld, 1, NULL, NULL);
			sa_seg(p, k + ld + off, v + ld + off, ld, T - 1, NULL, pf && T > 1 ? pf + 1 : NULL);
			sa_rows(p, q + off, ld, 1, off, ld, NULL);
		}
	}
	rc = dev ? sa_run_dev(p, out, err) : sa_run(p, out, T, w, ld, err);
	sa_free(p);
	free(pf);
	return rc;
}

int blkattn_fw(const blkattn_spec *s, const float *q, const float *k, const float *v, int64_t ld,
               int64_t T, const unsigned char *pad, float *out, int nth, lc_err *err)
{
	int rc;
	blk_run r = { .s = s, .q = q, .k = k, .v = v, .out = out, .pad = pad, .ld = ld, .T = T };

	if (blk_check(s, T, err) < 0)
		return -1;
	if (T == 0)
		return 0;
	if (sa_takes(s->dk) && (rc = blk_dev(s, q, k, v, ld, T, pad, out, 0, err)) <= 0)
		return rc;
	if (nth < 1)
		nth = 1;
	if (blk_setup(&r, 1, nth, err) < 0)
		return -1;
	par_for(nth, s->heads * r.nb * r.nc, blk_fw_job, &r);
	if (s->global0)
		par_for(nth, s->heads, blk_row0_fw_job, &r);
	free(r.scratch);
	return 0;
}

int blkattn_fw_dev(const blkattn_spec *s, const float *q, const float *k, const float *v,
                   int64_t ld, int64_t T, const unsigned char *pad, float *out, lc_err *err)
{
	if (blk_check(s, T, err) < 0)
		return -1;
	if (T == 0)
		return 0;
	if (!sa_takes(s->dk))
		return 1;
	return blk_dev(s, q, k, v, ld, T, pad, out, 1, err);
}

int blkattn_bw(const blkattn_spec *s, const float *q, const float *k, const float *v, int64_t ld,
               int64_t T, const unsigned char *pad, const float *dout, float *dq, float *dk,
               float *dv, int nth, lc_err *err)
{
	blk_run r = { .s = s, .q = q, .k = k, .v = v, .dout = dout, .dq = dq, .dk = dk, .dv = dv,
	              .pad = pad, .ld = ld, .T = T };

	if (blk_check(s, T, err) < 0)
		return -1;
	if (T == 0)
		return 0;
	if (nth < 1)
		nth = 1;
	if (blk_setup(&r, 2, nth, err) < 0)
		return -1;
	if (s->global0 &&
	    !(r.gacc = calloc((size_t)(s->heads * r.nb * 2 * s->dk), sizeof *r.gacc))) {
		free(r.scratch);
		return lc_fail(err, "out of memory (block attention, %lld rows)", (long long)T);
	}
	par_for(nth, s->heads * r.nb, blk_bw_job, &r);
	if (s->global0) {
		/* row 0's shares in job order: the same bits for every thread count */
		for (int64_t j = 0; j < s->heads * r.nb; j++) {
			const float *g = r.gacc + j * 2 * s->dk;
			int64_t off = j / r.nb * s->dk;
			for (int c = 0; c < s->dk; c++) {
				dk[off + c] += g[c];
				dv[off + c] += g[s->dk + c];
			}
		}
		par_for(nth, s->heads, blk_row0_bw_job, &r);
	}
	free(r.gacc);
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

/* Attention of T queries over Tp keys, every head (the pooled attention's
 * and the top-down layers' cross-attention to the segments). */
typedef struct xat_run {
	int heads, d;
	const float *q, *kp, *vp;    /* [T, d], [Tp, d], [Tp, d] */
	float *o;                    /* [T, d] */
	const unsigned char *pm;     /* [Tp] masked keys, or NULL */
	int64_t T, Tp;
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
	int d = r->d, dk = d / r->heads;
	int64_t Tp = r->Tp;

	cmp_gemm(CMP_N, CMP_T, m, Tp, dk, r->scale, r->q + r0 * d + off, d, r->kp + off, d, 0.0f,
	         P, Tp);
	for (int64_t j = 0; r->pm && j < Tp; j++)
		if (r->pm[j])
			for (int64_t i = 0; i < m; i++)
				P[i * Tp + j] = -INFINITY;
	softmax_fw(P, m, Tp, Tp);
}

static void xat_fw_job(void *ctx, int64_t j, int tid)
{
	const xat_run *r = ctx;
	int d = r->d, dk = d / r->heads;
	int64_t h = j / r->nq, r0 = j % r->nq * QROWS;
	int64_t m = r->T - r0 < QROWS ? r->T - r0 : QROWS, off = h * dk;
	float *P = r->scratch + tid * r->sn;

	xat_probs(r, off, r0, m, P);
	cmp_gemm(CMP_N, CMP_N, m, dk, r->Tp, 1.0f, P, r->Tp, r->vp + off, d, 0.0f,
	         r->o + r0 * d + off, d);
}

/* One head: its query chunks in turn (they add to its dKp, dVp). */
static void xat_bw_job(void *ctx, int64_t h, int tid)
{
	const xat_run *r = ctx;
	int d = r->d, dk = d / r->heads;
	int64_t Tp = r->Tp, off = h * dk;
	float *P = r->scratch + tid * r->sn, *dP = P + (int64_t)QROWS * Tp;

	for (int64_t c = 0; c < r->nq; c++) {
		int64_t r0 = c * QROWS, m = r->T - r0 < QROWS ? r->T - r0 : QROWS;

		xat_probs(r, off, r0, m, P);
		cmp_gemm(CMP_T, CMP_N, Tp, dk, m, 1.0f, P, Tp, r->dO + r0 * d + off, d, 1.0f,
		         r->dVp + off, d);
		cmp_gemm(CMP_N, CMP_T, m, Tp, dk, 1.0f, r->dO + r0 * d + off, d, r->vp + off, d, 0.0f,
		         dP, Tp);
		softmax_bw(P, dP, m, Tp, Tp);   /* masked keys have P = 0, so dS = 0 */
		cmp_gemm(CMP_N, CMP_N, m, dk, Tp, r->scale, dP, Tp, r->kp + off, d, 1.0f,
		         r->dQ + r0 * d + off, d);
		cmp_gemm(CMP_T, CMP_N, Tp, dk, m, r->scale, dP, Tp, r->q + r0 * d + off, d, 1.0f,
		         r->dKp + off, d);
	}
}

/* The forward on the GPU (ops/segattn.h): 0 done, 1 the CPU's to do;
 * the pooled keys' mask flags as -inf. */
static int xat_dev(const xat_run *r, lc_err *err)
{
	float *mf = r->pm ? malloc((size_t)r->Tp * sizeof *mf) : NULL;
	int rc;

	if (r->pm && !mf)
		return lc_fail(err, "out of memory (an attention's plan)");
	for (int64_t j = 0; mf && j < r->Tp; j++)
		mf[j] = r->pm[j] ? -INFINITY : 0.0f;
	rc = sa_dense(r->heads, r->d / r->heads, r->scale, r->q, r->d, r->T, r->kp, r->vp, r->d,
	              r->Tp, mf, r->o, r->d, err);
	free(mf);
	return rc;
}

/* The forward (bw 0) or backward over nth threads. */
static int xat_run_all(xat_run *r, int bw, int nth, lc_err *err)
{
	int rc;

	r->scale = 1.0f / sqrtf((float)(r->d / r->heads));
	if (!bw && r->T > 0 && sa_takes(r->d / r->heads) && (rc = xat_dev(r, err)) <= 0)
		return rc;
	r->nq = (r->T + QROWS - 1) / QROWS;
	r->sn = (bw ? 2 : 1) * (int64_t)QROWS * r->Tp;
	if (!(r->scratch = malloc((size_t)(nth * r->sn) * sizeof *r->scratch)))
		return lc_fail(err, "out of memory (attention of %lld rows over %lld)", (long long)r->T,
		               (long long)r->Tp);
	if (bw)
		par_for(nth, r->heads, xat_bw_job, r);
	else
		par_for(nth, r->heads * r->nq, xat_fw_job, r);
	free(r->scratch);
	r->scratch = NULL;
	return 0;
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
	int d = s->d;
	int64_t Tp = t->Tp;
	pool_run pr = { s, t->o, NULL, NULL, T, Tp };
	xat_run xr = { .heads = s->heads, .d = d, .q = t->q, .kp = t->kp, .vp = t->vp, .o = t->o,
	               .pm = t->pm, .T = T, .Tp = Tp };

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
	if (xat_run_all(&xr, 0, nth, err) < 0)
		return -1;
	linear_fw(cross, t->o, W->wo, W->bo, T, d, d, 0.0f, nth);
	return 0;
}

int poolattn_bw(const poolattn_spec *s, const poolattn_w *W, const float *a,
                const unsigned char *pad, const poolattn_tape *t, const float *dcross, float *da,
                const poolattn_w *G, int nth, lc_err *err)
{
	int d = s->d;
	int64_t T = t->T, Tp = t->Tp;
	float *dO = calloc((size_t)(T * d), sizeof *dO), *dQ = calloc((size_t)(T * d), sizeof *dQ);
	float *dKp = calloc((size_t)(Tp * d), sizeof *dKp), *dVp = calloc((size_t)(Tp * d), sizeof *dVp);
	xat_run xr = { .heads = s->heads, .d = d, .q = t->q, .kp = t->kp, .vp = t->vp, .o = t->o,
	               .pm = t->pm, .T = T, .Tp = Tp, .dO = dO, .dQ = dQ, .dKp = dKp, .dVp = dVp };
	pool_run pr = { s, NULL, NULL, dO, T, Tp };
	int rc = -1;

	if (nth < 1)
		nth = 1;
	if (!dO || !dQ || !dKp || !dVp) {
		lc_fail(err, "out of memory (pooled attention backward, %lld positions)", (long long)T);
		goto out;
	}
	linear_bw(dcross, t->o, W->wo, T, d, d, dO, G->wo, G->bo);
	if (xat_run_all(&xr, 1, nth, err) < 0)
		goto out;
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
	return rc;
}

/* ------------------------------------------------ top-down segments */

void segpool_fw(const poolattn_spec *s, const float *x, int64_t T, float *y, int nth)
{
	pool_run pr = { s, x, y, NULL, T, poolattn_len(s, T) };

	par_for(nth < 1 ? 1 : nth, pr.Tp, pool_fw_job, &pr);
}

void segpool_bw(const poolattn_spec *s, int64_t T, const float *dy, float *dx, int nth)
{
	pool_run pr = { s, NULL, (float *)dy, dx, T, poolattn_len(s, T) };

	par_for(nth < 1 ? 1 : nth, T, pool_bw_job, &pr);
}

typedef struct ada_run {
	const poolattn_spec *s;
	const float *x, *u, *p, *y, *dy;
	float b;
	float *py, *dx, *dz;
	int64_t T, Tp;
} ada_run;

static void ada_score_job(void *ctx, int64_t t, int tid)
{
	const ada_run *r = ctx;
	const float *x = r->x + t * r->s->d;
	double z = r->b;

	(void)tid;
	for (int c = 0; c < r->s->d; c++)
		z += (double)x[c] * r->u[c];
	r->py[t] = (float)(1.0 / (1.0 + exp(-z)));
}

/* y[j] = sum p_t x_t / sum p_t over window j */
static void ada_fw_job(void *ctx, int64_t j, int tid)
{
	const ada_run *r = ctx;
	int d = r->s->d;
	int64_t t0, t1;
	double w = 0;
	float *y = r->py + j * d;

	(void)tid;
	window(r->s, r->T, j, &t0, &t1);
	memset(y, 0, (size_t)d * sizeof *y);
	for (int64_t t = t0; t < t1; t++) {
		w += r->p[t];
		for (int c = 0; c < d; c++)
			y[c] += r->p[t] * r->x[t * d + c];
	}
	for (int c = 0; c < d; c++)
		y[c] = (float)(y[c] / w);
}

/* dx_t += sum over the windows j holding t of p_t / P_j dy_j, and
 * dz_t = p_t (1 - p_t) sum_j dy_j . (x_t - y_j) / P_j */
static void ada_bw_job(void *ctx, int64_t t, int tid)
{
	const ada_run *r = ctx;
	const poolattn_spec *s = r->s;
	int d = s->d;
	int64_t lo = t + s->padding - s->kernel + 1, hi = (t + s->padding) / s->stride;
	const float *x = r->x + t * d;
	float *dx = r->dx + t * d;
	double dp = 0;

	(void)tid;
	lo = lo <= 0 ? 0 : (lo + s->stride - 1) / s->stride;
	if (hi >= r->Tp)
		hi = r->Tp - 1;
	for (int64_t j = lo; j <= hi; j++) {
		int64_t t0, t1;
		double w = 0, g = 0;
		const float *y = r->y + j * d, *dy = r->dy + j * d;

		window(s, r->T, j, &t0, &t1);
		for (int64_t i = t0; i < t1; i++)
			w += r->p[i];
		for (int c = 0; c < d; c++) {
			dx[c] += (float)(r->p[t] / w * dy[c]);
			g += (double)dy[c] * (x[c] - y[c]);
		}
		dp += g / w;
	}
	r->dz[t] = (float)(dp * r->p[t] * (1.0 - r->p[t]));
}

void adapool_fw(const poolattn_spec *s, const float *x, int64_t T, const float *u, float b,
                float *p, float *y, int nth)
{
	ada_run r = { .s = s, .x = x, .u = u, .b = b, .p = p, .py = p, .T = T,
	              .Tp = poolattn_len(s, T) };

	if (nth < 1)
		nth = 1;
	par_for(nth, T, ada_score_job, &r);
	r.py = y;
	par_for(nth, r.Tp, ada_fw_job, &r);
}

int adapool_bw(const poolattn_spec *s, const float *x, int64_t T, const float *u, const float *p,
               const float *y, const float *dy, float *dx, float *du, float *db, int nth,
               lc_err *err)
{
	int d = s->d;
	ada_run r = { .s = s, .x = x, .u = u, .p = p, .y = y, .dy = dy, .dx = dx, .T = T,
	              .Tp = poolattn_len(s, T) };
	double sb = 0;

	if (!(r.dz = malloc((size_t)(T ? T : 1) * sizeof *r.dz)))
		return lc_fail(err, "out of memory (AdaPool backward, %lld positions)", (long long)T);
	par_for(nth < 1 ? 1 : nth, T, ada_bw_job, &r);
	/* through the tagger's logit z_t = x_t . u + b */
	cmp_gemm(CMP_N, CMP_N, T, d, 1, 1.0f, r.dz, 1, u, d, 1.0f, dx, d);
	if (du)
		cmp_gemm(CMP_T, CMP_N, 1, d, T, 1.0f, r.dz, 1, x, d, 1.0f, du, d);
	for (int64_t t = 0; t < T; t++)
		sb += r.dz[t];
	if (db)
		*db += (float)sb;
	free(r.dz);
	return 0;
}

int segxattn_fw(int heads, int d, const float *q, int64_t T, const float *k, const float *v,
                int64_t S, float *o, int nth, lc_err *err)
{
	xat_run r = { .heads = heads, .d = d, .q = q, .kp = k, .vp = v, .o = o, .T = T, .Tp = S };

	if (T == 0)
		return 0;
	return xat_run_all(&r, 0, nth < 1 ? 1 : nth, err);
}

int segxattn_bw(int heads, int d, const float *q, int64_t T, const float *k, const float *v,
                int64_t S, const float *dout, float *dq, float *dk, float *dv, int nth,
                lc_err *err)
{
	xat_run r = { .heads = heads, .d = d, .q = q, .kp = k, .vp = v, .T = T, .Tp = S,
	              .dO = dout, .dQ = dq, .dKp = dk, .dVp = dv };

	if (T == 0)
		return 0;
	return xat_run_all(&r, 1, nth < 1 ? 1 : nth, err);
}
