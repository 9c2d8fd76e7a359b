/*
 * trainfwd.c: forward with activations and backward (see trainfwd.h).
 */
/* fftw3.h before complex.h: fftwf_complex stays float[2]. */
#include <fftw3.h>

#include "train/trainfwd.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "arch/decoder.h"
#include "base/parallel.h"

#ifndef CMPLX
#define CMPLX(x, y) ((double complex)((double)(x) + _Complex_I * (double)(y)))
#endif

enum act { ACT_GELU_NEW, ACT_GELU, ACT_RELU, ACT_SILU };

struct tf_model {
	lc_config c;
	int d, dff, V, nel, ndl, nh, dkv, inner, N2, nch, gating, gated;
	enum act act;
	tf_tensor *t;                   /* [n] */
	uint32_t n, cap;
	uint64_t P;
};

/* ------------------------------------------------------------- layout */

__attribute__((format(printf, 4, 5)))
static float *reg(tf_model *tm, float *base, const uint64_t *dims4, const char *fmt, ...)
{
	va_list ap;
	tf_tensor *t;
	uint64_t n = 1;

	if (!base) {
		if (tm->n == tm->cap) {
			uint32_t nc = tm->cap ? 2 * tm->cap : 64;
			tf_tensor *nt = realloc(tm->t, nc * sizeof *nt);
			if (!nt)
				return NULL;
			tm->t = nt;
			tm->cap = nc;
		}
		t = &tm->t[tm->n++];
		memset(t, 0, sizeof *t);
		va_start(ap, fmt);
		vsnprintf(t->name, sizeof t->name, fmt, ap);
		va_end(ap);
		while (t->rank < 4 && dims4[t->rank]) {
			t->dims[t->rank] = dims4[t->rank];
			n *= dims4[t->rank++];
		}
		t->numel = n;
		t->off = tm->P;
		tm->P += n;
		return (float *)1;   /* non-NULL marker */
	}
	t = &tm->t[tm->n++];
	return base + t->off;
}

#define D1(a) ((const uint64_t[4]){ (uint64_t)(a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[4]){ (uint64_t)(a), (uint64_t)(b), 0, 0 })
#define D3(a, b, c) ((const uint64_t[4]){ (uint64_t)(a), (uint64_t)(b), (uint64_t)(c), 0 })
#define D4(a, b, c, e) ((const uint64_t[4]){ (uint64_t)(a), (uint64_t)(b), (uint64_t)(c), (uint64_t)(e) })

/* Walks the parameters in a fixed order: with base NULL registers them
 * (tm->n grows), otherwise fills v (tm->n is reset first by the caller). */
static int layout(tf_model *tm, float *base, tf_view *v)
{
	int d = tm->d, ff = tm->dff, in = tm->inner, n2 = tm->N2;
	tf_view dummy;
	int ok = 1;

	if (!v) {
		memset(&dummy, 0, sizeof dummy);
		v = &dummy;
	}
#define R(dst, dims, ...) do { float *p_ = reg(tm, base, dims, __VA_ARGS__); \
	ok &= p_ != NULL; \
	if (base) (dst) = p_; } while (0)
	R(v->shared, D2(tm->V, d), "shared.weight");
	if (!tm->c.tie_word_embeddings)
		R(v->lm_head, D2(tm->V, d), "lm_head.weight");
	else if (base)
		v->lm_head = v->shared;
	for (int i = 0; i < tm->nel; i++) {
		tf_enc_layer dl, *L = base ? &v->enc[i] : &dl;
		const char *p = "encoder.block.%d.layer.0.ssm_layer.";
		char s[96];
		snprintf(s, sizeof s, p, i);
		R(L->prenorm, D1(d), "encoder.block.%d.layer.0.layer_prenorm.weight", i);
		R(L->D, D1(d), "%sD", s);
		if (tm->gating) {
			R(L->wq, D2(d, d), "%sq_proj.weight", s);
			R(L->bq, D1(d), "%sq_proj.bias", s);
		}
		R(L->wk, D2(d, d), "%sk_proj.weight", s);
		R(L->bk, D1(d), "%sk_proj.bias", s);
		R(L->log_dt, D1(d), "%skernel.log_dt", s);
		R(L->inv_A_real, D2(d, n2), "%skernel.inv_A_real", s);
		R(L->A_imag, D2(d, n2), "%skernel.A_imag", s);
		R(L->B, D3(d, n2, 2), "%skernel.B", s);
		R(L->C, D4(tm->nch, d, n2, 2), "%skernel.C", s);
		R(L->wo, D2(d, d), "%soutput_linear.weight", s);
		R(L->bo, D1(d), "%soutput_linear.bias", s);
		R(L->ln, D1(d), "encoder.block.%d.layer.1.layer_norm.weight", i);
		if (tm->gated) {
			R(L->wi0, D2(ff, d), "encoder.block.%d.layer.1.DenseReluDense.wi_0.weight", i);
			R(L->wi1, D2(ff, d), "encoder.block.%d.layer.1.DenseReluDense.wi_1.weight", i);
		} else {
			R(L->wi0, D2(ff, d), "encoder.block.%d.layer.1.DenseReluDense.wi.weight", i);
		}
		R(L->wff, D2(d, ff), "encoder.block.%d.layer.1.DenseReluDense.wo.weight", i);
	}
	R(v->enc_final, D1(d), "encoder.final_layer_norm.weight");
	for (int i = 0; i < tm->ndl; i++) {
		tf_dec_layer dl, *L = base ? &v->dec[i] : &dl;
		R(L->sa_q, D2(in, d), "decoder.block.%d.layer.0.SelfAttention.q.weight", i);
		R(L->sa_k, D2(in, d), "decoder.block.%d.layer.0.SelfAttention.k.weight", i);
		R(L->sa_v, D2(in, d), "decoder.block.%d.layer.0.SelfAttention.v.weight", i);
		R(L->sa_o, D2(d, in), "decoder.block.%d.layer.0.SelfAttention.o.weight", i);
		if (i == 0)
			R(v->rel_bias, D2(tm->c.rel_buckets, tm->nh),
			  "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
		R(L->ca_q, D2(in, d), "decoder.block.%d.layer.1.EncDecAttention.q.weight", i);
		R(L->ca_k, D2(in, d), "decoder.block.%d.layer.1.EncDecAttention.k.weight", i);
		R(L->ca_v, D2(in, d), "decoder.block.%d.layer.1.EncDecAttention.v.weight", i);
		R(L->ca_o, D2(d, in), "decoder.block.%d.layer.1.EncDecAttention.o.weight", i);
		R(L->sa_ln, D1(d), "decoder.block.%d.layer.0.layer_norm.weight", i);
		R(L->ca_ln, D1(d), "decoder.block.%d.layer.1.layer_norm.weight", i);
		R(L->ff_ln, D1(d), "decoder.block.%d.layer.2.layer_norm.weight", i);
		if (tm->gated) {
			R(L->wi0, D2(ff, d), "decoder.block.%d.layer.2.DenseReluDense.wi_0.weight", i);
			R(L->wi1, D2(ff, d), "decoder.block.%d.layer.2.DenseReluDense.wi_1.weight", i);
		} else {
			R(L->wi0, D2(ff, d), "decoder.block.%d.layer.2.DenseReluDense.wi.weight", i);
		}
		R(L->wo, D2(d, ff), "decoder.block.%d.layer.2.DenseReluDense.wo.weight", i);
	}
	if (tm->ndl > 0)
		R(v->dec_final, D1(d), "decoder.final_layer_norm.weight");
#undef R
	return ok ? 0 : -1;
}

