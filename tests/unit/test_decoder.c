/*
 * test_decoder: the T5 decoder against the oracle's goldens (tests/data/
 * locost: tiny model, cases/L????/enc_out, dec_logits, greedy_ids), the
 * search options against goldens from tests/gen/decode_ref.py
 * (decode_search.txt), each alone and all of them in one batch (gen/batch.h),
 * and the cache bookkeeping (reorder, positions).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch/decoder.h"
#include "arch/t5dec.h"
#include "arch/model.h"
#include "base/dtype.h"
#include "compute/compute.h"
#include "compute/dev.h"
#include "gen/batch.h"
#include "gen/search.h"
#include "ops/xcache.h"
#include "t.h"
#include "t_dec.h"

static const char *cases[] = { "L0001", "L0002", "L0007", "L0064", "L0300", "L1000" };
static lc_model *model;
static lc_decoder *dec;

static float *load_f32(const char *rel, size_t *n)
{
	size_t len = 0;
	float *p = t_slurp(t_data(rel), &len);

	*n = p ? len / sizeof(float) : 0;
	return p;
}

static void test_buckets(void)
{
	int rp;

	for (rp = 0; rp < 16; rp++)
		T_EQ_I(t5_rel_bucket(rp, 32, 128), rp);
	/* 16 + trunc(log(rp/16) / log(8) * 16), capped at 31 */
	T_EQ_I(t5_rel_bucket(16, 32, 128), 16);
	T_EQ_I(t5_rel_bucket(20, 32, 128), 17);    /* 1.716 */
	T_EQ_I(t5_rel_bucket(45, 32, 128), 23);    /* 7.97 */
	T_EQ_I(t5_rel_bucket(127, 32, 128), 31);   /* 15.94 */
	T_EQ_I(t5_rel_bucket(128, 32, 128), 31);
	T_EQ_I(t5_rel_bucket(200000, 32, 128), 31);
	T_EQ_I(t5_rel_bucket(-5, 32, 128), 0);
}

/* Greedy ids identical to the goldens; the first steps' logits within
 * 2e-5 of max|golden| (teacher forced on the golden ids; measured 9.2e-7). Three times:
 * every cross-attention layer folded, the first one cached (a budget of
 * one layer), both cached. */
