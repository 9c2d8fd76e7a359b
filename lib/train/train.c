/*
 * train.c: data, batches, steps, evaluation and checkpoints (see train.h).
 */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/arena.h"
#include "base/crc32c.h"
#include "base/dtype.h"
#include "base/fault.h"
#include "base/fileio.h"
#include "base/parallel.h"
#include "base/rng.h"
#include "ops/loss.h"
#include "stream/stream.h"
#include "train/train_int.h"
#include "weights/params.h"
#include "weights/safetensors.h"

/* ------------------------------------------------------------------ data */

static int32_t *cut(const int32_t *p, int64_t n, int64_t max, int32_t eos, int64_t *out_n)
{
	int64_t k = n > max ? max : n;
	int32_t *q = malloc((size_t)(k > 0 ? k : 1) * sizeof *q);

	if (!q)
		return NULL;
	memcpy(q, p, (size_t)k * sizeof *q);
	if (k < n && k > 0 && p[n - 1] == eos)
		q[k - 1] = eos;
	*out_n = k;
	return q;
}

struct read_ctx {
	int64_t max_src, max_tgt;
	int32_t eos;
	train_data *d;
};

/* Counts a document skipped, and says why for the first. */
static void skip(train_data *d, const char *name, const char *why, const lc_tensor *t)
{
	char what[64] = "";

	if (t)
		snprintf(what, sizeof what, " (%s of rank %u, not i32 of rank 1)",
		         lc_dtype_name(t->dtype), t->rank);
	if (!d->skipped++)
		snprintf(d->skip_why, sizeof d->skip_why, "\"%.120s\": %s%s", name ? name : "", why,
		         what);
}

/* Appends the pair src[ns], tgt[nt] named name, cut as c says; an empty
 * side counts the pair as skipped. */
static int add_pair(struct read_ctx *c, const char *name, const int32_t *src, int64_t ns,
                    const int32_t *tgt, int64_t nt, lc_err *err)
{
	train_data *d = c->d;
	train_pair *p;

	if (ns == 0 || nt == 0) {
		skip(d, name, ns == 0 ? "an empty source" : "an empty target", NULL);
		return 0;
	}
	if (d->n == d->cap) {
		size_t nc = d->cap ? 2 * d->cap : 256;
		train_pair *np = realloc(d->p, nc * sizeof *np);
		if (!np)
			return lc_fail(err, "out of memory");
		d->p = np;
		d->cap = nc;
	}
	p = &d->p[d->n];
	memset(p, 0, sizeof *p);
	d->cut_src += ns > c->max_src;
	d->cut_tgt += nt > c->max_tgt;
	p->src = cut(src, ns, c->max_src, c->eos, &p->ns);
	p->tgt = cut(tgt, nt, c->max_tgt, c->eos, &p->nt);
	p->name = strdup(name ? name : "");
	if (!p->src || !p->tgt || !p->name) {
		free(p->src);
		free(p->tgt);
		free(p->name);
		return lc_fail(err, "out of memory");
	}
	if (p->ns > d->max_src)
		d->max_src = p->ns;
	d->n++;
	return 0;
}

static int read_pair(lc_doc *doc, void *ctx, lc_err *err)
{
	lc_tensor *s = doc_find(doc, "source"), *t = doc_find(doc, "target");
	train_data *d = ((struct read_ctx *)ctx)->d;
	const char *fp;

	if (!s || !t) {
		skip(d, doc->name, !s ? "no \"source\"" : "no \"target\"", NULL);
		return 0;
	}
	if (s->dtype != LC_I32 || s->rank != 1 || t->dtype != LC_I32 || t->rank != 1) {
		int bad_s = s->dtype != LC_I32 || s->rank != 1;
		skip(d, doc->name, bad_s ? "\"source\" is not ids" : "\"target\" is not ids",
		     bad_s ? s : t);
		return 0;
	}
	if ((fp = meta_get(&s->meta, "tokenizer"))) {
		if (!d->tokfp[0])
			snprintf(d->tokfp, sizeof d->tokfp, "%s", fp);
		else if (strcmp(fp, d->tokfp) != 0)
			d->tokfp_other++;
	}
	return add_pair(ctx, doc->name, s->data, (int64_t)s->dims[0], t->data,
	                (int64_t)t->dims[0], err);
}

