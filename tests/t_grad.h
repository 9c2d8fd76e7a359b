/*
 * t_grad: what the training-gradient tests share (test_train_grads,
 * test_bart_grads, test_bartls_grads, test_topdown_grads): a trainer over
 * a model directory (the rig) and its summed loss, and for BART-like
 * models the check of every parameter tensor's gradient against central
 * finite differences (along the gradient, a random direction and at three
 * single entries; error <= 1e-2 of |g|), the tensors that are zero by
 * design checked as such. Include after t.h.
 */
#ifndef LC_T_GRAD_H
#define LC_T_GRAD_H

#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/model.h"
#include "train/train_int.h"

/* The tests' own random stream (the same in every file that used one). */
static uint64_t rs = 12345;
static inline double urand(void)
{
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(rs >> 11) / 9007199254740992.0);
}

/* max |a - b| / max |b| */
static inline double relmax(const float *a, const float *b, size_t n)
{
	double m = 0, g = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		if (e > m)
			m = e;
		if (fabs(b[i]) > g)
			g = fabs(b[i]);
	}
	return g > 0 ? m / g : m;
}

typedef struct rig {
	lc_model *m;
	trainer *tr;
	float *w;
	uint64_t P;
} rig;

static inline int rig_open(rig *r, const char *dir)
{
	lc_err err;
	train_opts o;

	memset(r, 0, sizeof *r);
	memset(&o, 0, sizeof o);
	o.threads = 1;
	o.batch_tokens = 1;
	if (!(r->m = model_open(dir, 0, &err))) {
		T_OK(0, "%s", err.msg);
		return -1;
	}
	r->tr = trainer_new(r->m, &o, &err);
	T_OK(r->tr != NULL, "trainer_new: %s", err.msg);
	if (!r->tr)
		return -1;
	r->P = trainer_nparams(r->tr);
	T_EQ_I(r->P, model_nparams(r->m));
	r->w = trainer_weights(r->tr);
	return 0;
}

static inline void rig_close(rig *r)
{
	trainer_free(r->tr);
	model_free(r->m);
}

/* dropout of rig_loss (masks fixed by the seed) */
static double dropout_p;

static inline double rig_loss(rig *r, const int32_t *src, int64_t Ls, const int32_t *tgt, int64_t Lt,
                       int grad)
{
	train_pair_out out = { 0 };
	lc_err err;

	if (trainer_pair(r->tr, src, Ls, tgt, Lt, dropout_p, 1, grad, &out, &err) < 0) {
		T_OK(0, "trainer_pair: %s", err.msg);
		return NAN;
	}
	return out.loss;
}

/* The step of a central difference for a tensor of gradient norm gn:
 * float32 rounds a loss near 50 to some 5e-6, which the difference
 * divides by 2h; a tensor with a small gradient (BART-LS's pooled
 * attention biases, LOCOST's inv_A_real: |g| near 0.02) needs a longer
 * step for that noise to stay under the 1e-2 bound (the losses are
 * smooth: the truncation error of such steps is far below it). h_max
 * 2e-3: always 2e-3. */
static inline double tg_step(double gn, double h_max)
{
	return fmin(h_max, fmax(2e-3, 2.5e-3 / (gn > 0 ? gn : 1)));
}

/* One BART-like model's finite-difference check: a pair (src, tgt; a pad
 * label in tgt is ignored), the tensors whose gradient is zero by design,
 * an optional check of the training forward, and the architecture's new
 * tensors, which must be among those checked (at least new_min). */
typedef struct tg_case {
	const char *tag;                   /* names the scratch directory */
	const int32_t *src, *tgt;
	int64_t Ls, Lt;                    /* Lt <= 64 */
	double h_max;                      /* the longest step (2e-3: fixed) */
	int (*zero_by_design)(const char *name);
	void (*parity)(rig *r, const int32_t *src, int64_t L, const int32_t *tgt, int64_t nt);
	int (*is_new)(const char *name);   /* may be NULL */
	int new_min;
	const char *new_what;
} tg_case;

