/*
 * search.c: greedy and beam search with HF generate() semantics (search.h).
 */
#include "gen/search.h"
#include "gen/search_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void search_opts_default(search_opts *o)
{
	memset(o, 0, sizeof *o);
	o->num_beams = 1;
	o->max_new = 20;
	o->min_new = 0;
	o->length_penalty = 1.0;
	o->no_repeat_ngram = 0;
	o->repetition_penalty = 1.0;
	o->early_stopping = SEARCH_EARLY_FALSE;
	o->start_id = 0;
	o->eos_id = 1;
	o->forced_bos = o->forced_eos = -1;
	o->vocab = 0;
}

int search_opts_check(const search_opts *o, lc_err *err)
{
	if (o->num_beams < 1 || o->num_beams > 1024)
		return lc_fail(err, "search: number of beams %d not in [1, 1024]", o->num_beams);
	if (o->max_new < 1 || o->max_new > (1 << 24))
		return lc_fail(err, "search: max new tokens %d not in [1, %d]", o->max_new, 1 << 24);
	if (o->min_new < 0)
		return lc_fail(err, "search: min new tokens %d < 0", o->min_new);
	if (o->no_repeat_ngram < 0)
		return lc_fail(err, "search: no-repeat n-gram size %d < 0", o->no_repeat_ngram);
	if (!(o->repetition_penalty > 0) || !isfinite(o->repetition_penalty))
		return lc_fail(err, "search: repetition penalty %g must be > 0", o->repetition_penalty);
	if (!isfinite(o->length_penalty))
		return lc_fail(err, "search: length penalty %g is not finite", o->length_penalty);
	if (o->early_stopping < SEARCH_EARLY_FALSE || o->early_stopping > SEARCH_EARLY_NEVER)
		return lc_fail(err, "search: bad early stopping mode %d", o->early_stopping);
	if (o->vocab < 2 || o->start_id < 0 || o->start_id >= o->vocab ||
	    o->eos_id < 0 || o->eos_id >= o->vocab)
		return lc_fail(err, "search: ids (start %ld, eos %ld) outside a vocabulary of %d",
		               (long)o->start_id, (long)o->eos_id, o->vocab);
	if (o->forced_bos >= o->vocab || o->forced_eos >= o->vocab)
		return lc_fail(err, "search: forced ids (bos %ld, eos %ld) outside a vocabulary of %d",
		               (long)o->forced_bos, (long)o->forced_eos, o->vocab);
	if (o->num_beams > 1 && (int64_t)o->vocab * o->num_beams < 2 * (int64_t)o->num_beams)
		return lc_fail(err, "search: vocabulary too small for %d beams", o->num_beams);
	return 0;
}

void search_result_free(search_result *res)
{
	free(res->ids);
	res->ids = NULL;
	res->n = 0;
}

void search_repetition_penalty(float *scores, const int32_t *ids, int n, double penalty,
                               unsigned char *seen)
{
	float p = (float)penalty;
	int i;

	/* HF gathers the scores of the sequence's tokens, then scatters the
	 * penalized values: each distinct token is penalized once. */
	for (i = 0; i < n; i++) {
		int32_t t = ids[i];
		if (seen[t])
			continue;
		seen[t] = 1;
		scores[t] = scores[t] < 0 ? scores[t] * p : scores[t] / p;
	}
	for (i = 0; i < n; i++)
		seen[ids[i]] = 0;
}

void search_no_repeat_ngram(float *scores, int vocab, const int32_t *ids, int n, int size)
{
	int i, j;

	/* HF: no bans while cur_len + 1 < size; otherwise ban every token that
	 * followed an earlier occurrence of the last size-1 tokens. */
	if (size <= 0 || n + 1 < size)
		return;
	for (i = 0; i + size <= n; i++) {
		for (j = 0; j < size - 1; j++)
			if (ids[i + j] != ids[n - size + 1 + j])
				break;
		if (j == size - 1) {
			int32_t t = ids[i + size - 1];
			if (t >= 0 && t < vocab)
				scores[t] = -INFINITY;
		}
	}
}

/* Only token t may come next (ForcedBOS/EOSTokenLogitsProcessor). */
static void force(float *scores, int vocab, int32_t t)
{
	for (int j = 0; j < vocab; j++)
		scores[j] = -INFINITY;
	scores[t] = 0;
}

/* n: the sequence so far, start token included (HF's cur_len). */
static void process_row(const search_opts *o, float *scores, const int32_t *ids, int n,
                        unsigned char *seen)
{
	if (o->repetition_penalty != 1.0)
		search_repetition_penalty(scores, ids, n, o->repetition_penalty, seen);
	if (o->no_repeat_ngram > 0)
		search_no_repeat_ngram(scores, o->vocab, ids, n, o->no_repeat_ngram);
	if (n - 1 < o->min_new)
		scores[o->eos_id] = -INFINITY;
	if (o->forced_bos >= 0 && n == 1)
		force(scores, o->vocab, o->forced_bos);
	if (o->forced_eos >= 0 && n == o->max_new)
		force(scores, o->vocab, o->forced_eos);
}

