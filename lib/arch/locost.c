/*
 * locost.c: the LOCOST architecture: its config.json, its parameters, the
 * encoder (inference and training) and the wiring of the T5 decoder (see
 * locost.h).
 */
#include "arch/locost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/model.h"
#include "base/clock.h"
#include "base/parallel.h"
#include "compute/compute.h"
#include "compute/dev.h"
#include "ops/dropout.h"
#include "ops/embed.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/ssm.h"
#include "ops/vmath.h"
#include "weights/config.h"

#define D1(a) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), 0, 0 })
#define D3(a, b, c) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), (uint64_t)(c), 0 })
#define D4(a, b, c, e) ((const uint64_t[PARAM_RANK]){ (uint64_t)(a), (uint64_t)(b), (uint64_t)(c), (uint64_t)(e) })

/* ---------------------------------------------------------- config.json */

static int locost_config(const json_t *root, const char *path, lc_config *c, lc_err *err)
{
	const char *ffp, *name;
	double eps;
	int act;

	if (cfg_int(root, "d_model", CFG_REQUIRED, 1, 1 << 16, &c->d_model, path, err) ||
	    cfg_int(root, "d_ff", CFG_REQUIRED, 1, 1 << 18, &c->d_ff, path, err) ||
	    cfg_int(root, "d_kv", 64, 1, 1 << 16, &c->d_kv, path, err) ||
	    cfg_int(root, "d_state", CFG_REQUIRED, 2, 1 << 16, &c->d_state, path, err) ||
	    cfg_int(root, "num_layers", CFG_REQUIRED, 0, 1024, &c->num_layers, path, err) ||
	    cfg_int(root, "num_decoder_layers", c->num_layers, 0, 1024, &c->num_decoder_layers, path, err) ||
	    cfg_int(root, "num_heads", 8, 1, 1024, &c->num_heads, path, err) ||
	    cfg_int(root, "num_ssm_heads", 1, 1, 1024, &c->num_ssm_heads, path, err) ||
	    cfg_int(root, "vocab_size", CFG_REQUIRED, 1, INT_MAX, &c->vocab_size, path, err) ||
	    cfg_int(root, "relative_attention_num_buckets", 32, 1, 1 << 16, &c->rel_buckets, path, err) ||
	    cfg_int(root, "relative_attention_max_distance", 128, 1, INT_MAX, &c->rel_max_distance, path, err) ||
	    cfg_int(root, "pad_token_id", 0, 0, INT_MAX, &c->pad_id, path, err) ||
	    cfg_int(root, "eos_token_id", 1, 0, INT_MAX, &c->eos_id, path, err) ||
	    cfg_int(root, "decoder_start_token_id", c->pad_id, 0, INT_MAX, &c->decoder_start_id, path, err) ||
	    cfg_bool(root, "bidirectional", 1, &c->bidirectional, path, err) ||
	    cfg_bool(root, "gating", 1, &c->gating, path, err) ||
	    cfg_bool(root, "use_fast_fft_conv", 1, &c->use_fast_fft_conv, path, err) ||
	    cfg_bool(root, "tie_word_embeddings", 1, &c->tie_word_embeddings, path, err) ||
	    cfg_num(root, "layer_norm_epsilon", 1e-6, 0, 1, &eps, path, err) ||
	    cfg_str(root, "feed_forward_proj", "gated-gelu", &ffp, path, err))
		return -1;
	if (c->d_state % 2)
		return lc_fail(err, "%s: \"d_state\" must be even (2 x complex modes), not %d", path,
		               c->d_state);
	if (c->num_ssm_heads != 1)
		return lc_fail(err, "%s: num_ssm_heads %d is not supported (only 1, like the authors' "
		               "reference path)", path, c->num_ssm_heads);
	c->eps = (float)eps;
	/* LOCOSTConfig, as T5Config: "gated-gelu" means the tanh GELU (gelu_new) */
	c->is_gated_act = strncmp(ffp, "gated-", 6) == 0;
	name = !strcmp(ffp, "gated-gelu") ? "gelu_new" : c->is_gated_act ? ffp + 6 : ffp;
	if ((act = act_parse(name)) < 0)
		return lc_fail(err, "%s: feed_forward_proj \"%s\": unsupported activation", path, ffp);
	c->act = (enum lc_act)act;
	return 0;
}

static void locost_info(const lc_config *c, FILE *f)
{
	fprintf(f, "d_model\t%d\nd_ff\t%d\nd_kv\t%d\nd_state\t%d\ncomplex_modes\t%d\n", c->d_model,
	        c->d_ff, c->d_kv, c->d_state, c->d_state / 2);
	fprintf(f, "num_layers\t%d\nnum_decoder_layers\t%d\nnum_heads\t%d\nvocab_size\t%d\n",
	        c->num_layers, c->num_decoder_layers, c->num_heads, c->vocab_size);
	fprintf(f, "layer_norm_epsilon\t%g\nfeed_forward\t%s%s\n", (double)c->eps,
	        c->is_gated_act ? "gated-" : "", act_name(c->act));
	fprintf(f, "bidirectional\t%d\ngating\t%d\ntie_word_embeddings\t%d\n", c->bidirectional,
	        c->gating, c->tie_word_embeddings);
	fprintf(f, "use_fast_fft_conv\t%d (ignored: the reference convolution path is always used)\n",
	        c->use_fast_fft_conv);
	fprintf(f, "pad_id\t%d\neos_id\t%d\ndecoder_start_id\t%d\n", c->pad_id, c->eos_id,
	        c->decoder_start_id);
}

/* ----------------------------------------------------------- parameters */

static void locost_weights_free(void *p)
{
	locost_weights *w = p;

	if (!w)
		return;
	t5dec_weights_free(&w->dec);
	free(w->enc);
	free(w);
}

/* The one declaration of LOCOST's parameters (Hugging Face names of the
 * authors' implementation). The order is that of the flat training layout
 * and of checkpoints. */
