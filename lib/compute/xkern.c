/*
 * xkern.c: the two skinny products of cross-attention without a cache
 * (ops/xattn.c), written for the shapes where a general GEMM is far from
 * the machine's peak: a few dozen query rows R against a chunk of c
 * encoder rows of width d (12 x 256 x 768 for greedy LOCOST). OpenBLAS
 * reaches about half of one core's fp32 peak there (packing and edge
 * handling dominate); these register tiles reach 70-90% on a chunk in
 * cache, 60-65% streaming the states from memory (bench/xkern.c).
 *
 * Both have an AVX-512 path and an AVX2 + FMA path, chosen at run time,
 * and a plain C path with the AVX2 path's summation order (it differs
 * only by the rounding of the fused multiply-adds). AVX-512 measured 1.4x
 * AVX2 on xattn_fw at 131K states on Zen 5 (bench/xkern.sh, paths 1 and
 * 2). See compute.h for the contracts.
 *
 * The same tiles serve the seam's products of few rows (cmp_xk_gemm,
 * cmp_xk_gemm_bf16: a decoder's projections, each weight read once for
 * all rows), where oneDNN streamed the weights at about half the speed.
 */
#include "compute/compute.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compute/gemm.h"

#include "base/cpu.h"

/* The summation order the two paths share.
 *
 * scores: lane l (0..7) of a row pair's dot product sums the products of
 * k = l, l + 8, l + 16, ... in increasing k; the eight lanes are then
 * reduced as ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
 *
 * accumulate: C[r, n] += P[r, 0] E[0, n], then P[r, 1] E[1, n], ... in
 * increasing j, one multiply-add at a time. */

static float hsum8(const float v[8])
{
	float s4[4], s2[2];

	for (int i = 0; i < 4; i++)
		s4[i] = v[i] + v[i + 4];
	for (int i = 0; i < 2; i++)
		s2[i] = s4[i] + s4[i + 2];
	return s2[0] + s2[1];
}

static void scores_c(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                     const float *E, int64_t lde, float *S, int64_t lds)
{
	for (int64_t r = 0; r < R; r++)
		for (int64_t j = 0; j < c; j++) {
			const float *q = Q + r * ldq, *e = E + j * lde;
			float v[8] = {0};

			for (int64_t k = 0; k < d; k++)
				v[k & 7] += q[k] * e[k];
			S[r * lds + j] = hsum8(v);
		}
}

static void accum_c(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                    const float *E, int64_t lde, float *C, int64_t ldc)
{
	for (int64_t r = 0; r < R; r++) {
		float *cr = C + r * ldc;

		for (int64_t j = 0; j < c; j++) {
			float p = P[r * ldp + j];
			const float *e = E + j * lde;

			for (int64_t k = 0; k < n; k++)
				cr[k] += p * e[k];
		}
	}
}

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
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))
#define TILE __attribute__((target("avx2,fma"), always_inline)) static inline

static atomic_int allowed = 1;

int cmp_xk_simd(int on)
{
	if (on >= 0)
		atomic_store_explicit(&allowed, on, memory_order_relaxed);
	return atomic_load_explicit(&allowed, memory_order_relaxed);
}

static int have_avx2(void)
{
	return atomic_load_explicit(&allowed, memory_order_relaxed) && cpu_avx2_fma();
}

static int have_avx512(void)
{
	return atomic_load_explicit(&allowed, memory_order_relaxed) == 1 && cpu_avx512f();
}

/* The scores' first row tile (pf) prefetches the encoder rows PF_ROWS
 * ahead of those it works on (12 KiB at d = 768): it reads a chunk from
 * memory, and the hardware prefetcher alone leaves it waiting. 0 turns
 * it off; for fp32, 2..16 measured within the noise of a shared machine,
 * 4 kept (bf16's below).
 * The other row tiles find the chunk in cache: without their prefetches
 * the bf16 scores on a chunk in cache ran 1.22 x faster (R = 12, c = 256,
 * best of 6 runs on Zen 5), the fp32 ones the same. */
#ifndef PF_ROWS
#define PF_ROWS 4
#endif
/* bf16 rows are half as long, so the same 12 KiB ahead is 8 of them: one
 * thread's bf16 scores over chunks from memory ran 1.17 x faster with 8
 * than with 4 (no faster with 16 or 32), and a bf16 greedy step over
 * 600,000 states took 0.406-0.428 s against 0.426-0.468, at 131,072
 * 0.102-0.110 against 0.106-0.108 (alternating runs, Zen 5). fp32's step
 * at 131,072 ran 7% slower with 8 rows ahead: it keeps 4. */
