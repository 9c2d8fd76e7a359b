/*
 * test_train: the optimizer, the schedules and the training loop.
 *
 *  - AdamW against the update written out by hand (bias correction,
 *    decoupled decay), clipping, the two schedules;
 *  - pairs read from a stream (cutting, skipping documents without a
 *    target), the held-out split;
 *  - training lowers the loss on a fixed batch of a tiny model;
 *  - a checkpoint is a model directory model_open loads, with the
 *    trained weights; resuming from it gives bit-identical weights to an
 *    uninterrupted run.
 */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/adamw.h"
#include "arch/model.h"
#include "weights/safetensors.h"
#include "stream/stream.h"
#include "t.h"
#include "train/train.h"
#include "train/traineval.h"

static void test_adamw(void)
{
	adamw_opts o = { 0.9, 0.999, 1e-8, 0.1 };
	float w[3] = { 1.0f, -2.0f, 0.5f }, g[3] = { 0.5f, -1.0f, 0.0f };
	float m[3] = { 0 }, v[3] = { 0 };
	double lr = 0.01;

	adamw_update(w, g, m, v, 3, 1, lr, &o, 1);
	/* step 1: m = 0.1 g, v = 0.001 g^2, mhat = g, vhat = g^2: w -= lr wd w + lr sign(g) */
	T_OK(fabs(w[0] - (1.0 - lr * 0.1 * 1.0 - lr * 0.5 / (0.5 + 1e-8))) < 1e-6, "w0 %.9g", w[0]);
	T_OK(fabs(w[1] - (-2.0 + lr * 0.1 * 2.0 + lr)) < 1e-6, "w1 %.9g", w[1]);
	T_OK(fabs(w[2] - (0.5 - lr * 0.1 * 0.5)) < 1e-7, "w2 (zero gradient, decay only) %.9g", w[2]);
	T_OK(fabs(m[0] - 0.05) < 1e-7 && fabs(v[1] - 0.001) < 1e-9, "moments %g %g", m[0], v[1]);
	/* no decay when asked */
	{
		float w2 = 1, g2 = 0, m2 = 0, v2 = 0;
		adamw_update(&w2, &g2, &m2, &v2, 1, 1, lr, &o, 0);
		T_OK(w2 == 1.0f, "no decay: %g", w2);
	}
	/* clipping */
	{
		float gg[2] = { 3, 4 };
		double n = grad_clip(gg, 2, 1.0);
		T_OK(fabs(n - 5) < 1e-12, "norm %g", n);
		T_OK(fabs(gg[0] - 0.6f) < 1e-7 && fabs(gg[1] - 0.8f) < 1e-7, "clipped %g %g", gg[0], gg[1]);
		n = grad_clip(gg, 2, 10.0);
		T_OK(fabs(gg[0] - 0.6f) < 1e-7, "below the limit: unchanged");
	}
	/* schedules */
	T_OK(fabs(lr_at(LR_INVSQRT, 1e-3, 50, 100) - 0.5e-3) < 1e-15, "warm-up is linear");
	T_OK(fabs(lr_at(LR_INVSQRT, 1e-3, 100, 100) - 1e-3) < 1e-15, "peak at warm-up");
	T_OK(fabs(lr_at(LR_INVSQRT, 1e-3, 400, 100) - 0.5e-3) < 1e-15, "inverse square root after");
	T_OK(lr_at(LR_CONSTANT, 1e-4, 1, 0) == 1e-4 && lr_at(LR_CONSTANT, 1e-4, 9999, 0) == 1e-4,
	     "constant");
	{
		enum lr_sched s;
		T_OK(lr_sched_parse("invsqrt", &s) == 0 && s == LR_INVSQRT, "parse invsqrt");
		T_OK(lr_sched_parse("cosine", &s) < 0, "unknown schedule refused");
	}
}

/* A stream of n pairs over vocabulary [2, V) (eos 1), plus one document
 * without a target. */
static void write_pairs(const char *path, int n, int V)
{
	FILE *f = fopen(path, "wb");
	lc_err err;
	lc_writer *w = stream_writer_new(f, &err);
	uint64_t s = 99;

	for (int i = 0; i < n + 1; i++) {
		lc_doc d;
		char name[32];
		uint64_t ns = 6 + (uint64_t)(i % 5), nt = 3 + (uint64_t)(i % 3);
		lc_tensor *a, *b;
		memset(&d, 0, sizeof d);
		snprintf(name, sizeof name, "doc%d", i);
		doc_init(&d, name, &err);
		a = doc_add_tensor(&d, "source", LC_I32, 1, &ns, &err);
		for (uint64_t k = 0; k < ns; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			((int32_t *)a->data)[k] = k + 1 == ns ? 1 : 2 + (int32_t)((s >> 33) % (uint64_t)(V - 2));
		}
		if (i < n) {   /* the target: a copy of the source's first tokens */
			b = doc_add_tensor(&d, "target", LC_I32, 1, &nt, &err);
			for (uint64_t k = 0; k < nt; k++)
				((int32_t *)b->data)[k] = k + 1 == nt ? 1 : ((int32_t *)a->data)[k];
		}
		stream_write_doc(w, &d, &err);
		doc_free(&d);
	}
	stream_writer_close(w, &err);
	fclose(f);
}

