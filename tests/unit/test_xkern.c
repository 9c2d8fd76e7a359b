/*
 * test_xkern: the cross-attention kernels of compute/xkern.c, every path
 * (AVX-512, AVX2 + FMA and plain C, those the processor has), against sums in double on random data over
 * many shapes, with strides wider than the rows and sentinels around
 * every output to catch a write out of place.
 *
 * The bound is the standard one for recursive summation in float
 * (Higham, Accuracy and Stability of Numerical Algorithms, 3.1): a sum
 * of products reached through at most n roundings in a chain is within
 * gamma_n = n u / (1 - n u) of the exact value, relative to the sum of
 * the terms' magnitudes (u = 2^-24). scores: each of W lanes (8, or 16
 * with AVX-512) adds ceil(d / W) products (one more rounding each
 * without FMA), then log2 W additions reduce the lanes:
 * n = 2 ceil(d / W) + log2 W. accumulate: C plus c
 * products added one after the other: n = 2 c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/dtype.h"
#include "compute/compute.h"
#include "ops/xattn.h"
#include "t.h"

#define SENT 12345.0f

/* 1: the bf16 kernels (cmp_xk_*_bf16), on operands rounded to bf16 (P
 * too); the reference takes the rounded values. */
static int bf16mode;

/* x rounded to bf16 in place, and its bf16 bits (NULL: out of memory) */
static uint16_t *to16(float *x, int64_t n)
{
	uint16_t *h = malloc((size_t)n * sizeof *h);

	for (int64_t i = 0; h && i < n; i++) {
		h[i] = lc_f32_to_bf16(x[i]);
		x[i] = lc_bf16_to_f32(h[i]);
	}
	return h;
}

static double gamma_n(int64_t n)
{
	double u = ldexp(1.0, -24);
	return (double)n * u / (1.0 - (double)n * u);
}

static float *randm(int64_t rows, int64_t ld, double scale)
{
	float *p = malloc((size_t)(rows * ld + 1) * sizeof *p);
	for (int64_t i = 0; i < rows * ld + 1; i++)
		p[i] = (float)(scale * t_nrand());
	return p;
}

static int check_scores(int64_t R, int64_t c, int64_t d)
{
	int64_t ldq = d + 3, lde = d + 5, lds = c + 2;
	float *Q = randm(R, ldq, 1.0), *E = randm(c, lde, 1.0), *S = randm(R, lds, 0);
	int wide = cmp_xk_simd(-1) == 1 && cpu_avx512f();
	/* the bf16 dot product: each lane adds 2 exact products per 32 columns */
	double g = bf16mode && cmp_xk_simd(-1) == 1 && cpu_avx512_bf16()
	                   ? gamma_n(2 * ((d + 31) / 32) + 4)
	           : wide ? gamma_n(2 * ((d + 15) / 16) + 4) : gamma_n(2 * ((d + 7) / 8) + 3);
	int bad = 0;
	char why[128] = "";

	for (int64_t i = 0; i < R * lds + 1; i++)
		S[i] = SENT;
	if (bf16mode) {
		uint16_t *Q16 = to16(Q, R * ldq), *E16 = to16(E, c * lde);
		if (Q16 && E16)
			cmp_xk_scores_bf16(R, c, d, Q16, ldq, E16, lde, S, lds);
		free(Q16);
		free(E16);
	} else {
		cmp_xk_scores(R, c, d, Q, ldq, E, lde, S, lds);
	}
	for (int64_t r = 0; r < R && !bad; r++)
		for (int64_t j = 0; j < lds && !bad; j++) {
			double ref = 0, mag = 0;

			if (j >= c) {
				if ((bad = S[r * lds + j] != SENT))
					snprintf(why, sizeof why, "wrote outside S at (%lld, %lld)",
					         (long long)r, (long long)j);
				continue;
			}
			for (int64_t k = 0; k < d; k++) {
				double t = (double)Q[r * ldq + k] * E[j * lde + k];
				ref += t;
				mag += fabs(t);
			}
			if ((bad = !(fabs(S[r * lds + j] - ref) <= g * mag)))
				snprintf(why, sizeof why, "at (%lld, %lld): %.9g vs %.9g (bound %.3g)",
				         (long long)r, (long long)j, S[r * lds + j], ref, g * mag);
		}
	/* one check per shape: every entry within its bound, nothing outside */
	T_OK(!bad, "scores R=%lld c=%lld d=%lld %s", (long long)R, (long long)c, (long long)d, why);
	free(Q);
	free(E);
	free(S);
	return !bad;
}