#ifndef PF16_ROWS
#define PF16_ROWS 8
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T1
#endif
/* Holds v in a register: without it, the compiler folds the load of a
 * query vector into both multiply-adds that use it, 14 loads per 12
 * multiply-adds instead of 8, and the loop waits on the load ports. */
#define KEEP(v) __asm__("" : "+x"(v))

/* The next chunk's rows an accumulation brings into L2 as it goes
 * (cmp_xk_accum_ahead): rows j = first, first + step, ... below end, the
 * tile's columns of each (the bytes at p + j ld), as the tile passes row
 * j of E; p NULL: none. */
typedef struct {
	const char *p;
	int64_t ld, first, step, end;
} ahead;

/* Row tile r (of 6 rows) of R: its share of the next chunk's rows, one
 * in every ceil(R / 6) (all tiles together cover them once); none past
 * AHEAD_ROWS rows, where the pass is long enough per byte of E for the
 * hardware's prefetcher (at R = 48, 4 beams, xattn_fw took 53.4 ms with
 * the prefetches against 51.9 without, medians of 8 alternating runs). */
#define AHEAD_ROWS 12
static inline ahead ahead_tile(const void *next, int64_t lde, size_t size, int64_t cn,
                               int64_t R, int64_t r, int64_t k0)
{
	int on = next && R <= AHEAD_ROWS;
	ahead a = { on ? (const char *)next + (size_t)k0 * size : NULL, lde * (int64_t)size, r / 6,
	            (R + 5) / 6, on ? cn : 0 };

	return a;
}

/* A mask loading the first t (0..8) lanes. */
TILE __m256i lanes(int64_t t)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)t), idx);
}

TILE float hsum256(__m256 v)
{
	/* the order of hsum8: (v_i + v_i+4), then (i + i+2), then 0 + 1 */
	__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	__m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
	return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

/* nr (<= 6) query rows against ne (<= 2) encoder rows: 12 accumulators,
 * each vector of E loaded once and used by every query row. With nr and
 * ne constants at the call, the compiler drops the unused ones. */
TILE void scores_tile(int nr, int ne, int pf, int64_t d, const float *Q, int64_t ldq,
                      const float *E, int64_t lde, float *S, int64_t lds, int add)
{
	__m256 a[6][2], e0, e1 = _mm256_setzero_ps(), q;
	int64_t k = 0;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		a[r][0] = a[r][1] = _mm256_setzero_ps();
	for (; k + 8 <= d; k += 8) {
		if (PF_ROWS && pf && !(k & 15)) {
			_mm_prefetch((const char *)(E + PF_ROWS * lde + k), _MM_HINT_T0);
			_mm_prefetch((const char *)(E + (PF_ROWS + 1) * lde + k), _MM_HINT_T0);
		}
		e0 = _mm256_loadu_ps(E + k);
		if (ne > 1)
			e1 = _mm256_loadu_ps(E + lde + k);
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				q = _mm256_loadu_ps(Q + r * ldq + k);
				KEEP(q);
				a[r][0] = _mm256_fmadd_ps(q, e0, a[r][0]);
				if (ne > 1)
					a[r][1] = _mm256_fmadd_ps(q, e1, a[r][1]);
			}
	}
	if (k < d) {
		__m256i m = lanes(d - k);

		e0 = _mm256_maskload_ps(E + k, m);
		if (ne > 1)
			e1 = _mm256_maskload_ps(E + lde + k, m);
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				q = _mm256_maskload_ps(Q + r * ldq + k, m);
				a[r][0] = _mm256_fmadd_ps(q, e0, a[r][0]);
				if (ne > 1)
					a[r][1] = _mm256_fmadd_ps(q, e1, a[r][1]);
			}
	}
	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr) {
			float s0 = hsum256(a[r][0]);

			S[r * lds] = add ? S[r * lds] + s0 : s0;
			if (ne > 1) {
				float s1 = hsum256(a[r][1]);

				S[r * lds + 1] = add ? S[r * lds + 1] + s1 : s1;
			}
		}
}

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

#define SCORES_ROWS(nr)                                                                  \
	do {                                                                             \
		__typeof__(Q) Qr = Q + r * ldq;                                          \
		float *Sr = S + r * lds;                                                 \
		for (j = 0; j + 2 <= c; j += 2)                                          \
			scores_tile(nr, 2, !r, d, Qr, ldq, E + j * lde, lde, Sr + j, lds, add); \
		if (j < c)                                                               \
			scores_tile(nr, 1, !r, d, Qr, ldq, E + j * lde, lde, Sr + j, lds, add); \
	} while (0)

