/*
 * rouge: ROUGE-N (N = 1..9), ROUGE-L and ROUGE-Lsum exactly as Google's
 * rouge-score 0.1.2 computes them (RougeScorer.score / score_multi), to
 * the last bit of every double.
 *
 * Tokenizer: Python's str.lower(), every run of characters outside
 * [a-z0-9] becomes a separator, tokens longer than 3 bytes are stemmed
 * with NLTK's Porter stemmer (porter.h) when stemming is on. The only
 * non-ASCII characters that lower-case into ASCII, U+0130 (-> "i" and a
 * combining dot) and U+212A KELVIN SIGN (-> "k"), are handled; all other
 * non-ASCII bytes (and invalid UTF-8) separate tokens.
 *
 * Tokens are interned into dense ids (rouge_vocab), so a text is
 * tokenized once and then scored any number of times against others by
 * comparing integers: lc-gsg-split scores each sentence against the rest
 * of its document this way, with rouge_bag for cheap repeated ROUGE-1.
 *
 * Precision is over the candidate (prediction), recall over the reference
 * (target), F = ((2*P)*R)/(P+R), or 0 when P+R == 0.
 *
 * ROUGE-L uses a bit-parallel LCS (Hyyro's algorithm): O(n*m/64) time,
 * O(m) memory. ROUGE-Lsum backtracks each (reference line, candidate line)
 * LCS with rouge-score's tie rule over bit-parallel columns, so it needs
 * (candidate line length) * (reference line length) / 8 bytes at most.
 */
#ifndef LC_ROUGE_H
#define LC_ROUGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* --- types --- */
enum rouge_kind { ROUGE_N = 1, ROUGE_L = 2, ROUGE_LSUM = 3 };

typedef struct rouge_type {
	enum rouge_kind kind;
	int n;                       /* ROUGE_N: 1..9; otherwise 0 */
} rouge_type;

#define ROUGE_MAX_TYPES 11        /* rouge1..rouge9, rougeL, rougeLsum */

/* "rouge1".."rouge9", "rougeL", "rougeLsum" (exact spelling) -> 0; else -1. */
int rouge_type_parse(const char *s, rouge_type *t);
/* Writes the name into buf (at least 16 bytes); returns buf. */
const char *rouge_type_name(rouge_type t, char *buf);

typedef struct rouge_score {
	double p, r, f;              /* precision, recall, F1 */
} rouge_score;

/* rouge-score's scoring.fmeasure. */
double rouge_fmeasure(double p, double r);

/* --- interning --- */
typedef struct rouge_vocab rouge_vocab;

/* stem: 1 to Porter-stem tokens longer than 3 bytes (use_stemmer=True). */
rouge_vocab *rouge_vocab_new(int stem, lc_err *err);
void rouge_vocab_free(rouge_vocab *v);
/* Number of ids handed out so far (ids are < this). */
uint32_t rouge_vocab_size(const rouge_vocab *v);
/* The token spelled by id (NUL-terminated), or NULL. */
const char *rouge_vocab_word(const rouge_vocab *v, uint32_t id);

/* --- tokenized documents --- */
typedef struct rouge_doc {
	uint32_t *id;                /* [n] token ids, in text order */
	size_t n;
	size_t *sent;                /* [nsent + 1]: sentence k is id[sent[k] .. sent[k+1]) */
	size_t nsent;
	/* private */
	size_t cap, scap;
} rouge_doc;

void rouge_doc_init(rouge_doc *d);
void rouge_doc_clear(rouge_doc *d);    /* keeps the memory */
void rouge_doc_free(rouge_doc *d);
/* Tokenizes text[len] and appends the tokens as one more sentence. */
int rouge_doc_add_sentence(rouge_vocab *v, rouge_doc *d, const char *text, size_t len, lc_err *err);
/* Clears d and tokenizes a summary the way RougeScorer does: sentences
 * (for ROUGE-Lsum) are the '\n'-separated lines. */
int rouge_doc_set_text(rouge_vocab *v, rouge_doc *d, const char *text, size_t len, lc_err *err);
/* Appends the tokens of text[len] to ids (*n used, *cap allocated);
 * the plain tokenizer, rouge_score.tokenize.tokenize(text, stemmer). */
int rouge_tokenize(rouge_vocab *v, const char *text, size_t len,
                   uint32_t **ids, size_t *n, size_t *cap, lc_err *err);

/* --- scoring primitives (w: scratch memory reused between calls) --- */
typedef struct rouge_work rouge_work;
rouge_work *rouge_work_new(lc_err *err);
void rouge_work_free(rouge_work *w);

/* ROUGE-N of cand[nc] (prediction) against ref[nr] (target). */
int rouge_ngram(rouge_work *w, int n, const uint32_t *cand, size_t nc,
                const uint32_t *ref, size_t nr, rouge_score *out, lc_err *err);
/* LCS length of a[na] and b[nb]. */
int rouge_lcs_len(rouge_work *w, const uint32_t *a, size_t na,
                  const uint32_t *b, size_t nb, size_t *len, lc_err *err);
/* ROUGE-L (whole token sequences). */
int rouge_lcs(rouge_work *w, const uint32_t *cand, size_t nc,
              const uint32_t *ref, size_t nr, rouge_score *out, lc_err *err);
/* ROUGE-Lsum over the documents' sentences. */
int rouge_lsum(rouge_work *w, const rouge_doc *cand, const rouge_doc *ref,
               rouge_score *out, lc_err *err);
/* One type on one pair. */
int rouge_score_type(rouge_work *w, rouge_type t, const rouge_doc *cand,
                     const rouge_doc *ref, rouge_score *out, lc_err *err);
/* Several types against several references (RougeScorer.score_multi):
 * for each type on its own the reference with the largest F, the first
 * one on a tie. out: [nt]. nref >= 1. */
int rouge_score_multi(rouge_work *w, const rouge_type *t, size_t nt,
                      const rouge_doc *cand, const rouge_doc *refs, size_t nref,
                      rouge_score *out, lc_err *err);

/* --- bags: cheap repeated ROUGE-1 --- */
typedef struct rouge_bag {
	uint32_t *id;                /* [n] distinct ids, ascending */
	uint32_t *cnt;               /* [n] occurrences of id[k] */
	size_t n;
	uint64_t total;              /* sum of cnt */
	size_t cap;                  /* private */
} rouge_bag;

void rouge_bag_init(rouge_bag *b);
void rouge_bag_free(rouge_bag *b);
/* Sets b to the multiset of ids[n]. */
int rouge_bag_set(rouge_bag *b, const uint32_t *ids, size_t n, lc_err *err);
/* out = a - b (counts floored at 0); out may not alias a or b. */
int rouge_bag_sub(rouge_bag *out, const rouge_bag *a, const rouge_bag *b, lc_err *err);
/* ROUGE-1 of cand (prediction) against ref (target): O(|cand| + |ref|),
 * no allocation; identical to rouge_ngram(n = 1). */
rouge_score rouge1_bag(const rouge_bag *cand, const rouge_bag *ref);

#endif
