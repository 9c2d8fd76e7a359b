/*
 * bench/rates.c: the machine's measured rates, the floors of bench/speed.sh
 * are computed from: GFLOP/s of fp32 (and bf16) matrix products through
 * lc's compute seam, on T threads the way the encoder uses them (each
 * thread one block of rows, one product each), and the memory read
 * bandwidth on T threads.
 *
 *   rates T LIB      LIB: openblas | onednn (LC_GEMM forces it), or bf16
 *                    (--compute bf16 through the table; "n/a" when the
 *                    processor cannot). bf16 applies to products with
 *                    weights: B is declared constant as the model layer
 *                    declares its weights (converted once), A is
 *                    converted in every product as the encoder's are;
 *                    the cross-attention shapes, products of
 *                    activations, stay fp32 and are not listed
 *   rates T read     GB/s summing 1 GiB, best of 5 passes
 *
 * Prints one line per shape ("shape M N K ta tb GFLOP/s") and a last line
 * "best GFLOP/s" (or "read GB/s"). Built and run by bench/speed.sh;
 * prints numbers, asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/parallel.h"
#include "compute/compute.h"

struct job {
	int64_t M, N, K, rows, reps;
	int ta, tb;
	const float *A, *B;
	float *C;
	const float *big;
	int64_t nbig;
	double *part;
};

static float *randm(int64_t n)
{
	float *p = malloc((size_t)n * sizeof *p);
	uint64_t s = 88172645463325252ull;

	for (int64_t i = 0; p && i < n; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		p[i] = (float)((double)(s >> 40) / (double)(1 << 24) - 0.5);
	}
	return p;
}

/* Block i: rows [i rows, ..) of one tall product, or the i-th of T
 * separate skinny products (rows = M): C_i = A_i op(B). */
static void block(void *ctx, int64_t i, int tid)
{
	struct job *j = ctx;
	int64_t r0 = i * j->rows, n = j->M - r0 < j->rows ? j->M - r0 : j->rows;

	if (j->rows == j->M)
		n = j->M;

	(void)tid;
	for (int64_t k = 0; k < j->reps; k++)
		cmp_gemm(CMP_N, j->tb ? CMP_T : CMP_N, n, j->N, j->K, 1.0f, j->A + r0 * j->K, j->K,
		         j->B, j->tb ? j->K : j->N, 0.0f, j->C + r0 * j->N, j->N);
}

/* Part i of 64 of the array summed in eight 4-float vectors (GCC's vector
 * extension, SSE2 on any x86-64: the compiler may not reorder a float sum
 * by itself, and a scalar sum would measure the adder, not the memory). */
typedef float v4 __attribute__((vector_size(16)));

static void sum_part(void *ctx, int64_t i, int tid)
{
	struct job *j = ctx;
	int64_t per = j->nbig / 64, lo = i * per;
	const v4 *p = (const v4 *)(const void *)(j->big + lo);
	v4 a[8] = { { 0 } };
	double t = 0;

	(void)tid;
	for (int64_t k = 0; k < per / 4; k += 8)
		for (int u = 0; u < 8; u++)
			a[u] += p[k + u];
	for (int u = 1; u < 8; u++)
		a[0] += a[u];
	for (int k = 0; k < 4; k++)
		t += a[0][k];
	j->part[i] = t;
}

int main(int argc, char **argv)
{
	/* the encoder's projections (x W^T) and the decoder's skinny
	 * cross-attention products (scores NT, context NN), as the issue names */
	static const struct { const char *name; int64_t M, N, K; int tb; } shapes[] = {
		{ "enc-proj", 8192, 768, 768, 1 }, { "enc-ffn-in", 8192, 2048, 768, 1 },
		{ "enc-ffn-out", 8192, 768, 2048, 1 }, { "xattn-scores", 12, 512, 768, 1 },
		{ "xattn-context", 12, 768, 512, 0 },
	};
	int T = argc > 1 ? atoi(argv[1]) : 1;
	const char *what = argc > 2 ? argv[2] : "openblas";
	char note[256];
	lc_err err;
	double best = 0;
	int bf16;

	if (T < 1 || T > 1024) {
		fprintf(stderr, "usage: rates THREADS openblas|onednn|bf16|read\n");
		return 2;
	}
	if (!strcmp(what, "read")) {
		struct job j = { .nbig = (int64_t)1 << 28 };
		double part[64], s = 0;
		float *big = randm(j.nbig); /* malloc: 16-byte aligned */

		if (!big)
			return 1;
		j.big = big;
		j.part = part;
		for (int rep = 0; rep < 5; rep++) {
			double t0 = clock_now(), t;

			par_for(T, 64, sum_part, &j);
			t = clock_now() - t0;
			for (int i = 0; i < 64; i++)
				s += part[i];
			if (j.nbig * 4.0 / t / 1e9 > best)
				best = j.nbig * 4.0 / t / 1e9;
		}
		printf("read GB/s %.1f (checksum %.3g)\n", best, s);
		free(big);
		return 0;
	}
	bf16 = !strcmp(what, "bf16");
	if (!bf16) {
		setenv("LC_GEMM", what, 1);
		what = "f32";
	}
	cmp_init(NULL);
	if (cmp_set_compute(what, note, sizeof note, &err) < 0) {
		fprintf(stderr, "rates: %s\n", err.msg);
		return 1;
	}
	if (*note) {
		printf("best n/a (%s)\n", note);
		return 0;
	}
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		struct job j = { .M = shapes[s].M, .N = shapes[s].N, .K = shapes[s].K,
		                 .tb = shapes[s].tb };
		int64_t nblk;
		double t0, t, fl, rate = 0;

		if (bf16 && j.M < 1024)
			continue;
		/* big products: T blocks of rows; skinny ones: T independent
		 * products (the decoder's parts of the states), one per thread */
		j.rows = j.M >= 1024 ? (j.M + T - 1) / T : j.M;
		nblk = j.M >= 1024 ? (j.M + j.rows - 1) / j.rows : T;
		j.A = randm(j.M * j.K * (j.M < 1024 ? T : 1));
		j.B = randm(j.K * j.N);
		j.C = randm(j.M * j.N * (j.M < 1024 ? T : 1));
		if (!j.A || !j.B || !j.C)
			return 1;
		if (bf16)
			cmp_constant(j.B, j.K * j.N);
		fl = 2.0 * j.M * j.N * j.K * (j.M < 1024 ? T : 1);
		j.reps = 1;
		par_for(T, nblk, block, &j); /* warm: primitives made, pages touched */
		j.reps = (int64_t)(2e10 / fl) + 1;
		for (int rep = 0; rep < 3; rep++) {
			t0 = clock_now();
			par_for(T, nblk, block, &j);
			t = clock_now() - t0;
			if (fl * j.reps / t / 1e9 > rate)
				rate = fl * j.reps / t / 1e9;
		}
		printf("%-14s %5lld x %5lld x %5lld N%c  %7.1f GFLOP/s\n", shapes[s].name,
		       (long long)j.M, (long long)j.N, (long long)j.K, j.tb ? 'T' : 'N', rate);
		best = rate > best ? rate : best;
		cmp_constant_drop(j.B);
		free((void *)j.A);
		free((void *)j.B);
		free(j.C);
	}
	printf("best GFLOP/s %.1f\n", best);
	return 0;
}
