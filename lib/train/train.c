/*
 * train.c: the trainer: batches, steps and evaluation (see train.h; the
 * pairs are in traindata.c, checkpoints in checkpoint.c).
 */
#include "train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/parallel.h"
#include "base/rng.h"
#include "ops/loss.h"
#include "train/train_int.h"
#include "weights/params.h"

trainer *trainer_new(lc_model *mdl, const train_opts *o, lc_err *err)
{
	trainer *t = calloc(1, sizeof *t);

	if (!t) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	t->cfg = *model_config(mdl);
	t->o = *o;
	t->nth = o->threads < 1 ? 1 : o->threads;
	if (!(t->ops = t->cfg.arch->train)) {
		lc_fail(err, "%s: the %s architecture cannot be trained by lc", model_dir(mdl),
		        t->cfg.arch->name);
		goto fail;
	}
	if (!(t->W = arch_weights_new(&t->cfg, NULL, &t->P, err)))
		goto fail;
	t->n = params_total(t->P);
	t->w = calloc(t->n, sizeof *t->w);
	t->m = calloc(t->n, sizeof *t->m);
	t->v = calloc(t->n, sizeof *t->v);
	t->tg = calloc((size_t)t->nth, sizeof *t->tg);
	t->TG = calloc((size_t)t->nth, sizeof *t->TG);
	t->TGp = calloc((size_t)t->nth, sizeof *t->TGp);
	if (!t->w || !t->m || !t->v || !t->tg || !t->TG || !t->TGp)
		goto oom;
	params_bind_flat(t->P, t->w);
	/* the model's declaration is the same as ours: the same flat layout */
	params_copy_to_flat(model_params(mdl), t->w);
	for (int i = 0; i < t->nth; i++) {
		if (!(t->tg[i] = calloc(t->n, sizeof(float))))
			goto oom;
		if (!(t->TG[i] = arch_weights_new(&t->cfg, t->tg[i], &t->TGp[i], err)))
			goto fail;
	}
	t->g = t->tg[0];
	if (!(t->sh = t->ops->shared_new(&t->cfg, t->nth, err))) {
		lc_prefix(err, "%s", model_dir(mdl));
		goto fail;
	}
	return t;
oom:
	lc_fail(err, "out of memory for %llu parameters", (unsigned long long)t->n);
fail:
	trainer_free(t);
	return NULL;
}

void trainer_free(trainer *t)
{
	if (!t)
		return;
	for (int i = 0; t->tg && i < t->nth; i++) {
		free(t->tg[i]);
		if (t->TG && t->TG[i])
			arch_weights_free(&t->cfg, t->TG[i], t->TGp[i]);
	}
	free(t->tg);
	free(t->TG);
	free(t->TGp);
	if (t->sh)
		t->ops->shared_free(t->sh);
	if (t->W)
		arch_weights_free(&t->cfg, t->W, t->P);
	free(t->w);
	free(t->m);
	free(t->v);
	free(t->order);
	free(t);
}

int64_t trainer_step_count(const trainer *t) { return t->step; }
uint64_t trainer_nparams(const trainer *t) { return t->n; }
const lc_params *trainer_params(const trainer *t) { return t->P; }
float *trainer_weights(trainer *t) { return t->w; }
const float *trainer_grads(const trainer *t) { return t->g; }

int trainer_order(trainer *t, size_t n, lc_err *err)
{
	uint64_t s = lc_mix64(t->o.seed ^ lc_mix64((uint64_t)t->epoch + 1));

	if (t->order_n != n) {
		size_t *o = n <= SIZE_MAX / sizeof(size_t) ? realloc(t->order, (n ? n : 1) * sizeof *o) : NULL;
		if (!o)
			return lc_fail(err, "out of memory for the order of %zu pairs", n);
		t->order = o;
		t->order_n = n;
	}
	for (size_t i = 0; i < n; i++)
		t->order[i] = i;
	for (size_t i = n; i > 1; i--) {
		size_t j;
		s = lc_mix64(s);
		j = (size_t)(s % i);
		size_t tmp = t->order[i - 1];
		t->order[i - 1] = t->order[j];
		t->order[j] = tmp;
	}
	return 0;
}

/* One pair through the architecture's halves: encoder, decoder (teacher
 * forcing on [start, tgt[0..Lt-2]]), token cross-entropy, and with grad
 * the backward of all three into part's gradients. Dropout masks are drawn
 * from seed. */
