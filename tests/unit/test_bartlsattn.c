/*
 * test_bartlsattn: BART-LS's block and pooled attention (ops/bartlsattn.h)
 * on their own: the forward against a direct computation in double from
 * the semantics (the oracle README, section 6.1), with and without a
 * padding mask, on 1 and 3 threads; the backward against central finite
 * differences of f = sum(w * out), w random, along random directions.
 * The top-down variants (global token 0, segment pooling, AdaPool, the
 * cross-attention to the segments) the same way (README 6.2).
 * The parity with the authors' code is test_bartls and test_topdown.
 */
#include <float.h>
#include <stdint.h>

#include "compute/compute.h"
#include "ops/bartlsattn.h"
#include "t.h"

static float *randv(int64_t n, double scale)
{
	float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
	for (int64_t i = 0; i < n; i++)
		p[i] = (float)(scale * t_nrand());
	return p;
}

static double dot(const float *a, const float *b, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

/* max |a - b| / max |b| */
static double relerr(const float *a, const double *b, int64_t n)
{
	double m = 0, g = 1e-30;
	for (int64_t i = 0; i < n; i++) {
		m = fmax(m, fabs(a[i] - b[i]));
		g = fmax(g, fabs(b[i]));
	}
	return m / g;
}

/* Directional check of an analytic gradient g [n] of f at x [n] (two
 * random directions and g's own); the worst error relative to |g|. */
static double fd_check(double (*f)(void *), void *ctx, float *x, const float *g, int64_t n,
                       double h)
{
	float *v = malloc((size_t)n * sizeof *v), *x0 = malloc((size_t)n * sizeof *x0);
	double gn = sqrt(dot(g, g, n)), worst = 0;

	memcpy(x0, x, (size_t)n * sizeof *x);
	for (int d = 0; d < 3; d++) {
		double vn, an, fp, fm;
		for (int64_t i = 0; i < n; i++)
			v[i] = d == 2 ? g[i] : (float)t_nrand();
		vn = sqrt(dot(v, v, n));
		if (vn == 0)
			continue;
		for (int64_t i = 0; i < n; i++)
			v[i] = (float)(v[i] / vn);
		an = dot(v, g, n);
		for (int64_t i = 0; i < n; i++)
			x[i] = x0[i] + (float)(h * v[i]);
		fp = f(ctx);
		for (int64_t i = 0; i < n; i++)
			x[i] = x0[i] - (float)(h * v[i]);
		fm = f(ctx);
		memcpy(x, x0, (size_t)n * sizeof *x);
		worst = fmax(worst, fabs((fp - fm) / (2 * h) - an) / (gn > 1e-6 ? gn : 1e-6));
	}
	free(v);
	free(x0);
	return worst;
}

/* ------------------------------------------------------ block attention */

struct blk_ctx {
	blkattn_spec s;
	float *q, *k, *v, *out, *w;
	const unsigned char *pad;
	int64_t T, ld;
	int nth;
};

static double blk_f(void *p)
{
	struct blk_ctx *c = p;
	lc_err err;

	T_OK(blkattn_fw(&c->s, c->q, c->k, c->v, c->ld, c->T, c->pad, c->out, c->nth, &err) == 0,
	     "%s", err.msg);
	return dot(c->out, c->w, c->T * c->ld);
}

static void blk_ref(const struct blk_ctx *c, double *ref)
{
	int bs = c->s.bs, dk = c->s.dk;

	for (int h = 0; h < c->s.heads; h++)
		for (int64_t i = 0; i < c->T; i++) {
			int64_t b0 = i / bs * bs;
			double sc[512], m = -INFINITY, sum = 0;
			for (int j = 0; j < bs; j++) {
				double a = 0;
				for (int x = 0; x < dk; x++)
					a += (double)c->q[i * c->ld + h * dk + x] * c->k[(b0 + j) * c->ld + h * dk + x];
				sc[j] = c->pad && (c->pad[i] || c->pad[b0 + j]) ? -10000.0 : a * c->s.scale;
				m = fmax(m, sc[j]);
			}
			for (int j = 0; j < bs; j++)
				sum += (sc[j] = exp(sc[j] - m));
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int j = 0; j < bs; j++)
					o += sc[j] / sum * c->v[(b0 + j) * c->ld + h * dk + x];
				ref[i * c->ld + h * dk + x] = o;
			}
		}
}