static void test_parity(void)
{
	const lc_config *c = decoder_config(dec);
	double worst = 0;
	size_t k;

	for (int mode = 0; mode < 3; mode++)
	for (k = 0; k < sizeof cases / sizeof *cases; k++) {
		char rel[256];
		size_t ne = 0, ng = 0, nl = 0, i;
		float *enc, *gl, *logits;
		int32_t *gi;
		int64_t L;
		search_opts o;
		search_result res;
		t_dec_ctx cx;
		lc_err err = { "" };

		snprintf(rel, sizeof rel, "locost/cases/%s/enc_out.f32", cases[k]);
		enc = load_f32(rel, &ne);
		snprintf(rel, sizeof rel, "locost/cases/%s/greedy_ids.i32", cases[k]);
		gi = t_slurp(t_data(rel), &ng);
		snprintf(rel, sizeof rel, "locost/cases/%s/dec_logits.f32", cases[k]);
		gl = load_f32(rel, &nl);
		if (!T_OK(enc && gi && gl, "%s: golden files missing", cases[k]))
			continue;
		ng /= 4;
		L = (int64_t)(ne / c->d_model);
		T_EQ_I(L, atoi(cases[k] + 1));
		decoder_set_cross_cache(dec, mode == 0 ? 0 : mode == 1 ?
		                        xcache_layer_bytes(L, c->num_heads, c->d_kv, 0) : (uint64_t)1 << 30,
		                        1, NULL);

		/* greedy through search_run */
		search_opts_default(&o);
		o.max_new = 32;
		o.vocab = c->vocab_size;
		o.start_id = c->decoder_start_id;
		o.eos_id = c->eos_id;
		cx.s = decoder_state_new(dec, enc, L, 1, o.max_new, &err);
		T_OK(cx.s, "%s", err.msg);
		/* threads split the encoder rows: 2 threads here, 1..3 below */
		T_OK(cx.s && decoder_state_threads(cx.s, 2, &err) == 0, "%s", err.msg);
		if (cx.s) {
			search_model m = { &cx, t_dec_step, t_dec_reorder };
			int rc = search_run(&o, &m, &res, &err);
			T_OK(rc == 0, "%s", err.msg);
			if (rc == 0) {
				int same = (size_t)res.n == ng && !memcmp(res.ids, gi, ng * 4);
				T_OK(same, "%s: greedy ids differ (%d vs %zu tokens)", cases[k], res.n, ng);
				search_result_free(&res);
			}
			decoder_state_free(cx.s);
		}

		/* teacher-forced logits of the first steps */
		cx.s = decoder_state_new(dec, enc, L, 1, 8, &err);
		T_OK(cx.s && decoder_state_threads(cx.s, 1 + (int)(k % 3), &err) == 0, "%s", err.msg);
		logits = malloc((size_t)c->vocab_size * sizeof *logits);
		if (cx.s && logits) {
			size_t rows = nl / c->vocab_size;
			double gmax = 0, dmax = 0;
			int32_t tok = c->decoder_start_id;

			for (i = 0; i < rows * c->vocab_size; i++)
				if (fabs(gl[i]) > gmax)
					gmax = fabs(gl[i]);
			for (i = 0; i < rows; i++) {
				int j;
				if (decoder_step(cx.s, &tok, logits, &err) < 0)
					break;
				/* on a GPU the states are read there: no caches */
				if (i == 0)
					T_EQ_I(decoder_cross_cached(cx.s),
					       cmp_dev_on() ? 0 : mode < 2 ? mode : c->num_decoder_layers);
				for (j = 0; j < c->vocab_size; j++) {
					double dd = fabs(logits[j] - gl[i * c->vocab_size + j]);
					if (dd > dmax)
						dmax = dd;
				}
				if (i < ng)
					tok = gi[i];
			}
			T_EQ_I(decoder_pos(cx.s), rows);
			T_OK(dmax / gmax <= 2e-5, "%s: logits rel err %.3g", cases[k], dmax / gmax);
			if (dmax / gmax > worst)
				worst = dmax / gmax;
		}
		free(logits);
		decoder_state_free(cx.s);
		free(enc);
		free(gi);
		free(gl);
	}
	decoder_set_cross_cache(dec, (uint64_t)1 << 30, 0, NULL);
	printf("# worst dec_logits rel err %.3e\n", worst);
}

/* Two rows fed different tokens, reordered, must equal runs of one row. */
static void test_reorder(void)
{
	const lc_config *c = decoder_config(dec);
	size_t ne, V = (size_t)c->vocab_size;
	float *enc = load_f32("locost/cases/L0064/enc_out.f32", &ne);
	lc_err err = { "" };
	dec_state *two, *one;
	float *l2, *l1;
	int32_t a[2] = { 0, 0 }, seqs[2][3] = { { 0, 17, 99 }, { 0, 250, 3 } }, src[2] = { 1, 1 };
	double d0 = 0, d1 = 0;
	size_t j;
	int t;

	if (!T_OK(enc != NULL, "no enc_out"))
		return;
	two = decoder_state_new(dec, enc, 64, 2, 4, &err);
	one = decoder_state_new(dec, enc, 64, 1, 4, &err);
	l2 = malloc(2 * V * sizeof *l2);
	l1 = malloc(V * sizeof *l1);
	if (!T_OK(two && one && l2 && l1, "%s", err.msg))
		goto out;
	for (t = 0; t < 3; t++) {
		a[0] = seqs[0][t];
		a[1] = seqs[1][t];
		T_OK(decoder_step(two, a, l2, &err) == 0, "%s", err.msg);
	}
	/* both rows continue from row 1's history */
	T_OK(decoder_reorder(two, src, &err) == 0, "%s", err.msg);
	a[0] = 5;
	a[1] = 6;
	T_OK(decoder_step(two, a, l2, &err) == 0, "%s", err.msg);
	for (t = 0; t < 3; t++)
		T_OK(decoder_step(one, &seqs[1][t], l1, &err) == 0, "%s", err.msg);
	T_OK(decoder_step(one, &a[0], l1, &err) == 0, "%s", err.msg);
	for (j = 0; j < V; j++)
		if (fabs(l1[j] - l2[j]) > d0)
			d0 = fabs(l1[j] - l2[j]);
	T_OK(d0 < 1e-4, "row 0 after reorder differs by %g", d0);
	decoder_state_free(one);
	one = decoder_state_new(dec, enc, 64, 1, 4, &err);
	for (t = 0; t < 3 && one; t++)
		decoder_step(one, &seqs[1][t], l1, &err);
	if (one)
		decoder_step(one, &a[1], l1, &err);
	for (j = 0; j < V; j++)
		if (fabs(l1[j] - l2[V + j]) > d1)
			d1 = fabs(l1[j] - l2[V + j]);
	T_OK(d1 < 1e-4, "row 1 after reorder differs by %g", d1);
	/* the state refuses a step beyond its size and a bad reorder */
	T_OK(decoder_step(two, a, l2, &err) < 0, "step past max_steps accepted");
	src[0] = 2;
	T_OK(decoder_reorder(two, src, &err) < 0, "reorder source out of range accepted");
	a[0] = c->vocab_size;
	decoder_state_free(one);
	one = decoder_state_new(dec, enc, 64, 1, 4, &err);
	T_OK(one && decoder_step(one, a, l1, &err) < 0, "token out of range accepted");
out:
	decoder_state_free(one);
	decoder_state_free(two);
	free(l1);
	free(l2);
	free(enc);
}