static void *locost_declare(const lc_config *c, lc_params *p)
{
	locost_weights *w = calloc(1, sizeof *w);
	uint64_t d = (uint64_t)c->d_model, ff = (uint64_t)c->d_ff, n2 = (uint64_t)c->d_state / 2;
	uint64_t nch = c->bidirectional ? 2 : 1;
	const unsigned nd = PARAM_NO_DECAY;

	if (!w || !(w->enc = calloc((size_t)(c->num_layers ? c->num_layers : 1), sizeof *w->enc))) {
		locost_weights_free(w);
		return NULL;
	}
	t5dec_declare_embed(c, &w->dec, p);
	for (int i = 0; i < c->num_layers; i++) {
		locost_layer *L = &w->enc[i];
		char s[96], b[64];
		snprintf(b, sizeof b, "encoder.block.%d.layer.", i);
		snprintf(s, sizeof s, "%s0.ssm_layer.", b);
		params_add(p, &L->prenorm, param_init_norm, nd, D1(d), "%s0.layer_prenorm.weight", b);
		params_add(p, &L->D, ssm_init_half, nd, D1(d), "%sD", s);
		if (c->gating) {
			params_add(p, &L->wq, param_init_matrix, 0, D2(d, d), "%sq_proj.weight", s);
			params_add(p, &L->bq, param_init_bias, nd, D1(d), "%sq_proj.bias", s);
		}
		params_add(p, &L->wk, param_init_matrix, 0, D2(d, d), "%sk_proj.weight", s);
		params_add(p, &L->bk, param_init_bias, nd, D1(d), "%sk_proj.bias", s);
		params_add(p, &L->log_dt, ssm_init_log_dt, nd, D1(d), "%skernel.log_dt", s);
		params_add(p, &L->inv_A_real, ssm_init_inv_A_real, nd, D2(d, n2), "%skernel.inv_A_real", s);
		params_add(p, &L->A_imag, ssm_init_A_imag, nd, D2(d, n2), "%skernel.A_imag", s);
		params_add(p, &L->B, ssm_init_B, nd, D3(d, n2, 2), "%skernel.B", s);
		params_add(p, &L->C, ssm_init_half, nd, D4(nch, d, n2, 2), "%skernel.C", s);
		params_add(p, &L->wo, param_init_matrix, 0, D2(d, d), "%soutput_linear.weight", s);
		params_add(p, &L->bo, param_init_bias, nd, D1(d), "%soutput_linear.bias", s);
		params_add(p, &L->ln, param_init_norm, nd, D1(d), "%s1.layer_norm.weight", b);
		if (c->is_gated_act) {
			params_add(p, &L->wi0, param_init_matrix, 0, D2(ff, d), "%s1.DenseReluDense.wi_0.weight", b);
			params_add(p, &L->wi1, param_init_matrix, 0, D2(ff, d), "%s1.DenseReluDense.wi_1.weight", b);
		} else {
			params_add(p, &L->wi0, param_init_matrix, 0, D2(ff, d), "%s1.DenseReluDense.wi.weight", b);
		}
		params_add(p, &L->wff, param_init_matrix, 0, D2(d, ff), "%s1.DenseReluDense.wo.weight", b);
	}
	params_add(p, &w->enc_final, param_init_norm, nd, D1(d), "encoder.final_layer_norm.weight");
	if (t5dec_declare_layers(c, &w->dec, p) < 0) {
		locost_weights_free(w);
		return NULL;
	}
	return w;
}

ssm_params locost_layer_ssm(const lc_config *c, const locost_layer *L)
{
	ssm_params sp = { c->d_model, c->d_state / 2, c->bidirectional ? 2 : 1, L->log_dt,
	                  L->inv_A_real, L->A_imag, L->B, L->C };
	return sp;
}

/* ------------------------------------------------------------- encoder */

typedef struct enc {
	const lc_config *c;
	const locost_weights *W;
	int d, dff, V, nl, nch, threads;
	cmp_fftcache *fft;              /* plans by size, kept across documents */
} enc;

/* What training keeps of one layer of an L-token source. */
typedef struct tape_layer {
	float *x;                       /* [L, d] block input */
	float *r1, *r2;                 /* [L] RMSNorm scales */
	float *u;                       /* [L, d] normed input */
	float *kT, *yT, *qT;            /* [d, L] k, conv + D k, q (channel-major) */
	float *x1;                      /* [L, d] after the SSM residual */
	float *n;                       /* [L, d] normed x1 */
	float *a, *b, *f;               /* [L, d_ff] */
	float *m1, *m2;                 /* [L, d] dropout masks, or NULL */
} tape_layer;

typedef struct tape {
	int64_t L;
	const int32_t *src;
	float *me;                      /* [L, d] embedding mask, or NULL */
	float *h;                       /* [L, d] the last block's output */
	float *rf;                      /* [L] */
	float *out;                     /* [L, d] the encoder states */
	tape_layer *l;                  /* [nl] */
} tape;

typedef struct tscratch {
	float *u;                       /* [ROWS, d] */
	float *qT;                      /* [d, ROWS] q, then the gated product */
	float *a, *b;                   /* [ROWS, d_ff] */
	float *tmp;                     /* [ROWS, d] a sublayer's output before dropout */
	float *K;                       /* [nch, Tmax] */
	ssm_kwork *kw;
	ssm_cwork *cw;
} tscratch;

/* One layer's passes over a length-len input. */
typedef struct run {
	const enc *e;
	const locost_layer *L;
	ssm_params sp;
	float *h;                       /* [len, d] residual stream (the output) */
	float *kT;                      /* [d, len] k, then (inference) the SSM output */
	float *yT;                      /* [d, len] the SSM output (== kT unless training) */
	int64_t len, nblk;
	int64_t ld;                     /* row stride of kT, yT (and training's qT) */
	int64_t *T;                     /* [d] kernel support per channel (inference) */
	const float *K;                 /* training: this layer's kernels [nch, d, Kld] */
	int64_t Kld;
	const cmp_fft *pl;              /* training: one FFT size for every channel */
	const cmp_fft *const *plh;      /* inference: [d] each channel's, by its support */
	tscratch *ts;                   /* [threads] */
	tape_layer *tl;                 /* training */
	int gemm_only;
	int failed;
	lc_err err;
} run;

static void blk_range(const run *r, int64_t b, int64_t *r0, int64_t *R)
{
	*r0 = b * LOCOST_ROWS;
	*R = r->len - *r0 < LOCOST_ROWS ? r->len - *r0 : LOCOST_ROWS;
}

