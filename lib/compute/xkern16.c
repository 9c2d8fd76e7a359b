/*
 * xkern16.c: the cross-attention kernels in bf16 (--compute bf16: the
 * decoder's bf16 copy of the states, the weights' bf16 copies in its
 * few-row products): AVX512-BF16's dot products where the processor has
 * them, plain C elsewhere (the same numbers up to the order of the sums).
 * The fp32 forms and the choice of path are in xkern.c; see compute.h for
 * the contracts.
 */
#include "compute/compute.h"

#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "compute/gemm.h"
#include "compute/xkern_int.h"

/* bf16 to fp32 is exact: the bits shifted into the high half. */
static float bf(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* The bf16 forms in plain C: products of bf16 values are exact in fp32,
 * so only the sums round, in scores_c's and accum_c's orders. */
static void scores16_c(int64_t R, int64_t c, int64_t d, const uint16_t *Q, int64_t ldq,
                       const uint16_t *E, int64_t lde, float *S, int64_t lds)
{
	for (int64_t r = 0; r < R; r++)
		for (int64_t j = 0; j < c; j++) {
			const uint16_t *q = Q + r * ldq, *e = E + j * lde;
			float v[8] = {0};

			for (int64_t k = 0; k < d; k++)
				v[k & 7] += bf(q[k]) * bf(e[k]);
			S[r * lds + j] = hsum8(v);
		}
}

static void accum16_c(int64_t R, int64_t c, int64_t n, const uint16_t *P, int64_t ldp,
                      const uint16_t *E, int64_t lde, float *C, int64_t ldc)
{
	for (int64_t r = 0; r < R; r++) {
		float *cr = C + r * ldc;

		for (int64_t j = 0; j < c; j++) {
			float p = bf(P[r * ldp + j]);
			const uint16_t *e = E + j * lde;

			for (int64_t k = 0; k < n; k++)
				cr[k] += p * bf(e[k]);
		}
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
/* bf16 rows are half as long, so the same 12 KiB ahead is 8 of them: one
 * thread's bf16 scores over chunks from memory ran 1.17 x faster with 8
 * than with 4 (no faster with 16 or 32), and a bf16 greedy step over
 * 600,000 states took 0.406-0.428 s against 0.426-0.468, at 131,072
 * 0.102-0.110 against 0.106-0.108 (alternating runs, Zen 5). fp32's step
 * at 131,072 ran 7% slower with 8 rows ahead: it keeps 4. */
#ifndef PF16_ROWS
#define PF16_ROWS 8
#endif

/* --compute bf16: the scores with AVX512-BF16's dot product (each lane
 * adds two exact products per instruction, 32 bf16 of a row at a time),
 * the accumulation in fp32 with E widened from bf16 as it is loaded (half
 * the bytes of fp32 states; the multiply-adds as in fp32). */
#define BF16K __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define TILE16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) \
	static inline

TILE16 __m512i load32(const uint16_t *p, __mmask32 m, int masked)
{
	return masked ? _mm512_maskz_loadu_epi16(m, p) : _mm512_loadu_si512((const void *)p);
}

TILE16 void scores16_tile(int nr, int ne, int pf, int64_t d, const uint16_t *Q, int64_t ldq,
                          const uint16_t *E, int64_t lde, float *S, int64_t lds, int add)
{
	__m512 a[6][4];
	__m512i e[4], q;
	int64_t k = 0;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			a[r][x] = _mm512_setzero_ps();
	for (; k < d; k += 32) {
		int masked = d - k < 32;
		__mmask32 m = masked ? (__mmask32)((1ull << (d - k)) - 1) : (__mmask32)~0u;

		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			if (x < ne) {
				if (PF16_ROWS && pf)
					_mm_prefetch((const char *)(E + (PF16_ROWS + x) * lde + k), _MM_HINT_T0);
				e[x] = load32(E + x * lde + k, m, masked);
			}
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				q = load32(Q + r * ldq + k, m, masked);
				KEEP(q);
				_Pragma("GCC unroll 4")
				for (int x = 0; x < 4; x++)
					if (x < ne)
						a[r][x] = _mm512_dpbf16_ps(a[r][x], (__m512bh)q, (__m512bh)e[x]);
			}
	}
	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr)
			store_sums(S + r * lds, ne, a[r], add);
}

/* 12 query rows against ne (<= 2) encoder rows, 24 accumulators: the
 * first row tile is the one that reads a chunk from memory, and with all
 * 12 rows of a greedy step (12 heads) it does all their work on each row
 * of E as it arrives instead of half, the other half then rereading the
 * chunk from L2. The 12 rows come packed by blocks of 32 columns, Qp
 * [d / 32][12][32] (zeros past d), so that one pointer reaches them all
 * (with 12 row pointers the compiler spilled them: 240-260 GFLOP/s on a
 * chunk in cache against the tiles of 6's 420; packed, 410-420). On
 * 131,072 states (Zen 5): xattn_fw_bf16 at R = 12 on one thread 15.7 ms
 * against 17.5, on two 9.05 against 9.38 (means of 8 alternating runs),
 * lc-decode's bf16 greedy step 0.112 s against 0.118. fp32's rows take
 * twice the bytes: the same tile there, packed, ran 17.9 ms against
 * 16.5 (two threads), so fp32 keeps its tiles of 6. Each sum is reduced
 * as store_sums reduces it (hsum4x512 treats its four vectors alike), so
 * the scores are the same bits (test_xkern checks). */
#define QP_MAXD 2048

TILE16 void scores16_tile12(int ne, int pf, int64_t d, const uint16_t *Qp, const uint16_t *E,
                            int64_t lde, float *S, int64_t lds, int add)
{
	__m512 a[12][2];
	__m512i e[2], q;
	int64_t k = 0;

	_Pragma("GCC unroll 12")
	for (int r = 0; r < 12; r++)
		a[r][0] = a[r][1] = _mm512_setzero_ps();
	for (; k < d; k += 32, Qp += 12 * 32) {
		int masked = d - k < 32;
		__mmask32 m = masked ? (__mmask32)((1ull << (d - k)) - 1) : (__mmask32)~0u;

		_Pragma("GCC unroll 2")
		for (int x = 0; x < 2; x++)
			if (x < ne) {
				if (PF16_ROWS && pf)
					_mm_prefetch((const char *)(E + (PF16_ROWS + x) * lde + k), _MM_HINT_T0);
				e[x] = load32(E + x * lde + k, m, masked);
			}
		_Pragma("GCC unroll 12")
		for (int r = 0; r < 12; r++) {
			q = _mm512_loadu_si512((const void *)(Qp + 32 * r));
			_Pragma("GCC unroll 2")
			for (int x = 0; x < 2; x++)
				if (x < ne)
					a[r][x] = _mm512_dpbf16_ps(a[r][x], (__m512bh)q, (__m512bh)e[x]);
		}
	}
	_Pragma("GCC unroll 3")
	for (int r = 0; r < 12; r += 4)
		_Pragma("GCC unroll 2")
		for (int x = 0; x < 2; x++)
			if (x < ne) {
				float t[4];

				_mm_storeu_ps(t, hsum4x512(a[r][x], a[r + 1][x], a[r + 2][x], a[r + 3][x]));
				for (int y = 0; y < 4; y++)
					S[(r + y) * lds + x] = add ? S[(r + y) * lds + x] + t[y] : t[y];
			}
}

/* Qp [d / 32][12][32] from rows Q [12, d] (ldq apart), zeros past d */
TILE16 void pack12(int64_t d, const uint16_t *Q, int64_t ldq, uint16_t *Qp)
{
	for (int64_t k = 0; k < d; k += 32) {
		int masked = d - k < 32;
		__mmask32 m = masked ? (__mmask32)((1ull << (d - k)) - 1) : (__mmask32)~0u;

		for (int r = 0; r < 12; r++, Qp += 32)
			_mm512_storeu_si512((void *)Qp, load32(Q + r * ldq + k, m, masked));
	}
}

#define SCORES16_ROWS(nr) SCORES_BY4(scores16_tile, nr)

BF16K static void scores16_avx512(int64_t R, int64_t c, int64_t d, const uint16_t *Q,
                                  int64_t ldq, const uint16_t *E, int64_t lde, float *S,
                                  int64_t lds, int add)
{
	int64_t r = 0, j;

	/* blocks of 12 rows (4 beams' 48 rows: 25.6 ms against 26.4 in tiles
	 * of 6), the rest in tiles of 6 */
	for (; r + 12 <= R && d <= QP_MAXD; r += 12) {
		uint16_t Qp[12 * QP_MAXD];
		float *Sr = S + r * lds;

		pack12(d, Q + r * ldq, ldq, Qp);
		for (j = 0; j + 2 <= c; j += 2)
			scores16_tile12(2, !r, d, Qp, E + j * lde, lde, Sr + j, lds, add);
		if (j < c)
			scores16_tile12(1, !r, d, Qp, E + j * lde, lde, Sr + j, lds, add);
	}
	BY_SIX(SCORES16_ROWS);
}

/* The accumulation with AVX512-BF16's dot product too: it multiplies
 * pairs along j, so two rows of E are interleaved as they are loaded
 * (unpacking 16-bit words: lane i of the low result holds columns
 * 8 (i / 4) + i % 4 of rows j and j + 1, of the high result the same
 * columns + 4) and each lane adds P[r, j] E[j, k] + P[r, j + 1]
 * E[j + 1, k] per instruction, twice the multiply-adds of fp32's. C is
 * held in that column order over all c rows: permuted in at the start and
 * back at the end. nr (<= 6) rows of C by ng (1 or 2) groups of 32
 * columns, the last masked to t (1..32) columns. */
TILE16 void accum16_tile(int nr, int ng, int64_t t, int64_t c, const uint16_t *P, int64_t ldp,
                         const uint16_t *E, int64_t lde, float *C, int64_t ldc)
{
	/* C's columns 0..15 and 16..31 from (lo, hi) lanes, and back */
	const __m512i in0 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
	const __m512i in1 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
	const __m512i out0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
	const __m512i out1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27,
	                                       12, 13, 14, 15, 28, 29, 30, 31);
	__mmask32 m = t < 32 ? (__mmask32)((1ull << t) - 1) : (__mmask32)~0u;
	__mmask16 m0 = (__mmask16)m, m1 = (__mmask16)(m >> 16);
	__m512 a[6][4];
	__m512i e[4], p;
	int64_t j;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr)
			_Pragma("GCC unroll 2")
			for (int g = 0; g < 2; g++)
				if (g < ng) {
					const float *cr = C + r * ldc + 32 * g;
					__m512 c0 = g == ng - 1 ? _mm512_maskz_loadu_ps(m0, cr) : _mm512_loadu_ps(cr);
					__m512 c1 = g == ng - 1 ? _mm512_maskz_loadu_ps(m1, cr + 16)
					                        : _mm512_loadu_ps(cr + 16);
					a[r][2 * g] = _mm512_permutex2var_ps(c0, in0, c1);
					a[r][2 * g + 1] = _mm512_permutex2var_ps(c0, in1, c1);
				}
	for (j = 0; j < c; j += 2) {
		const uint16_t *ej = E + j * lde;
		int two = j + 1 < c;

		_Pragma("GCC unroll 2")
		for (int g = 0; g < 2; g++)
			if (g < ng) {
				__mmask32 mg = g == ng - 1 ? m : (__mmask32)~0u;
				__m512i w0 = _mm512_maskz_loadu_epi16(mg, ej + 32 * g);
				__m512i w1 = two ? _mm512_maskz_loadu_epi16(mg, ej + lde + 32 * g)
				                 : _mm512_setzero_si512();
				e[2 * g] = _mm512_unpacklo_epi16(w0, w1);
				e[2 * g + 1] = _mm512_unpackhi_epi16(w0, w1);
			}
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				uint32_t pair;

				if (two)
					memcpy(&pair, P + r * ldp + j, sizeof pair);
				else
					pair = P[r * ldp + j];   /* the last row alone: its pair is 0 */
				p = _mm512_set1_epi32((int)pair);
				_Pragma("GCC unroll 4")
				for (int x = 0; x < 4; x++)
					if (x / 2 < ng)
						a[r][x] = _mm512_dpbf16_ps(a[r][x], (__m512bh)p, (__m512bh)e[x]);
			}
	}
	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr)
			_Pragma("GCC unroll 2")
			for (int g = 0; g < 2; g++)
				if (g < ng) {
					float *cr = C + r * ldc + 32 * g;
					__m512 lo = a[r][2 * g], hi = a[r][2 * g + 1];
					__m512 c0 = _mm512_permutex2var_ps(lo, out0, hi);
					__m512 c1 = _mm512_permutex2var_ps(lo, out1, hi);

					if (g == ng - 1) {
						_mm512_mask_storeu_ps(cr, m0, c0);
						_mm512_mask_storeu_ps(cr + 16, m1, c1);
					} else {
						_mm512_storeu_ps(cr, c0);
						_mm512_storeu_ps(cr + 16, c1);
					}
				}
}

