/*
 * encode: lc-encode's stage over the documents of a stream. Each
 * document's "tokens" (checked against the model's vocabulary, cut to
 * the encoder's longest input when asked) are replaced by the encoder's
 * "hidden" states [encoder_out_len(L), d_model], f32 or bf16, marked
 * with the model's fingerprint, d_model and encoder (the document too
 * gets the first two); the document is then written, other records
 * passing through.
 *
 * encode_doc is the callback of stream_each: one document at a time, on
 * all the threads of the stage's encoder. encode_batch is the one of
 * stream_each_batch: the short documents a batch starts with are encoded
 * several at a time, each whole on one of the stage's one-thread
 * encoders (encoder_run_many), the rest one by one as encode_doc does;
 * documents are written in order, up to the first that fails.
 *
 * The stage writes only the stream (and opts.gemm's lines): warnings and
 * statistics go to opts.note and progress to opts.progress, as lines
 * without the program's name.
 */
#ifndef LC_PIPE_ENCODE_H
#define LC_PIPE_ENCODE_H

#include <stdint.h>
#include <stdio.h>

#include "arch/encoder.h"
#include "arch/model.h"
#include "base/err.h"
#include "stream/stream.h"

/* The batches for encode_batch: at most ENCODE_BATCH_DOCS documents by
 * default, and at most ENCODE_BATCH_BYTES of tokens read (64K int32
 * tokens, states of 200 MB at d_model 768). */
#define ENCODE_BATCH_DOCS 64
#define ENCODE_BATCH_BYTES ((uint64_t)256 << 10)

/* A line for the user, e.g. "doc: 1102 tokens cut to the 1024 the model
 * takes (--truncate)"; no newline. */
typedef void (*encode_say_fn)(void *ctx, const char *line);

typedef struct encode_opts {
	int bf16;                   /* "hidden" written as bf16, else f32 */
	int truncate;               /* a document longer than the encoder takes is cut
	                               (with a note), else refused */
	int stats;                  /* a note per document: "stats: NAME: L tokens:
	                               encode SECONDS s" */
	FILE *gemm;                 /* non-NULL: per document, time only the layers'
	                               GEMMs (encoder_gemm_only) and print
	                               "NAME\tL\tSECONDS" here; nothing is written */
	int batch;                  /* encode_batch's most documents (>= 1) */
	encode_say_fn note;         /* warnings and stats; may be NULL */
	encode_say_fn progress;     /* may be NULL */
	void *ctx;                  /* for note and progress */
} encode_opts;

typedef struct encode_stage encode_stage;

/* A stage over m's encoder enc, writing to w (NULL with opts->gemm),
 * with nshort one-thread encoders of m of its own for encode_batch
 * (0: encode_doc only). m, enc and w are borrowed and must outlive the
 * stage; opts is copied. An encoder that cannot be made fails with
 * "model: WHY". */
encode_stage *encode_stage_new(lc_model *m, lc_encoder *enc, int nshort, lc_writer *w,
                               const encode_opts *opts, lc_err *err);
void encode_stage_free(encode_stage *s);

/* One document (stage: the encode_stage), for stream_each. */
int encode_doc(lc_doc *d, void *stage, lc_err *err);

/* docs[n] (n <= opts.batch), for stream_each_batch; on failure *bad is
 * the document that failed, the ones before it having been written. */
int encode_batch(lc_doc *docs, int n, void *stage, int *bad, lc_err *err);

#endif
