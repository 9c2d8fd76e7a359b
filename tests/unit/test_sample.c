/*
 * test_sample: sampling and the rest of generate()'s options in
 * gen/search.h.
 *
 *  - the warpers (temperature, top-k, top-p, min_tokens_to_keep) against
 *    transformers 4.36.2's own warper classes on fixed scores
 *    (tests/data/sampling/warpers.txt, tests/gen/sampling_ref.py);
 *  - draws: the token frequencies of many draws against the warped
 *    distribution (a chi-square bound a correct sampler fails with
 *    probability about 1e-9; fixed seeds, so the test is deterministic);
 *  - sampling searches on a toy model: top-k 1 is greedy, a seed
 *    reproduces its sequences, rows are independent streams, processors
 *    come before warpers; beam sampling at a low temperature is beam
 *    search;
 *  - num_return_sequences with beam search against model.generate() on
 *    the oracle's tiny BART (tests/data/sampling/bart_nbest.txt,
 *    tests/gen/nbest_ref.py): the N sequences in HF's order and their
 *    scores;
 *  - threads: cross-attention and the decoders' logits are the same bits
 *    for every thread count (ops/xattn.c splits by the input's length
 *    only), so a seed gives the same draws with any -j.
 */
#include <math.h>
#include <stdint.h>

#include "arch/decoder.h"
#include "arch/model.h"
#include "base/rng.h"
#include "gen/search.h"
#include "gen/search_int.h"
#include "ops/xattn.h"
#include "t.h"
#include "t_dec.h"

/* A file as a NUL-terminated string. */
static char *slurp_text(const char *rel)
{
	size_t n = 0;
	char *p = t_slurp(t_data(rel), &n), *q;

	if (!p || !(q = realloc(p, n + 1))) {
		free(p);
		return NULL;
	}
	q[n] = 0;
	return q;
}

/* n numbers after the word at *s ("in", "out", "prob"); advances *s to
 * the next line. */
static int read_row(char **s, const char *word, float *v, int n)
{
	char *p = *s, *end;
	size_t wl = strlen(word);

	if (strncmp(p, word, wl) || p[wl] != ' ')
		return -1;
	p += wl;
	for (int i = 0; i < n; i++) {
		v[i] = strtof(p, &end);
		if (end == p)
			return -1;
		p = end;
	}
	while (*p == ' ')
		p++;
	if (*p == '\n')
		p++;
	*s = p;
	return 0;
}

/* ---- the warpers against transformers' ---- */

typedef struct wcase {
	char name[64];
	int V, k, beams;
	double t, p;
	float *in, *out, *prob;
} wcase;

static int read_cases(wcase **cs)
{
	char *txt = slurp_text("sampling/warpers.txt"), *s = txt;
	int n = 0, cap = 0;
	wcase *c = NULL;

	*cs = NULL;
	if (!txt)
		return -1;
	while (*s) {
		wcase w = { 0 };
		int used = 0;

		if (sscanf(s, "case %63s %d %lf %d %lf %d%n", w.name, &w.V, &w.t, &w.k, &w.p, &w.beams,
		           &used) != 6 || w.V < 1 || w.V > 100000)
			break;
		s += used;
		while (*s && *s != '\n')
			s++;
		if (*s)
			s++;
		w.in = malloc((size_t)w.V * sizeof(float));
		w.out = malloc((size_t)w.V * sizeof(float));
		w.prob = malloc((size_t)w.V * sizeof(float));
		if (!w.in || !w.out || !w.prob || read_row(&s, "in", w.in, w.V) < 0 ||
		    read_row(&s, "out", w.out, w.V) < 0 || read_row(&s, "prob", w.prob, w.V) < 0) {
			free(w.in); free(w.out); free(w.prob);
			break;
		}
		if (n == cap) {
			wcase *t = realloc(c, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *c);
			if (!t)
				break;
			c = t;
		}
		c[n++] = w;
	}
	free(txt);
	*cs = c;
	return n;
}

static void free_cases(wcase *c, int n)
{
	for (int i = 0; i < n; i++) {
		free(c[i].in);
		free(c[i].out);
		free(c[i].prob);
	}
	free(c);
}