static void test_block(void)
{
	/* 3 blocks of 8, with and without padding; blocks of 300 query rows,
	 * more than one product's 256 */
	static const struct { int bs; int64_t T, L; } cases[] = {
		{ 8, 24, 13 }, { 8, 24, 24 }, { 300, 600, 550 },
	};
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
		for (int masked = 0; masked < 2; masked++) {
			int heads = 2, dk = 4;
			int64_t T = cases[ci].T, ld = heads * dk, n = T * ld;
			unsigned char *pad = calloc((size_t)T, 1);
			struct blk_ctx c = { { heads, dk, cases[ci].bs, 0.5f, 0 }, randv(n, 1), randv(n, 1),
			                     randv(n, 1), malloc((size_t)n * 4), randv(n, 1), NULL, T, ld, 1 };
			float *dq = calloc((size_t)n, 4), *dk_ = calloc((size_t)n, 4), *dv = calloc((size_t)n, 4);
			double *ref = malloc((size_t)n * 8), e;
			lc_err err;

			for (int64_t i = cases[ci].L; i < T; i++)
				pad[i] = 1;
			c.pad = masked ? pad : NULL;
			blk_ref(&c, ref);
			for (c.nth = 1; c.nth <= 3; c.nth += 2) {
				blk_f(&c);
				e = relerr(c.out, ref, n);
				T_OK(e < 1e-5, "block attention forward (bs %d, L %lld, mask %d, %d threads): "
				     "%.3g", cases[ci].bs, (long long)cases[ci].L, masked, c.nth, e);
			}
			c.nth = 2;
			T_OK(blkattn_bw(&c.s, c.q, c.k, c.v, ld, T, c.pad, c.w, dq, dk_, dv, 2, &err) == 0,
			     "%s", err.msg);
			e = fd_check(blk_f, &c, c.q, dq, n, 1e-3);
			T_OK(e < 2e-3, "block dq (case %zu, mask %d): %.3g", ci, masked, e);
			e = fd_check(blk_f, &c, c.k, dk_, n, 1e-3);
			T_OK(e < 2e-3, "block dk (case %zu, mask %d): %.3g", ci, masked, e);
			e = fd_check(blk_f, &c, c.v, dv, n, 1e-3);
			T_OK(e < 2e-3, "block dv (case %zu, mask %d): %.3g", ci, masked, e);
			free(c.q); free(c.k); free(c.v); free(c.out); free(c.w);
			free(dq); free(dk_); free(dv); free(ref); free(pad);
		}
	{
		blkattn_spec s = { 2, 4, 8, 0.5f, 0 };
		float x[80] = { 0 };
		lc_err err;
		T_OK(blkattn_fw(&s, x, x, x, 8, 10, NULL, x, 1, &err) < 0 &&
		     strstr(err.msg, "not a multiple of block_size 8"), "refuses a partial block");
	}
}

/* ----------------------------------------------------- pooled attention */

struct pool_ctx {
	poolattn_spec s;
	poolattn_w W;
	float *a, *cross, *w;
	const unsigned char *pad;
	poolattn_tape t;
	int64_t T;
	int nth;
};

static double pool_f(void *p)
{
	struct pool_ctx *c = p;
	lc_err err;

	T_OK(poolattn_fw(&c->s, &c->W, c->a, c->T, c->pad, &c->t, c->cross, 0, c->nth, &err) == 0,
	     "%s", err.msg);
	return dot(c->cross, c->w, c->T * c->s.d);
}