int train_data_read_jsonl(jsonl *j, lc_tokenizer *tk, int64_t max_src, int64_t max_tgt,
                          int32_t eos_id, train_data *d, lc_err *err)
{
	struct read_ctx c = { max_src, max_tgt, eos_id, d };
	const unsigned flags = TOK_ENC_SPECIAL | TOK_ENC_EXTRA;
	const jsonl_rec *r;
	tok_enc es = {0}, et = {0};
	int rc;

	while ((rc = jsonl_next(j, &r, err)) > 0) {
		if (tok_encode(tk, r->text[0], r->len[0], flags, &es, err) < 0 ||
		    tok_encode(tk, r->text[1], r->len[1], flags, &et, err) < 0) {
			lc_prefix(err, "%s", r->name);
			rc = -1;
			break;
		}
		if ((rc = add_pair(&c, r->name, es.ids, (int64_t)es.n, et.ids, (int64_t)et.n, err)) < 0)
			break;
	}
	tok_enc_free(&es);
	tok_enc_free(&et);
	return rc < 0 ? -1 : 0;
}

int train_data_read(FILE *f, const char *label, int64_t max_src, int64_t max_tgt,
                    int32_t eos_id, train_data *d, lc_err *err)
{
	struct read_ctx c = { max_src, max_tgt, eos_id, d };

	return stream_each_file(f, label, read_pair, &c, err);
}

int train_data_read_path(const char *path, int64_t max_src, int64_t max_tgt, int32_t eos_id,
                         train_data *d, lc_err *err)
{
	struct read_ctx c = { max_src, max_tgt, eos_id, d };
	char *p = (char *)path;

	return stream_each(1, &p, read_pair, &c, err);
}

int train_data_write_pairs(const train_data *d, const char *prefix, lc_err *err)
{
	for (int side = 0; side < 2; side++) {
		char path[4096];
		snprintf(path, sizeof path, "%s.%s.lc", prefix, side ? "tgt" : "src");
		if (train_data_write(d, side, path, err) < 0)
			return -1;
	}
	return 0;
}

int train_data_check_vocab(const train_data *d, int32_t vocab, lc_err *err)
{
	/* both sides: a target id past the vocabulary would index past the
	 * logits; lc-noise's sentinels are the usual cause (they follow
	 * <mask>: the model needs rows for them, lc-convert --vocab-size) */
	for (size_t i = 0; i < d->n; i++)
		for (int side = 0; side < 2; side++) {
			const int32_t *ids = side ? d->p[i].tgt : d->p[i].src;
			int64_t n = side ? d->p[i].nt : d->p[i].ns;
			for (int64_t k = 0; k < n; k++)
				if (ids[k] < 0 || ids[k] >= vocab)
					return lc_fail(err, "%s: %s token %lld (id %ld) is outside the model's "
					               "vocabulary of %d (pairs of another model's tokenizer? "
					               "span-corruption sentinels need rows of their own: "
					               "lc-convert --vocab-size)", d->p[i].name,
					               side ? "target" : "source", (long long)k, (long)ids[k],
					               vocab);
		}
	return 0;
}

int train_data_check_len(const train_data *d, int64_t max, lc_err *err)
{
	for (size_t i = 0; max > 0 && i < d->n; i++)
		if (d->p[i].ns > max || d->p[i].nt > max)
			return lc_fail(err, "%s: a %s of %lld tokens is longer than the model's %lld "
			               "positions (max_position_embeddings): cut with --max-src and "
			               "--max-tgt", d->p[i].name, d->p[i].ns > max ? "source" : "target",
			               (long long)(d->p[i].ns > max ? d->p[i].ns : d->p[i].nt),
			               (long long)max);
	return 0;
}

int train_data_split(train_data *src, size_t n, train_data *dst, lc_err *err)
{
	if (n > src->n)
		n = src->n;
	memset(dst, 0, sizeof *dst);
	if (!n)
		return 0;
	if (!(dst->p = malloc(n * sizeof *dst->p)))
		return lc_fail(err, "out of memory");
	memcpy(dst->p, src->p + (src->n - n), n * sizeof *dst->p);
	dst->n = dst->cap = n;
	src->n -= n;
	src->max_src = dst->max_src = 0;
	for (size_t i = 0; i < src->n; i++)
		if (src->p[i].ns > src->max_src)
			src->max_src = src->p[i].ns;
	for (size_t i = 0; i < dst->n; i++)
		if (dst->p[i].ns > dst->max_src)
			dst->max_src = dst->p[i].ns;
	return 0;
}