static void opts_for(search_opts *o, const wcase *w)
{
	search_opts_default(o);
	o->vocab = w->V;
	o->do_sample = 1;
	o->temperature = w->t;
	o->top_k = w->k;
	o->top_p = w->p;
	o->num_beams = w->beams;
}

/* softmax of s [n] in double */
static void softmax(const float *s, int n, double *p)
{
	double mx = -INFINITY, tot = 0;

	for (int j = 0; j < n; j++)
		mx = fmax(mx, s[j]);
	for (int j = 0; j < n; j++)
		tot += (p[j] = s[j] > -INFINITY ? exp((double)s[j] - mx) : 0);
	for (int j = 0; j < n; j++)
		p[j] /= tot;
}

static void test_warpers_hf(void)
{
	wcase *cs;
	int n = read_cases(&cs);

	if (!T_OK(n >= 25, "tests/data/sampling/warpers.txt: %d cases read", n))
		return;
	for (int i = 0; i < n; i++) {
		const wcase *w = &cs[i];
		float *s = malloc((size_t)w->V * sizeof *s);
		double *p = malloc((size_t)w->V * sizeof *p), perr = 0, serr = 0;
		void *ws = malloc(search_ws_bytes(w->V));
		int removed = 0, pattern = 1;
		search_opts o;

		if (!s || !p || !ws) {
			T_OK(0, "out of memory");
			break;
		}
		opts_for(&o, w);
		memcpy(s, w->in, (size_t)w->V * sizeof *s);
		search_warp(&o, s, w->beams > 1 ? 2 : 1, ws);
		softmax(s, w->V, p);
		for (int j = 0; j < w->V; j++) {
			int a = isinf(s[j]) && s[j] < 0, b = isinf(w->out[j]) && w->out[j] < 0;
			pattern &= a == b;
			removed += b;
			if (!a && !b)
				serr = fmax(serr, fabs((double)s[j] - w->out[j]) / fmax(1, fabs(w->out[j])));
			perr = fmax(perr, fabs(p[j] - w->prob[j]));
		}
		T_OK(pattern, "%s: the tokens removed differ from transformers' (%d removed there)",
		     w->name, removed);
		/* temperature is one float division, as torch does it: the same bits */
		T_OK(serr == 0, "%s: warped scores differ by %.3g", w->name, serr);
		T_OK(perr <= 2e-7, "%s: probabilities differ by %.3g", w->name, perr);
		free(s);
		free(p);
		free(ws);
	}
	free_cases(cs, n);
}

/* The warpers one by one, on cases worked out by hand. */
static void test_warpers_hand(void)
{
	float ws[64];
	{
		/* top-k 2 on 1 3 3 2: the second highest is 3, so both 3s stay, and
		 * with keep 3 the threshold is the 3rd highest (3): the same */
		float s[4] = { 1, 3, 3, 2 };
		search_top_k(s, 4, 2, 1, ws);
		T_OK(isinf(s[0]) && s[1] == 3 && s[2] == 3 && isinf(s[3]), "top-k ties: %g %g %g %g",
		     s[0], s[1], s[2], s[3]);
	}
	{
		/* top-k 1 with min_tokens_to_keep 2 keeps two */
		float s[4] = { 1, 4, 3, 2 };
		search_top_k(s, 4, 1, 2, ws);
		T_OK(isinf(s[0]) && s[1] == 4 && s[2] == 3 && isinf(s[3]), "top-k keep 2");
	}
	{
		/* top-p 0.5 on four equal scores: cumulative .25 .5 .75 1 in token
		 * order; <= 0.5 removed: tokens 0 and 1 */
		float s[4] = { 0, 0, 0, 0 };
		search_top_p(s, 4, 0.5, 1, ws);
		T_OK(isinf(s[0]) && isinf(s[1]) && s[2] == 0 && s[3] == 0, "top-p ties");
	}
	{
		/* top-p 0 keeps only the best (and min_tokens_to_keep) */
		float s[4] = { 1, 4, 3, 2 }, t[4] = { 1, 4, 3, 2 };
		search_top_p(s, 4, 0.0, 1, ws);
		search_top_p(t, 4, 0.0, 2, ws);
		T_OK(isinf(s[0]) && s[1] == 4 && isinf(s[2]) && isinf(s[3]), "top-p 0");
		T_OK(isinf(t[0]) && t[1] == 4 && t[2] == 3 && isinf(t[3]), "top-p 0, keep 2");
	}
	{
		float s[3] = { 1, -2, 0.5f };
		search_temperature(s, 3, 0.5);
		T_OK(s[0] == 2 && s[1] == -4 && s[2] == 1, "temperature");
	}
	{
		float s[3] = { -INFINITY, -INFINITY, -INFINITY }, q[3] = { 0, NAN, 0 };
		T_OK(search_draw(s, 3, 0.5) == -1, "a draw with nothing finite");
		T_OK(search_draw(q, 3, 0.5) == -1, "a draw with a NaN");
	}
	{
		/* draws: u below the first cumulative probability gives token 0, ... */
		float s[3] = { 0, 0, -INFINITY };
		T_OK(search_draw(s, 3, 0.1) == 0 && search_draw(s, 3, 0.6) == 1 &&
		     search_draw(s, 3, 0.999999) == 1, "draw by the cumulative probability");
	}
}

