/*
 * test_search: greedy and beam search on a toy Markov "model" whose
 * outcomes are worked out by hand in the comments (the real-model goldens
 * are in test_decoder), and the logits processors on small arrays.
 */
#include <stdint.h>

#include "gen/search.h"
#include "gen/search_int.h"
#include "t.h"

/* Vocabulary: 0 start, 1 eos, 2 A, 3 B. Next-token probabilities depend
 * on the last token only:
 *   after start: A .5, B .4, eos .1       after A: A .34, B .35, eos .31
 *   after B: eos .9, A .05, B .05          (start: 1e-9 everywhere)     */
static int toy_step(void *ctx, const int32_t *tok, float *logits, lc_err *err)
{
	static const double p[4][4] = {
		{ 1e-9, 0.1, 0.5, 0.4 },
		{ 1e-9, 0.25, 0.25, 0.5 },   /* after eos: never used */
		{ 1e-9, 0.31, 0.34, 0.35 },
		{ 1e-9, 0.9, 0.05, 0.05 },
	};
	int rows = *(int *)ctx, r, j;

	for (r = 0; r < rows; r++) {
		if (tok[r] < 0 || tok[r] > 3)
			return lc_fail(err, "toy: bad token %d", tok[r]);
		for (j = 0; j < 4; j++)
			logits[r * 4 + j] = (float)log(p[tok[r]][j]);
	}
	return 0;
}

/* The sequences of the search, " | " between them. */
static int run_n(int beams, int nret, int max_new, int min_new, double lp, int ngram,
                 const char *want)
{
	int rows = beams;
	search_model m = { &rows, toy_step, NULL };
	search_opts o;
	search_result res;
	lc_err err;
	char got[256] = "";
	size_t n = 0;
	int i, ok;

	search_opts_default(&o);
	o.vocab = 4;
	o.num_beams = beams;
	o.max_new = max_new;
	o.min_new = min_new;
	o.length_penalty = lp;
	o.no_repeat_ngram = ngram;
	o.num_return = nret;
	if (search_run(&o, &m, &res, &err) < 0)
		return T_OK(0, "search_run: %s", err.msg);
	T_OK(res.nseq == nret && res.ids == res.seq[0].ids && res.n == res.seq[0].n,
	     "res.ids is the first of %d sequences", res.nseq);
	for (int q = 0; q < res.nseq; q++)
		for (i = 0; i < res.seq[q].n; i++)
			n += (size_t)snprintf(got + n, sizeof got - n, "%s%d", i ? " " : q ? " | " : "",
			                      res.seq[q].ids[i]);
	for (int q = 1; q < res.nseq; q++)
		T_OK(res.seq[q].score <= res.seq[q - 1].score, "sequence %d scores above %d", q, q - 1);
	ok = T_OK(!strcmp(got, want), "beams %d max %d min %d lp %g ngram %d: got \"%s\", want \"%s\"",
	          beams, max_new, min_new, lp, ngram, got, want);
	search_result_free(&res);
	return ok;
}

static int run(int beams, int max_new, int min_new, double lp, int ngram, const char *want)
{
	return run_n(beams, 1, max_new, min_new, lp, ngram, want);
}

static void test_greedy(void)
{
	/* A (.5), then B (.35), then eos (.9) */
	run(1, 10, 0, 1.0, 0, "2 3 1");
	/* max_new cuts before the eos */
	run(1, 2, 0, 1.0, 0, "2 3");
	run(1, 1, 0, 1.0, 0, "2");
	/* min_new 3: eos banned at step 3, A and B tie at .05: the first (A),
	 * then B (.35) */
	run(1, 4, 3, 1.0, 0, "2 3 2 3");
	/* + no-repeat bigrams: after 0 A B A, B would repeat (A, B): A (.34) */
	run(1, 4, 3, 1.0, 2, "2 3 2 2");
}

static void test_beam(void)
{
	/* 2 beams, max 3 new. Step 1: A -0.693, B -0.916 fill the beams.
	 * Step 2: B+eos -1.021 closes [0 B] (score -1.021/2), then A B -1.743,
	 * A A -1.772. Step 3: A B+eos -1.848 closes [0 A B] (-1.848/3), A A B
	 * -2.822 and A A A -2.851 stay open; the length limit ends the search. */
	run(2, 3, 0, 1.0, 0, "3 1");
	/* length_penalty 0: plain sums: [0 B] -1.021 still best */
	run(2, 3, 0, 0.0, 0, "3 1");
	/* length_penalty 3: closed [0 B] -1.021/2^3 = -0.128, [0 A B] -1.848/3^3 =
	 * -0.068 (lengths count the generated tokens and the eos); finalize adds
	 * the open beams normalised by their 3 generated tokens, A A B -2.822/27
	 * = -0.105 and A A A -0.106: [0 A B] stays best */
	run(2, 3, 0, 3.0, 0, "2 3 1");
	/* max_new 1: step 1 ends it; finalize: A -0.693/1 beats B -0.916 */
	run(2, 1, 0, 1.0, 0, "2");
	/* both hypotheses, best first: step 3's best, -1.848/3, cannot beat
	 * the worst closed one (-0.616): done, the open beams stay out */
	run_n(2, 2, 3, 0, 1.0, 0, "3 1 | 2 3 1");
	/* length_penalty 3: the open A A B (-0.105) replaces [0 B] (-0.128);
	 * A A A (-0.106) does not get in; A A B is 3 tokens, no room for eos */
	run_n(2, 2, 3, 0, 3.0, 0, "2 3 1 | 2 2 3");
}

