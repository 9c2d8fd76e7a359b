/*
 * test_dev: the GPU's side of the compute seam (compute/dev.h) against
 * the CPU's operations on the same random data, the cross-attention over
 * states kept on the GPU (ops/xattn.h's xattn_fw_any), then LOCOST's whole
 * encoder on the GPU (arch/locost_gpu.c) against the CPU's for model
 * shapes the oracle's tiny model does not have (one direction, no
 * gating, an ungated relu feed-forward) and for a long input, and the
 * BART family's encoders with their layers whole on the GPU
 * (arch/bart_gpu.c: BART, LSG of every sparsity, BART-LS, top-down) against
 * the CPU's on random models. The oracle
 * goldens themselves run on the GPU through test_locost under make
 * check-cuda. Without a GPU (or a build without CUDA), only that the
 * device says it is absent.
 */
#include <float.h>

#include "t.h"
#include "t_dec.h"
#include "t_oracle.h"

#include "arch/bart.h"
#include "arch/encoder.h"
#include "arch/locost.h"
#include "arch/model.h"
#include "base/rng.h"
#include "compute/compute.h"
#include "compute/dev.h"
#include "ops/act.h"
#include "ops/bartlsattn.h"
#include "ops/lsgattn.h"
#include "ops/segattn.h"
#include "ops/norm.h"
#include "ops/ssm.h"
#include "ops/xattn.h"

static uint64_t rng = 12345;

/* A GPU failure makes lc say so and compute on the CPU: here it fails. */
static int said;

static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	said++;
	printf("# %s\n", msg);
}

static float *rnd(int64_t n, double scale)
{
	float *x = malloc((size_t)n * sizeof *x);

	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(scale * lc_rng_normal(&rng));
	return x;
}

/* max |a - b| / max |b| over [rows, cols] with row stride ld */
static double rel_m(const float *a, const float *b, int64_t rows, int64_t cols, int64_t ld)
{
	double num = 0, den = 0;

	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			double e = fabs((double)a[r * ld + c] - b[r * ld + c]);
			double m = fabs((double)b[r * ld + c]);
			if (!(e <= num))
				num = e;        /* NaN propagates */
			if (m > den)
				den = m;
		}
	return den > 0 ? num / den : num;
}

static double rel(const float *a, const float *b, int64_t n)
{
	return rel_m(a, b, 1, n, n);
}

static float *up(const float *h, int64_t n)
{
	float *d = cmp_dev_alloc(n);

	if (d)
		cmp_dev_put(d, h, n);
	return d;
}

static float *down(const float *d, int64_t n)
{
	float *h = malloc((size_t)n * sizeof *h);

	cmp_dev_get(h, d, n);
	return h;
}

static void check_ok(const char *what)
{
	lc_err err;

	T_OK(cmp_dev_check(&err) == 0, "%s: %s", what, err.msg);
}

static void test_absent(void)
{
	if (cmp_dev_on())
		return;
	T_OK(cmp_dev_alloc(16) == NULL, "no device, yet memory");
}

static void test_elementwise(void)
{
	int64_t R = 37, d = 300, n = R * d;
	float *x = rnd(n, 2.0), *w = rnd(d, 1.0), *b = rnd(n, 1.0), *bias = rnd(d, 1.0);
	float *y = malloc((size_t)n * sizeof *y), *dx = up(x, n), *dw = up(w, d), *db = up(b, n);
	float *dy = cmp_dev_alloc(n), *dbias = up(bias, d), *g;

	rmsnorm_fw(x, R, (int)d, w, 1e-6f, y, NULL);
	cmp_dev_rmsnorm(dx, R, (int)d, dw, 1e-6f, dy);
	g = down(dy, n);
	check_ok("rmsnorm");
	T_OK(rel(g, y, n) < 1e-6, "rmsnorm: %g", rel(g, y, n));
	free(g);
	for (int k = ACT_GELU_TANH; k <= ACT_SILU; k++)
		for (int gated = 0; gated < 2; gated++) {
			act_fw((enum lc_act)k, x, gated ? b : NULL, n, y);
			cmp_dev_act(k, dx, gated ? db : NULL, n, dy);
			g = down(dy, n);
			check_ok("act");
			T_OK(rel(g, y, n) < 1e-6, "%s gated %d: %g", act_name((enum lc_act)k), gated,
			     rel(g, y, n));
			free(g);
		}
	/* biases by column and by row on a [R, 250] block of a [R, d] matrix */
	memcpy(y, x, (size_t)n * sizeof *y);
	for (int64_t r = 0; r < R; r++)
		for (int64_t c = 0; c < 250; c++)
			y[r * d + c] += bias[c];
	cmp_dev_put(dy, x, n);
	cmp_dev_bias_cols(dy, R, 250, d, dbias);
	g = down(dy, n);
	check_ok("bias");
	T_OK(memcmp(g, y, (size_t)n * sizeof *y) == 0, "bias by column");
	free(g);
	for (int64_t r = 0; r < R; r++)
		for (int64_t c = 0; c < 250; c++)
			y[r * d + c] += bias[r];
	cmp_dev_bias_rows(dy, R, 250, d, dbias);
	g = down(dy, n);
	check_ok("bias");
	T_OK(memcmp(g, y, (size_t)n * sizeof *y) == 0, "bias by row");
	free(g);
	/* y[:, :250] *= b[:, 50:300] */
	for (int64_t r = 0; r < R; r++)
		for (int64_t c = 0; c < 250; c++)
			y[r * d + c] *= b[r * d + 50 + c];
	cmp_dev_mul(dy, d, db + 50, d, R, 250);
	g = down(dy, n);
	check_ok("mul");
	T_OK(memcmp(g, y, (size_t)n * sizeof *y) == 0, "mul");
	free(g);
	free(x), free(w), free(b), free(bias), free(y);
	cmp_dev_free(dx), cmp_dev_free(dw), cmp_dev_free(db), cmp_dev_free(dy), cmp_dev_free(dbias);
}

/* out [M, ldc] = alpha op(A) op(B) + beta C in double, the operands
 * rounded to bf16 first when r16. */
static void ref_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const float *A,
                     int64_t lda, const float *B, int64_t ldb, double beta, const float *C,
                     int64_t ldc, int r16, float *out)
{
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;
			for (int64_t k = 0; k < K; k++) {
				float a = ta ? A[k * lda + i] : A[i * lda + k];
				float b = tb ? B[j * ldb + k] : B[k * ldb + j];
				s += (double)(r16 ? cmp_bf16_round(a) : a) * (r16 ? cmp_bf16_round(b) : b);
			}
			out[i * ldc + j] = (float)(alpha * s + (beta != 0 ? beta * C[i * ldc + j] : 0));
		}
}

