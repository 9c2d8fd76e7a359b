/*
 * batch: the searches of several documents at once.
 *
 * One document at a time, the decoder's projections and output layer
 * are matrix-vector products: each step reads every weight of the
 * decoder for a handful of rows, and a short document's summary costs
 * little more than those reads. Here each document's search (gen/search.h,
 * unchanged) runs in its own thread; their step() calls meet, and one
 * decoder state over all the documents (arch/decoder.h) steps all their
 * rows in one pass, so that the weights are read once per step for all
 * of them. A document whose search has ended leaves the state before the
 * next step; the others go on. Each document's result is the one its
 * search alone would give, up to float summation order (the products'
 * row counts differ).
 */
#ifndef LC_BATCH_H
#define LC_BATCH_H

#include <stdint.h>

#include "arch/decoder.h"
#include "base/err.h"
#include "gen/search.h"

typedef struct gen_job {
	const float *enc;           /* in: encoder states [L, d_model] float32 */
	const uint16_t *enc16;      /* in: or bf16, for a decoder that reads them */
	int64_t L;
	search_opts o;              /* in: the document's search */
	search_result res;          /* out, when rc == 0 (free with search_result_free) */
	int rc;                     /* out: 0; -1 with err; 1: not run (no thread could be
	                               started for it: decode it alone) */
	lc_err err;
} gen_job;

/* Runs the n jobs together over nthreads threads for the products.
 * Returns -1 (err) only when the batch cannot start (out of memory, or
 * unusable encoder states: err then says "document I of the batch");
 * otherwise 0, each job with its own rc and err. progress (may be NULL)
 * is called after each step with the step and the documents still
 * running. */
int gen_batch_run(const lc_decoder *dec, gen_job *jobs, int n, int nthreads,
                  void (*progress)(void *ctx, int step, int running), void *ctx, lc_err *err);

#endif
