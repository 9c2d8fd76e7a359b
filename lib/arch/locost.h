/*
 * locost: the LOCOST architecture (internal to the arch layer and its
 * tests: programs use arch/model.h, arch/encoder.h, arch/decoder.h).
 *
 * The encoder: gated bidirectional S4D blocks and a gated feed-forward,
 * T5 RMSNorm, exact to the reference path of the oracle:
 *
 *   h = shared[ids]
 *   per layer: u = RMSNorm(h) * prenorm;  k = u Wk^T + bk;  q = u Wq^T + bq
 *              y = q * (bidir_conv(k; K0, K1) + D k);  h += y Wo^T + bo
 *              n = RMSNorm(h) * ln;  h += (act(n Wi0^T) * (n Wi1^T)) Wff^T
 *   out = RMSNorm(h) * final
 *
 * The decoder is T5's (arch/t5dec.h).
 *
 * Memory: the output [L, d] doubles as the residual stream, plus one
 * [d, L] channel-major buffer for k / the SSM output, plus per-thread
 * scratch of O(rows x d_ff + FFT size): 2 x L x d x 4 bytes + O(L) in all.
 * Projections and the feed-forward run in blocks of LOCOST_ROWS rows; the
 * convolution runs per channel, with kernels truncated to their support
 * (ops/ssm.h). Threads split rows and channels; the result does not
 * depend on the thread count. Training runs the same blocks on one
 * thread per example, with full-length kernels computed once per step,
 * and keeps what the backward needs.
 */
#ifndef LC_LOCOST_H
#define LC_LOCOST_H

#include <stdint.h>

#include "arch/arch.h"
#include "arch/t5dec.h"
#include "ops/ssm.h"

#define LOCOST_ROWS 256

extern const lc_arch arch_locost;

typedef struct locost_layer {
	float *prenorm;                 /* [d] */
	float *D;                       /* [d] */
	float *wq, *bq;                 /* [d, d], [d]; NULL without gating */
	float *wk, *bk;                 /* [d, d], [d] */
	float *log_dt;                  /* [d] */
	float *inv_A_real, *A_imag;     /* [d, N2] */
	float *B;                       /* [d, N2, 2] */
	float *C;                       /* [nch, d, N2, 2] */
	float *wo, *bo;                 /* [d, d], [d] */
	float *ln;                      /* [d] */
	float *wi0, *wi1;               /* [d_ff, d]; wi1 NULL when not gated (wi0 is "wi") */
	float *wff;                     /* [d, d_ff] */
} locost_layer;

typedef struct locost_weights {
	t5dec_weights dec;              /* shared.weight (both sides' embeddings) and the decoder */
	locost_layer *enc;              /* [num_layers] */
	float *enc_final;               /* [d] */
} locost_weights;

/* For tests: the residual stream after the first nlayers blocks (no final
 * norm) of the encoder opened on m. */
int locost_encode_layers(lc_model *m, const int32_t *ids, int64_t L, float *out, int nlayers,
                         lc_err *err);

/* For tests: layer-0 intermediates for x = embeddings [L, d], with
 * full-length kernels as the reference computes them. Each output [L, d]
 * row-major (NULL to skip): prenorm u, q, k, conv (without D), convD,
 * gated, ssm_out; K0, K1 [d, L] (channel-major, NULL to skip). */
typedef struct locost_trace {
	float *prenorm, *q, *k, *conv, *convD, *gated, *ssm_out; /* [L, d] */
	float *K0, *K1;                                           /* [d, L] */
} locost_trace;
int locost_trace_layer(lc_model *m, int layer, const float *x, int64_t L, locost_trace *t,
                       lc_err *err);

/* Layer L's S4D parameters as ops/ssm.h takes them. */
ssm_params locost_layer_ssm(const lc_config *c, const locost_layer *L);

/* Inference on the GPU (arch/locost_gpu.c): the first nl blocks of the
 * encoder over out [L, d] (the embedded input; the states on return),
 * then the final norm when final. T [nl][d] are the kernels' supports.
 * 0 when done; 1 when the GPU has no memory for it (said once on
 * standard error; out untouched: the caller encodes on the CPU); -1 on a
 * CUDA error. Only where cmp_dev_on(). */
int locost_gpu_encode(const lc_config *c, const locost_weights *W, int64_t L, float *out,
                      int nl, int final, const int64_t *T, int threads,
                      void (*progress)(void *, int, int), void *ctx, lc_err *err);

#endif
