#include "base/rng.h"

#include <math.h>

#define GOLDEN 0x9e3779b97f4a7c15ull

uint64_t lc_mix64(uint64_t z)
{
	z += GOLDEN;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t lc_rng_next(uint64_t *s)
{
	uint64_t z = lc_mix64(*s);

	*s += GOLDEN;
	return z;
}

double lc_rng_unif(uint64_t *s)
{
	return ((double)(lc_rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

double lc_rng_normal(uint64_t *s)
{
	double u = lc_rng_unif(s);

	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * lc_rng_unif(s));
}
