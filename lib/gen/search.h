/*
 * search: turning next-token logits into a sequence, with the semantics
 * of Hugging Face transformers' generate() for encoder-decoder models
 * (greedy_search / beam_search with BeamSearchScorer, as in 4.36),
 * independent of any model: the model is two callbacks.
 *
 * The sequence ("input_ids" in HF) starts with the decoder start token;
 * the result is what follows it. Per step, on every row:
 *   greedy: scores = processors(logits); next = argmax (first on ties).
 *   beam:   scores = processors(log_softmax(logits)) + beam score; the
 *           2K best (row, token) pairs over all rows go through
 *           BeamSearchScorer.process (an eos among the first K closes a
 *           hypothesis scored sum_logprobs / len^length_penalty, len the
 *           generated tokens with the eos; the others fill the K beams),
 *           then is_done (early_stopping false, true or "never"); at the
 *           end finalize adds the open beams if not done (len: the
 *           generated tokens) and returns the best hypothesis, plus eos if
 *           it fits.
 * Processors, in HF's order: repetition penalty (each distinct token of
 * the sequence, start token included: score < 0 ? score*p : score/p),
 * no-repeat n-gram (tokens that would repeat an n-gram of the sequence get
 * -inf), min new tokens (eos gets -inf while fewer than min_new tokens
 * were generated), forced BOS (the first generated token) and forced EOS
 * (the max_new-th). Generation stops after max_new tokens or on eos.
 */
#ifndef LC_SEARCH_H
#define LC_SEARCH_H

#include <stdint.h>

#include "base/err.h"

enum search_early { SEARCH_EARLY_FALSE = 0, SEARCH_EARLY_TRUE = 1, SEARCH_EARLY_NEVER = 2 };

typedef struct search_opts {
	int num_beams;              /* 1: greedy; K >= 2: beam search */
	int max_new;                /* >= 1: generated tokens at most (eos included) */
	int min_new;                /* eos forbidden before this many tokens */
	double length_penalty;      /* beam only; HF default 1.0 */
	int no_repeat_ngram;        /* 0: off */
	double repetition_penalty;  /* 1.0: off; > 0 */
	int early_stopping;         /* enum search_early; beam only */
	int32_t start_id, eos_id;   /* decoder start and end-of-sequence ids */
	int32_t forced_bos;         /* the only first token (BART: <s>), or -1 */
	int32_t forced_eos;         /* the only max_new-th token, or -1 */
	int vocab;                  /* logits per row */
} search_opts;

/* HF defaults: greedy, max_new 20, min_new 0, length_penalty 1, no
 * n-gram blocking, repetition penalty 1, early_stopping false; the ids
 * (start 0, eos 1) and vocab must be set from the model. */
void search_opts_default(search_opts *o);
/* Checks the options (ranges, vocab > ids); -1 and err if unusable. */
int search_opts_check(const search_opts *o, lc_err *err);

/* The model. Rows = num_beams. step() feeds tokens [rows] at the next
 * position and writes logits [rows, vocab]; reorder() makes row r continue
 * from the history of row src[r] (beam search only). */
typedef struct search_model {
	void *ctx;
	int (*step)(void *ctx, const int32_t *tokens, float *logits, lc_err *err);
	int (*reorder)(void *ctx, const int32_t *src, lc_err *err);
} search_model;

typedef struct search_result {
	int32_t *ids;               /* [n] generated ids after the start token; eos last if produced */
	int n;
	double score;               /* beam: the hypothesis score (length-penalized); greedy: NAN */
} search_result;

/* Runs the search. res->ids is malloc'd (free it with search_result_free). */
int search_run(const search_opts *o, const search_model *m, search_result *res, lc_err *err);
void search_result_free(search_result *res);

#endif
