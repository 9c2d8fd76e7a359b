/*
 * xkern_int.h: inside compute/ only: what the cross-attention kernels'
 * two files share, xkern.c (fp32, the AVX-512, AVX2 and plain C paths;
 * the switch between them) and xkern16.c (bf16, --compute bf16): the
 * plain paths' reduction, the AVX-512 reductions of scores and the
 * loops that cut R rows into tiles.
 */
#ifndef LC_COMPUTE_XKERN_INT_H
#define LC_COMPUTE_XKERN_INT_H

#include <stdint.h>

/* The summation order the two paths share.
 *
 * scores: lane l (0..7) of a row pair's dot product sums the products of
 * k = l, l + 8, l + 16, ... in increasing k; the eight lanes are then
 * reduced as ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
 *
 * accumulate: C[r, n] += P[r, 0] E[0, n], then P[r, 1] E[1, n], ... in
 * increasing j, one multiply-add at a time. */

static inline float hsum8(const float v[8])
{
	float s4[4], s2[2];

	for (int i = 0; i < 4; i++)
		s4[i] = v[i] + v[i + 4];
	for (int i = 0; i < 2; i++)
		s2[i] = s4[i] + s4[i + 2];
	return s2[0] + s2[1];
}

/* cmp_xk_simd's setting (xkern.c): 1 the widest path, 2 AVX2 at most,
 * 0 plain C. */
int cmp_xk_allowed(void);

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Holds v in a register: without it, the compiler folds the load of a
 * query vector into both multiply-adds that use it, 14 loads per 12
 * multiply-adds instead of 8, and the loop waits on the load ports. */
#define KEEP(v) __asm__("" : "+x"(v))

/* Row tiles of 6, then the remaining rows in one tile: ROWS(nr) with nr a
 * constant, so each tile is compiled for its height; r counts the rows. */
#define BY_SIX(ROWS)                                                                     \
	do {                                                                             \
		for (; r + 6 <= R; r += 6)                                               \
			ROWS(6);                                                         \
		switch (R - r) {                                                         \
		case 5: ROWS(5); break;                                                  \
		case 4: ROWS(4); break;                                                  \
		case 3: ROWS(3); break;                                                  \
		case 2: ROWS(2); break;                                                  \
		case 1: ROWS(1); break;                                                  \
		default: break;                                                          \
		}                                                                        \
	} while (0)

/* The accumulations: strips of W columns of C (nb of them, the last
 * fewer) outside, row tiles inside. */
#define BY_STRIPS(W, ROWS)                                                               \
	for (int64_t k0 = 0; k0 < n; k0 += (W)) {                                        \
		int64_t nb = n - k0 < (W) ? n - k0 : (W), r = 0;                         \
		BY_SIX(ROWS);                                                            \
	}

/* AVX-512 (xkern.c's wider tiles, and the bf16 tiles' sums). */
#define AVX512 __attribute__((target("avx512f")))
#define TILE512 __attribute__((target("avx512f"), always_inline)) static inline

/* The four sums of a0..a3 (lanes of four dot products), in one vector:
 * 16 lanes to 8 (lane i plus lane i + 8), then adjacent pairs twice
 * (hadd), then the two 128-bit halves: a tree of depth 4 in 19
 * operations, where reducing each vector alone took 32 and four stores. */
TILE512 __m128 hsum4x512(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
#define HALVES(v) _mm256_add_ps(_mm512_castps512_ps256(v), \
	_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))
	__m256 h0 = HALVES(a0), h1 = HALVES(a1), h2 = HALVES(a2), h3 = HALVES(a3);
#undef HALVES
	__m256 v = _mm256_hadd_ps(_mm256_hadd_ps(h0, h1), _mm256_hadd_ps(h2, h3));

	return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
}

/* S[0..ne) of a row from its accumulators (those past ne are zero),
 * added to S's values where add. */
TILE512 void store_sums(float *S, int ne, const __m512 a[4], int add)
{
	__m128 s = hsum4x512(a[0], a[1], a[2], a[3]);

	if (ne == 4) {
		_mm_storeu_ps(S, add ? _mm_add_ps(_mm_loadu_ps(S), s) : s);
	} else {
		float t[4];

		_mm_storeu_ps(t, s);
		for (int x = 0; x < ne; x++)
			S[x] = add ? S[x] + t[x] : t[x];
	}
}

/* Row tile nr against 4 encoder rows at a time, then the last 1 to 3. */
#define SCORES_BY4(tile, nr)                                                             \
	do {                                                                             \
		__typeof__(Q) Qr = Q + r * ldq;                                          \
		float *Sr = S + r * lds;                                                 \
		for (j = 0; j + 4 <= c; j += 4)                                          \
			tile(nr, 4, !r, d, Qr, ldq, E + j * lde, lde, Sr + j, lds, add);     \
		switch (c - j) {                                                         \
		case 3: tile(nr, 3, !r, d, Qr, ldq, E + j * lde, lde, Sr + j, lds, add); break; \
		case 2: tile(nr, 2, !r, d, Qr, ldq, E + j * lde, lde, Sr + j, lds, add); break; \
		case 1: tile(nr, 1, !r, d, Qr, ldq, E + j * lde, lde, Sr + j, lds, add); break; \
		default: break;                                                          \
		}                                                                        \
	} while (0)
#endif

#endif