#define MAX_RUNS 128

/* The goldens' searches, for the batched run. */
static gen_job jobs[MAX_RUNS];
static int32_t jwant[MAX_RUNS][64];
static int jnwant[MAX_RUNS], njobs;

static int same_ids(const search_result *res, const int32_t *want, int nwant)
{
	int same = res->n == nwant;

	for (int i = 0; same && i < nwant; i++)
		same = res->ids[i] == want[i];
	return same;
}

/* All the goldens' searches at once, in one decoder state: each must give
 * its golden, as it does alone. Run three times: 2 threads and 1 with the
 * beams' cross-attention cached, 1 thread with it folded. */
static void test_search_batched(void)
{
	lc_err err = { "" };

	T_OK(njobs >= 30, "only %d golden runs to batch", njobs);
	for (int nth = 2; nth >= 0; nth--) {
		int ok = 0;
		decoder_set_cross_cache(dec, nth ? (uint64_t)1 << 30 : 0, 0, NULL);
		if (!T_OK(gen_batch_run(dec, jobs, njobs, nth ? nth : 1, NULL, NULL, &err) == 0, "%s",
		          err.msg))
			return;
		for (int i = 0; i < njobs; i++) {
			if (!T_OK(jobs[i].rc == 0, "batched run %d: %s", i, jobs[i].err.msg))
				continue;
			ok += T_OK(same_ids(&jobs[i].res, jwant[i], jnwant[i]),
			           "batched run %d (%d threads): %d ids, want %d", i, nth, jobs[i].res.n,
			           jnwant[i]);
			search_result_free(&jobs[i].res);
		}
		T_EQ_I(ok, njobs);
	}
	decoder_set_cross_cache(dec, (uint64_t)1 << 30, 0, NULL);
	/* one document fails (a NaN in its states): the batch does not start,
	 * and the message says which */
	if (njobs > 3) {
		int d = decoder_config(dec)->d_model;
		float *bad = malloc((size_t)d * sizeof *bad);
		const float *keep = jobs[3].enc;
		int64_t kl = jobs[3].L;
		if (bad) {
			for (int i = 0; i < d; i++)
				bad[i] = 0.5f;
			bad[9] = NAN;
			jobs[3].enc = bad;
			jobs[3].L = 1;
			T_OK(gen_batch_run(dec, jobs, njobs, 1, NULL, NULL, &err) < 0 &&
			     strstr(err.msg, "document 3 of the batch") && strstr(err.msg, "NaN"),
			     "NaN in one document: %s", err.msg);
			jobs[3].enc = keep;
			jobs[3].L = kl;
			free(bad);
		}
	}
	for (int i = 0; i < njobs; i++)
		free((void *)jobs[i].enc);
}

