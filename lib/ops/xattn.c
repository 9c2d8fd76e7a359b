#include "ops/xattn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/parallel.h"
#include "compute/compute.h"
#include "ops/vmath.h"

/* The rows of E are split into parts by L alone, never by the thread
 * count: ceil(L / PART_MIN) parts, at most PARTS_MAX, part p holding rows
 * [L p / parts, L (p+1) / parts). A part is one thread's work, computed
 * the same whichever thread takes it; the parts' partial results are
 * then folded into the output strictly in part order. So the result has
 * the same bits for every thread count (and the threads share the work
 * as soon as L reaches a few PART_MIN rows). */
#define PART_MIN 256
#define PARTS_MAX 64
/* Memory for the partial results held at once: at least one part per
 * thread, at most PARTS_MAX; more parts than that are done in rounds. */
#define PARTIAL_BYTES ((uint64_t)8 << 20)

struct xattn_work {
	int64_t R;
	int d, nth, nslot;
	float *xs;                  /* [nth, R, XATTN_CHUNK] chunk scores, by thread */
	float *mx, *sum;            /* [nslot, R] each part's running max and sum */
	float *pacc;                /* [nslot, R, d] each part's unnormalised context */
	uint16_t *q16;              /* [R, d] the queries in bf16 (bf16 states) */
	uint16_t *p16;              /* [nth, R, XATTN_CHUNK] chunk weights in bf16, by thread */
	float *fm;                  /* [R] the fold: max so far */
	double *ftot;               /* [R] the fold: sum so far */
	/* the call's arguments, for the threads */
	const float *qp, *E;
	const uint16_t *E16;        /* bf16 states instead of E, or NULL */
	int64_t L, rows;
	int parts, base;
};

xattn_work *xattn_work_new(int64_t R, int d, int nth, lc_err *err)
{
	xattn_work *w = calloc(1, sizeof *w);
	uint64_t t = (uint64_t)(nth < 1 ? 1 : nth), r = (uint64_t)(R < 1 ? 1 : R);
	uint64_t s = PARTIAL_BYTES / (r * (uint64_t)(d < 1 ? 1 : d) * sizeof(float));

	s = s > PARTS_MAX ? PARTS_MAX : s;
	s = s < t ? t : s;
	if (w) {
		w->R = R;
		w->d = d;
		w->nth = (int)t;
		w->nslot = (int)s;
		w->xs = lc_calloc_f32(t * r, XATTN_CHUNK, 1);
		w->mx = lc_calloc_f32(s, r, 1);
		w->sum = lc_calloc_f32(s, r, 1);
		w->pacc = lc_calloc_f32(s * r, (uint64_t)d, 1);
		w->fm = lc_calloc_f32(r, 1, 1);
		w->q16 = calloc(r * (uint64_t)(d < 1 ? 1 : d), sizeof *w->q16);
		w->p16 = calloc(t * r * XATTN_CHUNK, sizeof *w->p16);
		w->ftot = calloc(r, sizeof *w->ftot);
	}
	if (!w || !w->xs || !w->mx || !w->sum || !w->pacc || !w->fm || !w->ftot || !w->q16 ||
	    !w->p16) {
		xattn_work_free(w);
		lc_fail(err, "out of memory for cross-attention (%lld rows, %d threads)", (long long)R,
		        nth);
		return NULL;
	}
	return w;
}

int xattn_work_renew(xattn_work **w, int64_t R, int d, int nth, lc_err *err)
{
	xattn_work *n = xattn_work_new(R, d, nth, err);

	if (!n)
		return -1;
	xattn_work_free(*w);
	*w = n;
	return 0;
}

void xattn_work_free(xattn_work *w)
{
	if (!w)
		return;
	free(w->xs);
	free(w->mx);
	free(w->sum);
	free(w->pacc);
	free(w->fm);
	free(w->ftot);
	free(w->q16);
	free(w->p16);
	free(w);
}

/* Part p = base + i: chunked scores with a running softmax, leaving its
 * max, sum and unnormalised context in slot i of mx, sum and pacc. */