/* Chi-square of counts [n] against probabilities p [n] over N draws, with
 * the cells of p < 1e-12 required to be empty; passes below the bound
 * for upper tail 1e-9 (Wilson-Hilferty, z = 6). */
static void chi2_check(const char *what, const long *count, const double *p, int n, long N)
{
	double x2 = 0;
	int df = -1, stray = 0;

	for (int j = 0; j < n; j++) {
		if (p[j] < 1e-12) {
			stray += count[j] != 0;
			continue;
		}
		x2 += ((double)count[j] - N * p[j]) * ((double)count[j] - N * p[j]) / (N * p[j]);
		df++;
	}
	T_OK(!stray, "%s: %d tokens of probability 0 drawn", what, stray);
	if (df >= 1) {
		double h = 2.0 / (9 * df), bound = df * pow(1 - h + 6 * sqrt(h), 3);
		T_OK(x2 < bound, "%s: chi-square %.1f, %d degrees of freedom, bound %.1f", what, x2, df,
		     bound);
	}
}

static void test_draw_frequencies(void)
{
	static const char *const which[] = { "t0.7_k20_p0.9", "topp0.9", "flat_topp0.5",
	                                     "tied_t0.8_k4_p0.8", "v1000_t0.9_k40_p0.8", NULL };
	wcase *cs;
	int n = read_cases(&cs);
	uint64_t rng = 12345;

	for (int q = 0; which[q]; q++) {
		const wcase *w = NULL;
		for (int i = 0; i < n; i++)
			if (!strcmp(cs[i].name, which[q]))
				w = &cs[i];
		if (!T_OK(w != NULL, "case %s", which[q]))
			continue;
		{
			float *s = malloc((size_t)w->V * sizeof *s);
			long *count = calloc((size_t)w->V, sizeof *count), N = 200000;
			double *p = malloc((size_t)w->V * sizeof *p);
			void *ws = malloc(search_ws_bytes(w->V));
			search_opts o;

			if (!s || !count || !p || !ws) {
				T_OK(0, "out of memory");
				break;
			}
			opts_for(&o, w);
			memcpy(s, w->in, (size_t)w->V * sizeof *s);
			search_warp(&o, s, w->beams > 1 ? 2 : 1, ws);
			for (long i = 0; i < N; i++) {
				int32_t t = search_draw(s, w->V, lc_rng_unif(&rng));
				if (t >= 0)
					count[t]++;
			}
			for (int j = 0; j < w->V; j++)
				p[j] = w->prob[j];
			chi2_check(w->name, count, p, w->V, N);
			free(s); free(count); free(p); free(ws);
		}
	}
	free_cases(cs, n);
}

/* ---- searches on a toy model ---- */

/* Vocabulary 6: 0 start, 1 eos, 2..5 words. The next-token logits depend
 * on the last token only (so rows are independent and the same history
 * gives the same logits whatever the other rows hold); no two are equal. */