/* pass 1: kT[:, rows] = Wk RMSNorm(h[rows])^T + bk */
static void pass_k(void *ctx, int64_t b, int tid)
{
	run *r = ctx;
	const enc *e = r->e;
	tscratch *s = &r->ts[tid];
	int d = e->d;
	int64_t r0, R;
	float *h, *u;

	blk_range(r, b, &r0, &R);
	h = r->h + r0 * d;
	u = r->tl ? r->tl->u + r0 * d : s->u;
	if (r->tl)
		memcpy(r->tl->x + r0 * d, h, (size_t)(R * d) * sizeof *h);
	if (!r->gemm_only)
		rmsnorm_fw(h, R, d, r->L->prenorm, e->c->eps, u, r->tl ? r->tl->r1 + r0 : NULL);
	linear_fw_to_t(r->kT + r0, r->ld, u, r->L->wk, r->gemm_only ? NULL : r->L->bk, R, d, d);
}

/* pass 2: channel h: yT[h, :] = conv(kT[h, :]) + D k */
static void pass_conv(void *ctx, int64_t h, int tid)
{
	run *r = ctx;
	tscratch *s = &r->ts[tid];
	const float *K0, *K1;
	int64_t T;
	lc_err err;

	if (r->K) {
		T = r->len;
		K0 = r->K + h * r->Kld;
		K1 = r->sp.nch > 1 ? r->K + ((int64_t)r->e->d + h) * r->Kld : NULL;
	} else {
		T = r->T[h];
		if (ssm_kernel(&r->sp, (int)h, T, s->K, T, s->kw, &err) < 0)
			goto fail;
		K0 = s->K;
		K1 = r->sp.nch > 1 ? s->K + T : NULL;
	}
	if (ssm_conv(r->K ? r->pl : r->plh[h], s->cw, r->kT + h * r->ld, r->len, K0, K1, T,
	             r->L->D[h], r->yT + h * r->ld, &err) == 0)
		return;
fail:
	if (!r->failed) {
		r->failed = 1;
		r->err = err;
	}
}

/* pass 3: gating, output_linear, residual, feed-forward, residual */
static void pass_rest(void *ctx, int64_t b, int tid)
{
	run *r = ctx;
	const enc *e = r->e;
	const locost_layer *L = r->L;
	tape_layer *tl = r->tl;
	tscratch *s = &r->ts[tid];
	int d = e->d, dff = e->dff, go = r->gemm_only;
	int64_t r0, R, ldg;
	float *h, *u, *g, *n, *a, *bb, *f;
	const float *m1, *m2;

	blk_range(r, b, &r0, &R);
	h = r->h + r0 * d;
	m1 = tl && tl->m1 ? tl->m1 + r0 * d : NULL;
	m2 = tl && tl->m2 ? tl->m2 + r0 * d : NULL;
	if (tl) {
		u = tl->u + r0 * d;
	} else {
		u = s->u;
		if (!go)
			rmsnorm_fw(h, R, d, L->prenorm, e->c->eps, u, NULL);
	}
	if (L->wq) {
		float *qT = tl ? tl->qT + r0 : s->qT;
		int64_t ldq = tl ? r->ld : R;
		linear_fw_to_t(qT, ldq, u, L->wq, go ? NULL : L->bq, R, d, d);
		/* g = q * y: in place in q, or (training keeps q) in the scratch */
		g = s->qT;
		ldg = R;
		if (!go)
			for (int c = 0; c < d; c++)
				vm_mul(qT + (int64_t)c * ldq, r->yT + (int64_t)c * r->ld + r0,
				       g + (int64_t)c * R, R);
	} else {
		g = r->yT + r0;
		ldg = r->ld;
	}
	/* Both residual products write a scratch block, added to h apart
	 * (after the output projection, with the norm that reads it): oneDNN
	 * accumulating into h itself (beta 1, its sum post-op) ran the
	 * output projection at 0.80 of the rate of writing a scratch block
	 * in bf16 (0.90 in fp32) and the feed-forward's last at 0.91-0.94
	 * (256 rows, 2 threads, here). */
	n = tl ? tl->n + r0 * d : s->u;
	linear_fw_from_t(s->tmp, g, ldg, L->wo, go ? NULL : L->bo, R, d, d, 0.0f);
	if (m1) {
		residual_add(h, h, s->tmp, m1, R * d);
		rmsnorm_fw(h, R, d, L->ln, e->c->eps, n, tl->r2 + r0);
	} else if (!go) {
		rmsnorm_fw_res(h, s->tmp, R, d, L->ln, e->c->eps, n, tl ? tl->r2 + r0 : NULL);
	}
	if (tl)
		memcpy(tl->x1 + r0 * d, h, (size_t)(R * d) * sizeof *h);
	a = tl ? tl->a + r0 * dff : s->a;
	bb = tl ? tl->b + r0 * dff : s->b;
	f = tl ? tl->f + r0 * dff : a;
	linear_fw(a, n, L->wi0, NULL, R, dff, d, 0.0f, 0);
	if (L->wi1)
		linear_fw(bb, n, L->wi1, NULL, R, dff, d, 0.0f, 0);
	if (!go)
		act_fw(e->c->act, a, L->wi1 ? bb : NULL, R * dff, f);
	linear_fw(s->tmp, f, L->wff, NULL, R, d, dff, 0.0f, 0);
	if (m2)
		residual_add(h, h, s->tmp, m2, R * d);
	else if (!go)
		vm_madd(h, 1.0f, s->tmp, h, R * d);
}

static void free_scratch(tscratch *ts, int n)
{
	if (!ts)
		return;
	for (int t = 0; t < n; t++) {
		free(ts[t].u);
		free(ts[t].qT);
		free(ts[t].a);
		free(ts[t].b);
		free(ts[t].tmp);
		free(ts[t].K);
		ssm_kwork_free(ts[t].kw);
		ssm_cwork_free(ts[t].cw);
	}
	free(ts);
}

/* n threads' scratch; with Tmax > 0 also kernel buffers (inference), with
 * nfft > 0 convolution buffers. */
