/*
 * test_ops: every operation of ops/ on its own (the S4D convolution is in
 * test_ssm): the forward against a direct computation in double, the
 * backward against central finite differences of f = sum(w * out) with w
 * random, along random directions (linear operations: against their exact
 * partials).
 */
#include <float.h>
#include <stdint.h>

#include "base/dtype.h"
#include "compute/compute.h"
#include "ops/act.h"
#include "ops/attn.h"
#include "ops/dropout.h"
#include "ops/embed.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/norm.h"
#include "ops/softmax.h"
#include "ops/vmath.h"
#include "ops/xattn.h"
#include "ops/xcache.h"
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

/* max |a - b| / max(|b|, floor) */
static double relerr(const float *a, const double *b, int64_t n)
{
	double m = 0, g = 1e-30;
	for (int64_t i = 0; i < n; i++) {
		m = fmax(m, fabs(a[i] - b[i]));
		g = fmax(g, fabs(b[i]));
	}
	return m / g;
}

/* Directional check of an analytic gradient g [n] of f at x [n]: two
 * random directions and the gradient's own. Returns the worst error
 * relative to |g|. f re-reads x. */
static double fd_check(double (*f)(void *), void *ctx, float *x, const float *g, int64_t n,
                       double h)
{
	float *v = malloc((size_t)n * sizeof *v), *x0 = malloc((size_t)n * sizeof *x0);
	double gn = sqrt(dot(g, g, n)), worst = 0;

	memcpy(x0, x, (size_t)n * sizeof *x);
	for (int d = 0; d < 3; d++) {
		double vn = 0, an, fp, fm;
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

/* ---------------------------------------------------------------- norm */

struct norm_ctx { float *x, *w, *dy, *y; int64_t R; int d; };

static double norm_f(void *p)
{
	struct norm_ctx *c = p;
	rmsnorm_fw(c->x, c->R, c->d, c->w, 1e-6f, c->y, NULL);
	return dot(c->y, c->dy, c->R * c->d);
}

static void test_rmsnorm(void)
{
	struct norm_ctx c = { NULL, NULL, NULL, NULL, 5, 24 };
	int64_t n = c.R * c.d;
	float *rstd = malloc(5 * sizeof *rstd), *dx = calloc((size_t)n, 4), *dw = calloc(24, 4);
	double *ref = malloc((size_t)n * sizeof *ref), e;

	c.x = randv(n, 2);
	c.w = randv(c.d, 1);
	c.dy = randv(n, 1);
	c.y = malloc((size_t)n * 4);
	rmsnorm_fw(c.x, c.R, c.d, c.w, 1e-6f, c.y, rstd);
	for (int64_t r = 0; r < c.R; r++) {
		double ss = 0;
		for (int i = 0; i < c.d; i++)
			ss += (double)c.x[r * c.d + i] * c.x[r * c.d + i];
		for (int i = 0; i < c.d; i++)
			ref[r * c.d + i] = c.w[i] * c.x[r * c.d + i] / sqrt(ss / c.d + (double)1e-6f);
	}
	e = relerr(c.y, ref, n);
	T_OK(e < 1e-6, "rmsnorm forward: %.3g", e);
	rmsnorm_bw(c.dy, c.x, rstd, c.w, c.R, c.d, dx, dw);
	e = fd_check(norm_f, &c, c.x, dx, n, 1e-2);
	T_OK(e < 1e-3, "rmsnorm dx: %.3g", e);
	e = fd_check(norm_f, &c, c.w, dw, c.d, 1e-2);
	T_OK(e < 1e-3, "rmsnorm dw: %.3g", e);
	/* with the residual before it: the sums as x[i] + a[i], then the same
	 * norm of them, bit for bit (d 24: vector and scalar tails) */
	{
		float *a = randv(n, 1), *x2 = malloc((size_t)n * 4), *y2 = malloc((size_t)n * 4);
		float *r2 = malloc(5 * sizeof *r2);
		int same = 1;

		memcpy(x2, c.x, (size_t)n * 4);
		for (int64_t i = 0; i < n; i++)
			c.x[i] = c.x[i] + a[i];
		rmsnorm_fw(c.x, c.R, c.d, c.w, 1e-6f, c.y, rstd);
		rmsnorm_fw_res(x2, a, c.R, c.d, c.w, 1e-6f, y2, r2);
		same = !memcmp(x2, c.x, (size_t)n * 4) && !memcmp(y2, c.y, (size_t)n * 4) &&
		       !memcmp(r2, rstd, 5 * sizeof *r2);
		T_OK(same, "rmsnorm with the residual: the sums, the norm and its scales");
		free(a); free(x2); free(y2); free(r2);
	}
	free(c.x); free(c.w); free(c.dy); free(c.y); free(rstd); free(dx); free(dw); free(ref);
}

struct ln_ctx { float *x, *w, *b, *dy, *y; int64_t R; int d; };

static double ln_f(void *p)
{
	struct ln_ctx *c = p;
	layernorm_fw(c->x, c->R, c->d, c->w, c->b, 1e-5f, c->y, NULL, NULL);
	return dot(c->y, c->dy, c->R * c->d);
}

static void test_layernorm(void)
{
	struct ln_ctx c = { NULL, NULL, NULL, NULL, NULL, 4, 20 };
	int64_t n = c.R * c.d;
	float *mean = malloc(4 * sizeof *mean), *rstd = malloc(4 * sizeof *rstd);
	float *dx = calloc((size_t)n, 4), *dw = calloc(20, 4), *db = calloc(20, 4);
	double *ref = malloc((size_t)n * sizeof *ref), e;

	c.x = randv(n, 2);
	for (int64_t i = 0; i < n; i++)
		c.x[i] += 3;   /* a mean far from 0 */
	c.w = randv(c.d, 1);
	c.b = randv(c.d, 1);
	c.dy = randv(n, 1);
	c.y = malloc((size_t)n * 4);
	layernorm_fw(c.x, c.R, c.d, c.w, c.b, 1e-5f, c.y, mean, rstd);
	for (int64_t r = 0; r < c.R; r++) {
		double m = 0, v = 0;
		for (int i = 0; i < c.d; i++)
			m += c.x[r * c.d + i];
		m /= c.d;
		for (int i = 0; i < c.d; i++)
			v += (c.x[r * c.d + i] - m) * (c.x[r * c.d + i] - m);
		for (int i = 0; i < c.d; i++)
			ref[r * c.d + i] = (c.x[r * c.d + i] - m) / sqrt(v / c.d + (double)1e-5f) * c.w[i] + c.b[i];
	}
	e = relerr(c.y, ref, n);
	T_OK(e < 1e-6, "layernorm forward: %.3g", e);
	layernorm_bw(c.dy, c.x, mean, rstd, c.w, c.R, c.d, dx, dw, db);
	e = fd_check(ln_f, &c, c.x, dx, n, 1e-2);
	T_OK(e < 1e-3, "layernorm dx: %.3g", e);
	e = fd_check(ln_f, &c, c.w, dw, c.d, 1e-2);
	T_OK(e < 1e-3, "layernorm dw: %.3g", e);
	e = fd_check(ln_f, &c, c.b, db, c.d, 1e-2);
	T_OK(e < 1e-3, "layernorm db: %.3g", e);
	free(c.x); free(c.w); free(c.b); free(c.dy); free(c.y); free(mean); free(rstd);
	free(dx); free(dw); free(db); free(ref);
}

/* ----------------------------------------------------------------- act */

struct act_ctx { enum lc_act k; float *a, *b, *dy, *y; int64_t n; };

static double act_f(void *p)
{
	struct act_ctx *c = p;
	act_fw(c->k, c->a, c->b, c->n, c->y);
	return dot(c->y, c->dy, c->n);
}

static double act_ref(enum lc_act k, double x)
{
	switch (k) {
	case ACT_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
	case ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case ACT_RELU: return x > 0 ? x : 0;
	case ACT_SILU: return x / (1 + exp(-x));
	}
	return NAN;
}

static void test_act(void)
{
	static const char *names[] = { "gelu_new", "gelu", "relu", "silu" };
	int64_t n = 200;

	T_EQ_I(act_parse("gelu_new"), ACT_GELU_TANH);
	T_EQ_I(act_parse("gelu_pytorch_tanh"), ACT_GELU_TANH);
	T_EQ_I(act_parse("gelu_fast"), ACT_GELU_TANH);
	T_EQ_I(act_parse("gelu"), ACT_GELU);
	T_EQ_I(act_parse("swish"), ACT_SILU);
	T_EQ_I(act_parse("tanh"), -1);
	for (int k = 0; k < 4; k++)
		for (int gated = 0; gated < 2; gated++) {
			struct act_ctx c = { (enum lc_act)k, randv(n, 3), gated ? randv(n, 1) : NULL,
			                     randv(n, 1), malloc((size_t)n * 4), n };
			float *da = malloc((size_t)n * 4), *db = malloc((size_t)n * 4);
			double *ref = malloc((size_t)n * 8), e;
			T_EQ_S(act_name((enum lc_act)k), names[k]);
			for (int64_t i = 0; i < n; i++) {
				if (k == ACT_RELU && fabsf(c.a[i]) < 0.05f)
					c.a[i] = 0.5f;   /* away from the kink, for the differences */
				ref[i] = act_ref((enum lc_act)k, c.a[i]) * (c.b ? c.b[i] : 1);
			}
			act_fw(c.k, c.a, c.b, n, c.y);
			e = relerr(c.y, ref, n);
			T_OK(e < 2e-6, "%s%s forward: %.3g", gated ? "gated " : "",
			     names[k], e);
			act_bw(c.k, c.a, c.b, c.dy, n, da, c.b ? db : NULL);
			e = fd_check(act_f, &c, c.a, da, n, 1e-3);
			T_OK(e < 2e-3, "%s da: %.3g", names[k], e);
			if (c.b) {
				e = fd_check(act_f, &c, c.b, db, n, 1e-3);
				T_OK(e < 2e-3, "%s db: %.3g", names[k], e);
			}
			free(c.a); free(c.b); free(c.dy); free(c.y); free(da); free(db); free(ref);
		}
}

/* -------------------------------------------------------------- linear */

static void test_linear(void)
{
	int64_t R = 7;
	int din = 9, dout = 11;
	float *x = randv(R * din, 1), *W = randv((int64_t)dout * din, 1), *b = randv(dout, 1);
	float *y = randv(R * dout, 1), *y0 = malloc((size_t)(R * dout) * 4), *dy = randv(R * dout, 1);
	float *xT = malloc((size_t)(R * din) * 4), *yT = malloc((size_t)(R * dout) * 4);
	float *dx = calloc((size_t)(R * din), 4), *dW = calloc((size_t)(dout * din), 4), *db = calloc((size_t)dout, 4);
	double *ref = malloc((size_t)(R * (dout > din ? dout : din)) * 8), *rW = malloc((size_t)(dout * din) * 8), e;

	cmp_init(NULL);
	for (int64_t r = 0; r < R; r++)
		for (int i = 0; i < din; i++)
			xT[(int64_t)i * R + r] = x[r * din + i];
	memcpy(y0, y, (size_t)(R * dout) * 4);
	/* y = 0.5 y + x W^T + b, two threads */
	linear_fw(y, x, W, b, R, dout, din, 0.5f, 2);
	for (int64_t r = 0; r < R; r++)
		for (int o = 0; o < dout; o++) {
			double s = 0.5 * y0[r * dout + o] + b[o];
			for (int i = 0; i < din; i++)
				s += (double)x[r * din + i] * W[o * din + i];
			ref[r * dout + o] = s;
		}
	e = relerr(y, ref, R * dout);
	T_OK(e < 1e-6, "linear_fw: %.3g", e);
	/* channel-major out: yT = W x^T + b */
	linear_fw_to_t(yT, R, x, W, b, R, dout, din);
	for (int64_t r = 0; r < R; r++)
		for (int o = 0; o < dout; o++)
			ref[r * dout + o] -= 0.5 * y0[r * dout + o];
	{
		float *tmp = malloc((size_t)(R * dout) * 4);
		for (int64_t r = 0; r < R; r++)
			for (int o = 0; o < dout; o++)
				tmp[r * dout + o] = yT[(int64_t)o * R + r];
		e = relerr(tmp, ref, R * dout);
		T_OK(e < 1e-6, "linear_fw_to_t: %.3g", e);
		/* channel-major in: y = xT^T W^T + b */
		linear_fw_from_t(tmp, xT, R, W, b, R, dout, din, 0.0f);
		e = relerr(tmp, ref, R * dout);
		T_OK(e < 1e-6, "linear_fw_from_t: %.3g", e);
		free(tmp);
	}
	/* backward: exact partials dx = dy W, dW = dy^T x, db = colsum dy */
	for (int layout = 0; layout < 3; layout++) {
		float *dyT = malloc((size_t)(R * dout) * 4), *dxT = calloc((size_t)(R * din), 4);
		memset(dx, 0, (size_t)(R * din) * 4);
		memset(dW, 0, (size_t)(dout * din) * 4);
		memset(db, 0, (size_t)dout * 4);
		for (int64_t r = 0; r < R; r++)
			for (int o = 0; o < dout; o++)
				dyT[(int64_t)o * R + r] = dy[r * dout + o];
		if (layout == 0)
			linear_bw(dy, x, W, R, dout, din, dx, dW, db);
		else if (layout == 1)
			linear_bw_to_t(dyT, R, x, W, R, dout, din, dx, dW, db);
		else {
			linear_bw_from_t(dy, xT, R, W, R, dout, din, dxT, dW, db);
			for (int64_t r = 0; r < R; r++)
				for (int i = 0; i < din; i++)
					dx[r * din + i] = dxT[(int64_t)i * R + r];
		}
		for (int64_t r = 0; r < R; r++)
			for (int i = 0; i < din; i++) {
				double s = 0;
				for (int o = 0; o < dout; o++)
					s += (double)dy[r * dout + o] * W[o * din + i];
				ref[r * din + i] = s;
			}
		e = relerr(dx, ref, R * din);
		T_OK(e < 1e-6, "layout %d dx: %.3g", layout, e);
		for (int o = 0; o < dout; o++)
			for (int i = 0; i < din; i++) {
				double s = 0;
				for (int64_t r = 0; r < R; r++)
					s += (double)dy[r * dout + o] * x[r * din + i];
				rW[o * din + i] = s;
			}
		e = relerr(dW, rW, dout * din);
		T_OK(e < 1e-6, "layout %d dW: %.3g", layout, e);
		for (int o = 0; o < dout; o++) {
			double s = 0;
			for (int64_t r = 0; r < R; r++)
				s += dy[r * dout + o];
			ref[o] = s;
		}
		e = relerr(db, ref, dout);
		T_OK(e < 1e-6, "layout %d db: %.3g", layout, e);
		free(dyT);
		free(dxT);
	}
	free(x); free(W); free(b); free(y); free(y0); free(dy); free(xT); free(yT);
	free(dx); free(dW); free(db); free(ref); free(rW);
}

/* ------------------------------------------------------------- softmax */

struct sm_ctx { float *s, *p, *dy; int64_t rows, n; };

static double sm_f(void *q)
{
	struct sm_ctx *c = q;
	memcpy(c->p, c->s, (size_t)(c->rows * c->n) * 4);
	softmax_fw(c->p, c->rows, c->n, c->n);
	return dot(c->p, c->dy, c->rows * c->n);
}

static void test_softmax(void)
{
	struct sm_ctx c = { randv(4 * 30, 3), malloc(4 * 30 * 4), randv(4 * 30, 1), 4, 30 };
	float *g = malloc(4 * 30 * 4);
	double ref[120], e;
	float allinf[3] = { -INFINITY, -INFINITY, -INFINITY };

	sm_f(&c);
	for (int r = 0; r < 4; r++) {
		double m = -INFINITY, s = 0;
		for (int j = 0; j < 30; j++)
			m = fmax(m, c.s[r * 30 + j]);
		for (int j = 0; j < 30; j++)
			s += exp(c.s[r * 30 + j] - m);
		for (int j = 0; j < 30; j++)
			ref[r * 30 + j] = exp(c.s[r * 30 + j] - m) / s;
	}
	e = relerr(c.p, ref, 120);
	T_OK(e < 1e-6, "softmax forward: %.3g", e);
	memcpy(g, c.dy, sizeof ref / 2);
	softmax_bw(c.p, g, 4, 30, 30);
	e = fd_check(sm_f, &c, c.s, g, 120, 1e-3);
	T_OK(e < 1e-3, "softmax backward: %.3g", e);
	softmax_fw(allinf, 1, 3, 3);
	T_OK(allinf[0] == 0 && allinf[2] == 0, "a row of -inf gives zeros, not NaN");
	free(c.s); free(c.p); free(c.dy); free(g);
}

/* ------------------------------------------------------ embed, dropout, loss */

static void test_embed_dropout(void)
{
	float *table = randv(10 * 4, 1), out[12], dt[40] = { 0 }, dout[12];
	int32_t ids[3] = { 7, 2, 7 };
	float mask[20000], y[4] = { 1, 2, 3, 4 }, res[4] = { 10, 20, 30, 40 }, m4[4] = { 0, 2, 2, 0 };
	uint64_t s1 = 42, s2 = 42;
	int64_t dropped = 0;

	embed_fw(table, 4, ids, 3, 2.0f, out);
	T_OK(out[0] == 2 * table[28] && out[4] == 2 * table[8] && out[11] == 2 * table[31], "lookup");
	for (int i = 0; i < 12; i++)
		dout[i] = (float)(i + 1);
	embed_bw(dt, 4, ids, 3, 2.0f, dout);
	T_OK(dt[28] == 2 * (1 + 9) && dt[8] == 2 * 5 && dt[0] == 0, "gradients scattered and summed");
	dropout_mask(mask, 20000, 0.25, &s1);
	for (int i = 0; i < 20000; i++) {
		dropped += mask[i] == 0;
		if (mask[i] != 0 && mask[i] != (float)(1 / 0.75))
			break;
	}
	T_OK(dropped > 4700 && dropped < 5300, "dropped %lld of 20000 at p = 0.25", (long long)dropped);
	{
		float m2[20000];
		dropout_mask(m2, 20000, 0.25, &s2);
		T_OK(memcmp(mask, m2, sizeof m2) == 0, "the seed fixes the mask");
	}
	residual_add(y, res, y, m4, 4);
	T_OK(y[0] == 10 && y[1] == 24 && y[2] == 36 && y[3] == 40, "residual_add with mask");
	free(table);
}

struct loss_ctx { float *logits, *tmp; int32_t *lab; int64_t T; int V; };

static double loss_f(void *p)
{
	struct loss_ctx *c = p;
	int64_t n;
	memcpy(c->tmp, c->logits, (size_t)(c->T * c->V) * 4);
	return xent_fw_bw(c->tmp, c->T, c->V, c->lab, 0, 1.0f, 0, &n);
}

static void test_loss(void)
{
	int32_t lab[5] = { 3, 0, 6, -1, 1 };      /* 0 (pad) and -1 are not counted */
	struct loss_ctx c = { randv(5 * 7, 2), malloc(5 * 7 * 4), lab, 5, 7 };
	float *g = malloc(5 * 7 * 4);
	int64_t n;
	double L, ref = 0, e;

	for (int t = 0; t < 5; t++) {
		double m = -INFINITY, s = 0;
		if (lab[t] <= 0)
			continue;
		for (int v = 0; v < 7; v++)
			m = fmax(m, c.logits[t * 7 + v]);
		for (int v = 0; v < 7; v++)
			s += exp(c.logits[t * 7 + v] - m);
		ref += m + log(s) - c.logits[t * 7 + lab[t]];
	}
	memcpy(g, c.logits, 5 * 7 * 4);
	L = xent_fw_bw(g, 5, 7, lab, 0, 1.0f, 1, &n);
	T_EQ_I(n, 3);
	T_OK(fabs(L - ref) < 1e-9 * fabs(ref), "loss %.12g vs %.12g", L, ref);
	T_OK(g[7] == 0 && g[3 * 7 + 2] == 0, "ignored rows have no gradient");
	e = fd_check(loss_f, &c, c.logits, g, 35, 1e-3);
	T_OK(e < 1e-3, "loss gradient: %.3g", e);
	free(c.logits); free(c.tmp); free(g);
}

/* ---------------------------------------------------------- attention */

struct at_ctx {
	attn_spec sp;
	float *q, *k, *v, *out, *P, *dy;
	int64_t T, pos;
	int in;
};

static double at_f(void *p)
{
	struct at_ctx *c = p;
	attn_fw(&c->sp, c->q, c->in, c->k, c->v, c->in, c->T, c->pos, c->out, c->in, c->P);
	return dot(c->out, c->dy, c->T * c->in);
}

static void test_attn(void)
{
	int heads = 3, dk = 4, in = 12;
	int64_t T = 5, pos = 3, S = pos + T;
	float *bias = randv((int64_t)heads * S, 1);
	struct at_ctx c = { { .causal = 1, .heads = heads, .dk = dk, .scale = 0.5f, .bias = bias, .ldb = S }, randv(T * in, 1), randv(S * in, 1),
	                    randv(S * in, 1), malloc((size_t)(T * in) * 4),
	                    malloc((size_t)(heads * T * S) * 4), randv(T * in, 1), T, pos, in };
	float *dq = calloc((size_t)(T * in), 4), *dk_ = calloc((size_t)(S * in), 4);
	float *dv = calloc((size_t)(S * in), 4), *work = malloc((size_t)(heads * T * S) * 4);
	float *dbias = calloc((size_t)(heads * S), 4);
	double *ref = malloc((size_t)(T * in) * 8), e;

	at_f(&c);
	for (int h = 0; h < heads; h++)
		for (int64_t i = 0; i < T; i++) {
			double sc[16], m = -INFINITY, s = 0;
			for (int64_t j = 0; j <= pos + i; j++) {
				double a = 0;
				for (int x = 0; x < dk; x++)
					a += (double)c.q[i * in + h * dk + x] * c.k[j * in + h * dk + x];
				sc[j] = 0.5 * a + bias[h * S + pos + i - j];
				m = fmax(m, sc[j]);
			}
			for (int64_t j = 0; j <= pos + i; j++)
				s += (sc[j] = exp(sc[j] - m));
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int64_t j = 0; j <= pos + i; j++)
					o += sc[j] / s * c.v[j * in + h * dk + x];
				ref[i * in + h * dk + x] = o;
			}
		}
	e = relerr(c.out, ref, T * in);
	T_OK(e < 1e-5, "causal attention forward: %.3g", e);
	attn_bw(&c.sp, c.q, in, c.k, c.v, in, T, pos, c.dy, in, c.P, dq, dk_, dv, work);
	for (int h = 0; h < heads; h++)
		for (int64_t i = 0; i < T; i++)
			for (int64_t j = 0; j <= pos + i; j++)
				dbias[h * S + pos + i - j] += c.P[(h * T + i) * S + j];
	e = fd_check(at_f, &c, c.q, dq, T * in, 1e-3);
	T_OK(e < 2e-3, "dq: %.3g", e);
	e = fd_check(at_f, &c, c.k, dk_, S * in, 1e-3);
	T_OK(e < 2e-3, "dk: %.3g", e);
	e = fd_check(at_f, &c, c.v, dv, S * in, 1e-3);
	T_OK(e < 2e-3, "dv: %.3g", e);
	e = fd_check(at_f, &c, bias, dbias, heads * S, 1e-3);
	T_OK(e < 2e-3, "dbias: %.3g", e);
	free(bias); free(c.q); free(c.k); free(c.v); free(c.out); free(c.P); free(c.dy);
	free(dq); free(dk_); free(dv); free(work); free(dbias); free(ref);
}