#define TV 6
#define PINNED_SEED 0x4113839f661f7865ull
static const double toy_p[TV][TV] = {
	{ 1e-9, 0.05, 0.40, 0.25, 0.20, 0.10 },   /* after start */
	{ 1e-9, 0.20, 0.20, 0.20, 0.20, 0.20 },   /* after eos (unused) */
	{ 1e-9, 0.10, 0.05, 0.50, 0.20, 0.15 },
	{ 1e-9, 0.31, 0.29, 0.05, 0.25, 0.10 },
	{ 1e-9, 0.15, 0.26, 0.24, 0.05, 0.30 },
	{ 1e-9, 0.60, 0.10, 0.10, 0.15, 0.05 },
};

typedef struct toy {
	int rows, steps;
} toy;

static int toy_step(void *ctx, const int32_t *tok, float *logits, lc_err *err)
{
	toy *t = ctx;

	for (int r = 0; r < t->rows; r++) {
		if (tok[r] < 0 || tok[r] >= TV)
			return lc_fail(err, "toy: bad token %d", tok[r]);
		for (int j = 0; j < TV; j++)
			logits[r * TV + j] = (float)log(toy_p[tok[r]][j]);
	}
	t->steps++;
	return 0;
}

static int toy_run(const search_opts *o, search_result *res)
{
	toy t = { search_rows(o), 0 };
	search_model m = { &t, toy_step, NULL };
	lc_err err;
	int rc = search_run(o, &m, res, &err);

	if (rc < 0)
		T_OK(0, "search_run: %s", err.msg);
	return rc;
}

static void toy_opts(search_opts *o)
{
	search_opts_default(o);
	o->vocab = TV;
	o->max_new = 12;
}

static int same_seq(const search_seq *a, const search_seq *b)
{
	return a->n == b->n && !memcmp(a->ids, b->ids, (size_t)a->n * sizeof *a->ids);
}

static void test_sample_search(void)
{
	search_opts o;
	search_result g, a, b, c;

	/* top-k 1 samples the greedy sequence, whatever the seed */
	toy_opts(&o);
	if (toy_run(&o, &g) < 0)
		return;
	o.do_sample = 1;
	o.top_k = 1;
	o.seed = 99;
	if (toy_run(&o, &a) == 0) {
		T_OK(same_seq(&a.seq[0], &g.seq[0]), "top-k 1 sampling is greedy search");
		search_result_free(&a);
	}
	search_result_free(&g);

	/* a seed reproduces; another seed gives other sequences; rows are
	 * independent streams: row r does not depend on how many rows run */
	toy_opts(&o);
	o.do_sample = 1;
	o.top_k = 0;
	o.seed = search_seed(7, "doc", 3);
	o.num_return = 3;
	if (toy_run(&o, &a) < 0)
		return;
	o.num_return = 5;
	if (toy_run(&o, &b) == 0) {
		int same = a.nseq == 3 && b.nseq == 5;
		for (int i = 0; same && i < 3; i++)
			same = same_seq(&a.seq[i], &b.seq[i]);
		T_OK(same, "sample rows do not depend on the number of rows");
		T_OK(!same_seq(&b.seq[3], &b.seq[4]) || !same_seq(&b.seq[0], &b.seq[1]),
		     "sample rows differ");
		search_result_free(&b);
	}
	o.num_return = 3;
	o.seed = search_seed(8, "doc", 3);
	if (toy_run(&o, &c) == 0) {
		int diff = 0;
		for (int i = 0; i < 3; i++)
			diff += !same_seq(&a.seq[i], &c.seq[i]);
		T_OK(diff > 0, "another seed, other samples");
		T_OK(isnan(c.score) && c.ids == c.seq[0].ids && c.n == c.seq[0].n,
		     "res.ids is the first sample");
		for (int i = 0; i < c.nseq; i++) {
			const search_seq *q = &c.seq[i];
			int ok = q->n >= 1 && q->n <= o.max_new;
			for (int j = 0; ok && j < q->n; j++)
				ok = q->ids[j] >= 1 && q->ids[j] < TV && (q->ids[j] != 1 || j == q->n - 1);
			T_OK(ok, "sample %d: ids in range, eos only last", i);
		}
		search_result_free(&c);
	}
	search_result_free(&a);

	/* the seed of a search: a fixed function of the seed and the key */
	T_OK(search_seed(0, "doc", 3) == search_seed(0, "doc", 3) &&
	     search_seed(0, "doc", 3) != search_seed(1, "doc", 3) &&
	     search_seed(0, "doc", 3) != search_seed(0, "dod", 3),
	     "search_seed depends on the seed and the key");
	/* pinned: documents keep their draws from one lc version to the next */
	T_OK(search_seed(42, "stdin", 5) == PINNED_SEED, "search_seed(42, \"stdin\") = %#llx",
	     (unsigned long long)search_seed(42, "stdin", 5));
}

