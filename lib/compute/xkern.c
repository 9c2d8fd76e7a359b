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
 * 2). See compute.h for the contracts; the bf16 forms are in xkern16.c,
 * what both files share in xkern_int.h.
 *
 * The same tiles serve the seam's products of few rows (cmp_xk_gemm: a
 * decoder's projections, each weight read once for all rows), where
 * oneDNN streamed the weights at about half the speed.
 */
#include "compute/compute.h"

#include <stdatomic.h>
#include <string.h>

#include "base/cpu.h"
#include "base/dtype.h"
#include "compute/xkern_int.h"

/* Element i of E: float32, or with e16 bf16 widened (exactly). */
static inline float elem(const void *E, int64_t i, int e16)
{
	return e16 ? lc_bf16_to_f32(((const uint16_t *)E)[i]) : ((const float *)E)[i];
}

static void scores_c(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                     const void *E, int64_t lde, float *S, int64_t lds, int e16)
{
	for (int64_t r = 0; r < R; r++)
		for (int64_t j = 0; j < c; j++) {
			const float *q = Q + r * ldq;
			float v[8] = {0};

			for (int64_t k = 0; k < d; k++)
				v[k & 7] += q[k] * elem(E, j * lde + k, e16);
			S[r * lds + j] = hsum8(v);
		}
}

