/*
 * bootstrap: rouge-score's BootstrapAggregator, bit for bit with numpy
 * 1.24's legacy global generator.
 *
 * Promises, for a matrix of n per-document scores (rows) and ncol
 * measures (columns, e.g. P R F), seeded with S:
 *   np.random.seed(S)
 *   for each of nsamples: idx = np.random.choice(np.arange(n), size=n)
 *                         means[i] = np.mean(matrix[idx, :], axis=0)
 *   np.percentile(means, 100 * [(1-ci)/2, 0.5, 1-(1-ci)/2], axis=0)
 * The generator is MT19937 seeded with init_genrand(S); an index is
 * numpy's legacy bounded integer (mask rejection on 32-bit draws, no
 * draw at all when n == 1); a mean adds the n drawn rows left to right
 * and divides by n (what np.mean does along axis 0); the percentile is
 * numpy's 'linear' method with its two-sided interpolation.
 * The generator carries on between calls, as numpy's does between types.
 */
#ifndef LC_BOOTSTRAP_H
#define LC_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct bootstrap_rng {
	uint32_t mt[624];
	int pos;
} bootstrap_rng;

/* np.random.seed(seed) for an integer seed. */
void bootstrap_seed(bootstrap_rng *r, uint32_t seed);
/* The next raw 32-bit output. */
uint32_t bootstrap_next32(bootstrap_rng *r);
/* An integer in [0, n), 1 <= n <= 2^32, as numpy's legacy randint(0, n). */
uint64_t bootstrap_randint(bootstrap_rng *r, uint64_t n);

/* np.percentile(s, 100 * q) over sorted[n] (ascending), method 'linear'. */
double bootstrap_percentile(const double *sorted, size_t n, double q);

/* The aggregation above for one score type: x[n][ncol] row-major, out
 * [3][ncol]: low, mid, high. n >= 1, nsamples >= 1, 0 < ci <= 1. */
int bootstrap_aggregate(bootstrap_rng *r, const double *x, size_t n, size_t ncol,
                        size_t nsamples, double ci, double *out, lc_err *err);

#endif
