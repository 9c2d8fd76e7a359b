/*
 * test_gemm: the seam's products against a double-precision reference,
 * once with each library ($LC_GEMM=openblas and, when built with it,
 * onednn; each in a child process, since the choice is read once per
 * process) and with the default table; bf16 rounding against an
 * independent reference; LC_BF16_EMULATE's products against a double
 * reference of the rounded operands.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cpu.h"
#include "compute/compute.h"
#include "compute/gemm.h"
#include "t.h"

static float bits_f(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static uint32_t f_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* Round to nearest bf16, ties to even, by comparing the two neighbours in
 * double (not the bit trick the library uses). */
static float ref_round(float x)
{
	uint32_t u = f_bits(x), lo = u & 0xffff0000u, hi;
	double dl, dh, dx = x;

	if (isnan(x) || isinf(x))
		return x;
	if (lo == u)
		return x;
	hi = lo + 0x10000u;     /* next bf16 away from zero (may be inf) */
	dl = bits_f(lo), dh = bits_f(hi);
	if (isinf(dh))          /* the midpoint to infinity is as if the exponent went on */
		dh = copysign(ldexp(1, 128), dx);
	if (fabs(dx - dl) < fabs(dh - dx))
		return bits_f(lo);
	if (fabs(dx - dl) > fabs(dh - dx))
		return bits_f(hi);
	return bits_f((lo >> 16 & 1) ? hi : lo);
}

static void test_round(void)
{
	static const uint32_t cases[] = {
		0x3f808000u, 0x3f818000u, 0xbf808000u, 0x3f808001u, 0x3f807fffu, /* ties and near */
		0x00008000u, 0x00018000u, 0x00007fffu, 0x00000001u, 0x807fffffu, /* subnormals */
		0x7f7fffffu, 0x7f7f8000u, 0x7f7f7fffu, 0xff7fffffu,              /* to infinity */
		0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,              /* inf, zeros */
	};
	static const uint32_t nans[] = { 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x7f80ffffu };
	int bad = 0;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		float r = cmp_bf16_round(bits_f(cases[i])), e = ref_round(bits_f(cases[i]));
		T_OK(f_bits(r) == f_bits(e), "%08x -> %08x, expected %08x", cases[i], f_bits(r),
		     f_bits(e));
	}
	T_OK(f_bits(cmp_bf16_round(bits_f(0x7f7fffffu))) == 0x7f800000u, "FLT_MAX rounds to inf");
	T_OK(f_bits(cmp_bf16_round(bits_f(0x3f808000u))) == 0x3f800000u, "tie to even, down");
	T_OK(f_bits(cmp_bf16_round(bits_f(0x3f818000u))) == 0x3f820000u, "tie to even, up");
	for (size_t i = 0; i < sizeof nans / sizeof *nans; i++)
		T_OK(isnan(cmp_bf16_round(bits_f(nans[i]))), "NaN %08x stays NaN", nans[i]);
	for (int i = 0; i < 200000; i++) {
		uint32_t u = (uint32_t)(t_urand() * 4294967296.0);
		float x = bits_f(u), r = cmp_bf16_round(x), e = ref_round(x);
		if (isnan(x) ? !isnan(r) : f_bits(r) != f_bits(e))
			bad++;
	}
	T_OK(bad == 0, "%d of 200000 random patterns rounded wrongly", bad);
}

struct shape {
	int64_t M, N, K;
	enum cmp_trans ta, tb;
	int pad;                /* extra row stride */
	float alpha, beta;
};

/* One product through the seam against double: |C - ref| within the
 * fp32 summation bound 2 K u (|alpha| sum |a b| + |beta c|). round: B is
 * declared constant (a weight matrix: the products bf16 applies to) and
 * the reference uses bf16-rounded operands (and must differ from the
 * unrounded one somewhere). Returns the elements out of bound. */