int train_data_write(const train_data *d, int side, const char *path, lc_err *err)
{
	FILE *f = fopen(path, "wb");
	lc_writer *w;
	int rc = -1;

	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (!(w = stream_writer_new(f, err)))
		goto out;
	for (size_t i = 0; i < d->n; i++) {
		const train_pair *p = &d->p[i];
		uint64_t n = (uint64_t)(side ? p->nt : p->ns);
		lc_doc doc;
		lc_tensor *t;
		memset(&doc, 0, sizeof doc);
		if (doc_init(&doc, p->name, err) < 0 ||
		    !(t = doc_add_tensor(&doc, "tokens", LC_I32, 1, &n, err))) {
			doc_free(&doc);
			stream_writer_abort(w);
			goto out;
		}
		memcpy(t->data, side ? p->tgt : p->src, n * sizeof(int32_t));
		if (stream_write_doc(w, &doc, err) < 0) {
			doc_free(&doc);
			stream_writer_abort(w);
			goto out;
		}
		doc_free(&doc);
	}
	rc = stream_writer_close(w, err);
out:
	if (fclose(f) != 0 && rc == 0)
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	if (rc < 0)
		lc_prefix(err, "%s", path);
	return rc;
}

void train_data_free(train_data *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->p[i].src);
		free(d->p[i].tgt);
		free(d->p[i].name);
	}
	free(d->p);
	memset(d, 0, sizeof *d);
}

/* --------------------------------------------------------------- trainer */

struct trainer {
	lc_config cfg;              /* the model's configuration (its architecture inside) */
	const lc_train_ops *ops;
	train_opts o;
	lc_params *P;               /* the declaration: the flat layout */
	uint64_t n;                 /* floats in it */
	float *w, *g, *m, *v;       /* [n] weights, gradients, moments */
	void *W;                    /* the architecture's weights struct over w */
	int nth;
	float **tg;                 /* [nth][n] per-thread gradients (tg[0] == g) */
	void **TG;                  /* [nth] weights structs over them */
	lc_params **TGp;
	void *sh;                   /* the architecture's per-step state */
	int64_t step, epoch;
	size_t pos;                 /* next index into the epoch's order */
	size_t *order;
	size_t order_n;
};

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