/* y [R, d] = x [R, d] W^T + b in double */
static void lin_ref(const double *x, const float *W, const float *b, int64_t R, int d, double *y)
{
	for (int64_t r = 0; r < R; r++)
		for (int o = 0; o < d; o++) {
			double s = b[o];
			for (int i = 0; i < d; i++)
				s += x[r * d + i] * W[o * d + i];
			y[r * d + o] = s;
		}
}

static void pool_ref(const struct pool_ctx *c, double *cross, double *kp_out)
{
	const poolattn_spec *s = &c->s;
	int d = s->d, dk = d / s->heads;
	int64_t T = c->T, Tp = poolattn_len(s, T);
	double *a = malloc((size_t)(T * d) * 8), *K = malloc((size_t)(T * d) * 8);
	double *V = malloc((size_t)(T * d) * 8), *Q = malloc((size_t)(T * d) * 8);
	double *O = malloc((size_t)(T * d) * 8), *Kp = calloc((size_t)(Tp * d), 8);
	double *Vp = calloc((size_t)(Tp * d), 8);
	int *pm = calloc((size_t)Tp, sizeof *pm);

	for (int64_t i = 0; i < T * d; i++)
		a[i] = c->a[i];
	lin_ref(a, c->W.wk, c->W.bk, T, d, K);
	lin_ref(a, c->W.wv, c->W.bv, T, d, V);
	lin_ref(a, c->W.wq, c->W.bq, T, d, Q);
	for (int64_t j = 0; j < Tp; j++) {
		int all = 1;
		for (int64_t t = j * s->stride - s->padding; t < j * s->stride - s->padding + s->kernel; t++) {
			if (t < 0 || t >= T)
				continue;
			all &= c->pad && c->pad[t];
			for (int x = 0; x < d; x++)
				if (!(c->pad && c->pad[t])) {
					Kp[j * d + x] += K[t * d + x] / s->kernel;
					Vp[j * d + x] += V[t * d + x] / s->kernel;
				}
		}
		pm[j] = all;
	}
	for (int h = 0; h < s->heads; h++)
		for (int64_t i = 0; i < T; i++) {
			double sc[64], m = -INFINITY, sum = 0;
			for (int64_t j = 0; j < Tp; j++) {
				double v = 0;
				for (int x = 0; x < dk; x++)
					v += Q[i * d + h * dk + x] * Kp[j * d + h * dk + x];
				sc[j] = pm[j] ? -INFINITY : v / sqrt((double)dk);
				m = fmax(m, sc[j]);
			}
			for (int64_t j = 0; j < Tp; j++)
				sum += (sc[j] = exp(sc[j] - m));
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int64_t j = 0; j < Tp; j++)
					o += sc[j] / sum * Vp[j * d + h * dk + x];
				O[i * d + h * dk + x] = o;
			}
		}
	lin_ref(O, c->W.wo, c->W.bo, T, d, cross);
	memcpy(kp_out, Kp, (size_t)(Tp * d) * 8);
	free(a); free(K); free(V); free(Q); free(O); free(Kp); free(Vp); free(pm);
}

