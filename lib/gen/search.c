/*
 * search.c: greedy and beam search with HF generate() semantics (search.h).
 */
#include "gen/search.h"
#include "gen/search_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

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
	o->do_sample = 0;
	o->temperature = 1.0;
	o->top_k = 50;
	o->top_p = 1.0;
	o->num_return = 1;
	o->seed = 0;
}

/* t ends a sequence: eos_id or one of the extra eos ids */
static int is_eos(const search_opts *o, int32_t t)
{
	if (t == o->eos_id)
		return 1;
	for (int i = 0; i < o->neos_extra; i++)
		if (t == o->eos_extra[i])
			return 1;
	return 0;
}

int search_rows(const search_opts *o)
{
	return o->num_beams == 1 && o->do_sample ? o->num_return : o->num_beams;
}

uint64_t search_seed(uint64_t seed, const char *key, size_t len)
{
	/* FNV-1a 64 of the key, written out here so that it never changes */
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
	return lc_mix64(seed ^ lc_mix64(h));
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
	    o->eos_id < -1 || o->eos_id >= o->vocab)
		return lc_fail(err, "search: ids (start %ld, eos %ld) outside a vocabulary of %d",
		               (long)o->start_id, (long)o->eos_id, o->vocab);
	if (o->neos_extra < 0 || o->neos_extra > SEARCH_EOS_EXTRA || (o->neos_extra && o->eos_id < 0))
		return lc_fail(err, "search: %d more eos ids (at most %d, and only with an eos)",
		               o->neos_extra, SEARCH_EOS_EXTRA);
	for (int i = 0; i < o->neos_extra; i++)
		if (o->eos_extra[i] < 0 || o->eos_extra[i] >= o->vocab)
			return lc_fail(err, "search: eos id %ld outside a vocabulary of %d",
			               (long)o->eos_extra[i], o->vocab);
	if (o->forced_bos >= o->vocab || o->forced_eos >= o->vocab)
		return lc_fail(err, "search: forced ids (bos %ld, eos %ld) outside a vocabulary of %d",
		               (long)o->forced_bos, (long)o->forced_eos, o->vocab);
	if (o->num_beams > 1 && (int64_t)o->vocab * o->num_beams < 2 * (int64_t)o->num_beams)
		return lc_fail(err, "search: vocabulary too small for %d beams", o->num_beams);
	if (o->num_return < 1 || o->num_return > 1024)
		return lc_fail(err, "search: number of returned sequences %d not in [1, 1024]",
		               o->num_return);
	if (o->num_return > 1 && o->num_beams == 1 && !o->do_sample)
		return lc_fail(err, "search: greedy search returns one sequence, not %d "
		               "(num_return_sequences needs beam search or sampling)", o->num_return);
	if (o->num_return > o->num_beams && o->num_beams > 1)
		return lc_fail(err, "search: %d returned sequences but only %d beams "
		               "(num_return_sequences must not exceed num_beams)", o->num_return,
		               o->num_beams);
	if (o->do_sample) {
		if (!(o->temperature > 0) || !isfinite(o->temperature))
			return lc_fail(err, "search: temperature %g must be > 0 when sampling "
			               "(for greedy search, do not sample)", o->temperature);
		if (o->top_k < 0)
			return lc_fail(err, "search: top-k %d must be >= 0 (0: off)", o->top_k);
		if (!(o->top_p >= 0 && o->top_p <= 1))
			return lc_fail(err, "search: top-p %g not in [0, 1]", o->top_p);
	}
	return 0;
}

static const char *const early_names[] = { "false", "true", "never" };

int search_early_parse(const char *name)
{
	for (int e = SEARCH_EARLY_FALSE; e <= SEARCH_EARLY_NEVER; e++)
		if (!strcmp(name, early_names[e]))
			return e;
	return -1;
}

const char *search_early_name(enum search_early e) { return early_names[e]; }

void search_result_free(search_result *res)
{
	for (int i = 0; res->seq && i < res->nseq; i++)
		free(res->seq[i].ids);
	free(res->seq);
	res->seq = NULL;
	res->nseq = 0;
	res->ids = NULL;
	res->n = 0;
}