AVX2 static void scores_avx2(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                             const float *E, int64_t lde, float *S, int64_t lds, int add)
{
	int64_t r = 0, j;

	BY_SIX(SCORES_ROWS);
}

/* nr (<= 6) rows of C by nv (1 or 2) vectors of columns, the last one
 * masked to t lanes when t < 8: C held in registers over all c rows of E,
 * each P[r, j] broadcast once per row. */
TILE void accum_tile(int nr, int nv, int64_t t, int64_t c, const float *P, int64_t ldp,
                     const float *E, int64_t lde, float *C, int64_t ldc, ahead pf)
{
	int64_t jp = pf.first;
	__m256 a[6][2], e0, e1 = _mm256_setzero_ps(), p;
	__m256i m = lanes(t);
	int last_masked = t < 8;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr) {
			if (nv > 1) {
				a[r][0] = _mm256_loadu_ps(C + r * ldc);
				a[r][1] = last_masked ? _mm256_maskload_ps(C + r * ldc + 8, m)
				                      : _mm256_loadu_ps(C + r * ldc + 8);
			} else {
				a[r][0] = last_masked ? _mm256_maskload_ps(C + r * ldc, m)
				                      : _mm256_loadu_ps(C + r * ldc);
			}
		}
	for (int64_t j = 0; j < c; j++) {
		const float *e = E + j * lde;

		if (j == jp && j < pf.end) {
			_mm_prefetch(pf.p + j * pf.ld, PF_HINT);
			jp += pf.step;
		}
		if (nv > 1) {
			e0 = _mm256_loadu_ps(e);
			e1 = last_masked ? _mm256_maskload_ps(e + 8, m) : _mm256_loadu_ps(e + 8);
		} else {
			e0 = last_masked ? _mm256_maskload_ps(e, m) : _mm256_loadu_ps(e);
		}
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				p = _mm256_broadcast_ss(P + r * ldp + j);
				a[r][0] = _mm256_fmadd_ps(p, e0, a[r][0]);
				if (nv > 1)
					a[r][1] = _mm256_fmadd_ps(p, e1, a[r][1]);
			}
	}
	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr) {
			if (nv > 1) {
				_mm256_storeu_ps(C + r * ldc, a[r][0]);
				if (last_masked)
					_mm256_maskstore_ps(C + r * ldc + 8, m, a[r][1]);
				else
					_mm256_storeu_ps(C + r * ldc + 8, a[r][1]);
			} else if (last_masked) {
				_mm256_maskstore_ps(C + r * ldc, m, a[r][0]);
			} else {
				_mm256_storeu_ps(C + r * ldc, a[r][0]);
			}
		}
}

/* Rows r.. of a column block [k0, k0 + nb) with nr-row tiles; each row
 * tile brings its share of the next chunk's rows (the same columns) into
 * L2 (ahead_tile), so that the whole next chunk comes from memory while
 * this one is accumulated, instead of the scores of the next chunk
 * waiting on it: with few query rows the scores need a byte of E per 6
 * flops, more than the hardware prefetcher keeps up with. Spread over all
 * the row tiles: when the first tile alone asked for the whole chunk, the
 * reads came in a quarter of the chunk's time, more than the memory gives
 * two threads at once. xattn_fw at R = 12 over 131,072 states, 2 threads
 * (Zen 5), medians of 8 alternating runs: AVX-512 13.9 ms against 15.0,
 * AVX2 25.2 against 28.8. Asking for half of the next chunk during the
 * scores instead ran slower (16.2-16.9 ms against 14.7-15.4): the chunk
 * and a half no longer fit in L2 beside each other. */
#define ACCUM_ROWS(nr)                                                                   \
	do {                                                                             \
		const float *Pr = P + r * ldp, *Ek = E + k0;                             \
		float *Cr = C + r * ldc + k0;                                            \
		int64_t k = 0;                                                           \
		for (; k + 16 <= nb; k += 16)                                            \
			accum_tile(nr, 2, 8, c, Pr, ldp, Ek + k, lde, Cr + k, ldc,       \
			           ahead_tile(next, lde, sizeof *E, cn, R, r, k0 + k));  \
		if (nb - k > 8)                                                          \
			accum_tile(nr, 2, nb - k - 8, c, Pr, ldp, Ek + k, lde, Cr + k, ldc, \
			           ahead_tile(next, lde, sizeof *E, cn, R, r, k0 + k));  \
		else if (nb - k > 0)                                                     \
			accum_tile(nr, 1, nb - k, c, Pr, ldp, Ek + k, lde, Cr + k, ldc,  \
			           ahead_tile(next, lde, sizeof *E, cn, R, r, k0 + k));  \
	} while (0)

