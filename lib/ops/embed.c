#include "ops/embed.h"

#include <string.h>

void embed_fw(const float *table, int d, const int32_t *ids, int64_t n, float scale, float *out)
{
	for (int64_t t = 0; t < n; t++) {
		const float *row = table + (int64_t)ids[t] * d;
		float *o = out + t * d;
		if (scale == 1.0f)
			memcpy(o, row, (size_t)d * sizeof *o);
		else
			for (int i = 0; i < d; i++)
				o[i] = row[i] * scale;
	}
}

void embed_bw(float *dtable, int d, const int32_t *ids, int64_t n, float scale,
              const float *dout)
{
	for (int64_t t = 0; t < n; t++) {
		float *row = dtable + (int64_t)ids[t] * d;
		const float *g = dout + t * d;
		for (int i = 0; i < d; i++)
			row[i] += g[i] * scale;
	}
}
