#include "ops/xattn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/parallel.h"
#include "compute/compute.h"
#include "compute/dev.h"
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
/* With bf16 keys and values of their own (a cache), a head's rows are
 * d_kv wide: XATTN_CHUNK of them are 32 KiB of keys, and the per-chunk
 * work (the softmax's max and rescale, the weights' rounding to bf16, the
 * kernels' edges) weighed on every step. Such chunks hold up to
 * KV_CHUNK_BYTES of keys (2048 rows of 64), at most XATTN_CHUNK times the
 * heads (so the scratch made for the folded call's rows holds them): 4
 * beams over 131,072 states with every layer cached, 0.175-0.177 s a
 * step against 0.204-0.259 with chunks of 256 rows (alternating runs).
 * fp32's cache, near the read bandwidth already, measured the same with
 * 1024 rows (0.291-0.302 against 0.285-0.307) and keeps XATTN_CHUNK. The
 * size depends on the model alone, so the bits do not depend on threads
 * or batches. */
#define KV_CHUNK_BYTES ((int64_t)256 << 10)

struct xattn_work {
	int64_t R;
	int d, nth, nslot;
	float *xs;                  /* [nth, R XATTN_CHUNK] chunk scores, by thread */
	float *mx, *sum;            /* [nslot, R] each part's running max and sum */
	float *pacc;                /* [nslot, R, d] each part's unnormalised context */
	uint16_t *q16;              /* [R, d] the queries in bf16 (bf16 states) */
	uint16_t *p16;              /* [nth, R XATTN_CHUNK] chunk weights in bf16, by thread */
	float *dq, *ds, *dc, *dl;   /* the GPU's (xattn_fw_any): qp, scores, ctx, lse */
	int64_t dcap_r, dcap_s;     /* their sizes: rows (of width d), scores */
	float *fm;                  /* [R] the fold: max so far */
	double *ftot;               /* [R] the fold: sum so far */
	/* the call's arguments, for the threads: head h's query row r at
	 * q + r ldq + h wd, its key (value) row j at K (V) + h hs + j ldk,
	 * its context row at ctx + r ldc + h wd; K == V == E folded */
	const float *q, *K, *V;
	const uint16_t *K16, *V16;  /* bf16 keys and values instead, or NULL */
	int widen;                  /* 1: those in fp32 arithmetic (xattn_fw_w16) */
	int64_t ldq, ldk, hs, ldc;
	int nh, wd;
	int64_t L, rows;            /* per head */
	int parts, base;            /* parts per head; the round's first item */
	int64_t chunk;              /* rows of keys a chunk (XATTN_CHUNK but a bf16 cache's) */
};

