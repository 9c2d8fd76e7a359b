/*
 * dtype: the scalar conversions between float32 and the 16-bit float
 * formats that weight files and streams carry, defined once.
 *
 *   bf16 -> f32   exact (the top half of the float32 bit pattern)
 *   f16  -> f32   exact (IEEE binary16: subnormals, infinities, NaN kept)
 *   f32  -> bf16  round to nearest, ties to even; NaN stays a (quiet) NaN
 *
 * The array forms read and write little-endian 16-bit words (the order of
 * safetensors, torch storages and the lc stream on little-endian hosts).
 */
#ifndef LC_DTYPE_H
#define LC_DTYPE_H

#include <stdint.h>

float lc_bf16_to_f32(uint16_t v);
float lc_f16_to_f32(uint16_t v);
uint16_t lc_f32_to_bf16(float f);

/* out[i] = value of the i-th little-endian 16-bit word of p, n words. */
void lc_bf16_to_f32_n(const void *p, uint64_t n, float *out);
void lc_f16_to_f32_n(const void *p, uint64_t n, float *out);
/* out[i] = bf16(in[i]), n values; out may alias in (the words are written
 * front to back and never overtake the floats still to be read). */
void lc_f32_to_bf16_n(const float *in, uint64_t n, uint16_t *out);

/* The index of the first NaN or infinity of x[n], or -1 when all are
 * finite; *what is "NaN" or "inf" (or "-inf") when one is found. */
int64_t lc_first_nonfinite(const float *x, uint64_t n, const char **what);
/* The same over bf16 values (host order). */
int64_t lc_first_nonfinite_bf16(const uint16_t *x, uint64_t n, const char **what);

#endif