static int example(trainer *t, int part, const int32_t *src, int64_t Ls, const int32_t *tgt,
                   int64_t Lt, double dropout, uint64_t seed, int grad, float scale,
                   train_pair_out *out, lc_err *err)
{
	const lc_config *c = &t->cfg;
	lc_arena a = { 0 };
	uint64_t rs = lc_mix64(seed ^ 0x5eedull);
	void *et, *dt;
	float *E = NULL, *logits = NULL, *dE;
	int32_t *din;
	int64_t Le = 0, counted;
	double loss;
	int rc = -1;

	if (Ls < 1 || Lt < 1)
		return lc_fail(err, "empty source or target");
	for (int64_t k = 0; k < Lt; k++)
		if (tgt[k] >= c->vocab_size)
			return lc_fail(err, "target token %lld: id %ld outside the vocabulary",
			               (long long)k, (long)tgt[k]);
	if (!(din = lc_arena_bytes(&a, Lt * (int64_t)sizeof *din)))
		goto oom;
	din[0] = c->decoder_start_id;
	for (int64_t k = 1; k < Lt; k++)
		din[k] = tgt[k - 1] < 0 ? c->pad_id : tgt[k - 1];
	if (!(et = t->ops->enc_fw(t->sh, part, t->W, src, Ls, &a, dropout, &rs, &E, &Le, err)) ||
	    !(dt = t->ops->dec_fw(t->sh, t->W, E, Le, din, Lt, &a, dropout, &rs, &logits, err)))
		goto out;
	if (out && out->enc)
		memcpy(out->enc, E, (size_t)(Le * c->d_model) * sizeof *E);
	if (out && out->logits)
		memcpy(out->logits, logits, (size_t)(Lt * c->vocab_size) * sizeof *logits);
	loss = xent_fw_bw(logits, Lt, c->vocab_size, tgt, c->pad_id, scale, grad, &counted);
	if (out) {
		out->loss = loss;
		out->ntok = counted;
	}
	if (grad) {
		if (!(dE = lc_arena_f32(&a, Le * c->d_model)))
			goto oom;
		if (t->ops->dec_bw(t->sh, t->W, t->TG[part], dt, logits, dE, err) < 0 ||
		    t->ops->enc_bw(t->sh, part, t->W, t->TG[part], et, dE, err) < 0)
			goto out;
	}
	rc = 0;
	goto out;
oom:
	lc_fail(err, "out of memory (source %lld, target %lld tokens)", (long long)Ls, (long long)Lt);
out:
	lc_arena_free(&a);
	return rc;
}

typedef struct job {
	trainer *t;
	const train_data *d;
	const size_t *idx;          /* [n] pair indices */
	int n;
	int grad;
	float scale;
	double *loss;               /* [n] */
	int64_t *lab;               /* [n] */
	int failed;
	lc_err err;
} job;

static void run_one(job *j, int64_t i, int part)
{
	trainer *t = j->t;
	const train_pair *p = &j->d->p[j->idx[i]];
	uint64_t seed = lc_mix64(t->o.seed ^ lc_mix64((uint64_t)t->step * 1000003u + (uint64_t)j->idx[i]));
	train_pair_out out = { 0 };
	lc_err err;

	if (j->failed)
		return;
	if (example(t, part, p->src, p->ns, p->tgt, p->nt, j->grad ? t->o.dropout : 0, seed,
	            j->grad, j->scale, &out, &err) < 0) {
		j->failed = 1;
		snprintf(j->err.msg, sizeof j->err.msg, "%s: %s", p->name, err.msg);
		return;
	}
	j->loss[i] = out.loss;
	j->lab[i] = out.ntok;
}

/* Part k of nth takes pairs k, k + nth, ...: a fixed assignment, so that
 * the per-part gradient sums (and the result) do not depend on timing. */
static void run_part(void *ctx, int64_t part, int tid)
{
	job *j = ctx;

	(void)tid;
	for (int64_t i = part; i < j->n; i += j->t->nth)
		run_one(j, i, (int)part);
}

/* Runs the pairs idx[n] (grad: their summed gradients into g). */
static int run_batch(trainer *t, const train_data *d, const size_t *idx, int n, int grad,
                     float scale, double *loss, int64_t *labels, lc_err *err)
{
	job j;
	int64_t Lmax = 1;
	double *ls = calloc((size_t)n, sizeof *ls);
	int64_t *lb = calloc((size_t)n, sizeof *lb);
	int rc = -1;

	if (!ls || !lb) {
		free(ls);
		free(lb);
		return lc_fail(err, "out of memory");
	}
	for (int i = 0; i < n; i++)
		if (d->p[idx[i]].ns > Lmax)
			Lmax = d->p[idx[i]].ns;
	if (t->ops->step_begin(t->sh, t->W, Lmax, t->nth, err) < 0)
		goto out;
	memset(&j, 0, sizeof j);
	j.t = t;
	j.d = d;
	j.idx = idx;
	j.n = n;
	j.grad = grad;
	j.scale = scale;
	j.loss = ls;
	j.lab = lb;
	if (grad)
		for (int i = 0; i < t->nth; i++)
			memset(t->tg[i], 0, t->n * sizeof(float));
	par_for(t->nth, t->nth, run_part, &j);
	if (j.failed) {
		*err = j.err;
		goto out;
	}
	*loss = 0;
	*labels = 0;
	for (int i = 0; i < n; i++) {
		*loss += ls[i];
		*labels += lb[i];
	}
	if (grad) {
		for (int i = 1; i < t->nth; i++)
			for (uint64_t k = 0; k < t->n; k++)
				t->g[k] += t->tg[i][k];
		if (t->ops->step_end(t->sh, t->W, t->TG[0], t->nth, err) < 0)
			goto out;
	}
	rc = 0;
out:
	free(ls);
	free(lb);
	return rc;
}

