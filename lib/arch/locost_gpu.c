/*
 * locost_gpu.c: LOCOST's encoder at inference with every layer on the GPU
 * (compute/dev.h), the same computation as locost.c's passes (locost.h):
 * the residual stream [L, d], the normed input [L, d], k and the SSM's
 * output channel-major [d, L], q [d, L], and the feed-forward in blocks
 * of rows stay in the GPU's memory from the embedding to the last norm;
 * only the embedded input goes up and the encoder states come down.
 *
 * The kernels' supports are the CPU's (locost.c computes them for either
 * device); the modes (ops/ssm.h's ssm_modes) are computed here per layer
 * and sent up, a few MB; the GPU evaluates the kernels and convolves by
 * cuFFT in groups of channels sized to bound the FFT buffers.
 */
#include "arch/locost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parallel.h"
#include "compute/compute.h"
#include "compute/dev.h"
#include "ops/ssm.h"

#define FF_ROWS  32768                  /* feed-forward rows per block */
#define FFT_BUDGET ((int64_t)2 << 30)   /* bytes of FFT buffers per group */

struct modes_job {
	const ssm_params *sp;
	double *dtA, *coef;             /* [d][N2][2], [d][nch][N2][2] */
};

static void modes_one(void *ctx, int64_t h, int tid)
{
	const struct modes_job *j = ctx;
	int N2 = j->sp->N2, nch = j->sp->nch;

	(void)tid;
	ssm_modes(j->sp, (int)h, j->dtA + h * N2 * 2, j->coef + h * nch * N2 * 2);
}

typedef struct gbuf {
	float *H, *U, *X, *Q, *A, *B;   /* device */
	double *dtA, *coef;             /* device */
	int64_t *T;                     /* device */
	double *hdtA, *hcoef;           /* host */
	cmp_dev_conv *conv;
} gbuf;

static void gbuf_free(gbuf *b)
{
	cmp_dev_free(b->H);
	cmp_dev_free(b->U);
	cmp_dev_free(b->X);
	cmp_dev_free(b->Q);
	cmp_dev_free(b->A);
	cmp_dev_free(b->B);
	cmp_dev_free(b->dtA);
	cmp_dev_free(b->coef);
	cmp_dev_free(b->T);
	cmp_dev_conv_free(b->conv);
	free(b->hdtA);
	free(b->hcoef);
}

/* A layer's weights on the GPU; 0 when all are there. */
struct dlayer {
	const float *prenorm, *D, *wq, *bq, *wk, *bk, *wo, *bo, *ln, *wi0, *wi1, *wff;
};

static int up(const float **d, const float *h, int64_t n)
{
	*d = h ? cmp_dev_weight(h, n) : NULL;
	return h && !*d;
}

static int layer_up(const locost_layer *L, int64_t d, int64_t ff, struct dlayer *w)
{
	return up(&w->prenorm, L->prenorm, d) | up(&w->D, L->D, d) | up(&w->wq, L->wq, d * d) |
	       up(&w->bq, L->bq, d) | up(&w->wk, L->wk, d * d) | up(&w->bk, L->bk, d) |
	       up(&w->wo, L->wo, d * d) | up(&w->bo, L->bo, d) | up(&w->ln, L->ln, d) |
	       up(&w->wi0, L->wi0, ff * d) | up(&w->wi1, L->wi1, ff * d) |
	       up(&w->wff, L->wff, d * ff);
}