/* the four transpose combinations, with row strides wider than the rows */
static void test_gemm(void)
{
	int64_t M = 70, N = 45, K = 33, ld = 80;
	float *A = rnd(ld * ld, 1.0), *B = rnd(ld * ld, 1.0), *C = rnd(ld * ld, 1.0);
	float *dA = up(A, ld * ld), *dB = up(B, ld * ld), *dC = cmp_dev_alloc(ld * ld);

	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			float *ref = malloc((size_t)(ld * ld) * sizeof *ref), *g;
			memcpy(ref, C, (size_t)(ld * ld) * sizeof *ref);
			ref_gemm(ta, tb, M, N, K, 0.5, A, ld, B, ld, 2.0, C, ld, 0, ref);
			cmp_dev_put(dC, C, ld * ld);
			cmp_dev_gemm(ta, tb, M, N, K, 0.5f, dA, ld, dB, ld, 2.0f, dC, ld);
			g = down(dC, ld * ld);
			check_ok("gemm");
			T_OK(rel(g, ref, ld * ld) < 1e-6, "gemm ta %d tb %d: %g", ta, tb,
			     rel(g, ref, ld * ld));
			free(ref), free(g);
		}
	free(A), free(B), free(C);
	cmp_dev_free(dA), cmp_dev_free(dB), cmp_dev_free(dC);
}

/* out against references with and without bf16 operands: bf16's within
 * fp32 summation (1e-5), and far enough from fp32's (1e-4: one rounding of
 * the operands moves a sum by about 2^-9 of its terms) to show the
 * operands were rounded. */
static void bf16_case(const char *what, const float *out, const float *r16, const float *r32,
                      int64_t rows, int64_t cols, int64_t ld, int rounded)
{
	double e16 = rel_m(out, r16, rows, cols, ld), e32 = rel_m(out, r32, rows, cols, ld);

	if (rounded)
		T_OK(e16 < 1e-5 && e32 > 1e-4, "%s: %g from bf16's reference, %g from fp32's", what,
		     e16, e32);
	else
		T_OK(e32 < 1e-6, "%s: fp32 expected, %g from fp32's reference", what, e32);
}

/* --compute bf16 on the GPU: cmp_gemm's and cmp_gemm_batch's products with
 * a weight (cmp_constant) as either operand in bf16 with fp32 sums, one
 * without a weight in fp32; cmp_dev_gemm_w in bf16, cmp_dev_gemm fp32.
 * Without a GPU the same products by the CPU's emulation (the same
 * numbers up to summation order), which checks the checks. */
static void test_bf16(void)
{
	int gpu = cmp_dev_on();
	int64_t M = 37, N = 300, K = 200, ld = 320, bt = 3, n = bt * M * ld, no = N * ld;
	float *A = rnd(n, 1.0), *W = rnd(bt * N * ld, 1.0), *C = rnd(n, 1.0);
	/* results: bt of [M, ld], or one [N, ld] */
	float *out = malloc((size_t)no * sizeof *out), *r16 = malloc((size_t)no * sizeof *r16);
	float *r32 = malloc((size_t)no * sizeof *r32), *Wc = malloc((size_t)(bt * N * ld) * sizeof *Wc);
	float *dA, *dW, *dC;
	char note[160] = "";
	lc_err err;

	memcpy(Wc, W, (size_t)(bt * N * ld) * sizeof *Wc);
	cmp_constant(W, bt * N * ld);
	if (!gpu)
		setenv("LC_BF16_EMULATE", "1", 1);
	if (!T_OK(cmp_set_compute("bf16", note, sizeof note, &err) == 0 && !note[0] &&
	          cmp_bf16_active(), "bf16 on the GPU: %s", note[0] ? note : err.msg))
		goto out;
	for (int tb = 0; tb < 2; tb++) {
		/* NT: W [N, K]; NN: W [K, N]; each with row stride ld */
		ref_gemm(0, tb, M, N, K, 0.5, A, ld, W, ld, 2.0, C, ld, 1, r16);
		ref_gemm(0, tb, M, N, K, 0.5, A, ld, W, ld, 2.0, C, ld, 0, r32);
		memcpy(out, C, (size_t)(M * ld) * sizeof *out);
		cmp_gemm(CMP_N, tb ? CMP_T : CMP_N, M, N, K, 0.5f, A, ld, W, ld, 2.0f, out, ld);
		bf16_case(tb ? "A W^T with a weight" : "A W with a weight", out, r16, r32, M, N, ld,
		          1);
		/* the same operands, W now an ordinary matrix: fp32 */
		memcpy(out, C, (size_t)(M * ld) * sizeof *out);
		cmp_gemm(CMP_N, tb ? CMP_T : CMP_N, M, N, K, 0.5f, A, ld, Wc, ld, 2.0f, out, ld);
		bf16_case("without a weight", out, r16, r32, M, N, ld, 0);
	}
	/* the weight first: W^T A^T = (A W)^T, [N, M] */
	ref_gemm(1, 1, N, M, K, 1.0, W, ld, A, ld, 0.0, NULL, ld, 1, r16);
	ref_gemm(1, 1, N, M, K, 1.0, W, ld, A, ld, 0.0, NULL, ld, 0, r32);
	cmp_gemm(CMP_T, CMP_T, N, M, K, 1.0f, W, ld, A, ld, 0.0f, out, ld);
	bf16_case("W^T A^T, the weight first", out, r16, r32, N, M, ld, 1);
	/* a batch over bt weights */
	for (int64_t b = 0; b < bt; b++) {
		ref_gemm(0, 1, M, N, K, 1.0, A + b * M * ld, ld, W + b * N * ld, ld, 0.0, NULL, ld, 1,
		         r16 + b * M * ld);
		ref_gemm(0, 1, M, N, K, 1.0, A + b * M * ld, ld, W + b * N * ld, ld, 0.0, NULL, ld, 0,
		         r32 + b * M * ld);
	}
	cmp_gemm_batch(CMP_N, CMP_T, M, N, K, 1.0f, A, ld, M * ld, W, ld, N * ld, 0.0f, out, ld,
	               M * ld, bt);
	bf16_case("a batch with weights", out, r16, r32, bt * M, N, ld, 1);
	/* the GPU's buffers: cmp_dev_gemm_w bf16, cmp_dev_gemm fp32 */
	dA = gpu ? up(A, M * ld) : NULL, dW = gpu ? up(W, N * ld) : NULL;
	dC = gpu ? cmp_dev_alloc(M * ld) : NULL;
	if (gpu && T_OK(dA && dW && dC, "GPU memory")) {
		float *g;
		cmp_dev_gemm_w(0, 1, M, N, K, 1.0f, dA, ld, dW, ld, 0.0f, dC, ld);
		g = down(dC, M * ld);
		check_ok("cmp_dev_gemm_w");
		bf16_case("cmp_dev_gemm_w", g, r16, r32, M, N, ld, 1);
		free(g);
		cmp_dev_gemm(0, 1, M, N, K, 1.0f, dA, ld, dW, ld, 0.0f, dC, ld);
		g = down(dC, M * ld);
		check_ok("cmp_dev_gemm");
		bf16_case("cmp_dev_gemm under bf16", g, r16, r32, M, N, ld, 0);
		free(g);
	}
	cmp_dev_free(dA), cmp_dev_free(dW), cmp_dev_free(dC);
out:
	unsetenv("LC_BF16_EMULATE");
	T_OK(cmp_set_compute("f32", note, sizeof note, &err) == 0, "%s", err.msg);
	cmp_constant_drop(W);
	free(A), free(W), free(Wc), free(C), free(out), free(r16), free(r32);
}

