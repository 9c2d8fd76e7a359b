#include "ops/xattn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/parallel.h"
#include "compute/compute.h"

struct xattn_work {
	int64_t R;
	int d, nth;
	float *xs;                  /* [nth, R, XATTN_CHUNK] chunk scores */
	float *mx, *sum;            /* [nth, R] running max and sum */
	float *pacc;                /* [nth, R, d] per-thread context partials */
	/* the call's arguments, for the threads */
	const float *qp, *E;
	int64_t L, rows;
	int parts;
};

xattn_work *xattn_work_new(int64_t R, int d, int nth, lc_err *err)
{
	xattn_work *w = calloc(1, sizeof *w);
	uint64_t t = (uint64_t)(nth < 1 ? 1 : nth), r = (uint64_t)(R < 1 ? 1 : R);

	if (w) {
		w->R = R;
		w->d = d;
		w->nth = (int)t;
		w->xs = lc_calloc_f32(t * r, XATTN_CHUNK, 1);
		w->mx = lc_calloc_f32(t, r, 1);
		w->sum = lc_calloc_f32(t, r, 1);
		w->pacc = lc_calloc_f32(t * r, (uint64_t)d, 1);
	}
	if (!w || !w->xs || !w->mx || !w->sum || !w->pacc) {
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
	free(w);
}

/* One thread's share of the rows of E, [L * part / parts, L * (part+1) / parts):
 * chunked scores with a running softmax, leaving its max, sum and
 * unnormalised context in its slices of mx, sum and pacc. */
static void part_fw(void *ctx, int64_t part, int tid)
{
	xattn_work *w = ctx;
	int dm = w->d;
	int64_t rows = w->rows, lo = w->L * part / w->parts, hi = w->L * (part + 1) / w->parts, c0;
	float *xs = w->xs + (size_t)tid * (size_t)rows * XATTN_CHUNK;
	float *mx = w->mx + (size_t)part * rows, *sum = w->sum + (size_t)part * rows;
	float *acc = w->pacc + (size_t)part * (size_t)rows * dm;

	for (int64_t r = 0; r < rows; r++) {
		mx[r] = -INFINITY;
		sum[r] = 0;
	}
	memset(acc, 0, (size_t)rows * dm * sizeof(float));
	for (c0 = lo; c0 < hi; c0 += XATTN_CHUNK) {
		int c = (int)(hi - c0 < XATTN_CHUNK ? hi - c0 : XATTN_CHUNK);
		const float *E = w->E + (size_t)c0 * dm;

		/* scores [rows, c] = qp . E^T */
		cmp_gemm(CMP_N, CMP_T, rows, c, dm, 1.0f, w->qp, dm, E, dm, 0.0f, xs, XATTN_CHUNK);
		for (int64_t r = 0; r < rows; r++) {
			float *sr = xs + (size_t)r * XATTN_CHUNK, m = mx[r], nm = m;
			double add = 0;

			for (int j = 0; j < c; j++)
				if (sr[j] > nm)
					nm = sr[j];
			if (nm > m && m != -INFINITY) {
				float sc = expf(m - nm), *a = acc + (size_t)r * dm;
				for (int j = 0; j < dm; j++)
					a[j] *= sc;
				sum[r] *= sc;
			}
			for (int j = 0; j < c; j++) {
				sr[j] = expf(sr[j] - nm);
				add += sr[j];
			}
			sum[r] += (float)add;
			mx[r] = nm;
		}
		/* acc [rows, dm] += P [rows, c] . E [c, dm] */
		cmp_gemm(CMP_N, CMP_N, rows, dm, c, 1.0f, xs, XATTN_CHUNK, E, dm, 1.0f, acc, dm);
	}
}

void xattn_fw(xattn_work *w, const float *qp, int64_t R, const float *E, int64_t L, int d,
              float *ctx, float *lse)
{
	int64_t rows = R;
	int parts = w->nth;

	if (L == 0) {
		memset(ctx, 0, (size_t)(R * d) * sizeof *ctx);
		for (int64_t r = 0; lse && r < R; r++)
			lse[r] = -INFINITY;
		return;
	}
	if (parts > L)
		parts = (int)L;
	w->qp = qp;
	w->E = E;
	w->L = L;
	w->rows = rows;
	w->parts = parts;
	par_for(parts, parts, part_fw, w);
	/* merge: ctx = sum_t e^(m_t - M) acc_t / sum_t e^(m_t - M) sum_t */
	for (int64_t r = 0; r < rows; r++) {
		float M = -INFINITY, *a = ctx + (size_t)r * d;
		double tot = 0;

		for (int t = 0; t < parts; t++)
			if (w->mx[(size_t)t * rows + r] > M)
				M = w->mx[(size_t)t * rows + r];
		memset(a, 0, (size_t)d * sizeof(float));
		for (int t = 0; t < parts; t++) {
			float wt = w->mx[(size_t)t * rows + r] == -INFINITY ? 0.0f :
			           expf(w->mx[(size_t)t * rows + r] - M);
			const float *p = w->pacc + ((size_t)t * rows + r) * d;
			if (wt == 0.0f)
				continue;
			tot += (double)wt * w->sum[(size_t)t * rows + r];
			for (int i = 0; i < d; i++)
				a[i] += wt * p[i];
		}
		for (int i = 0; i < d; i++)
			a[i] = (float)(a[i] / tot);
		if (lse)
			lse[r] = (float)(M + log(tot));
	}
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

		cmp_gemm(CMP_N, CMP_T, R, c, d, 1.0f, qp, d, Ec, d, 0.0f, P, XATTN_CHUNK);
		cmp_gemm(CMP_N, CMP_T, R, c, d, 1.0f, dctx, d, Ec, d, 0.0f, dP, XATTN_CHUNK);
		for (int64_t r = 0; r < R; r++)
			for (int j = 0; j < c; j++) {
				float p = expf(P[r * XATTN_CHUNK + j] - lse[r]);
				P[r * XATTN_CHUNK + j] = p;
				dP[r * XATTN_CHUNK + j] = (float)(p * (dP[r * XATTN_CHUNK + j] - D[r]));
			}
		/* dqp += dS E_c; dE_c += dS^T qp + P^T dctx */
		cmp_gemm(CMP_N, CMP_N, R, d, c, 1.0f, dP, XATTN_CHUNK, Ec, d, 1.0f, dqp, d);
		cmp_gemm(CMP_T, CMP_N, c, d, R, 1.0f, dP, XATTN_CHUNK, qp, d, 1.0f, dEc, d);
		cmp_gemm(CMP_T, CMP_N, c, d, R, 1.0f, P, XATTN_CHUNK, dctx, d, 1.0f, dEc, d);
	}
	free(P);
	free(dP);
	free(D);
	return 0;
}
