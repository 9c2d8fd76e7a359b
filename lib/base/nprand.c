#include "base/nprand.h"

#include <math.h>
#include <string.h>

#define N 624
#define M 397

void nprand_seed(nprand *g, uint32_t s)
{
	g->mt[0] = s;
	for (int i = 1; i < N; i++)
		g->mt[i] = 1812433253u * (g->mt[i - 1] ^ (g->mt[i - 1] >> 30)) + (uint32_t)i;
	g->i = N;
}

static void regenerate(nprand *g)
{
	uint32_t *mt = g->mt;

	for (int k = 0; k < N; k++) {
		uint32_t y = (mt[k] & 0x80000000u) | (mt[(k + 1) % N] & 0x7fffffffu);
		mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
	}
	g->i = 0;
}

uint32_t nprand_u32(nprand *g)
{
	uint32_t y;

	if (g->i >= N)
		regenerate(g);
	y = g->mt[g->i++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	return y ^ (y >> 18);
}

uint32_t nprand_interval(nprand *g, uint32_t max)
{
	uint32_t mask = max, v;

	if (max == 0)
		return 0;
	mask |= mask >> 1;
	mask |= mask >> 2;
	mask |= mask >> 4;
	mask |= mask >> 8;
	mask |= mask >> 16;
	while ((v = nprand_u32(g) & mask) > max)
		;
	return v;
}

void nprand_shuffle(nprand *g, void *a, size_t n, size_t size)
{
	unsigned char *b = a, t[16];

	for (size_t i = n > 0 ? n - 1 : 0; i > 0; i--) {
		size_t j = nprand_interval(g, (uint32_t)i);
		memcpy(t, b + i * size, size);
		memcpy(b + i * size, b + j * size, size);
		memcpy(b + j * size, t, size);
	}
}

/* CPython's hash of an int v: v mod (2^61 - 1) with v's sign, -1 -> -2. */
static int64_t py_hash_int(int64_t v)
{
	const uint64_t p = (1ull << 61) - 1;
	uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	int64_t h = (int64_t)(a % p);

	if (v < 0)
		h = -h;
	return h == -1 ? -2 : h;
}

int64_t nprand_py_hash(const int64_t *v, int n)
{
	const uint64_t p1 = 11400714785074694791ull, p2 = 14029467366897019727ull,
	               p5 = 2870177450012600261ull;
	uint64_t acc = p5;

	for (int i = 0; i < n; i++) {
		acc += (uint64_t)py_hash_int(v[i]) * p2;
		acc = (acc << 31) | (acc >> 33);
		acc *= p1;
	}
	acc += (uint64_t)n ^ (p5 ^ 3527539ull);
	if (acc == UINT64_MAX)
		return 1546275796;
	return (int64_t)acc;   /* two's complement: CPython's Py_hash_t */
}

uint32_t nprand_fairseq_seed(const int64_t *v, int n)
{
	double r;

	if (n == 1)
		return (uint32_t)v[0];
	/* float(h) rounds to nearest; Python's % takes the divisor's sign */
	r = fmod((double)nprand_py_hash(v, n), 1e6);
	if (r < 0)
		r += 1e6;
	return (uint32_t)r;
}