/* bf16 products of GPU buffers at the full-size encoder's shapes
 * (d 768, d_ff 2048, 16,384 rows), queued back to back as
 * arch/locost_gpu.c queues them (the bf16 scratch grows between them),
 * against fp32 products of the same operands rounded on the CPU. */
static void test_bf16_big(void)
{
	enum { D = 768, FF = 2048, L = 16384 };
	static const struct {
		int ta, tb;
		int64_t M, N, K, lda, ldb, ar, ac, br, bc;
		float beta;
	} p[] = {
		{ 0, 1, D, L, D, D, D, D, D, L, D, 0.0f },      /* Wk U^T */
		{ 1, 1, L, D, D, L, D, D, L, D, D, 1.0f },      /* H += Q^T Wo^T */
		{ 0, 1, L, FF, D, D, D, L, D, FF, D, 0.0f },    /* U Wi^T */
		{ 0, 1, L, D, FF, FF, FF, L, FF, D, FF, 1.0f }, /* H += A Wff^T */
	};
	enum { NP = sizeof p / sizeof *p };
	float *dA[NP], *dB[NP], *dC[NP], *rA[NP], *rB[NP], *rC[NP];
	float *h0 = rnd((int64_t)L * FF, 1.0);
	char note[160] = "";
	lc_err err;
	int ok = 1;

	if (!T_OK(cmp_set_compute("bf16", note, sizeof note, &err) == 0 && !note[0],
	          "bf16 on the GPU: %s", note[0] ? note : err.msg))
		return;
	for (int i = 0; i < NP; i++) {
		int64_t na = p[i].ar * p[i].ac, nb = p[i].br * p[i].bc, nc = p[i].M * p[i].N;
		float *a = rnd(na, 1.0), *b = rnd(nb, 0.05);
		dA[i] = up(a, na), dB[i] = up(b, nb), dC[i] = up(h0, nc);
		for (int64_t k = 0; k < na; k++)
			a[k] = cmp_bf16_round(a[k]);
		for (int64_t k = 0; k < nb; k++)
			b[k] = cmp_bf16_round(b[k]);
		rA[i] = up(a, na), rB[i] = up(b, nb), rC[i] = up(h0, nc);
		free(a), free(b);
		ok &= dA[i] && dB[i] && dC[i] && rA[i] && rB[i] && rC[i];
	}
	if (T_OK(ok, "GPU memory")) {
		for (int i = 0; i < NP; i++)
			cmp_dev_gemm_w(p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, 1.0f, dA[i], p[i].lda,
			               dB[i], p[i].ldb, p[i].beta, dC[i], p[i].N);
		for (int i = 0; i < NP; i++)
			cmp_dev_gemm(p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, 1.0f, rA[i], p[i].lda,
			             rB[i], p[i].ldb, p[i].beta, rC[i], p[i].N);
		for (int i = 0; i < NP; i++) {
			float *g = down(dC[i], p[i].M * p[i].N), *r = down(rC[i], p[i].M * p[i].N);
			check_ok("bf16 products");
			T_OK(rel(g, r, p[i].M * p[i].N) < 1e-5, "%lld x %lld x %lld (ta %d tb %d): %g",
			     (long long)p[i].M, (long long)p[i].N, (long long)p[i].K, p[i].ta, p[i].tb,
			     rel(g, r, p[i].M * p[i].N));
			free(g), free(r);
		}
	}
	for (int i = 0; i < NP; i++) {
		cmp_dev_free(dA[i]), cmp_dev_free(dB[i]), cmp_dev_free(dC[i]);
		cmp_dev_free(rA[i]), cmp_dev_free(rB[i]), cmp_dev_free(rC[i]);
	}
	free(h0);
	T_OK(cmp_set_compute("f32", note, sizeof note, &err) == 0, "%s", err.msg);
}

/* The S4D convolution of channels [g0, g0 + cnt) of the oracle model's
 * first layer, on the GPU and by ops/ssm.c, one or both directions. */