/* Full (encoder) attention: every query sees every key. */
static void test_attn_full(void)
{
	int heads = 2, dk = 3, in = 6;
	int64_t T = 6;
	struct at_ctx c = { { .causal = 0, .heads = heads, .dk = dk, .scale = 0.7f }, randv(T * in, 1),
	                    randv(T * in, 1), randv(T * in, 1), malloc((size_t)(T * in) * 4),
	                    malloc((size_t)(heads * T * T) * 4), randv(T * in, 1), T, 0, in };
	float *dq = calloc((size_t)(T * in), 4), *dk_ = calloc((size_t)(T * in), 4);
	float *dv = calloc((size_t)(T * in), 4), *work = malloc((size_t)(heads * T * T) * 4);
	double *ref = malloc((size_t)(T * in) * 8), e;

	at_f(&c);
	for (int h = 0; h < heads; h++)
		for (int64_t i = 0; i < T; i++) {
			double sc[8], m = -INFINITY, sum = 0;
			for (int64_t j = 0; j < T; j++) {
				double a = 0;
				for (int x = 0; x < dk; x++)
					a += (double)c.q[i * in + h * dk + x] * c.k[j * in + h * dk + x];
				m = fmax(m, sc[j] = 0.7 * a);
			}
			for (int64_t j = 0; j < T; j++)
				sum += (sc[j] = exp(sc[j] - m));
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int64_t j = 0; j < T; j++)
					o += sc[j] / sum * c.v[j * in + h * dk + x];
				ref[i * in + h * dk + x] = o;
			}
		}
	e = relerr(c.out, ref, T * in);
	T_OK(e < 1e-5, "full attention forward: %.3g", e);
	attn_bw(&c.sp, c.q, in, c.k, c.v, in, T, 0, c.dy, in, c.P, dq, dk_, dv, work);
	e = fd_check(at_f, &c, c.q, dq, T * in, 1e-3);
	T_OK(e < 2e-3, "full dq: %.3g", e);
	e = fd_check(at_f, &c, c.k, dk_, T * in, 1e-3);
	T_OK(e < 2e-3, "full dk: %.3g", e);
	e = fd_check(at_f, &c, c.v, dv, T * in, 1e-3);
	T_OK(e < 2e-3, "full dv: %.3g", e);
	free(c.q); free(c.k); free(c.v); free(c.out); free(c.P); free(c.dy);
	free(dq); free(dk_); free(dv); free(work); free(ref);
}