tf_model *tf_model_new(const lc_config *c, lc_err *err)
{
	tf_model *tm;

	if (c->d_model < 1 || c->d_ff < 1 || c->vocab_size < 1 || c->num_heads < 1 || c->d_kv < 1 ||
	    c->d_state < 2 || c->num_decoder_layers < 1 || c->rel_buckets < 2 ||
	    c->rel_max_distance <= c->rel_buckets / 2) {
		lc_fail(err, "train: unsupported configuration");
		return NULL;
	}
	if (!(tm = calloc(1, sizeof *tm))) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	tm->c = *c;
	tm->d = c->d_model;
	tm->dff = c->d_ff;
	tm->V = c->vocab_size;
	tm->nel = c->num_layers;
	tm->ndl = c->num_decoder_layers;
	tm->nh = c->num_heads;
	tm->dkv = c->d_kv;
	tm->inner = c->num_heads * c->d_kv;
	tm->N2 = c->d_state / 2;
	tm->nch = c->bidirectional ? 2 : 1;
	tm->gating = c->gating;
	tm->gated = c->is_gated_act;
	if (!strcmp(c->act, "gelu_new") || !strcmp(c->act, "gelu_pytorch_tanh") ||
	    !strcmp(c->act, "gelu_fast"))
		tm->act = ACT_GELU_NEW;
	else if (!strcmp(c->act, "gelu"))
		tm->act = ACT_GELU;
	else if (!strcmp(c->act, "relu"))
		tm->act = ACT_RELU;
	else
		tm->act = ACT_SILU;
	if (layout(tm, NULL, NULL) < 0) {
		tf_model_free(tm);
		lc_fail(err, "out of memory");
		return NULL;
	}
	return tm;
}

void tf_model_free(tf_model *tm)
{
	if (!tm)
		return;
	free(tm->t);
	free(tm);
}

const lc_config *tf_config(const tf_model *tm) { return &tm->c; }
uint64_t tf_nparams(const tf_model *tm) { return tm->P; }
uint32_t tf_ntensors(const tf_model *tm) { return tm->n; }
const tf_tensor *tf_tensor_at(const tf_model *tm, uint32_t i) { return i < tm->n ? &tm->t[i] : NULL; }

const tf_tensor *tf_tensor_find(const tf_model *tm, const char *name)
{
	for (uint32_t i = 0; i < tm->n; i++)
		if (!strcmp(tm->t[i].name, name))
			return &tm->t[i];
	return NULL;
}

tf_view *tf_view_new(const tf_model *tm, float *base, lc_err *err)
{
	tf_view *v = calloc(1, sizeof *v);
	tf_model tmp = *tm;

	if (v) {
		v->enc = calloc((size_t)(tm->nel ? tm->nel : 1), sizeof *v->enc);
		v->dec = calloc((size_t)tm->ndl, sizeof *v->dec);
	}
	if (!v || !v->enc || !v->dec) {
		tf_view_free(v);
		lc_fail(err, "out of memory");
		return NULL;
	}
	tmp.n = 0;
	layout(&tmp, base, v);
	return v;
}

void tf_view_free(tf_view *v)
{
	if (!v)
		return;
	free(v->enc);
	free(v->dec);
	free(v);
}

int tf_load(const tf_model *tm, lc_model *m, float *w, lc_err *err)
{
	const lc_config *c = model_config(m);

	if (c->d_model != tm->d || c->d_ff != tm->dff || c->vocab_size != tm->V ||
	    c->num_layers != tm->nel || c->num_decoder_layers != tm->ndl || c->num_heads != tm->nh ||
	    c->d_kv != tm->dkv || c->d_state != 2 * tm->N2)
		return lc_fail(err, "%s: configuration differs from the training model", model_dir(m));
	for (uint32_t i = 0; i < tm->n; i++) {
		const tf_tensor *t = &tm->t[i];
		const float *p = model_tensor(m, t->name, t->rank, t->dims, err);
		if (!p)
			return -1;
		memcpy(w + t->off, p, t->numel * sizeof *w);
	}
	return 0;
}

/* ------------------------------------------------------------- kernels */

/* Per channel h of a layer: dtA[n], coef[c][n] in double. */
static void disc(const tf_model *tm, const tf_enc_layer *L, int h, double complex *dtA,
                 double complex *A, double complex *E, double complex *coef)
{
	int N2 = tm->N2;
	double dt = exp((double)L->log_dt[h]);

	for (int n = 0; n < N2; n++) {
		double ar = -exp((double)L->inv_A_real[h * N2 + n]), ai = L->A_imag[h * N2 + n];
		double x = dt * ar, y = dt * ai, s = sin(0.5 * y);
		double complex Bc = CMPLX(L->B[(h * N2 + n) * 2], L->B[(h * N2 + n) * 2 + 1]);
		A[n] = CMPLX(ar, ai);
		dtA[n] = CMPLX(x, y);
		E[n] = CMPLX(expm1(x) * cos(y) - 2.0 * s * s, exp(x) * sin(y));   /* exp(dtA) - 1 */
		for (int c = 0; c < tm->nch; c++) {
			const float *Cp = L->C + (((size_t)c * tm->d + h) * N2 + n) * 2;
			coef[c * N2 + n] = Bc * CMPLX(Cp[0], Cp[1]) * E[n] / A[n];
		}
	}
}

#define ANCHOR 64   /* powers re-anchored with exp() every ANCHOR lags */

typedef struct kjob {
	const tf_model *tm;
	const tf_view *W;
	int64_t Lmax;
	const float *dK;
	float *K;
	tf_view *G;
	int failed;
} kjob;

/* Kernels of one (layer, channel). */
static void kernel_one(void *ctx, int64_t i, int tid)
{
	kjob *j = ctx;
	const tf_model *tm = j->tm;
	int N2 = tm->N2, d = tm->d, nch = tm->nch, li = (int)(i / d), h = (int)(i % d);
	int64_t Lmax = j->Lmax;
	const tf_enc_layer *L = &j->W->enc[li];
	double complex *buf = malloc((size_t)N2 * (4 + 2 * (size_t)nch) * sizeof *buf);
	double complex *dtA, *A, *E, *z, *coef, *zl;

	(void)tid;
	if (!buf) {
		j->failed = 1;
		return;
	}
	dtA = buf;
	A = buf + N2;
	E = buf + 2 * N2;
	z = buf + 3 * N2;
	coef = buf + 4 * N2;
	zl = coef + nch * N2;
	disc(tm, L, h, dtA, A, E, coef);
	for (int n = 0; n < N2; n++)
		z[n] = cexp(dtA[n]);
	for (int64_t l = 0; l < Lmax; l++) {
		if (l % ANCHOR == 0)
			for (int n = 0; n < N2; n++)
				zl[n] = cexp(dtA[n] * (double)l);
		for (int c = 0; c < nch; c++) {
			double s = 0;
			for (int n = 0; n < N2; n++)
				s += creal(coef[c * N2 + n] * zl[n]);
			j->K[(((size_t)li * nch + c) * d + h) * Lmax + l] = (float)(2 * s);
		}
		for (int n = 0; n < N2; n++)
			zl[n] *= z[n];
	}
	free(buf);
}