static void test_pool(void)
{
	static const struct { int k, st, p; int64_t T, L; } cases[] = {
		{ 6, 4, 3, 24, 13 }, { 18, 12, 9, 48, 37 }, { 18, 12, 9, 144, 100 }, { 4, 4, 0, 16, 16 },
		{ 18, 12, 9, 600, 550 },   /* queries in more than one product of 256 rows */
	};
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
		for (int masked = 0; masked < 2; masked++) {
			int heads = 2, d = 8;
			int64_t T = cases[ci].T, n = T * d, Tp;
			unsigned char *pad = calloc((size_t)T, 1);
			struct pool_ctx c;
			float *dW[8], *da = calloc((size_t)n, 4);
			float **Wp[8] = { &c.W.wq, &c.W.bq, &c.W.wk, &c.W.bk, &c.W.wv, &c.W.bv, &c.W.wo, &c.W.bo };
			poolattn_w G;
			float **Gp[8] = { &G.wq, &G.bq, &G.wk, &G.bk, &G.wv, &G.bv, &G.wo, &G.bo };
			double *ref, *kp, e;
			lc_err err;

			memset(&c, 0, sizeof c);
			c.s = (poolattn_spec){ heads, d, cases[ci].k, cases[ci].st, cases[ci].p };
			for (int i = 0; i < 8; i++) {
				int64_t m = i % 2 ? d : d * d;
				*Wp[i] = randv(m, i % 2 ? 0.3 : 1.5 / sqrt(d));
				*Gp[i] = dW[i] = calloc((size_t)m, 4);
			}
			c.T = T;
			c.a = randv(n, 1);
			c.w = randv(n, 1);
			c.cross = malloc((size_t)n * 4);
			for (int64_t i = cases[ci].L; i < T; i++)
				pad[i] = 1;
			c.pad = masked ? pad : NULL;
			Tp = poolattn_len(&c.s, T);
			T_OK(poolattn_tape_init(&c.t, &c.s, T, &err) == 0, "%s", err.msg);
			ref = malloc((size_t)n * 8);
			kp = malloc((size_t)(Tp * d) * 8);
			pool_ref(&c, ref, kp);
			for (c.nth = 1; c.nth <= 3; c.nth += 2) {
				pool_f(&c);
				e = relerr(c.cross, ref, n);
				T_OK(e < 1e-5, "pooled attention forward (case %zu, mask %d, %d threads): %.3g",
				     ci, masked, c.nth, e);
				e = relerr(c.t.kp, kp, Tp * d);
				T_OK(e < 1e-5, "pooled keys (case %zu, mask %d): %.3g", ci, masked, e);
			}
			T_OK(poolattn_bw(&c.s, &c.W, c.a, c.pad, &c.t, c.w, da, &G, 2, &err) == 0, "%s",
			     err.msg);
			/* step 1e-2: at 1e-3 the float forward's rounding shows (error
			 * falling as the step grows), the truncation error stays far below */
			e = fd_check(pool_f, &c, c.a, da, n, 1e-2);
			T_OK(e < 2e-3, "pooled da (case %zu, mask %d): %.3g", ci, masked, e);
			for (int i = 0; i < 8; i++) {
				if (i == 3 && cases[ci].k == cases[ci].st && !cases[ci].p) {
					/* full windows: bk shifts every score of a query alike */
					double mx = 0;
					for (int x = 0; x < d; x++)
						mx = fmax(mx, fabs(dW[3][x]));
					T_OK(mx < 1e-4, "pooled dbk is 0 with full windows: %.3g", mx);
					continue;
				}
				e = fd_check(pool_f, &c, *Wp[i], dW[i], i % 2 ? d : d * d, 1e-2);
				T_OK(e < 2e-3, "pooled d%s%c (case %zu, mask %d): %.3g", i % 2 ? "b" : "w",
				     "qqkkvvoo"[i], ci, masked, e);
			}
			for (int i = 0; i < 8; i++) {
				free(*Wp[i]);
				free(dW[i]);
			}
			poolattn_tape_free(&c.t);
			free(c.a); free(c.w); free(c.cross); free(da); free(ref); free(kp); free(pad);
		}
	{
		poolattn_spec s = { 2, 8, 18, 12, 10 };
		poolattn_tape t;
		lc_err err;
		T_OK(poolattn_spec_invalid(&s) != NULL, "padding over half the kernel");
		s.padding = 0;
		T_OK(poolattn_tape_init(&t, &s, 16, &err) < 0 && strstr(err.msg, "fewer"), "%s", err.msg);
		s.padding = 9;
		T_EQ_I(poolattn_len(&s, 16), 2);
		T_EQ_I(poolattn_len(&s, 1008), 85);
	}
}

/* ------------------------------------ top-down: global token 0 (block.py) */

static double qk(const struct blk_ctx *c, int h, int64_t i, int64_t j)
{
	double a = 0;
	int dk = c->s.dk;

	for (int x = 0; x < dk; x++)
		a += (double)c->q[i * c->ld + h * dk + x] * c->k[j * c->ld + h * dk + x];
	return a * c->s.scale;
}

