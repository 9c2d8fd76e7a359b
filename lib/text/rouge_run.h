/*
 * rouge_run: what lc-rouge does between its options and its output.
 * The inputs are read, each candidate is paired with its references,
 * scored (rouge.h) and handed to the report (rouge_report.h), one
 * document per call, so that the program drives the loop and shows
 * progress.
 *
 * The inputs are paths[n]: the candidates, then one input per reference
 * (several: multi-reference scoring). Two ways of pairing:
 *
 *   in order   (the default) each input is read with textin (stream/
 *              textin.h: a file split by mode, a directory, an archive,
 *              an lc stream, "-"); the candidates and every reference
 *              input are read in step, and must hold as many documents;
 *              when every input is a directory the documents' names
 *              (file names) must also be the same. But a directory of
 *              references with one document per file (split mode file)
 *              is read whole and paired by file name: each candidate
 *              takes the file named as the last component of its name
 *              (an archive member's or a file's path), once; a file no
 *              candidate took is an error unless subset;
 *   by id      (jsonl) JSON Lines, or lc streams by document name
 *              (rouge_jsonl.h): the references are read whole into maps
 *              by id, then the candidates are read in their order, each
 *              taking its references, which it must have; a reference no
 *              candidate took is an error unless subset. With one input,
 *              each line holds both texts, the fields cand and ref.
 *
 * A document that is not text (a NUL byte, invalid UTF-8) is scored as
 * text anyway, with a warning through warn once per input. Every error
 * names the input and document, or the file and line.
 */
#ifndef LC_ROUGE_RUN_H
#define LC_ROUGE_RUN_H

#include <stddef.h>
#include <stdio.h>

#include "base/err.h"
#include "stream/textin.h"
#include "text/rouge_report.h"

typedef struct rouge_run_opts {
	rouge_report_opts r;         /* nref and csv_ids are set by rouge_run_new */
	enum textin_split mode;      /* documents in a file, in order */
	int jsonl;                   /* pair by id */
	int subset;                  /* references with no candidate are left out (by id or name) */
	int skip_bad;                /* jsonl: bad lines are skipped, counted, said at the end */
	const char *idkey, *cand, *ref;   /* jsonl: the id field and the text fields */
	void (*warn)(void *ctx, const char *msg);   /* NULL: no warnings */
	void *ctx;
} rouge_run_opts;

/* The defaults: types rouge1,rouge2,rougeLsum, table, 1000 resamples,
 * seed 0, ci 0.95, split mode file, fields id and summary; no warn. */
void rouge_run_opts_init(rouge_run_opts *o);

typedef struct rouge_run rouge_run;

/* The rules the inputs' number and kind must follow (--subset only with
 * --jsonl and two inputs or more, or a directory of references; at least two inputs, or with jsonl one
 * that holds both texts in two fields; "-" at most once): -1 with a
 * message, which a program reports as a usage error. */
int rouge_run_check(const rouge_run_opts *o, char *const *paths, size_t n, lc_err *err);

/* A run writing to out (rouge_report_new: the tsv or csv header is
 * written now), its inputs opened and, by id, the references read.
 * paths[n] must live as long as the run. */
rouge_run *rouge_run_new(const rouge_run_opts *o, char *const *paths, size_t n, FILE *out,
                         lc_err *err);
void rouge_run_free(rouge_run *u);

/* Scores the next document: 1; 0 when the inputs are done (and paired
 * whole); -1 on an error. */
int rouge_run_next(rouge_run *u, lc_err *err);
size_t rouge_run_count(const rouge_run *u);   /* documents scored */

/* The aggregate and the rest of the output (rouge_report_finish); an
 * error when there were no documents. Lines skipped (skip_bad) are said
 * through warn. */
int rouge_run_finish(rouge_run *u, lc_err *err);

#endif