int tf_kernels(const tf_model *tm, const tf_view *W, int64_t Lmax, float *K, int threads,
               lc_err *err)
{
	kjob j = { tm, W, Lmax, NULL, K, NULL, 0 };

	par_for(threads, (int64_t)tm->nel * tm->d, kernel_one, &j);
	return j.failed ? lc_fail(err, "out of memory") : 0;
}

/* Gradients of one (layer, channel)'s kernel parameters. */
static void kernel_bw_one(void *ctx, int64_t i, int tid)
{
	kjob *j = ctx;
	const tf_model *tm = j->tm;
	int N2 = tm->N2, d = tm->d, nch = tm->nch, li = (int)(i / d), h = (int)(i % d);
	int64_t Lmax = j->Lmax;
	const tf_enc_layer *L = &j->W->enc[li];
	tf_enc_layer *g = &j->G->enc[li];
	const float *dK = j->dK;
	double complex *buf = malloc((size_t)N2 * (5 + 3 * (size_t)nch) * sizeof *buf);
	double complex *dtA, *A, *E, *zl, *z, *coef, *P, *Q;
	double dt = exp((double)L->log_dt[h]), gdt = 0;

	(void)tid;
	if (!buf) {
		j->failed = 1;
		return;
	}
	dtA = buf;
	A = buf + N2;
	E = buf + 2 * N2;
	zl = buf + 3 * N2;
	z = buf + 4 * N2;
	coef = buf + 5 * N2;
	P = coef + nch * N2;
	Q = P + nch * N2;
	disc(tm, L, h, dtA, A, E, coef);
	for (int n = 0; n < N2; n++)
		z[n] = cexp(dtA[n]);
	for (int k = 0; k < nch * N2; k++)
		P[k] = Q[k] = 0;
	/* P_c = sum_l dK_c[l] conj(z)^l, Q_c = sum_l l dK_c[l] conj(z)^l */
	for (int64_t l = 0; l < Lmax; l++) {
		if (l % ANCHOR == 0)
			for (int n = 0; n < N2; n++)
				zl[n] = conj(cexp(dtA[n] * (double)l));
		for (int c = 0; c < nch; c++) {
			double gk = dK[(((size_t)li * nch + c) * d + h) * Lmax + l];
			if (gk == 0)
				continue;
			for (int n = 0; n < N2; n++) {
				P[c * N2 + n] += gk * zl[n];
				Q[c * N2 + n] += gk * (double)l * zl[n];
			}
		}
		for (int n = 0; n < N2; n++)
			zl[n] *= conj(z[n]);
	}
	for (int n = 0; n < N2; n++) {
		double complex Bc = CMPLX(L->B[(h * N2 + n) * 2], L->B[(h * N2 + n) * 2 + 1]);
		double complex gB = 0, gdtA = 0, gA = 0, ez = E[n] + 1;
		for (int c = 0; c < nch; c++) {
			const float *Cp = L->C + (((size_t)c * d + h) * N2 + n) * 2;
			float *gC = g->C + (((size_t)c * d + h) * N2 + n) * 2;
			double complex Cc = CMPLX(Cp[0], Cp[1]);
			/* K = 2 Re sum coef z^l: Wirtinger gradients G_x = dL/dRe + i dL/dIm */
			double complex gcoef = 2.0 * P[c * N2 + n];
			double complex gc = gcoef * conj(Bc * E[n] / A[n]);
			gC[0] += (float)creal(gc);
			gC[1] += (float)cimag(gc);
			gB += gcoef * conj(Cc * E[n] / A[n]);
			gdtA += 2.0 * conj(coef[c * N2 + n]) * Q[c * N2 + n];
			gdtA += gcoef * conj(Bc * Cc * ez / A[n]);
			gA += gcoef * conj(-Bc * Cc * E[n] / (A[n] * A[n]));
		}
		g->B[(h * N2 + n) * 2] += (float)creal(gB);
		g->B[(h * N2 + n) * 2 + 1] += (float)cimag(gB);
		gA += gdtA * dt;
		gdt += creal(gdtA * conj(A[n]));
		g->inv_A_real[h * N2 + n] += (float)(creal(A[n]) * creal(gA));
		g->A_imag[h * N2 + n] += (float)cimag(gA);
	}
	g->log_dt[h] += (float)(gdt * dt);
	free(buf);
}

int tf_kernels_backward(const tf_model *tm, const tf_view *W, int64_t Lmax, const float *dK,
                        tf_view *G, int threads, lc_err *err)
{
	kjob j = { tm, W, Lmax, dK, NULL, G, 0 };

	par_for(threads, (int64_t)tm->nel * tm->d, kernel_bw_one, &j);
	return j.failed ? lc_fail(err, "out of memory") : 0;
}

/* ----------------------------------------------------------------- FFT */

#define MAXLOG 31

struct tf_fft {
	int64_t nmax;
	fftwf_plan fwd[MAXLOG], inv[MAXLOG];   /* size 2^i */
};

tf_fft *tf_fft_new(int64_t Lmax, lc_err *err)
{
	tf_fft *f = calloc(1, sizeof *f);
	int64_t n;
	int i;

	if (!f) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	for (i = 1, n = 2; i < MAXLOG; i++, n *= 2) {
		float *x = fftwf_malloc((size_t)n * sizeof *x);
		fftwf_complex *X = fftwf_malloc((size_t)(n / 2 + 1) * sizeof *X);
		if (!x || !X) {
			fftwf_free(x);
			fftwf_free(X);
			tf_fft_free(f);
			lc_fail(err, "out of memory");
			return NULL;
		}
		f->fwd[i] = fftwf_plan_dft_r2c_1d((int)n, x, X, FFTW_ESTIMATE);
		f->inv[i] = fftwf_plan_dft_c2r_1d((int)n, X, x, FFTW_ESTIMATE);
		fftwf_free(x);
		fftwf_free(X);
		f->nmax = n;
		if (n >= 2 * Lmax)
			break;
	}
	return f;
}

void tf_fft_free(tf_fft *f)
{
	if (!f)
		return;
	for (int i = 0; i < MAXLOG; i++) {
		if (f->fwd[i])
			fftwf_destroy_plan(f->fwd[i]);
		if (f->inv[i])
			fftwf_destroy_plan(f->inv[i]);
	}
	free(f);
}

/* -------------------------------------------------------------- helpers */

/* y[R, out] = beta y + x[R, in] W[out, in]^T + b */
static void lin(float *y, const float *x, const float *W, const float *b, int64_t R, int out,
                int in, float beta)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, out, in, 1.0f, x, in, W, in,
	            beta, y, out);
	if (b)
		for (int64_t r = 0; r < R; r++)
			for (int o = 0; o < out; o++)
				y[r * out + o] += b[o];
}

/* dx += dy W; dW += dy^T x; db += sum dy (each optional) */
static void lin_bw(const float *dy, const float *x, const float *W, int64_t R, int out, int in,
                   float *dx, float *dW, float *db)
{
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, in, out, 1.0f, dy, out,
		            W, in, 1.0f, dx, in);
	if (dW)
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, (int)R, 1.0f, dy, out, x,
		            in, 1.0f, dW, in);
	if (db)
		for (int64_t r = 0; r < R; r++)
			for (int o = 0; o < out; o++)
				db[o] += dy[r * out + o];
}