/* The epoch's permutation of n pairs. */
static int make_order(trainer *t, size_t n, lc_err *err)
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
		if (make_order(t, d->n, err) < 0)
			return -1;
	}
	/* the batch: pairs in order until the token budget is reached */
	while (n == 0 || tok < t->o.batch_tokens) {
		const train_pair *p;
		if (t->pos >= d->n) {
			t->epoch++;
			t->pos = 0;
			if (make_order(t, d->n, err) < 0) {
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

/* ------------------------------------------------------------ checkpoints */

static int write_weights(trainer *t, const char *path, lc_err *err)
{
	return params_write(t->P, t->w, path, err);
}

static int write_optim(trainer *t, const char *path, lc_err *err)
{
	st_tensor st[2];

	memset(st, 0, sizeof st);
	st[0].name = "adam.m";
	st[1].name = "adam.v";
	st[0].data = (const unsigned char *)t->m;
	st[1].data = (const unsigned char *)t->v;
	for (int i = 0; i < 2; i++) {
		st[i].dtype = ST_F32;
		st[i].rank = 1;
		st[i].dims[0] = st[i].numel = t->n;
		st[i].nbytes = 4 * t->n;
	}
	return st_write(path, st, 2, err);
}

static int write_state(trainer *t, const char *path, lc_err *err)
{
	json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:s, s:I, s:I}",
	                      "step", (json_int_t)t->step, "epoch", (json_int_t)t->epoch,
	                      "position", (json_int_t)t->pos, "pairs", (json_int_t)t->order_n,
	                      "seed", (json_int_t)(t->o.seed & 0x7fffffffffffffffull),
	                      "lr", t->o.lr, "schedule", lr_sched_name(t->o.sched),
	                      "warmup", (json_int_t)t->o.warmup, "parameters", (json_int_t)t->n);
	char crc[16];
	int rc = 0;

	if (!j)
		return lc_fail(err, "out of memory");
	/* what a resume must find unchanged (train_state_check) */
	snprintf(crc, sizeof crc, "%08x", (unsigned)t->o.data_crc);
	if (json_object_set_new(j, "data_pairs", json_integer((json_int_t)t->o.data_pairs)) < 0 ||
	    json_object_set_new(j, "data_crc32c", json_string(crc)) < 0 ||
	    json_object_set_new(j, "batch_tokens", json_integer((json_int_t)t->o.batch_tokens)) < 0 ||
	    json_object_set_new(j, "dropout", json_real(t->o.dropout)) < 0 ||
	    json_object_set_new(j, "clip", json_real(t->o.clip)) < 0) {
		json_decref(j);
		return lc_fail(err, "out of memory");
	}
	if (json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
		rc = lc_fail(err, "%s: cannot write", path);
	json_decref(j);
	return rc;
}

/* A checkpoint is one set of files that must agree (weights, optimizer
 * state, trainer state). It is written as a write-ahead set: every file
 * to NAME.tmp (fsynced), then checkpoint.json naming each with its size
 * and CRC-32C, renamed into place (the commit point), then each NAME.tmp
 * renamed to NAME. A crash before the commit leaves the old set and its
 * manifest; after it, checkpoint_recover finishes the renames. Fault
 * points ("ckpt") sit between the steps for the tests. */

#define MANIFEST "checkpoint.json"

static int fsync_path(const char *path, lc_err *err)
{
	int fd = open(path, O_RDONLY), rc = 0;

	if (fd < 0)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (fsync(fd) < 0 && errno != EINVAL)    /* EINVAL: a directory on some file systems */
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* Size and CRC-32C of a file. */
static int file_sum(const char *path, uint64_t *bytes, uint32_t *crc, lc_err *err)
{
	FILE *f = fopen(path, "rb");
	unsigned char buf[1 << 16];
	size_t n;

	*bytes = 0;
	*crc = 0;
	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		*crc = lc_crc32c(*crc, buf, n);
		*bytes += n;
	}
	if (ferror(f)) {
		fclose(f);
		return lc_fail(err, "%s: read error", path);
	}
	fclose(f);
	return 0;
}

typedef struct ckpt_file {
	const char *name;
	const char *copy_from;                         /* or the writer */
	int (*writer)(trainer *, const char *, lc_err *);
} ckpt_file;

int trainer_save(trainer *t, const char *dir, const char *config_path, const char *spiece,
                 int optimizer, lc_err *err)
{
	train_file sp = { spiece, "spiece.model" };

	return trainer_save_files(t, dir, config_path, &sp, spiece ? 1 : 0, optimizer, err);
}

int trainer_save_files(trainer *t, const char *dir, const char *config_path,
                       const train_file *copy, int ncopy, int optimizer, lc_err *err)
{
	ckpt_file f[4 + TRAIN_CKPT_MAXCOPY];
	int n = 0, rc = -1, committed = 0;
	char path[4096], tmp[4200];
	json_t *man = NULL, *files;

	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return lc_fail(err, "%s: %s", dir, strerror(errno));
	f[n++] = (ckpt_file){ "model.safetensors", NULL, write_weights };
	f[n++] = (ckpt_file){ "config.json", config_path, NULL };
	if (ncopy > TRAIN_CKPT_MAXCOPY)
		return lc_fail(err, "%s: %d files to copy into a checkpoint (at most %d)", dir, ncopy,
		               TRAIN_CKPT_MAXCOPY);
	for (int i = 0; i < ncopy; i++)
		f[n++] = (ckpt_file){ copy[i].name, copy[i].from, NULL };
	if (optimizer) {
		f[n++] = (ckpt_file){ "optimizer.safetensors", NULL, write_optim };
		f[n++] = (ckpt_file){ "trainer_state.json", NULL, write_state };
	}
	if (!(man = json_pack("{s:I, s:{}}", "step", (json_int_t)t->step, "files")))
		return lc_fail(err, "out of memory");
	files = json_object_get(man, "files");
	for (int i = 0; i < n; i++) {
		uint64_t bytes;
		uint32_t crc;
		char hex[16];
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, f[i].name);
		if ((f[i].copy_from ? lc_copy_file(f[i].copy_from, tmp, err) :
		                      f[i].writer(t, tmp, err)) < 0)
			goto out;
		lc_fault_point("ckpt");
		/* the sum of the bytes on disk, read back after the sync: the
		 * manifest vouches for what a resume will read */
		if (fsync_path(tmp, err) < 0 || file_sum(tmp, &bytes, &crc, err) < 0)
			goto out;
		snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
		json_object_set_new(files, f[i].name,
		                    json_pack("{s:I, s:s}", "bytes", (json_int_t)bytes, "crc32c", hex));
	}
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MANIFEST);
	snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
	if (json_dump_file(man, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0) {
		lc_fail(err, "%s: cannot write", tmp);
		goto out;
	}
	lc_fault_point("ckpt");
	if (fsync_path(tmp, err) < 0)
		goto out;
	if (rename(tmp, path) < 0) {           /* the commit */
		lc_fail(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	committed = 1;
	lc_fault_point("ckpt");
	if (fsync_path(dir, err) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, f[i].name);
		snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
		if (rename(tmp, path) < 0) {
			lc_fail(err, "%s: %s", path, strerror(errno));
			goto out;
		}
		lc_fault_point("ckpt");
	}
	rc = fsync_path(dir, err);
out:
	/* a save that failed before its commit (a full disk) takes its
	 * .tmp files back, which would keep the disk full for the next one;
	 * after the commit they are the set checkpoint_recover finishes */
	if (rc < 0 && !committed) {
		for (int i = 0; i < n; i++) {
			snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, f[i].name);
			remove(tmp);
		}
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MANIFEST);
		remove(tmp);
	}
	json_decref(man);
	return rc;
}

