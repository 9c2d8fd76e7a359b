/*
 * bench/xkern.c: one thread, GFLOP/s of cross-attention's two products
 * (compute/xkern.c) against the same products through cmp_gemm
 * (OpenBLAS), on the decoder's shapes: R query rows (12 greedy, 48 for 4
 * beams) by a chunk of c encoder rows of width 768.
 *
 *   hot     one chunk, again and again (in cache): the kernels alone
 *   stream  scores then accumulation over successive chunks of 96 MiB of
 *           states, as ops/xattn.c does (states read from memory once,
 *           the chunk reused from L2 by the second product, which
 *           brings the next chunk in as it goes: cmp_xk_accum_ahead)
 *   xattn   the whole cross-attention forward (ops/xattn.c: kernels,
 *           online softmax, parts and fold) over 131,072 states (384
 *           MiB, from memory), and its ratio to the floor, its
 *           arithmetic at the best fp32 rate of one thread that
 *           bench/rates.c measured in the same run (argument 2; no
 *           ratio without it)
 *   bf16    the bf16 kernels (cmp_xk_*_bf16, --compute bf16) hot, and
 *           xattn_fw_bf16 over the same states in bf16 (192 MiB)
 *
 * Built and run by bench/xkern.sh. Prints numbers, asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/cpu.h"
#include "compute/compute.h"
#include "ops/xattn.h"

#define D 768
#define BIG ((int64_t)32768) /* rows of the streamed states: 96 MiB */
#define LONG ((int64_t)131072)

static float *randm(int64_t n)
{
	float *p = malloc((size_t)n * sizeof *p);
	uint64_t s = 88172645463325252ull;
	for (int64_t i = 0; i < n; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		p[i] = (float)((double)(s >> 40) / (double)(1 << 24) - 0.5);
	}
	return p;
}

enum { SC, AC, SC16, AC16 };

/* the bf16 operands of SC16 and AC16: Q, E and the weights S rounded */
static uint16_t *Q16, *E16, *S16;

static void run(int kern, int blas, int64_t R, int64_t c, const float *Q, const float *E,
                float *S, float *C)
{
	if (kern == SC16) {
		cmp_xk_scores_bf16(R, c, D, Q16, D, E16, D, S, c);
		return;
	}
	if (kern == AC16) {
		cmp_xk_accum_bf16(R, c, D, S16, c, E16, D, C, D);
		return;
	}
	if (kern == SC) {
		if (blas)
			cmp_gemm(CMP_N, CMP_T, R, c, D, 1.0f, Q, D, E, D, 0.0f, S, c);
		else
			cmp_xk_scores(R, c, D, Q, D, E, D, S, c);
	} else {
		if (blas)
			cmp_gemm(CMP_N, CMP_N, R, D, c, 1.0f, S, c, E, D, 1.0f, C, D);
		else
			cmp_xk_accum(R, c, D, S, c, E, D, C, D);
	}
}

static double hot(int kern, int blas, int64_t R, int64_t c, const float *Q, const float *E,
                  float *S, float *C)
{
	double t0, t, flops = 2.0 * R * c * D;
	int64_t n = 0;

	run(kern, blas, R, c, Q, E, S, C);
	t0 = clock_now();
	do {
		for (int i = 0; i < 20; i++)
			run(kern, blas, R, c, Q, E, S, C);
		n += 20;
		t = clock_now() - t0;
	} while (t < 0.3);
	return flops * (double)n / t / 1e9;
}

static double stream(int blas, int64_t R, int64_t c, const float *Q, const float *E, float *S,
                     float *C)
{
	double t0 = clock_now(), t;
	int64_t n = 0;

	do {
		for (int64_t j = 0; j + c <= BIG; j += c) {
			int64_t cn = BIG - (j + c) < c ? BIG - (j + c) : c;

			run(SC, blas, R, c, Q, E + j * D, S, C);
			if (blas)
				run(AC, blas, R, c, Q, E + j * D, S, C);
			else
				cmp_xk_accum_ahead(R, c, D, S, c, E + j * D, D, C, D, E + (j + c) * D, cn);
		}
		n++;
		t = clock_now() - t0;
	} while (t < 0.5);
	return 4.0 * R * (double)(BIG / c * c) * D * (double)n / t / 1e9;
}

/* Seconds for one xattn_fw (E) or xattn_fw_bf16 (E16) over LONG states,
 * one thread; -1 without memory. */