static inline void tg_check(const char *config, const tg_case *c)
{
	char dir[32];
	char path[256];
	FILE *f;
	rig r;
	lc_err err;
	const int32_t *src = c->src, *tgt = c->tgt;
	int64_t Ls = c->Ls, Lt = c->Lt;
	uint64_t P;
	float *g0, *v;
	int ntensor_ok = 0, ntensor = 0, npool = 0;
	double gworst = 0, eworst = 0;

	snprintf(dir, sizeof dir, "/tmp/lc-%s-XXXXXX", c->tag);
	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/config.json", dir);
	f = fopen(path, "w");
	fputs(config, f);
	fclose(f);
	T_OK(model_write_random(dir, 7, &err) == 0, "%s", err.msg);
	if (rig_open(&r, dir) < 0) {
		rig_close(&r);
		return;
	}
	P = r.P;
	if (dropout_p == 0 && c->parity)
		c->parity(&r, src, Ls, tgt, Lt);
	/* a non-zero final_logits_bias: it must be used, yet not trained */
	{
		const lc_param *b = params_find(trainer_params(r.tr), "final_logits_bias");
		T_OK(b != NULL, "final_logits_bias declared");
		for (uint64_t i = 0; b && i < b->numel; i++)
			r.w[b->off + i] = (float)(urand() - 0.5);
	}
	rig_loss(&r, src, Ls, tgt, Lt, 1);
	g0 = malloc(P * sizeof *g0);
	v = malloc(P * sizeof *v);
	memcpy(g0, trainer_grads(r.tr), P * sizeof *g0);
	for (uint32_t ti = 0; ti < params_count(trainer_params(r.tr)); ti++) {
		const lc_param *t = params_at(trainer_params(r.tr), ti);
		float *w = r.w + t->off, *g = g0 + t->off;
		double gn = 0, worst = 0, h = 2e-3, lp, lm;
		int zero = c->zero_by_design(t->name), ok = 1;

		ntensor++;
		npool += c->is_new && c->is_new(t->name);
		for (uint64_t i = 0; i < t->numel; i++)
			gn += (double)g[i] * g[i];
		gn = sqrt(gn);
		if (zero) {
			/* exactly zero, and the loss does not move along a random direction
			 * (a longer step: nothing to truncate, less rounding in the slope) */
			double fd;
			h = 5e-2;
			for (uint64_t i = 0; i < t->numel; i++)
				v[i] = (float)(urand() - 0.5);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] -= (float)(2 * h * v[i]);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			fd = (lp - lm) / (2 * h);
			if (!strcmp(t->name, "final_logits_bias")) {
				/* it does move the loss: used in the forward, frozen in training */
				ok = gn == 0 && fabs(fd) > 1e-3;
				T_OK(ok, "%s: gradient %.3g (a buffer: 0), loss slope %.3g (used: not 0)",
				     t->name, gn, fd);
			} else {
				/* the cross-attention never computes it (exactly 0); the self-
				 * attention's is rounding of a sum that is 0 */
				int cross = strstr(t->name, "encoder_attn") != NULL;
				ok = (cross ? gn == 0 : gn <= 1e-5) && fabs(fd) <= 1e-3;
				T_OK(ok, "%s: gradient %.3g, loss slope %.3g (it cancels: both 0)", t->name,
				     gn, fd);
			}
			ntensor_ok += ok;
			continue;
		}
		h = tg_step(gn, c->h_max);
		/* two directions: the gradient itself, and a random one */
		for (int dd = 0; dd < 2; dd++) {
			double vn = 0, an = 0, fd, e;
			for (uint64_t i = 0; i < t->numel; i++) {
				v[i] = dd == 0 ? g[i] : (float)(urand() - 0.5);
				vn += (double)v[i] * v[i];
			}
			vn = sqrt(vn);
			if (vn == 0)
				continue;
			for (uint64_t i = 0; i < t->numel; i++) {
				v[i] = (float)(v[i] / vn);
				an += (double)v[i] * g[i];
			}
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] -= (float)(2 * h * v[i]);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			fd = (lp - lm) / (2 * h);
			e = fabs(fd - an) / (gn > 1e-3 ? gn : 1e-3);
			worst = fmax(worst, e);
			ok &= e <= 1e-2;
		}
		/* three single entries: the largest, and two at random */
		for (int k = 0; k < 3; k++) {
			uint64_t i = 0;
			float w0;
			double fd, e;
			if (k == 0) {
				for (uint64_t j = 1; j < t->numel; j++)
					if (fabs(g[j]) > fabs(g[i]))
						i = j;
			} else {
				i = (uint64_t)(urand() * (double)t->numel) % t->numel;
			}
			w0 = w[i];
			w[i] = (float)(w0 + h);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			w[i] = (float)(w0 - h);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			w[i] = w0;
			fd = (lp - lm) / (2 * h);
			e = fabs(fd - g[i]) / (gn > 1e-3 ? gn : 1e-3);
			eworst = fmax(eworst, e);
			ok &= e <= 1e-2;
		}
		T_OK(ok && gn > 0, "%s: |g| %.3g, directional FD error %.3g of |g|", t->name, gn, worst);
		ntensor_ok += ok && gn > 0;
		gworst = fmax(gworst, worst);
	}
	printf("# finite differences (dropout %.1f): %d of %d tensors, worst error %.3g of |g| "
	       "(directions), %.3g (entries)\n", dropout_p, ntensor_ok, ntensor, gworst, eworst);
	T_EQ_I(ntensor_ok, ntensor);
	if (c->is_new)
		T_OK(npool >= c->new_min, "%s are among them (%d)", c->new_what, npool);
	/* the pad label contributes nothing: same loss with a -1 label */
	{
		int32_t t2[64];
		double a, b;
		memcpy(t2, tgt, (size_t)Lt * sizeof *t2);
		t2[2] = -1;
		a = rig_loss(&r, src, Ls, tgt, Lt, 0);
		b = rig_loss(&r, src, Ls, t2, Lt, 0);
		T_OK(a == b, "pad and -1 labels are both ignored: %.9g vs %.9g", a, b);
	}
	/* too long for the positions: an error, not a crash */
	{
		int32_t longs[40] = { 0 };
		train_pair_out out = { 0 };
		T_OK(trainer_pair(r.tr, longs, 40, tgt, Lt, 0, 1, 1, &out, &err) < 0 &&
		     strstr(err.msg, "max_position_embeddings"), "a source longer than the "
		     "positions is refused: %s", err.msg);
	}
	free(g0);
	free(v);
	rig_close(&r);
	snprintf(path, sizeof path, "%s/config.json", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	unlink(path);
	rmdir(dir);
}

#endif