/* The first token of many one-token samples, each its own seed: the
 * processors (here min_new 1: no eos first; repetition penalty on the
 * start token only) come before the warpers (temperature, top-k 3). */
static void test_sample_distribution(void)
{
	search_opts o;
	long count[TV] = { 0 }, N = 40000;
	double p[TV];
	float s[TV], ws[TV * 2];

	toy_opts(&o);
	o.do_sample = 1;
	o.max_new = 1;
	o.min_new = 1;
	o.temperature = 0.8;
	o.top_k = 3;
	for (long i = 0; i < N; i++) {
		search_result r;
		o.seed = search_seed((uint64_t)i, "first", 5);
		if (toy_run(&o, &r) < 0)
			return;
		if (r.n == 1)
			count[r.ids[0]]++;
		search_result_free(&r);
	}
	/* expected: eos banned, then / 0.8, then the best 3 of the rest */
	for (int j = 0; j < TV; j++)
		s[j] = (float)log(toy_p[0][j]);
	s[1] = -INFINITY;
	search_warp(&o, s, 1, ws);
	softmax(s, TV, p);
	T_OK(isinf(s[1]) && isinf(s[5]) && isinf(s[0]), "toy: eos, token 5 and start removed");
	chi2_check("first tokens of sampling searches", count, p, TV, N);
}

static void test_beam_sample(void)
{
	search_opts o;
	search_result a, b;

	/* near temperature 0 the draws come in score order: which of equal
	 * candidates (HF's beam_sample starts every beam at 0, so the beams
	 * begin as copies) is drawn first changes with the seed, the
	 * sequences and scores do not */
	toy_opts(&o);
	o.num_beams = 3;
	o.num_return = 3;
	o.max_new = 6;
	o.do_sample = 1;
	o.top_k = 0;
	o.temperature = 0.002;
	o.seed = 5;
	if (toy_run(&o, &a) < 0)
		return;
	o.seed = 6;
	if (toy_run(&o, &b) == 0) {
		int same = a.nseq == 3 && b.nseq == 3;
		for (int i = 0; same && i < 3; i++)
			same = same_seq(&a.seq[i], &b.seq[i]) && a.seq[i].score == b.seq[i].score;
		T_OK(same, "beam sampling at t = 0.002: the same sequences for every seed");
		search_result_free(&b);
	}
	search_result_free(&a);
	/* reproducible by seed, and a valid result at t = 1 */
	o.temperature = 1;
	o.top_k = 4;
	o.seed = 11;
	if (toy_run(&o, &a) == 0 && toy_run(&o, &b) == 0) {
		int same = a.nseq == b.nseq;
		for (int i = 0; same && i < a.nseq; i++)
			same = same_seq(&a.seq[i], &b.seq[i]) && a.seq[i].score == b.seq[i].score;
		T_OK(same, "beam sampling: a seed reproduces");
		for (int i = 1; i < a.nseq; i++)
			T_OK(a.seq[i].score <= a.seq[i - 1].score, "beam sampling: best first");
		search_result_free(&a);
		search_result_free(&b);
	}
	/* forced BOS leaves one token a row: zero-probability pairs fill up */
	o.forced_bos = 3;
	if (toy_run(&o, &a) == 0) {
		T_OK(a.n >= 1 && a.ids[0] == 3, "beam sampling with a forced first token");
		search_result_free(&a);
	}
}