static double forward(int64_t R, const float *Q, const float *E, const uint16_t *Eh)
{
	lc_err err = { 0 };
	xattn_work *w = xattn_work_new(R, D, 1, &err);
	float *ctx = randm(R * D);
	double t0 = 0, t;
	int n = -1;

	if (!w)
		return -1;
	do {   /* one call first, untimed */
		if (Eh)
			xattn_fw_bf16(w, Q, R, Eh, LONG, D, ctx, NULL);
		else
			xattn_fw(w, Q, R, E, LONG, D, ctx, NULL);
		if (++n == 0)
			t0 = clock_now();
		t = clock_now() - t0;
	} while (t < 1.0);
	xattn_work_free(w);
	free(ctx);
	return t / n;
}

int main(int argc, char **argv)
{
	static const int64_t Rs[] = { 12, 48 }, cs[] = { 128, 192, 256, 384, 512 };
	float *Q = randm(48 * D), *E = randm(BIG * D), *S = randm(48 * 512), *C = randm(48 * D);
	double best = argc > 2 ? atof(argv[2]) : 0;   /* GFLOP/s, one thread */

	/* cmp_gemm's choice would give these shapes to the kernels themselves */
	setenv("LC_GEMM", "openblas", 1);
	cmp_init(NULL);
	/* the kernels' paths: 1 the widest (default), 2 AVX2 at most, 0 plain C */
	cmp_xk_simd(argc > 1 ? atoi(argv[1]) : 1);
	printf("bench/xkern: one thread, GFLOP/s, d = %d (xkern path %d / OpenBLAS)\n", D,
	       cmp_xk_simd(-1));
	printf("%4s %5s  %17s  %17s  %17s\n", "R", "c", "scores hot", "accum hot", "both streamed");
	for (int ri = 0; ri < 2; ri++)
		for (int ci = 0; ci < 5; ci++) {
			int64_t R = Rs[ri], c = cs[ci];
			double sx = hot(SC, 0, R, c, Q, E, S, C), sb = hot(SC, 1, R, c, Q, E, S, C);
			double ax = hot(AC, 0, R, c, Q, E, S, C), ab = hot(AC, 1, R, c, Q, E, S, C);
			double tx = stream(0, R, c, Q, E, S, C), tb = stream(1, R, c, Q, E, S, C);

			printf("%4lld %5lld  %7.1f / %7.1f  %7.1f / %7.1f  %7.1f / %7.1f\n",
			       (long long)R, (long long)c, sx, sb, ax, ab, tx, tb);
		}
	free(E);
	E = randm(LONG * D);
	for (int ri = 0; ri < 2; ri++) {
		int64_t R = Rs[ri];
		double t = forward(R, Q, E, NULL);

		if (t < 0)
			return 1;
		printf("xattn_fw R=%lld L=%lld: %.1f ms, %.1f GFLOP/s", (long long)R, (long long)LONG,
		       t * 1e3, 4.0 * R * LONG * D / t / 1e9);
		if (best > 0)
			printf(", %.2f x the floor at %.1f GFLOP/s", t / (4.0 * R * LONG * D / (best * 1e9)),
			       best);
		printf("\n");
	}
	/* bf16: the kernels on a chunk in cache, then the forward */
	printf("bf16 kernels (%s), one thread, GFLOP/s\n",
	       cpu_avx512_bf16() && cmp_xk_simd(-1) == 1 ? "AVX512-BF16" : "plain C");
	Q16 = malloc(48 * D * sizeof *Q16);
	E16 = malloc((size_t)LONG * D * sizeof *E16);
	S16 = malloc(48 * 512 * sizeof *S16);
	if (!Q16 || !E16 || !S16)
		return 1;
	cmp_bf16_pack(Q, 48, D, D, Q16, D);
	cmp_bf16_pack(E, LONG, D, D, E16, D);
	cmp_bf16_pack(S, 48, 512, 512, S16, 512);
	printf("%4s %5s  %10s  %10s\n", "R", "c", "scores hot", "accum hot");
	for (int ri = 0; ri < 2; ri++)
		for (int ci = 0; ci < 5; ci++) {
			int64_t R = Rs[ri], c = cs[ci];

			printf("%4lld %5lld  %10.1f  %10.1f\n", (long long)R, (long long)c,
			       hot(SC16, 0, R, c, Q, E, S, C), hot(AC16, 0, R, c, Q, E, S, C));
		}
	for (int ri = 0; ri < 2; ri++) {
		int64_t R = Rs[ri];
		double t = forward(R, Q, NULL, E16);

		if (t < 0)
			return 1;
		printf("xattn_fw_bf16 R=%lld L=%lld: %.1f ms, %.1f GFLOP/s\n", (long long)R,
		       (long long)LONG, t * 1e3, 4.0 * R * LONG * D / t / 1e9);
	}
	free(Q16);
	free(E16);
	free(S16);
	free(Q);
	free(E);
	free(S);
	free(C);
	return 0;
}