/* decode_search.txt: greedy with processors and beam search goldens. */
static void test_search_goldens(void)
{
	const lc_config *c = decoder_config(dec);
	size_t len = 0;
	char *txt = t_slurp(t_data("locost/decode_search.txt"), &len), *line, *save = NULL;
	int nrun = 0;

	if (!T_OK(txt != NULL, "no decode_search.txt"))
		return;
	txt = realloc(txt, len + 1);
	txt[len] = 0;
	for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char cs[16], early[16], rel[128];
		int beams, max, min, ngram, want[64], nwant = 0, off = 0;
		double lp, rep;
		char *p = strstr(line, " : ");
		size_t ne;
		float *enc;
		search_opts o;
		search_result res;
		t_dec_ctx cx;
		lc_err err = { "" };

		if (sscanf(line, "%15s beams=%d max=%d min=%d lp=%lf ngram=%d rep=%lf early=%15s",
		           cs, &beams, &max, &min, &lp, &ngram, &rep, early) != 8 || !p) {
			T_OK(0, "bad golden line: %s", line);
			continue;
		}
		for (p += 3; nwant < 64 && sscanf(p, "%d%n", &want[nwant], &off) == 1; p += off)
			nwant++;
		snprintf(rel, sizeof rel, "locost/cases/%s/enc_out.f32", cs);
		enc = load_f32(rel, &ne);
		if (!T_OK(enc != NULL, "%s missing", rel))
			continue;
		search_opts_default(&o);
		o.num_beams = beams;
		o.max_new = max;
		o.min_new = min;
		o.length_penalty = lp;
		o.no_repeat_ngram = ngram;
		o.repetition_penalty = rep;
		o.early_stopping = !strcmp(early, "true") ? SEARCH_EARLY_TRUE :
		                   !strcmp(early, "never") ? SEARCH_EARLY_NEVER : SEARCH_EARLY_FALSE;
		o.vocab = c->vocab_size;
		cx.s = decoder_state_new(dec, enc, (int64_t)(ne / c->d_model), beams, max, &err);
		if (T_OK(cx.s != NULL, "%s", err.msg)) {
			search_model m = { &cx, t_dec_step, t_dec_reorder };
			if (T_OK(search_run(&o, &m, &res, &err) == 0, "%s", err.msg)) {
				int same = res.n == nwant, i;
				for (i = 0; same && i < nwant; i++)
					same = res.ids[i] == want[i];
				T_OK(same, "%s: got %d ids, want %d", line, res.n, nwant);
				if (!same) {
					printf("# got:");
					for (i = 0; i < res.n; i++)
						printf(" %d", res.ids[i]);
					printf("\n");
				}
				search_result_free(&res);
			}
			decoder_state_free(cx.s);
		}
		if (njobs < MAX_RUNS && nwant <= 64) {
			jobs[njobs] = (gen_job){ .enc = enc, .L = (int64_t)(ne / c->d_model), .o = o };
			for (int i = 0; i < nwant; i++)
				jwant[njobs][i] = want[i];
			jnwant[njobs++] = nwant;
		} else {
			free(enc);
		}
		nrun++;
	}
	T_OK(nrun >= 30, "only %d golden runs", nrun);
	free(txt);
}

/* States over bf16 values held as such (e16) and over their float32
 * copy (ef), nrow rows each fed the same tokens: the same logits, bit for
 * bit, for 3 steps. */
static int same_logits(const uint16_t *e16, const float *ef, int64_t L, int nrow)
{
	int V = model_config(model)->vocab_size, ok = 1;
	dec_input i16 = { NULL, L, nrow, e16 }, i32 = { ef, L, nrow, NULL };
	lc_err err = { "" };
	dec_state *a = decoder_batch_new(dec, &i16, 1, 4, &err);
	dec_state *b = a ? decoder_batch_new(dec, &i32, 1, 4, &err) : NULL;
	float *la = malloc((size_t)nrow * V * sizeof *la), *lb = malloc((size_t)nrow * V * sizeof *lb);
	int32_t tok[2];

	ok = a && b && la && lb;
	for (int t = 0; ok && t < 3; t++) {
		tok[0] = tok[1] = 3 + 5 * t;
		ok = decoder_step(a, tok, la, &err) == 0 && decoder_step(b, tok, lb, &err) == 0 &&
		     !memcmp(la, lb, (size_t)nrow * V * sizeof *la);
	}
	if (!ok && err.msg[0])
		fprintf(stderr, "# %s\n", err.msg);
	decoder_state_free(a);
	decoder_state_free(b);
	free(la);
	free(lb);
	return ok;
}