static tscratch *new_scratch(const enc *e, int n, int64_t Tmax, int64_t nfft, lc_err *err)
{
	tscratch *ts = calloc((size_t)n, sizeof *ts);
	size_t rd = (size_t)LOCOST_ROWS * (size_t)e->d, rf = (size_t)LOCOST_ROWS * (size_t)e->dff;

	if (!ts)
		goto oom;
	for (int t = 0; t < n; t++) {
		ts[t].u = calloc(rd, sizeof(float));
		ts[t].qT = calloc(rd, sizeof(float));
		ts[t].a = calloc(rf, sizeof(float));
		ts[t].b = calloc(rf, sizeof(float));
		ts[t].tmp = calloc(rd, sizeof(float));
		if (!ts[t].u || !ts[t].qT || !ts[t].a || !ts[t].b || !ts[t].tmp)
			goto oom;
		if (Tmax > 0) {
			if (!(ts[t].K = malloc((size_t)e->nch * (size_t)Tmax * sizeof(float))))
				goto oom;
			if (!(ts[t].kw = ssm_kwork_new(e->c->d_state / 2, e->nch, Tmax, err))) {
				free_scratch(ts, n);
				return NULL;
			}
		}
		if (nfft > 0 && !(ts[t].cw = ssm_cwork_new(nfft, err))) {
			free_scratch(ts, n);
			return NULL;
		}
	}
	return ts;
oom:
	free_scratch(ts, n);
	lc_fail(err, "out of memory for encoder scratch");
	return NULL;
}

static void enc_setup(enc *e, const lc_config *c, const locost_weights *W, int threads)
{
	e->c = c;
	e->W = W;
	e->d = c->d_model;
	e->dff = c->d_ff;
	e->V = c->vocab_size;
	e->nl = c->num_layers;
	e->nch = c->bidirectional ? 2 : 1;
	e->threads = threads < 1 ? 1 : threads;
}

static void *enc_open(lc_model *m, int threads, lc_err *err)
{
	enc *e = calloc(1, sizeof *e);

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	enc_setup(e, model_config(m), model_weights(m), threads);
	if (!(e->fft = cmp_fftcache_new(err))) {
		free(e);
		return NULL;
	}
	return e;
}

static void enc_close(void *p)
{
	enc *e = p;

	if (!e)
		return;
	cmp_fftcache_free(e->fft);
	free(e);
}

static int64_t enc_out_len(const void *e, int64_t L)
{
	(void)e;
	return L;
}

static int check_ids(const enc *e, const int32_t *ids, int64_t L, lc_err *err)
{
	if (L < 1)
		return lc_fail(err, "empty input (no tokens)");
	if ((uint64_t)L > (UINT64_MAX / 8) / (uint64_t)e->d || L > INT32_MAX / 2)
		return lc_fail(err, "input of %lld tokens is too long", (long long)L);
	for (int64_t t = 0; t < L; t++)
		if (ids[t] < 0 || ids[t] >= e->V)
			return lc_fail(err, "token %lld: id %ld is outside the vocabulary [0, %d)",
			               (long long)t, (long)ids[t], e->V);
	return 0;
}

/* The row stride of the channel-major arrays at inference: L rounded up
 * to 16 floats (64-byte rows), plus 16 where that is a multiple of 1024
 * floats (4 KiB). output_linear reads 256 columns of yT across its 768
 * rows; at a stride of a power of two (a 64K-token bench) those rows fall
 * on the same cache sets and oneDNN ran that product at 258 GFLOP/s
 * against 338 a stride of 32,512 (256 x 768 x 768, 2 threads, here). */
static int64_t chan_ld(int64_t L)
{
	int64_t ld = (L + 15) / 16 * 16;

	return ld % 1024 ? ld : ld + 16;
}

/* The kernel support of every layer's channels, T[i d + h] (a bisection
 * of twenty-odd tail bounds each: 0.5 s on one thread for 12 x 768
 * channels at 64K tokens, here). */
struct support_job {
	const enc *e;
	int64_t L;
	int64_t *T;
};

static void support_one(void *ctx, int64_t k, int tid)
{
	const struct support_job *j = ctx;
	int d = j->e->d, i = (int)(k / d);
	ssm_params sp = locost_layer_ssm(j->e->c, &j->e->W->enc[i]);

	(void)tid;
	j->T[k] = ssm_support(&sp, (int)(k % d), j->L);
}

/* Inference: the first nl blocks (nl < 0: all, then the final norm). */
static int encode(enc *e, const int32_t *ids, int64_t L, float *out, int nlayers,
                  void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	int d = e->d, nl = nlayers < 0 || nlayers > e->nl ? e->nl : nlayers, threads = e->threads;
	int64_t *T = NULL, Tmax = 0, nmax = 0;
	const cmp_fft **plans = NULL;
	float *kT = NULL;
	run r;
	int rc = -1;

	memset(&r, 0, sizeof r);
	if (check_ids(e, ids, L, err) < 0)
		return -1;
	r.ld = chan_ld(L);
	embed_fw(e->W->dec.shared, d, ids, L, 1.0f, out);
	if (cmp_init(err) < 0)
		return -1;
	/* kernel supports and FFT sizes of every layer, up front */
	if (nl > 0) {
		struct support_job sj = { e, L, NULL };
		if (!(T = sj.T = malloc((size_t)nl * (size_t)d * sizeof *T))) {
			lc_fail(err, "out of memory (%lld tokens)", (long long)L);
			goto out;
		}
		par_for(threads, (int64_t)nl * d, support_one, &sj);
		/* the whole encoder on the GPU where there is one (and memory) */
		if (cmp_dev_on()) {
			int g = locost_gpu_encode(e->c, e->W, L, out, nl, nlayers < 0, T, threads,
			                          progress, ctx, err);
			if (g <= 0) {
				rc = g;
				goto out;
			}
		}
		plans = calloc((size_t)nl * (size_t)d, sizeof *plans);
		kT = malloc((size_t)r.ld * (size_t)d * sizeof *kT);
		if (!plans || !kT) {
			lc_fail(err, "out of memory (%lld tokens)", (long long)L);
			goto out;
		}
	}
	/* each channel's FFTs only as long as its own support needs: most
	 * channels' kernels die out well before L (at 65,536 tokens, 70% of a
	 * random full-size model's within L / 4), and a cycle of L + T - 1
	 * costs about half of one of 2 L; the shortest go by blocks */
	for (int64_t k = 0; k < (int64_t)nl * d; k++) {
		int64_t n = ssm_conv_size(L, T[k], e->nch > 1);
		if (T[k] > Tmax)
			Tmax = T[k];
		if (!(plans[k] = cmp_fft_get(e->fft, n, err)))
			goto out;
		if (n > nmax)
			nmax = n;
	}
	r.e = e;
	r.h = out;
	r.kT = r.yT = kT;
	r.len = L;
	r.nblk = (L + LOCOST_ROWS - 1) / LOCOST_ROWS;
	if (!(r.ts = new_scratch(e, threads, Tmax, nmax, err)))
		goto out;
	for (int i = 0; i < nl; i++) {
		r.L = &e->W->enc[i];
		r.sp = locost_layer_ssm(e->c, r.L);
		r.T = T + i * d;
		r.plh = plans + (size_t)i * (size_t)d;
		par_for(threads, r.nblk, pass_k, &r);
		par_for(threads, d, pass_conv, &r);
		if (r.failed) {
			*err = r.err;
			goto out;
		}
		par_for(threads, r.nblk, pass_rest, &r);
		if (progress)
			progress(ctx, i + 1, e->nl);
	}
	if (nlayers < 0)
		rmsnorm_fw(out, L, d, e->W->enc_final, e->c->eps, out, NULL);
	rc = 0;
out:
	free_scratch(r.ts, threads);
	free(plans);
	free(T);
	free(kT);
	return rc;
}

