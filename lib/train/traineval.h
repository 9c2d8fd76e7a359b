/*
 * traineval: ROUGE of greedy summaries during training.
 *
 * Loads a checkpoint directory with the inference code (model_open,
 * encoder_run, decoder_step), summarizes every source of a set of
 * pairs greedily (start token, argmax, stop after eos or max_new tokens),
 * detokenizes summaries and targets with a SentencePiece model and scores
 * them with ROUGE-1, ROUGE-2 and ROUGE-Lsum exactly as lc-rouge does (no
 * stemming), averaging the per-pair F over the set.
 */
#ifndef LC_TRAINEVAL_H
#define LC_TRAINEVAL_H

#include "base/err.h"
#include "train/train.h"

typedef struct train_rouge {
	double r1, r2, rlsum;   /* mean F x 100 */
	size_t n;               /* pairs scored */
} train_rouge;

int train_eval_rouge(const char *model_dir, const char *spiece, const train_data *d,
                     int max_new, int threads, train_rouge *out, lc_err *err);

#endif