/* bf16 states taken as they are (decoder_reads_bf16): refused with the
 * same messages as float32 ones when empty, NaN or infinite. LOCOST's
 * decoder takes them under --compute bf16, where a state over them steps
 * (the emulation stands in for the hardware), and in fp32 where the
 * cross-attention's kernels widen them as they read them (AVX2, plain C:
 * the logits of their float32 copy, bit for bit, folded and cached);
 * elsewhere (AVX-512) a float32 copy is made first. */
static void test_bf16_states(void)
{
	int d = model_config(model)->d_model;
	uint16_t *e = calloc((size_t)3 * d, sizeof *e);
	dec_input in = { NULL, 3, 1, e };
	char note[128];
	lc_err err = { "" };
	dec_state *st;
	float *logits = malloc((size_t)model_config(model)->vocab_size * sizeof *logits);
	int32_t tok = 0;

	if (!T_OK(e && logits, "memory"))
		return;
	for (int i = 0; i < 3 * d; i++)
		e[i] = lc_f32_to_bf16((float)((i % 7) - 3) * 0.25f);
	{
		int64_t L = 700;        /* over two chunks and many parts */
		uint16_t *h = malloc((size_t)L * d * sizeof *h);
		float *f = malloc((size_t)L * d * sizeof *f);

		for (int64_t i = 0; h && f && i < L * d; i++) {
			h[i] = lc_f32_to_bf16((float)sin(0.37 * (double)i) * 1.5f);
			f[i] = lc_bf16_to_f32(h[i]);
		}
		for (int simd = 2; h && f && simd >= 0; simd -= 2) {
			cmp_xk_simd(simd);
			T_OK(decoder_reads_bf16(dec), "f32, kernels' path %d: read as they are", simd);
			T_OK(same_logits(h, f, L, 1), "f32, path %d: one row, the float32 copy's logits",
			     simd);
			T_OK(same_logits(h, f, L, 2), "f32, path %d: two rows, the float32 copy's logits",
			     simd);
		}
		cmp_xk_simd(1);
		free(h);
		free(f);
	}
	if (!cmp_xk_widens()) {
		T_OK(!decoder_reads_bf16(dec), "not under f32 with AVX-512");
		T_OK(decoder_batch_new(dec, &in, 1, 4, &err) == NULL,
		     "bf16 states refused under f32 with AVX-512");
	}
	setenv("LC_BF16_EMULATE", "1", 1);
	T_OK(cmp_set_compute("bf16", note, sizeof note, &err) == 0, "%s", err.msg);
	T_OK(decoder_reads_bf16(dec), "LOCOST reads them under bf16");
	T_OK(decoder_check_states16(dec, e, 3, &err) == 0, "finite: %s", err.msg);
	T_OK((st = decoder_batch_new(dec, &in, 1, 4, &err)) != NULL, "a state: %s", err.msg);
	T_OK(st && decoder_step(st, &tok, logits, &err) == 0 && isfinite(logits[0]), "a step: %s",
	     err.msg);
	decoder_state_free(st);
	/* two rows (beams): the cross-attention cached in bf16 from them (on
	 * the GPU none: it reads their values there) */
	in.nrow = 2;
	T_OK((st = decoder_batch_new(dec, &in, 1, 4, &err)) != NULL, "two rows: %s", err.msg);
	if (st) {
		int32_t two[2] = { 0, 0 };
		float *l2 = malloc((size_t)2 * model_config(model)->vocab_size * sizeof *l2);
		T_OK(l2 && decoder_step(st, two, l2, &err) == 0 && isfinite(l2[0]), "%s", err.msg);
		T_EQ_I(decoder_cross_cached(st),
		       cmp_dev_on() ? 0 : model_config(model)->num_decoder_layers);
		free(l2);
	}
	decoder_state_free(st);
	in.nrow = 1;
	e[d + 5] = 0x7fc0;      /* NaN in row 1 */
	T_OK(decoder_check_states16(dec, e, 3, &err) < 0 &&
	     strstr(err.msg, "row 1 of 3 holds NaN"), "%s", err.msg);
	e[d + 5] = 0xff80;      /* -inf */
	T_OK(decoder_check_states16(dec, e, 3, &err) < 0 && strstr(err.msg, "holds -inf"), "%s",
	     err.msg);
	T_OK(decoder_check_states16(dec, e, 0, &err) < 0 && strstr(err.msg, "no rows"), "%s",
	     err.msg);
	T_OK(cmp_set_compute("f32", note, sizeof note, &err) == 0, "%s", err.msg);
	unsetenv("LC_BF16_EMULATE");
	free(e);
	free(logits);
}