/* Attention of q [R, nh dk] (rows ldq apart) over head-major K, V
 * [nh][L][dk] in double: ref [R, nh dk], lse [R nh]. */
static void attn_ref(const float *q, int64_t R, int64_t ldq, int nh, int dk, const float *K,
                     const float *V, int64_t L, double *ref, double *lse)
{
	double *sc = malloc((size_t)(L ? L : 1) * sizeof *sc);

	for (int64_t r = 0; r < R; r++)
		for (int h = 0; h < nh; h++) {
			const float *qh = q + r * ldq + h * dk;
			const float *Kh = K + (int64_t)h * L * dk, *Vh = V + (int64_t)h * L * dk;
			double m = -INFINITY, t = 0;

			for (int64_t j = 0; j < L; j++) {
				sc[j] = 0;
				for (int x = 0; x < dk; x++)
					sc[j] += (double)qh[x] * Kh[j * dk + x];
				m = fmax(m, sc[j]);
			}
			for (int64_t j = 0; j < L; j++)
				t += exp(sc[j] - m);
			lse[r * nh + h] = m + log(t);
			for (int x = 0; x < dk; x++) {
				double o = 0;
				for (int64_t j = 0; j < L; j++)
					o += exp(sc[j] - m) / t * Vh[j * dk + x];
				ref[(r * nh + h) * dk + x] = o;
			}
		}
	free(sc);
}

