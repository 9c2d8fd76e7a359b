#include "ops/act.h"

#include <math.h>
#include <string.h>

#include "ops/vmath.h"

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

void act_fw(enum lc_act k, const float *a, const float *b, int64_t n, float *out)
{
	int64_t i;

	switch (k) {
	case ACT_GELU_TANH:
		vm_gelu_tanh(a, b, out, n);
		break;
	case ACT_GELU:
		if (b && out == b) {            /* out may be b: gate element by element */
			for (i = 0; i < n; i++) {
				float g;
				vm_gelu(a + i, &g, 1);
				out[i] = g * b[i];
			}
			break;
		}
		vm_gelu(a, out, n);
		for (i = 0; b && i < n; i++)
			out[i] *= b[i];
		break;
	case ACT_RELU:
		for (i = 0; i < n; i++) {
			float g = a[i] > 0 ? a[i] : 0;
			out[i] = b ? g * b[i] : g;
		}
		break;
	case ACT_SILU:
		for (i = 0; i < n; i++) {
			float x = a[i], g = x / (1.0f + vm_expf(-x));
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