/* In a child: two rows over L = 100,000 states (a cache layer 51 MB),
 * the address space then limited to what is mapped and `room` more; the
 * first step's status, and through st the layers cached (+ 100), or 90
 * + the failing stage. */
static int cache_under_limit(lc_decoder *dd, long room, char *msg, size_t cap)
{
	int fd[2], st = -1;
	pid_t pid;
	ssize_t n;

	if (pipe(fd) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		int64_t L = 100000, d = model_config(model)->d_model;
		float *e = malloc((size_t)(L * d) * sizeof *e);
		float *lg = malloc((size_t)2 * model_config(model)->vocab_size * sizeof *lg);
		int32_t tok[2] = { 0, 0 };
		lc_err err = { "" };
		dec_input in;
		dec_state *s;

		close(fd[0]);
		if (!e || !lg)
			_exit(91);
		for (int64_t i = 0; i < L * d; i++)
			e[i] = (float)((i * 37) % 101 - 50) / 64.0f;
		in = (dec_input){ e, L, 2, NULL };
		if (!(s = decoder_batch_new(dd, &in, 1, 4, &err)))
			_exit(92);
		if (!t_limit_as(room))
			_exit(93);
		if (decoder_step(s, tok, lg, &err) < 0) {
			n = write(fd[1], err.msg, strlen(err.msg));
			_exit(n < 0 ? 94 : 95);
		}
		_exit(100 + decoder_cross_cached(s));
	}
	close(fd[1]);
	n = pid > 0 ? read(fd[0], msg, cap - 1) : -1;
	msg[n > 0 ? n : 0] = 0;
	close(fd[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The default cache, out of memory for it, takes fewer layers (here one
 * of two), or none; a cache the user sized is an error saying so. */
static void test_cache_fallback(void)
{
	lc_err err = { "" };
	lc_decoder *dd = decoder_new(model, &err);
	char msg[512];

	if (!T_OK(dd != NULL, "%s", err.msg))
		return;
	T_EQ_I(cache_under_limit(dd, (long)80 << 20, msg, sizeof msg), 101);
	T_EQ_I(cache_under_limit(dd, (long)24 << 20, msg, sizeof msg), 100);
	T_OK(decoder_set_cross_cache(dd, (uint64_t)1 << 30, 0, &err) == 0, "%s", err.msg);
	T_EQ_I(cache_under_limit(dd, (long)80 << 20, msg, sizeof msg), 95);
	T_OK(strstr(msg, "--cross-cache 0 does without") && strstr(msg, "out of memory"), "%s", msg);
	decoder_free(dd);
}

int main(void)
{
	lc_err err = { "" };

	T_RUN(test_buckets);
	model = model_open(t_data("locost"), MODEL_COPY, &err);
	if (!T_OK(model != NULL, "model_open: %s", err.msg))
		return t_done();
	dec = decoder_new(model, &err);
	if (!T_OK(dec != NULL, "decoder_new: %s", err.msg))
		return t_done();
	T_RUN(test_parity);
	T_RUN(test_reorder);
	T_RUN(test_search_goldens);
	T_RUN(test_search_batched);
	T_RUN(test_bf16_states);
	T_RUN(test_cache_fallback);
	decoder_free(dec);
	model_free(model);
	return t_done();
}