struct xa_ctx { xattn_work *w; float *qp, *E, *ctx, *lse, *dy; int64_t R, L; int d; };

static double xa_f(void *p)
{
	struct xa_ctx *c = p;
	xattn_fw(c->w, c->qp, c->R, c->E, c->L, c->d, c->ctx, c->lse);
	return dot(c->ctx, c->dy, c->R * c->d);
}

/* bf16 states (--compute bf16): on operands that are bf16 values
 * already, the kernels form the same exact products as fp32, so the
 * context is fp32's up to the order of the sums (1e-5 of the largest
 * value is some 100 roundings of it); d = 96 runs the 32-column
 * groups and the 64-column strips of compute/xkern.c. */
/* xattn_fw_bf16 against xattn_fw on the same bf16-valued queries and
 * states: they differ by the bf16 rounding of the weights in the
 * accumulation, each off by at most 2^-9 of itself, so the context by at
 * most 2^-9 of the largest |E| (plus fp32's sums, 1e-5). Scores of a few
 * units: many weights count, not one. */
static void test_xattn_bf16(void)
{
	int64_t R = 13, L = XATTN_CHUNK + 301;
	int d = 96;
	lc_err err;
	xattn_work *w = xattn_work_new(R, d, 3, &err);
	float *qp = randv(R * d, 0.1), *E = randv(L * d, 1);
	float *ctx = malloc((size_t)(R * d) * 4), *ctx16 = malloc((size_t)(R * d) * 4);
	uint16_t *E16 = malloc((size_t)(L * d) * sizeof *E16);
	double m = 0, g = 0, emax = 0;

	if (!T_OK(w && qp && E && ctx && ctx16 && E16, "memory"))
		return;
	for (int64_t i = 0; i < R * d; i++)
		qp[i] = cmp_bf16_round(qp[i]);
	for (int64_t i = 0; i < L * d; i++) {
		E16[i] = lc_f32_to_bf16(E[i]);
		E[i] = lc_bf16_to_f32(E16[i]);
		emax = fmax(emax, fabs((double)E[i]));
	}
	xattn_fw(w, qp, R, E, L, d, ctx, NULL);
	xattn_fw_bf16(w, qp, R, E16, L, d, ctx16, NULL);
	for (int64_t i = 0; i < R * d; i++) {
		m = fmax(m, fabs((double)ctx16[i] - ctx[i]));
		g = fmax(g, fabs((double)ctx[i]));
	}
	T_OK(m <= ldexp(emax, -9) + 1e-5 * g && g > 0,
	     "bf16 states: fp32's context on bf16 values, bf16 weights (%.3g, bound %.3g)", m,
	     ldexp(emax, -9) + 1e-5 * g);
	xattn_work_free(w);
	free(qp); free(E); free(ctx); free(ctx16); free(E16);
}