static void conv_case(lc_model *m, int nch, int64_t L, int g0, int cnt, int G)
{
	const lc_config *c = model_config(m);
	const locost_weights *W = model_weights(m);
	const locost_layer *Lw = &W->enc[0];
	int d = c->d_model, N2 = c->d_state / 2;
	ssm_params sp = { d, N2, nch, Lw->log_dt, Lw->inv_A_real, Lw->A_imag, Lw->B, Lw->C };
	float *x = rnd((int64_t)cnt * L, 1.0), *y = malloc((size_t)(cnt * L) * sizeof *y);
	double *dtA = malloc((size_t)(cnt * N2 * 2) * sizeof *dtA);
	double *coef = malloc((size_t)(cnt * nch * N2 * 2) * sizeof *coef);
	int64_t *T = malloc((size_t)cnt * sizeof *T), Tmax = 1, n;
	cmp_fftcache *fc;
	const cmp_fft *pl;
	lc_err err;

	for (int h = 0; h < cnt; h++) {
		T[h] = ssm_support(&sp, g0 + h, L);
		if (T[h] > Tmax)
			Tmax = T[h];
		ssm_modes(&sp, g0 + h, dtA + h * N2 * 2, coef + h * nch * N2 * 2);
	}
	n = cmp_fft_size_smooth(L + Tmax - 1);      /* as arch/locost_gpu.c */
	fc = cmp_fftcache_new(&err);
	pl = cmp_fft_get(fc, n, &err);
	{
		ssm_kwork *kw = ssm_kwork_new(N2, nch, Tmax, &err);
		ssm_cwork *cw = ssm_cwork_new(n, &err);
		float *K = malloc((size_t)(nch * Tmax) * sizeof *K);
		for (int h = 0; h < cnt; h++) {
			ssm_kernel(&sp, g0 + h, T[h], K, T[h], kw, &err);
			ssm_conv(pl, cw, x + h * L, L, K, nch > 1 ? K + T[h] : NULL, T[h],
			         Lw->D[g0 + h], y + h * L, &err);
		}
		free(K);
		ssm_kwork_free(kw);
		ssm_cwork_free(cw);
	}
	{
		cmp_dev_conv *cv = cmp_dev_conv_new(n, G);
		float *dx = up(x, (int64_t)cnt * L), *g, *dD = up(Lw->D + g0, cnt);
		double *ddt = (double *)cmp_dev_alloc(cnt * N2 * 4);
		double *dco = (double *)cmp_dev_alloc(cnt * nch * N2 * 4);
		int64_t *dT = (int64_t *)cmp_dev_alloc(cnt * 2);
		T_OK(cv && dx && ddt && dco && dT, "GPU memory");
		cmp_dev_put_bytes(ddt, dtA, cnt * N2 * 2 * (int64_t)sizeof *dtA);
		cmp_dev_put_bytes(dco, coef, cnt * nch * N2 * 2 * (int64_t)sizeof *coef);
		cmp_dev_put_bytes(dT, T, cnt * (int64_t)sizeof *T);
		cmp_dev_conv_run(cv, dx, L, L, cnt, ddt, dco, N2, nch, dT, Tmax, dD);
		g = down(dx, (int64_t)cnt * L);
		check_ok("conv");
		T_OK(rel(g, y, (int64_t)cnt * L) < 1e-5, "conv nch %d L %lld (n %lld, T %lld): %g",
		     nch, (long long)L, (long long)n, (long long)Tmax, rel(g, y, (int64_t)cnt * L));
		free(g);
		cmp_dev_conv_free(cv);
		cmp_dev_free(dx), cmp_dev_free(dD), cmp_dev_free(ddt), cmp_dev_free(dco);
		cmp_dev_free(dT);
	}
	cmp_fftcache_free(fc);
	free(x), free(y), free(dtA), free(coef), free(T);
}

static void test_conv(void)
{
	lc_err err;
	lc_model *m = model_open(t_data("locost"), 0, &err);

	if (!T_OK(m != NULL, "%s", err.msg))
		return;
	conv_case(m, 2, 300, 0, 64, 64);
	conv_case(m, 1, 300, 5, 20, 32);
	conv_case(m, 2, 1, 3, 7, 8);
	conv_case(m, 2, 5000, 10, 50, 50);
	model_free(m);
}

/* The cross-attention over states on the GPU and ops/xattn.c's, each
 * against the same attention in double; the GPU within the oracles'
 * 1e-4 relative (both sum tens of thousands of fp32 products, in other
 * orders: 1.3e-5 apart at 70,000 states on an H200). */
static void xattn_case(int64_t R, int64_t L, int d)
{
	lc_err err;
	xattn_work *w = xattn_work_new(R, d, 1, &err);
	float *qp = rnd(R * d, 0.2), *E = rnd(L * d, 1.0), *Ed = up(E, L * d);
	float *c0 = malloc((size_t)(R * d) * sizeof *c0), *c1 = malloc((size_t)(R * d) * sizeof *c1);
	float *l0 = malloc((size_t)R * sizeof *l0), *l1 = malloc((size_t)R * sizeof *l1);
	float *cr = malloc((size_t)(R * d) * sizeof *cr), *lr = malloc((size_t)R * sizeof *lr);
	double *s = malloc((size_t)L * sizeof *s), *acc = malloc((size_t)d * sizeof *acc);

	if (!T_OK(w && Ed, "memory"))
		return;
	for (int64_t r = 0; r < R; r++) {       /* the reference, in double */
		double mx = -INFINITY, z = 0;
		for (int64_t j = 0; j < L; j++) {
			double v = 0;
			for (int k = 0; k < d; k++)
				v += (double)qp[r * d + k] * E[j * d + k];
			s[j] = v;
			mx = v > mx ? v : mx;
		}
		memset(acc, 0, (size_t)d * sizeof *acc);
		for (int64_t j = 0; j < L; j++) {
			double p = exp(s[j] - mx);
			z += p;
			for (int k = 0; k < d; k++)
				acc[k] += p * E[j * d + k];
		}
		for (int k = 0; k < d; k++)
			cr[r * d + k] = (float)(acc[k] / z);
		lr[r] = (float)(mx + log(z));
	}
	xattn_fw(w, qp, R, E, L, d, c0, l0);
	for (int64_t i = 0; i < R * d; i++)
		c1[i] = NAN;
	xattn_fw_any(w, qp, R, E, Ed, L, d, c1, l1);
	check_ok("xattn");
	T_OK(rel(c1, cr, R * d) < 1e-4, "%lld rows over %lld states of %d: ctx %g (the CPU's %g)",
	     (long long)R, (long long)L, d, rel(c1, cr, R * d), rel(c0, cr, R * d));
	T_OK(rel(l1, lr, R) < 1e-6, "lse %g (the CPU's %g)", rel(l1, lr, R), rel(l0, lr, R));
	printf("# xattn %lld x %lld x %d: GPU %.3g, CPU %.3g against double\n", (long long)R,
	       (long long)L, d, rel(c1, cr, R * d), rel(c0, cr, R * d));
	xattn_work_free(w);
	cmp_dev_free(Ed);
	free(qp), free(E), free(c0), free(c1), free(l0), free(l1), free(cr), free(lr), free(s);
	free(acc);
}

static void test_xattn(void)
{
	xattn_case(12, 1, 64);
	xattn_case(12, 1000, 64);
	xattn_case(37, 3001, 96);
	xattn_case(48, 70000, 768);
}

/* ------------------------------------ encoder attentions (ops/segattn.h) */

