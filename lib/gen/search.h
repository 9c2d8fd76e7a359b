/*
 * search: turning next-token logits into sequences, with the semantics
 * of Hugging Face transformers' generate() for encoder-decoder models
 * (greedy_search, sample, beam_search and beam_sample with
 * BeamSearchScorer, as in 4.36), independent of any model: the model is
 * two callbacks.
 *
 * Each sequence ("input_ids" in HF) starts with the decoder start token;
 * a result is what follows it. Per step, on every row:
 *   greedy: scores = processors(logits); next = argmax (first on ties).
 *   sample: scores = warpers(processors(logits)); next = a draw from
 *           softmax(scores).
 *   beam:   scores = processors(log_softmax(logits)) + beam score; the
 *           2K best (row, token) pairs over all rows go through
 *           BeamSearchScorer.process (an eos among the first K closes a
 *           hypothesis scored sum_logprobs / len^length_penalty, len the
 *           generated tokens with the eos; the others fill the K beams),
 *           then is_done (early_stopping false, true or "never"); at the
 *           end finalize adds the open beams if not done (len: the
 *           generated tokens) and returns the best hypotheses, each plus
 *           eos if it fits.
 *   beam sampling (do_sample with K >= 2 beams; HF's beam_sample): all
 *           K rows start with beam score 0 (not only row 0); scores =
 *           warpers(processors(log_softmax(logits))) + beam score, the
 *           warpers keeping at least 2 tokens a row; 2K distinct (row,
 *           token) pairs are drawn without replacement from the softmax
 *           of all K x vocab scores, sorted by score (ties in draw
 *           order), and go through BeamSearchScorer as above. When fewer
 *           than 2K pairs have a non-zero probability (forced tokens),
 *           zero-probability pairs make up the rest, the lowest (row,
 *           token) first, as torch.multinomial also returns some.
 * Processors, in HF's order: repetition penalty (each distinct token of
 * the sequence, start token included: score < 0 ? score*p : score/p),
 * no-repeat n-gram (tokens that would repeat an n-gram of the sequence get
 * -inf), min new tokens (eos gets -inf while fewer than min_new tokens
 * were generated), forced BOS (the first generated token) and forced EOS
 * (the max_new-th). Warpers, in HF's order (TemperatureLogitsWarper,
 * TopKLogitsWarper, TopPLogitsWarper): scores / temperature; top-k keeps
 * the scores >= the k-th highest (so ties with it too; k at least the
 * tokens to keep, at most the vocabulary); top-p sorts the scores in
 * ascending order (ties by token id), accumulates their softmax
 * probabilities and removes the tokens whose cumulative probability is
 * <= 1 - top_p, except the last tokens to keep (so it keeps the smallest
 * top set whose probability exceeds top_p). Removed tokens get -inf.
 * Generation stops after max_new tokens or on eos (sampling: each row on
 * its own eos).
 *
 * Draws come from lc's generator (base/rng.h) seeded by opts.seed only:
 * sampling row r (one of num_return) has its own stream, seeded from
 * (seed, r); beam sampling has one. One search holds its whole state, so
 * searches may run concurrently; the same seed and logits give the same
 * sequences.
 */
#ifndef LC_SEARCH_H
#define LC_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum search_early { SEARCH_EARLY_FALSE = 0, SEARCH_EARLY_TRUE = 1, SEARCH_EARLY_NEVER = 2 };

/* eos ids a search takes beyond eos_id (a generation config's list) */
#define SEARCH_EOS_EXTRA 15

typedef struct search_opts {
	int num_beams;              /* 1: greedy; K >= 2: beam search */
	int max_new;                /* >= 1: generated tokens at most (eos included) */
	int min_new;                /* eos forbidden before this many tokens */
	double length_penalty;      /* beam only; HF default 1.0 */
	int no_repeat_ngram;        /* 0: off */
	double repetition_penalty;  /* 1.0: off; > 0 */
	int early_stopping;         /* enum search_early; beam only */
	int32_t start_id, eos_id;   /* decoder start and end-of-sequence ids */
	int32_t eos_extra[SEARCH_EOS_EXTRA];   /* more ids that end a sequence as eos does
	                                          (the first neos_extra; beam search still
	                                          closes hypotheses with eos_id) */
	int neos_extra;
	int32_t forced_bos;         /* the only first token (BART: <s>), or -1 */
	int32_t forced_eos;         /* the only max_new-th token, or -1 */
	int vocab;                  /* logits per row */
	int do_sample;              /* 1: sampling (beam sampling with num_beams >= 2) */
	double temperature;         /* sampling: scores / temperature; > 0; 1: off */
	int top_k;                  /* sampling: >= 0; 0: off */
	double top_p;               /* sampling: in [0, 1]; 1: off */
	int num_return;             /* sequences returned (num_return_sequences): beam: at most
	                               num_beams; sampling: independent samples; greedy: 1 */
	uint64_t seed;              /* sampling: this search's seed (search_seed) */
} search_opts;

/* HF defaults: greedy, max_new 20, min_new 0, length_penalty 1, no
 * n-gram blocking, repetition penalty 1, early_stopping false, no
 * sampling (when sampling: temperature 1, top_k 50, top_p 1), one
 * sequence; seed 0; the ids (start 0, eos 1) and vocab must be set from
 * the model. */
void search_opts_default(search_opts *o);
/* Checks the options (ranges, vocab > ids, the sampling settings when
 * sampling, num_return against the mode as HF's GenerationConfig does);
 * -1 and err if unusable. */
int search_opts_check(const search_opts *o, lc_err *err);
/* early_stopping's names, as enum search_early: "false", "true", "never";
 * search_early_parse gives -1 for any other. */
int search_early_parse(const char *name);
const char *search_early_name(enum search_early e);

/* The rows the model steps: num_beams, or num_return when sampling
 * without beams. */
int search_rows(const search_opts *o);

/* The seed of one search from a user's seed and a stable key of what is
 * searched (lc-decode: the document's name, key[len]): a hash, the same
 * on every machine. */
uint64_t search_seed(uint64_t seed, const char *key, size_t len);

/* The model. Rows = search_rows(o). step() feeds tokens [rows] at the next
 * position and writes logits [rows, vocab]; reorder() makes row r continue
 * from the history of row src[r] (beam search only). */
typedef struct search_model {
	void *ctx;
	int (*step)(void *ctx, const int32_t *tokens, float *logits, lc_err *err);
	int (*reorder)(void *ctx, const int32_t *src, lc_err *err);
} search_model;

typedef struct search_seq {
	int32_t *ids;               /* [n] generated ids after the start token; eos last if produced */
	int n;
	double score;               /* beam: the hypothesis score (length-penalized); else NAN */
} search_seq;

typedef struct search_result {
	/* the first sequence (seq[0]: the best one of a beam search) */
	int32_t *ids;
	int n;
	double score;
	/* all num_return sequences: beam search: the best hypotheses, best
	 * first (equal scores: the later one first, as HF pops them);
	 * sampling: row 0, 1, ... */
	int nseq;
	search_seq *seq;            /* [nseq] */
} search_result;

/* Runs the search. The result is malloc'd (free it with search_result_free). */
int search_run(const search_opts *o, const search_model *m, search_result *res, lc_err *err);
void search_result_free(search_result *res);

#endif
