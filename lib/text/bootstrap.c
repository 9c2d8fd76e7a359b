/*
 * bootstrap.c: MT19937, numpy's legacy bounded integers, resampled means
 * and numpy's linear percentile (see bootstrap.h).
 */
#include "text/bootstrap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MT_N 624
#define MT_M 397

void bootstrap_seed(bootstrap_rng *r, uint32_t seed)
{
	int i;

	r->mt[0] = seed;
	for (i = 1; i < MT_N; i++)
		r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
	r->pos = MT_N;
}

static void mt_refill(bootstrap_rng *r)
{
	int i;
	uint32_t y;

	for (i = 0; i < MT_N; i++) {
		y = (r->mt[i] & 0x80000000u) | (r->mt[(i + 1) % MT_N] & 0x7fffffffu);
		r->mt[i] = r->mt[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
	}
	r->pos = 0;
}

uint32_t bootstrap_next32(bootstrap_rng *r)
{
	uint32_t y;

	if (r->pos >= MT_N)
		mt_refill(r);
	y = r->mt[r->pos++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

uint64_t bootstrap_randint(bootstrap_rng *r, uint64_t n)
{
	uint32_t rng = (uint32_t)(n - 1), mask = rng, v;

	if (n <= 1)
		return 0;                      /* numpy draws nothing */
	mask |= mask >> 1;
	mask |= mask >> 2;
	mask |= mask >> 4;
	mask |= mask >> 8;
	mask |= mask >> 16;
	do
		v = bootstrap_next32(r) & mask;
	while (v > rng);
	return v;
}

double bootstrap_percentile(const double *s, size_t n, double q)
{
	double v = (double)(n - 1) * q, g, a, b, d;
	size_t i;

	if (v >= (double)(n - 1)) {            /* numpy clamps both neighbours to the last */
		i = n - 1;
		g = v - -1.0;
		a = b = s[n - 1];
	} else if (v < 0) {
		i = 0;
		g = v;
		a = b = s[0];
	} else {
		double fi = floor(v);
		i = (size_t)fi;
		g = v - fi;
		a = s[i];
		b = s[i + 1];
	}
	d = b - a;
	if (g >= 0.5)
		return b - d * (1 - g);
	return a + d * g;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

int bootstrap_aggregate(bootstrap_rng *r, const double *x, size_t n, size_t ncol,
                        size_t nsamples, double ci, double *out, lc_err *err)
{
	double *means, *sums, *col, delta, q[3];
	size_t i, k, c;

	if (n < 1 || ncol < 1 || nsamples < 1)
		return lc_fail(err, "bootstrap: nothing to aggregate");
	if (n > (uint64_t)1 << 32)
		return lc_fail(err, "bootstrap: more than 2^32 documents");
	if (!(ci > 0 && ci <= 1))
		return lc_fail(err, "bootstrap: confidence %g is not in (0, 1]", ci);
	if (nsamples > SIZE_MAX / sizeof(double) / (ncol + 1))
		return lc_fail(err, "bootstrap: too many samples");
	means = malloc(nsamples * ncol * sizeof *means);
	sums = malloc(ncol * sizeof *sums);
	col = malloc(nsamples * sizeof *col);
	if (!means || !sums || !col) {
		free(means);
		free(sums);
		free(col);
		return lc_fail(err, "out of memory");
	}
	for (i = 0; i < nsamples; i++) {
		for (c = 0; c < ncol; c++)
			sums[c] = 0;
		for (k = 0; k < n; k++) {
			const double *row = x + bootstrap_randint(r, n) * ncol;
			for (c = 0; c < ncol; c++)
				sums[c] += row[c];
		}
		for (c = 0; c < ncol; c++)
			means[i * ncol + c] = sums[c] / (double)n;
	}
	/* q = 100 * [delta, 0.5, 1 - delta], then numpy divides by 100 */
	delta = (1 - ci) / 2;
	q[0] = (100 * delta) / 100;
	q[1] = (100 * 0.5) / 100;
	q[2] = (100 * (1 - delta)) / 100;
	for (c = 0; c < ncol; c++) {
		for (i = 0; i < nsamples; i++)
			col[i] = means[i * ncol + c];
		qsort(col, nsamples, sizeof *col, cmp_double);
		for (k = 0; k < 3; k++)
			out[k * ncol + c] = bootstrap_percentile(col, nsamples, q[k]);
	}
	free(means);
	free(sums);
	free(col);
	return 0;
}