/* Direct computation of the global0 semantics (oracle README 6.2). */
static void blkg_ref(const struct blk_ctx *c, double *ref)
{
	int bs = c->s.bs, dk = c->s.dk;
	int64_t T = c->T;
	double *sc = malloc((size_t)(T + bs + 1) * sizeof *sc);

	for (int h = 0; h < c->s.heads; h++)
		for (int64_t i = 0; i < T; i++) {
			int64_t b0 = i / bs * bs, nk = i == 0 ? T : bs + 1;
			double m = -INFINITY, sum = 0;
			for (int64_t j = 0; j < nk; j++) {
				if (i == 0)
					sc[j] = j && c->pad && c->pad[j] ? -10000.0 : qk(c, h, i, j);
				else if (j == bs)
					sc[j] = qk(c, h, i, 0);
				else if (b0 + j >= T)
					sc[j] = -10000.0;
				else {
					int64_t kj = b0 + j;
					int normal = kj != 0 && !(c->pad && (c->pad[i] || c->pad[kj]));
					sc[j] = normal ? qk(c, h, i, kj) : -10000.0;
				}
				m = fmax(m, sc[j]);
			}
			for (int64_t j = 0; j < nk; j++)
				sum += (sc[j] = exp(sc[j] - m));
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int64_t j = 0; j < nk; j++) {
					int64_t kj = i == 0 ? j : j == bs ? 0 : b0 + j;
					if (kj < T)
						o += sc[j] / sum * c->v[kj * c->ld + h * dk + x];
				}
				ref[i * c->ld + h * dk + x] = o;
			}
		}
	free(sc);
}

static void test_block_global(void)
{
	/* T not a multiple of bs (the last block cut short), pads at the end
	 * and in the middle, chunks of more than 256 query rows */
	static const struct { int bs; int64_t T, L; } cases[] = {
		{ 8, 24, 13 }, { 8, 21, 21 }, { 8, 30, 17 }, { 300, 650, 520 }, { 16, 1, 1 },
	};
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
		for (int masked = 0; masked < 2; masked++) {
			int heads = 2, dk = 4;
			int64_t T = cases[ci].T, ld = heads * dk, n = T * ld;
			unsigned char *pad = calloc((size_t)T, 1);
			struct blk_ctx c = { { heads, dk, cases[ci].bs, 0.5f, 1 }, randv(n, 1), randv(n, 1),
			                     randv(n, 1), malloc((size_t)n * 4), randv(n, 1), NULL, T, ld, 1 };
			float *dq = calloc((size_t)n, 4), *dk_ = calloc((size_t)n, 4), *dv = calloc((size_t)n, 4);
			double *ref = malloc((size_t)n * 8), e;
			lc_err err;

			for (int64_t i = cases[ci].L; i < T; i++)
				pad[i] = 1;
			if (T > 6)
				pad[5] = 1;            /* a pad inside the text */
			c.pad = masked ? pad : NULL;
			blkg_ref(&c, ref);
			for (c.nth = 1; c.nth <= 3; c.nth += 2) {
				blk_f(&c);
				e = relerr(c.out, ref, n);
				T_OK(e < 1e-5, "global block attention forward (bs %d, T %lld, L %lld, mask %d, "
				     "%d threads): %.3g", cases[ci].bs, (long long)T, (long long)cases[ci].L,
				     masked, c.nth, e);
			}
			c.nth = 2;
			T_OK(blkattn_bw(&c.s, c.q, c.k, c.v, ld, T, c.pad, c.w, dq, dk_, dv, 2, &err) == 0,
			     "%s", err.msg);
			e = fd_check(blk_f, &c, c.q, dq, n, 1e-3);
			T_OK(e < 2e-3, "global block dq (case %zu, mask %d): %.3g", ci, masked, e);
			e = fd_check(blk_f, &c, c.k, dk_, n, 1e-3);
			T_OK(e < 2e-3, "global block dk (case %zu, mask %d): %.3g", ci, masked, e);
			e = fd_check(blk_f, &c, c.v, dv, n, 1e-3);
			T_OK(e < 2e-3, "global block dv (case %zu, mask %d): %.3g", ci, masked, e);
			free(c.q); free(c.k); free(c.v); free(c.out); free(c.w);
			free(dq); free(dk_); free(dv); free(ref); free(pad);
		}
}

