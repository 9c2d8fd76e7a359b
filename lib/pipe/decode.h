/*
 * decode: lc-decode's stage, documents of hidden states in, summaries out.
 *
 * A summarizer decodes each document's "hidden" tensor (lc-encode's
 * output: [L, d_model] of the model, f32 or bf16) with the model's decoder
 * and the search settings (gen/search.h), and writes the document's
 * summaries (N with num_return > 1, best first) to its output as:
 *
 *   text    the detokenized summary on one line (newlines and CRs made
 *           spaces), or with nul as is and ended by a NUL; one per summary
 *   ids     the generated ids, one line per summary
 *   stream  an lc stream: the document less "hidden", its "tokens" and
 *           "text" replaced by the first summary's, the others as
 *           "tokens.2", "text.2", ...; its other records passed on in
 *           order; no "text" without a tokenizer
 *   jsonl   {"id": NAME, "summary": TEXT[, "summaries": [TEXT...]]} a line,
 *           ill-formed UTF-8 replaced by U+FFFD
 *
 * summ_doc decodes one document at a time (stream_each's fn), summ_docs
 * several together (stream_each_batch's fn, through gen/batch.h); either
 * way a document's search draws from the seed and the document's name,
 * and the summaries come out in input order. In a batch, the documents
 * before a bad one are decoded and written first; the bad one is the
 * error (*bad). Nothing is printed but the output: progress and warnings
 * go to the caller's functions.
 *
 * And lc-decode's command line, less its parsing: the names of its
 * formats, the checks across its options, the settings in force (lc's,
 * the model's files, the command line: gen/settings.h), the tokenizer
 * each format needs, and the run over the input files.
 */
#ifndef LC_PIPE_DECODE_H
#define LC_PIPE_DECODE_H

#include <stdint.h>
#include <stdio.h>

#include "arch/decoder.h"
#include "arch/model.h"
#include "base/err.h"
#include "gen/search.h"
#include "gen/settings.h"
#include "stream/stream.h"
#include "text/tokenizer.h"

enum summ_format { SUMM_TEXT, SUMM_IDS, SUMM_STREAM, SUMM_JSONL };

/* Documents decoded together by default, and the most payload (encoder
 * states) a batch holds: a book goes alone (stream_each_batch's limits). */
#define SUMM_BATCH_DOCS 16
#define SUMM_BATCH_BYTES ((uint64_t)512 << 20)

typedef struct summ_opts {
	enum summ_format format;
	int nul;                 /* text: summaries as they are, each ended by a NUL */
	int threads;             /* for the decoder's products */
	const char *threads_from; /* where that count came from (--info), or NULL */
	int batch;               /* documents summ_docs takes at most (>= 1) */
	search_opts search;      /* checked (search_opts_check); seed: the user's */
	/* Progress (may be NULL): a line on the decoding under way, or NULL
	 * when it is over and the line should go. */
	void (*progress)(void *ctx, const char *line);
	/* A warning that stops nothing (may be NULL), e.g. states made by
	 * another model: given once. */
	void (*warn)(void *ctx, const char *msg);
	/* Documents decoded one at a time: a line through warn with the time
	 * to the first token (the states' own setup included) and the time a
	 * step after it. */
	int stats;
	void *ctx;
} summ_opts;

typedef struct summarizer summarizer;

/* A summarizer over model and dec (which must outlive it), writing to
 * out. tok (NULL: none) is needed by text and jsonl. */
summarizer *summ_new(const lc_model *model, const lc_decoder *dec, const lc_tokenizer *tok,
                     const summ_opts *o, FILE *out, lc_err *err);
/* stream_each's fn (s: the summarizer): decodes and writes d alone. */
int summ_doc(lc_doc *d, void *s, lc_err *err);
/* stream_each_batch's fn: decodes docs[0..n) together, n <= batch. */
int summ_docs(lc_doc *docs, int n, void *s, int *bad, lc_err *err);
/* The max_docs to give stream_each_batch: batch, but no more documents
 * than keep a step within 1024 rows (products of up to 1024 rows are the
 * same bits for every thread count, compute/compute.h). */
int summ_batch_docs(const summarizer *s);
/* Ends the output (a stream gets its end-of-stream record and is flushed). */
int summ_finish(summarizer *s, lc_err *err);
/* Frees s; a stream not finished stays truncated, on purpose. */
void summ_free(summarizer *s);

/* --- lc-decode's command line --- */

/* -f's names, as enum summ_format: "text", "ids", "stream", "jsonl";
 * summ_format_parse gives -1 for any other. */
int summ_format_parse(const char *name);
const char *summ_format_name(enum summ_format f);
/* The checks across the options, once parsed: o (format, nul) and the
 * search values cl given on the command line (given[], gen/settings.h),
 * --max-length's N, --info, and the count of input files. In this order:
 * -z goes with -f text only; --max-length N makes cl->max_new N - 1
 * unless --max-new is given too, which wins (as in transformers; a
 * warning through o->warn says so); --min-new may not exceed the maximum
 * given; --info takes no input files. -1 and err (a usage error) on the
 * first that fails. */
int summ_check_options(const summ_opts *o, search_opts *cl, const int given[GEN_NKEYS],
                       int max_length, int info, int nfiles, lc_err *err);
/* The settings in force for m: lc's, the model's files', then cl's where
 * given; *g gets them and where each comes from, o->search the options.
 * -1 and err: the model's files are bad (a data error); -2 and err: the
 * settings in force do not go together (search_opts_check: a usage
 * error). */
int summ_settings(gen_settings *g, summ_opts *o, const lc_model *m, const search_opts *cl,
                  const int given[GEN_NKEYS], lc_err *err);
/* --info's lines: "model\tDIR\tARCH", then the settings'
 * (gen_settings_print), the compute's (cmp_info), the threads' and the
 * cross-attention cache's, each with where it came from. */
void summ_print_settings(const summ_opts *o, const lc_model *m, const lc_decoder *d,
                         const gen_settings *g, FILE *f);
/* The tokenizer for o->format (text, jsonl or stream): topt if given, else
 * model directory mdir's, else the default (tok_open_model). 0 and *tok;
 * for -f stream *tok may be NULL where there is none (a warning through
 * o->warn: the stream gets "tokens" but no "text"). -1 and err: the one
 * found cannot be read; -2 and err: there is none and text and jsonl need
 * one. */
int summ_tokenizer(const summ_opts *o, const char *topt, const char *mdir, lc_tokenizer **tok,
                   lc_err *err);
/* Summarizes the documents of files[n] (standard input when n is 0 or a
 * file is "-") with s: with batch > 1 several at a time (summ_docs), else
 * one by one (summ_doc); then summ_finish. */
int summ_files(summarizer *s, int n, char *const *files, lc_err *err);

#endif