static int check_accum(int64_t R, int64_t c, int64_t n)
{
	int64_t ldp = c + 1, lde = n + 3, ldc = n + 4;
	float *P = randm(R, ldp, 1.0), *E = randm(c, lde, 1.0), *C = randm(R, ldc, 1.0);
	float *C0 = malloc((size_t)(R * ldc + 1) * sizeof *C0);
	double g = gamma_n(2 * c);
	int bad = 0;
	char why[128] = "";

	for (int64_t r = 0; r < R; r++)
		for (int64_t k = n; k < ldc; k++)
			C[r * ldc + k] = SENT;
	for (int64_t i = 0; i < R * ldc + 1; i++)
		C0[i] = C[i];
	if (bf16mode) {
		uint16_t *P16 = to16(P, R * ldp), *E16 = to16(E, c * lde);
		if (P16 && E16)
			cmp_xk_accum_bf16(R, c, n, P16, ldp, E16, lde, C, ldc);
		free(P16);
		free(E16);
	} else {
		float *C1 = malloc((size_t)(R * ldc + 1) * sizeof *C1);

		cmp_xk_accum(R, c, n, P, ldp, E, lde, C, ldc);
		/* bringing a next chunk in (here E itself, all or part of it)
		 * changes nothing but the cache: the same bits */
		for (int64_t cn = c; C1 && cn >= 0 && !bad; cn -= c / 2 + 1) {
			memcpy(C1, C0, (size_t)(R * ldc + 1) * sizeof *C1);
			cmp_xk_accum_ahead(R, c, n, P, ldp, E, lde, C1, ldc, E, cn);
			if ((bad = memcmp(C1, C, (size_t)(R * ldc + 1) * sizeof *C1) != 0))
				snprintf(why, sizeof why, "with the next %lld rows ahead: not the same bits",
				         (long long)cn);
		}
		/* rows end to end (lde = n: the folded states), where the next
		 * chunk comes in address order (ahead_linear), also a next
		 * chunk of up to 4 c rows, more lines than rows to pass */
		if (C1 && !bad) {
			float *Ec = malloc((size_t)(c * n + 1) * sizeof *Ec);
			float *N = randm(4 * c + 1, n, 1.0);

			for (int64_t j = 0; Ec && j < c; j++)
				memcpy(Ec + j * n, E + j * lde, (size_t)n * sizeof *Ec);
			for (int64_t cn = 4 * c + 1; Ec && N && cn >= 0 && !bad; cn -= c / 2 + 1) {
				memcpy(C1, C0, (size_t)(R * ldc + 1) * sizeof *C1);
				cmp_xk_accum_ahead(R, c, n, P, ldp, Ec, n, C1, ldc, N, cn);
				if ((bad = memcmp(C1, C, (size_t)(R * ldc + 1) * sizeof *C1) != 0))
					snprintf(why, sizeof why, "rows end to end, the next %lld rows "
					         "ahead: not the same bits", (long long)cn);
			}
			bad |= !Ec || !N;
			free(Ec);
			free(N);
		}
		bad |= !C1;
		free(C1);
	}
	for (int64_t r = 0; r < R && !bad; r++)
		for (int64_t k = 0; k < ldc && !bad; k++) {
			double ref = C0[r * ldc + k], mag = fabs(ref);

			if (k >= n) {
				if ((bad = C[r * ldc + k] != SENT))
					snprintf(why, sizeof why, "wrote outside C at (%lld, %lld)",
					         (long long)r, (long long)k);
				continue;
			}
			for (int64_t j = 0; j < c; j++) {
				double t = (double)P[r * ldp + j] * E[j * lde + k];
				ref += t;
				mag += fabs(t);
			}
			if ((bad = !(fabs(C[r * ldc + k] - ref) <= g * mag)))
				snprintf(why, sizeof why, "at (%lld, %lld): %.9g vs %.9g (bound %.3g)",
				         (long long)r, (long long)k, C[r * ldc + k], ref, g * mag);
		}
	T_OK(!bad, "accum R=%lld c=%lld n=%lld %s", (long long)R, (long long)c, (long long)n, why);
	free(P);
	free(E);
	free(C);
	free(C0);
	return !bad;
}