static void accum_c(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                    const void *E, int64_t lde, float *C, int64_t ldc, int e16)
{
	for (int64_t r = 0; r < R; r++) {
		float *cr = C + r * ldc;

		for (int64_t j = 0; j < c; j++) {
			float p = P[r * ldp + j];

			for (int64_t k = 0; k < n; k++)
				cr[k] += p * elem(E, j * lde + k, e16);
		}
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
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

int cmp_xk_allowed(void)
{
	return atomic_load_explicit(&allowed, memory_order_relaxed);
}

/* The scores' first row tile (pf) prefetches the encoder rows PF_ROWS
 * ahead of those it works on (12 KiB at d = 768): it reads a chunk from
 * memory, and the hardware prefetcher alone leaves it waiting. 0 turns
 * it off; for fp32, 2..16 measured within the noise of a shared machine,
 * 4 kept (bf16's in xkern16.c).
 * The other row tiles find the chunk in cache: without their prefetches
 * the bf16 scores on a chunk in cache ran 1.22 x faster (R = 12, c = 256,
 * best of 6 runs on Zen 5), the fp32 ones the same. */
#ifndef PF_ROWS
#define PF_ROWS 4
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T1
#endif

/* What of the next chunk an accumulation brings into L2 as it goes
 * (cmp_xk_accum_ahead): as the tile passes row j = first, first + step,
 * ... below end of E, the bytes at q, q + ld, q + 2 ld, ... one after the
 * other, from p on: there, `lines` consecutive cache lines (the AVX-512
 * tiles: one a vector of columns); p NULL: none. */
typedef struct {
	const char *p;
	int64_t ld, first, step, end;
	int lines;
} ahead;

/* Row tile r (of 6 rows) of R: its share of the next chunk's rows, one
 * in every ceil(R / 6) (all tiles together cover them once), the tile's
 * columns of each; none past AHEAD_ROWS rows, where the pass is long
 * enough per byte of E for the hardware's prefetcher (at R = 48, 4 beams,
 * xattn_fw took 53.4 ms with the prefetches against 51.9 without, medians
 * of 8 alternating runs). */
#define AHEAD_ROWS 12
static inline ahead ahead_tile(const void *next, int64_t lde, size_t size, int64_t cn,
                               int64_t R, int64_t r, int64_t k0)
{
	int on = next && R <= AHEAD_ROWS;
	int64_t ld = lde * (int64_t)size, step = (R + 5) / 6;
	ahead a = { on ? (const char *)next + (size_t)k0 * size + (size_t)(r / 6 * ld) : NULL,
	            ld * step, r / 6, step, on ? cn : 0, 1 };

	return a;
}

/* The same where the next chunk's rows lie end to end (bytes of them),
 * in address order: the accumulation's calls (one a strip and row tile,
 * `calls` of them, this one number idx) each take the next stretch of
 * bytes / calls, spread over their c rows. Row by row and a strip at a
 * time (ahead_tile), every line came from another row 3 KiB on, and the
 * reads of the next chunk took longer than the accumulation that
 * overlaps them; in address order xattn_fw at R = 12, 2 threads, ran
 * 1.10-1.16 x faster (Zen 3: medians of 11 runs alternating in one
 * process, 600,000 states 321 -> 276 ms, 262,144 states 142 -> 129).
 * Asking for a quarter or a half of it during the scores as well ran no
 * faster there (131.4 and 132.9 against 131.0 ms at 262,144). */
static inline ahead ahead_linear(const void *next, int64_t bytes, int64_t R, int64_t c,
                                 int64_t calls, int64_t idx)
{
	ahead a = { NULL, 0, 0, 1, 0, 1 };
	int64_t share = ((bytes + calls - 1) / calls + 63) / 64 * 64, lo = idx * share, nl;

	if (!next || R > AHEAD_ROWS || lo >= bytes)
		return a;
	nl = ((bytes - lo < share ? bytes - lo : share) + 63) / 64;
	a.p = (const char *)next + lo;
	if (nl <= c) {          /* a line every step rows */
		a.step = c / nl;
		a.ld = 64;
		a.end = nl * a.step;
	} else {                /* a chunk much shorter than the next: lines a row */
		a.lines = (int)((nl + c - 1) / c);
		a.ld = 64 * (int64_t)a.lines;
		a.end = (nl + a.lines - 1) / a.lines;
	}
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

/* The AVX2 tiles read E as float32 or, with e16 (a constant at every
 * call, so each is compiled apart), as bf16 held as such and widened
 * exactly as it is loaded (cmp_xk_scores_w16): the same multiply-adds in
 * the same order either way. EL: element i of E. */
#define EL(E, i, e16) ((const char *)(E) + ((int64_t)(i) << ((e16) ? 1 : 2)))

TILE __m256 load8(const char *p, int e16)
{
	if (!e16)
		return _mm256_loadu_ps((const float *)p);
	return _mm256_castsi256_ps(_mm256_slli_epi32(
		_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

/* The first t (< 8) of them, the others zero. */
TILE __m256 load8_first(const char *p, int64_t t, int e16)
{
	uint16_t h[8] = { 0 };

	if (!e16)
		return _mm256_maskload_ps((const float *)p, lanes(t));
	memcpy(h, p, (size_t)t * sizeof *h);
	return load8((const char *)h, 1);
}

/* nr (<= 6) query rows against ne (<= 2) encoder rows: 12 accumulators,
 * each vector of E loaded once and used by every query row. With nr and
 * ne constants at the call, the compiler drops the unused ones. */
TILE void scores_tile(int nr, int ne, int pf, int64_t d, const float *Q, int64_t ldq,
                      const void *E, int64_t lde, float *S, int64_t lds, int add, int e16)
{
	__m256 a[6][2], e0, e1 = _mm256_setzero_ps(), q;
	int64_t k = 0;

	_Pragma("GCC unroll 6")
	for (int r = 0; r < 6; r++)
		a[r][0] = a[r][1] = _mm256_setzero_ps();
	for (; k + 8 <= d; k += 8) {
		/* a cache line each: 16 floats, 32 bf16 */
		if (PF_ROWS && pf && !(k & (e16 ? 31 : 15))) {
			_mm_prefetch(EL(E, PF_ROWS * lde + k, e16), _MM_HINT_T0);
			_mm_prefetch(EL(E, (PF_ROWS + 1) * lde + k, e16), _MM_HINT_T0);
		}
		e0 = load8(EL(E, k, e16), e16);
		if (ne > 1)
			e1 = load8(EL(E, lde + k, e16), e16);
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

		e0 = load8_first(EL(E, k, e16), d - k, e16);
		if (ne > 1)
			e1 = load8_first(EL(E, lde + k, e16), d - k, e16);
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

#define SCORES_ROWS(nr)                                                                  \
	do {                                                                             \
		__typeof__(Q) Qr = Q + r * ldq;                                          \
		float *Sr = S + r * lds;                                                 \
		for (j = 0; j + 2 <= c; j += 2)                                          \
			scores_tile(nr, 2, !r, d, Qr, ldq, EL(E, j * lde, e16), lde, Sr + j, \
			            lds, add, e16);                                      \
		if (j < c)                                                               \
			scores_tile(nr, 1, !r, d, Qr, ldq, EL(E, j * lde, e16), lde, Sr + j, \
			            lds, add, e16);                                      \
	} while (0)

TILE void scores_any(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq, const void *E,
                     int64_t lde, float *S, int64_t lds, int add, int e16)
{
	int64_t r = 0, j;

	BY_SIX(SCORES_ROWS);
}

/* E float32, or with e16 bf16: each form compiled apart */
AVX2 static void scores_avx2(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                             const void *E, int64_t lde, float *S, int64_t lds, int add, int e16)
{
	if (e16)
		scores_any(R, c, d, Q, ldq, E, lde, S, lds, add, 1);
	else
		scores_any(R, c, d, Q, ldq, E, lde, S, lds, add, 0);
}

/* nr (<= 6) rows of C by nv (1 or 2) vectors of columns, the last one
 * masked to t lanes when t < 8: C held in registers over all c rows of E,
 * each P[r, j] broadcast once per row. */
TILE void accum_tile(int nr, int nv, int64_t t, int64_t c, const float *P, int64_t ldp,
                     const void *E, int64_t lde, float *C, int64_t ldc, ahead pf, int e16)
{
	int64_t jp = pf.first;
	const char *q = pf.p;
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
	/* runs of rows between the prefetches (each asked for before its
	 * row), so that the loop over a run tests nothing else; with the test
	 * on every row, and a whole last vector masked or not at run time
	 * (ACCUM_ROWS now passes t = 8 as a constant), the tile on a chunk in
	 * cache ran 1.2-1.3 x slower (one thread, R = 12, c = 256, Zen 3:
	 * 53.1 against 63.3 GFLOP/s, medians 19.9 against 15.9 ms) */
	for (int64_t j = 0, stop; j < c; j = stop) {
		stop = c;
		if (jp < pf.end) {
			if (j == jp) {
				for (int l = 0; l < pf.lines; l++)
					_mm_prefetch(q + 64 * l, PF_HINT);
				q += pf.ld;
				jp += pf.step;
			}
			if (jp < pf.end && jp < stop)
				stop = jp;
		}
		for (int64_t i = j; i < stop; i++) {
			const char *e = EL(E, i * lde, e16);

			if (nv > 1) {
				e0 = load8(e, e16);
				e1 = last_masked ? load8_first(EL(e, 8, e16), t, e16)
				                 : load8(EL(e, 8, e16), e16);
			} else {
				e0 = last_masked ? load8_first(e, t, e16) : load8(e, e16);
			}
			_Pragma("GCC unroll 6")
			for (int r = 0; r < 6; r++)
				if (r < nr) {
					p = _mm256_broadcast_ss(P + r * ldp + i);
					a[r][0] = _mm256_fmadd_ps(p, e0, a[r][0]);
					if (nv > 1)
						a[r][1] = _mm256_fmadd_ps(p, e1, a[r][1]);
				}
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
 * tile brings its share of the next chunk into L2 (ahead_linear where
 * its rows lie end to end, as the folded states do; else ahead_tile, the
 * same columns of its rows), so that the whole next chunk comes from memory while
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
		const float *Pr = P + r * ldp;                                           \
		const char *Ek = EL(E, k0, e16);                                         \
		float *Cr = C + r * ldc + k0;                                            \
		ahead pf = lde == n ? ahead_linear(next, cn * n * esz, R, c, calls,      \
		                                   k0 / 16 * tiles + r / 6)              \
		                    : ahead_tile(next, lde, (size_t)esz, cn, R, r, k0);  \
		if (nb == 16)   /* whole vectors: no mask at all */                       \
			accum_tile(nr, 2, 8, c, Pr, ldp, Ek, lde, Cr, ldc, pf, e16);     \
		else if (nb > 8)                                                         \
			accum_tile(nr, 2, nb - 8, c, Pr, ldp, Ek, lde, Cr, ldc, pf, e16); \
		else                                                                     \
			accum_tile(nr, 1, nb, c, Pr, ldp, Ek, lde, Cr, ldc, pf, e16);    \
	} while (0)

TILE void accum_any(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp, const void *E,
                    int64_t lde, float *C, int64_t ldc, const void *next, int64_t cn, int e16)
{
	int64_t tiles = (R + 5) / 6, calls = (n + 15) / 16 * tiles, esz = e16 ? 2 : 4;

	/* every row tile passes over a strip of E (c rows of 64 bytes) in
	 * turn. Rows 3 KiB apart (d = 768) fall in 4 of L1's 64 sets, so
	 * only 32 lines of a strip stay in L1 and the next tiles find the
	 * rest in L2; strips of 32 rows kept them in L1 but cost more in the
	 * tiles' loads and stores of C (one thread, R = 12, c = 256, chunk
	 * in cache, Zen 3: 47.5 against 57.0 GFLOP/s; 64 rows 56.5). */
	BY_STRIPS(16, ACCUM_ROWS);
}

AVX2 static void accum_avx2(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                            const void *E, int64_t lde, float *C, int64_t ldc,
                            const void *next, int64_t cn, int e16)
{
	if (e16)
		accum_any(R, c, n, P, ldp, E, lde, C, ldc, next, cn, 1);
	else
		accum_any(R, c, n, P, ldp, E, lde, C, ldc, next, cn, 0);
}

/* The same tiles 16 lanes wide, where the processor has AVX-512: twice
 * the multiply-adds per instruction (Zen 5 and Intel's server cores run
 * them at full width). The scores reduce their 16 lanes four rows at
 * a time (hsum4x512). */
TILE512 __mmask16 lanes16(int64_t t)
{
	return (__mmask16)((1u << t) - 1u);
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
	const char *q = pf.p;
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
		const char *qj = q;

		jp += now ? pf.step : 0;
		q += now ? pf.ld : 0;
		_Pragma("GCC unroll 4")
		for (int x = 0; x < 4; x++)
			if (x < nv) {
				if (now)
					_mm_prefetch(qj + 64 * x, PF_HINT);
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

int cmp_xk_allowed(void)
{
	return 0;
}
#endif

/* The processor's path for E in float32, or with e16 in bf16 held as
 * such (AVX2 or plain C: cmp_xk_widens says when that is the float32
 * path too). */
static void scores_path(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                        const void *E, int64_t lde, float *S, int64_t lds, int e16)
{
	if (R <= 0 || c <= 0)
		return;
#if defined(__x86_64__) && defined(__GNUC__)
	if (!e16 && have_avx512()) {
		scores_avx512(R, c, d, Q, ldq, E, lde, S, lds, 0);
		return;
	}
	if (have_avx2()) {
		scores_avx2(R, c, d, Q, ldq, E, lde, S, lds, 0, e16);
		return;
	}
#endif
	scores_c(R, c, d, Q, ldq, E, lde, S, lds, e16);
}

static void accum_path(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                       const void *E, int64_t lde, float *C, int64_t ldc, const void *next,
                       int64_t cn, int e16)
{
	if (R <= 0 || c <= 0 || n <= 0)
		return;
#if defined(__x86_64__) && defined(__GNUC__)
	if (!e16 && have_avx512()) {
		accum_avx512(R, c, n, P, ldp, E, lde, C, ldc, next, cn);
		return;
	}
	if (have_avx2()) {
		accum_avx2(R, c, n, P, ldp, E, lde, C, ldc, next, cn, e16);
		return;
	}
#else
	(void)next, (void)cn;
#endif
	accum_c(R, c, n, P, ldp, E, lde, C, ldc, e16);
}

void cmp_xk_scores(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                   const float *E, int64_t lde, float *S, int64_t lds)
{
	scores_path(R, c, d, Q, ldq, E, lde, S, lds, 0);
}

void cmp_xk_accum_ahead(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                        const float *E, int64_t lde, float *C, int64_t ldc, const float *next,
                        int64_t cn)
{
	accum_path(R, c, n, P, ldp, E, lde, C, ldc, next, cn, 0);
}

void cmp_xk_accum(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                  const float *E, int64_t lde, float *C, int64_t ldc)
{
	accum_path(R, c, n, P, ldp, E, lde, C, ldc, NULL, 0, 0);
}

int cmp_xk_widens(void)
{
	return !have_avx512();
}

void cmp_xk_scores_w16(int64_t R, int64_t c, int64_t d, const float *Q, int64_t ldq,
                       const uint16_t *E, int64_t lde, float *S, int64_t lds)
{
	scores_path(R, c, d, Q, ldq, E, lde, S, lds, 1);
}

void cmp_xk_accum_w16(int64_t R, int64_t c, int64_t n, const float *P, int64_t ldp,
                      const uint16_t *E, int64_t lde, float *C, int64_t ldc,
                      const uint16_t *next, int64_t cn)
{
	accum_path(R, c, n, P, ldp, E, lde, C, ldc, next, cn, 1);
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
		scores_avx2(M, N, K, A, lda, B, ldb, C, ldc, add, 0);
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