/* y = w * x * r, r[R] = rsqrt(mean(x^2) + eps) */
static void rms_fw(const float *x, int64_t R, int d, const float *w, double eps, float *y,
                   float *r)
{
	for (int64_t i = 0; i < R; i++) {
		const float *xr = x + i * d;
		double ss = 0;
		float s;
		for (int j = 0; j < d; j++)
			ss += (double)xr[j] * xr[j];
		s = (float)(1.0 / sqrt(ss / d + eps));
		r[i] = s;
		for (int j = 0; j < d; j++)
			y[i * d + j] = w[j] * (xr[j] * s);
	}
}

/* dx += d(rms)/dx^T dy; dw += sum dy x r */
static void rms_bw(const float *dy, const float *x, const float *r, const float *w, int64_t R,
                   int d, float *dx, float *dw)
{
	for (int64_t i = 0; i < R; i++) {
		const float *xr = x + i * d, *g = dy + i * d;
		double s = r[i], dot = 0;
		for (int j = 0; j < d; j++) {
			dot += (double)g[j] * w[j] * xr[j];
			dw[j] += (float)(g[j] * xr[j] * s);
		}
		for (int j = 0; j < d; j++)
			dx[i * d + j] += (float)(s * g[j] * w[j] - xr[j] * s * s * s * dot / d);
	}
}