/* res with nseq empty sequences; -1 and err when out of memory. */
static int result_new(search_result *res, int nseq, lc_err *err)
{
	if (!(res->seq = calloc((size_t)nseq, sizeof *res->seq)))
		return lc_fail(err, "search: out of memory");
	res->nseq = nseq;
	for (int i = 0; i < nseq; i++)
		res->seq[i].score = NAN;
	return 0;
}

/* Sequence i of res: ids[n] (copied). */
static int result_set(search_result *res, int i, const int32_t *ids, int n, double score,
                      lc_err *err)
{
	search_seq *q = &res->seq[i];

	if (!(q->ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *q->ids)))
		return lc_fail(err, "search: out of memory");
	if (n)
		memcpy(q->ids, ids, (size_t)n * sizeof *ids);
	q->n = n;
	q->score = score;
	if (i == 0) {
		res->ids = q->ids;
		res->n = n;
		res->score = score;
	}
	return 0;
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

/* ---- warpers (sampling) ---- */

typedef struct scored {
	float s;
	int32_t tok;
} scored;

size_t search_ws_bytes(int vocab)
{
	return (size_t)(vocab > 0 ? vocab : 1) * sizeof(scored);
}

void search_temperature(float *scores, int vocab, double t)
{
	float tf = (float)t;

	/* torch divides a float32 tensor by the Python float as float32 */
	for (int j = 0; j < vocab; j++)
		scores[j] = scores[j] / tf;
}

/* The k-th highest of a[n] (1 <= k <= n), reordering a: quickselect. */
static float kth_highest(float *a, int n, int k)
{
	int lo = 0, hi = n - 1, want = k - 1;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, i = lo, j = hi;
		float x = a[lo], y = a[mid], z = a[hi], piv;

		/* median of three */
		piv = x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
		while (i <= j) {
			while (a[i] > piv)
				i++;
			while (a[j] < piv)
				j--;
			if (i <= j) {
				float t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				j--;
			}
		}
		/* a[lo..j] >= piv >= a[i..hi]; between them: == piv */
		if (want <= j)
			hi = j;
		else if (want >= i)
			lo = i;
		else
			return piv;
	}
	return a[want];
}

void search_top_k(float *scores, int vocab, int k, int keep, void *ws)
{
	float *a = ws, thr;

	if (k < keep)
		k = keep;
	if (k >= vocab || k <= 0)
		return;
	/* NaN would break the selection; it cannot be drawn anyway */
	for (int j = 0; j < vocab; j++)
		a[j] = isnan(scores[j]) ? -INFINITY : scores[j];
	thr = kth_highest(a, vocab, k);
	/* HF: scores < topk(scores, k)[-1] are removed; ties with it stay */
	for (int j = 0; j < vocab; j++)
		if (scores[j] < thr)
			scores[j] = -INFINITY;
}

static int scored_cmp(const void *pa, const void *pb)
{
	const scored *a = pa, *b = pb;

	if (a->s != b->s)
		return a->s < b->s ? -1 : 1;
	return (a->tok > b->tok) - (a->tok < b->tok);
}

void search_top_p(float *scores, int vocab, double p, int keep, void *ws)
{
	scored *v = ws;
	int n = 0;
	double tot = 0, cum = 0;
	float thr = (float)(1.0 - p), mx;

	/* -inf tokens sort first with probability 0, cumulative 0 <= 1 - p:
	 * removed already; only the finite ones need sorting */
	for (int j = 0; j < vocab; j++)
		if (scores[j] > -INFINITY && scores[j] < INFINITY) {
			v[n].s = scores[j];
			v[n].tok = j;
			n++;
		}
	if (n == 0)
		return;
	/* torch.sort, ascending; stable on the CPU: ties by token id */
	qsort(v, (size_t)n, sizeof *v, scored_cmp);
	mx = v[n - 1].s;
	for (int i = 0; i < n; i++)
		tot += exp((double)v[i].s - mx);
	/* float32 probabilities, accumulated in double as torch's cumsum does
	 * on the CPU, compared as float32; the last `keep` always stay */
	for (int i = 0; i < n - keep; i++) {
		float pr = (float)(exp((double)v[i].s - mx) / tot);
		cum += pr;
		if (!((float)cum <= thr))
			break;
		scores[v[i].tok] = -INFINITY;
	}
}

