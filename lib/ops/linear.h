/*
 * linear: the linear layer y = x W^T + b with Hugging Face's weight layout
 * W [dout, din], forward and backward, through the compute seam.
 *
 * Rows are tokens. Three layouts occur: row-major in and out (most
 * layers), channel-major out (yT [dout, R]: LOCOST's k and q, which the
 * per-channel convolution reads contiguously), and channel-major in (xT
 * [din, R]: LOCOST's output projection of the convolved channels). ld*
 * are row strides as stored. The bias, where given, is added after the
 * product: y = (beta y + x W^T) + b.
 */
#ifndef LC_LINEAR_H
#define LC_LINEAR_H

#include <stdint.h>

/* y [R, dout] (row stride dout) = beta y + x [R, din] W^T + b; split over
 * nth threads by output features when that pays (cmp_gemm_par). nth 0:
 * one product on the calling thread, for callers that split the rows
 * into blocks of a fixed size themselves (LOCOST's encoder), whose
 * results then do not depend on the thread count either: cmp_gemm_par
 * splits a product of few rows into blocks of 256 columns even on one
 * thread, and each block packs x again (a 256 x 2048 x 768 product
 * ran 7% slower so, 256 x 768 x 2048 17%, oneDNN, here). */
void linear_fw(float *y, const float *x, const float *W, const float *b, int64_t R, int dout,
               int din, float beta, int nth);

/* yT [dout, ldy] columns 0..R = W x^T + b, x [R, din] (row-major). */
void linear_fw_to_t(float *yT, int64_t ldy, const float *x, const float *W, const float *b,
                    int64_t R, int dout, int din);

/* y [R, dout] = beta y + (xT [din, ldx] columns 0..R)^T W^T + b. */
void linear_fw_from_t(float *y, const float *xT, int64_t ldx, const float *W, const float *b,
                      int64_t R, int dout, int din, float beta);

/* Backward of linear_fw, dy [R, dout]: dx [R, din] += dy W; dW [dout, din]
 * += dy^T x; db [dout] += column sums of dy. Each output may be NULL. */
void linear_bw(const float *dy, const float *x, const float *W, int64_t R, int dout, int din,
               float *dx, float *dW, float *db);

/* Backward of linear_fw_to_t, dyT [dout, ldy]: dx [R, din] +=, dW +=, db +=. */
void linear_bw_to_t(const float *dyT, int64_t ldy, const float *x, const float *W, int64_t R,
                    int dout, int din, float *dx, float *dW, float *db);

/* Backward of linear_fw_from_t, dy [R, dout]: dxT [din, ldx] +=, dW +=, db +=. */
void linear_bw_from_t(const float *dy, const float *xT, int64_t ldx, const float *W, int64_t R,
                      int dout, int din, float *dxT, float *dW, float *db);

#endif