/* ------------------------------------------ top-down: segments, AdaPool */

struct seg_ctx {
	poolattn_spec s;
	float *x, *u, b, *p, *y, *w;
	int64_t T, S;
	int ada, nth;
};

static double seg_f(void *p)
{
	struct seg_ctx *c = p;

	if (c->ada)
		adapool_fw(&c->s, c->x, c->T, c->u, c->b, c->p, c->y, c->nth);
	else
		segpool_fw(&c->s, c->x, c->T, c->y, c->nth);
	return dot(c->y, c->w, c->S * c->s.d);
}

static void test_segments(void)
{
	/* AvgPool1d(32, 24) as the top-down encoder uses it, and a smaller one */
	static const struct { int k, st; int64_t T; } cases[] = { { 32, 24, 100 }, { 4, 3, 14 } };
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
		for (int ada = 0; ada < 2; ada++) {
			int d = 6;
			int64_t T = cases[ci].T, n = T * d;
			struct seg_ctx c = { { 1, d, cases[ci].k, cases[ci].st, 0 }, randv(n, 1), randv(d, 0.5),
			                     0.3f, malloc((size_t)T * 4), NULL, NULL, T, 0, ada, 1 };
			int64_t S = c.S = poolattn_len(&c.s, T);
			float *dx = calloc((size_t)n, 4), *du = calloc((size_t)d, 4), db = 0;
			double *ref = malloc((size_t)(S * d) * 8), e;
			lc_err err;

			T_EQ_I(S, (T - cases[ci].k) / cases[ci].st + 1);
			c.y = malloc((size_t)(S * d) * 4);
			c.w = randv(S * d, 1);
			for (int64_t j = 0; j < S; j++)
				for (int x = 0; x < d; x++) {
					double num = 0, den = 0;
					for (int64_t t = j * c.s.stride; t < j * c.s.stride + c.s.kernel; t++) {
						double z = c.b, pt;
						for (int y = 0; y < d; y++)
							z += (double)c.x[t * d + y] * c.u[y];
						pt = ada ? 1 / (1 + exp(-z)) : 1;
						num += pt * c.x[t * d + x];
						den += pt;
					}
					ref[j * d + x] = ada ? num / den : num / c.s.kernel;
				}
			for (c.nth = 1; c.nth <= 3; c.nth += 2) {
				seg_f(&c);
				e = relerr(c.y, ref, S * d);
				T_OK(e < 1e-5, "%s forward (kernel %d, T %lld, %d threads): %.3g",
				     ada ? "AdaPool" : "segment pooling", c.s.kernel, (long long)T, c.nth, e);
			}
			seg_f(&c);
			if (ada)
				T_OK(adapool_bw(&c.s, c.x, T, c.u, c.p, c.y, c.w, dx, du, &db, 2, &err) == 0,
				     "%s", err.msg);
			else
				segpool_bw(&c.s, T, c.w, dx, 2);
			e = fd_check(seg_f, &c, c.x, dx, n, 1e-3);
			T_OK(e < 2e-3, "%s dx (case %zu): %.3g", ada ? "AdaPool" : "pooling", ci, e);
			if (ada) {
				float b0 = c.b;
				double fp, fm, g;
				e = fd_check(seg_f, &c, c.u, du, d, 1e-3);
				T_OK(e < 2e-3, "AdaPool du (case %zu): %.3g", ci, e);
				c.b = b0 + 1e-3f;
				fp = seg_f(&c);
				c.b = b0 - 1e-3f;
				fm = seg_f(&c);
				c.b = b0;
				g = (fp - fm) / ((double)(b0 + 1e-3f) - (double)(b0 - 1e-3f));
				T_OK(fabs(g - db) < 2e-3 * fmax(1, fabs(g)), "AdaPool db %g, fd %g", db, g);
				/* a zero tagger is the average pooling */
				memset(c.u, 0, (size_t)d * 4);
				c.b = 0;
				seg_f(&c);
				{
					float *avg = malloc((size_t)(S * d) * 4);
					segpool_fw(&c.s, c.x, T, avg, 1);
					e = 0;
					for (int64_t i = 0; i < S * d; i++)
						e = fmax(e, fabs(avg[i] - c.y[i]));
					T_OK(e < 1e-6, "AdaPool with a zero tagger = AvgPool: %.3g", e);
					free(avg);
				}
			}
			free(c.x); free(c.u); free(c.p); free(c.y); free(c.w);
			free(dx); free(du); free(ref);
		}
}