AVX2 static void accum_avx2(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                            const float *E, int64_t lde, float *C, int64_t ldc,
                            const float *next, int64_t cn)
{
	/* a strip of E (c rows of 64 bytes, 16 KiB for c = 256) stays in L1
	 * while every row tile passes over it */
	BY_STRIPS(16, ACCUM_ROWS);
}

/* The same tiles 16 lanes wide, where the processor has AVX-512: twice
 * the multiply-adds per instruction (Zen 5 and Intel's server cores run
 * them at full width). The scores reduce their 16 lanes four rows at
 * a time (hsum4x512). */
#define AVX512 __attribute__((target("avx512f")))
#define TILE512 __attribute__((target("avx512f"), always_inline)) static inline

TILE512 __mmask16 lanes16(int64_t t)
{
	return (__mmask16)((1u << t) - 1u);
}

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

/* nr (<= 6) query rows against ne (<= 4) encoder rows: up to 24 of the
 * 32 registers accumulate, 10 loads per 24 multiply-adds. */
TILE512 void scores_tile512(int nr, int ne, int pf, int64_t d, const float *Q, int64_t ldq,
                            const float *E, int64_t lde, float *S, int64_t lds, int add)
{
	__m512 a[6][4], e[4], q;
	int64_t k = 0;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			a[r][x] = _mm512_setzero_ps();
	for (; k + 16 <= d; k += 16) {
		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			if (x < ne) {
				if (PF_ROWS && pf)
					_mm_prefetch((const char *)(E + (PF_ROWS + x) * lde + k), _MM_HINT_T0);
				e[x] = _mm512_loadu_ps(E + x * lde + k);
			}
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				q = _mm512_loadu_ps(Q + r * ldq + k);
				KEEP(q);
				_Pragma("GCC unroll 4")
				for (int x = 0; x < 4; x++)
					if (x < ne)
						a[r][x] = _mm512_fmadd_ps(q, e[x], a[r][x]);
			}
	}
	if (k < d) {
		__mmask16 m = lanes16(d - k);

		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			if (x < ne)
				e[x] = _mm512_maskz_loadu_ps(m, E + x * lde + k);
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				q = _mm512_maskz_loadu_ps(m, Q + r * ldq + k);
				_Pragma("GCC unroll 4")
				for (int x = 0; x < 4; x++)
					if (x < ne)
						a[r][x] = _mm512_fmadd_ps(q, e[x], a[r][x]);
			}
	}
	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr)
			store_sums(S + r * lds, ne, a[r], add);
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
#define SCORES_ROWS512(nr) SCORES_BY4(scores_tile512, nr)

AVX512 static void scores_avx512(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                                 const float *E, int64_t lde, float *S, int64_t lds, int add)
{
	int64_t r = 0, j;

	BY_SIX(SCORES_ROWS512);
}

/* nr (<= 6) rows of C by nv (1 to 4) vectors of 16 columns, the last one
 * masked to t lanes when t < 16; as accum_tile, with up to 24
 * accumulators: 4 loads and 6 broadcasts per 24 multiply-adds. */
TILE512 void accum_tile512(int nr, int nv, int64_t t, int64_t c, const float *P, int64_t ldp,
                           const float *E, int64_t lde, float *C, int64_t ldc, ahead pf)
{
	__m512 a[6][4], e[4], p;
	int64_t jp = pf.first;
	__mmask16 m = t < 16 ? lanes16(t) : (__mmask16)0xffff;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr)
			_Pragma("GCC unroll 4")
			for (int x = 0; x < 4; x++)
				if (x < nv)
					a[r][x] = x == nv - 1 ? _mm512_maskz_loadu_ps(m, C + r * ldc + 16 * x)
					                      : _mm512_loadu_ps(C + r * ldc + 16 * x);
	for (int64_t j = 0; j < c; j++) {
		const float *ej = E + j * lde;
		int now = j == jp && j < pf.end;

		jp += now ? pf.step : 0;
		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			if (x < nv) {
				if (now)
					_mm_prefetch(pf.p + j * pf.ld + 64 * x, PF_HINT);
				e[x] = x == nv - 1 ? _mm512_maskz_loadu_ps(m, ej + 16 * x)
				                   : _mm512_loadu_ps(ej + 16 * x);
			}
		_Pragma("GCC unroll 6")
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				p = _mm512_set1_ps(P[r * ldp + j]);
				_Pragma("GCC unroll 4")
				for (int x = 0; x < 4; x++)
					if (x < nv)
						a[r][x] = _mm512_fmadd_ps(p, e[x], a[r][x]);
			}
	}
	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		if (r < nr)
			_Pragma("GCC unroll 4")
			for (int x = 0; x < 4; x++)
				if (x < nv) {
					if (x == nv - 1)
						_mm512_mask_storeu_ps(C + r * ldc + 16 * x, m, a[r][x]);
					else
						_mm512_storeu_ps(C + r * ldc + 16 * x, a[r][x]);
				}
}