/* xattn_fw_w16 (fp32 arithmetic over bf16 states held as such) against
 * xattn_fw on their float32 copy: the same bits, and the same lse, on
 * the paths that widen (AVX2 and plain C; the processor's own where it
 * has no AVX-512), over many parts (PART_MIN rows each) and chunks, the
 * rows of 4 beams and greedy's 12, on 1 and 3 threads. */
static void test_xattn_w16(void)
{
	int64_t L = 64 * (XATTN_CHUNK + 44) + 5;
	int d = 72;

	for (int simd = 2; simd >= 0; simd -= 2)
		for (int64_t R = 12; R <= 48; R += 36)
			for (int nth = 1; nth <= 3; nth += 2) {
				lc_err err;
				xattn_work *w = xattn_work_new(R, d, nth, &err);
				float *qp = randv(R * d, 0.3), *E = randv(L * d, 1);
				float *c1 = malloc((size_t)(R * d) * 4), *c2 = malloc((size_t)(R * d) * 4);
				float *l1 = malloc((size_t)R * 4), *l2 = malloc((size_t)R * 4);
				uint16_t *E16 = malloc((size_t)(L * d) * sizeof *E16);

				if (!T_OK(w && qp && E && c1 && c2 && l1 && l2 && E16, "memory"))
					return;
				cmp_xk_simd(simd);
				for (int64_t i = 0; i < L * d; i++) {
					E16[i] = lc_f32_to_bf16(E[i]);
					E[i] = lc_bf16_to_f32(E16[i]);
				}
				xattn_fw(w, qp, R, E, L, d, c1, l1);
				xattn_fw_w16(w, qp, R, E16, L, d, c2, l2);
				T_OK(cmp_xk_widens() && !memcmp(c1, c2, (size_t)(R * d) * 4) &&
				     !memcmp(l1, l2, (size_t)R * 4),
				     "bf16 states held (path %d, %lld rows, %d threads): the bits of their "
				     "float32 copy", simd, (long long)R, nth);
				cmp_xk_simd(1);
				xattn_work_free(w);
				free(qp); free(E); free(c1); free(c2); free(l1); free(l2); free(E16);
			}
}

static void test_xattn(void)
{
	/* L over two chunks, split over three threads */
	int64_t R = 6, L = XATTN_CHUNK + 300;
	int d = 8;
	lc_err err;
	struct xa_ctx c = { xattn_work_new(R, d, 3, &err), randv(R * d, 0.5), randv(L * d, 1),
	                    malloc((size_t)(R * d) * 4), malloc((size_t)R * 4), randv(R * d, 1), R, L, d };
	float *dqp = malloc((size_t)(R * d) * 4), *dE = calloc((size_t)(L * d), 4);
	double *ref = malloc((size_t)(R * d) * 8), *lse = malloc((size_t)R * 8), e, lerr = 0;

	if (!T_OK(c.w != NULL && ref && lse, "%s", err.msg))
		return;
	xa_f(&c);
	attn_ref(c.qp, R, d, 1, d, c.E, c.E, L, ref, lse);   /* one head, K = V = E */
	for (int64_t r = 0; r < R; r++)
		lerr = fmax(lerr, fabs(c.lse[r] - lse[r]));
	e = relerr(c.ctx, ref, R * d);
	T_OK(e < 1e-5, "cross-attention forward: %.3g", e);
	T_OK(lerr < 1e-4, "log-sum-exp: %.3g", lerr);
	T_OK(xattn_bw(c.qp, R, c.E, L, d, c.ctx, c.lse, c.dy, dqp, dE, &err) == 0, "%s", err.msg);
	e = fd_check(xa_f, &c, c.qp, dqp, R * d, 1e-3);
	T_OK(e < 2e-3, "dqp: %.3g", e);
	e = fd_check(xa_f, &c, c.E, dE, L * d, 1e-3);
	T_OK(e < 2e-3, "dE: %.3g", e);
	/* nothing to attend to */
	xattn_fw(c.w, c.qp, R, c.E, 0, d, c.ctx, c.lse);
	T_OK(c.ctx[0] == 0 && c.ctx[R * d - 1] == 0 && c.lse[0] == -INFINITY, "L = 0: zero context");
	xattn_work_free(c.w);
	free(c.qp); free(c.E); free(c.ctx); free(c.lse); free(c.dy); free(dqp); free(dE); free(ref);
	free(lse);
}

/* q (nq values) rounded to bf16; K and V (n each) rounded, their bf16
 * bits into K16 and V16; returns the largest |V|. */
static double to_bf16_kv(float *q, int64_t nq, float *K, float *V, uint16_t *K16, uint16_t *V16,
                         int64_t n)
{
	double vmax = 0;

	for (int64_t i = 0; i < nq; i++)
		q[i] = cmp_bf16_round(q[i]);
	for (int64_t i = 0; i < n; i++) {
		K16[i] = lc_f32_to_bf16(K[i]);
		K[i] = lc_bf16_to_f32(K16[i]);
		V16[i] = lc_f32_to_bf16(V[i]);
		V[i] = lc_bf16_to_f32(V16[i]);
		vmax = fmax(vmax, fabs((double)V[i]));
	}
	return vmax;
}

/* xattn_fw_kv (a cross-attention cache's keys and values, several heads
 * at once) against attention in double: three heads of width 20 (the
 * kernels' masked tails), queries and contexts with row strides wider
 * than the heads (the padding untouched), L over three parts; the same
 * bits on 1 and 3 threads; bf16 keys and values within the rounding of
 * the weights and values (2^-9 of the largest |V| each); L = 0. */