static int check(const struct shape *s, int round, int par)
{
	int64_t ar = s->ta ? s->K : s->M, ac = s->ta ? s->M : s->K;
	int64_t br = s->tb ? s->N : s->K, bc = s->tb ? s->K : s->N;
	int64_t lda = ac + s->pad, ldb = bc + s->pad, ldc = s->N + s->pad;
	float *A = malloc((size_t)(ar * lda) * sizeof *A), *B = malloc((size_t)(br * ldb) * sizeof *B);
	float *C = malloc((size_t)(s->M * ldc) * sizeof *C), *C0 = malloc((size_t)(s->M * ldc) * sizeof *C);
	int bad = 0, differs = 0;

	for (int64_t i = 0; i < ar * lda; i++)
		A[i] = (float)t_nrand();
	for (int64_t i = 0; i < br * ldb; i++)
		B[i] = (float)t_nrand();
	for (int64_t i = 0; i < s->M * ldc; i++)
		C0[i] = C[i] = s->beta == 0.0f ? NAN : (float)t_nrand(); /* beta 0: C is not read */
	if (round)
		cmp_constant(B, br * ldb);
	if (par)
		cmp_gemm_par(2, s->ta, s->tb, s->M, s->N, s->K, s->alpha, A, lda, B, ldb, s->beta, C,
		             ldc);
	else
		cmp_gemm(s->ta, s->tb, s->M, s->N, s->K, s->alpha, A, lda, B, ldb, s->beta, C, ldc);
	for (int64_t m = 0; m < s->M; m++)
		for (int64_t n = 0; n < s->N; n++) {
			double acc = 0, acc0 = 0, mag = 0, ref, ref0, tol;
			for (int64_t k = 0; k < s->K; k++) {
				float a = s->ta ? A[k * lda + m] : A[m * lda + k];
				float b = s->tb ? B[n * ldb + k] : B[k * ldb + n];
				double ab = round ? (double)ref_round(a) * ref_round(b) : (double)a * b;
				acc += ab;
				acc0 += (double)a * b;
				mag += fabs(ab);
			}
			ref = s->alpha * acc;
			ref0 = s->alpha * acc0;
			if (s->beta != 0.0f) {
				ref += s->beta * (double)C0[m * ldc + n];
				ref0 += s->beta * (double)C0[m * ldc + n];
				mag += fabs(s->beta * (double)C0[m * ldc + n]) / fabs(s->alpha);
			}
			tol = 2.0 * (double)(s->K + 2) * ldexp(1, -24) * fabs(s->alpha) * mag + 1e-30;
			if (!(fabs(C[m * ldc + n] - ref) <= tol))
				bad++;
			if (fabs(ref0 - ref) > tol)
				differs = 1;
		}
	/* the padding between rows of C is not written */
	for (int64_t m = 0; m < s->M; m++)
		for (int64_t n = s->N; n < ldc; n++)
			if (f_bits(C[m * ldc + n]) != f_bits(C0[m * ldc + n]))
				bad++;
	if (round && s->K > 8 && !differs)
		bad++;
	if (round)
		cmp_constant_drop(B);
	free(A), free(B), free(C), free(C0);
	return bad;
}

static void products(int round)
{
	static const int64_t Ms[] = { 1, 4, 12, 100 };
	static const int64_t Ks[] = { 1, 64, 301 };
	static const int64_t Ns[] = { 1, 7, 513 };
	static const float alphas[] = { 1.0f, 0.125f, -2.0f };

	for (size_t mi = 0; mi < 4; mi++)
		for (size_t ki = 0; ki < 3; ki++)
			for (size_t ni = 0; ni < 3; ni++)
				for (int t = 0; t < 4; t++) {
					struct shape s = { Ms[mi], Ns[ni], Ks[ki], t & 1 ? CMP_T : CMP_N,
						           t & 2 ? CMP_T : CMP_N, (int)(mi + ni) % 3 * 5,
						           alphas[(mi + ki + (size_t)t) % 3], (ni + (size_t)t) % 2 ? 1.0f : 0.0f };
					int bad = check(&s, round, 0);
					T_OK(bad == 0, "%lldx%lldx%lld %c%c pad %d alpha %g beta %g: %d bad",
					     (long long)s.M, (long long)s.N, (long long)s.K, "NT"[s.ta],
					     "NT"[s.tb], s.pad, s.alpha, s.beta, bad);
				}
	{
		/* a decoder projection split over threads, and the encoder's size */
		struct shape p = { 4, 1100, 768, CMP_N, CMP_T, 0, 1.0f, 0.0f };
		struct shape e = { 300, 768, 768, CMP_N, CMP_T, 3, 1.0f, 1.0f };
		T_OK(check(&p, round, 1) == 0, "cmp_gemm_par 4x1100x768");
		T_OK(check(&e, round, 0) == 0, "300x768x768");
	}
}

/* Under bf16, a product of two activations (no constant operand) stays
 * fp32: within the fp32 bound of the unrounded operands. */