static int gpu_encode(const lc_config *c, const locost_weights *W, int64_t L, float *out,
                      int nl, int final, const int64_t *T, int threads,
                      void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	int64_t d = c->d_model, ff = c->d_ff, N2 = c->d_state / 2, nch = c->bidirectional ? 2 : 1;
	int64_t Tmax = 1, n, G, RB = L < FF_ROWS ? L : FF_ROWS;
	const float *fin = NULL;
	gbuf b;
	int rc = -1;

	memset(&b, 0, sizeof b);
	for (int64_t i = 0; i < (int64_t)nl * d; i++)
		if (T[i] > Tmax)
			Tmax = T[i];
	n = cmp_fft_size_smooth(L + Tmax - 1);      /* cuFFT's sizes */
	/* channels per FFT group: signals, kernels and both spectra */
	G = FFT_BUDGET / (16 * n);
	G = G < 1 ? 1 : G > d ? d : G;
	G = (d + (d + G - 1) / G - 1) / ((d + G - 1) / G);      /* even groups */
	b.hdtA = malloc((size_t)(d * N2 * 2) * sizeof *b.hdtA);
	b.hcoef = malloc((size_t)(d * nch * N2 * 2) * sizeof *b.hcoef);
	if (!b.hdtA || !b.hcoef) {
		lc_fail(err, "out of memory");
		goto out;
	}
	if (!(b.H = cmp_dev_alloc(L * d)) || !(b.U = cmp_dev_alloc(L * d)) ||
	    !(b.X = cmp_dev_alloc(L * d)) || (c->gating && !(b.Q = cmp_dev_alloc(L * d))) ||
	    !(b.A = cmp_dev_alloc(RB * ff)) || (c->is_gated_act && !(b.B = cmp_dev_alloc(RB * ff))) ||
	    !(b.dtA = (double *)cmp_dev_alloc(d * N2 * 2 * 2)) ||
	    !(b.coef = (double *)cmp_dev_alloc(d * nch * N2 * 2 * 2)) ||
	    !(b.T = (int64_t *)cmp_dev_alloc(d * 2)) || !(b.conv = cmp_dev_conv_new(n, (int)G)) ||
	    (final && !(fin = cmp_dev_weight(W->enc_final, d))))
		goto declined;
	cmp_dev_put(b.H, out, L * d);
	for (int i = 0; i < nl; i++) {
		const locost_layer *Lw = &W->enc[i];
		ssm_params sp = locost_layer_ssm(c, Lw);
		struct modes_job mj = { &sp, b.hdtA, b.hcoef };
		struct dlayer w;
		const float *g;

		if (layer_up(Lw, d, ff, &w))
			goto declined;
		par_for(threads, d, modes_one, &mj);
		cmp_dev_put_bytes(b.dtA, b.hdtA, d * N2 * 2 * (int64_t)sizeof(double));
		cmp_dev_put_bytes(b.coef, b.hcoef, d * nch * N2 * 2 * (int64_t)sizeof(double));
		cmp_dev_put_bytes(b.T, T + i * d, d * (int64_t)sizeof *T);
		/* u = RMSNorm(h); k = Wk u^T + bk, channel-major */
		cmp_dev_rmsnorm(b.H, L, (int)d, w.prenorm, c->eps, b.U);
		cmp_dev_gemm_w(CMP_N, CMP_T, d, L, d, 1.0f, w.wk, d, b.U, d, 0.0f, b.X, L);
		cmp_dev_bias_rows(b.X, d, L, L, w.bk);
		/* y = conv(k) + D k, by groups of channels */
		for (int64_t g0 = 0; g0 < d; g0 += G) {
			int cnt = (int)(d - g0 < G ? d - g0 : G);
			int64_t tm = 1;
			for (int64_t h = g0; h < g0 + cnt; h++)
				if (T[i * d + h] > tm)
					tm = T[i * d + h];
			cmp_dev_conv_run(b.conv, b.X + g0 * L, L, L, cnt, b.dtA + g0 * N2 * 2,
			                 b.coef + g0 * nch * N2 * 2, (int)N2, (int)nch, b.T + g0, tm,
			                 w.D + g0);
		}
		/* gating: q = Wq u^T + bq, times y */
		g = b.X;
		if (w.wq) {
			cmp_dev_gemm_w(CMP_N, CMP_T, d, L, d, 1.0f, w.wq, d, b.U, d, 0.0f, b.Q, L);
			cmp_dev_bias_rows(b.Q, d, L, L, w.bq);
			cmp_dev_mul(b.Q, L, b.X, L, d, L);
			g = b.Q;
		}
		/* h += g^T Wo^T + bo */
		cmp_dev_gemm_w(CMP_T, CMP_T, L, d, d, 1.0f, g, L, w.wo, d, 1.0f, b.H, d);
		cmp_dev_bias_cols(b.H, L, d, d, w.bo);
		/* h += act(n Wi0^T) (* n Wi1^T) Wff^T, n = RMSNorm(h) */
		cmp_dev_rmsnorm(b.H, L, (int)d, w.ln, c->eps, b.U);
		for (int64_t r0 = 0; r0 < L; r0 += RB) {
			int64_t R = L - r0 < RB ? L - r0 : RB;
			const float *nr = b.U + r0 * d;
			cmp_dev_gemm_w(CMP_N, CMP_T, R, ff, d, 1.0f, nr, d, w.wi0, d, 0.0f, b.A, ff);
			if (w.wi1)
				cmp_dev_gemm_w(CMP_N, CMP_T, R, ff, d, 1.0f, nr, d, w.wi1, d, 0.0f, b.B, ff);
			cmp_dev_act((int)c->act, b.A, w.wi1 ? b.B : NULL, R * ff, b.A);
			cmp_dev_gemm_w(CMP_N, CMP_T, R, d, ff, 1.0f, b.A, ff, w.wff, ff, 1.0f,
			             b.H + r0 * d, d);
		}
		if (cmp_dev_check(err) < 0)
			goto out;
		if (progress)
			progress(ctx, i + 1, c->num_layers);
	}
	if (final)
		cmp_dev_rmsnorm(b.H, L, (int)d, fin, c->eps, b.H);
	cmp_dev_get(out, b.H, L * d);
	if (cmp_dev_check(err) < 0)
		goto out;
	rc = 0;
	goto out;
declined: {
	char why[96];
	lc_err e2;
	cmp_dev_check(&e2);     /* clears what an unfinished layer may have queued */
	snprintf(why, sizeof why, "no GPU memory for %lld tokens; encoding on the CPU", (long long)L);
	cmp_dev_say("the encoder", why);
	rc = 1;
}
out:
	gbuf_free(&b);
	return rc;
}

/* One encoding at a time on the GPU: documents encoded at once
 * (encoder_run_many) take turns; the queue and its error are shared. */
int locost_gpu_encode(const lc_config *c, const locost_weights *W, int64_t L, float *out,
                      int nl, int final, const int64_t *T, int threads,
                      void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	int rc;

	cmp_dev_lock();
	rc = gpu_encode(c, W, L, out, nl, final, T, threads, progress, ctx, err);
	cmp_dev_unlock();
	return rc;
}