#define ACCUM_ROWS512(nr)                                                                \
	do {                                                                             \
		const float *Pr = P + r * ldp, *Ek = E + k0;                             \
		float *Cr = C + r * ldc + k0;                                            \
		ahead pf = ahead_tile(next, lde, sizeof *E, cn, R, r, k0);               \
		switch ((nb + 15) / 16) {                                                \
		case 4: accum_tile512(nr, 4, nb - 48, c, Pr, ldp, Ek, lde, Cr, ldc, pf); break; \
		case 3: accum_tile512(nr, 3, nb - 32, c, Pr, ldp, Ek, lde, Cr, ldc, pf); break; \
		case 2: accum_tile512(nr, 2, nb - 16, c, Pr, ldp, Ek, lde, Cr, ldc, pf); break; \
		default: accum_tile512(nr, 1, nb, c, Pr, ldp, Ek, lde, Cr, ldc, pf); break;     \
		}                                                                        \
	} while (0)

AVX512 static void accum_avx512(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                                const float *E, int64_t lde, float *C, int64_t ldc,
                                const float *next, int64_t cn)
{
	BY_STRIPS(64, ACCUM_ROWS512);  /* 64 KiB of E for c = 256, in L2 */
}

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
	return atomic_load_explicit(&allowed, memory_order_relaxed) == 1 && cpu_avx512_bf16();
}
#else
int cmp_xk_simd(int on)
{
	(void)on;
	return 0;
}

static int have_avx2(void)
{
	return 0;
}

static int have_avx512(void)
{
	return 0;
}

static int have_bf16(void)
{
	return 0;
}
#endif

void cmp_xk_scores(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                   const float *E, int64_t lde, float *S, int64_t lds)
{
	if (R <= 0 || c <= 0)
		return;
#if defined(__x86_64__) && defined(__GNUC__)
	if (have_avx512()) {
		scores_avx512(R, c, d, Q, ldq, E, lde, S, lds, 0);
		return;
	}
	if (have_avx2()) {
		scores_avx2(R, c, d, Q, ldq, E, lde, S, lds, 0);
		return;
	}
#endif
	scores_c(R, c, d, Q, ldq, E, lde, S, lds);
}

void cmp_xk_accum_ahead(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                        const float *E, int64_t lde, float *C, int64_t ldc, const float *next,
                        int64_t cn)
{
	if (R <= 0 || c <= 0 || n <= 0)
		return;
#if defined(__x86_64__) && defined(__GNUC__)
	if (have_avx512()) {
		accum_avx512(R, c, n, P, ldp, E, lde, C, ldc, next, cn);
		return;
	}
	if (have_avx2()) {
		accum_avx2(R, c, n, P, ldp, E, lde, C, ldc, next, cn);
		return;
	}
#else
	(void)next, (void)cn;
#endif
	accum_c(R, c, n, P, ldp, E, lde, C, ldc);
}

void cmp_xk_accum(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                  const float *E, int64_t lde, float *C, int64_t ldc)
{
	cmp_xk_accum_ahead(R, c, n, P, ldp, E, lde, C, ldc, NULL, 0);
}

int cmp_xk_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                float beta, float *C, int64_t ldc)
{
	int add = beta == 1.0f;

	if (ta != CMP_N || M < 1 || M > XK_GEMM_ROWS || N < 1 || K < 1 || alpha != 1.0f ||
	    !(add || beta == 0.0f))
		return -1;
#if defined(__x86_64__) && defined(__GNUC__)
	if (tb == CMP_T && have_avx512()) {
		scores_avx512(M, N, K, A, lda, B, ldb, C, ldc, add);
		return 0;
	}
	if (tb == CMP_T && have_avx2()) {
		scores_avx2(M, N, K, A, lda, B, ldb, C, ldc, add);
		return 0;
	}
	if (tb == CMP_N && have_avx2()) {  /* have_avx512 implies it (cmp_xk_simd) */
		if (!add)       /* beta 0: C is not read, as in BLAS */
			for (int64_t r = 0; r < M; r++)
				memset(C + r * ldc, 0, (size_t)N * sizeof *C);
		cmp_xk_accum(M, K, N, A, lda, B, ldb, C, ldc);
		return 0;
	}
#else
	(void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc, (void)tb;
#endif
	return -1;
}

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