static void test_options(void)
{
	search_opts o;
	lc_err err;

	toy_opts(&o);
	o.num_return = 2;
	T_OK(search_opts_check(&o, &err) < 0 && strstr(err.msg, "greedy"), "greedy, 2 sequences");
	o.num_beams = 2;
	T_OK(search_opts_check(&o, &err) == 0, "%s", err.msg);
	o.num_return = 3;
	T_OK(search_opts_check(&o, &err) < 0, "2 beams, 3 sequences");
	o.num_beams = 1;
	o.do_sample = 1;
	T_OK(search_opts_check(&o, &err) == 0, "%s", err.msg);
	T_EQ_I(search_rows(&o), 3);
	o.num_beams = 4;
	T_EQ_I(search_rows(&o), 4);
	o.temperature = 0;
	T_OK(search_opts_check(&o, &err) < 0, "temperature 0 when sampling");
	o.do_sample = 0;
	T_OK(search_opts_check(&o, &err) == 0, "temperature 0 without sampling: %s", err.msg);
	o.do_sample = 1;
	o.temperature = 1;
	o.top_p = 1.5;
	T_OK(search_opts_check(&o, &err) < 0, "top-p 1.5");
	o.top_p = 1;
	o.top_k = -1;
	T_OK(search_opts_check(&o, &err) < 0, "top-k -1");
}

/* ---- num_return_sequences against model.generate() ---- */

static void test_nbest_hf(void)
{
	char *txt = slurp_text("sampling/bart_nbest.txt"), *line, *save = NULL;
	lc_err err;
	lc_model *m = NULL;
	lc_decoder *dec = NULL;
	int cases = 0;

	if (!T_OK(txt != NULL, "tests/data/sampling/bart_nbest.txt"))
		return;
	if (!T_OK((m = model_open(t_data("bart/tiny_bart"), 0, &err)) != NULL, "%s", err.msg) ||
	    !T_OK((dec = decoder_new(m, &err)) != NULL, "%s", err.msg))
		goto out;
	for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char len[16], early[8], rel[64], *p, *q;
		int K, N, M, G, F, used = 0;
		double lp;
		size_t ne = 0;
		float *enc;
		t_dec_ctx cx;
		search_model sm = { &cx, t_dec_step, t_dec_reorder };
		search_opts o;
		search_result res;

		if (sscanf(line, "%15s beams=%d nret=%d max=%d lp=%lf ngram=%d early=%7s forced=%d :%n",
		           len, &K, &N, &M, &lp, &G, early, &F, &used) != 8 || !used) {
			T_OK(0, "bad line: %s", line);
			continue;
		}
		snprintf(rel, sizeof rel, "bart/goldens/%s/enc_out.f32", len);
		if (!T_OK((enc = t_slurp(t_data(rel), &ne)) != NULL, "%s", rel))
			continue;
		t_dec_oracle_opts(&o, model_config(m), K);
		o.max_new = M;
		o.length_penalty = lp;
		o.no_repeat_ngram = G;
		o.early_stopping = !strcmp(early, "never") ? SEARCH_EARLY_NEVER : !strcmp(early, "true");
		o.num_return = N;
		if (F) {
			o.forced_bos = model_generation(m)->forced_bos;
			o.forced_eos = model_generation(m)->forced_eos;
		}
		cx.s = decoder_state_new(dec, enc, (int64_t)(ne / 4 / (size_t)model_config(m)->d_model),
		                         search_rows(&o), o.max_new, &err);
		if (!T_OK(cx.s != NULL, "%s", err.msg) ||
		    !T_OK(search_run(&o, &sm, &res, &err) == 0, "%s", err.msg)) {
			decoder_state_free(cx.s);
			free(enc);
			continue;
		}
		/* the sequences, " | " between them, then " : " and the scores */
		p = line + used;
		q = strstr(p, " : ");
		{
			int ok = q != NULL && res.nseq == N;
			char *sc = q ? q + 3 : NULL;
			for (int i = 0; ok && i < N; i++) {
				const search_seq *s = &res.seq[i];
				for (int j = 0; ok && j < s->n; j++) {
					long v = strtol(p, &p, 10);
					ok = v == s->ids[j];
				}
				while (*p == ' ')
					p++;
				ok = ok && (i < N - 1 ? *p == '|' : p == q + 1 || *p == ':');
				if (*p == '|')
					p++;
				if (ok) {
					double want = strtod(sc, &sc);
					ok = fabs(s->score - want) <= 1e-4 * fabs(want) + 1e-6;
					if (!ok)
						T_OK(0, "%.40s: sequence %d score %.7g, want %.7g", line, i, s->score,
						     want);
				}
			}
			T_OK(ok, "%.60s: the %d sequences and scores of generate()", line, N);
		}
		cases++;
		search_result_free(&res);
		decoder_state_free(cx.s);
		free(enc);
	}
	T_OK(cases == 20, "%d settings compared", cases);
