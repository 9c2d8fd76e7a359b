#include "ops/softmax.h"

#include <math.h>

#include "ops/vmath.h"

void softmax_fw(float *S, int64_t rows, int64_t n, int64_t ld)
{
	for (int64_t r = 0; r < rows; r++) {
		float *s = S + r * ld, mx = vm_max(s, n);
		if (mx == -INFINITY) {
			for (int64_t j = 0; j < n; j++)
				s[j] = 0;
			continue;
		}
		vm_scale(s, 1.0 / vm_exp_sum(s, mx, s, n), s, n);
	}
}

void softmax_bw(const float *P, float *dP, int64_t rows, int64_t n, int64_t ld)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *p = P + r * ld;
		float *g = dP + r * ld;
		double s = 0;
		for (int64_t j = 0; j < n; j++)
			s += (double)g[j] * p[j];
		for (int64_t j = 0; j < n; j++)
			g[j] = p[j] * (g[j] - (float)s);
	}
}