void search_warp(const search_opts *o, float *scores, int keep, void *ws)
{
	if (o->temperature != 1.0)
		search_temperature(scores, o->vocab, o->temperature);
	if (o->top_k != 0)
		search_top_k(scores, o->vocab, o->top_k, keep, ws);
	if (o->top_p < 1.0)
		search_top_p(scores, o->vocab, o->top_p, keep, ws);
}

int32_t search_draw(const float *scores, int vocab, double u)
{
	float mx = -INFINITY;
	double tot = 0, x, acc = 0;
	int32_t last = -1;

	for (int j = 0; j < vocab; j++) {
		if (isnan(scores[j]))
			return -1;
		if (scores[j] > mx)
			mx = scores[j];
	}
	if (!(mx > -INFINITY && mx < INFINITY))
		return -1;
	for (int j = 0; j < vocab; j++)
		if (scores[j] > -INFINITY)
			tot += exp((double)scores[j] - mx);
	x = u * tot;
	for (int j = 0; j < vocab; j++) {
		double w;

		if (!(scores[j] > -INFINITY) || (w = exp((double)scores[j] - mx)) == 0)
			continue;
		acc += w;
		last = j;
		if (x < acc)
			return j;
	}
	return last;
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
	if (n - 1 < o->min_new && o->eos_id >= 0) {
		scores[o->eos_id] = -INFINITY;
		for (int i = 0; i < o->neos_extra; i++)
			scores[o->eos_extra[i]] = -INFINITY;
	}
	if (o->forced_bos >= 0 && n == 1)
		force(scores, o->vocab, o->forced_bos);
	if (o->forced_eos >= 0 && n == o->max_new)
		force(scores, o->vocab, o->forced_eos);
}

/* The scratch of one search. */
typedef struct work {
	float *logits;              /* [rows, vocab] */
	unsigned char *seen;        /* [vocab], zero between uses */
	void *ws;                   /* search_ws_bytes(vocab) */
	double *w;                  /* beam sampling: [rows, vocab] weights */
} work;

/* Rows [0, R) of logits [R, V] all numbers: a NaN (states or weights
 * that overflow) would otherwise lose every comparison of the argmax and
 * the beams' ranking, and the search end in a made-up token. */
static int numbers(const float *logits, int64_t R, int V, int step, lc_err *err)
{
	for (int64_t i = 0; i < R * V; i++)
		if (isnan(logits[i]) || logits[i] == INFINITY)   /* +inf: NaN in a log-softmax */
			return lc_fail(err, "search: a score at step %d is %s (the encoder states or "
			               "the model's weights overflow)", step,
			               isnan(logits[i]) ? "NaN" : "infinite");
	return 0;
}

static int greedy(const search_opts *o, const search_model *m, search_result *res, work *wk,
                  lc_err *err)
{
	int32_t *ids = malloc(((size_t)o->max_new + 1) * sizeof *ids);
	int n = 1, V = o->vocab, rc;
	float *logits = wk->logits;

	if (!ids)
		return lc_fail(err, "search: out of memory");
	ids[0] = o->start_id;
	while (n < o->max_new + 1) {
		int32_t best = 0;
		int j;

		if (m->step(m->ctx, &ids[n - 1], logits, err) < 0 ||
		    numbers(logits, 1, V, n - 1, err) < 0) {
			free(ids);
			return -1;
		}
		process_row(o, logits, ids, n, wk->seen);
		for (j = 1; j < V; j++)
			if (logits[j] > logits[best])
				best = j;
		ids[n++] = best;
		if (is_eos(o, best))
			break;
	}
	rc = result_new(res, 1, err) < 0 ? -1 : result_set(res, 0, ids + 1, n - 1, NAN, err);
	free(ids);
	return rc;
}

/* Multinomial sampling (HF's sample()): num_return rows drawn
 * independently, each from its own stream, each ending on its eos; a
 * finished row is fed eos (its logits are not used) until all are done. */