static int enc_run(void *p, const int32_t *ids, int64_t L, float *out,
                   void (*progress)(void *, int, int), void *ctx, lc_err *err)
{
	return encode(p, ids, L, out, -1, progress, ctx, err);
}

static int enc_gemm_only(void *p, int64_t L, double *seconds, lc_err *err)
{
	enc *e = p;
	run r;
	float *h, *kT;
	double t0;
	int rc = -1;

	if (L < 1)
		return lc_fail(err, "empty input");
	if (L > INT32_MAX / 2)          /* as check_ids */
		return lc_fail(err, "input of %lld tokens is too long", (long long)L);
	memset(&r, 0, sizeof r);
	r.ld = chan_ld(L);
	h = calloc((size_t)L * (size_t)e->d, sizeof *h);
	kT = calloc((size_t)r.ld * (size_t)e->d, sizeof *kT);
	if (!h || !kT) {
		lc_fail(err, "out of memory (%lld tokens)", (long long)L);
		goto out;
	}
	r.e = e;
	r.h = h;
	r.kT = r.yT = kT;
	r.len = L;
	r.nblk = (L + LOCOST_ROWS - 1) / LOCOST_ROWS;
	r.gemm_only = 1;
	if (!(r.ts = new_scratch(e, e->threads, 0, 0, err)))
		goto out;
	if (cmp_init(err) < 0)
		goto out;
	t0 = clock_now();
	for (int i = 0; i < e->nl; i++) {
		r.L = &e->W->enc[i];
		par_for(e->threads, r.nblk, pass_k, &r);
		par_for(e->threads, r.nblk, pass_rest, &r);
	}
	*seconds = clock_now() - t0;
	rc = 0;
out:
	free_scratch(r.ts, e->threads);
	free(h);
	free(kT);
	return rc;
}

int locost_encode_layers(lc_model *m, const int32_t *ids, int64_t L, float *out, int nlayers,
                         lc_err *err)
{
	enc *e = enc_open(m, 1, err);
	int rc;

	if (!e)
		return -1;
	rc = encode(e, ids, L, out, nlayers, NULL, NULL, err);
	enc_close(e);
	return rc;
}

int locost_trace_layer(lc_model *m, int layer_ix, const float *x, int64_t L, locost_trace *t,
                       lc_err *err)
{
	const lc_config *c = model_config(m);
	const locost_weights *W = model_weights(m);
	const locost_layer *ly;
	ssm_params sp;
	int d = c->d_model;
	float *u = NULL, *kT = NULL, *qT = NULL, *yT = NULL, *K = NULL;
	ssm_kwork *kw = NULL;
	ssm_cwork *cw = NULL;
	cmp_fftcache *fc = NULL;
	const cmp_fft *pl;
	int rc = -1, nch;

	if (layer_ix < 0 || layer_ix >= c->num_layers)
		return lc_fail(err, "no layer %d", layer_ix);
	if (L < 1)
		return lc_fail(err, "empty input");
	ly = &W->enc[layer_ix];
	sp = locost_layer_ssm(c, ly);
	nch = sp.nch;
	u = malloc((size_t)(L * d) * sizeof *u);
	kT = malloc((size_t)(L * d) * sizeof *kT);
	qT = malloc((size_t)(L * d) * sizeof *qT);
	yT = malloc((size_t)(L * d) * sizeof *yT);
	K = malloc((size_t)(nch * L) * sizeof *K);
	if (!u || !kT || !qT || !yT || !K) {
		lc_fail(err, "out of memory");
		goto out;
	}
	if (!(kw = ssm_kwork_new(sp.N2, nch, L, err)) || !(fc = cmp_fftcache_new(err)) ||
	    !(pl = cmp_fft_get(fc, ssm_fft_size(L, L), err)) ||
	    !(cw = ssm_cwork_new(cmp_fft_n(pl), err)))
		goto out;
	if (cmp_init(err) < 0)
		goto out;
	rmsnorm_fw(x, L, d, ly->prenorm, c->eps, u, NULL);
	linear_fw_to_t(kT, L, u, ly->wk, ly->bk, L, d, d);
	if (ly->wq)
		linear_fw_to_t(qT, L, u, ly->wq, ly->bq, L, d, d);
	else
		for (int64_t i = 0; i < L * d; i++)
			qT[i] = 1;
#define ROWMAJOR(dst, srcT) do { if (dst) for (int64_t r_ = 0; r_ < L; r_++) \
	for (int c_ = 0; c_ < d; c_++) (dst)[r_ * d + c_] = (srcT)[(int64_t)c_ * L + r_]; } while (0)
	if (t->prenorm)
		memcpy(t->prenorm, u, (size_t)(L * d) * sizeof *u);
	ROWMAJOR(t->k, kT);
	ROWMAJOR(t->q, qT);
	for (int h = 0; h < d; h++) {
		/* full-length kernels, as the reference (no truncation) */
		if (ssm_kernel(&sp, h, L, K, L, kw, err) < 0)
			goto out;
		if (t->K0)
			memcpy(t->K0 + (int64_t)h * L, K, (size_t)L * sizeof *K);
		if (t->K1 && nch > 1)
			memcpy(t->K1 + (int64_t)h * L, K + L, (size_t)L * sizeof *K);
		if (ssm_conv(pl, cw, kT + (int64_t)h * L, L, K, nch > 1 ? K + L : NULL, L, 0.0f,
		             yT + (int64_t)h * L, err) < 0)
			goto out;
	}
	ROWMAJOR(t->conv, yT);
	for (int h = 0; h < d; h++)
		for (int64_t j = 0; j < L; j++)
			yT[(int64_t)h * L + j] += ly->D[h] * kT[(int64_t)h * L + j];
	ROWMAJOR(t->convD, yT);
	for (int64_t i = 0; i < L * d; i++)
		yT[i] *= qT[i];
	ROWMAJOR(t->gated, yT);
	if (t->ssm_out) {
		memset(t->ssm_out, 0, (size_t)(L * d) * sizeof *t->ssm_out);
		linear_fw_from_t(t->ssm_out, yT, L, ly->wo, ly->bo, L, d, d, 1.0f);
	}