out:
	decoder_free(dec);
	model_free(m);
	free(txt);
}

/* ---- the same bits for every thread count ---- */

static void test_xattn_threads(void)
{
	static const int64_t Ls[] = { 1, 255, 256, 257, 1000, 20000, 40000 };
	int d = 64;
	int64_t R = 12;
	lc_err err;

	for (size_t li = 0; li < sizeof Ls / sizeof *Ls; li++) {
		int64_t L = Ls[li];
		float *E = malloc((size_t)(L * d) * sizeof *E), *q = malloc((size_t)(R * d) * sizeof *q);
		float *c1 = malloc((size_t)(R * d) * sizeof *c1), *cn = malloc((size_t)(R * d) * sizeof *cn);
		float l1[12], ln[12];
		double worst = 0;

		if (!E || !q || !c1 || !cn) {
			T_OK(0, "out of memory");
			return;
		}
		for (int64_t i = 0; i < L * d; i++)
			E[i] = (float)t_nrand();
		for (int64_t i = 0; i < R * d; i++)
			q[i] = (float)(0.3 * t_nrand());
		for (int nth = 1; nth <= 4; nth++) {
			xattn_work *w = xattn_work_new(R, d, nth, &err);
			if (!T_OK(w != NULL, "%s", err.msg))
				break;
			xattn_fw(w, q, R, E, L, d, nth == 1 ? c1 : cn, nth == 1 ? l1 : ln);
			xattn_work_free(w);
			if (nth > 1)
				T_OK(!memcmp(c1, cn, (size_t)(R * d) * sizeof *c1) &&
				     !memcmp(l1, ln, sizeof l1), "xattn L %lld: %d threads, other bits",
				     (long long)L, nth);
		}
		/* and right: row 0 and row R-1 against float64 */
		for (int64_t r = 0; r < R; r += R - 1) {
			double mx = -INFINITY, tot = 0, *acc = calloc((size_t)d, sizeof *acc);
			for (int64_t j = 0; j < L; j++) {
				double s = 0;
				for (int i = 0; i < d; i++)
					s += (double)q[r * d + i] * E[j * d + i];
				mx = fmax(mx, s);
			}
			for (int64_t j = 0; j < L; j++) {
				double s = 0, e;
				for (int i = 0; i < d; i++)
					s += (double)q[r * d + i] * E[j * d + i];
				tot += (e = exp(s - mx));
				for (int i = 0; i < d; i++)
					acc[i] += e * E[j * d + i];
			}
			for (int i = 0; i < d; i++)
				worst = fmax(worst, fabs(acc[i] / tot - c1[r * d + i]));
			worst = fmax(worst, fabs(mx + log(tot) - l1[r]) / fmax(1, fabs(mx)));
			free(acc);
		}
		T_OK(worst < 1e-4, "xattn L %lld: error %.3g against float64", (long long)L, worst);
		free(E); free(q); free(c1); free(cn);
	}
	/* partial results too big to hold for every part at once: rounds */
	{
		int64_t L = 2600, Rb = 512;
		int db = 2048;
		float *E = malloc((size_t)(L * db) * sizeof *E), *q = malloc((size_t)(Rb * db) * sizeof *q);
		float *c1 = malloc((size_t)(Rb * db) * sizeof *c1), *cn = malloc((size_t)(Rb * db) * sizeof *cn);

		if (E && q && c1 && cn) {
			for (int64_t i = 0; i < L * db; i++)
				E[i] = (float)t_nrand();
			for (int64_t i = 0; i < Rb * db; i++)
				q[i] = (float)(0.05 * t_nrand());
			for (int nth = 1; nth <= 3; nth += 2) {
				xattn_work *w = xattn_work_new(Rb, db, nth, &err);
				if (!T_OK(w != NULL, "%s", err.msg))
					break;
				xattn_fw(w, q, Rb, E, L, db, nth == 1 ? c1 : cn, NULL);
				xattn_work_free(w);
			}
			T_OK(!memcmp(c1, cn, (size_t)(Rb * db) * sizeof *c1),
			     "xattn in rounds: 1 and 3 threads, the same bits");
		}
		free(E); free(q); free(c1); free(cn);
	}
}