static void part_fw(void *ctx, int64_t i, int tid)
{
	xattn_work *w = ctx;
	int dm = w->d;
	int64_t p = w->base + i, rows = w->rows, c0;
	int64_t lo = w->L * p / w->parts, hi = w->L * (p + 1) / w->parts;
	float *xs = w->xs + (size_t)tid * (size_t)rows * XATTN_CHUNK;
	float *mx = w->mx + (size_t)i * rows, *sum = w->sum + (size_t)i * rows;
	float *acc = w->pacc + (size_t)i * (size_t)rows * dm;

	for (int64_t r = 0; r < rows; r++) {
		mx[r] = -INFINITY;
		sum[r] = 0;
	}
	memset(acc, 0, (size_t)rows * dm * sizeof(float));
	for (c0 = lo; c0 < hi; c0 += XATTN_CHUNK) {
		int c = (int)(hi - c0 < XATTN_CHUNK ? hi - c0 : XATTN_CHUNK);
		const float *E = w->E16 ? NULL : w->E + (size_t)c0 * dm;
		const uint16_t *E16 = w->E16 ? w->E16 + (size_t)c0 * dm : NULL;

		/* scores [rows, c] = qp . E^T */
		if (E16)
			cmp_xk_scores_bf16(rows, c, dm, w->q16, dm, E16, dm, xs, XATTN_CHUNK);
		else
			cmp_xk_scores(rows, c, dm, w->qp, dm, E, dm, xs, XATTN_CHUNK);
		for (int64_t r = 0; r < rows; r++) {
			float *sr = xs + (size_t)r * XATTN_CHUNK, m = mx[r], nm = vm_max(sr, c);

			nm = nm > m ? nm : m;
			if (nm > m && m != -INFINITY) {
				float sc = vm_expf(m - nm);

				vm_scale(acc + (size_t)r * dm, sc, acc + (size_t)r * dm, dm);
				sum[r] *= sc;
			}
			sum[r] += (float)vm_exp_sum(sr, nm, sr, c);
			mx[r] = nm;
		}
		/* acc [rows, dm] += P [rows, c] . E [c, dm]; the chunk (c rows of
		 * E) is still in L2 from the scores. With bf16 states the weights
		 * are rounded to bf16 for the dot products; the sums stay those
		 * of the fp32 weights (each weight off by at most 2^-9 of itself,
		 * so the context by at most 2^-9 of the largest |E|). */
		if (E16) {
			uint16_t *p16 = w->p16 + (size_t)tid * (size_t)rows * XATTN_CHUNK;

			cmp_bf16_pack(xs, rows, c, XATTN_CHUNK, p16, XATTN_CHUNK);
			cmp_xk_accum_bf16(rows, c, dm, p16, XATTN_CHUNK, E16, dm, acc, dm);
		} else
			cmp_xk_accum(rows, c, dm, xs, XATTN_CHUNK, E, dm, acc, dm);
	}
}

/* Folds slot i (part base + i) into the running (fm, ftot, ctx):
 *   m' = max(m, m_i);  ctx = ctx e^(m - m') + acc_i e^(m_i - m');
 *   tot = tot e^(m - m') + sum_i e^(m_i - m'). */
static void fold(xattn_work *w, int i, float *ctx)
{
	int d = w->d;

	for (int64_t r = 0; r < w->rows; r++) {
		float mi = w->mx[(size_t)i * w->rows + r], m = w->fm[r], nm, a, b;
		const float *p = w->pacc + ((size_t)i * w->rows + r) * d;
		float *c = ctx + (size_t)r * d;

		if (mi == -INFINITY)        /* nothing to add */
			continue;
		if (m == -INFINITY) {       /* the first part with anything */
			memcpy(c, p, (size_t)d * sizeof *c);
			w->fm[r] = mi;
			w->ftot[r] = w->sum[(size_t)i * w->rows + r];
			continue;
		}
		nm = mi > m ? mi : m;
		a = expf(m - nm);
		b = expf(mi - nm);
		vm_axpby(p, b, a, c, d);
		w->ftot[r] = w->ftot[r] * a + (double)b * w->sum[(size_t)i * w->rows + r];
		w->fm[r] = nm;
	}
}