static float act_f(enum act a, float x, float *deriv)
{
	double xd = x;
	switch (a) {
	case ACT_GELU_NEW: {
		double c = 0.7978845608028654, y = c * (xd + 0.044715 * xd * xd * xd), t = tanh(y);
		if (deriv)
			*deriv = (float)(0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * c *
			                 (1 + 3 * 0.044715 * xd * xd));
		return (float)(0.5 * xd * (1 + t));
	}
	case ACT_GELU: {
		double cdf = 0.5 * (1 + erf(xd / 1.4142135623730951));
		if (deriv)
			*deriv = (float)(cdf + xd * exp(-0.5 * xd * xd) * 0.3989422804014327);
		return (float)(xd * cdf);
	}
	case ACT_RELU:
		if (deriv)
			*deriv = x > 0 ? 1.0f : 0.0f;
		return x > 0 ? x : 0;
	case ACT_SILU: {
		double sg = 1 / (1 + exp(-xd));
		if (deriv)
			*deriv = (float)(sg * (1 + xd * (1 - sg)));
		return (float)(xd * sg);
	}
	}
	return x;
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* mask[n] in {0, 1/(1-p)}; NULL-safe for p == 0 (mask unused) */
static void make_mask(float *mask, int64_t n, double p, uint64_t *state)
{
	float keep = (float)(1.0 / (1.0 - p));
	for (int64_t i = 0; i < n; i++) {
		*state = mix(*state);
		mask[i] = ((double)(*state >> 11) / 9007199254740992.0) < p ? 0.0f : keep;
	}
}

/* The feed-forward of R rows n [R, d]: a = n wi0^T, b = n wi1^T (gated),
 * f = act(a) * b, out = f wo^T; a, b, f [R, d_ff] are kept for backward. */
static void ff_fw(const tf_model *tm, const float *wi0, const float *wi1, const float *wo,
                  const float *n, int64_t R, float *a, float *b, float *f, float *out)
{
	int d = tm->d, dff = tm->dff;

	lin(a, n, wi0, NULL, R, dff, d, 0);
	if (wi1)
		lin(b, n, wi1, NULL, R, dff, d, 0);
	for (int64_t i = 0; i < R * dff; i++)
		f[i] = act_f(tm->act, a[i], NULL) * (wi1 ? b[i] : 1.0f);
	lin(out, f, wo, NULL, R, d, dff, 0);
}

/* Dropout, then the residual: out = res + mask .* out with a fresh mask
 * (mask NULL: no dropout). */
static void drop_residual(float *out, const float *res, float *mask, int64_t n, double p,
                          uint64_t *rs)
{
	if (mask) {
		make_mask(mask, n, p, rs);
		for (int64_t i = 0; i < n; i++)
			out[i] *= mask[i];
	}
	for (int64_t i = 0; i < n; i++)
		out[i] += res[i];
}

/* ------------------------------------------------------------- example */

typedef struct enc_act {
	float *x;          /* [L, d] block input */
	float *r1, *r2;    /* [L] */
	float *u;          /* [L, d] */
	float *k, *q, *y;  /* [L, d]; y = conv + D k */
	float *g;          /* [L, d] gated (input of output_linear) */
	float *m1, *m2;    /* [L, d] dropout masks or NULL */
	float *x1;         /* [L, d] after the SSM residual */
	float *n;          /* [L, d] */
	float *a, *b, *f;  /* [L, d_ff] */
} enc_act;

typedef struct dec_act {
	float *x0, *x1, *x2;   /* [T, d] inputs of the three sublayers */
	float *r0, *r1, *r2;   /* [T] */
	float *h0, *h1, *h2;   /* [T, d] normed */
	float *q, *k, *v;      /* [T, inner] self */
	float *p;              /* [nh, T, T] self probabilities */
	float *o;              /* [T, inner] self context */
	float *cq;             /* [T, inner] cross queries */
	float *ck, *cv;        /* [L, inner] cross keys / values */
	float *cp;             /* [nh, T, L] */
	float *co;             /* [T, inner] */
	float *a, *b, *f;      /* [T, d_ff] */
	float *m0, *m1, *m2;   /* [T, d] masks or NULL */
} dec_act;

/* A simple arena: every activation of one example. */
typedef struct arena {
	float **p;
	int n, cap;
	int oom;
} arena;

static float *A_(arena *a, int64_t n)
{
	float *p;
	if (a->oom)
		return NULL;
	if (a->n == a->cap) {
		int nc = a->cap ? 2 * a->cap : 256;
		float **np = realloc(a->p, (size_t)nc * sizeof *np);
		if (!np) {
			a->oom = 1;
			return NULL;
		}
		a->p = np;
		a->cap = nc;
	}
	p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
	if (!p) {
		a->oom = 1;
		return NULL;
	}
	a->p[a->n++] = p;
	return p;
}

static void arena_free(arena *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
}

static int ilog2(int64_t n)
{
	int i = 0;
	while (((int64_t)1 << i) < n)
		i++;
	return i;
}

/* Per-channel FFT conv forward (y = conv(k) + D k, column h of [L, d]) */
typedef struct fftbuf {
	float *x;               /* [n] */
	fftwf_complex *X, *Kf;  /* [n/2+1] */
} fftbuf;

static void kfull(const float *K, int64_t Kld, int nch, int d, int h, int64_t L, int64_t n,
                  float *x)
{
	const float *K0 = K + (size_t)h * Kld, *K1 = nch > 1 ? K + ((size_t)d + h) * Kld : NULL;
	memset(x, 0, (size_t)n * sizeof *x);
	for (int64_t j = 0; j < L; j++)
		x[j] = K0[j];
	if (K1) {
		x[0] += K1[0];
		for (int64_t j = 1; j < L; j++)
			x[n - j] = K1[j];
	}
}

static void enc_forward(const tf_model *tm, const tf_view *W, const float *K, int64_t Kld,
                        const tf_fft *ff, const int32_t *src, int64_t L, enc_act *ea, float *xin,
                        float *out, float *rf, float *emask, double p, uint64_t *rs, fftbuf *fb)
{
	int d = tm->d, nch = tm->nch;
	int lg = ilog2(2 * L);
	int64_t n = (int64_t)1 << lg;
	float *x = xin;

	for (int64_t t = 0; t < L; t++)
		memcpy(x + t * d, W->shared + (size_t)src[t] * d, (size_t)d * sizeof *x);
	if (emask) {
		make_mask(emask, L * d, p, rs);
		for (int64_t i = 0; i < L * d; i++)
			x[i] *= emask[i];
	}
	for (int li = 0; li < tm->nel; li++) {
		const tf_enc_layer *Lw = &W->enc[li];
		enc_act *a = &ea[li];
		const float *Kl = K + (size_t)li * nch * d * Kld;
		float *xn = li + 1 < tm->nel ? ea[li + 1].x : out;

		if (a->x != x)
			memcpy(a->x, x, (size_t)(L * d) * sizeof *x);
		rms_fw(a->x, L, d, Lw->prenorm, tm->c.eps, a->u, a->r1);
		lin(a->k, a->u, Lw->wk, Lw->bk, L, d, d, 0);
		if (Lw->wq)
			lin(a->q, a->u, Lw->wq, Lw->bq, L, d, d, 0);
		for (int h = 0; h < d; h++) {
			for (int64_t t = 0; t < n; t++)
				fb->x[t] = t < L ? a->k[t * d + h] : 0;
			fftwf_execute_dft_r2c(ff->fwd[lg], fb->x, fb->X);
			kfull(Kl, Kld, nch, d, h, L, n, fb->x);
			fftwf_execute_dft_r2c(ff->fwd[lg], fb->x, fb->Kf);
			for (int64_t j = 0; j <= n / 2; j++) {
				float ar = fb->X[j][0], ai = fb->X[j][1], br = fb->Kf[j][0], bi = fb->Kf[j][1];
				fb->X[j][0] = ar * br - ai * bi;
				fb->X[j][1] = ar * bi + ai * br;
			}
			fftwf_execute_dft_c2r(ff->inv[lg], fb->X, fb->x);
			for (int64_t t = 0; t < L; t++)
				a->y[t * d + h] = fb->x[t] / (float)n + Lw->D[h] * a->k[t * d + h];
		}
		for (int64_t i = 0; i < L * d; i++)
			a->g[i] = Lw->wq ? a->q[i] * a->y[i] : a->y[i];
		/* x1 = x + drop(g Wo^T + bo) */
		lin(a->x1, a->g, Lw->wo, Lw->bo, L, d, d, 0);
		drop_residual(a->x1, a->x, a->m1, L * d, p, rs);
		rms_fw(a->x1, L, d, Lw->ln, tm->c.eps, a->n, a->r2);
		ff_fw(tm, Lw->wi0, Lw->wi1, Lw->wff, a->n, L, a->a, a->b, a->f, xn);
		drop_residual(xn, a->x1, a->m2, L * d, p, rs);
		x = xn;
	}
	/* out = final norm of the last residual (kept in out's own copy) */
	{
		float *res = x;
		float *tmp = malloc((size_t)(L * d) * sizeof *tmp);
		if (tmp) {
			rms_fw(res, L, d, W->enc_final, tm->c.eps, tmp, rf);
			memcpy(out + (size_t)L * d, res, (size_t)(L * d) * sizeof *res);   /* residual */
			memcpy(out, tmp, (size_t)(L * d) * sizeof *tmp);
			free(tmp);
		}
	}
}

/* Encoder backward: dE [L, d] on the output; 'out' holds [enc; residual]. */
static void enc_backward(const tf_model *tm, const tf_view *W, const float *K, int64_t Kld,
                         const tf_fft *ff, const int32_t *src, int64_t L, enc_act *ea,
                         const float *out, const float *rf, const float *emask, const float *dE,
                         tf_view *G, float *dK, float *dx, float *scr, fftbuf *fb)
{
	int d = tm->d, dff = tm->dff, nch = tm->nch;
	int lg = ilog2(2 * L);
	int64_t n = (int64_t)1 << lg;
	/* scr: [L, d] x 4 + [L, dff] x 2 */
	float *d1 = scr, *dg = scr + L * d, *du = scr + 2 * L * d, *dq = scr + 3 * L * d;
	float *dA = scr + 4 * L * d, *dB = dA + L * dff;

	memset(dx, 0, (size_t)(L * d) * sizeof *dx);
	rms_bw(dE, out + (size_t)L * d, rf, W->enc_final, L, d, dx, G->enc_final);
	for (int li = tm->nel - 1; li >= 0; li--) {
		const tf_enc_layer *Lw = &W->enc[li];
		tf_enc_layer *Lg = &G->enc[li];
		enc_act *a = &ea[li];
		const float *Kl = K + (size_t)li * nch * d * Kld;
		float *dKl = dK + (size_t)li * nch * d * Kld;

		/* feed-forward branch: dx is d(x_next) */
		for (int64_t i = 0; i < L * d; i++)
			d1[i] = a->m2 ? dx[i] * a->m2[i] : dx[i];
		memset(dA, 0, (size_t)(L * dff) * sizeof *dA);
		lin_bw(d1, a->f, Lw->wff, L, d, dff, dA, Lg->wff, NULL);   /* dA = dF */
		for (int64_t i = 0; i < L * dff; i++) {
			float der, v = act_f(tm->act, a->a[i], &der), dF = dA[i];
			if (Lw->wi1) {
				dB[i] = dF * v;
				dA[i] = dF * a->b[i] * der;
			} else {
				dA[i] = dF * der;
			}
		}
		memset(du, 0, (size_t)(L * d) * sizeof *du);
		lin_bw(dA, a->n, Lw->wi0, L, dff, d, du, Lg->wi0, NULL);
		if (Lw->wi1)
			lin_bw(dB, a->n, Lw->wi1, L, dff, d, du, Lg->wi1, NULL);
		rms_bw(du, a->x1, a->r2, Lw->ln, L, d, dx, Lg->ln);   /* dx is now d(x1) */
		/* SSM branch */
		for (int64_t i = 0; i < L * d; i++)
			d1[i] = a->m1 ? dx[i] * a->m1[i] : dx[i];
		memset(dg, 0, (size_t)(L * d) * sizeof *dg);
		lin_bw(d1, a->g, Lw->wo, L, d, d, dg, Lg->wo, Lg->bo);
		/* dq = dg * y; dy = dg * q (stored in d1) */
		for (int64_t i = 0; i < L * d; i++) {
			if (Lw->wq) {
				dq[i] = dg[i] * a->y[i];
				d1[i] = dg[i] * a->q[i];
			} else {
				d1[i] = dg[i];
			}
		}
		memset(dg, 0, (size_t)(L * d) * sizeof *dg);   /* dg now holds dk */
		for (int h = 0; h < d; h++) {
			double sD = 0;
			for (int64_t t = 0; t < L; t++) {
				sD += (double)d1[t * d + h] * a->k[t * d + h];
				dg[t * d + h] += d1[t * d + h] * Lw->D[h];
			}
			Lg->D[h] += (float)sD;
			/* F(dy) */
			for (int64_t t = 0; t < n; t++)
				fb->x[t] = t < L ? d1[t * d + h] : 0;
			fftwf_execute_dft_r2c(ff->fwd[lg], fb->x, fb->X);
			/* dk += IFFT(F(dy) conj(F(Kfull))) */
			kfull(Kl, Kld, nch, d, h, L, n, fb->x);
			fftwf_execute_dft_r2c(ff->fwd[lg], fb->x, fb->Kf);
			for (int64_t j = 0; j <= n / 2; j++) {
				float ar = fb->X[j][0], ai = fb->X[j][1], br = fb->Kf[j][0], bi = fb->Kf[j][1];
				fb->Kf[j][0] = ar * br + ai * bi;
				fb->Kf[j][1] = ai * br - ar * bi;
			}
			fftwf_execute_dft_c2r(ff->inv[lg], fb->Kf, fb->x);
			for (int64_t t = 0; t < L; t++)
				dg[t * d + h] += fb->x[t] / (float)n;
			/* dKfull = IFFT(F(dy) conj(F(k))) */
			for (int64_t t = 0; t < n; t++)
				fb->x[t] = t < L ? a->k[t * d + h] : 0;
			fftwf_execute_dft_r2c(ff->fwd[lg], fb->x, fb->Kf);
			for (int64_t j = 0; j <= n / 2; j++) {
				float ar = fb->X[j][0], ai = fb->X[j][1], br = fb->Kf[j][0], bi = fb->Kf[j][1];
				fb->Kf[j][0] = ar * br + ai * bi;
				fb->Kf[j][1] = ai * br - ar * bi;
			}
			fftwf_execute_dft_c2r(ff->inv[lg], fb->Kf, fb->x);
			{
				float *k0 = dKl + (size_t)h * Kld, *k1 = nch > 1 ? dKl + ((size_t)d + h) * Kld : NULL;
				for (int64_t j = 0; j < L; j++)
					k0[j] += fb->x[j] / (float)n;
				if (k1) {
					k1[0] += fb->x[0] / (float)n;
					for (int64_t j = 1; j < L; j++)
						k1[j] += fb->x[n - j] / (float)n;
				}
			}
		}
		memset(du, 0, (size_t)(L * d) * sizeof *du);
		lin_bw(dg, a->u, Lw->wk, L, d, d, du, Lg->wk, Lg->bk);
		if (Lw->wq)
			lin_bw(dq, a->u, Lw->wq, L, d, d, du, Lg->wq, Lg->bq);
		rms_bw(du, a->x, a->r1, Lw->prenorm, L, d, dx, Lg->prenorm);   /* d(x) */
	}
	for (int64_t t = 0; t < L; t++) {
		float *gs = G->shared + (size_t)src[t] * d;
		for (int j = 0; j < d; j++)
			gs[j] += emask ? dx[t * d + j] * emask[t * d + j] : dx[t * d + j];
	}
}

/* softmax rows of S [rows, n] in place */
static void softmax_rows(float *S, int64_t rows, int64_t n)
{
	for (int64_t r = 0; r < rows; r++) {
		float *s = S + r * n, mx = -INFINITY;
		double sum = 0;
		for (int64_t j = 0; j < n; j++)
			if (s[j] > mx)
				mx = s[j];
		for (int64_t j = 0; j < n; j++) {
			s[j] = expf(s[j] - mx);
			sum += s[j];
		}
		for (int64_t j = 0; j < n; j++)
			s[j] = (float)(s[j] / sum);
	}
}

/* dS = P * (dP - rowsum(dP * P)), in place in dP */
static void softmax_bw(const float *P, float *dP, int64_t rows, int64_t n)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *p = P + r * n;
		float *g = dP + r * n;
		double s = 0;
		for (int64_t j = 0; j < n; j++)
			s += (double)g[j] * p[j];
		for (int64_t j = 0; j < n; j++)
			g[j] = p[j] * (g[j] - (float)s);
	}
}

