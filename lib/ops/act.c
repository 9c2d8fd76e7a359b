#include "ops/act.h"

#include <math.h>
#include <string.h>

int act_parse(const char *s)
{
	if (!strcmp(s, "gelu_new") || !strcmp(s, "gelu_fast") || !strcmp(s, "gelu_pytorch_tanh"))
		return ACT_GELU_TANH;
	if (!strcmp(s, "gelu"))
		return ACT_GELU;
	if (!strcmp(s, "relu"))
		return ACT_RELU;
	if (!strcmp(s, "silu") || !strcmp(s, "swish"))
		return ACT_SILU;
	return -1;
}

const char *act_name(enum lc_act a)
{
	switch (a) {
	case ACT_GELU_TANH: return "gelu_new";
	case ACT_GELU: return "gelu";
	case ACT_RELU: return "relu";
	case ACT_SILU: return "silu";
	}
	return "?";
}

/* exp(x) for x in [-87, 88], about 2 ulp; written to vectorise. */
static inline float fast_expf(float x)
{
	float n, r, p;
	int32_t i;
	uint32_t u;
	float f;

	x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
	n = nearbyintf(x * 1.44269504088896341f);
	r = x - n * 0.693145751953125f;
	r = r - n * 1.428606765330187e-06f;
	p = 1.0f / 720;
	p = p * r + 1.0f / 120;
	p = p * r + 1.0f / 24;
	p = p * r + 1.0f / 6;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	i = (int32_t)n;
	u = (uint32_t)(i + 127) << 23;
	memcpy(&f, &u, 4);
	return p * f;
}

void act_fw(enum lc_act k, const float *a, const float *b, int64_t n, float *out)
{
	int64_t i;

	switch (k) {
	case ACT_GELU_TANH:
		/* 0.5 x (1 + tanh(y)) = x / (1 + exp(-2y)), y = sqrt(2/pi)(x + 0.044715 x^3) */
		for (i = 0; i < n; i++) {
			float x = a[i], y = 0.7978845608028654f * (x + 0.044715f * x * x * x);
			float g = x / (1.0f + fast_expf(-2.0f * y));
			out[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_GELU:
		for (i = 0; i < n; i++) {
			float x = a[i], g = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
			out[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_RELU:
		for (i = 0; i < n; i++) {
			float g = a[i] > 0 ? a[i] : 0;
			out[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_SILU:
		for (i = 0; i < n; i++) {
			float x = a[i], g = x / (1.0f + fast_expf(-x));
			out[i] = b ? g * b[i] : g;
		}
		break;
	}
}

/* act(x) and act'(x), in double. */
static double value_deriv(enum lc_act k, double x, double *d)
{
	switch (k) {
	case ACT_GELU_TANH: {
		double c = 0.7978845608028654, t = tanh(c * (x + 0.044715 * x * x * x));
		*d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
		return 0.5 * x * (1 + t);
	}
	case ACT_GELU: {
		double cdf = 0.5 * (1 + erf(x / 1.4142135623730951));
		*d = cdf + x * exp(-0.5 * x * x) * 0.3989422804014327;
		return x * cdf;
	}
	case ACT_RELU:
		*d = x > 0 ? 1 : 0;
		return x > 0 ? x : 0;
	case ACT_SILU: {
		double sg = 1 / (1 + exp(-x));
		*d = sg * (1 + x * (1 - sg));
		return x * sg;
	}
	}
	*d = 1;
	return x;
}

void act_bw(enum lc_act k, const float *a, const float *b, const float *dout, int64_t n,
            float *da, float *db)
{
	for (int64_t i = 0; i < n; i++) {
		double d, v = value_deriv(k, a[i], &d);
		float g = dout[i];
		if (b) {
			if (db)
				db[i] = (float)(g * v);
			da[i] = (float)(g * b[i] * d);
		} else {
			da[i] = (float)(g * d);
		}
	}
}