/* Each attention on the CPU (by products, the path the oracle goldens
 * check) and on the GPU (one kernel over the same plan of segments):
 * both fp32, summing in other orders, so within 1e-5 of the largest
 * output; the columns between the heads' (a row stride wider than the
 * heads) untouched on both. The small ones reach the GPU only with
 * $LC_CUDA_ALL=1 (make check-cuda runs test_dev both ways), and each
 * case checks where it ran. */
enum { A_FULL, A_LSG, A_BLK, A_POOL, A_SEGX };

typedef struct acase {
	int kind, heads, dk;
	int64_t R, ld;              /* rows (LSG: globals + tokens) and their stride */
	const float *kmask;         /* A_FULL, A_LSG */
	const lsg_spec *lsg;
	const blkattn_spec *blk;
	const unsigned char *pad;   /* A_BLK, A_POOL */
	const poolattn_spec *pool;
	const poolattn_w *pw;
	int64_t S;                  /* A_SEGX: keys */
	int big;                    /* work enough for the GPU without $LC_CUDA_ALL=1 */
} acase;

/* the kernel's runs during the last attend_on */
static int64_t ran;

static float *attend_on(const char *dev, const acase *c, const float *q, const float *k,
                        const float *v)
{
	int64_t n = c->R * c->ld;
	float *out = malloc((size_t)n * sizeof *out);
	lc_err err;
	int rc = -1;

	for (int64_t i = 0; i < n; i++)
		out[i] = 7.0f;          /* what no attention writes stays */
	T_OK(cmp_set_device(dev, on_warn, NULL, &err) == 0, "%s: %s", dev, err.msg);
	ran = sa_gpu_runs();
	switch (c->kind) {
	case A_FULL:
		rc = attn_full_fw(c->heads, c->dk, 1.0f / sqrtf((float)c->dk), q, k, v, c->ld, c->R,
		                  c->kmask, out, 2, &err);
		break;
	case A_LSG:
		rc = lsg_attn_fw(c->lsg, q, k, v, c->ld, c->R - c->lsg->ng, c->kmask, out, 2, &err);
		break;
	case A_BLK:
		rc = blkattn_fw(c->blk, q, k, v, c->ld, c->R, c->pad, out, 2, &err);
		break;
	case A_POOL: {
		poolattn_tape t;
		rc = poolattn_tape_init(&t, c->pool, c->R, &err);
		if (rc == 0)
			rc = poolattn_fw(c->pool, c->pw, q, c->R, c->pad, &t, out, 0, 2, &err);
		poolattn_tape_free(&t);
		break;
	}
	case A_SEGX:
		rc = segxattn_fw(c->heads, c->heads * c->dk, q, c->R, k, v, c->S, out, 2, &err);
		break;
	}
	T_OK(rc == 0, "%s: %s", dev, err.msg);
	ran = sa_gpu_runs() - ran;
	return out;
}

static void attn_check(const char *what, const acase *c)
{
	int64_t w = (int64_t)c->heads * c->dk, nk = c->kind == A_SEGX ? c->S : c->R;
	float *q = rnd(c->R * c->ld, 1.0), *k = rnd(nk * c->ld, 1.0), *v = rnd(nk * c->ld, 1.0);
	float *o0 = attend_on("cpu", c, q, k, v), *o1 = attend_on("cuda", c, q, k, v);
	double e = rel_m(o1, o0, c->R, w, c->ld);
	int64_t bad = 0;

	/* the kernel ran where it should: not for heads wider than it takes,
	 * nor for small work unless every one is sent */
	const char *all = getenv("LC_CUDA_ALL");
	int want = c->dk <= CMP_DEV_SEG_DK && (c->big || (all && !strcmp(all, "1")));

	T_OK(ran == want, "%s: %lld runs on the GPU, %d expected", what, (long long)ran, want);

	for (int64_t r = 0; r < c->R; r++)
		for (int64_t j = w; j < c->ld; j++)
			bad += o0[r * c->ld + j] != 7.0f || o1[r * c->ld + j] != 7.0f;
	T_OK(e < 1e-5, "%s: GPU %g from the CPU", what, e);
	T_OK(bad == 0, "%s: %lld values outside the heads' columns written", what, (long long)bad);
	printf("# %s: GPU %.2g from the CPU\n", what, e);
	free(q), free(k), free(v), free(o0), free(o1);
}