static int sample(const search_opts *o, const search_model *m, search_result *res, work *wk,
                  lc_err *err)
{
	int R = o->num_return, V = o->vocab, max_len = o->max_new + 1, cur = 1, open = R;
	int32_t *ids = malloc((size_t)R * (size_t)max_len * sizeof *ids);
	int32_t *last = malloc((size_t)R * sizeof *last);
	int *len = malloc((size_t)R * sizeof *len);
	uint64_t *rng = malloc((size_t)R * sizeof *rng);
	int rc = -1, r;

	if (!ids || !last || !len || !rng) {
		lc_fail(err, "search: out of memory");
		goto out;
	}
	for (r = 0; r < R; r++) {
		ids[(size_t)r * max_len] = o->start_id;
		last[r] = o->start_id;
		len[r] = 0;             /* open */
		rng[r] = lc_mix64(o->seed ^ lc_mix64((uint64_t)r));
	}
	while (cur < max_len && open > 0) {
		if (m->step(m->ctx, last, wk->logits, err) < 0)
			goto out;
		for (r = 0; r < R; r++) {
			float *l = wk->logits + (size_t)r * V;
			int32_t *row = ids + (size_t)r * max_len, t;

			if (len[r]) {
				last[r] = o->eos_id;
				continue;
			}
			if (numbers(l, 1, V, cur - 1, err) < 0)
				goto out;
			process_row(o, l, row, cur, wk->seen);
			search_warp(o, l, 1, wk->ws);
			if ((t = search_draw(l, V, lc_rng_unif(&rng[r]))) < 0) {
				lc_fail(err, "search: sampling: no token can be drawn at step %d "
				        "(every score is -inf)", cur - 1);
				goto out;
			}
			row[cur] = last[r] = t;
			if (is_eos(o, t)) {
				len[r] = cur + 1;
				open--;
			}
		}
		cur++;
	}
	if (result_new(res, R, err) < 0)
		goto out;
	for (r = 0; r < R; r++)
		if (result_set(res, r, ids + (size_t)r * max_len + 1, (len[r] ? len[r] : cur) - 1, NAN,
		               err) < 0)
			goto out;
	rc = 0;
out:
	free(ids);
	free(last);
	free(len);
	free(rng);
	return rc;
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

/* Beam sampling's candidates: want distinct entries of s [n] (rows of V
 * scores) drawn without replacement from softmax(s), in c sorted by score
 * (best first; equal scores in draw order). When fewer than want have a
 * non-zero probability, the rest are zero-probability entries, the
 * lowest indices first (torch.multinomial's exponential race then
 * returns some of them too). w [n] is scratch. */
static int draw_cands(const float *s, int64_t n, int V, double *w, cand *c, int want,
                      uint64_t *rng, lc_err *err)
{
	float mx = -INFINITY;
	int64_t nz = 0, i, fill = 0;

	for (i = 0; i < n; i++) {
		if (isnan(s[i]))
			return lc_fail(err, "search: beam sampling: a score is NaN");
		if (s[i] > mx)
			mx = s[i];
	}
	if (!(mx > -INFINITY && mx < INFINITY))
		return lc_fail(err, "search: beam sampling: no token can be drawn (no finite score)");
	for (i = 0; i < n; i++)
		nz += (w[i] = s[i] > -INFINITY ? exp((double)s[i] - mx) : 0) > 0;
	for (int k = 0; k < want; k++) {
		int64_t pick = -1;
		int q;

		if (k < nz) {
			double tot = 0, x, acc = 0;

			for (i = 0; i < n; i++)
				if (w[i] > 0)
					tot += w[i];
			x = lc_rng_unif(rng) * tot;
			for (i = 0; i < n; i++)
				if (w[i] > 0) {
					acc += w[i];
					pick = i;
					if (x < acc)
						break;
				}
			w[pick] = -1;           /* drawn */
		} else {
			while (w[fill] != 0)
				fill++;
			pick = fill++;
		}
		/* insertion, after the equal scores drawn before */
		for (q = k; q > 0 && c[q - 1].score < s[pick]; q--)
			c[q] = c[q - 1];
		c[q].score = s[pick];
		c[q].tok = (int32_t)(pick % V);
		c[q].row = (int32_t)(pick / V);
		c[q].flat = pick;
	}
	return 0;
}

static int beam(const search_opts *o, const search_model *m, search_result *res, work *wk,
                lc_err *err)
{
	float *logits = wk->logits;
	unsigned char *seen = wk->seen;
	uint64_t rng = lc_mix64(o->seed ^ lc_mix64(0));
	int32_t *out = NULL;
	char *taken = NULL;
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
		/* beam_search: only row 0 starts; beam_sample: every row, at 0 */
		bscore[r] = r == 0 || o->do_sample ? 0.0f : -1e9f;
	}
	for (;;) {
		if (m->step(m->ctx, last, logits, err) < 0 || numbers(logits, K, V, cur_len - 1, err) < 0)
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
			if (o->do_sample) {
				/* beam_sample: warped (keeping 2), plus the beam score */
				search_warp(o, l, 2, wk->ws);
				for (j = 0; j < V; j++)
					l[j] += bscore[r];
			} else {
				for (j = 0; j < V; j++)
					cand_offer(c, &nc, 2 * K, l[j] + bscore[r], r, j, (int64_t)r * V + j);
			}
		}
		if (o->do_sample) {
			if (draw_cands(logits, (int64_t)K * V, V, wk->w, c, 2 * K, &rng, err) < 0)
				goto out;
			nc = 2 * K;
		}
		/* BeamSearchScorer.process */
		{
			int bi = 0;
			for (i = 0; i < nc && bi < K; i++) {
				if (is_eos(o, c[i].tok)) {
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
	/* the num_return best: sorted(beams by score).pop(), num_return times */
	out = malloc(row_bytes);
	taken = calloc((size_t)K + 1, 1);
	if (!out || !taken) {
		lc_fail(err, "search: out of memory");
		goto out;
	}
	if (result_new(res, o->num_return, err) < 0)
		goto out;
	for (int q = 0; q < o->num_return; q++) {
		int b = -1, n;

		for (i = 0; i < H.n; i++)   /* the last of equals first */
			if (!taken[i] && (b < 0 || H.h[i].score >= H.h[b].score))
				b = i;
		if (b < 0) {
			lc_fail(err, "search: only %d hypotheses for %d sequences", H.n, o->num_return);
			goto out;
		}
		taken[b] = 1;
		best = &H.h[b];
		n = best->len - 1;
		memcpy(out, best->ids + 1, (size_t)n * sizeof *out);
		if (best->len < max_len && o->eos_id >= 0)    /* eos if it fits */
			out[n++] = o->eos_id;
		if (result_set(res, q, out, n, best->score, err) < 0)
			goto out;
	}
	ret = 0;
out:
	if (H.h)
		for (i = 0; i <= K; i++)
			free(H.h[i].ids);
	free(H.h);
	free(ids); free(nids); free(last); free(src); free(bscore); free(nscore); free(c);
	free(out);
	free(taken);
	return ret;
}

int search_run(const search_opts *o, const search_model *m, search_result *res, lc_err *err)
{
	work wk = { 0 };
	int rc = -1;
	size_t cells;

	memset(res, 0, sizeof *res);
	res->score = NAN;
	if (search_opts_check(o, err) < 0)
		return -1;
	cells = (size_t)search_rows(o) * (size_t)o->vocab;
	wk.logits = malloc(cells * sizeof *wk.logits);
	wk.seen = calloc((size_t)o->vocab, 1);
	wk.ws = o->do_sample ? malloc(search_ws_bytes(o->vocab)) : NULL;
	wk.w = o->do_sample && o->num_beams > 1 ? malloc(cells * sizeof *wk.w) : NULL;
	if (!wk.logits || !wk.seen || (o->do_sample && !wk.ws) ||
	    (o->do_sample && o->num_beams > 1 && !wk.w)) {
		lc_fail(err, "search: out of memory");
		goto out;
	}
	if (o->num_beams > 1)
		rc = beam(o, m, res, &wk, err);
	else if (o->do_sample)
		rc = sample(o, m, res, &wk, err);
	else
		rc = greedy(o, m, res, &wk, err);
out:
	if (rc < 0) {
		search_result_free(res);
		res->score = NAN;
	}
	free(wk.logits);
	free(wk.seen);
	free(wk.ws);
	free(wk.w);
	return rc;
}