int checkpoint_recover(const char *dir, lc_err *err)
{
	static const char *const known[] = { "model.safetensors", "config.json",
	                                     "optimizer.safetensors", "trainer_state.json",
	                                     TRAIN_CKPT_COPIES };
	char path[4096], tmp[4200];
	json_t *man, *files, *e;
	json_error_t je;
	json_int_t step = 0;
	const char *name;
	int rc = -1;

	snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
	if (access(path, F_OK) != 0)
		return 0;                       /* not an lc checkpoint set (or an older one) */
	if (lc_small_file(path, LC_MAX_JSON_FILE, "checkpoint file", err) < 0)
		return -1;
	if (!(man = json_load_file(path, JSON_REJECT_DUPLICATES, &je)))
		return lc_fail(err, "%s: %s", path, je.text);
	files = json_object_get(man, "files");
	if (json_unpack_ex(man, &je, 0, "{s:I}", "step", &step) < 0 || !json_is_object(files)) {
		json_decref(man);
		return lc_fail(err, "%s: not a checkpoint manifest", path);
	}
	json_object_foreach(files, name, e) {
		json_int_t want_bytes = -1;
		const char *want_crc = NULL;
		uint64_t bytes;
		uint32_t crc;
		char hex[16];
		int known_name = 0;
		for (size_t k = 0; k < sizeof known / sizeof *known; k++)
			known_name |= !strcmp(name, known[k]);
		if (!known_name || json_unpack(e, "{s:I, s:s}", "bytes", &want_bytes, "crc32c",
		                               &want_crc) < 0) {
			lc_fail(err, "%s: a bad entry \"%s\"", path, name);
			goto out;
		}
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		/* committed but not renamed: finish the save */
		if (access(tmp, F_OK) == 0 && file_sum(tmp, &bytes, &crc, err) == 0) {
			snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
			if ((json_int_t)bytes == want_bytes && !strcmp(hex, want_crc) && rename(tmp, path) < 0) {
				lc_fail(err, "%s: %s", path, strerror(errno));
				goto out;
			}
		}
		if (access(path, F_OK) != 0) {
			lc_fail(err, "%s: checkpoint step %lld lacks %s", dir, (long long)step, name);
			goto out;
		}
		if (file_sum(path, &bytes, &crc, err) < 0)
			goto out;
		snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
		if ((json_int_t)bytes != want_bytes || strcmp(hex, want_crc)) {
			lc_fail(err, "%s: %s is not the one checkpoint.json names for step %lld (%llu "
			        "bytes, CRC-32C %s; the manifest says %lld, %s): a mixed or damaged "
			        "checkpoint, not resumed", dir, name, (long long)step,
			        (unsigned long long)bytes, hex, (long long)want_bytes, want_crc);
			goto out;
		}
	}
	/* leftovers of a save that never committed */
	for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, known[k]);
		remove(tmp);
	}
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MANIFEST);
	remove(tmp);
	rc = fsync_path(dir, err);
out:
	json_decref(man);
	return rc;
}