int trainer_pair(trainer *t, const int32_t *src, int64_t Ls, const int32_t *tgt, int64_t Lt,
                 double dropout, uint64_t seed, int grad, train_pair_out *out, lc_err *err)
{
	if (t->ops->step_begin(t->sh, t->W, Ls, 1, err) < 0)
		return -1;
	if (grad)
		memset(t->g, 0, t->n * sizeof(float));
	if (example(t, 0, src, Ls, tgt, Lt, dropout, seed, grad, 1.0f, out, err) < 0)
		return -1;
	return grad ? t->ops->step_end(t->sh, t->W, t->TG[0], 1, err) : 0;
}

/* x as %g, but NaN as "NaN" whatever its sign bit */
static const char *fmt_num(char *buf, size_t n, double x)
{
	if (isnan(x))
		snprintf(buf, n, "NaN");
	else
		snprintf(buf, n, "%g", x);
	return buf;
}

int trainer_step(trainer *t, const train_data *d, train_stats *s, lc_err *err)
{
	size_t *idx = NULL;
	int n = 0, cap = 0;
	int64_t tok = 0, lab = 0;
	double loss = 0, lr;

	if (d->n == 0)
		return lc_fail(err, "no training pairs");
	if (!t->order || t->order_n != d->n || t->pos >= d->n) {
		if (t->order && t->pos >= d->n) {
			t->epoch++;
			t->pos = 0;
		}
		if (trainer_order(t, d->n, err) < 0)
			return -1;
	}
	/* the batch: pairs in order until the token budget is reached */
	while (n == 0 || tok < t->o.batch_tokens) {
		const train_pair *p;
		if (t->pos >= d->n) {
			t->epoch++;
			t->pos = 0;
			if (trainer_order(t, d->n, err) < 0) {
				free(idx);
				return -1;
			}
		}
		if (n == cap) {
			size_t *ni = realloc(idx, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *ni);
			if (!ni) {
				free(idx);
				return lc_fail(err, "out of memory");
			}
			idx = ni;
		}
		p = &d->p[t->order[t->pos++]];
		idx[n++] = (size_t)(p - d->p);
		tok += p->ns + p->nt;
		if (n >= (int)d->n && tok < t->o.batch_tokens)
			break;   /* the whole set is smaller than a batch */
	}
	/* labels are known before the pass: scale = 1 / labels */
	for (int i = 0; i < n; i++)
		for (int64_t k = 0; k < d->p[idx[i]].nt; k++) {
			int32_t y = d->p[idx[i]].tgt[k];
			lab += y >= 0 && y != t->cfg.pad_id;
		}
	{
		int64_t lab2 = 0;
		if (run_batch(t, d, idx, n, 1, lab ? (float)(1.0 / (double)lab) : 0.0f, &loss, &lab2,
		              err) < 0) {
			free(idx);
			return -1;
		}
	}
	free(idx);
	s->gnorm = grad_clip(t->g, t->n, t->o.clip);
	/* a non-finite loss or gradient would poison the weights and the
	 * optimizer state: stop before the update (the caller keeps the last
	 * checkpoint) */
	if (!isfinite(loss) || !isfinite(s->gnorm)) {
		char a[32], b[32];
		return lc_fail(err, "the loss (%s) or the gradient norm (%s) is not finite; the weights "
		               "were not updated", fmt_num(a, sizeof a, lab ? loss / (double)lab : loss),
		               fmt_num(b, sizeof b, s->gnorm));
	}
	t->step++;
	lr = lr_at(t->o.sched, t->o.lr, t->step, t->o.warmup);
	for (uint32_t i = 0; i < params_count(t->P); i++) {
		const lc_param *e = params_at(t->P, i);
		adamw_update(t->w + e->off, t->g + e->off, t->m + e->off, t->v + e->off, e->numel,
		             t->step, lr, &t->o.adam, !(e->flags & PARAM_NO_DECAY));
	}
	s->step = t->step;
	s->loss = lab ? loss / (double)lab : 0;
	s->tokens = tok;
	s->labels = lab;
	s->pairs = n;
	s->lr = lr;
	s->epoch = t->epoch;
	return 0;
}

int trainer_eval(trainer *t, const train_data *d, double *loss, int64_t *labels, lc_err *err)
{
	double tot = 0;
	int64_t lab = 0;
	size_t chunk = 16;
	size_t *idx = malloc(chunk * sizeof *idx);

	if (!idx)
		return lc_fail(err, "out of memory");
	for (size_t i = 0; i < d->n; i += chunk) {
		int n = (int)(d->n - i < chunk ? d->n - i : chunk);
		double l;
		int64_t b;
		for (int k = 0; k < n; k++)
			idx[k] = i + (size_t)k;
		if (run_batch(t, d, idx, n, 0, 1.0f, &l, &b, err) < 0) {
			free(idx);
			return -1;
		}
		tot += l;
		lab += b;
	}
	free(idx);
	*loss = lab ? tot / (double)lab : 0;
	*labels = lab;
	return 0;
}