static int greedy(const search_opts *o, const search_model *m, search_result *res,
                  float *logits, unsigned char *seen, lc_err *err)
{
	int32_t *ids = malloc(((size_t)o->max_new + 1) * sizeof *ids);
	int n = 1, V = o->vocab;

	if (!ids)
		return lc_fail(err, "search: out of memory");
	ids[0] = o->start_id;
	while (n < o->max_new + 1) {
		int32_t best = 0;
		int j;

		if (m->step(m->ctx, &ids[n - 1], logits, err) < 0) {
			free(ids);
			return -1;
		}
		process_row(o, logits, ids, n, seen);
		for (j = 1; j < V; j++)
			if (logits[j] > logits[best])
				best = j;
		ids[n++] = best;
		if (best == o->eos_id)
			break;
	}
	res->n = n - 1;
	res->ids = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *res->ids);
	if (!res->ids) {
		free(ids);
		return lc_fail(err, "search: out of memory");
	}
	memcpy(res->ids, ids + 1, (size_t)(n - 1) * sizeof *ids);
	res->score = NAN;
	free(ids);
	return 0;
}

/* ---- beam search ---- */

typedef struct hyp {
	double score;
	int len;                    /* tokens, start included, eos not */
	int32_t *ids;               /* [max_len] */
} hyp;

typedef struct hyps {
	int K, n, max_len;
	double lp, worst;
	int early;
	hyp *h;                     /* [K + 1], insertion order */
} hyps;

/* A hypothesis of ids[len] (start token first, no eos); gen_len: the
 * length its score is normalised by. */
static void hyps_add(hyps *H, const int32_t *ids, int len, int gen_len, double sum_logprobs)
{
	double score = sum_logprobs / pow((double)gen_len, H->lp);
	int i, w1, w2;

	if (!(H->n < H->K || score > H->worst))
		return;
	/* append (slot n is free: capacity K + 1) */
	H->h[H->n].score = score;
	H->h[H->n].len = len;
	memcpy(H->h[H->n].ids, ids, (size_t)len * sizeof *ids);
	H->n++;
	if (H->n > H->K) {
		/* drop the worst (first of the lowest in Python's stable sort of
		 * (score, index) pairs), keep order, worst = second lowest */
		w1 = 0;
		for (i = 1; i < H->n; i++)
			if (H->h[i].score < H->h[w1].score)
				w1 = i;
		w2 = -1;
		for (i = 0; i < H->n; i++)
			if (i != w1 && (w2 < 0 || H->h[i].score < H->h[w2].score))
				w2 = i;
		H->worst = H->h[w2].score;
		{
			hyp gone = H->h[w1];
			memmove(&H->h[w1], &H->h[w1 + 1], (size_t)(H->n - w1 - 1) * sizeof *H->h);
			H->h[H->n - 1] = gone;      /* keep the buffer for reuse */
		}
		H->n--;
	} else if (score < H->worst) {
		H->worst = score;
	}
}

static int hyps_done(const hyps *H, double best_sum_logprobs, int cur_len)
{
	double high;

	if (H->n < H->K)
		return 0;
	if (H->early == SEARCH_EARLY_TRUE)
		return 1;
	if (H->early == SEARCH_EARLY_NEVER && H->lp > 0)
		high = best_sum_logprobs / pow((double)(H->max_len - 1), H->lp);
	else
		high = best_sum_logprobs / pow((double)cur_len, H->lp);
	return H->worst >= high;
}

typedef struct cand {
	float score;
	int32_t tok;
	int32_t row;
	int64_t flat;
} cand;

/* Keeps the top k candidates in c[0..k) sorted best first; ties go to the
 * lower flat index (torch.topk does not define an order for ties). */
static int cand_better(const cand *a, const cand *b)
{
	if (a->score != b->score)
		return a->score > b->score;
	return a->flat < b->flat;
}

static void cand_offer(cand *c, int *n, int k, float score, int32_t row, int32_t tok, int64_t flat)
{
	cand x = { score, tok, row, flat };
	int i;

	if (*n == k && !cand_better(&x, &c[k - 1]))
		return;
	i = *n < k ? (*n)++ : k - 1;
	while (i > 0 && cand_better(&x, &c[i - 1])) {
		c[i] = c[i - 1];
		i--;
	}
	c[i] = x;
}

