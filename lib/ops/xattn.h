/*
 * xattn: the core of cross-attention over encoder states, without a
 * key/value cache (folded) or with one (xattn_fw_kv): single-head attention whose keys and values are the
 * encoder states themselves,
 *
 *     ctx[r] = sum_j softmax_j(qp[r] . E[j]) E[j],   qp [R, d], E [L, d].
 *
 * A decoder reaches it by projecting each head's query into model space,
 * qp = W_k,h^T q_h (so qp . E[j] = q_h . (W_k,h E[j])), and the context
 * back, v_h = W_v,h ctx (a key bias only shifts a row's scores; a value
 * bias adds itself: both stay outside). Memory does not grow with L: the
 * states are read in chunks of XATTN_CHUNK rows with a running (online)
 * softmax, split into parts by rows of E (by L alone, never by the
 * thread count, so the result has the same bits for every thread count),
 * and the parts' partial results are merged in part order. The price is R x L x d multiply-adds twice, against
 * d_kv-sized dot products with a cache (see lc-decode(1)).
 *
 * Per chunk, the scores and the accumulation run in the register-tile
 * kernels of compute/xkern.c (a general GEMM reaches about half of one
 * core's fp32 peak on R = 12 rows), the max, exp and rescale of the
 * online softmax in ops/vmath; XATTN_CHUNK rows (768 KiB at d = 768) are
 * read from memory by the scores and reused from cache by the
 * accumulation.
 *
 * The backward recomputes the probabilities chunk by chunk from the
 * forward's log-sum-exp (as flash attention does), so training memory
 * does not grow with L x R either.
 */
#ifndef LC_XATTN_H
#define LC_XATTN_H

#include <stdint.h>

#include "base/err.h"

#define XATTN_CHUNK 256
/* Over bf16 keys and values of their own (a cache), the scores go this
 * many keys at a time, each group after a prefetch of its values: the
 * scores kernel's own tiles, so the same bits as in one call. */
#define XATTN_PF_KEYS 4

typedef struct xattn_work xattn_work;

/* Scratch for up to R query rows of width d, split over nth threads. */
xattn_work *xattn_work_new(int64_t R, int d, int nth, lc_err *err);
void xattn_work_free(xattn_work *w);
/* *w replaced by scratch for nth threads (left as it was on failure). */
int xattn_work_renew(xattn_work **w, int64_t R, int d, int nth, lc_err *err);

/* ctx [R, d]; lse [R] (may be NULL) receives log sum_j exp(qp[r] . E[j]).
 * L may be 0: the context is then zero (and lse -inf). */
void xattn_fw(xattn_work *w, const float *qp, int64_t R, const float *E, int64_t L, int d,
              float *ctx, float *lse);

/* The same over states kept on the GPU alone (Edev): 0, or -1 (nothing
 * done) where the GPU failed (said once) or has no memory for the scores,
 * or without states there. */
int xattn_fw_dev(xattn_work *w, const float *qp, int64_t R, const float *Edev, int64_t L, int d,
                 float *ctx, float *lse);

/* xattn_fw where the states may also be on the GPU: Edev their copy there
 * (compute/dev.h; NULL: none). There, both products are cuBLAS's over all
 * L rows at once with a softmax kernel between (fp32; scores [R, L] in
 * the GPU's memory); a CUDA error (said once) or no memory for the
 * scores makes it xattn_fw on E. */
void xattn_fw_any(xattn_work *w, const float *qp, int64_t R, const float *E, const float *Edev,
                  int64_t L, int d, float *ctx, float *lse);

/* The same over bf16 states (--compute bf16): qp and each chunk's softmax
 * weights rounded to bf16 for the bf16 kernels of compute/xkern.c (the
 * context then within 2^-9 of the largest |E| of fp32's on the same
 * values); the softmax, its sums and the context in fp32. */
void xattn_fw_bf16(xattn_work *w, const float *qp, int64_t R, const uint16_t *E, int64_t L,
                   int d, float *ctx, float *lse);

/* The same over bf16 states in fp32 arithmetic (fp32 compute, bf16
 * states held as such: half the bytes of their float32 copy): where
 * cmp_xk_widens(), the same bits as xattn_fw on that copy. */
void xattn_fw_w16(xattn_work *w, const float *qp, int64_t R, const uint16_t *E, int64_t L,
                  int d, float *ctx, float *lse);

/* The same with keys and values of their own, as a cache holds them
 * (ops/xcache.h), for nh heads at once: head h's context
 *
 *     ctx[r, h] = sum_j softmax_j(q[r, h] . K_h[j]) V_h[j],
 *
 * q[r, h] the dk floats at q + r ldq + h dk, K_h[j] at K + h hs + j ldk
 * (V_h[j] likewise from V), ctx[r, h] at ctx + r ldc + h dk; lse [R nh]
 * (may be NULL) by r nh + h. The same parts and folds as above, per head.
 * w must have been made for at least R nh rows and a width of at least
 * dk (the folded call's R and d of the same decoder do). */
void xattn_fw_kv(xattn_work *w, const float *q, int64_t R, int64_t ldq, int nh, int dk,
                 const float *K, const float *V, int64_t L, int64_t ldk, int64_t hs, float *ctx,
                 int64_t ldc, float *lse);
/* The same over bf16 keys and values, as xattn_fw_bf16. */
void xattn_fw_kv_bf16(xattn_work *w, const float *q, int64_t R, int64_t ldq, int nh, int dk,
                      const uint16_t *K, const uint16_t *V, int64_t L, int64_t ldk, int64_t hs,
                      float *ctx, int64_t ldc, float *lse);

/* Given dctx [R, d]: writes dqp [R, d], adds to dE [L, d]. ctx and lse are
 * the forward's. One thread. */
int xattn_bw(const float *qp, int64_t R, const float *E, int64_t L, int d, const float *ctx,
             const float *lse, const float *dctx, float *dqp, float *dE, lc_err *err);

#endif