xattn_work *xattn_work_new(int64_t R, int d, int nth, lc_err *err)
{
	xattn_work *w = calloc(1, sizeof *w);
	uint64_t t = (uint64_t)(nth < 1 ? 1 : nth), r = (uint64_t)(R < 1 ? 1 : R);
	uint64_t s = PARTIAL_BYTES / (r * (uint64_t)(d < 1 ? 1 : d) * sizeof(float));

	s = s > PARTS_MAX ? PARTS_MAX : s;
	s = s < t ? t : s;
	if (w) {
		w->R = (int64_t)r;
		w->d = d < 1 ? 1 : d;
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
	cmp_dev_free(w->dq);
	cmp_dev_free(w->ds);
	cmp_dev_free(w->dc);
	cmp_dev_free(w->dl);
	free(w);
}

/* bf16 keys and values of their own (a cache's), not the states folded */
static int bf16_kv(const xattn_work *w)
{
	return w->K16 && w->K16 != w->V16;
}

/* The scores of c bf16 keys of their own from at, XATTN_PF_KEYS at a
 * time, each group after a prefetch of its value rows. Keys and values
 * are two streams from memory there, the scores reading one and the
 * accumulation the other, and a thread streamed neither at the
 * bandwidth; so the values come in with the keys and the accumulation
 * finds them in cache: 4 beams over 131,072 states, every layer cached,
 * 0.139-0.142 s a step against 0.189-0.216 (alternating runs; groups of
 * 8 to 64 keys 0.13-0.18). fp32's cache prefetches in its accumulation
 * already and ran 10% slower with this. */
static void scores_kv_bf16(const xattn_work *w, int64_t rows, int c, const uint16_t *q16,
                           size_t at, float *xs)
{
	size_t vb = (size_t)w->wd * sizeof *w->V16;

	for (int j0 = 0; j0 < c; j0 += XATTN_PF_KEYS) {
		int n = c - j0 < XATTN_PF_KEYS ? c - j0 : XATTN_PF_KEYS;

		for (int j = j0; j < j0 + n; j++) {
			const char *v = (const char *)(w->V16 + at + (size_t)j * (size_t)w->ldk);

			for (size_t b = 0; b < vb; b += 64)     /* a cache line each; T1 */
				__builtin_prefetch(v + b, 0, 2);
		}
		cmp_xk_scores_bf16(rows, n, w->wd, q16, w->wd, w->K16 + at + (size_t)j0 * (size_t)w->ldk,
		                   w->ldk, xs + j0, w->chunk);
	}
}

/* Item base + i, part p of head h: chunked scores with a running
 * softmax, leaving its max, sum and unnormalised context in slot i of mx,
 * sum and pacc. */
static void part_fw(void *ctx, int64_t i, int tid)
{
	xattn_work *w = ctx;
	int wd = w->wd, h = (int)((w->base + i) / w->parts);
	int64_t p = (w->base + i) % w->parts, rows = w->rows, c0;
	int64_t lo = w->L * p / w->parts, hi = w->L * (p + 1) / w->parts;
	int64_t ch = w->chunk;
	float *xs = w->xs + (size_t)tid * (size_t)rows * (size_t)ch;
	float *mx = w->mx + (size_t)i * rows, *sum = w->sum + (size_t)i * rows;
	float *acc = w->pacc + (size_t)i * (size_t)rows * wd;
	const float *q = w->q + (size_t)h * wd;
	const uint16_t *q16 = w->q16 + (size_t)h * rows * wd;
	uint16_t *p16 = w->K16 && !w->widen ? w->p16 + (size_t)tid * (size_t)rows * (size_t)ch : NULL;

	for (int64_t r = 0; r < rows; r++) {
		mx[r] = -INFINITY;
		sum[r] = 0;
	}
	memset(acc, 0, (size_t)rows * wd * sizeof(float));
	for (c0 = lo; c0 < hi; c0 += ch) {
		int c = (int)(hi - c0 < ch ? hi - c0 : ch);
		int64_t cn = hi - (c0 + c);    /* the rows of the part's next chunk */
		size_t at = (size_t)h * (size_t)w->hs + (size_t)c0 * (size_t)w->ldk;

		/* scores [rows, c] = q . K^T */
		if (w->widen)
			cmp_xk_scores_w16(rows, c, wd, q, w->ldq, w->K16 + at, w->ldk, xs, ch);
		else if (bf16_kv(w))
			scores_kv_bf16(w, rows, c, q16, at, xs);
		else if (w->K16)
			cmp_xk_scores_bf16(rows, c, wd, q16, wd, w->K16 + at, w->ldk, xs, ch);
		else
			cmp_xk_scores(rows, c, wd, q, w->ldq, w->K + at, w->ldk, xs, ch);
		/* the weights e^(s - max): with bf16 states rounded to bf16 for
		 * the dot products as they are made; the sums stay those of the
		 * fp32 weights (each weight off by at most 2^-9 of itself, so
		 * the context by at most 2^-9 of the largest |V|) */
		for (int64_t r = 0; r < rows; r++) {
			float *sr = xs + (size_t)r * ch, m = mx[r], nm = vm_max(sr, c);

			nm = nm > m ? nm : m;
			if (nm > m && m != -INFINITY) {
				float sc = vm_expf(m - nm);

				vm_scale(acc + (size_t)r * wd, sc, acc + (size_t)r * wd, wd);
				sum[r] *= sc;
			}
			if (p16)
				sum[r] += (float)vm_exp_sum_bf16(sr, nm, p16 + (size_t)r * ch, c);
			else
				sum[r] += (float)vm_exp_sum(sr, nm, sr, c);
			mx[r] = nm;
		}
		/* acc [rows, wd] += P [rows, c] . V [c, wd]; the chunk (c rows of
		 * V, the same as K's when folded) is still in L2 from the
		 * scores */
		if (p16)
			cmp_xk_accum_bf16(rows, c, wd, p16, ch, w->V16 + at, w->ldk, acc, wd);
		else if (w->widen)
			cmp_xk_accum_w16(rows, c, wd, xs, ch, w->V16 + at, w->ldk, acc, wd,
			                 cn > 0 ? w->V16 + at + (size_t)c * (size_t)w->ldk : NULL,
			                 cn < ch ? cn : ch);
		else
			cmp_xk_accum_ahead(rows, c, wd, xs, ch, w->V + at, w->ldk, acc, wd,
			                   cn > 0 ? w->V + at + (size_t)c * (size_t)w->ldk : NULL,
			                   cn < ch ? cn : ch);
	}
}

/* Folds slot i (item base + i, of head h) into the running (fm, ftot,
 * ctx) of its head:
 *   m' = max(m, m_i);  ctx = ctx e^(m - m') + acc_i e^(m_i - m');
 *   tot = tot e^(m - m') + sum_i e^(m_i - m'). */
static void fold(xattn_work *w, int i, float *ctx)
{
	int wd = w->wd, h = (w->base + i) / w->parts;

	for (int64_t r = 0; r < w->rows; r++) {
		int64_t f = r * w->nh + h;
		float mi = w->mx[(size_t)i * w->rows + r], m = w->fm[f], nm, a, b;
		const float *p = w->pacc + ((size_t)i * w->rows + r) * wd;
		float *c = ctx + (size_t)r * w->ldc + (size_t)h * wd;

		if (mi == -INFINITY)        /* nothing to add */
			continue;
		if (m == -INFINITY) {       /* the first part with anything */
			memcpy(c, p, (size_t)wd * sizeof *c);
			w->fm[f] = mi;
			w->ftot[f] = w->sum[(size_t)i * w->rows + r];
			continue;
		}
		nm = mi > m ? mi : m;
		a = expf(m - nm);
		b = expf(mi - nm);
		vm_axpby(p, b, a, c, wd);
		w->ftot[f] = w->ftot[f] * a + (double)b * w->sum[(size_t)i * w->rows + r];
		w->fm[f] = nm;
	}
}

/* The call: w's arguments set but for the split. */
static void run(xattn_work *w, float *ctx, float *lse)
{
	int64_t parts = (w->L + PART_MIN - 1) / PART_MIN, items, ns;

	if (w->rows < 1)
		return;
	for (int64_t r = 0; r < w->rows; r++)
		for (int h = 0; h < w->nh; h++)
			memset(ctx + (size_t)r * w->ldc + (size_t)h * w->wd, 0,
			       (size_t)w->wd * sizeof *ctx);
	if (w->L == 0) {
		for (int64_t r = 0; lse && r < w->rows * w->nh; r++)
			lse[r] = -INFINITY;
		return;
	}
	if (parts > PARTS_MAX)
		parts = PARTS_MAX;
	if (w->K16 && !w->widen)
		for (int h = 0; h < w->nh; h++)
			cmp_bf16_pack(w->q + (size_t)h * w->wd, w->rows, w->wd, w->ldq,
			              w->q16 + (size_t)h * w->rows * w->wd, w->wd);
	w->parts = (int)parts;
	w->chunk = XATTN_CHUNK;
	if (bf16_kv(w)) {
		int64_t kv = KV_CHUNK_BYTES / ((int64_t)w->wd * 2);

		kv = kv < (int64_t)XATTN_CHUNK * w->nh ? kv : (int64_t)XATTN_CHUNK * w->nh;
		w->chunk = kv > XATTN_CHUNK ? kv : XATTN_CHUNK;
	}
	items = parts * w->nh;
	/* slots of rows x wd: more of them than of the R x d they were made
	 * for when rows or wd is smaller (one head of a cache) */
	ns = w->nslot * (w->R / w->rows);
	if (ns > (int64_t)w->nslot * w->R * w->d / (w->rows * w->wd))
		ns = (int64_t)w->nslot * w->R * w->d / (w->rows * w->wd);
	for (int64_t f = 0; f < w->rows * w->nh; f++) {
		w->fm[f] = -INFINITY;
		w->ftot[f] = 0;
	}
	/* items in head-major order: each head's parts fold in part order */
	for (int64_t base = 0; base < items; base += ns) {
		int n = items - base < ns ? (int)(items - base) : (int)ns;

		w->base = (int)base;
		par_for(w->nth, n, part_fw, w);
		for (int i = 0; i < n; i++)
			fold(w, i, ctx);
	}
	/* ctx = sum_j e^(s_j - m) V_j / sum_j e^(s_j - m) */
	for (int64_t r = 0; r < w->rows; r++)
		for (int h = 0; h < w->nh; h++) {
			float *c = ctx + (size_t)r * w->ldc + (size_t)h * w->wd;
			int64_t f = r * w->nh + h;
			double tot = w->ftot[f];

			for (int j = 0; j < w->wd; j++)
				c[j] = (float)(c[j] / tot);
			if (lse)
				lse[f] = (float)(w->fm[f] + log(tot));
		}
}

static void args(xattn_work *w, const float *q, int64_t R, int64_t ldq, int nh, int wd,
                 int64_t L, int64_t ldk, int64_t hs, int64_t ldc)
{
	w->q = q;
	w->rows = R;
	w->ldq = ldq;
	w->nh = nh;
	w->wd = wd;
	w->L = L;
	w->ldk = ldk;
	w->hs = hs;
	w->ldc = ldc;
	w->K = w->V = NULL;
	w->K16 = w->V16 = NULL;
	w->widen = 0;
}

void xattn_fw(xattn_work *w, const float *qp, int64_t R, const float *E, int64_t L, int d,
              float *ctx, float *lse)
{
	args(w, qp, R, d, 1, d, L, d, 0, d);
	w->K = w->V = E;
	run(w, ctx, lse);
}

void xattn_fw_bf16(xattn_work *w, const float *qp, int64_t R, const uint16_t *E, int64_t L,
                   int d, float *ctx, float *lse)
{
	args(w, qp, R, d, 1, d, L, d, 0, d);
	w->K16 = w->V16 = E;
	run(w, ctx, lse);
}

void xattn_fw_w16(xattn_work *w, const float *qp, int64_t R, const uint16_t *E, int64_t L,
                  int d, float *ctx, float *lse)
{
	args(w, qp, R, d, 1, d, L, d, 0, d);
	w->K16 = w->V16 = E;
	w->widen = 1;
	run(w, ctx, lse);
}

void xattn_fw_kv(xattn_work *w, const float *q, int64_t R, int64_t ldq, int nh, int dk,
                 const float *K, const float *V, int64_t L, int64_t ldk, int64_t hs, float *ctx,
                 int64_t ldc, float *lse)
{
	args(w, q, R, ldq, nh, dk, L, ldk, hs, ldc);
	w->K = K;
	w->V = V;
	run(w, ctx, lse);
}

void xattn_fw_kv_bf16(xattn_work *w, const float *q, int64_t R, int64_t ldq, int nh, int dk,
                      const uint16_t *K, const uint16_t *V, int64_t L, int64_t ldk, int64_t hs,
                      float *ctx, int64_t ldc, float *lse)
{
	args(w, q, R, ldq, nh, dk, L, ldk, hs, ldc);
	w->K16 = K;
	w->V16 = V;
	run(w, ctx, lse);
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

/* ------------------------------------------------------------ on the GPU */

/* The GPU's scratch for R rows of width d and R x L scores; 0 when there. */
static int dev_scratch(xattn_work *w, int64_t R, int d, int64_t L)
{
	if (R * d > w->dcap_r) {
		cmp_dev_free(w->dq), cmp_dev_free(w->dc), cmp_dev_free(w->dl);
		w->dq = cmp_dev_alloc(R * d);
		w->dc = cmp_dev_alloc(R * d);
		w->dl = cmp_dev_alloc(R * d);   /* >= R rows whatever d a later call has */
		w->dcap_r = w->dq && w->dc && w->dl ? R * d : 0;
	}
	if (R * L > w->dcap_s) {
		cmp_dev_free(w->ds);
		w->ds = cmp_dev_alloc(R * L);
		w->dcap_s = w->ds ? R * L : 0;
	}
	return w->dcap_r && w->dcap_s ? 0 : -1;
}

/* Both products by cuBLAS over all L states at once, the softmax by a
 * kernel between them (the scores of R rows fit the GPU's memory). */
int xattn_fw_dev(xattn_work *w, const float *qp, int64_t R, const float *Edev, int64_t L, int d,
                 float *ctx, float *lse)
{
	lc_err err;
	int rc = -1;

	if (!Edev || L < 1 || R < 1)
		return -1;
	cmp_dev_lock();
	if (dev_scratch(w, R, d, L) < 0) {
		cmp_dev_say("the cross-attention", "no GPU memory for its scores; on the CPU");
		goto out;
	}
	cmp_dev_put(w->dq, qp, R * d);
	cmp_dev_gemm(CMP_N, CMP_T, R, L, d, 1.0f, w->dq, d, Edev, d, 0.0f, w->ds, L);
	cmp_dev_softmax_rows(w->ds, R, L, lse ? w->dl : NULL);
	cmp_dev_gemm(CMP_N, CMP_N, R, d, L, 1.0f, w->ds, L, Edev, d, 0.0f, w->dc, d);
	cmp_dev_get(ctx, w->dc, R * d);
	if (lse)
		cmp_dev_get(lse, w->dl, R);
	if (cmp_dev_check(&err) < 0) {
		cmp_dev_say("the cross-attention", err.msg);
		goto out;
	}
	rc = 0;
out:
	cmp_dev_unlock();
	return rc;
}

void xattn_fw_any(xattn_work *w, const float *qp, int64_t R, const float *E, const float *Edev,
                  int64_t L, int d, float *ctx, float *lse)
{
	if (xattn_fw_dev(w, qp, R, Edev, L, d, ctx, lse) == 0)
		return;
	xattn_fw(w, qp, R, E, L, d, ctx, lse);
}