static void test_xattn_kv(void)
{
	int nh = 3, dk = 20, in = nh * dk;
	int64_t R = 5, L = 2 * XATTN_CHUNK + 77, ldq = in + 7, ldc = in + 3;
	lc_err err;
	xattn_work *w1 = xattn_work_new(R * nh, dk, 1, &err), *w3 = xattn_work_new(R * nh, in, 3, &err);
	float *q = randv(R * ldq, 0.3), *K = randv(nh * L * dk, 1), *V = randv(nh * L * dk, 1);
	float *c1 = malloc((size_t)(R * ldc) * 4), *c3 = malloc((size_t)(R * ldc) * 4);
	float *l1 = malloc((size_t)(R * nh) * 4), *l3 = malloc((size_t)(R * nh) * 4);
	double *ref = malloc((size_t)(R * in) * 8), *lse = malloc((size_t)(R * nh) * 8);
	uint16_t *K16 = malloc((size_t)(nh * L * dk) * 2), *V16 = malloc((size_t)(nh * L * dk) * 2);
	double e = 0, le = 0, g = 0, vmax = 0;
	int pad = 1;

	if (!T_OK(w1 && w3 && q && K && V && c1 && c3 && l1 && l3 && ref && lse && K16 && V16,
	          "memory"))
		return;
	for (int64_t i = 0; i < R * ldc; i++)
		c1[i] = c3[i] = 7.0f;
	xattn_fw_kv(w1, q, R, ldq, nh, dk, K, V, L, dk, L * dk, c1, ldc, l1);
	xattn_fw_kv(w3, q, R, ldq, nh, dk, K, V, L, dk, L * dk, c3, ldc, l3);
	attn_ref(q, R, ldq, nh, dk, K, V, L, ref, lse);
	for (int64_t r = 0; r < R; r++) {
		for (int x = 0; x < in; x++) {
			e = fmax(e, fabs(c3[r * ldc + x] - ref[r * in + x]));
			g = fmax(g, fabs(ref[r * in + x]));
		}
		for (int x = in; x < ldc; x++)
			pad &= c1[r * ldc + x] == 7.0f && c3[r * ldc + x] == 7.0f;
		for (int h = 0; h < nh; h++)
			le = fmax(le, fabs(l3[r * nh + h] - lse[r * nh + h]));
	}
	T_OK(e <= 1e-5 * g && g > 0, "keys and values: the context within 1e-5 (%.3g of %.3g)", e, g);
	T_OK(le < 1e-4, "keys and values: log-sum-exp (%.3g)", le);
	T_OK(pad, "the columns past the heads untouched");
	T_OK(!memcmp(c1, c3, (size_t)(R * ldc) * 4) && !memcmp(l1, l3, (size_t)(R * nh) * 4),
	     "the same bits on 1 and 3 threads");

	/* bf16: fp32's on the same bf16 values, the weights rounded */
	vmax = to_bf16_kv(q, R * ldq, K, V, K16, V16, nh * L * dk);
	xattn_fw_kv(w3, q, R, ldq, nh, dk, K, V, L, dk, L * dk, c1, ldc, NULL);
	xattn_fw_kv_bf16(w3, q, R, ldq, nh, dk, K16, V16, L, dk, L * dk, c3, ldc, NULL);
	e = 0;
	for (int64_t r = 0; r < R; r++)
		for (int x = 0; x < in; x++)
			e = fmax(e, fabs((double)c3[r * ldc + x] - c1[r * ldc + x]));
	T_OK(e <= ldexp(vmax, -9) + 1e-5 * g, "bf16 keys and values (%.3g, bound %.3g)", e,
	     ldexp(vmax, -9) + 1e-5 * g);

	xattn_fw_kv(w3, q, R, ldq, nh, dk, K, V, 0, dk, 0, c3, ldc, l3);
	T_OK(c3[0] == 0 && c3[in - 1] == 0 && c3[(R - 1) * ldc] == 0 && l3[0] == -INFINITY,
	     "L = 0: zero context");
	xattn_work_free(w1);
	xattn_work_free(w3);
	free(q); free(K); free(V); free(c1); free(c3); free(l1); free(l3); free(ref); free(lse);
	free(K16); free(V16);
}

/* bf16 keys and values over parts longer than XATTN_CHUNK (a bf16
 * cache takes chunks of up to 256 KiB of keys, so each part here is one
 * chunk): within the weights' rounding of fp32's on the same values, and
 * the same bits on 1 and 3 threads. */
static void test_xattn_kv_long(void)
{
	int nh = 3, dk = 20, in = nh * dk;
	int64_t R = 4, L = 64 * (XATTN_CHUNK + 44) + 5;
	lc_err err;
	xattn_work *w1 = xattn_work_new(R * nh, dk, 1, &err), *w3 = xattn_work_new(R * nh, dk, 3, &err);
	float *q = randv(R * in, 0.3), *K = randv(nh * L * dk, 1), *V = randv(nh * L * dk, 1);
	float *c = malloc((size_t)(R * in) * 4), *c1 = malloc((size_t)(R * in) * 4);
	float *c3 = malloc((size_t)(R * in) * 4);
	uint16_t *K16 = malloc((size_t)(nh * L * dk) * 2), *V16 = malloc((size_t)(nh * L * dk) * 2);
	double e = 0, vmax, g = 0;

	if (!T_OK(w1 && w3 && q && K && V && c && c1 && c3 && K16 && V16, "memory"))
		return;
	vmax = to_bf16_kv(q, R * in, K, V, K16, V16, nh * L * dk);
	xattn_fw_kv(w1, q, R, in, nh, dk, K, V, L, dk, L * dk, c, in, NULL);
	xattn_fw_kv_bf16(w1, q, R, in, nh, dk, K16, V16, L, dk, L * dk, c1, in, NULL);
	xattn_fw_kv_bf16(w3, q, R, in, nh, dk, K16, V16, L, dk, L * dk, c3, in, NULL);
	for (int64_t i = 0; i < R * in; i++) {
		e = fmax(e, fabs((double)c1[i] - c[i]));
		g = fmax(g, fabs((double)c[i]));
	}
	T_OK(e <= ldexp(vmax, -9) + 1e-5 * g && g > 0, "bf16, long parts: %.3g (bound %.3g)", e,
	     ldexp(vmax, -9) + 1e-5 * g);
	T_OK(!memcmp(c1, c3, (size_t)(R * in) * 4), "bf16, long parts: the same bits on 1 and 3 threads");
	xattn_work_free(w1);
	xattn_work_free(w3);
	free(q); free(K); free(V); free(c); free(c1); free(c3); free(K16); free(V16);
}

/* y [n, dout] = x W^T + b in double */
static void lin_ref(const float *x, int64_t n, int din, const float *W, const float *b, int dout,
                    float *y)
{
	for (int64_t i = 0; i < n; i++)
		for (int o = 0; o < dout; o++) {
			double t = b ? b[o] : 0;
			for (int k = 0; k < din; k++)
				t += (double)x[i * din + k] * W[(int64_t)o * din + k];
			y[i * dout + o] = (float)t;
		}
}

/* n values k / den, k a small integer in [-2, 2]: products and their
 * sums exact in float32 and in bf16 at the sizes below. */
static float *dyadic(int64_t n, double den)
{
	float *p = randv(n, 1);

	for (int64_t i = 0; p && i < n; i++)
		p[i] = (float)(floor(p[i] * 2.5 + 2.5) - 2) / (float)den;
	return p;
}

/* xcache: two layers (biases in the first only) filled from float32
 * states and from bf16 states, each attended against attention in double
 * over K = E W_k^T + b_k, V = E W_v^T + b_v; and a bf16 cache. The values
 * are multiples of 1/32 of a few units, exact in bf16, so that the bf16
 * cache holds the same keys and values and differs from float32's only
 * by the weights' rounding in the accumulation: 2^-9 of the largest |V|
 * (xattn_fw_kv_bf16). */