struct sx_ctx {
	float *q, *k, *v, *o, *w;
	int64_t T, S;
	int heads, d, nth;
};

static double sx_f(void *p)
{
	struct sx_ctx *c = p;
	lc_err err;

	T_OK(segxattn_fw(c->heads, c->d, c->q, c->T, c->k, c->v, c->S, c->o, c->nth, &err) == 0,
	     "%s", err.msg);
	return dot(c->o, c->w, c->T * c->d);
}

static void test_segxattn(void)
{
	int heads = 2, dk = 3, d = heads * dk;
	int64_t T = 300, S = 5;
	struct sx_ctx c = { randv(T * d, 1), randv(S * d, 1), randv(S * d, 1), malloc((size_t)(T * d) * 4),
	                    randv(T * d, 1), T, S, heads, d, 1 };
	float *dq = calloc((size_t)(T * d), 4), *dk_ = calloc((size_t)(S * d), 4),
	      *dv = calloc((size_t)(S * d), 4);
	double *ref = malloc((size_t)(T * d) * 8), e;
	lc_err err;

	for (int h = 0; h < heads; h++)
		for (int64_t i = 0; i < T; i++) {
			double sc[5], m = -INFINITY, sum = 0;
			for (int64_t j = 0; j < S; j++) {
				double a = 0;
				for (int x = 0; x < dk; x++)
					a += (double)c.q[i * d + h * dk + x] * c.k[j * d + h * dk + x];
				sc[j] = a / sqrt(dk);
				m = fmax(m, sc[j]);
			}
			for (int64_t j = 0; j < S; j++)
				sum += (sc[j] = exp(sc[j] - m));
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int64_t j = 0; j < S; j++)
					o += sc[j] / sum * c.v[j * d + h * dk + x];
				ref[i * d + h * dk + x] = o;
			}
		}
	for (c.nth = 1; c.nth <= 3; c.nth += 2) {
		sx_f(&c);
		e = relerr(c.o, ref, T * d);
		T_OK(e < 1e-5, "segment cross-attention forward, %d threads: %.3g", c.nth, e);
	}
	T_OK(segxattn_bw(heads, d, c.q, T, c.k, c.v, S, c.w, dq, dk_, dv, 2, &err) == 0, "%s",
	     err.msg);
	e = fd_check(sx_f, &c, c.q, dq, T * d, 1e-3);
	T_OK(e < 2e-3, "segment cross-attention dq: %.3g", e);
	e = fd_check(sx_f, &c, c.k, dk_, S * d, 1e-3);
	T_OK(e < 2e-3, "segment cross-attention dk: %.3g", e);
	e = fd_check(sx_f, &c, c.v, dv, S * d, 1e-3);
	T_OK(e < 2e-3, "segment cross-attention dv: %.3g", e);
	free(c.q); free(c.k); free(c.v); free(c.o); free(c.w);
	free(dq); free(dk_); free(dv); free(ref);
}

int main(void)
{
	cmp_init(NULL);
	T_RUN(test_block);
	T_RUN(test_pool);
	T_RUN(test_block_global);
	T_RUN(test_segments);
	T_RUN(test_segxattn);
	return t_done();
}
