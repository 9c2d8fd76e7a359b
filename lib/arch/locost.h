/*
 * locost: the LOCOST encoder (gated bidirectional S4D blocks + gated
 * feed-forward, T5 RMSNorm), exact to the reference path of the oracle.
 *
 *   h = shared[ids]
 *   per layer: u = RMSNorm(h) * prenorm;  k = u Wk^T + bk;  q = u Wq^T + bq
 *              y = q * (bidir_conv(k; K0, K1) + D k);  h += y Wo^T + bo
 *              n = RMSNorm(h) * ln;  h += (act(n Wi0^T) * (n Wi1^T)) Wff^T
 *   out = RMSNorm(h) * final
 *
 * Memory: the caller's output [L, d] doubles as the residual stream, plus
 * one [d, L] channel-major buffer for k / the SSM output, plus per-thread
 * scratch of O(rows x d_ff + FFT size): 2 x L x d x 4 bytes + O(L) in all.
 * Projections and the feed-forward run in blocks of LOCOST_ROWS rows; the
 * convolution runs per channel. Threads split rows and channels; the
 * result does not depend on the thread count. OpenBLAS is set to one
 * thread (we parallelise around it).
 */
#ifndef LC_LOCOST_H
#define LC_LOCOST_H

#include <stdint.h>

#include "base/err.h"
#include "arch/model.h"

#define LOCOST_ROWS 128

typedef struct locost locost;

/* Binds the encoder weights of m (which must outlive the encoder). */
locost *locost_new(lc_model *m, int threads, lc_err *err);
void locost_free(locost *e);

/* Called after each layer (done of total); may be NULL. */
typedef void (*locost_progress_fn)(void *ctx, int done, int total);

/* Encodes ids[L] (each < vocab_size) into out[L, d_model] (row-major).
 * nlayers < 0: all layers and the final norm; otherwise only the first
 * nlayers blocks and no final norm (the residual stream after block
 * nlayers - 1, for tests). */
int locost_encode(locost *e, const int32_t *ids, int64_t L, float *out, int nlayers,
                  locost_progress_fn progress, void *ctx, lc_err *err);

/* Layer-0 intermediates for x = embeddings [L, d]: each output [L, d]
 * row-major (NULL to skip): prenorm u, q, k, conv (without D), convD,
 * gated, ssm_out; K0, K1 [d, L] (channel-major, NULL to skip). */
typedef struct locost_trace {
	float *prenorm, *q, *k, *conv, *convD, *gated, *ssm_out; /* [L, d] */
	float *K0, *K1;                                           /* [d, L] */
} locost_trace;
int locost_trace_layer(locost *e, int layer, const float *x, int64_t L, locost_trace *t,
                       lc_err *err);

/* Runs only the layers' projection and feed-forward GEMMs for a length-L
 * input, with the same blocking and threads as locost_encode, on scratch
 * data; *seconds gets the wall time. For benchmarks. */
int locost_gemm_only(locost *e, int64_t L, double *seconds, lc_err *err);

#endif