static const char *cfg =
	"{\"d_model\": 16, \"d_ff\": 24, \"d_kv\": 4, \"d_state\": 8, \"num_layers\": 1,\n"
	" \"num_decoder_layers\": 1, \"num_heads\": 2, \"vocab_size\": 40,\n"
	" \"feed_forward_proj\": \"gated-gelu\", \"tie_word_embeddings\": true}\n";

static char dir[64];

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

static void test_data(void)
{
	char p[128];
	train_data d, h;
	lc_err err;
	FILE *f;

	path_of(p, sizeof p, "pairs.lc");
	write_pairs(p, 12, 40);
	memset(&d, 0, sizeof d);
	f = fopen(p, "rb");
	T_OK(train_data_read(f, p, 7, 100, 1, &d, &err) == 0, "%s", err.msg);
	fclose(f);
	T_EQ_I(d.n, 12);
	T_EQ_I(d.skipped, 1);
	T_EQ_I(d.max_src, 7);
	/* doc4 has 10 source tokens ending in eos: cut to 7, eos kept last */
	T_EQ_I(d.p[4].ns, 7);
	T_EQ_I(d.p[4].src[6], 1);
	T_OK(train_data_split(&d, 3, &h, &err) == 0, "split");
	T_EQ_I(d.n, 9);
	T_EQ_I(h.n, 3);
	T_EQ_S(h.p[0].name, "doc9");
	train_data_free(&d);
	train_data_free(&h);
}

static float *weights_of(const char *mdir, uint64_t *n)
{
	lc_err err;
	lc_model *m = model_open(mdir, 0, &err);
	char p[256];
	st_file *f;
	float *w;
	uint64_t tot = 0, off = 0;

	if (!m) {
		T_OK(0, "model_open(%s): %s", mdir, err.msg);
		return NULL;
	}
	model_free(m);
	snprintf(p, sizeof p, "%s/model.safetensors", mdir);
	if (!(f = st_open(p, &err)))
		return NULL;
	for (uint32_t i = 0; i < st_count(f); i++)
		tot += st_at(f, i)->numel;
	w = malloc(tot * sizeof *w);
	for (uint32_t i = 0; i < st_count(f); i++) {
		memcpy(w + off, st_at(f, i)->data, st_at(f, i)->nbytes);
		off += st_at(f, i)->numel;
	}
	st_close(f);
	*n = tot;
	return w;
}

