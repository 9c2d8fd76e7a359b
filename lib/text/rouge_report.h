/*
 * rouge_report: what lc-rouge reports. Per-document ROUGE scores are
 * collected, aggregated with rouge-score's BootstrapAggregator
 * (bootstrap.h; one generator carried across the types in order, as
 * rouge-score's is), and printed in one of three formats:
 *
 *   table  the aggregate, "mid [low, high]" x 100 per type and measure, or
 *          with no resampling the per-document scores; then the signature
 *   tsv    "# SIGNATURE", a line per document and type (NAME TYPE P R F),
 *          then "low", "mid" and "high" lines
 *   json   {signature, settings, documents [{name, scores}], aggregate}
 *   csv    what rouge-score's own command-line tool writes (rouge_score/io.py,
 *          0.1.2), byte for byte: with resampling the aggregate,
 *            score_type,low,mid,high
 *            rouge1-R,%f,%f,%f   then -P, then -F, for each type
 *          and with none the per-document scores,
 *            id,rouge1-P,rouge1-R,rouge1-F,rouge2-P,...
 *            0,%f,%f,%f,...      one line per document
 *          the types in byte order of their names (Python's sorted()), the
 *          values with C's "%f" (Python's "%f": 6 decimals, correctly
 *          rounded); no signature, as the format has no place for one.
 *          The id column holds rouge-score's 0-based document number, or
 *          with csv_ids the document's name, quoted as Python's csv module
 *          would when it holds a comma, a quote or a line break.
 *
 * The signature names every setting that changes the numbers:
 *   lc-rouge|types=..|stem=..|sentences=..|tok=rouge-score-0.1.2|refs=N|samples=N|seed=N|ci=X|version=V
 * Doubles are printed with 17 significant digits in tsv and json. Every
 * format is written by rouge_report_finish, once all documents are in: a
 * run that fails before writes nothing.
 */
#ifndef LC_ROUGE_REPORT_H
#define LC_ROUGE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "base/err.h"
#include "text/rouge.h"
#include "text/sentence.h"

enum rouge_fmt { ROUGE_FMT_TABLE, ROUGE_FMT_TSV, ROUGE_FMT_JSON, ROUGE_FMT_CSV };

typedef struct rouge_report_opts {
	rouge_type types[ROUGE_MAX_TYPES];
	size_t ntypes;
	enum rouge_fmt fmt;
	int stem;                    /* Porter stemming on */
	int split_sentences;         /* lc's sentence splitter for rougeLsum, not newlines */
	long long samples;           /* bootstrap resamples; 0: per-document scores only */
	unsigned long long seed;     /* numpy seed, 0 .. 2^32 - 1 */
	double ci;                   /* confidence level, (0, 1] */
	size_t nref;                 /* references per document */
	const char *version;         /* lc's, for the signature */
	int csv_ids;                 /* csv per document: names, not 0-based numbers */
} rouge_report_opts;

/* Sets o's types from a comma-separated list of names ("rouge1,rougeL";
 * rouge_type_parse's, each at most once; empty items are skipped): 0, or
 * -1 with "unknown type 'X' (...)", "type 'X' given twice" or "no type". */
int rouge_report_types_parse(rouge_report_opts *o, const char *list, lc_err *err);
/* "table", "tsv", "json" or "csv" -> its rouge_fmt; else -1. */
int rouge_report_fmt_parse(const char *s);

typedef struct rouge_report rouge_report;

/* Writes the tsv or per-document csv header line to out. */
rouge_report *rouge_report_new(const rouge_report_opts *o, FILE *out, lc_err *err);
void rouge_report_free(rouge_report *r);
const char *rouge_report_signature(const rouge_report *r);
size_t rouge_report_count(const rouge_report *r);   /* documents added */

/* One document's scores s[ntypes] (in the options' type order); -1 on
 * a write error, among others. */
int rouge_report_add(rouge_report *r, const char *name, const rouge_score *s, lc_err *err);

/* rouge_doc_set_text, or with ss non-NULL, with the sentences ss finds
 * instead of the lines (--split-sentences); *spans and *cap are scratch. */
int rouge_report_load(rouge_vocab *v, rouge_doc *d, const sentence_splitter *ss,
                      sentence_span **spans, size_t *cap, const char *text, size_t len,
                      lc_err *err);

/* The aggregate and the rest of the output; at least one document. */
int rouge_report_finish(rouge_report *r, lc_err *err);

#endif
