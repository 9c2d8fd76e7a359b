/*
 * nprand: numpy's legacy global generator as fairseq seeds it, bit for
 * bit, for data pipelines that must reproduce the authors' Python (the
 * BART-LS span corruption, text/span.h). lc's own generator stays
 * base/rng.h; this one exists only to match numpy.
 *
 *   nprand_seed(&g, s)      np.random.seed(s): MT19937 init_genrand(s)
 *   nprand_u32(&g)          the next 32-bit output (genrand_int32)
 *   nprand_interval(&g, m)  numpy's random_interval(m): uniform in [0, m]
 *                           by masking to the smallest 2^k - 1 >= m and
 *                           rejecting draws above m (m < 2^32)
 *   nprand_shuffle          RandomState.shuffle of a 1-D array (numpy
 *                           1.24): Fisher-Yates from the end, j drawn by
 *                           random_interval(i)
 *   nprand_py_hash(v, n)    CPython's (>= 3.8, 64-bit) hash of a tuple
 *                           of ints: the xxHash-based tuplehash over the
 *                           ints' hashes (v mod 2^61 - 1, sign kept, -1
 *                           taken as -2); independent of PYTHONHASHSEED
 *   nprand_fairseq_seed     fairseq's data_utils.numpy_seed(seed, *more):
 *                           int(hash((seed, *more)) % 1e6), the hash
 *                           first rounded to a double (so the seeds are
 *                           coarse) and Python's float % (non-negative)
 */
#ifndef LC_NPRAND_H
#define LC_NPRAND_H

#include <stddef.h>
#include <stdint.h>

typedef struct nprand {
	uint32_t mt[624];
	int i;
} nprand;

void nprand_seed(nprand *g, uint32_t s);
uint32_t nprand_u32(nprand *g);
uint32_t nprand_interval(nprand *g, uint32_t max);
/* a: n items of size bytes each (at most 16); n - 1 must be < 2^32 (numpy
 * draws 64-bit numbers beyond; lc never needs them). */
void nprand_shuffle(nprand *g, void *a, size_t n, size_t size);

int64_t nprand_py_hash(const int64_t *v, int n);
/* The seed np.random.seed gets inside data_utils.numpy_seed(v[0], v[1], ...)
 * (n >= 2); with n == 1 fairseq uses v[0] itself. */
uint32_t nprand_fairseq_seed(const int64_t *v, int n);

#endif