/* No prefetch of the next chunk here, unlike fp32's: with bf16 states
 * the scores keep up with memory better (half the bytes per flop), and
 * the prefetches cost more than they saved: xattn_fw_bf16 at R = 12 over
 * 131,072 states with 2 threads ran 8.4-9.1 ms without them against
 * 9.3-9.5 ms with the first row tile's (Zen 5, alternating runs), and
 * spread over the row tiles as fp32's are, 7.89 ms against 7.94 (medians
 * of 8): nothing gained. */
#define ACCUM16_ROWS(nr)                                                                 \
	do {                                                                             \
		const uint16_t *Pr = P + r * ldp, *Ek = E + k0;                          \
		float *Cr = C + r * ldc + k0;                                            \
		if (nb > 32)                                                             \
			accum16_tile(nr, 2, nb - 32, c, Pr, ldp, Ek, lde, Cr, ldc);      \
		else                                                                     \
			accum16_tile(nr, 1, nb, c, Pr, ldp, Ek, lde, Cr, ldc);           \
	} while (0)

BF16K static void accum16_avx512(int64_t R, int64_t c, int64_t n, const uint16_t *P,
                                 int64_t ldp, const uint16_t *E, int64_t lde, float *C,
                                 int64_t ldc)
{
	BY_STRIPS(64, ACCUM16_ROWS);   /* 128 bytes of each row of E */
}