static void test_attention(void)
{
	static const int types[] = { LSG_NONE, LSG_NORM, LSG_POOLING, LSG_STRIDE, LSG_BLOCK_STRIDE,
	                             LSG_BOS_POOLING, LSG_LSH };
	float *km = malloc(2000 * sizeof *km), *R = NULL, *W = rnd(8 * 64 * 64, 0.125);
	unsigned char *pad = calloc(2000, 1);
	char what[160];

	for (int64_t i = 0; i < 2000; i++)
		km[i] = i % 97 == 3 || i >= 1500 ? -FLT_MAX : 0.0f;
	/* dense: BART's encoder (no mask), a mask, each kernel width */
	attn_check("dense 1000 rows, 12 x 64", &(acase){ .kind = A_FULL, .heads = 12, .dk = 64,
	           .R = 1000, .ld = 768, .big = 1 });
	attn_check("dense 333 rows, 3 x 16, masked, wider rows",
	           &(acase){ .kind = A_FULL, .heads = 3, .dk = 16, .R = 333, .ld = 53,
	                     .kmask = km + 1300 });
	attn_check("dense 70 rows, 2 x 96", &(acase){ .kind = A_FULL, .heads = 2, .dk = 96, .R = 70,
	           .ld = 192, .kmask = km });
	attn_check("dense 65 rows, 1 x 8, all masked but 0", &(acase){ .kind = A_FULL, .heads = 1,
	           .dk = 8, .R = 65, .ld = 8, .kmask = km + 1499 });
	attn_check("dense 100 rows, 1 x 8, all masked", &(acase){ .kind = A_FULL, .heads = 1,
	           .dk = 8, .R = 100, .ld = 8, .kmask = km + 1500 });
	attn_check("dense 90 rows, 2 x 128", &(acase){ .kind = A_FULL, .heads = 2, .dk = 128,
	           .R = 90, .ld = 256 });
	attn_check("dense 50 rows, 1 x 130 (on the CPU)", &(acase){ .kind = A_FULL, .heads = 1,
	           .dk = 130, .R = 50, .ld = 130 });
	/* LSG: every sparsity, globals, pads, the first token masked */
	for (size_t t = 0; t < sizeof types / sizeof *types; t++)
		for (int sf = 2; sf <= 4; sf += 2) {
			lsg_spec sp = { .heads = 2, .dk = 32, .scale = 1.0f / sqrtf(32.0f), .ng = 2, .bs = 16,
			                .sbs = 16, .sf = sf, .type = types[t], .lsh_rounds = 2 };
			int64_t T = 256, n;
			if (lsg_spec_invalid(sp.bs, sp.sbs, sp.sf, sp.type))
				continue;
			free(R);
			n = lsg_lsh_draw_len(&sp, 0) + lsg_lsh_draw_len(&sp, 1);
			sp.lsh_R = R = rnd(n, 1.0);
			km[1300] = -FLT_MAX;        /* the first token, with mask_first_token */
			snprintf(what, sizeof what, "LSG %s, sparsity factor %d, %lld tokens",
			         lsg_sparsity_name(sp.type), sf, (long long)T);
			attn_check(what, &(acase){ .kind = A_LSG, .heads = 2, .dk = 32, .R = 2 + T, .ld = 70,
			                     .kmask = km + 1298, .lsg = &sp });
		}
	/* no global rows, more globals than a group's rows, sparse blocks
	 * smaller than the blocks, a short input (dense) */
	for (int v = 0; v < 4; v++) {
		static const int ng[] = { 0, 70, 3, 2 }, bs[] = { 16, 16, 32, 32 };
		static const int sbs[] = { 16, 16, 16, 32 };
		lsg_spec sp = { .heads = 2, .dk = 32, .scale = 1.0f / sqrtf(32.0f), .ng = ng[v],
		                .bs = bs[v], .sbs = sbs[v], .sf = 2, .type = LSG_POOLING,
		                .lsh_rounds = 1 };
		int64_t T = v == 3 ? 40 : 256;
		if (!T_OK(!lsg_spec_invalid(sp.bs, sp.sbs, sp.sf, sp.type), "case %d: %s", v,
		          lsg_spec_invalid(sp.bs, sp.sbs, sp.sf, sp.type)))
			continue;
		snprintf(what, sizeof what, "LSG pooling, %d globals, blocks of %d, sparse blocks of %d, "
		         "%lld tokens", ng[v], bs[v], sbs[v], (long long)T);
		attn_check(what, &(acase){ .kind = A_LSG, .heads = 2, .dk = 32, .R = ng[v] + T, .ld = 64,
		                           .kmask = km + 1200, .lsg = &sp });
	}
	{
		lsg_spec sp = { .heads = 12, .dk = 64, .scale = 0.125f, .ng = 1, .bs = 128, .sbs = 128,
		                .sf = 8, .type = LSG_POOLING, .lsh_rounds = 1 };
		float *km0 = calloc(4097, sizeof *km0);
		attn_check("LSG pooling, BART-base's heads, 4096 tokens",
		           &(acase){ .kind = A_LSG, .heads = 12, .dk = 64, .R = 1 + 4096, .ld = 768,
		                     .kmask = km0, .lsg = &sp, .big = 1 });
		free(km0);
	}
	/* BART-LS's blocks, the top-down's blocks with token 0 */
	for (int64_t i = 0; i < 2000; i++)
		pad[i] = i % 29 == 5 || i >= 180;
	for (int g0 = 0; g0 < 2; g0++)
		for (int pd = 0; pd < 2; pd++) {
			blkattn_spec bs = { .heads = 3, .dk = 16, .bs = 16, .scale = 0.25f, .global0 = g0 };
			int64_t T = g0 ? 199 : 208;
			snprintf(what, sizeof what, "blocks of 16, %lld rows, %s, %s", (long long)T,
			         g0 ? "token 0 global" : "no global", pd ? "pads" : "no pads");
			attn_check(what, &(acase){ .kind = A_BLK, .heads = 3, .dk = 16, .R = T, .ld = 50, .blk = &bs,
			                     .pad = pd ? pad : NULL });
		}
	/* blocks wider than a group; token 0 global with one row, fewer rows
	 * than a block, blocks of one, token 0 a pad */
	{
		blkattn_spec b100 = { .heads = 2, .dk = 16, .bs = 100, .scale = 0.25f, .global0 = 0 };
		blkattn_spec g100 = { .heads = 2, .dk = 16, .bs = 100, .scale = 0.25f, .global0 = 1 };
		blkattn_spec g16 = { .heads = 2, .dk = 16, .bs = 16, .scale = 0.25f, .global0 = 1 };
		blkattn_spec g1 = { .heads = 2, .dk = 16, .bs = 1, .scale = 0.25f, .global0 = 1 };
		unsigned char *p0 = calloc(300, 1);
		for (int i = 0; i < 300; i++)
			p0[i] = i == 0 || i % 7 == 3 || i >= 290;
		attn_check("blocks of 100, 300 rows, pads", &(acase){ .kind = A_BLK, .heads = 2,
		           .dk = 16, .R = 300, .ld = 32, .blk = &b100, .pad = pad });
		attn_check("blocks of 100, token 0 global, 250 rows, token 0 a pad",
		           &(acase){ .kind = A_BLK, .heads = 2, .dk = 16, .R = 250, .ld = 32,
		                     .blk = &g100, .pad = p0 });
		attn_check("token 0 global, one row", &(acase){ .kind = A_BLK, .heads = 2, .dk = 16,
		           .R = 1, .ld = 32, .blk = &g16, .pad = p0 });
		attn_check("token 0 global, 5 rows of a block of 16", &(acase){ .kind = A_BLK,
		           .heads = 2, .dk = 16, .R = 5, .ld = 32, .blk = &g16, .pad = p0 });
		attn_check("token 0 global, blocks of 1", &(acase){ .kind = A_BLK, .heads = 2,
		           .dk = 16, .R = 7, .ld = 32, .blk = &g1, .pad = p0 });
		free(p0);
	}
	/* pooled keys (whole windows of pads masked: -inf) and segments */
	{
		poolattn_spec ps = { .heads = 4, .d = 64, .kernel = 4, .stride = 4, .padding = 0 };
		poolattn_w pw = { W, W + 4096, W + 8192, W + 12288, W + 16384, W + 20480, W + 24576,
		                  W + 28672 };
		attn_check("pooled keys, 200 rows, pads", &(acase){ .kind = A_POOL, .heads = 4,
		           .dk = 16, .R = 200, .ld = 64, .pad = pad, .pool = &ps, .pw = &pw });
		attn_check("token to segment, 300 rows over 40", &(acase){ .kind = A_SEGX, .heads = 4,
		           .dk = 16, .R = 300, .ld = 64, .S = 40 });
		attn_check("token to segment, 30 rows over none", &(acase){ .kind = A_SEGX, .heads = 4,
		           .dk = 16, .R = 30, .ld = 64, .S = 0 });
		memset(pad, 1, 64);
		attn_check("pooled keys, 40 rows, all pads", &(acase){ .kind = A_POOL, .heads = 4,
		           .dk = 16, .R = 40, .ld = 64, .pad = pad, .pool = &ps, .pw = &pw });
	}
	T_OK(cmp_set_device("cuda", on_warn, NULL, NULL) == 0, "back to cuda");
	free(km), free(R), free(W), free(pad);
}