/* A decoder's logits over random encoder states for rows x 6 steps, with
 * 1, 2 and 3 threads: the same bits. */
static void decoder_threads(const char *dir, const char *what, int rows)
{
	lc_err err;
	lc_model *m = model_open(dir, 0, &err);
	lc_decoder *dec = m ? decoder_new(m, &err) : NULL;
	int64_t L = 3000;
	int steps = 6;

	if (!T_OK(dec != NULL, "%s: %s", what, err.msg)) {
		model_free(m);
		return;
	}
	{
		const lc_config *c = model_config(m);
		int d = c->d_model, V = c->vocab_size, same = 1;
		float *enc = malloc((size_t)(L * d) * sizeof *enc);
		float *ref = malloc((size_t)steps * rows * V * sizeof *ref);
		float *lg = malloc((size_t)rows * V * sizeof *lg);

		if (!enc || !ref || !lg) {
			T_OK(0, "out of memory");
			goto done;
		}
		for (int64_t i = 0; i < L * d; i++)
			enc[i] = (float)t_nrand();
		for (int nth = 1; nth <= 3; nth++) {
			dec_state *s = decoder_state_new(dec, enc, L, rows, steps, &err);
			int32_t tok[8];

			if (!T_OK(s != NULL && decoder_state_threads(s, nth, &err) == 0, "%s", err.msg)) {
				decoder_state_free(s);
				break;
			}
			for (int r = 0; r < rows; r++)
				tok[r] = c->decoder_start_id;
			for (int t = 0; t < steps; t++) {
				float *want = ref + (size_t)t * rows * V;
				if (!T_OK(decoder_step(s, tok, lg, &err) == 0, "%s", err.msg))
					break;
				if (nth == 1)
					memcpy(want, lg, (size_t)rows * V * sizeof *lg);
				else
					same &= !memcmp(want, lg, (size_t)rows * V * sizeof *lg);
				for (int r = 0; r < rows; r++)
					tok[r] = (int32_t)((t * 7 + r * 13 + 5) % V);
			}
			decoder_state_free(s);
		}
		/* needs both splits fixed: ops/xattn.c's parts (by L) and
		 * compute/cpu.c's cmp_gemm_par column blocks (fixed width) */
		T_OK(same, "%s, %d rows: logits with 2 and 3 threads are not those of 1 thread "
		     "(cross-attention parts or projection column blocks depend on -j)", what, rows);
done:
		free(enc);
		free(ref);
		free(lg);
	}
	decoder_free(dec);
	model_free(m);
}

static void test_decoder_threads(void)
{
	const char *share = getenv("LC_SHARE");
	char demo[4096];

	for (int rows = 1; rows <= 4; rows += 3) {
		decoder_threads(t_data("locost"), "LOCOST (tiny)", rows);
		decoder_threads(t_data("bart/tiny_bart"), "BART (tiny)", rows);
		if (share && *share) {
			snprintf(demo, sizeof demo, "%s/models/demo", share);
			decoder_threads(demo, "the demo model", rows);
		}
	}
}

int main(void)
{
	T_RUN(test_warpers_hf);
	T_RUN(test_warpers_hand);
	T_RUN(test_draw_frequencies);
	T_RUN(test_sample_search);
	T_RUN(test_sample_distribution);
	T_RUN(test_beam_sample);
	T_RUN(test_options);
	T_RUN(test_nbest_hf);
	T_RUN(test_xattn_threads);
	T_RUN(test_decoder_threads);
	return t_done();
}