int trainer_resume(trainer *t, const char *dir, lc_err *err)
{
	char path[4096];
	st_file *f;
	const st_tensor *m, *v;
	json_t *j;
	json_error_t je;
	json_int_t step = 0, epoch = 0, pos = 0, pairs = 0;

	snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
	if (!(f = st_open(path, err)))
		return -1;
	m = st_find(f, "adam.m");
	v = st_find(f, "adam.v");
	if (!m || !v || m->dtype != ST_F32 || v->dtype != ST_F32 || m->numel != t->n ||
	    v->numel != t->n) {
		st_close(f);
		return lc_fail(err, "%s: not the optimizer state of this model (%llu parameters)",
		               path, (unsigned long long)t->n);
	}
	memcpy(t->m, m->data, 4 * t->n);
	memcpy(t->v, v->data, 4 * t->n);
	st_close(f);
	/* a NaN moment would make every weight NaN at the first update, and
	 * the next save would write them over the checkpoint; v, a mean of
	 * squares, is never negative (its square root divides the step) */
	for (int k = 0; k < 2; k++) {
		const float *x = k ? t->v : t->m;
		const char *what;
		int64_t bad = lc_first_nonfinite(x, t->n, &what);
		for (uint64_t i = 0; k && bad < 0 && i < t->n; i++)
			if (x[i] < 0) {
				bad = (int64_t)i;
				what = "negative";
			}
		if (bad >= 0)
			return lc_fail(err, "%s: tensor \"%s\": element %lld is %s", path,
			               k ? "adam.v" : "adam.m", (long long)bad, what);
	}
	snprintf(path, sizeof path, "%s/trainer_state.json", dir);
	if (lc_small_file(path, LC_MAX_JSON_FILE, "checkpoint file", err) < 0)
		return -1;
	if (!(j = json_load_file(path, 0, &je)))
		return lc_fail(err, "%s: %s", path, je.text);
	if (json_unpack_ex(j, &je, 0, "{s:I, s:I, s:I, s:I}", "step", &step, "epoch", &epoch,
	                   "position", &pos, "pairs", &pairs) < 0) {
		json_decref(j);
		return lc_fail(err, "%s: %s", path, je.text);
	}
	json_decref(j);
	if (step < 0 || epoch < 0 || pos < 0 || pairs < 0 || pos > pairs || epoch > step)
		return lc_fail(err, "%s: an impossible state (step %lld, epoch %lld, position %lld of "
		               "%lld pairs)", path, (long long)step, (long long)epoch, (long long)pos,
		               (long long)pairs);
	/* The order is rebuilt from (seed, epoch) over the data trained on
	 * now, as the next step would rebuild it (a save before that step
	 * writes it back): the state's own count may be another data set's
	 * (--force-resume; a position past its end starts the next epoch) or
	 * a damaged file's, which must not size an allocation. The count is
	 * the state's only where the caller does not say (data_pairs 0). */
	if (t->o.data_pairs > 0 && (uint64_t)pairs != t->o.data_pairs) {
		pairs = (json_int_t)t->o.data_pairs;
		pos = pos < pairs ? pos : pairs;
	}
	t->step = step;
	t->epoch = epoch;
	t->pos = (size_t)pos;
	free(t->order);
	t->order = NULL;
	t->order_n = 0;
	if (pairs > 0 && make_order(t, (size_t)pairs, err) < 0)
		return lc_prefix(err, "%s", path);
	return 0;
}

uint32_t train_data_crc(const train_data *d)
{
	uint32_t c = 0;

	for (size_t i = 0; i < d->n; i++) {
		int64_t len[2] = { d->p[i].ns, d->p[i].nt };
		c = lc_crc32c(c, len, sizeof len);
		c = lc_crc32c(c, d->p[i].src, (size_t)d->p[i].ns * sizeof *d->p[i].src);
		c = lc_crc32c(c, d->p[i].tgt, (size_t)d->p[i].nt * sizeof *d->p[i].tgt);
	}
	return c;
}

/* Appends "; what: was -> now" to buf. */
static void note_diff(char *buf, size_t n, const char *what, const char *was, const char *now)
{
	size_t l = strlen(buf);

	snprintf(buf + l, n - l, "%s%s %s -> %s", l ? "; " : "", what, was, now);
}