/* encoder states of ids on dev ("cpu" or "cuda") under --compute prec
 * (f32, bf16, or "emulated": bf16 by LC_BF16_EMULATE=1) */
static float *encode_with(lc_model *m, const char *dev, const char *prec, const int32_t *ids,
                          int64_t L)
{
	lc_err err;
	lc_encoder *e;
	float *out = malloc((size_t)(L * model_config(m)->d_model) * sizeof *out);
	char note[160] = "";

	T_OK(cmp_set_device(dev, on_warn, NULL, &err) == 0, "%s: %s", dev, err.msg);
	setenv("LC_BF16_EMULATE", strcmp(prec, "emulated") ? "0" : "1", 1);
	T_OK(cmp_set_compute(strcmp(prec, "f32") ? "bf16" : "f32", note, sizeof note, &err) == 0 &&
	     !note[0], "%s %s: %s", dev, prec, note[0] ? note : err.msg);
	e = encoder_new(m, 2, &err);
	if (!T_OK(e != NULL, "%s", err.msg))
		return out;
	T_OK(encoder_run(e, ids, L, out, NULL, NULL, &err) == 0, "%s: %s", dev, err.msg);
	encoder_free(e);
	T_OK(cmp_set_compute("f32", note, sizeof note, &err) == 0, "%s", err.msg);
	unsetenv("LC_BF16_EMULATE");
	return out;
}

/* The encoder states of L ids on the GPU against the CPU's within tol;
 * with bf16, --compute bf16's too. The ids: random, or (bart) BART's
 * bos, ids past its four special tokens, eos, and then the layers must
 * have run whole on the GPU (arch/bart_gpu.c: bart_gpu_runs counts the
 * encodes). */
static void devices_case(lc_model *m, const char *what, int64_t L, double tol, int bf16,
                         int bart)
{
	int d = model_config(m)->d_model;
	uint64_t V = (uint64_t)model_config(m)->vocab_size;
	int32_t *ids = malloc((size_t)L * sizeof *ids);
	float *a, *b;
	long long g0;

	for (int64_t t = 0; t < L; t++)
		ids[t] = bart ? (int32_t)(4 + lc_rng_next(&rng) % (V - 4))
		              : (int32_t)(lc_rng_next(&rng) % V);
	if (bart)
		ids[0] = 0, ids[L - 1] = 2;
	a = encode_with(m, "cpu", "f32", ids, L);
	g0 = bart_gpu_runs();
	b = encode_with(m, "cuda", "f32", ids, L);
	if (bart)
		T_OK(bart_gpu_runs() > g0, "%s: the layers ran on the GPU", what);
	T_OK(rel(b, a, L * d) < tol, "%s, %lld tokens: GPU against CPU %g", what, (long long)L,
	     rel(b, a, L * d));
	printf("# %s, %lld tokens: GPU against CPU %.3g\n", what, (long long)L, rel(b, a, L * d));
	if (bf16) {
		/* bf16 on the GPU: away from fp32 by bf16's rounding (more than
		 * fp32's 1e-5 above, within t6030's 2e-2), as far as the CPU's
		 * emulation is. Not closer to the emulation than that: a
		 * last-bit difference in an activation rounds it to the
		 * neighbouring bf16 value (t6030-bf16.sh); test_bf16 checks the
		 * products themselves against rounded operands. */
		float *em = encode_with(m, "cpu", "emulated", ids, L);
		float *g16 = encode_with(m, "cuda", "bf16", ids, L);
		double e_em = rel(em, a, L * d), e_g = rel(g16, a, L * d), e_x = rel(g16, em, L * d);
		T_OK(e_g > 1e-4 && e_g < 2e-2 && e_g < 3 * e_em,
		     "%s, %lld tokens, bf16: from fp32: GPU %g, the CPU's emulation %g", what,
		     (long long)L, e_g, e_em);
		printf("# %s, %lld tokens, bf16: GPU against the CPU's emulation %.3g; from fp32: "
		       "GPU %.3g, emulated %.3g\n", what, (long long)L, e_x, e_g, e_em);
		free(em), free(g16);
	}
	free(a), free(b), free(ids);
}

static void encoder_case(const char *dir, int64_t L, double tol, int bf16)
{
	lc_err err;
	lc_model *m = model_open(dir, 0, &err);

	if (!T_OK(m != NULL, "%s: %s", dir, err.msg))
		return;
	devices_case(m, dir, L, tol, bf16, 0);
	model_free(m);
}

/* A model of config cfg with random weights (seed) in a new directory
 * made from the template dir: 1, 0 when it failed (said; the directory
 * is there), -1 when no directory could be made. */
static int random_model(char *dir, const char *cfg, uint64_t seed)
{
	char path[4096];
	lc_err err;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/config.json", dir);
	return T_OK(t_write_file(path, cfg, strlen(cfg)) == 0, "%s: config", dir) &&
	       T_OK(model_write_random(dir, seed, &err) == 0, "%s: %s", dir, err.msg);
}

static void test_encoder(void)
{
	static const char cfg[] =
		"{\"architectures\": [\"LOCOSTForConditionalGeneration\"], \"d_model\": 96, "
		"\"d_ff\": 160, \"d_kv\": 16, \"d_state\": 24, \"num_layers\": 3, "
		"\"num_decoder_layers\": 1, \"num_heads\": 4, \"vocab_size\": 300, "
		"\"layer_norm_epsilon\": 1e-06, \"feed_forward_proj\": \"relu\", "
		"\"dense_act_fn\": \"relu\", \"is_gated_act\": false, \"is_encoder_decoder\": true, "
		"\"tie_word_embeddings\": true, \"pad_token_id\": 0, \"eos_token_id\": 1, "
		"\"decoder_start_token_id\": 0, \"bidirectional\": false, \"gating\": false}";
	char dir[] = "/tmp/lc-test-dev.XXXXXX";
	int made = random_model(dir, cfg, 7);

	if (made > 0) {
		encoder_case(dir, 1, 1e-5, 0);
		encoder_case(dir, 777, 1e-5, 1);
	}
	if (made >= 0)
		t_rm_dir(dir);
	encoder_case(t_data("locost"), 20000, 1e-5, 1);
}