#undef ROWMAJOR
	rc = 0;
out:
	free(u);
	free(kT);
	free(qT);
	free(yT);
	free(K);
	ssm_kwork_free(kw);
	ssm_cwork_free(cw);
	cmp_fftcache_free(fc);
	return rc;
}

static const lc_enc_ops locost_enc_ops = {
	.open = enc_open, .close = enc_close, .out_len = enc_out_len, .run = enc_run,
	.gemm_only = enc_gemm_only,
};

/* ----------------------------------------------------------- decoder */

static void *dec_open(lc_model *m, lc_err *err)
{
	const locost_weights *W = model_weights(m);
	return t5dec_open(model_config(m), &W->dec, err);
}

static const lc_dec_ops locost_dec_ops = {
	dec_open, t5dec_close, t5dec_state_new, t5dec_state_free, t5dec_state_threads,
	t5dec_step, t5dec_reorder, t5dec_keep, t5dec_pos, t5dec_groups, 1,
};

/* ------------------------------------------------------------ training */

/* The state of a step shared by its examples: the kernels of every layer
 * at the step's longest source, each part's kernel gradients and
 * convolution buffers, and the plans. */
typedef struct shared {
	const lc_config *c;
	int parts, d, nl, nch;
	int64_t Lmax;                   /* of this step */
	float *K;                       /* [nl, nch, d, Lmax] */
	float **dK;                     /* [parts][nl, nch, d, Lmax] */
	size_t kcap;
	ssm_cwork **cw;                 /* [parts] */
	int64_t cw_n;
	cmp_fftcache *fft;
	/* step_begin / step_end's job */
	const locost_weights *W;
	locost_weights *G;
	int failed;
} shared;

static void tr_free(void *p)
{
	shared *s = p;

	if (!s)
		return;
	for (int i = 0; i < s->parts; i++) {
		if (s->dK)
			free(s->dK[i]);
		if (s->cw)
			ssm_cwork_free(s->cw[i]);
	}
	free(s->dK);
	free(s->cw);
	free(s->K);
	cmp_fftcache_free(s->fft);
	free(s);
}

static void *tr_new(const lc_config *c, int parts, lc_err *err)
{
	shared *s;

	if (t5dec_check(c, err) < 0)   /* what decoding refuses, training does too */
		return NULL;
	s = calloc(1, sizeof *s);
	if (!s || !(s->dK = calloc((size_t)parts, sizeof *s->dK)) ||
	    !(s->cw = calloc((size_t)parts, sizeof *s->cw))) {
		tr_free(s);
		lc_fail(err, "out of memory");
		return NULL;
	}
	s->c = c;
	s->parts = parts;
	s->d = c->d_model;
	s->nl = c->num_layers;
	s->nch = c->bidirectional ? 2 : 1;
	if (!(s->fft = cmp_fftcache_new(err))) {
		tr_free(s);
		return NULL;
	}
	return s;
}

static void kernels_one(void *ctx, int64_t i, int tid)
{
	shared *s = ctx;
	int li = (int)(i / s->d), h = (int)(i % s->d);
	ssm_params sp = locost_layer_ssm(s->c, &s->W->enc[li]);
	ssm_kwork *kw;
	lc_err err;

	(void)tid;
	/* per item: the scratch is small next to the kernels themselves */
	if (!(kw = ssm_kwork_new(sp.N2, sp.nch, s->Lmax, &err)) ||
	    ssm_kernel(&sp, h, s->Lmax, s->K + ((size_t)li * s->nch * s->d + (size_t)h) * s->Lmax,
	               (int64_t)s->d * s->Lmax, kw, &err) < 0)
		s->failed = 1;
	ssm_kwork_free(kw);
}

static int tr_step_begin(void *p, const void *W, int64_t Lmax, int threads, lc_err *err)
{
	shared *s = p;
	size_t nK = (size_t)s->nl * (size_t)s->nch * (size_t)s->d * (size_t)Lmax;
	int64_t n = ssm_fft_size(Lmax, Lmax);

	if (nK > s->kcap) {
		float *k = realloc(s->K, nK * sizeof *k);
		if (!k)
			return lc_fail(err, "out of memory for kernels of length %lld", (long long)Lmax);
		s->K = k;
		for (int i = 0; i < s->parts; i++) {
			if (!(k = realloc(s->dK[i], nK * sizeof *k)))
				return lc_fail(err, "out of memory for kernels of length %lld", (long long)Lmax);
			s->dK[i] = k;
		}
		s->kcap = nK;
	}
	if (n > s->cw_n) {
		for (int i = 0; i < s->parts; i++) {
			ssm_cwork_free(s->cw[i]);
			if (!(s->cw[i] = ssm_cwork_new(n, err)))
				return -1;
		}
		s->cw_n = n;
	}
	for (int i = 0; i < s->parts; i++)
		memset(s->dK[i], 0, nK * sizeof(float));
	s->Lmax = Lmax;
	s->W = W;
	s->failed = 0;
	if (cmp_init(err) < 0)
		return -1;
	par_for(threads, (int64_t)s->nl * s->d, kernels_one, s);
	return s->failed ? lc_fail(err, "out of memory for the kernels") : 0;
}