int tf_example(const tf_model *tm, const tf_view *W, const float *K, int64_t Kld,
               const tf_fft *fft, const int32_t *src, int64_t Ls, const int32_t *tgt,
               int64_t Lt, const tf_opts *o, tf_view *G, float *dK, tf_out *out, lc_err *err)
{
	int d = tm->d, dff = tm->dff, nh = tm->nh, dkv = tm->dkv, in = tm->inner, V = tm->V;
	int nel = tm->nel, ndl = tm->ndl, nb = tm->c.rel_buckets;
	double p = o ? o->dropout : 0;
	float scale = o ? o->scale : 1.0f;
	int drop = p > 0;
	uint64_t rs = mix((o ? o->seed : 0) ^ 0x5eedull);
	arena ar = { 0 };
	enc_act *ea = NULL;
	dec_act *da = NULL;
	fftbuf fb = { 0 };
	float *encbuf, *rf, *emask, *xin, *din_mask, *xf, *rfd, *hf, *logits, *bias;
	int32_t *din = NULL;
	int *bucket = NULL;
	float out_scale = tm->c.tie_word_embeddings ? (float)(1.0 / sqrt((double)d)) : 1.0f;
	int64_t T = Lt, L = Ls, nlab = 0;
	double loss = 0;
	int rc = -1;

	if (L < 1 || T < 1)
		return lc_fail(err, "empty source or target");
	if (L > Kld || 2 * L > fft->nmax)
		return lc_fail(err, "source of %lld tokens is longer than the kernels (%lld)",
		               (long long)L, (long long)Kld);
	for (int64_t t = 0; t < L; t++)
		if (src[t] < 0 || src[t] >= V)
			return lc_fail(err, "source token %lld: id %ld outside the vocabulary",
			               (long long)t, (long)src[t]);
	for (int64_t t = 0; t < T; t++)
		if (tgt[t] >= V)
			return lc_fail(err, "target token %lld: id %ld outside the vocabulary",
			               (long long)t, (long)tgt[t]);
	ea = calloc((size_t)(nel ? nel : 1), sizeof *ea);
	da = calloc((size_t)ndl, sizeof *da);
	din = malloc((size_t)T * sizeof *din);
	bucket = malloc((size_t)T * sizeof *bucket);
	{
		int64_t n = (int64_t)1 << ilog2(2 * L);
		fb.x = fftwf_malloc((size_t)n * sizeof *fb.x);
		fb.X = fftwf_malloc((size_t)(n / 2 + 1) * sizeof *fb.X);
		fb.Kf = fftwf_malloc((size_t)(n / 2 + 1) * sizeof *fb.Kf);
	}
	if (!ea || !da || !din || !bucket || !fb.x || !fb.X || !fb.Kf)
		goto oom;
	for (int i = 0; i < nel; i++) {
		enc_act *a = &ea[i];
		a->x = A_(&ar, L * d); a->r1 = A_(&ar, L); a->r2 = A_(&ar, L);
		a->u = A_(&ar, L * d); a->k = A_(&ar, L * d); a->q = A_(&ar, L * d);
		a->y = A_(&ar, L * d); a->g = A_(&ar, L * d); a->x1 = A_(&ar, L * d);
		a->n = A_(&ar, L * d); a->a = A_(&ar, L * dff); a->b = A_(&ar, L * dff);
		a->f = A_(&ar, L * dff);
		if (drop) {
			a->m1 = A_(&ar, L * d);
			a->m2 = A_(&ar, L * d);
		}
	}
	encbuf = A_(&ar, 2 * L * d);   /* [enc output; last residual] */
	rf = A_(&ar, L);
	emask = drop ? A_(&ar, L * d) : NULL;
	xin = nel ? ea[0].x : A_(&ar, L * d);
	for (int i = 0; i < ndl; i++) {
		dec_act *a = &da[i];
		a->x0 = A_(&ar, T * d); a->x1 = A_(&ar, T * d); a->x2 = A_(&ar, T * d);
		a->r0 = A_(&ar, T); a->r1 = A_(&ar, T); a->r2 = A_(&ar, T);
		a->h0 = A_(&ar, T * d); a->h1 = A_(&ar, T * d); a->h2 = A_(&ar, T * d);
		a->q = A_(&ar, T * in); a->k = A_(&ar, T * in); a->v = A_(&ar, T * in);
		a->p = A_(&ar, nh * T * T); a->o = A_(&ar, T * in);
		a->cq = A_(&ar, T * in); a->ck = A_(&ar, L * in); a->cv = A_(&ar, L * in);
		a->cp = A_(&ar, nh * T * L); a->co = A_(&ar, T * in);
		a->a = A_(&ar, T * dff); a->b = A_(&ar, T * dff); a->f = A_(&ar, T * dff);
		if (drop) {
			a->m0 = A_(&ar, T * d);
			a->m1 = A_(&ar, T * d);
			a->m2 = A_(&ar, T * d);
		}
	}
	din_mask = drop ? A_(&ar, T * d) : NULL;
	xf = A_(&ar, T * d);
	rfd = A_(&ar, T);
	hf = A_(&ar, T * d);
	logits = A_(&ar, T * V);
	bias = A_(&ar, (int64_t)nh * T);
	if (ar.oom)
		goto oom;

	/* ---- encoder */
	if (nel == 0)
		for (int64_t t = 0; t < L; t++)
			memcpy(xin + t * d, W->shared + (size_t)src[t] * d, (size_t)d * sizeof *xin);
	enc_forward(tm, W, K, Kld, fft, src, L, ea, xin, encbuf, rf, emask, p, &rs, &fb);
	if (out && out->enc)
		memcpy(out->enc, encbuf, (size_t)(L * d) * sizeof *encbuf);

	/* ---- decoder */
	din[0] = tm->c.decoder_start_id;
	for (int64_t t = 1; t < T; t++)
		din[t] = tgt[t - 1] < 0 ? tm->c.pad_id : tgt[t - 1];
	for (int64_t rp = 0; rp < T; rp++) {
		bucket[rp] = decoder_rel_bucket(rp, nb, tm->c.rel_max_distance);
		for (int h = 0; h < nh; h++)
			bias[h * T + rp] = W->rel_bias[bucket[rp] * nh + h];
	}
	{
		float *x = xf;   /* running residual */
		for (int64_t t = 0; t < T; t++)
			memcpy(x + t * d, W->shared + (size_t)din[t] * d, (size_t)d * sizeof *x);
		if (din_mask) {
			make_mask(din_mask, T * d, p, &rs);
			for (int64_t i = 0; i < T * d; i++)
				x[i] *= din_mask[i];
		}
		for (int li = 0; li < ndl; li++) {
			const tf_dec_layer *Lw = &W->dec[li];
			dec_act *a = &da[li];
			/* self-attention */
			memcpy(a->x0, x, (size_t)(T * d) * sizeof *x);
			rms_fw(x, T, d, Lw->sa_ln, tm->c.eps, a->h0, a->r0);
			lin(a->q, a->h0, Lw->sa_q, NULL, T, in, d, 0);
			lin(a->k, a->h0, Lw->sa_k, NULL, T, in, d, 0);
			lin(a->v, a->h0, Lw->sa_v, NULL, T, in, d, 0);
			for (int h = 0; h < nh; h++) {
				float *P = a->p + (size_t)h * T * T;
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)T, dkv, 1.0f,
				            a->q + h * dkv, in, a->k + h * dkv, in, 0.0f, P, (int)T);
				for (int64_t i = 0; i < T; i++)
					for (int64_t j = 0; j < T; j++)
						P[i * T + j] = j <= i ? P[i * T + j] + bias[h * T + (i - j)] : -INFINITY;
				softmax_rows(P, T, T);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, dkv, (int)T, 1.0f,
				            P, (int)T, a->v + h * dkv, in, 0.0f, a->o + h * dkv, in);
			}
			lin(a->x1, a->o, Lw->sa_o, NULL, T, d, in, 0);
			drop_residual(a->x1, x, a->m0, T * d, p, &rs);
			/* cross-attention */
			rms_fw(a->x1, T, d, Lw->ca_ln, tm->c.eps, a->h1, a->r1);
			lin(a->cq, a->h1, Lw->ca_q, NULL, T, in, d, 0);
			lin(a->ck, encbuf, Lw->ca_k, NULL, L, in, d, 0);
			lin(a->cv, encbuf, Lw->ca_v, NULL, L, in, d, 0);
			for (int h = 0; h < nh; h++) {
				float *P = a->cp + (size_t)h * T * L;
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)L, dkv, 1.0f,
				            a->cq + h * dkv, in, a->ck + h * dkv, in, 0.0f, P, (int)L);
				softmax_rows(P, T, L);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, dkv, (int)L, 1.0f,
				            P, (int)L, a->cv + h * dkv, in, 0.0f, a->co + h * dkv, in);
			}
			lin(a->x2, a->co, Lw->ca_o, NULL, T, d, in, 0);
			drop_residual(a->x2, a->x1, a->m1, T * d, p, &rs);
			/* feed-forward */
			rms_fw(a->x2, T, d, Lw->ff_ln, tm->c.eps, a->h2, a->r2);
			ff_fw(tm, Lw->wi0, Lw->wi1, Lw->wo, a->h2, T, a->a, a->b, a->f, x);
			drop_residual(x, a->x2, a->m2, T * d, p, &rs);
		}
		rms_fw(x, T, d, W->dec_final, tm->c.eps, hf, rfd);
		for (int64_t i = 0; i < T * d; i++)
			hf[i] *= out_scale;
		lin(logits, hf, W->lm_head, NULL, T, V, d, 0);
	}
	if (out && out->logits)
		memcpy(out->logits, logits, (size_t)(T * V) * sizeof *logits);
	/* cross-entropy; logits become d loss / d logits (times scale) */
	for (int64_t t = 0; t < T; t++) {
		float *lg = logits + t * V, mx = -INFINITY;
		double sum = 0, lse;
		int y = tgt[t];
		int counted = y >= 0 && y != tm->c.pad_id;
		for (int v = 0; v < V; v++)
			if (lg[v] > mx)
				mx = lg[v];
		for (int v = 0; v < V; v++)
			sum += exp((double)lg[v] - mx);
		lse = mx + log(sum);
		if (counted) {
			loss += lse - lg[y];
			nlab++;
		}
		if (G) {
			for (int v = 0; v < V; v++)
				lg[v] = counted ? (float)(exp((double)lg[v] - lse) * scale) : 0.0f;
			if (counted)
				lg[y] -= scale;
		}
	}
	if (out) {
		out->loss = loss;
		out->ntok = nlab;
	}
	if (!G) {
		rc = 0;
		goto done;
	}

	/* ---- backward: decoder */
	{
		float *dx = A_(&ar, T * d), *dh = A_(&ar, T * d), *dq = A_(&ar, T * in);
		float *dk = A_(&ar, T * in), *dv = A_(&ar, T * in), *dO = A_(&ar, T * in);
		float *dP = A_(&ar, nh * T * (T > L ? T : L)), *dck = A_(&ar, L * in);
		float *dcv = A_(&ar, L * in), *dA = A_(&ar, T * dff), *dB = A_(&ar, T * dff);
		float *dE = A_(&ar, L * d), *d1 = A_(&ar, T * d);
		float *edx = A_(&ar, L * d), *escr = A_(&ar, 4 * L * d + 2 * L * dff);
		if (ar.oom)
			goto oom;
		/* logits = hf lm^T */
		lin_bw(logits, hf, W->lm_head, T, V, d, dh, G->lm_head, NULL);
		for (int64_t i = 0; i < T * d; i++)
			dh[i] *= out_scale;
		/* xf holds the last residual only if ndl > 0; recompute via x of the last layer */
		rms_bw(dh, xf, rfd, W->dec_final, T, d, dx, G->dec_final);
		for (int li = ndl - 1; li >= 0; li--) {
			const tf_dec_layer *Lw = &W->dec[li];
			tf_dec_layer *Lg = &G->dec[li];
			dec_act *a = &da[li];
			/* feed-forward */
			for (int64_t i = 0; i < T * d; i++)
				d1[i] = a->m2 ? dx[i] * a->m2[i] : dx[i];
			memset(dA, 0, (size_t)(T * dff) * sizeof *dA);
			lin_bw(d1, a->f, Lw->wo, T, d, dff, dA, Lg->wo, NULL);
			for (int64_t i = 0; i < T * dff; i++) {
				float der, v = act_f(tm->act, a->a[i], &der), dF = dA[i];
				if (Lw->wi1) {
					dB[i] = dF * v;
					dA[i] = dF * a->b[i] * der;
				} else {
					dA[i] = dF * der;
				}
			}
			memset(dh, 0, (size_t)(T * d) * sizeof *dh);
			lin_bw(dA, a->h2, Lw->wi0, T, dff, d, dh, Lg->wi0, NULL);
			if (Lw->wi1)
				lin_bw(dB, a->h2, Lw->wi1, T, dff, d, dh, Lg->wi1, NULL);
			rms_bw(dh, a->x2, a->r2, Lw->ff_ln, T, d, dx, Lg->ff_ln);
			/* cross-attention */
			for (int64_t i = 0; i < T * d; i++)
				d1[i] = a->m1 ? dx[i] * a->m1[i] : dx[i];
			memset(dO, 0, (size_t)(T * in) * sizeof *dO);
			lin_bw(d1, a->co, Lw->ca_o, T, d, in, dO, Lg->ca_o, NULL);
			memset(dck, 0, (size_t)(L * in) * sizeof *dck);
			memset(dcv, 0, (size_t)(L * in) * sizeof *dcv);
			for (int h = 0; h < nh; h++) {
				const float *P = a->cp + (size_t)h * T * L;
				float *g = dP + (size_t)h * T * L;
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)L, dkv, 1.0f,
				            dO + h * dkv, in, a->cv + h * dkv, in, 0.0f, g, (int)L);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)L, dkv, (int)T, 1.0f,
				            P, (int)L, dO + h * dkv, in, 0.0f, dcv + h * dkv, in);
				softmax_bw(P, g, T, L);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, dkv, (int)L, 1.0f,
				            g, (int)L, a->ck + h * dkv, in, 0.0f, dq + h * dkv, in);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)L, dkv, (int)T, 1.0f,
				            g, (int)L, a->cq + h * dkv, in, 0.0f, dck + h * dkv, in);
			}
			memset(dh, 0, (size_t)(T * d) * sizeof *dh);
			lin_bw(dq, a->h1, Lw->ca_q, T, in, d, dh, Lg->ca_q, NULL);
			lin_bw(dck, encbuf, Lw->ca_k, L, in, d, dE, Lg->ca_k, NULL);
			lin_bw(dcv, encbuf, Lw->ca_v, L, in, d, dE, Lg->ca_v, NULL);
			rms_bw(dh, a->x1, a->r1, Lw->ca_ln, T, d, dx, Lg->ca_ln);
			/* self-attention */
			for (int64_t i = 0; i < T * d; i++)
				d1[i] = a->m0 ? dx[i] * a->m0[i] : dx[i];
			memset(dO, 0, (size_t)(T * in) * sizeof *dO);
			lin_bw(d1, a->o, Lw->sa_o, T, d, in, dO, Lg->sa_o, NULL);
			for (int h = 0; h < nh; h++) {
				const float *P = a->p + (size_t)h * T * T;
				float *g = dP + (size_t)h * T * T;
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)T, dkv, 1.0f,
				            dO + h * dkv, in, a->v + h * dkv, in, 0.0f, g, (int)T);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)T, dkv, (int)T, 1.0f,
				            P, (int)T, dO + h * dkv, in, 0.0f, dv + h * dkv, in);
				softmax_bw(P, g, T, T);
				/* the bias of block 0 is used by every layer */
				for (int64_t i = 0; i < T; i++)
					for (int64_t j = 0; j <= i; j++)
						G->rel_bias[bucket[i - j] * nh + h] += g[i * T + j];
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, dkv, (int)T, 1.0f,
				            g, (int)T, a->k + h * dkv, in, 0.0f, dq + h * dkv, in);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)T, dkv, (int)T, 1.0f,
				            g, (int)T, a->q + h * dkv, in, 0.0f, dk + h * dkv, in);
			}
			memset(dh, 0, (size_t)(T * d) * sizeof *dh);
			lin_bw(dq, a->h0, Lw->sa_q, T, in, d, dh, Lg->sa_q, NULL);
			lin_bw(dk, a->h0, Lw->sa_k, T, in, d, dh, Lg->sa_k, NULL);
			lin_bw(dv, a->h0, Lw->sa_v, T, in, d, dh, Lg->sa_v, NULL);
			rms_bw(dh, a->x0, a->r0, Lw->sa_ln, T, d, dx, Lg->sa_ln);
		}
		for (int64_t t = 0; t < T; t++) {
			float *gs = G->shared + (size_t)din[t] * d;
			for (int j = 0; j < d; j++)
				gs[j] += din_mask ? dx[t * d + j] * din_mask[t * d + j] : dx[t * d + j];
		}
		/* ---- backward: encoder */
		if (nel > 0)
			enc_backward(tm, W, K, Kld, fft, src, L, ea, encbuf, rf, emask, dE, G, dK, edx, escr,
			             &fb);
		else {
			memset(edx, 0, (size_t)(L * d) * sizeof *edx);
			rms_bw(dE, encbuf + (size_t)L * d, rf, W->enc_final, L, d, edx, G->enc_final);
			for (int64_t t = 0; t < L; t++)
				for (int j = 0; j < d; j++)
					G->shared[(size_t)src[t] * d + j] += edx[t * d + j];
		}
	}
	rc = 0;
	goto done;
oom:
	lc_fail(err, "out of memory (source %lld, target %lld tokens)", (long long)L, (long long)T);
done:
	arena_free(&ar);
	free(ea);
	free(da);
	free(din);
	free(bucket);
	fftwf_free(fb.x);
	fftwf_free(fb.X);
	fftwf_free(fb.Kf);
	return rc;
}