static void activations(void)
{
	struct shape s = { 12, 513, 301, CMP_N, CMP_T, 0, 1.0f, 0.0f };

	T_OK(check(&s, 0, 0) == 0, "12x513x301 of activations stays fp32 under bf16");
}

/* C = alpha op(A) op(B) + beta C0 against double within 2 (K + 2) u of
 * |alpha| sum |a b| + |beta c0|; returns the elements out of bound. */
static int product_bad(const struct shape *s, const float *A, int64_t lda, const float *B,
                       int64_t ldb, const float *C, const float *C0, int64_t ldc)
{
	int bad = 0;

	for (int64_t m = 0; m < s->M; m++)
		for (int64_t n = 0; n < s->N; n++) {
			double acc = 0, mag = 0, c0 = s->beta * (double)C0[m * ldc + n];
			for (int64_t k = 0; k < s->K; k++) {
				double ab = (double)(s->ta ? A[k * lda + m] : A[m * lda + k]) *
				            (s->tb ? B[n * ldb + k] : B[k * ldb + n]);
				acc += ab;
				mag += fabs(ab);
			}
			if (!(fabs(C[m * ldc + n] - (s->alpha * acc + c0)) <=
			      2.0 * (double)(s->K + 2) * ldexp(1, -24) * (fabs(s->alpha) * mag + fabs(c0)) +
			              1e-30))
				bad++;
		}
	return bad;
}

/* A constant B (a weight) is read from a copy packed once in oneDNN's
 * layout (compute/dnnl.c): right the first time, right again from the
 * kept copy, and after the region is dropped and the same address holds
 * new values and is declared again, the new values are multiplied, not
 * the stale copy. */
static void packed(void)
{
	static const struct shape ss[] = {
		{ 300, 768, 768, CMP_N, CMP_T, 3, 1.0f, 1.0f },
		{ 256, 513, 301, CMP_N, CMP_N, 0, 0.5f, 0.0f },
		{ 100, 7, 64, CMP_T, CMP_T, 5, -2.0f, 0.0f },
	};

	for (size_t i = 0; i < sizeof ss / sizeof *ss; i++) {
		const struct shape *s = &ss[i];
		int64_t ar = s->ta ? s->K : s->M, ac = s->ta ? s->M : s->K;
		int64_t br = s->tb ? s->N : s->K, bc = s->tb ? s->K : s->N;
		int64_t lda = ac + s->pad, ldb = bc + s->pad, ldc = s->N + s->pad;
		float *A = malloc((size_t)(ar * lda) * sizeof *A);
		float *B = malloc((size_t)(br * ldb) * sizeof *B);
		float *C = malloc((size_t)(s->M * ldc) * sizeof *C);
		float *C0 = malloc((size_t)(s->M * ldc) * sizeof *C0);

		for (int64_t j = 0; j < ar * lda; j++)
			A[j] = (float)t_nrand();
		for (int64_t j = 0; j < s->M * ldc; j++)
			C0[j] = (float)t_nrand();
		for (int round = 0; round < 3; round++) {
			if (round != 1) {       /* new values at the same address */
				for (int64_t j = 0; j < br * ldb; j++)
					B[j] = (float)t_nrand();
				cmp_constant(B, br * ldb);
			}
			memcpy(C, C0, (size_t)(s->M * ldc) * sizeof *C);
			cmp_gemm(s->ta, s->tb, s->M, s->N, s->K, s->alpha, A, lda, B, ldb, s->beta, C,
			         ldc);
			T_OK(product_bad(s, A, lda, B, ldb, C, C0, ldc) == 0,
			     "%lldx%lldx%lld %c%c beta %g, %s", (long long)s->M, (long long)s->N,
			     (long long)s->K, "NT"[s->ta], "NT"[s->tb], s->beta,
			     round == 0 ? "first" : round == 1 ? "the kept copy" : "new values");
			if (round != 0)
				cmp_constant_drop(B);
		}
		free(A), free(B), free(C), free(C0);
	}
}

static void test_openblas(void) { products(0); }
static void test_onednn(void) { products(0); packed(); }
static void test_table(void) { products(0); }

/* lc's kernels behind the seam (cmp_xk_gemm): what they take and
 * decline, products at the row bound, both vector widths, and a product
 * split by columns with the same bits as whole. */
