#include "base/dtype.h"

#include <string.h>

float lc_bf16_to_f32(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

float lc_f16_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, mant = h & 1023, u;
	float f;

	if (e == 0) {
		f = (float)mant * (1.0f / 16777216.0f);   /* mant * 2^-24, exact */
		return s ? -f : f;
	}
	if (e == 31)
		u = s | 0x7f800000u | (mant << 13);
	else
		u = s | ((e + 112) << 23) | (mant << 13);
	memcpy(&f, &u, 4);
	return f;
}

uint16_t lc_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);           /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static uint16_t word(const unsigned char *p, uint64_t i)
{
	return (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
}

void lc_bf16_to_f32_n(const void *p, uint64_t n, float *out)
{
	for (uint64_t i = 0; i < n; i++)
		out[i] = lc_bf16_to_f32(word(p, i));
}

void lc_f16_to_f32_n(const void *p, uint64_t n, float *out)
{
	for (uint64_t i = 0; i < n; i++)
		out[i] = lc_f16_to_f32(word(p, i));
}

void lc_f32_to_bf16_n(const float *in, uint64_t n, uint16_t *out)
{
	for (uint64_t i = 0; i < n; i++) {
		float f = in[i];   /* read before the word that may overlap it is written */
		out[i] = lc_f32_to_bf16(f);
	}
}

/* Whether any of the 64 floats at p has all exponent bits set: the
 * exponent plus one low exponent bit carries into bit 31 exactly then.
 * In vectors of 4 (the compiler's vector extension: SSE2, or NEON), so
 * that the scan keeps up with memory; element by element it was 0.4% of
 * an encode. */
typedef uint32_t u32x4 __attribute__((vector_size(16)));

static int any_nonfinite64(const float *p)
{
	u32x4 acc = { 0, 0, 0, 0 }, v;

	for (int k = 0; k < 64; k += 4) {
		memcpy(&v, p + k, sizeof v);
		acc |= (v & 0x7f800000u) + 0x00800000u;
	}
	return ((acc[0] | acc[1] | acc[2] | acc[3]) & 0x80000000u) != 0;
}

int64_t lc_first_nonfinite(const float *x, uint64_t n, const char **what)
{
	uint64_t i = 0;

	while (i + 64 <= n && !any_nonfinite64(x + i))
		i += 64;
	for (; i < n; i++) {
		uint32_t u;
		memcpy(&u, x + i, 4);
		if ((u & 0x7f800000u) == 0x7f800000u) {
			*what = (u & 0x007fffffu) ? "NaN" : (u >> 31) ? "-inf" : "inf";
			return (int64_t)i;
		}
	}
	return -1;
}

typedef uint16_t u16x8 __attribute__((vector_size(16)));

/* The same for 64 bf16 numbers (their exponent is bits 7-14). */
static int any_nonfinite64_bf16(const uint16_t *p)
{
	u16x8 acc = { 0 }, v;
	uint16_t a = 0;

	for (int k = 0; k < 64; k += 8) {
		memcpy(&v, p + k, sizeof v);
		acc |= (v & 0x7f80u) + 0x0080u;
	}
	for (int k = 0; k < 8; k++)
		a |= acc[k];
	return (a & 0x8000u) != 0;
}

int64_t lc_first_nonfinite_bf16(const uint16_t *x, uint64_t n, const char **what)
{
	uint64_t i = 0;

	while (i + 64 <= n && !any_nonfinite64_bf16(x + i))
		i += 64;
	for (; i < n; i++)
		if ((x[i] & 0x7f80u) == 0x7f80u) {
			*what = (x[i] & 0x007fu) ? "NaN" : (x[i] >> 15) ? "-inf" : "inf";
			return (int64_t)i;
		}
	return -1;
}
