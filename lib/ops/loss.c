#include "ops/loss.h"

#include <math.h>

double xent_fw_bw(float *logits, int64_t T, int V, const int32_t *labels, int32_t ignore,
                  float scale, int grad, int64_t *counted)
{
	double loss = 0;
	int64_t n = 0;

	for (int64_t t = 0; t < T; t++) {
		float *lg = logits + t * V, mx = -INFINITY;
		double sum = 0, lse;
		int32_t y = labels[t];
		int use = y >= 0 && y != ignore;
		for (int v = 0; v < V; v++)
			if (lg[v] > mx)
				mx = lg[v];
		for (int v = 0; v < V; v++)
			sum += exp((double)lg[v] - mx);
		lse = mx + log(sum);
		if (use) {
			loss += lse - lg[y];
			n++;
		}
		if (grad) {
			for (int v = 0; v < V; v++)
				lg[v] = use ? (float)(exp((double)lg[v] - lse) * scale) : 0.0f;
			if (use)
				lg[y] -= scale;
		}
	}
	*counted = n;
	return loss;
}
