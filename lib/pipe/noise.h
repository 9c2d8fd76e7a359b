/*
 * noise: lc-noise's stage, token documents to (source, target) pairs by
 * span corruption (text/span.h), as the BART-LS authors' pretraining data.
 *
 * Each document's "tokens" (i32, rank 1, as lc-tokenize writes them) keeps
 * its first `head` and last `tail` tokens and has the body between noised
 * with numpy's generator seeded as fairseq's numpy_seed(seed, epoch,
 * index), index being the document's 0-based position among those the
 * stage was given (or, with concat, among the joined inputs): the
 * authors' LongDenoisingDataset over the same documents in the same
 * order gives the same pairs, bit for bit.
 *
 * concat > 0: random concatenation of short documents into inputs of up
 * to concat tokens, before noising. Every document is held until
 * noise_finish; their order is shuffled with lc's generator
 * (base/rng.h) from seed and epoch, then packed greedily in that order: a
 * document joins the current input while the input stays within concat
 * tokens, else starts the next. A joined input is the first document's
 * head, then each document's body and tail in turn (so the tails, </s>,
 * separate the documents inside, as fairseq's token blocks); a document
 * longer than concat by itself is an input alone, unchanged.
 *
 * Output, a document per pair, in order: the input's name (joined
 * inputs: "concat#K", K from 0), its metadata plus "noise" (the
 * settings: "density=0.0625 mean-span=3 seed=3 epoch=1"), "noise.index",
 * "noise.tokens" (noised), "noise.spans", "noise.span-length", and with
 * concat "concat" (the input positions joined, space-separated) and
 * "concat.names" (their names, one a line); tensors "source" and
 * "target" (i32), with the metadata of the input's "tokens" (its
 * "tokenizer" fingerprint). lc-train reads these pairs.
 *
 * A body too short for the settings (text/span.h, SPAN_SHORT) is skipped
 * and counted, and noise_finish warns with the count and the first one's
 * name; any other failure is an error.
 */
#ifndef LC_PIPE_NOISE_H
#define LC_PIPE_NOISE_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "stream/stream.h"
#include "text/span.h"
#include "text/tokenizer.h"

typedef struct noise_opts {
	span_opts s;                /* density, mean span, sentinels, truncation */
	const double *span_set;     /* [nset] dynamic span lengths (span_pick); NULL: s.mean_span */
	int nset;
	int64_t seed, epoch;        /* >= 0 */
	int64_t head, tail;         /* tokens kept at each end of a document */
	int64_t concat;             /* 0: none; else the longest joined input */
	/* non-NULL: the fingerprint of the tokenizer the sentinels came from;
	 * "tokens" of another tokenizer get a warning (once) */
	const char *fingerprint;
	/* > 0: the tokenizer's ids, [0, vocab) (-m); a document's id outside
	 * them, or a negative one whatever vocab, is an error */
	int64_t vocab;
	/* closing warnings (without the program's name), and the one about
	 * fingerprints; NULL: none */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
} noise_opts;

typedef struct noise_stats {
	int64_t docs;               /* pairs written */
	int64_t skipped;            /* too short */
	int64_t joined;             /* with concat: input documents held */
	int64_t body, noise, spans; /* tokens in the written pairs' bodies, noised, spans */
	int64_t truncated;          /* targets cut */
} noise_stats;

typedef struct noise noise;

/* The defaults a tokenizer gives (what lc-tokenize -m writes with it):
 * head and tail (BART <s> ... </s>: 1, 1; SentencePiece </s>: 0, 1), and
 * the sentinels: T5's <extra_id_0> at the vocabulary's end counting down
 * (max_spans: the <extra_id_N> there are), else the authors' task's,
 * counting up after <mask> (which it appends when the vocabulary has none). */
int noise_tokenizer_defaults(lc_tokenizer *tok, noise_opts *o, lc_err *err);

/* A stage writing an lc stream to out (START now). *o is copied; its
 * pointers must outlive the stage. */
noise *noise_new(const noise_opts *o, FILE *out, lc_err *err);
/* One input document (the shape of stream_each's callback, ctx = the
 * stage). Errors need no document prefix: stream_each adds it. */
int noise_doc(lc_doc *d, void *stage, lc_err *err);
/* After the last document: with concat, joins and writes every input;
 * then ends the stream (EOS, flushed) and gives the warnings. */
int noise_finish(noise *s, lc_err *err);
const noise_stats *noise_get_stats(const noise *s);
void noise_free(noise *s);

#endif
