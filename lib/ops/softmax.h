/*
 * softmax: row-wise softmax and its backward.
 *
 * Forward: subtract the row maximum (a row of -inf stays all zero), exp in
 * float (ops/vmath.h), sum in double, scale by the sum's reciprocal in
 * double and round once.
 */
#ifndef LC_SOFTMAX_H
#define LC_SOFTMAX_H

#include <stdint.h>

/* S [rows, n] (row stride ld) in place. */
void softmax_fw(float *S, int64_t rows, int64_t n, int64_t ld);

/* Given the forward's P and dP (d loss / d P), writes dS = P * (dP - sum(dP * P))
 * into dP, in place. */
void softmax_bw(const float *P, float *dP, int64_t rows, int64_t n, int64_t ld);

#endif