static void kernels_bw_one(void *ctx, int64_t i, int tid)
{
	shared *s = ctx;
	int li = (int)(i / s->d), h = (int)(i % s->d);
	ssm_params sp = locost_layer_ssm(s->c, &s->W->enc[li]);
	const locost_layer *G = &s->G->enc[li];
	ssm_grads g = { G->log_dt, G->inv_A_real, G->A_imag, G->B, G->C };

	(void)tid;
	if (ssm_kernel_backward(&sp, h, s->Lmax,
	                        s->dK[0] + ((size_t)li * s->nch * s->d + (size_t)h) * s->Lmax,
	                        (int64_t)s->d * s->Lmax, &g, NULL) < 0)
		s->failed = 1;
}

static int tr_step_end(void *p, const void *W, void *G, int threads, lc_err *err)
{
	shared *s = p;
	size_t nK = (size_t)s->nl * (size_t)s->nch * (size_t)s->d * (size_t)s->Lmax;

	for (int i = 1; i < s->parts; i++)
		for (size_t k = 0; k < nK; k++)
			s->dK[0][k] += s->dK[i][k];
	s->W = W;
	s->G = G;
	s->failed = 0;
	par_for(threads, (int64_t)s->nl * s->d, kernels_bw_one, s);
	return s->failed ? lc_fail(err, "out of memory") : 0;
}

static float *mask(lc_arena *a, int64_t n, double p, uint64_t *rng)
{
	float *m;

	if (p <= 0)
		return NULL;
	if ((m = lc_arena_f32(a, n)))
		dropout_mask(m, n, p, rng);
	return m;
}

static void *tr_enc_fw(void *p, int part, const void *Wv, const int32_t *src, int64_t L,
                       lc_arena *a, double pd, uint64_t *rng, float **E, int64_t *Le,
                       lc_err *err)
{
	shared *s = p;
	const locost_weights *W = Wv;
	enc e;
	run r;
	tape *tp;
	int d, dff;

	enc_setup(&e, s->c, W, 1);
	d = e.d;
	dff = e.dff;
	if (check_ids(&e, src, L, err) < 0)
		return NULL;
	if (L > s->Lmax) {
		lc_fail(err, "source of %lld tokens is longer than the kernels (%lld)", (long long)L,
		        (long long)s->Lmax);
		return NULL;
	}
	memset(&r, 0, sizeof r);
	tp = lc_arena_bytes(a, sizeof *tp);
	if (!tp || !(tp->l = lc_arena_bytes(a, (int64_t)(e.nl ? e.nl : 1) * (int64_t)sizeof *tp->l)))
		goto oom;
	tp->L = L;
	tp->src = src;
	tp->h = lc_arena_f32(a, L * d);
	tp->rf = lc_arena_f32(a, L);
	tp->out = lc_arena_f32(a, L * d);
	for (int i = 0; i < e.nl; i++) {
		tape_layer *l = &tp->l[i];
		l->x = lc_arena_f32(a, L * d); l->r1 = lc_arena_f32(a, L); l->r2 = lc_arena_f32(a, L);
		l->u = lc_arena_f32(a, L * d); l->kT = lc_arena_f32(a, L * d);
		l->yT = lc_arena_f32(a, L * d); l->qT = lc_arena_f32(a, L * d);
		l->x1 = lc_arena_f32(a, L * d); l->n = lc_arena_f32(a, L * d);
		l->a = lc_arena_f32(a, L * dff); l->b = lc_arena_f32(a, L * dff);
		l->f = lc_arena_f32(a, L * dff);
	}
	if (!lc_arena_ok(a))
		goto oom;
	/* the masks in the order of the forward: embeddings, then per layer */
	embed_fw(W->dec.shared, d, src, L, 1.0f, tp->h);
	if ((tp->me = mask(a, L * d, pd, rng)))
		dropout_apply(tp->h, tp->me, L * d);
	if (!(r.ts = new_scratch(&e, 1, 0, 0, err)))
		return NULL;
	r.ts[0].cw = s->cw[part];
	r.e = &e;
	r.h = tp->h;
	r.len = L;
	r.ld = L;
	r.nblk = (L + LOCOST_ROWS - 1) / LOCOST_ROWS;
	r.Kld = s->Lmax;
	if (!(r.pl = cmp_fft_get(s->fft, ssm_fft_size(L, L), err))) {
		r.ts[0].cw = NULL;
		free_scratch(r.ts, 1);
		return NULL;
	}
	for (int i = 0; i < e.nl; i++) {
		tape_layer *l = &tp->l[i];
		l->m1 = mask(a, L * d, pd, rng);
		l->m2 = mask(a, L * d, pd, rng);
		if (!lc_arena_ok(a))
			break;
		r.L = &W->enc[i];
		r.sp = locost_layer_ssm(s->c, r.L);
		r.K = s->K + (size_t)i * s->nch * s->d * s->Lmax;
		r.tl = l;
		r.kT = l->kT;
		r.yT = l->yT;
		par_for(1, r.nblk, pass_k, &r);
		par_for(1, d, pass_conv, &r);
		if (r.failed)
			break;
		par_for(1, r.nblk, pass_rest, &r);
	}
	r.ts[0].cw = NULL;   /* the part's, not ours */
	free_scratch(r.ts, 1);
	if (r.failed) {
		*err = r.err;
		return NULL;
	}
	if (!lc_arena_ok(a))
		goto oom;
	rmsnorm_fw(tp->h, L, d, W->enc_final, s->c->eps, tp->out, tp->rf);
	*E = tp->out;
	*Le = L;
	return tp;
oom:
	lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
	return NULL;
}