static void test_processors(void)
{
	float s[5] = { 2.0f, -1.0f, 0.5f, 4.0f, -3.0f };
	int32_t ids[4] = { 0, 1, 1, 4 };
	unsigned char seen[5] = { 0 };
	int i, clean = 1;

	/* each distinct token once: 2/2, -1*2 (not -4), -3*2 */
	search_repetition_penalty(s, ids, 4, 2.0, seen);
	T_OK(s[0] == 1.0f && s[1] == -2.0f && s[2] == 0.5f && s[3] == 4.0f && s[4] == -6.0f,
	     "rep: %g %g %g %g %g", s[0], s[1], s[2], s[3], s[4]);
	for (i = 0; i < 5; i++)
		clean &= !seen[i];
	T_OK(clean, "seen scratch not cleared");

	/* no-repeat 3-grams: sequence 0 2 3 4 2 3 -> prefix (2 3) was followed by 4 */
	{
		int32_t q[6] = { 0, 2, 3, 4, 2, 3 };
		float t[5] = { 0, 0, 0, 0, 0 };
		search_no_repeat_ngram(t, 5, q, 6, 3);
		T_OK(isinf(t[4]) && t[4] < 0 && t[0] == 0 && t[2] == 0 && t[3] == 0,
		     "ngram3: %g %g %g %g %g", t[0], t[1], t[2], t[3], t[4]);
	}
	/* size 1 bans every token of the sequence, the start token included */
	{
		int32_t q[3] = { 0, 2, 2 };
		float t[5] = { 0, 0, 0, 0, 0 };
		search_no_repeat_ngram(t, 5, q, 3, 1);
		T_OK(isinf(t[0]) && isinf(t[2]) && t[1] == 0 && t[3] == 0 && t[4] == 0,
		     "ngram1: %g %g %g %g %g", t[0], t[1], t[2], t[3], t[4]);
	}
	/* HF: nothing is banned while cur_len + 1 < size */
	{
		int32_t q[2] = { 2, 2 };
		float t[5] = { 0, 0, 0, 0, 0 };
		search_no_repeat_ngram(t, 5, q, 2, 4);
		T_OK(t[2] == 0, "ngram4 on a short sequence banned %g", t[2]);
		search_no_repeat_ngram(t, 5, q, 2, 3);   /* checked, but no 3-gram yet */
		T_OK(t[2] == 0, "ngram3 on 2 2 banned %g", t[2]);
	}
	{
		int32_t q[3] = { 2, 2, 2 };
		float t[5] = { 0, 0, 0, 0, 0 };
		search_no_repeat_ngram(t, 5, q, 3, 3);   /* (2 2 2): after 2 2 comes 2 */
		T_OK(isinf(t[2]) && t[3] == 0, "ngram3 on 2 2 2: %g %g", t[2], t[3]);
	}
}

static void test_options(void)
{
	search_opts o;
	lc_err err;

	search_opts_default(&o);
	T_OK(search_opts_check(&o, &err) < 0, "vocab 0 accepted");
	o.vocab = 4;
	T_OK(search_opts_check(&o, &err) == 0, "%s", err.msg);
	o.max_new = 0;
	T_OK(search_opts_check(&o, &err) < 0, "max_new 0 accepted");
	o.max_new = 5;
	o.repetition_penalty = 0;
	T_OK(search_opts_check(&o, &err) < 0, "repetition penalty 0 accepted");
	o.repetition_penalty = 1;
	o.eos_id = 4;
	T_OK(search_opts_check(&o, &err) < 0, "eos outside the vocabulary accepted");
	o.eos_id = 1;
	o.num_beams = 0;
	T_OK(search_opts_check(&o, &err) < 0, "0 beams accepted");
}

static int fail_step(void *ctx, const int32_t *tok, float *logits, lc_err *err)
{
	(void)ctx; (void)tok; (void)logits;
	return lc_fail(err, "model broke");
}

static void test_model_error(void)
{
	search_model m = { NULL, fail_step, NULL };
	search_opts o;
	search_result res;
	lc_err err;

	search_opts_default(&o);
	o.vocab = 4;
	T_OK(search_run(&o, &m, &res, &err) < 0 && strstr(err.msg, "model broke"), "greedy error");
	o.num_beams = 3;
	T_OK(search_run(&o, &m, &res, &err) < 0 && strstr(err.msg, "model broke"), "beam error");
	T_OK(res.ids == NULL, "ids left after an error");
}

int main(void)
{
	T_RUN(test_greedy);
	T_RUN(test_beam);
	T_RUN(test_processors);
	T_RUN(test_options);
	T_RUN(test_model_error);
	return t_done();
}