/* The kernels over bf16 states held as such (cmp_xk_*_w16), where the
 * path widens (cmp_xk_widens): the same bits as the float32 kernels on
 * the widened values, around the outputs too; rows apart (lde > n) and
 * end to end, with the next chunk ahead. */
static int check_w16(int64_t R, int64_t c, int64_t d)
{
	int bad = 0;
	char why[128] = "";

	if (!cmp_xk_widens())
		return 1;
	for (int64_t lde = d + 5; lde >= d && !bad; lde -= 5) {
		int64_t ldq = d + 3, lds = c + 2, ldc = d + 4;
		float *Q = randm(R, ldq, 1.0), *E = randm(c, lde, 1.0), *P = randm(R, lds, 1.0);
		float *S1 = randm(R, lds, 1.0), *S2 = malloc((size_t)(R * lds + 1) * sizeof *S2);
		float *C1 = randm(R, ldc, 1.0), *C2 = malloc((size_t)(R * ldc + 1) * sizeof *C2);
		uint16_t *E16 = to16(E, c * lde + 1);

		if (!Q || !E || !P || !S1 || !S2 || !C1 || !C2 || !E16) {
			bad = 1;
			snprintf(why, sizeof why, "out of memory");
		} else {
			memcpy(S2, S1, (size_t)(R * lds + 1) * sizeof *S2);
			memcpy(C2, C1, (size_t)(R * ldc + 1) * sizeof *C2);
			cmp_xk_scores(R, c, d, Q, ldq, E, lde, S1, lds);
			cmp_xk_scores_w16(R, c, d, Q, ldq, E16, lde, S2, lds);
			cmp_xk_accum_ahead(R, c, d, P, lds, E, lde, C1, ldc, E, c);
			cmp_xk_accum_w16(R, c, d, P, lds, E16, lde, C2, ldc, E16, c);
			if ((bad = memcmp(S1, S2, (size_t)(R * lds + 1) * sizeof *S2) != 0))
				snprintf(why, sizeof why, "scores, lde %lld: not the same bits",
				         (long long)lde);
			else if ((bad = memcmp(C1, C2, (size_t)(R * ldc + 1) * sizeof *C2) != 0))
				snprintf(why, sizeof why, "accumulation, lde %lld: not the same bits",
				         (long long)lde);
		}
		free(Q), free(E), free(P), free(S1), free(S2), free(C1), free(C2), free(E16);
	}
	T_OK(!bad, "bf16 held: R=%lld c=%lld d=%lld %s", (long long)R, (long long)c, (long long)d,
	     why);
	return !bad;
}

static const int64_t D[] = { 1, 7, 8, 64, 768, 770 };

/* Every small shape (all tile remainders), then random ones up to
 * R = 50, c = 300. */
static void sweep(void)
{
	int ok = 1;

	for (int64_t R = 1; R <= 13 && ok; R++)
		for (int64_t c = 1; c <= 5 && ok; c++)
			for (int di = 0; di < 6 && ok; di++)
				ok = check_scores(R, c, D[di]) && check_accum(R, c, D[di]) &&
				     (bf16mode || check_w16(R, c, D[di]));
	for (int i = 0; i < 60 && ok; i++) {
		int64_t R = 1 + (int64_t)(t_urand() * 50), c = 1 + (int64_t)(t_urand() * 300);
		int64_t d = D[i % 6];

		ok = check_scores(R, c, d) && check_accum(R, c, d) && (bf16mode || check_w16(R, c, d));
	}
	ok = ok && check_scores(50, 300, 770) && check_accum(50, 300, 770);
	ok = ok && check_scores(48, 256, 768) && check_accum(48, 256, 768);
	ok = ok && check_accum(12, 256, 768);   /* greedy's: the next chunk in address order */
	ok = ok && (bf16mode || check_w16(12, 256, 768));
	/* the accumulation's column tails: n mod 16 and mod 32, all */
	for (int64_t n = 1; n <= 72 && ok; n++)
		ok = check_accum(7, 3, n);
	T_OK(ok, "sweep (simd %d%s)", cmp_xk_simd(-1), bf16mode ? ", bf16" : "");
}