static void test_xcache(void)
{
	int d = 24, nh = 2, dk = 12, in = nh * dk, nl = 2;
	int64_t L = XATTN_CHUNK + 40, R = 3;
	lc_err err = { "" };
	float *E = dyadic(L * d, 4), *q = dyadic(R * in, 16), *ctx = malloc((size_t)(R * in) * 4);
	float *c32 = malloc((size_t)(nl * R * in) * 4);
	float *Kr = malloc((size_t)(L * in) * 4), *Vr = malloc((size_t)(L * in) * 4);
	float *Kh = malloc((size_t)(L * in) * 4), *Vh = malloc((size_t)(L * in) * 4);
	double *ref = malloc((size_t)(R * in) * 8), *lse = malloc((size_t)(R * nh) * 8);
	uint16_t *E16 = malloc((size_t)(L * d) * 2);
	xcache_w wt[2] = { { dyadic(in * d, 8), dyadic(in, 32), dyadic(in * d, 8), dyadic(in, 32) },
	                   { dyadic(in * d, 8), NULL, dyadic(in * d, 8), NULL } };
	xattn_work *w = xattn_work_new(R * nh, d, 2, &err);

	if (!T_OK(E && q && ctx && c32 && Kr && Vr && Kh && Vh && ref && lse && E16 && w, "memory"))
		return;
	T_EQ_I((int64_t)xcache_layer_bytes(L, nh, dk, 0), 2 * L * in * 4);
	T_EQ_I((int64_t)xcache_layer_bytes(L, nh, dk, 1), 2 * L * in * 2);
	for (int64_t i = 0; i < L * d; i++)
		E16[i] = lc_f32_to_bf16(E[i]);
	for (int src = 0; src < 3; src++) {   /* float32 E, bf16 E, bf16 cache */
		xcache *c = xcache_new(nl, L, nh, dk, src == 2, &err);
		const char *what[] = { "float32 states", "bf16 states", "a bf16 cache" };

		if (!T_OK(c && xcache_fill(c, src == 1 ? NULL : E, E16, d, wt, 2, &err) == 0, "%s",
		          err.msg)) {
			xcache_free(c);
			continue;
		}
		T_EQ_I(xcache_layers(c), nl);
		for (int li = 0; li < nl; li++) {
			double e = 0, g = 0, vmax = 0;

			lin_ref(E, L, d, wt[li].wk, wt[li].bk, in, Kr);
			lin_ref(E, L, d, wt[li].wv, wt[li].bv, in, Vr);
			for (int h = 0; h < nh; h++)   /* head-major */
				for (int64_t j = 0; j < L; j++)
					for (int x = 0; x < dk; x++) {
						Kh[((int64_t)h * L + j) * dk + x] = Kr[j * in + h * dk + x];
						Vh[((int64_t)h * L + j) * dk + x] = Vr[j * in + h * dk + x];
						vmax = fmax(vmax, fabs((double)Vr[j * in + h * dk + x]));
					}
			attn_ref(q, R, in, nh, dk, Kh, Vh, L, ref, lse);
			xcache_attend(c, li, w, q, R, in, ctx, in);
			for (int64_t i = 0; i < R * in; i++)
				g = fmax(g, fabs(ref[i]));
			if (src < 2) {
				for (int64_t i = 0; i < R * in; i++)
					e = fmax(e, fabs(ctx[i] - ref[i]));
				T_OK(e <= 1e-5 * g && g > 0, "layer %d from %s: within 1e-5 (%.3g of %.3g)",
				     li, what[src], e, g);
				memcpy(c32 + (size_t)li * R * in, ctx, (size_t)(R * in) * 4);
				continue;
			}
			for (int64_t i = 0; i < R * in; i++)
				e = fmax(e, fabs((double)ctx[i] - c32[(size_t)li * R * in + i]));
			T_OK(e <= ldexp(vmax, -9) + 1e-5 * g, "layer %d, %s: %.3g (bound %.3g)", li,
			     what[src], e, ldexp(vmax, -9) + 1e-5 * g);
		}
		xcache_free(c);
	}
	xattn_work_free(w);
	for (int li = 0; li < nl; li++) {
		free((void *)wt[li].wk); free((void *)wt[li].bk);
		free((void *)wt[li].wv); free((void *)wt[li].bv);
	}
	free(E); free(q); free(ctx); free(c32); free(Kr); free(Vr); free(Kh); free(Vh); free(ref);
	free(lse); free(E16);
}

/* ops/vmath against libm in double: exp within 3 ulp over [-87.3, 88],
 * 0 below; GELU within 3e-7 |x|; gelu_new within 4e-7 |x| (the error of
 * exp and of the rounded argument 2y, measured 2.4e-7); the sum of
 * squares, the products, sums and axpby exact to their roundings; the
 * AVX-512, AVX2 and scalar paths (AVX-512's exp and gelu_new the same bits
 * as AVX2's). */