/* A random model of config cfg (JSON), its encoder states on the GPU,
 * with its layers whole there, against the CPU's within tol. */
static void bart_family_case(const char *what, const char *cfg, int64_t L, double tol)
{
	char dir[] = "/tmp/lc-test-dev.XXXXXX";
	int made = random_model(dir, cfg, 11);
	lc_err err;
	lc_model *m;

	if (made > 0 && T_OK((m = model_open(dir, 0, &err)) != NULL, "%s: %s", what, err.msg)) {
		devices_case(m, what, L, tol, 0, 1);
		model_free(m);
	}
	if (made >= 0)
		t_rm_dir(dir);
}

#define BART_CFG(arch, type, extra) \
	"{\"activation_function\": \"gelu\", \"architectures\": [\"" arch "\"], " \
	"\"bos_token_id\": 0, \"d_model\": 128, \"decoder_attention_heads\": 4, " \
	"\"decoder_ffn_dim\": 256, \"decoder_layers\": 1, \"decoder_start_token_id\": 2, " \
	"\"encoder_attention_heads\": 4, \"encoder_ffn_dim\": 512, \"encoder_layers\": 2, " \
	"\"eos_token_id\": 2, \"max_position_embeddings\": 4096, \"model_type\": \"" type "\", " \
	"\"pad_token_id\": 1, \"scale_embedding\": false, \"vocab_size\": 300" extra "}"

/* LSG's config as a format: block_size, sparse_block_size (%d),
 * sparsity_factor (%s), sparsity_type (%s) */
#define LSG_CFG \
	BART_CFG("LSGBartForConditionalGeneration", "bart", \
	         ", \"block_size\": %d, \"sparse_block_size\": %d, \"sparsity_factor\": %s" \
	         ", \"sparsity_type\": \"%s\", \"num_global_tokens\": 2, " \
	         "\"adaptive\": true, \"mask_first_token\": true, " \
	         "\"pass_global_tokens_to_decoder\": false, \"pool_with_global\": true, " \
	         "\"lsh_num_pre_rounds\": 1")

/* The BART family's encoders with their layers on the GPU, each layer's
 * products past the GPU's threshold: the self-attention there too (BART,
 * LSG, BART-LS's and top-down's blocks), LSG's sparse slots, BART-LS's
 * pooled and top-down's segment attention on the CPU over copies, and a
 * head of 256 values (over the kernel's 128) attended on the CPU. */
static void test_bart_layers(void)
{
	static const struct {
		const char *type, *sf;
	} lsg[] = { { "norm", "2" }, { "pooling", "4" }, { "stride", "2" },
	            { "block_stride", "2" }, { "bos_pooling", "2" }, { "lsh", "2" },
	            { "none", "2" } };
	char cfg[2048], what[64];

	bart_family_case("BART", BART_CFG("BartForConditionalGeneration", "bart", ""), 1000, 1e-5);
	bart_family_case("BART, one head of 256",
	                 "{\"activation_function\": \"gelu\", \"architectures\": "
	                 "[\"BartForConditionalGeneration\"], \"bos_token_id\": 0, \"d_model\": 256, "
	                 "\"decoder_attention_heads\": 1, \"decoder_ffn_dim\": 256, "
	                 "\"decoder_layers\": 1, \"decoder_start_token_id\": 2, "
	                 "\"encoder_attention_heads\": 1, \"encoder_ffn_dim\": 512, "
	                 "\"encoder_layers\": 2, \"eos_token_id\": 2, "
	                 "\"max_position_embeddings\": 1024, \"model_type\": \"bart\", "
	                 "\"pad_token_id\": 1, \"scale_embedding\": false, \"vocab_size\": 300}",
	                 1000, 1e-5);
	for (size_t i = 0; i < sizeof lsg / sizeof *lsg; i++) {
		snprintf(cfg, sizeof cfg, LSG_CFG, 32, 32, lsg[i].sf, lsg[i].type);
		snprintf(what, sizeof what, "LSG %s, factor %s", lsg[i].type, lsg[i].sf);
		bart_family_case(what, cfg, 1000, 1e-5);
	}
	/* blocks of 512: 1000 tokens (padded to 1024) attend densely */
	snprintf(cfg, sizeof cfg, LSG_CFG, 512, 256, "2", "norm");
	bart_family_case("LSG short (dense)", cfg, 1000, 1e-5);
	bart_family_case("BART-LS", BART_CFG("BartLSForConditionalGeneration", "bart_ls",
	                 ", \"max_decoder_position_embeddings\": 256, \"block_size\": 256, "
	                 "\"pooling_layers\": 1, \"pool_kernel\": 18, \"pool_stride\": 12, "
	                 "\"pool_padding\": 9"), 1500, 1e-5);
	bart_family_case("top-down", BART_CFG("BartTopDownForConditionalGeneration", "bart_topdown",
	                 ", \"max_decoder_position_embeddings\": 256, \"window_size\": 256, "
	                 "\"bottom_up_layers\": 1, \"top_down_layers\": 1, \"segment_layers\": 1, "
	                 "\"pool_kernel\": 32, \"pool_stride\": 24, \"pool_type\": \"avg\""),
	                 1500, 1e-5);
}

int main(void)
{
	lc_err err;

	T_OK(cmp_set_device(NULL, on_warn, NULL, &err) == 0, "%s", err.msg);
	T_RUN(test_absent);
	if (cmp_dev_on()) {
		T_RUN(test_elementwise);
		T_RUN(test_gemm);
		T_RUN(test_bf16);
		T_RUN(test_bf16_big);
		T_RUN(test_conv);
		T_RUN(test_xattn);
		T_RUN(test_attention);
		T_RUN(test_encoder);
		T_RUN(test_bart_layers);
		T_OK(said == 0, "the GPU failed %d times (above): the CPU computed instead", said);
	} else {
		printf("# no GPU: the device's operations not run; bf16's checks on the CPU's "
		       "emulation\n");
		T_RUN(test_bf16);
	}
	return t_done();
}