static void test_loop(void)
{
	char p[128], cpath[128], a[128], b[128];
	train_data d;
	lc_err err;
	FILE *f;
	lc_model *m;
	train_opts o;
	trainer *t, *t2;
	train_stats s;
	double first = 0, last = 0, ev0, ev1;
	int64_t nl;

	path_of(cpath, sizeof cpath, "config.json");
	f = fopen(cpath, "w");
	fputs(cfg, f);
	fclose(f);
	T_OK(model_write_random(dir, 3, &err) == 0, "%s", err.msg);
	path_of(p, sizeof p, "pairs.lc");
	memset(&d, 0, sizeof d);
	f = fopen(p, "rb");
	train_data_read(f, p, 64, 64, 1, &d, &err);
	fclose(f);
	memset(&o, 0, sizeof o);
	o.lr = 3e-3;
	o.sched = LR_CONSTANT;
	o.batch_tokens = 1 << 20;   /* the whole set every step */
	o.clip = 1.0;
	o.adam = (adamw_opts){ 0.9, 0.999, 1e-8, 0.01 };
	o.threads = 2;
	o.seed = 5;
	m = model_open(dir, 0, &err);
	T_OK(m != NULL, "%s", err.msg);
	if (!m)
		return;
	t = trainer_new(m, &o, &err);
	t2 = trainer_new(m, &o, &err);
	model_free(m);
	T_OK(t && t2, "trainer_new: %s", err.msg);
	if (!t || !t2)
		return;
	trainer_eval(t, &d, &ev0, &nl, &err);
	for (int i = 0; i < 30; i++) {
		T_OK(trainer_step(t, &d, &s, &err) == 0 || (printf("%s\n", err.msg), 0), "step");
		if (i == 0)
			first = s.loss;
		last = s.loss;
	}
	trainer_eval(t, &d, &ev1, &nl, &err);
	T_OK(last < first - 0.5, "training loss falls: %.4f -> %.4f", first, last);
	T_OK(ev1 < ev0 - 0.5, "evaluation loss falls: %.4f -> %.4f", ev0, ev1);
	T_EQ_I(trainer_step_count(t), 30);
	/* checkpoint after 30 steps; an uninterrupted run to 33 vs a resumed one */
	snprintf(a, sizeof a, "%s/ckpt", dir);
	T_OK(trainer_save(t, a, cpath, NULL, 1, &err) == 0, "save: %s", err.msg);
	for (int i = 0; i < 3; i++)
		trainer_step(t, &d, &s, &err);
	snprintf(b, sizeof b, "%s/straight", dir);
	trainer_save(t, b, cpath, NULL, 0, &err);
	trainer_free(t2);
	m = model_open(a, 0, &err);
	T_OK(m != NULL, "checkpoint loads: %s", m ? "" : err.msg);
	if (m) {
		t2 = trainer_new(m, &o, &err);
		model_free(m);
		T_OK(trainer_resume(t2, a, &err) == 0, "resume: %s", err.msg);
		T_EQ_I(trainer_step_count(t2), 30);
		for (int i = 0; i < 3; i++)
			trainer_step(t2, &d, &s, &err);
		trainer_save(t2, a, cpath, NULL, 1, &err);
		{
			uint64_t n1 = 0, n2 = 0;
			float *w1 = weights_of(b, &n1), *w2 = weights_of(a, &n2);
			T_OK(w1 && w2 && n1 == n2 && n1 > 0 && !memcmp(w1, w2, n1 * sizeof *w1),
			     "resumed run is bit-identical to the uninterrupted one (%llu parameters)",
			     (unsigned long long)n1);
			free(w1);
			free(w2);
		}
		trainer_free(t2);
	}
	trainer_free(t);
	train_data_free(&d);
}

/* ROUGE of greedy summaries with the oracle's tiny model, whose greedy ids
 * are goldens: a target equal to the first greedy ids scores 100; the same
 * ids reversed keep ROUGE-1 at 100 and lose ROUGE-2. */
static void test_rouge(void)
{
	const char *sh = getenv("LC_SHARE");
	char spm[512];
	train_data d;
	train_rouge r;
	lc_err err;
	const char *cases[2] = { "L0064", "L0300" };

	snprintf(spm, sizeof spm, "%s/spiece.model", sh && *sh ? sh : "share");
	memset(&d, 0, sizeof d);
	d.p = calloc(2, sizeof *d.p);
	d.n = d.cap = 2;
	for (int c = 0; c < 2; c++) {
		char p[128];
		size_t ns = 0, ng = 0;
		int32_t *src, *g;
		snprintf(p, sizeof p, "%s/locost/cases/%s/input_ids.i32", getenv("LC_TESTDATA") ?
		         getenv("LC_TESTDATA") : "tests/data", cases[c]);
		src = t_slurp(p, &ns);
		snprintf(p, sizeof p, "%s/locost/cases/%s/greedy_ids.i32", getenv("LC_TESTDATA") ?
		         getenv("LC_TESTDATA") : "tests/data", cases[c]);
		g = t_slurp(p, &ng);
		if (!src || !g || ng < 40) {
			T_OK(0, "goldens of %s", cases[c]);
			return;
		}
		d.p[c].src = src;
		d.p[c].ns = (int64_t)(ns / 4);
		d.p[c].tgt = malloc(10 * sizeof(int32_t));
		d.p[c].nt = 10;
		for (int k = 0; k < 10; k++)
			d.p[c].tgt[k] = c == 0 ? g[k] : g[9 - k];
		d.p[c].name = strdup(cases[c]);
		free(g);
	}
	T_OK(train_eval_rouge(t_data("locost"), spm, &d, 10, 2, &r, &err) == 0, "%s", err.msg);
	T_EQ_I(r.n, 2);
	T_OK(fabs(r.r1 - 100) < 1e-9, "ROUGE-1 %.4f: the golden greedy words, in any order", r.r1);
	T_OK(r.r2 >= 50 - 1e-9 && r.r2 < 100 - 1e-9, "ROUGE-2 %.4f: 100 for the first, less reversed", r.r2);
	T_OK(r.rlsum > 50 && r.rlsum < 100 - 1e-9, "ROUGE-Lsum %.4f", r.rlsum);
	train_data_free(&d);
}

static void rm_rf(const char *d)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", d);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/lc-train-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("cannot make a temporary directory\n");
		return 1;
	}
	T_RUN(test_adamw);
	T_RUN(test_data);
	T_RUN(test_loop);
	T_RUN(test_rouge);
	rm_rf(dir);
	return t_done();
}