static void run(xattn_work *w, const float *qp, int64_t R, const float *E,
                const uint16_t *E16, int64_t L, int d, float *ctx, float *lse)
{
	int64_t parts = (L + PART_MIN - 1) / PART_MIN;

	if (L == 0) {
		memset(ctx, 0, (size_t)(R * d) * sizeof *ctx);
		for (int64_t r = 0; lse && r < R; r++)
			lse[r] = -INFINITY;
		return;
	}
	if (parts > PARTS_MAX)
		parts = PARTS_MAX;
	w->qp = qp;
	w->E = E;
	w->E16 = E16;
	if (E16)
		cmp_bf16_pack(qp, R, d, d, w->q16, d);
	w->L = L;
	w->rows = R;
	w->parts = (int)parts;
	memset(ctx, 0, (size_t)(R * d) * sizeof *ctx);
	for (int64_t r = 0; r < R; r++) {
		w->fm[r] = -INFINITY;
		w->ftot[r] = 0;
	}
	for (int base = 0; base < parts; base += w->nslot) {
		int n = parts - base < w->nslot ? (int)(parts - base) : w->nslot;

		w->base = base;
		par_for(w->nth, n, part_fw, w);
		for (int i = 0; i < n; i++)
			fold(w, i, ctx);
	}
	/* ctx = sum_j e^(s_j - m) E_j / sum_j e^(s_j - m) */
	for (int64_t r = 0; r < R; r++) {
		float *c = ctx + (size_t)r * d;
		double tot = w->ftot[r];

		for (int j = 0; j < d; j++)
			c[j] = (float)(c[j] / tot);
		if (lse)
			lse[r] = (float)(w->fm[r] + log(tot));
	}
}

void xattn_fw(xattn_work *w, const float *qp, int64_t R, const float *E, int64_t L, int d,
              float *ctx, float *lse)
{
	run(w, qp, R, E, NULL, L, d, ctx, lse);
}

void xattn_fw_bf16(xattn_work *w, const float *qp, int64_t R, const uint16_t *E, int64_t L,
                   int d, float *ctx, float *lse)
{
	run(w, qp, R, NULL, E, L, d, ctx, lse);
}

int xattn_bw(const float *qp, int64_t R, const float *E, int64_t L, int d, const float *ctx,
             const float *lse, const float *dctx, float *dqp, float *dE, lc_err *err)
{
	float *P = malloc((size_t)R * XATTN_CHUNK * sizeof *P);
	float *dP = malloc((size_t)R * XATTN_CHUNK * sizeof *dP);
	double *D = malloc((size_t)(R ? R : 1) * sizeof *D);

	if (!P || !dP || !D) {
		free(P);
		free(dP);
		free(D);
		return lc_fail(err, "out of memory for the cross-attention backward (%lld rows)",
		               (long long)R);
	}
	memset(dqp, 0, (size_t)(R * d) * sizeof *dqp);
	/* D[r] = sum_j P[r, j] dP[r, j] = dctx[r] . ctx[r] */
	for (int64_t r = 0; r < R; r++) {
		double s = 0;
		for (int i = 0; i < d; i++)
			s += (double)dctx[r * d + i] * ctx[r * d + i];
		D[r] = s;
	}
	for (int64_t c0 = 0; c0 < L; c0 += XATTN_CHUNK) {
		int c = (int)(L - c0 < XATTN_CHUNK ? L - c0 : XATTN_CHUNK);
		const float *Ec = E + (size_t)c0 * d;
		float *dEc = dE + (size_t)c0 * d;

		/* the scores as the forward computed them (the same kernel, so
		 * the same bits), then dP = dctx . E^T */
		cmp_xk_scores(R, c, d, qp, d, Ec, d, P, XATTN_CHUNK);
		cmp_xk_scores(R, c, d, dctx, d, Ec, d, dP, XATTN_CHUNK);
		for (int64_t r = 0; r < R; r++)
			for (int j = 0; j < c; j++) {
				float p = expf(P[r * XATTN_CHUNK + j] - lse[r]);
				P[r * XATTN_CHUNK + j] = p;
				dP[r * XATTN_CHUNK + j] = (float)(p * (dP[r * XATTN_CHUNK + j] - D[r]));
			}
		/* dqp += dS E_c; dE_c += dS^T qp + P^T dctx */
		cmp_xk_accum(R, c, d, dP, XATTN_CHUNK, Ec, d, dqp, d);
		cmp_gemm(CMP_T, CMP_N, c, d, R, 1.0f, dP, XATTN_CHUNK, qp, d, 1.0f, dEc, d);
		cmp_gemm(CMP_T, CMP_N, c, d, R, 1.0f, P, XATTN_CHUNK, dctx, d, 1.0f, dEc, d);
	}
	free(P);
	free(dP);
	free(D);
	return 0;
}