static void test_simd(void)
{
	cmp_xk_simd(1);
	sweep();
}

static void test_avx2(void)
{
	cmp_xk_simd(2);
	sweep();
	cmp_xk_simd(1);
}

static void test_plain(void)
{
	cmp_xk_simd(0);
	sweep();
	cmp_xk_simd(1);
}

/* The bf16 scores take blocks of 12 rows, the rest tiles of 6: the same
 * bits as tiles of 6 alone (every row's sum reduced alike). */
static void tiles_alike(void)
{
	enum { R = 30, C = 37, DD = 770 };
	float *Q = randm(R, DD, 1.0), *E = randm(C, DD, 1.0);
	float *S = calloc(R * C, sizeof *S), *S6 = calloc(R * C, sizeof *S6);
	uint16_t *Q16 = to16(Q, R * DD), *E16 = to16(E, C * DD);

	if (T_OK(Q && E && S && S6 && Q16 && E16, "memory")) {
		cmp_xk_scores_bf16(R, C, DD, Q16, DD, E16, DD, S, C);
		for (int r = 0; r < R; r += 6)
			cmp_xk_scores_bf16(6, C, DD, Q16 + r * DD, DD, E16, DD, S6 + r * C, C);
		T_OK(!memcmp(S, S6, R * C * sizeof *S), "bf16 scores: blocks of 12 rows = tiles of 6");
	}
	free(Q), free(E), free(S), free(S6), free(Q16), free(E16);
}

/* The bf16 scores of a chunk of keys called XATTN_PF_KEYS keys at a time,
 * as a bf16 cache's are (ops/xattn.c: each group after a prefetch of its
 * values):
 * the same bits as in one call, for the rows of 1 to 4 beams and heads of
 * 64 and 20 (masked) columns. */
static void groups_alike(void)
{
	enum { R = 13, C = 37, DD = 64 };
	float *Q = randm(R, DD, 1.0), *E = randm(C, DD, 1.0);
	float *S = calloc(R * C, sizeof *S), *S4 = calloc(R * C, sizeof *S4);
	uint16_t *Q16 = to16(Q, R * DD), *E16 = to16(E, C * DD);

	if (T_OK(Q && E && S && S4 && Q16 && E16, "memory"))
		for (int d = 20; d <= DD; d += DD - 20)
			for (int rows = 1; rows <= R; rows += rows < 4 ? 1 : R - 4) {
				cmp_xk_scores_bf16(rows, C, d, Q16, DD, E16, DD, S, C);
				for (int j = 0; j < C; j += XATTN_PF_KEYS)
					cmp_xk_scores_bf16(rows, C - j < XATTN_PF_KEYS ? C - j : XATTN_PF_KEYS,
					                   d, Q16, DD, E16 + j * DD, DD, S4 + j, C);
				T_OK(!memcmp(S, S4, (size_t)(rows * C) * sizeof *S),
				     "bf16 scores by groups of %d keys = in one call (%d rows, %d columns)",
				     XATTN_PF_KEYS, rows, d);
			}
	free(Q), free(E), free(S), free(S4), free(Q16), free(E16);
}

/* The bf16 forms: AVX512-BF16 where the processor has it, then plain C. */
static void test_bf16(void)
{
	bf16mode = 1;
	cmp_xk_simd(1);
	tiles_alike();
	groups_alike();
	sweep();
	cmp_xk_simd(0);
	groups_alike();
	sweep();
	cmp_xk_simd(1);
	bf16mode = 0;
}

int main(void)
{
	T_RUN(test_simd);
	T_RUN(test_avx2);
	T_RUN(test_plain);
	T_RUN(test_bf16);
	return t_done();
}