static void test_xk_gemm(void)
{
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 1, 1, 1 }, c[2] = { 5, 5 };
	int simd = cmp_xk_simd(-1);
	int here = cmp_xk_gemm(CMP_N, CMP_T, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1) == 0;

	if (!here) {
		T_OK(!(cpu_avx2_fma() && simd), "declines only without AVX2 or with the kernels off");
		return;
	}
	T_OK(c[0] == 1.0f, "1 x 1 x 1: %g", c[0]);
	T_OK(cmp_xk_gemm(CMP_T, CMP_T, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1) < 0 &&
	     cmp_xk_gemm(CMP_N, CMP_T, 1, 1, 1, 0.5f, a, 1, b, 1, 0.0f, c, 1) < 0 &&
	     cmp_xk_gemm(CMP_N, CMP_T, 1, 1, 1, 1.0f, a, 1, b, 1, 0.5f, c, 1) < 0 &&
	     cmp_xk_gemm(CMP_N, CMP_N, XK_GEMM_ROWS + 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1) < 0 &&
	     cmp_xk_gemm(CMP_N, CMP_N, 1, 1, 0, 1.0f, a, 1, b, 1, 0.0f, c, 1) < 0 && c[0] == 1.0f,
	     "declines op(A) = A^T, alpha != 1, beta not 0 or 1, too many rows, K = 0, "
	     "writing nothing");
	/* beta 1 adds to C: 2 + (1 2) . (1 1) */
	c[0] = 2;
	T_OK(cmp_xk_gemm(CMP_N, CMP_T, 1, 1, 2, 1.0f, a, 2, b, 2, 1.0f, c, 1) == 0 && c[0] == 5.0f,
	     "beta 1: %g", c[0]);
	for (int w = 1; w <= 2; w++) {
		cmp_xk_simd(w);         /* AVX-512 where the processor has it, then AVX2 */
		for (int t = 0; t < 4; t++) {
			int64_t M = t < 2 ? XK_GEMM_ROWS : XK_GEMM_ROWS + 1;
			struct shape sh = { M, 77, 769, CMP_N, t & 1 ? CMP_T : CMP_N, 3, 1.0f,
			                    t & 2 ? 1.0f : 0.0f };
			T_OK(check(&sh, 0, 0) == 0, "simd %d, %lld rows, %c, beta %g", w, (long long)M,
			     "NT"[sh.tb], sh.beta);
		}
	}
	cmp_xk_simd(simd);
	{       /* split by 128 columns over two threads, and whole */
		int64_t M = 3, N = 700, K = 768;
		float *A = malloc((size_t)(M * K) * sizeof *A), *B = malloc((size_t)(N * K) * sizeof *B);
		float *C1 = malloc((size_t)(M * N) * sizeof *C1), *C2 = malloc((size_t)(M * N) * sizeof *C2);
		for (int64_t i = 0; i < M * K; i++)
			A[i] = (float)t_nrand();
		for (int64_t i = 0; i < N * K; i++)
			B[i] = (float)t_nrand();
		cmp_gemm(CMP_N, CMP_T, M, N, K, 1.0f, A, K, B, K, 0.0f, C1, N);
		cmp_gemm_par(2, CMP_N, CMP_T, M, N, K, 1.0f, A, K, B, K, 0.0f, C2, N);
		T_OK(memcmp(C1, C2, (size_t)(M * N) * sizeof *C1) == 0, "split by columns: same bits");
		cmp_gemm_batch_par(2, CMP_N, CMP_T, 1, N / 7, K, 1.0f, A, K, K, B, K, (int64_t)N / 7 * K,
		                   0.0f, C2, N / 7, N / 7, 3);
		cmp_gemm_batch(CMP_N, CMP_T, 1, N / 7, K, 1.0f, A, K, K, B, K, (int64_t)N / 7 * K,
		               0.0f, C1, N / 7, N / 7, 3);
		T_OK(memcmp(C1, C2, (size_t)(3 * (N / 7)) * sizeof *C1) == 0,
		     "a batch over two threads: the same bits as on one");
		free(A), free(B), free(C1), free(C2);
	}
	{       /* the bf16 form: a constant B only, bf16 operands, fp32 sums */
		int64_t M = 5, N = 70, K = 300;
		float *A = malloc((size_t)(M * K) * sizeof *A), *B = malloc((size_t)(N * K) * sizeof *B);
		float *C = malloc((size_t)(M * N) * sizeof *C);
		int bad = 0;
		for (int64_t i = 0; i < M * K; i++)
			A[i] = (float)t_nrand();
		for (int64_t i = 0; i < N * K; i++)
			B[i] = (float)t_nrand();
		T_OK(cmp_xk_gemm_bf16(CMP_N, CMP_T, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N) < 0,
		     "bf16: declines a B not declared constant");
		cmp_constant(B, N * K);
		if (cmp_xk_gemm_bf16(CMP_N, CMP_T, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N) == 0) {
			for (int64_t m = 0; m < M; m++)
				for (int64_t n = 0; n < N; n++) {
					double acc = 0, mag = 0;
					for (int64_t k = 0; k < K; k++) {
						double ab = (double)ref_round(A[m * K + k]) * ref_round(B[n * K + k]);
						acc += ab, mag += fabs(ab);
					}
					bad += !(fabs(C[m * N + n] - acc) <= 2.0 * (K + 2) * ldexp(1, -24) * mag);
				}
			T_OK(bad == 0, "bf16 5 x 70 x 300 against rounded operands: %d bad", bad);
			T_OK(cmp_xk_gemm_bf16(CMP_N, CMP_T, M, N, K, 2.0f, A, K, B, K, 0.0f, C, N) < 0,
			     "bf16: declines alpha 2");
			T_OK(cmp_xk_gemm_bf16(CMP_N, CMP_N, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N) < 0,
			     "bf16: declines op(B) = B");
		} else {
			T_OK(!cpu_avx512_bf16(), "bf16 form declined only without AVX512-BF16");
		}
		cmp_constant_drop(B);
		free(A), free(B), free(C);
	}
}

