/*
 * trainlog: the tab-separated logs lc-train keeps in OUTDIR, appended to
 * on resume: loss.tsv (one line per step) and rouge.tsv (one line per
 * checkpoint with an evaluation set). Every write is checked.
 */
#ifndef LC_TRAINLOG_H
#define LC_TRAINLOG_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "train/train.h"
#include "train/traineval.h"

/* OUTDIR/loss.tsv, for appending after step `from` (the checkpoint's):
 * lines of later steps, logged by a run killed before its next
 * checkpoint, are dropped first (the resumed run logs those steps
 * again); started afresh (with its header) when from is 0 or when it
 * does not exist yet. */
FILE *train_log_open(const char *outdir, int64_t from, lc_err *err);
/* step, epoch, lr, loss, gradient norm, tokens/s, and the evaluation loss
 * (empty when NaN); flushed. */
int train_log_step(FILE *f, const train_stats *s, double tokens_per_s, double eval_loss,
                   lc_err *err);
/* Closes the log, checking the close. */
int train_log_close(FILE *f, const char *outdir, lc_err *err);

/* Appends step, pairs and the three ROUGE F to OUTDIR/rouge.tsv (started
 * with its header when fresh or absent). */
int train_log_rouge(const char *outdir, int fresh, int64_t step, const train_rouge *r,
                    lc_err *err);

#endif