static int tr_enc_bw(void *p, int part, const void *Wv, void *Gv, void *tv, const float *dE,
                     lc_err *err)
{
	shared *s = p;
	const locost_weights *W = Wv;
	locost_weights *G = Gv;
	tape *tp = tv;
	int64_t L = tp->L, Kld = s->Lmax;
	int d = s->d, dff = s->c->d_ff, nch = s->nch;
	lc_arena a = { 0 };
	float *dx, *d1, *du, *dA, *dB, *dgT, *dyT, *dqT, *dkT, *gT;
	const cmp_fft *pl;
	ssm_cwork *cw = s->cw[part];
	int rc = -1;

	dx = lc_arena_f32(&a, L * d); d1 = lc_arena_f32(&a, L * d); du = lc_arena_f32(&a, L * d);
	dA = lc_arena_f32(&a, L * dff); dB = lc_arena_f32(&a, L * dff);
	dgT = lc_arena_f32(&a, L * d); dyT = lc_arena_f32(&a, L * d); dqT = lc_arena_f32(&a, L * d);
	dkT = lc_arena_f32(&a, L * d); gT = lc_arena_f32(&a, L * d);
	if (!lc_arena_ok(&a)) {
		lc_fail(err, "out of memory (source of %lld tokens)", (long long)L);
		goto out;
	}
	if (!(pl = cmp_fft_get(s->fft, ssm_fft_size(L, L), err)))
		goto out;
	rmsnorm_bw(dE, tp->h, tp->rf, W->enc_final, L, d, dx, G->enc_final);
	for (int li = s->nl - 1; li >= 0; li--) {
		const locost_layer *Lw = &W->enc[li];
		locost_layer *Lg = &G->enc[li];
		tape_layer *l = &tp->l[li];
		const float *K = s->K + (size_t)li * nch * d * Kld;
		float *dK = s->dK[part] + (size_t)li * nch * d * Kld;

		/* feed-forward: x_next = x1 + m2 (f wff^T) */
		for (int64_t i = 0; i < L * d; i++)
			d1[i] = l->m2 ? dx[i] * l->m2[i] : dx[i];
		memset(dA, 0, (size_t)(L * dff) * sizeof *dA);
		linear_bw(d1, l->f, Lw->wff, L, d, dff, dA, Lg->wff, NULL);
		act_bw(s->c->act, l->a, Lw->wi1 ? l->b : NULL, dA, L * dff, dA, Lw->wi1 ? dB : NULL);
		memset(du, 0, (size_t)(L * d) * sizeof *du);
		linear_bw(dA, l->n, Lw->wi0, L, dff, d, du, Lg->wi0, NULL);
		if (Lw->wi1)
			linear_bw(dB, l->n, Lw->wi1, L, dff, d, du, Lg->wi1, NULL);
		rmsnorm_bw(du, l->x1, l->r2, Lw->ln, L, d, dx, Lg->ln);   /* dx is now d(x1) */

		/* SSM branch: x1 = x + m1 (g^T Wo^T + bo), g = q * y */
		for (int64_t i = 0; i < L * d; i++)
			d1[i] = l->m1 ? dx[i] * l->m1[i] : dx[i];
		if (Lw->wq)
			for (int64_t i = 0; i < L * d; i++)
				gT[i] = l->qT[i] * l->yT[i];
		memset(dgT, 0, (size_t)(L * d) * sizeof *dgT);
		linear_bw_from_t(d1, Lw->wq ? gT : l->yT, L, Lw->wo, L, d, d, dgT, Lg->wo, Lg->bo);
		for (int64_t i = 0; i < L * d; i++) {
			dyT[i] = Lw->wq ? dgT[i] * l->qT[i] : dgT[i];
			dqT[i] = Lw->wq ? dgT[i] * l->yT[i] : 0;
		}
		memset(dkT, 0, (size_t)(L * d) * sizeof *dkT);
		for (int h = 0; h < d; h++) {
			double dD = 0;
			ssm_conv_backward(pl, cw, l->kT + (int64_t)h * L, L, K + (int64_t)h * Kld,
			                  nch > 1 ? K + ((int64_t)d + h) * Kld : NULL, L, Lw->D[h],
			                  dyT + (int64_t)h * L, dkT + (int64_t)h * L, dK + (int64_t)h * Kld,
			                  nch > 1 ? dK + ((int64_t)d + h) * Kld : NULL, &dD);
			Lg->D[h] += (float)dD;
		}
		memset(du, 0, (size_t)(L * d) * sizeof *du);
		linear_bw_to_t(dkT, L, l->u, Lw->wk, L, d, d, du, Lg->wk, Lg->bk);
		if (Lw->wq)
			linear_bw_to_t(dqT, L, l->u, Lw->wq, L, d, d, du, Lg->wq, Lg->bq);
		rmsnorm_bw(du, l->x, l->r1, Lw->prenorm, L, d, dx, Lg->prenorm);   /* d(x) */
	}
	if (tp->me)
		dropout_apply(dx, tp->me, L * d);
	embed_bw(G->dec.shared, d, tp->src, L, 1.0f, dx);
	rc = 0;
out:
	lc_arena_free(&a);
	return rc;
}

static void *tr_dec_fw(void *p, const void *Wv, const float *E, int64_t Le, const int32_t *in,
                       int64_t T, lc_arena *a, double pd, uint64_t *rng, float **logits,
                       lc_err *err)
{
	const shared *s = p;
	const locost_weights *W = Wv;
	return t5dec_train_fw(s->c, &W->dec, E, Le, in, T, a, pd, rng, logits, err);
}

static int tr_dec_bw(void *p, const void *Wv, void *Gv, void *tape, float *dlogits, float *dE,
                     lc_err *err)
{
	const shared *s = p;
	const locost_weights *W = Wv;
	locost_weights *G = Gv;
	return t5dec_train_bw(s->c, &W->dec, &G->dec, tape, dlogits, dE, err);
}

static const lc_train_ops locost_train_ops = {
	tr_new, tr_free, tr_step_begin, tr_step_end, tr_enc_fw, tr_enc_bw, tr_dec_fw, tr_dec_bw,
};

/* ------------------------------------------------------------- the arch */

static const char *const hf_classes[] = { "LOCOSTForConditionalGeneration", NULL };

const lc_arch arch_locost = {
	.name = "locost",
	.hf_classes = hf_classes,
	.model_type = "locost",
	.config = locost_config,
	.declare = locost_declare,
	.weights_free = locost_weights_free,
	.info = locost_info,
	.enc = &locost_enc_ops,
	.dec = &locost_dec_ops,
	.train = &locost_train_ops,
};
