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
 */
#ifndef LC_PIPE_DECODE_H
#define LC_PIPE_DECODE_H

#include <stdint.h>
#include <stdio.h>

#include "arch/decoder.h"
#include "arch/model.h"
#include "base/err.h"
#include "gen/search.h"
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
	int batch;               /* documents summ_docs takes at most (>= 1) */
	search_opts search;      /* checked (search_opts_check); seed: the user's */
	/* Progress (may be NULL): a line on the decoding under way, or NULL
	 * when it is over and the line should go. */
	void (*progress)(void *ctx, const char *line);
	/* A warning that stops nothing (may be NULL), e.g. states made by
	 * another model: given once. */
	void (*warn)(void *ctx, const char *msg);
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

#endif
