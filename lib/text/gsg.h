/*
 * gsg: gap-sentence selection, as PEGASUS defines it and LOCOST was
 * pretrained with.
 *
 * A document is split into M sentences (sentence.h); K = floor(ratio * M)
 * of them become the pseudo-summary. Scores are rouge-score's ROUGE-1 F
 * (rouge.h: same tokenizer, Porter stemming when asked), the selection
 * taken as the prediction and the rest of the document (its other
 * sentences joined with spaces) as the target:
 *
 *   Ind  each sentence scored alone against the rest; the K best, ties
 *        going to the earlier sentence;
 *   Seq  greedy: K times, add the sentence that most raises the F of
 *        the selection against the rest (earlier sentence on a tie);
 *   Orig unigram multisets (rouge-score's counting);
 *   Uniq unigram sets (each distinct word counted once).
 *
 * Each candidate is scored in O(its length) from running counts, so a
 * document costs O(M x tokens) for Seq and O(tokens) for Ind.
 */
#ifndef LC_GSG_H
#define LC_GSG_H

#include <stddef.h>

#include "base/err.h"
#include "text/sentence.h"

typedef struct gsg_opts {
	double ratio;   /* alpha, in [0, 1] */
	int seq;        /* 0: Ind, 1: Seq */
	int uniq;       /* 0: Orig, 1: Uniq */
	int stem;       /* Porter-stem tokens longer than 3 bytes */
} gsg_opts;

typedef struct gsg gsg;

gsg *gsg_new(const gsg_opts *o, lc_err *err);
void gsg_free(gsg *g);

/* Splits text[len] into sentences and selects. On success *spans[*n]
 * are the sentences in text order, (*selected)[i] is 1 for the chosen
 * ones and (*score)[i] the ROUGE-1 F that chose it (Ind: its own score;
 * Seq: the selection's F after it was added; 0 if not chosen). Arrays are
 * owned by g and valid until the next call. */
int gsg_select(gsg *g, const char *text, size_t len, const sentence_span **spans,
               const unsigned char **selected, const double **score, size_t *n, lc_err *err);

#endif
