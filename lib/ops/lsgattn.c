/*
 * lsgattn.c: LSG attention (see lsgattn.h). Every query block's keys are
 * a few contiguous segments (global rows, the sparse slots before and
 * after, three blocks of tokens), so each block is a handful of matrix
 * products into one row of scores and one softmax: no gather of keys, no
 * L x L matrix, memory linear in the length.
 */
#include "ops/lsgattn.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/parallel.h"
#include "compute/compute.h"
#include "compute/dev.h"
#include "ops/segattn.h"
#include "ops/softmax.h"

static const char *const names[] = {
	"none", "norm", "pooling", "stride", "block_stride", "bos_pooling", "lsh",
};

int lsg_sparsity_parse(const char *s)
{
	for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

const char *lsg_sparsity_name(enum lsg_sparsity t)
{
	return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

/* The authors' lsh with sparsity_factor == sparse_block_size is bos_pooling. */
static enum lsg_sparsity effective(int sbs, int sf, enum lsg_sparsity t)
{
	if (sbs < 1)
		return LSG_NONE;
	return t == LSG_LSH && sf == sbs ? LSG_BOS_POOLING : t;
}

static int64_t floordiv(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Where block b's sparse slots start, relative to b * bs/sf: the
 * authors' unfold of the padded sparse sequence into windows of 6 sbs
 * with step bs/sf, then a slice of sbs before and after (their
 * reshape_to_sparse_block). For an even step this is -(step + sbs) and
 * 2 step. */
static void sparse_offsets(int bs, int sbs, int sf, int64_t *before, int64_t *after)
{
	int64_t step = bs / sf, size = 6 * (int64_t)sbs, odd = step % 2;
	int64_t pad = floordiv(size - step, 2) + odd;
	int64_t u = floordiv(size - 3 * step, 2) + odd;

	*before = -pad + u - sbs;
	*after = -pad + size - (u + odd);
}

const char *lsg_spec_invalid(int bs, int sbs, int sf, enum lsg_sparsity type)
{
	int64_t step, size, odd, u;
	int c;

	if (bs < 1 || sbs < 0 || sf < 1)
		return "block_size and sparsity_factor must be positive, sparse_block_size not negative";
	if (bs % sf)
		return "block_size is not divisible by sparsity_factor";
	type = effective(sbs, sf, type);
	if (type == LSG_NONE)
		return NULL;
	step = bs / sf;
	size = 6 * (int64_t)sbs;
	odd = step % 2;
	u = floordiv(size - 3 * step, 2) + odd;
	if (odd && step != 1)
		return "block_size / sparsity_factor is odd (and not 1): the authors' sparse windows "
		       "do not line up with the blocks";
	if (u < sbs || u + odd <= sbs || u + odd > size)
		return "sparse_block_size is too small for block_size / sparsity_factor "
		       "(the authors' sparse slices come out empty or misplaced)";
	c = bs < sbs ? bs : sbs;
	if ((type == LSG_NORM || type == LSG_LSH) && (bs % c || c % sf))
		return "norm and lsh need min(block_size, sparse_block_size) to divide block_size "
		       "and to be divisible by sparsity_factor";
	if (type == LSG_LSH && sf > 1 && (c < 2 || c / sf < 2))
		return "lsh needs at least 2 buckets per round";
	return NULL;
}

static int chunk_of(const lsg_spec *s)
{
	return s->bs < s->sbs ? s->bs : s->sbs;
}

int64_t lsg_lsh_draw_len(const lsg_spec *s, int round)
{
	int c = chunk_of(s), out = round < s->lsh_rounds - 1 ? c : c / s->sf;

	return (int64_t)s->heads * s->dk * (out / 2);
}

/* ------------------------------------------------- attention over segments */

typedef struct seg {
	const float *k, *v;          /* rows of keys and values, row stride ld */
	int64_t ld, n;
	const float *mask;           /* additive [n], or NULL */
} seg;

#define MAXSEG 5

/* out[m, dk] (stride ldo) = softmax(scale q k^T + mask) v over the keys
 * of the segments in order. S: m x (sum of n) floats. */
static void attend(const float *q, int64_t ldq, int64_t m, int dk, float scale, const seg *g,
                   int nseg, float *out, int64_t ldo, float *S)
{
	int64_t N = 0, col = 0;

	for (int i = 0; i < nseg; i++)
		N += g[i].n;
	for (int i = 0; i < nseg; i++) {
		if (g[i].n < 1)
			continue;
		int any = 0;
		cmp_gemm(CMP_N, CMP_T, m, g[i].n, dk, scale, q, ldq, g[i].k, g[i].ld, 0.0f, S + col, N);
		for (int64_t j = 0; g[i].mask && j < g[i].n && !any; j++)
			any = g[i].mask[j] != 0.0f;
		for (int64_t r = 0; any && r < m; r++)
			for (int64_t j = 0; j < g[i].n; j++)
				S[r * N + col + j] += g[i].mask[j];
		col += g[i].n;
	}
	softmax_fw(S, m, N, N);
	col = 0;
	for (int i = 0, first = 1; i < nseg; i++) {
		if (g[i].n < 1)
			continue;
		cmp_gemm(CMP_N, CMP_N, m, dk, g[i].n, 1.0f, S + col, N, g[i].v, g[i].ld,
		         first ? 0.0f : 1.0f, out, ldo);
		first = 0;
		col += g[i].n;
	}
}

/* ------------------------------------------------------- sparse slots */

typedef struct lsg_run {
	const lsg_spec *s;
	enum lsg_sparsity type;
	const float *q, *k, *v, *kmask;   /* k, v, kmask: the token rows (after the globals) */
	const float *gk, *gv;             /* the global rows */
	int64_t ld, T, S;                 /* S sparse slots per head */
	float *sk, *sv, *sm;              /* [heads][S][dk], [heads][S][dk], [heads][S] */
	float *scratch;                   /* per thread */
	int64_t scratch_n;
	float *out;
	int64_t before, after;            /* sparse_offsets */
} lsg_run;

static int masked(float m)
{
	return m != 0.0f;
}

/* stride, block_stride, and sf = 1: slots are tokens */
static void sparse_pick(lsg_run *r, int h)
{
	const lsg_spec *s = r->s;
	int dk = s->dk, sf = s->sf, bs = s->bs, step = bs / sf;

	for (int64_t i = 0; i < r->S; i++) {
		int64_t t;
		if (sf == 1)
			t = i;
		else if (r->type == LSG_STRIDE)
			t = i * sf + h % sf;
		else
			t = (i / step) * bs + (i % step + (int64_t)h * step) % bs;
		memcpy(r->sk + ((int64_t)h * r->S + i) * dk, r->k + t * r->ld + (int64_t)h * dk,
		       (size_t)dk * sizeof(float));
		memcpy(r->sv + ((int64_t)h * r->S + i) * dk, r->v + t * r->ld + (int64_t)h * dk,
		       (size_t)dk * sizeof(float));
		r->sm[(int64_t)h * r->S + i] = r->kmask[t];
	}
}

static void sparse_pooling(lsg_run *r, int h)
{
	const lsg_spec *s = r->s;
	int dk = s->dk, sf = s->sf;

	for (int64_t i = 0; i < r->S; i++) {
		float *ok = r->sk + ((int64_t)h * r->S + i) * dk, *ov = r->sv + ((int64_t)h * r->S + i) * dk;
		float cnt = 0.0f;
		memset(ok, 0, (size_t)dk * sizeof *ok);
		memset(ov, 0, (size_t)dk * sizeof *ov);
		for (int j = 0; j < sf; j++) {
			int64_t t = i * sf + j;
			const float *kr = r->k + t * r->ld + (int64_t)h * dk, *vr = r->v + t * r->ld + (int64_t)h * dk;
			if (masked(r->kmask[t]))
				continue;
			cnt += 1.0f;
			for (int e = 0; e < dk; e++) {
				ok[e] += kr[e];
				ov[e] += vr[e];
			}
		}
		for (int e = 0; e < dk; e++) {
			ok[e] /= cnt + 1e-6f;
			ov[e] /= cnt + 1e-6f;
		}
		r->sm[(int64_t)h * r->S + i] = cnt > 0.0f ? 0.0f : -FLT_MAX;
	}
}

/* w: the thread's scratch, sf floats (not the stack: sparsity_factor
 * comes from config.json, up to 2^20) */
static void sparse_bos_pooling(lsg_run *r, int h, float *w)
{
	const lsg_spec *s = r->s;
	int dk = s->dk, sf = s->sf;
	const float *q0 = r->q + (int64_t)h * dk;          /* the first token's query */

	for (int64_t i = 0; i < r->S; i++) {
		float *ok = r->sk + ((int64_t)h * r->S + i) * dk, *ov = r->sv + ((int64_t)h * r->S + i) * dk;
		for (int j = 0; j < sf; j++) {
			int64_t t = i * sf + j;
			const float *kr = r->k + t * r->ld + (int64_t)h * dk;
			float dot = 0.0f;
			for (int e = 0; e < dk; e++)
				dot += q0[e] * kr[e];
			w[j] = dot / sqrtf((float)dk) + r->kmask[t];
		}
		softmax_fw(w, 1, sf, sf);
		memset(ok, 0, (size_t)dk * sizeof *ok);
		memset(ov, 0, (size_t)dk * sizeof *ov);
		for (int j = 0; j < sf; j++) {
			int64_t t = i * sf + j;
			const float *kr = r->k + t * r->ld + (int64_t)h * dk, *vr = r->v + t * r->ld + (int64_t)h * dk;
			for (int e = 0; e < dk; e++) {
				ok[e] += w[j] * kr[e];
				ov[e] += w[j] * vr[e];
			}
		}
		r->sm[(int64_t)h * r->S + i] = 0.0f;
	}
}

/* scratch: the thread's, 2 c floats (a block's norms and order; not the
 * stack: the block sizes come from config.json, up to 2^20) */
static void sparse_norm(lsg_run *r, int h, float *scratch)
{
	const lsg_spec *s = r->s;
	int dk = s->dk, c = chunk_of(s), keep = c / s->sf;
	float *nrm = scratch;
	int *idx = (int *)(void *)(scratch + c);

	for (int64_t ch = 0; ch < r->T / c; ch++) {
		for (int j = 0; j < c; j++) {
			int64_t t = ch * c + j;
			const float *kr = r->k + t * r->ld + (int64_t)h * dk;
			double ss = 0.0;
			for (int e = 0; e < dk; e++)
				ss += (double)kr[e] * kr[e];
			nrm[j] = masked(r->kmask[t]) ? 0.0f : (float)sqrt(ss);
			idx[j] = j;
		}
		/* ascending by norm, ties by position (insertion sort: c is a block) */
		for (int a = 1; a < c; a++) {
			int x = idx[a], b = a;
			while (b > 0 && nrm[idx[b - 1]] > nrm[x]) {
				idx[b] = idx[b - 1];
				b--;
			}
			idx[b] = x;
		}
		for (int j = 0; j < keep; j++) {
			int64_t t = ch * c + idx[c - keep + j], i = ch * keep + j;
			memcpy(r->sk + ((int64_t)h * r->S + i) * dk, r->k + t * r->ld + (int64_t)h * dk,
			       (size_t)dk * sizeof(float));
			memcpy(r->sv + ((int64_t)h * r->S + i) * dk, r->v + t * r->ld + (int64_t)h * dk,
			       (size_t)dk * sizeof(float));
			r->sm[(int64_t)h * r->S + i] = r->kmask[t];
		}
	}
}

/* One lsh round over a chunk: n rows (keys kk, values vv, counts cnt,
 * each [n] x dk) into out buckets; R [dk][out/2]. X, P: scratch of
 * n x dk and n x out/2 floats. */
static void lsh_round(int dk, int n, const float *kk, const float *vv, const float *cnt,
                      const float *R, int out, float *ok, float *ov, float *oc, float *X,
                      float *P)
{
	int nh = out / 2;

	memset(ok, 0, (size_t)out * dk * sizeof *ok);
	memset(ov, 0, (size_t)out * dk * sizeof *ov);
	memset(oc, 0, (size_t)out * sizeof *oc);
	/* x = the key / max(|key|, 1e-12) times its count clamped to [0, 1] */
	for (int j = 0; j < n; j++) {
		const float *kr = kk + (int64_t)j * dk;
		double ss = 0.0;
		float nrm, bin = cnt[j] > 1.0f ? 1.0f : cnt[j] < 0.0f ? 0.0f : cnt[j];
		for (int e = 0; e < dk; e++)
			ss += (double)kr[e] * kr[e];
		nrm = (float)sqrt(ss);
		if (nrm < 1e-12f)
			nrm = 1e-12f;
		for (int e = 0; e < dk; e++)
			X[(int64_t)j * dk + e] = kr[e] / nrm * bin;
	}
	cmp_gemm(CMP_N, CMP_N, n, nh, dk, 1.0f, X, dk, R, nh, 0.0f, P, nh);
	for (int j = 0; j < n; j++) {
		const float *p = P + (int64_t)j * nh;
		float best = -INFINITY;
		int arg = 0;
		/* argmax over [x R, -x R], the first of equals */
		for (int a = 0; a < nh; a++)
			if (p[a] > best) {
				best = p[a];
				arg = a;
			}
		for (int a = 0; a < nh; a++)
			if (-p[a] > best) {
				best = -p[a];
				arg = nh + a;
			}
		for (int e = 0; e < dk; e++) {
			ok[(int64_t)arg * dk + e] += kk[(int64_t)j * dk + e];
			ov[(int64_t)arg * dk + e] += vv[(int64_t)j * dk + e];
		}
		oc[arg] += cnt[j];
	}
}

static void sparse_lsh(lsg_run *r, int h, float *work)
{
	const lsg_spec *s = r->s;
	int dk = s->dk, c = chunk_of(s), keep = c / s->sf;
	float *ka = work, *va = ka + (int64_t)c * dk, *ca = va + (int64_t)c * dk;
	float *kb = ca + c, *vb = kb + (int64_t)c * dk, *cb = vb + (int64_t)c * dk;
	float *X = cb + c, *P = X + (int64_t)c * dk;

	for (int64_t ch = 0; ch < r->T / c; ch++) {
		const float *R = s->lsh_R;
		int n = c;
		for (int j = 0; j < c; j++) {
			int64_t t = ch * c + j;
			int m = masked(r->kmask[t]);
			for (int e = 0; e < dk; e++) {
				ka[(int64_t)j * dk + e] = m ? 0.0f : r->k[t * r->ld + (int64_t)h * dk + e];
				va[(int64_t)j * dk + e] = m ? 0.0f : r->v[t * r->ld + (int64_t)h * dk + e];
			}
			ca[j] = m ? 0.0f : 1.0f;
		}
		for (int round = 0; round < s->lsh_rounds; round++) {
			int out = round < s->lsh_rounds - 1 ? c : keep, nh = out / 2;
			float *t;
			lsh_round(dk, n, ka, va, ca, R + (int64_t)h * dk * nh, out, kb, vb, cb, X, P);
			R += (int64_t)s->heads * dk * nh;
			n = out;
			t = ka; ka = kb; kb = t;
			t = va; va = vb; vb = t;
			t = ca; ca = cb; cb = t;
		}
		for (int j = 0; j < keep; j++) {
			int64_t i = ch * keep + j;
			float *ok = r->sk + ((int64_t)h * r->S + i) * dk, *ov = r->sv + ((int64_t)h * r->S + i) * dk;
			for (int e = 0; e < dk; e++) {
				ok[e] = ka[(int64_t)j * dk + e] / (ca[j] + 1e-8f);
				ov[e] = va[(int64_t)j * dk + e] / (ca[j] + 1e-8f);
			}
			r->sm[(int64_t)h * r->S + i] = ca[j] > 0.0f ? 0.0f : -FLT_MAX;
		}
	}
}

static void sparse_head(void *ctx, int64_t h, int tid)
{
	lsg_run *r = ctx;

	if (r->s->sf == 1 || r->type == LSG_STRIDE || r->type == LSG_BLOCK_STRIDE)
		sparse_pick(r, (int)h);
	else if (r->type == LSG_POOLING)
		sparse_pooling(r, (int)h);
	else if (r->type == LSG_BOS_POOLING)
		sparse_bos_pooling(r, (int)h, r->scratch + (int64_t)tid * r->scratch_n);
	else if (r->type == LSG_NORM)
		sparse_norm(r, (int)h, r->scratch + (int64_t)tid * r->scratch_n);
	else
		sparse_lsh(r, (int)h, r->scratch + (int64_t)tid * r->scratch_n);
}

/* ------------------------------------------------------------ blocks */

/* Job j < heads * nblocks: block j % nblocks of head j / nblocks; the
 * jobs after those: the global queries of one head each. Its queries (m
 * rows from *q, outputs from *o, both of row stride ld) and their key
 * segments in g; returns the number of segments. */
static int job_segs(const lsg_run *r, int64_t j, seg *g, const float **q, float **o, int64_t *m)
{
	const lsg_spec *s = r->s;
	int64_t nb = r->T / s->bs, ld = r->ld, bs = s->bs, step = s->bs / s->sf;
	int n = 0, h;

	if (j >= s->heads * nb) {              /* global queries: every key */
		h = (int)(j - s->heads * nb);
		g[n++] = (seg){ r->gk + (int64_t)h * s->dk, r->gv + (int64_t)h * s->dk, ld, s->ng, NULL };
		g[n++] = (seg){ r->k + (int64_t)h * s->dk, r->v + (int64_t)h * s->dk, ld, r->T, r->kmask };
		*q = r->q - s->ng * ld + (int64_t)h * s->dk;
		*o = r->out + (int64_t)h * s->dk;
		*m = s->ng;
		return n;
	}
	h = (int)(j / nb);
	int64_t b = j % nb, lo, hi;
	g[n++] = (seg){ r->gk + (int64_t)h * s->dk, r->gv + (int64_t)h * s->dk, ld, s->ng, NULL };
	if (r->S > 0) {
		const float *sk = r->sk + (int64_t)h * r->S * s->dk, *sv = r->sv + (int64_t)h * r->S * s->dk;
		const float *sm = r->sm + (int64_t)h * r->S;
		int64_t starts[2] = { b * step + r->before, b * step + r->after };
		for (int side = 0; side < 2; side++) {
			lo = starts[side];
			hi = lo + s->sbs;
			if (lo < 0)
				lo = 0;
			if (hi > r->S)
				hi = r->S;
			if (hi > lo)
				g[n++] = (seg){ sk + lo * s->dk, sv + lo * s->dk, s->dk, hi - lo, sm + lo };
		}
	}
	lo = (b - 1) * bs;
	hi = (b + 2) * bs;
	if (lo < 0)
		lo = 0;
	if (hi > r->T)
		hi = r->T;
	g[n++] = (seg){ r->k + lo * ld + (int64_t)h * s->dk, r->v + lo * ld + (int64_t)h * s->dk, ld,
	                hi - lo, r->kmask + lo };
	*q = r->q + b * bs * ld + (int64_t)h * s->dk;
	*o = r->out + (s->ng + b * bs) * ld + (int64_t)h * s->dk;
	*m = bs;
	return n;
}

static void block_job(void *ctx, int64_t j, int tid)
{
	lsg_run *r = ctx;
	seg g[MAXSEG];
	const float *q;
	float *o;
	int64_t m;
	int n = job_segs(r, j, g, &q, &o, &m);

	attend(q, r->ld, m, r->s->dk, r->s->scale, g, n, o, r->ld,
	       r->scratch + (int64_t)tid * r->scratch_n);
}

/* block_job's attentions as one plan on the GPU (ops/segattn.h), the
 * sparse slots computed before on the CPU. The rows are the CPU's (dev
 * 0) or already the GPU's (dev 1: out too; the caller holds the device's
 * lock), the mask and the slots the CPU's. 0 done, 1 the CPU's to do. */
static int lsg_dev(const lsg_run *r, int dev, lc_err *err)
{
	const lsg_spec *s = r->s;
	sa_plan *p = sa_new(s->dk, s->scale);
	int64_t R = s->ng + r->T, w = (int64_t)s->heads * s->dk;
	void (*rows)(sa_plan *, const float *, int64_t) = dev ? sa_buf_dev : sa_buf;
	int rc;

	if (!p)
		return lc_fail(err, "out of memory (an attention's plan)");
	/* the rows as lsg_attn_fw was given them: globals first */
	rows(p, r->q - s->ng * r->ld, sa_span(R, r->ld, w));
	rows(p, r->gk, sa_span(R, r->ld, w));
	rows(p, r->gv, sa_span(R, r->ld, w));
	sa_buf(p, r->kmask - s->ng, R);
	if (r->S > 0) {
		sa_buf(p, r->sk, s->heads * r->S * s->dk);
		sa_buf(p, r->sv, s->heads * r->S * s->dk);
		sa_buf(p, r->sm, s->heads * r->S);
	}
	for (int64_t j = 0; j < (int64_t)s->heads * (r->T / s->bs + 1); j++) {
		seg g[MAXSEG];
		const float *q;
		float *o;
		int64_t m;
		int n = job_segs(r, j, g, &q, &o, &m);
		for (int i = 0; i < n; i++)
			sa_seg(p, g[i].k, g[i].v, g[i].ld, g[i].n, g[i].mask, NULL);
		sa_rows(p, q, r->ld, m, o - r->out, r->ld, NULL);
	}
	rc = dev ? sa_run_dev(p, r->out, err) : sa_run(p, r->out, R, w, r->ld, err);
	sa_free(p);
	return rc;
}

/* Dense: the queries of rows [j * DENSE_ROWS, ...) of one head to every key. */
#define DENSE_ROWS 64

typedef struct dense_run {
	int dk;
	float scale;
	const float *q, *k, *v, *kmask;
	int64_t ld, R, nq;
	float *out, *scratch;
	int64_t scratch_n;
} dense_run;

static void dense_job(void *ctx, int64_t j, int tid)
{
	dense_run *r = ctx;
	int h = (int)(j / r->nq);
	int64_t r0 = (j % r->nq) * DENSE_ROWS, m = r->R - r0 < DENSE_ROWS ? r->R - r0 : DENSE_ROWS;
	int64_t off = (int64_t)h * r->dk;
	seg g = { r->k + off, r->v + off, r->ld, r->R, r->kmask };

	attend(r->q + r0 * r->ld + off, r->ld, m, r->dk, r->scale, &g, 1,
	       r->out + r0 * r->ld + off, r->ld, r->scratch + (int64_t)tid * r->scratch_n);
}

int attn_full_fw(int heads, int dk, float scale, const float *q, const float *k, const float *v,
                 int64_t ld, int64_t R, const float *kmask, float *out, int nth, lc_err *err)
{
	dense_run d = { dk, scale, q, k, v, kmask, ld, R, 0, out, NULL, 0 };
	int rc;

	if (R < 1)
		return 0;
	/* on the GPU (ops/segattn.h): 0 done, 1 the CPU's to do */
	if (sa_takes(dk) &&
	    (rc = sa_dense(heads, dk, scale, q, ld, R, k, v, ld, R, kmask, out, ld, err)) <= 0)
		return rc;
	if (nth < 1)
		nth = 1;
	d.nq = (R + DENSE_ROWS - 1) / DENSE_ROWS;
	d.scratch_n = DENSE_ROWS * R;
	if (!(d.scratch = malloc((size_t)(nth * d.scratch_n) * sizeof(float))))
		return lc_fail(err, "out of memory (attention over %lld rows)", (long long)R);
	par_for(nth, heads * d.nq, dense_job, &d);
	free(d.scratch);
	return 0;
}

/* Why s cannot attend over T tokens (err), or 0; *dense: T is short
 * enough for every query to see every key. */
static int lsg_check(const lsg_spec *s, int64_t T, int *dense, lc_err *err)
{
	enum lsg_sparsity type = effective(s->sbs, s->sf, s->type);
	const char *why = lsg_spec_invalid(s->bs, s->sbs, s->sf, s->type);

	*dense = 0;
	if (why)
		return lc_fail(err, "LSG attention: %s (block_size %d, sparse_block_size %d, "
		               "sparsity_factor %d)", why, s->bs, s->sbs, s->sf);
	if (T <= 2 * (int64_t)s->bs) {
		*dense = 1;
		return 0;
	}
	if (T % s->bs)
		return lc_fail(err, "LSG attention: %lld tokens are not a multiple of block_size %d "
		               "(adaptive padding is off)", (long long)T, s->bs);
	if ((type == LSG_NORM || type == LSG_LSH) && T % chunk_of(s))
		return lc_fail(err, "LSG attention: %lld tokens are not a multiple of the sparse "
		               "chunk %d", (long long)T, chunk_of(s));
	if (type == LSG_LSH && s->sf > 1 && !s->lsh_R)      /* (factor 1: the keys as they are) */
		return lc_fail(err, "LSG attention: lsh without its random projections");
	return 0;
}

/* r for the rows q, k, v (ng + T of them), with its scratch for nth
 * threads and its sparse slots; 0, or -1 out of memory (run_free
 * either way). */
static int run_init(lsg_run *r, const lsg_spec *s, const float *q, const float *k,
                    const float *v, int64_t ld, int64_t T, const float *kmask, float *out,
                    int nth, lc_err *err)
{
	enum lsg_sparsity type = effective(s->sbs, s->sf, s->type);

	memset(r, 0, sizeof *r);
	r->s = s;
	r->type = type;
	r->q = q + (int64_t)s->ng * ld;
	r->k = k + (int64_t)s->ng * ld;
	r->v = v + (int64_t)s->ng * ld;
	r->kmask = kmask + s->ng;
	r->gk = k;
	r->gv = v;
	r->ld = ld;
	r->T = T;
	r->S = type == LSG_NONE ? 0 : T / s->sf;
	r->out = out;
	sparse_offsets(s->bs, s->sbs, s->sf, &r->before, &r->after);
	{
		int64_t nk = (int64_t)s->ng + 2 * s->sbs + 3 * s->bs, c = chunk_of(s);
		int64_t need = (int64_t)s->bs * nk, gl = (int64_t)s->ng * (s->ng + T);
		int64_t lsh = type == LSG_LSH ? 2 * (2 * c * s->dk + c) + c * s->dk + c * (c / 2) : 0;
		r->scratch_n = need > gl ? need : gl;
		if (r->scratch_n < lsh)
			r->scratch_n = lsh;
		if (r->scratch_n < 2 * c)       /* sparse_norm */
			r->scratch_n = 2 * c;
		if (r->scratch_n < s->sf)       /* sparse_bos_pooling */
			r->scratch_n = s->sf;
	}
	r->scratch = malloc((size_t)(nth * r->scratch_n) * sizeof(float));
	if (r->S > 0) {
		r->sk = malloc((size_t)(s->heads * r->S * s->dk) * sizeof(float));
		r->sv = malloc((size_t)(s->heads * r->S * s->dk) * sizeof(float));
		r->sm = malloc((size_t)(s->heads * r->S) * sizeof(float));
	}
	if (!r->scratch || (r->S > 0 && (!r->sk || !r->sv || !r->sm)))
		return lc_fail(err, "out of memory (LSG attention, %lld tokens)", (long long)T);
	return 0;
}

static void run_free(lsg_run *r)
{
	free(r->scratch);
	free(r->sk);
	free(r->sv);
	free(r->sm);
}

int lsg_attn_fw(const lsg_spec *s, const float *q, const float *k, const float *v, int64_t ld,
                int64_t T, const float *kmask, float *out, int nth, lc_err *err)
{
	lsg_run r;
	int rc = -1, dense;

	if (nth < 1)
		nth = 1;
	if (lsg_check(s, T, &dense, err) < 0)
		return -1;
	if (dense)
		return attn_full_fw(s->heads, s->dk, s->scale, q, k, v, ld, s->ng + T, kmask, out, nth,
		                    err);
	if (run_init(&r, s, q, k, v, ld, T, kmask, out, nth, err) < 0)
		goto out;
	if (r.S > 0)
		par_for(nth, s->heads, sparse_head, &r);
	if (!sa_takes(s->dk) || (rc = lsg_dev(&r, 0, err)) > 0) {
		par_for(nth, (int64_t)s->heads * (T / s->bs + 1), block_job, &r);
		rc = 0;
	}
out:
	run_free(&r);
	return rc;
}

int lsg_attn_fw_dev(const lsg_spec *s, const float *q, const float *k, const float *v,
                    int64_t ld, int64_t T, const float *kmask, float *out, int nth, lc_err *err)
{
	lsg_run r, h;
	float *hq = NULL, *hk = NULL, *hv = NULL;
	int rc = -1, dense;

	if (nth < 1)
		nth = 1;
	if (lsg_check(s, T, &dense, err) < 0)
		return -1;
	if (!sa_takes(s->dk))
		return 1;
	if (dense)
		return sa_dense_dev(s->heads, s->dk, s->scale, q, ld, s->ng + T, k, v, ld, s->ng + T,
		                    kmask, out, ld, err);
	if (run_init(&r, s, q, k, v, ld, T, kmask, out, nth, err) < 0)
		goto out;
	if (r.S > 0) {
		/* the slots from copies of the token rows' keys and values (and
		 * the first token's query, for bos_pooling) */
		int64_t n = T * ld;
		if (!(hk = malloc((size_t)n * sizeof *hk)) || !(hv = malloc((size_t)n * sizeof *hv)) ||
		    !(hq = malloc((size_t)ld * sizeof *hq))) {
			lc_fail(err, "out of memory (LSG attention, %lld tokens)", (long long)T);
			goto out;
		}
		cmp_dev_get(hk, r.k, n);
		cmp_dev_get(hv, r.v, n);
		cmp_dev_get(hq, r.q, ld);
		if (cmp_dev_check(err) < 0)
			goto out;
		h = r;
		h.q = hq, h.k = hk, h.v = hv;
		par_for(nth, s->heads, sparse_head, &h);
	}
	rc = lsg_dev(&r, 1, err);
out:
	run_free(&r);
	free(hq), free(hk), free(hv);
	return rc;
}
