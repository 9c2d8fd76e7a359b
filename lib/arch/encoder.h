/*
 * encoder: a model's encoder, whatever its architecture: token ids in,
 * one row of d_model states per output position out (encoder_out_len
 * rows for L tokens), read by the decoder of the same model.
 *
 * Threads split the work inside a document (rows, channels); the result
 * does not depend on their number.
 */
#ifndef LC_ENCODER_H
#define LC_ENCODER_H

#include <stdint.h>

#include "arch/model.h"
#include "base/err.h"

typedef struct lc_encoder lc_encoder;

/* Binds the encoder of m (which must outlive it). */
lc_encoder *encoder_new(lc_model *m, int threads, lc_err *err);
void encoder_free(lc_encoder *e);

/* Rows of the states of an L-token input. */
int64_t encoder_out_len(const lc_encoder *e, int64_t L);

/* The longest input the encoder takes (BART: max_position_embeddings), or
 * 0 when any length goes. */
int64_t encoder_max_len(const lc_encoder *e);

/* Cuts ids[L] to the encoder's longest input as transformers' truncation
 * does: the first tokens kept, and when the input ended with the model's
 * eos, the eos still last. Returns the new length (L when it fits). */
int64_t encoder_truncate(const lc_encoder *e, int32_t *ids, int64_t L);

/* Called after each layer (done of total); may be NULL. */
typedef void (*encoder_progress_fn)(void *ctx, int done, int total);

/* Encodes ids[L] (each < vocab_size; checked) into out[encoder_out_len(L), d_model]. */
int encoder_run(lc_encoder *e, const int32_t *ids, int64_t L, float *out,
                encoder_progress_fn progress, void *ctx, lc_err *err);

/* After encoder_run: the rows of out the decoder reads, moved to its
 * front in order; returns their number (encoder_out_len(L) but for a
 * model whose decoder masks some, as the top-down model's masks the rows
 * of pad tokens: the stream carries no mask, so they are left out). */
int64_t encoder_keep(const lc_encoder *e, const int32_t *ids, int64_t L, float *out);

/* One document of encoder_run_many. */
typedef struct encoder_job {
	const int32_t *ids;         /* in: [L] */
	int64_t L;
	float *out;                 /* in: [encoder_out_len(L), d_model] */
	int rc;                     /* out: 0, or -1 with err */
	lc_err err;
} encoder_job;

/* Several documents at once, each whole on one of the nenc encoders (each
 * made with one thread), as many at a time as there are encoders: for
 * short documents, whose layers are too small to share among threads
 * well. Each result is encoder_run's. */
void encoder_run_many(lc_encoder *const *encs, int nenc, encoder_job *jobs, int n);

/* Runs only the products of an L-token input, on scratch data, with the
 * same blocking and threads; *seconds gets the wall time. Benchmarks. */
int encoder_gemm_only(lc_encoder *e, int64_t L, double *seconds, lc_err *err);

#endif