static void test_vmath(void)
{
	enum { N = 200003 };
	float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *y2 = malloc(N * sizeof *y2);
	float *y3 = malloc(N * sizeof *y3);
	double we = 0, wg = 0, sum, want;

	if (!T_OK(x && y && y2 && y3, "memory"))
		return;
	for (int simd = 2; simd >= 0; simd--) {
		/* 2: AVX2 at most, 1: AVX-512 where the CPU has it, 0: scalar */
		vm_simd(simd);
		we = wg = 0;
		for (int i = 0; i < N; i++)
			x[i] = -87.3f + 175.3f * (float)i / (N - 1);
		sum = vm_exp_sum(x, 0.0f, y, N);
		want = 0;
		for (int i = 0; i < N; i++) {
			double e = exp((double)x[i]);
			we = fmax(we, fabs(y[i] - e) / e);
			want += y[i];
		}
		T_OK(we <= 3 * 0x1p-23, "simd %d: exp relative error %.3g", simd, we);
		if (simd == 2)
			memcpy(y2, y, N * sizeof *y);
		else if (simd == 1)
			T_OK(!memcmp(y2, y, N * sizeof *y), "exp: AVX-512's lanes are AVX2's");
		T_OK(fabs(sum - want) <= 1e-12 * want, "simd %d: the sum", simd);
		x[0] = -INFINITY;
		x[1] = -FLT_MAX;
		x[2] = -87.5f;
		x[3] = -200.0f;
		x[4] = 0.0f;
		vm_exp_sum(x, 0.0f, y, 5);
		T_OK(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 0 && y[4] == 1.0f,
		     "simd %d: exp underflows to 0, exp(0) = 1", simd);
		x[0] = 1.0f;
		vm_exp_sum(x, 1.0f + 3e38f, y, 1);
		T_OK(y[0] == 0, "simd %d: a masked score (x - FLT_MAX) gives 0", simd);
		for (int i = 0; i < N; i++)
			x[i] = -12.0f + 24.0f * (float)i / (N - 1);
		vm_gelu(x, y, N);
		for (int i = 0; i < N; i++) {
			double g = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0)));
			wg = fmax(wg, fabs(y[i] - g) / (fabs(x[i]) + 1e-30));
		}
		T_OK(wg <= 3e-7, "simd %d: GELU error / |x| %.3g", simd, wg);
		{
			double wt = 0;
			long double ss = 0, ss0 = 0, ss1 = 0;   /* float squares are exact in it */
			float *g = malloc(N * sizeof *g);
			int exact = 1;
			if (!T_OK(g != NULL, "memory"))
				break;
			for (int i = 0; i < N; i++)
				g[i] = 1.0f + (float)(i % 7) / 8.0f;      /* exact products */
			vm_gelu_tanh(x, g, y, N);
			for (int i = 0; i < N; i++) {
				double v = x[i], t = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
				wt = fmax(wt, fabs(y[i] / g[i] - t) / (fabs(v) + 1e-30));
			}
			T_OK(wt <= 4e-7, "simd %d: gelu_new error / |x| %.3g", simd, wt);
			if (simd == 2)
				memcpy(y3, y, N * sizeof *y);
			else if (simd == 1)
				T_OK(!memcmp(y3, y, N * sizeof *y), "gelu_new: AVX-512's lanes are AVX2's");
			vm_gelu_tanh(x, NULL, g, N);
			for (int i = 0; i < N; i++)
				exact &= g[i] * (1.0f + (float)(i % 7) / 8.0f) == y[i];
			T_OK(exact, "simd %d: gelu_new without a gate", simd);
			vm_mul(x, x, g, N);
			exact = 1;
			for (int i = 0; i < N; i++)
				exact &= g[i] == x[i] * x[i];
			T_OK(exact, "simd %d: mul", simd);
			memcpy(y, x, N * sizeof *y);
			vm_madd(y, 1.0f, g, y, N);
			exact = 1;
			for (int i = 0; i < N; i++)
				exact &= y[i] == x[i] + g[i];
			T_OK(exact, "simd %d: add (madd by 1, in place)", simd);
			vm_addc(x, 0.3f, y, N);
			exact = 1;
			for (int i = 0; i < N; i++)
				exact &= y[i] == x[i] + 0.3f;
			T_OK(exact, "simd %d: add a constant", simd);
			memcpy(y, x, N * sizeof *y);
			vm_madd(g, 0.3f, y, y, N);
			exact = 1;
			for (int i = 0; i < N; i++)
				exact &= y[i] == g[i] + 0.3f * x[i];
			T_OK(exact, "simd %d: madd (in place), as its C expression", simd);
			vm_scale_mul(x, 0.25f, x, g, N);
			exact = 1;
			for (int i = 0; i < N; i++)
				exact &= g[i] == x[i] * (x[i] * 0.25f);
			T_OK(exact, "simd %d: scale_mul", simd);
			/* a double sum of n terms: within n 2^-53 of the sum of magnitudes */
			for (int i = 0; i < N; i++) {
				long double t = (long double)x[i] * x[i];
				ss += t;
				if (i < 5)
					ss0 += t;
				if (i < 797)    /* 24 x 32 + 3 x 8 + 5 */
					ss1 += t;
			}
			T_OK(fabsl(vm_sumsq(x, N) - ss) <= N * 0x1p-53L * ss &&
			     fabsl(vm_sumsq(x, 5) - ss0) <= 5 * 0x1p-53L * ss0 &&
			     fabsl(vm_sumsq(x, 797) - ss1) <= 797 * 0x1p-53L * ss1, "simd %d: sumsq", simd);
			free(g);
		}
		T_OK(vm_max(x, N) == 12.0f && vm_max(x, 5) == x[4] && vm_max(x, 0) == -INFINITY,
		     "simd %d: max", simd);
		{
			/* the largest at every place of 1 to 40 values (AVX-512's
			 * blocks of 16, AVX2's of 8, the tails) */
			float v[40];
			int found = 1;

			for (int n = 1; n <= 40; n++)
				for (int at = 0; at < n; at++) {
					for (int i = 0; i < n; i++)
						v[i] = -1.0f - (float)((i * 7) % 13);
					v[at] = 0.5f;
					found &= vm_max(v, n) == 0.5f;
				}
			T_OK(found, "simd %d: max at every place", simd);
		}
		{
			/* exp to bf16: vm_exp_sum, then cmp_bf16_pack, in one pass: the
			 * same bits and the same sum, tails and underflows included */
			enum { M = 1000 };
			static float a[M], b[M];
			static uint16_t h1[M], h2[M];
			int same = 1;

			for (int i = 0; i < M; i++)
				a[i] = -100.0f + 110.0f * (float)((i * 389) % M) / M;
			a[3] = -INFINITY;
			a[5] = -87.3f;
			for (int n = 0; n <= M; n += n < 40 ? 1 : 123) {
				double s1, s2;

				memcpy(b, a, sizeof a);
				s1 = vm_exp_sum(b, 2.5f, b, n);
				cmp_bf16_pack(b, 1, n, n, h1, n);
				memcpy(b, a, sizeof a);
				s2 = vm_exp_sum_bf16(b, 2.5f, h2, n);
				same &= s1 == s2 && !memcmp(h1, h2, (size_t)n * sizeof *h1);
			}
			T_OK(same, "simd %d: exp to bf16 with its sum, as exp then pack", simd);
		}
		vm_scale(x, 0.5, y, N);
		T_OK(y[N - 1] == 6.0f && y[7] == x[7] * 0.5f, "simd %d: scale", simd);
		{
			int exact = 1;

			for (int i = 0; i < N; i++)
				y[i] = 1.0f / (float)(i + 1);
			vm_axpby(x, 0.3f, 0.7f, y, N);
			for (int i = 0; i < N; i++) {
				float w = 1.0f / (float)(i + 1), p = w * 0.7f, q = x[i] * 0.3f;
				exact &= y[i] == p + q;
			}
			T_OK(exact, "simd %d: axpby, as its C expression", simd);
		}
	}
	vm_simd(1);
	free(x);
	free(y);
	free(y2);
	free(y3);
}

/* attn_cache_reorder: every (source row, layer, cache) keeps its values
 * under beam reorders (repeats, any order) and under dropping rows (a
 * finished document: in place), against a direct copy. */
static void test_cache_reorder(void)
{
	enum { NL = 3, RCAP = 5, STRIDE = 7, USED = 4 };
	static const int32_t cases[][RCAP + 2] = {
		/* nin, nout, src... */
		{ 5, 5, 4, 3, 2, 1, 0 }, { 5, 5, 0, 0, 3, 3, 1 }, { 5, 3, 1, 3, 4 },
		{ 5, 2, 0, 4 }, { 4, 2, 2, 3 }, { 5, 3, 2, 0, 1 }, { 3, 3, 0, 1, 2 },
	};
	float c0[NL * RCAP * STRIDE], c1[NL * RCAP * STRIDE], tmp[RCAP * STRIDE];
	float *caches[2] = { c0, c1 };
	lc_err err;

	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		int nin = cases[k][0], nout = cases[k][1], good = 1;
		const int32_t *src = &cases[k][2];
		for (int i = 0; i < NL * RCAP * STRIDE; i++) {
			c0[i] = (float)i;
			c1[i] = (float)-i;
		}
		T_OK(attn_cache_reorder(caches, 2, NL, RCAP, nin, nout, STRIDE, USED, src, tmp, &err) == 0,
		     "case %zu: %s", k, err.msg);
		for (int c = 0; c < 2; c++)
			for (int li = 0; li < NL; li++)
				for (int r = 0; r < nout; r++)
					for (int j = 0; j < USED; j++) {
						float want = (float)((li * RCAP + src[r]) * STRIDE + j) * (c ? -1 : 1);
						good &= caches[c][(li * RCAP + r) * STRIDE + j] == want;
					}
		T_OK(good, "case %zu: rows keep their histories", k);
	}
	T_OK(attn_cache_reorder(caches, 2, NL, RCAP, 4, 2, STRIDE, USED, (int32_t[]){ 0, 4 }, tmp,
	                        &err) < 0 && strstr(err.msg, "out of range"), "%s", err.msg);
	T_OK(attn_cache_reorder(caches, 2, NL, RCAP, 6, 2, STRIDE, USED, (int32_t[]){ 0, 1 }, tmp,
	                        &err) < 0, "more rows than the caches hold");
}

int main(void)
{
	T_RUN(test_vmath);
	cmp_init(NULL);
	T_RUN(test_rmsnorm);
	T_RUN(test_layernorm);
	T_RUN(test_act);
	T_RUN(test_linear);
	T_RUN(test_softmax);
	T_RUN(test_embed_dropout);
	T_RUN(test_loss);
	T_RUN(test_attn);
	T_RUN(test_attn_full);
	T_RUN(test_xattn);
	T_RUN(test_xattn_bf16);
	T_RUN(test_xattn_w16);
	T_RUN(test_xattn_kv);
	T_RUN(test_xattn_kv_long);
	T_RUN(test_xcache);
	T_RUN(test_cache_reorder);
	return t_done();
}