/* 1 (and a note) when the state's integer key is not now */
static int diff_int(const json_t *j, const char *key, long long now, const char *flag, char *diff,
                    size_t n)
{
	const json_t *v = json_object_get(j, key);
	char a[32], b[32];

	if (!v || !json_is_integer(v) || json_integer_value(v) == now)
		return 0;
	snprintf(a, sizeof a, "%lld", (long long)json_integer_value(v));
	snprintf(b, sizeof b, "%lld", now);
	note_diff(diff, n, flag, a, b);
	return 1;
}

int train_state_check(const char *dir, const train_opts *now, char *diff, size_t n, lc_err *err)
{
	char path[4096], a[64], b[64];
	json_t *j, *v;
	json_error_t je;
	int count = 0;
	static const char *const reals[] = { "lr", "dropout", "clip" };

	diff[0] = 0;
	snprintf(path, sizeof path, "%s/trainer_state.json", dir);
	if (lc_small_file(path, LC_MAX_JSON_FILE, "checkpoint file", err) < 0)
		return -1;
	if (!(j = json_load_file(path, 0, &je)))
		return lc_fail(err, "%s: %s", path, je.text);
	/* states written before these keys existed are not checked on them */
	if ((v = json_object_get(j, "data_pairs")) && json_is_integer(v) &&
	    (uint64_t)json_integer_value(v) != now->data_pairs) {
		snprintf(a, sizeof a, "%lld pairs", (long long)json_integer_value(v));
		snprintf(b, sizeof b, "%llu pairs", (unsigned long long)now->data_pairs);
		note_diff(diff, n, "the training data", a, b);
		count++;
	} else if ((v = json_object_get(j, "data_crc32c")) && json_is_string(v)) {
		snprintf(b, sizeof b, "%08x", (unsigned)now->data_crc);
		if (strcmp(json_string_value(v), b)) {
			snprintf(a, sizeof a, "CRC-32C %s", json_string_value(v));
			snprintf(b, sizeof b, "CRC-32C %08x", (unsigned)now->data_crc);
			note_diff(diff, n, "the training data (same number of pairs)", a, b);
			count++;
		}
	}
	count += diff_int(j, "batch_tokens", now->batch_tokens, "--batch-tokens", diff, n);
	for (size_t k = 0; k < sizeof reals / sizeof *reals; k++) {
		double x = k == 0 ? now->lr : k == 1 ? now->dropout : now->clip;
		if ((v = json_object_get(j, reals[k])) && json_is_number(v) &&
		    json_number_value(v) != x) {
			snprintf(a, sizeof a, "%g", json_number_value(v));
			snprintf(b, sizeof b, "%g", x);
			note_diff(diff, n, k == 0 ? "--lr" : k == 1 ? "--dropout" : "--clip", a, b);
			count++;
		}
	}
	count += diff_int(j, "seed", (long long)(now->seed & 0x7fffffffffffffffull), "--seed", diff, n);
	count += diff_int(j, "warmup", now->warmup, "--warmup", diff, n);
	if ((v = json_object_get(j, "schedule")) && json_is_string(v) &&
	    strcmp(json_string_value(v), lr_sched_name(now->sched))) {
		note_diff(diff, n, "--schedule", json_string_value(v), lr_sched_name(now->sched));
		count++;
	}
	json_decref(j);
	return count;
}

int train_state_opts(const char *dir, train_opts *o, lc_err *err)
{
	char path[4096];
	json_t *j;
	json_error_t je;
	json_int_t warmup = 0, seed = 0;
	double lr = 0;
	const char *sched = NULL;
	enum lr_sched ls;

	snprintf(path, sizeof path, "%s/trainer_state.json", dir);
	if (lc_small_file(path, LC_MAX_JSON_FILE, "checkpoint file", err) < 0)
		return -1;
	if (!(j = json_load_file(path, 0, &je)))
		return lc_fail(err, "%s: %s", path, je.text);
	if (json_unpack_ex(j, &je, 0, "{s:F, s:s, s:I, s:I}", "lr", &lr, "schedule", &sched,
	                   "warmup", &warmup, "seed", &seed) < 0 || lr_sched_parse(sched, &ls) < 0 ||
	    lr < 0 || warmup < 0 || seed < 0) {
		json_decref(j);
		return lc_fail(err, "%s: bad training state", path);
	}
	o->lr = lr;
	o->sched = ls;
	o->warmup = warmup;
	o->seed = (uint64_t)seed;
	json_decref(j);
	return 0;
}