/* bf16, emulated ($LC_BF16_EMULATE=1, any processor) or the real thing
 * where the processor has it: oneDNN's bf16 matmul must give the numbers
 * of bf16-rounded operands summed in fp32, the same bound as the
 * emulation. Either way nothing is said (note empty). */
static void test_bf16(void)
{
	char note[256];
	lc_err err;

	T_OK(cmp_set_compute("bf16", note, sizeof note, &err) == 0, "%s", err.msg);
	T_OK(note[0] == '\0', "bf16 runs: %s", note);
	products(1);
	activations();
}

static void test_settings(void)
{
	char note[256];
	lc_err err;

	T_OK(cmp_set_compute("f16", note, sizeof note, &err) < 0, "f16 refused");
	T_OK(cmp_set_compute("f32", note, sizeof note, &err) == 0 && !note[0], "f32");
	setenv("LC_GEMM", "mkl", 1);
	T_OK(cmp_set_compute("f32", note, sizeof note, &err) < 0 && strstr(err.msg, "LC_GEMM"),
	     "LC_GEMM=mkl refused");
	unsetenv("LC_GEMM");
}

/* Runs fn in a child with the variable set, adding its counts to ours. */
static void in_child(const char *name, void (*fn)(void), const char *var, const char *val)
{
	int fd[2], got[2] = { 0, 1 };
	pid_t pid;

	fflush(stdout);
	if (pipe(fd) < 0 || (pid = fork()) < 0) {
		T_OK(0, "fork for %s", name);
		return;
	}
	if (pid == 0) {
		close(fd[0]);
		setenv(var, val, 1);
		t_pass = t_failn = 0;
		t_current = name;
		fn();
		got[0] = t_pass, got[1] = t_failn;
		if (write(fd[1], got, sizeof got) != (ssize_t)sizeof got)
			_exit(2);
		fflush(stdout);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], got, sizeof got) != (ssize_t)sizeof got)
		got[0] = 0, got[1] = 1;
	close(fd[0]);
	waitpid(pid, NULL, 0);
	t_pass += got[0];
	t_failn += got[1];
	if (got[1])
		printf("FAIL %s: %d failed in the child\n", name, got[1]);
}

int main(void)
{
	T_RUN(test_round);
	in_child("test_settings", test_settings, "LC_BF16_EMULATE", "0");
	in_child("test_openblas", test_openblas, "LC_GEMM", "openblas");
#ifdef LC_HAVE_DNNL
	in_child("test_onednn", test_onednn, "LC_GEMM", "onednn");
#else
	(void)test_onednn;
#endif
	in_child("test_bf16 (emulated)", test_bf16, "LC_BF16_EMULATE", "1");
	if (cpu_bf16() && cmp_dnnl_bf16_ok())
		in_child("test_bf16 (hardware)", test_bf16, "LC_BF16_EMULATE", "0");
	else
		printf("test_bf16_hardware: skipped (no AVX512-BF16/AMX or no oneDNN bf16 here)\n");
	T_RUN(test_table);
	T_RUN(test_xk_gemm);
	return t_done();
}