static int have_bf16(void)
{
	return cmp_xk_allowed() == 1 && cpu_avx512_bf16();
}
#else
static int have_bf16(void)
{
	return 0;
}
#endif

int cmp_xk_gemm_bf16(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc)
{
	int add = beta == 1.0f;
	const uint16_t *B16;
	uint16_t *A16;

	if (ta != CMP_N || tb != CMP_T || M < 1 || M > XK_GEMM_ROWS || N < 1 || K < 1 ||
	    alpha != 1.0f || !(add || beta == 0.0f) || !have_bf16() ||
	    !(B16 = cmp_bf16_constant(B, (N - 1) * ldb + K)))
		return -1;
	if (!(A16 = malloc((size_t)(M * K) * sizeof *A16)))
		return -1;
	cmp_bf16_pack(A, M, K, lda, A16, K);
#if defined(__x86_64__) && defined(__GNUC__)
	scores16_avx512(M, N, K, A16, K, B16, ldb, C, ldc, add);
#else
	(void)C, (void)ldc;
#endif
	free(A16);
	return 0;
}

void cmp_xk_scores_bf16(int64_t R, int64_t c, int64_t d, const uint16_t *Q, int64_t ldq,
                        const uint16_t *E, int64_t lde, float *S, int64_t lds)
{
	if (R <= 0 || c <= 0)
		return;
#if defined(__x86_64__) && defined(__GNUC__)
	if (have_bf16()) {
		scores16_avx512(R, c, d, Q, ldq, E, lde, S, lds, 0);
		return;
	}
#endif
	scores16_c(R, c, d, Q, ldq, E, lde, S, lds);
}

void cmp_xk_accum_bf16(int64_t R, int64_t c, int64_t n, const uint16_t *P, int64_t ldp,
                       const uint16_t *E, int64_t lde, float *C, int64_t ldc)
{
	if (R <= 0 || c <= 0 || n <= 0)
		return;
#if defined(__x86_64__) && defined(__GNUC__)
	if (have_bf16()) {
		accum16_avx512(R, c, n, P, ldp, E, lde, C, ldc);
		return;
	}
#endif
	accum16_c(R, c, n, P, ldp, E, lde, C, ldc);
}