static int beam(const search_opts *o, const search_model *m, search_result *res,
                float *logits, unsigned char *seen, lc_err *err)
{
	int K = o->num_beams, V = o->vocab, max_len = o->max_new + 1;
	int cur_len = 1, done = 0, r, i, ret = -1, nc;
	size_t row_bytes = (size_t)max_len * sizeof(int32_t);
	int32_t *ids = malloc((size_t)K * row_bytes), *nids = malloc((size_t)K * row_bytes);
	int32_t *last = malloc((size_t)K * sizeof *last), *src = malloc((size_t)K * sizeof *src);
	float *bscore = malloc((size_t)K * sizeof *bscore), *nscore = malloc((size_t)K * sizeof *nscore);
	cand *c = malloc((size_t)2 * K * sizeof *c);
	hyps H = { K, 0, max_len, o->length_penalty, 1e9, o->early_stopping, NULL };
	const hyp *best;

	H.h = calloc((size_t)K + 1, sizeof *H.h);
	if (!ids || !nids || !last || !src || !bscore || !nscore || !c || !H.h) {
		lc_fail(err, "search: out of memory");
		goto out;
	}
	for (i = 0; i <= K; i++)
		if (!(H.h[i].ids = malloc(row_bytes))) {
			lc_fail(err, "search: out of memory");
			goto out;
		}
	for (r = 0; r < K; r++) {
		ids[(size_t)r * max_len] = o->start_id;
		last[r] = o->start_id;
		bscore[r] = r == 0 ? 0.0f : -1e9f;
	}
	for (;;) {
		if (m->step(m->ctx, last, logits, err) < 0)
			goto out;
		nc = 0;
		for (r = 0; r < K; r++) {
			float *l = logits + (size_t)r * V, mx = -INFINITY;
			const int32_t *row = ids + (size_t)r * max_len;
			double sum = 0;
			float lse;
			int j;

			for (j = 0; j < V; j++)
				if (l[j] > mx)
					mx = l[j];
			for (j = 0; j < V; j++)
				sum += exp((double)l[j] - mx);
			lse = (float)(mx + log(sum));
			for (j = 0; j < V; j++)
				l[j] = l[j] - lse;
			process_row(o, l, row, cur_len, seen);
			for (j = 0; j < V; j++)
				cand_offer(c, &nc, 2 * K, l[j] + bscore[r], r, j, (int64_t)r * V + j);
		}
		/* BeamSearchScorer.process */
		{
			int bi = 0;
			for (i = 0; i < nc && bi < K; i++) {
				if (c[i].tok == o->eos_id) {
					if (i >= K)
						continue;
					/* generated tokens, the eos included */
					hyps_add(&H, ids + (size_t)c[i].row * max_len, cur_len, cur_len, c[i].score);
				} else {
					nscore[bi] = c[i].score;
					src[bi] = c[i].row;
					last[bi] = c[i].tok;
					bi++;
				}
			}
			if (bi < K) {
				lc_fail(err, "search: fewer than %d beams could continue", K);
				goto out;
			}
			done = done || hyps_done(&H, c[0].score, cur_len);
		}
		for (r = 0; r < K; r++) {
			memcpy(nids + (size_t)r * max_len, ids + (size_t)src[r] * max_len,
			       (size_t)cur_len * sizeof(int32_t));
			nids[(size_t)r * max_len + cur_len] = last[r];
			bscore[r] = nscore[r];
		}
		{
			int32_t *t = ids;
			ids = nids;
			nids = t;
		}
		if (m->reorder && m->reorder(m->ctx, src, err) < 0)
			goto out;
		cur_len++;
		if (done || cur_len >= max_len)
			break;
	}
	/* finalize */
	if (!done)   /* the open beams, normalised by their generated tokens */
		for (r = 0; r < K; r++)
			hyps_add(&H, ids + (size_t)r * max_len, cur_len, cur_len - 1, bscore[r]);
	best = &H.h[0];
	for (i = 1; i < H.n; i++)
		if (H.h[i].score >= best->score)    /* sorted(...).pop(): the last of equals */
			best = &H.h[i];
	{
		int n = best->len - 1, add_eos = best->len < (best->len + 1 < max_len ? best->len + 1 : max_len);
		res->ids = malloc((size_t)(n + 1) * sizeof *res->ids);
		if (!res->ids) {
			lc_fail(err, "search: out of memory");
			goto out;
		}
		memcpy(res->ids, best->ids + 1, (size_t)n * sizeof *res->ids);
		if (add_eos)
			res->ids[n++] = o->eos_id;
		res->n = n;
		res->score = best->score;
	}
	ret = 0;
out:
	if (H.h)
		for (i = 0; i <= K; i++)
			free(H.h[i].ids);
	free(H.h);
	free(ids); free(nids); free(last); free(src); free(bscore); free(nscore); free(c);
	return ret;
}

int search_run(const search_opts *o, const search_model *m, search_result *res, lc_err *err)
{
	float *logits;
	unsigned char *seen;
	int rc;

	res->ids = NULL;
	res->n = 0;
	res->score = NAN;
	if (search_opts_check(o, err) < 0)
		return -1;
	logits = malloc((size_t)o->num_beams * o->vocab * sizeof *logits);
	seen = calloc((size_t)o->vocab, 1);
	if (!logits || !seen) {
		free(logits);
		free(seen);
		return lc_fail(err, "search: out of memory");
	}
	rc = o->num_beams == 1 ? greedy(o, m, res, logits, seen, err)
	                       : beam(o, m, res, logits, seen, err);
	free(logits);
	free(seen);
	return rc;
}
