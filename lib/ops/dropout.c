#include "ops/dropout.h"

#include "base/rng.h"

void dropout_mask(float *mask, int64_t n, double p, uint64_t *state)
{
	float keep = (float)(1.0 / (1.0 - p));

	for (int64_t i = 0; i < n; i++) {
		*state = lc_mix64(*state);
		mask[i] = ((double)(*state >> 11) / 9007199254740992.0) < p ? 0.0f : keep;
	}
}

void dropout_apply(float *y, const float *mask, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] *= mask[i];
}

void residual_add(float *out, const float *res, const float *y, const float *mask, int64_t n)
{
	if (mask)
		for (int64_t i = 0; i < n; i++)
			out[i] = res[i] + mask[i] * y[i];
	else
		for (int64_t i = 0; i < n; i++)
			out[i] = res[i] + y[i];
}
