/*
 * dev.h: work kept on the GPU, for model layers that run whole layers
 * there (arch/locost_gpu.c, arch/bart_gpu.c): buffers in the GPU's memory, products of
 * such buffers, and the element-wise, normalisation and FFT steps an
 * encoder needs, each a CUDA kernel of lc's own (compute/cudak.cu) or a
 * cuBLAS / cuFFT call (compute/cudadev.c). Built without CUDA (or with
 * the device cpu, or no GPU), cmp_dev_on() is 0 and nothing else here
 * may be called.
 *
 * Every pointer here is the GPU's. Matrices are row-major float32, as in
 * compute.h. The work is queued in order on one stream and the calls
 * return before it is done; the first CUDA error is kept, every later
 * call does nothing, and cmp_dev_check waits for the queue and reports
 * it. A buffer the GPU has no memory for is NULL (not an error: the
 * caller runs on the CPU instead).
 */
#ifndef LC_COMPUTE_DEV_H
#define LC_COMPUTE_DEV_H

#include <stdint.h>

#include "base/err.h"

#ifdef __cplusplus
extern "C" {              /* compute/cudak.cu reads the tables below */
#endif

/* 1 when the device is cuda and a GPU answers (cmp_set_device). */
int cmp_dev_on(void);

/* 1 when work of macs multiply-adds done by one call (an attention's
 * scores and outputs) is worth the GPU's fixed costs, an allocation,
 * copies and a wait, about a millisecond: from CMP_DEV_MIN_MACS on, or
 * every one with $LC_CUDA_ALL=1. The unit tests' grads of tiny BART-LS
 * and top-down models, thousands of such calls, took 37 and 39 s on an
 * H200 with every attention there, 0.26 and 0.50 s on a 2-core CPU. */
#define CMP_DEV_MIN_MACS ((int64_t)1 << 26)
int cmp_dev_worth(int64_t macs);

/* The queue and its error are the process's: a caller that queues work
 * and then checks it (a layer, an attention) holds this lock throughout,
 * so threads take turns. */
void cmp_dev_lock(void);
void cmp_dev_unlock(void);

/* n floats on the GPU (contents undefined), or NULL. */
float *cmp_dev_alloc(int64_t n);
void cmp_dev_free(void *p);

/* Copies between the CPU's memory and the GPU's (n floats); waits for the
 * queue. */
void cmp_dev_put(float *dst, const float *src, int64_t n);
void cmp_dev_get(float *dst, const float *src, int64_t n);
/* rows x cols floats from src (row stride lds, the GPU's) to dst (ldd):
 * the columns between stay as they are. */
void cmp_dev_get_rows(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows,
                      int64_t cols);
/* The same for raw bytes (tables of doubles and counts). */
void cmp_dev_put_bytes(void *dst, const void *src, int64_t bytes);

/* The GPU's copy of weights declared with cmp_constant (made on first
 * use, kept until cmp_constant_drop), or NULL when p is not constant or
 * the GPU has no memory for it. */
const float *cmp_dev_weight(const float *p, int64_t n);

/* Says "CUDA: what: why" on the program's standard error (the callback
 * of cmp_set_device), the first time only. */
void cmp_dev_say(const char *what, const char *why);

/* 0 when everything queued so far ran; else -1 and the first error. */
int cmp_dev_check(lc_err *err);

/* C = alpha op(A) op(B) + beta C on the GPU (cuBLAS, fp32, no TF32). */
void cmp_dev_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* The same for a product with one of the model's weights: under
 * --compute bf16 both operands rounded to bf16 and fp32 accumulation,
 * as compute.h's bf16 does on the CPU. */
void cmp_dev_gemm_w(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w (T5's RMSNorm; y may be x):
 * x, y [R, d]. */
void cmp_dev_rmsnorm(const float *x, int64_t R, int d, const float *w, float eps, float *y);

/* x = LayerNorm(x + t) * w + b row by row, in place (t NULL: of x
 * alone): x, t [R, d]; mean and variance in double (ops/norm.c's
 * layernorm_fw after residual_add; BART's post-LN sublayers). */
void cmp_dev_add_layernorm(float *x, const float *t, int64_t R, int d, const float *w,
                           const float *b, float eps);

/* x[r, c] += b[c] (by column) or b[r] (by row), x [R, C] with row stride
 * ld. */
void cmp_dev_bias_cols(float *x, int64_t R, int64_t C, int64_t ld, const float *b);
void cmp_dev_bias_rows(float *x, int64_t R, int64_t C, int64_t ld, const float *b);

/* out = act(a) (* b when b), n elements; act an enum lc_act (ops/act.h)
 * value; out may be a or b. */
void cmp_dev_act(int act, const float *a, const float *b, int64_t n, float *out);

/* Each row of S [R, n] becomes its softmax, in place; lse [R] (the GPU's;
 * may be NULL) the log of the row's sum of exps. */
void cmp_dev_softmax_rows(float *S, int64_t R, int64_t n, float *lse);

/* y[r, c] *= x[r, c], [R, C] with row strides ldy, ldx. */
void cmp_dev_mul(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t R, int64_t C);

/* --- S4D convolutions ----------------------------------------------------
 *
 * The kernels of up to G channels and their convolution with as many
 * signals of length L, by FFTs of size n (cmp_fft_size_smooth(L + T - 1) for
 * the longest support T). A kernel of channel g is K_c[t] = 2 Re sum_m
 * coef[g, c, m] exp(dtA[g, m] t) for the lags t < T[g] (zero from
 * there), evaluated in
 * double; the bidirectional one (nch 2) is K0 at lags 0.. and K1 at lags
 * ..0, as ops/ssm.h convolves them.
 */
typedef struct cmp_dev_conv cmp_dev_conv;

/* Plans and buffers for G channels at transform size n (L <= n), or NULL
 * when the GPU has no memory for them. */
cmp_dev_conv *cmp_dev_conv_new(int64_t n, int G);
void cmp_dev_conv_free(cmp_dev_conv *c);

/* The first cnt (<= G) rows of x [*, ldx] (channels; the first L
 * columns the signal) become y = conv(x; K0, K1) + D x, in place. dtA
 * [cnt][N2] and coef [cnt][nch][N2] are complex (re, im) doubles, T
 * [cnt] the supports (1 <= T <= L, the largest Tmax) and D [cnt], all on
 * the GPU. */
void cmp_dev_conv_run(cmp_dev_conv *c, float *x, int64_t ldx, int64_t L, int cnt,
                      const double *dtA, const double *coef, int N2, int nch,
                      const int64_t *T, int64_t Tmax, const float *D);

/* --- Attention over key segments -----------------------------------------
 *
 * Every encoder attention of lc in one form (ops/segattn.h builds it): a
 * group is up to CMP_DEV_SEG_ROWS query rows of one head, and its keys
 * are the concatenation of its segments, each n rows of keys and values
 * (dk floats at the start of each row, row stride ld). A query's score
 * for a key is scale q.k, then: in a segment with kpad, -10000 (assigned)
 * when the key's or the query's pad flag is non-zero (qpad NULL: no query
 * is a pad); else plus the segment's additive mask, when it has one. The
 * output row is softmax(scores) v over all the group's keys, in one pass
 * (an online softmax, tiles of keys shared by the group's rows); a row
 * whose every score is -inf gets zeros (ops/softmax.h's rule). dk <=
 * CMP_DEV_SEG_DK. The tables g [ng] and s are in the GPU's memory. */
#define CMP_DEV_SEG_ROWS 64
#define CMP_DEV_SEG_DK 128

typedef struct cmp_dev_seg {
	const float *k, *v;
	const float *mask;          /* additive [n], or NULL */
	const float *kpad;          /* pad flags [n], or NULL */
	int64_t ld, n;
} cmp_dev_seg;

typedef struct cmp_dev_group {
	const float *q;             /* [m, ldq] */
	float *o;                   /* [m, ldo]: dk floats of each row written */
	const float *qpad;          /* [m], or NULL */
	int64_t ldq, ldo;
	int m, seg0, nseg;          /* rows; segments s[seg0 .. seg0 + nseg) */
} cmp_dev_group;

void cmp_dev_segattn(const cmp_dev_group *g, int64_t ng, const cmp_dev_seg *s, int dk,
                     float scale);

#ifdef __cplusplus
}
#endif

#endif
