/* ssm: FFT convolution against the direct O(L^2) sum at many lengths
 * (primes included, truncated kernels included), kernels against the
 * step-by-step ZOH recurrence, the truncation bound, and the backward of
 * both (convolution and kernel parameters) against finite differences. */
#include "t.h"

#include <complex.h>
#include <stdint.h>

#include "ops/ssm.h"
#include "ops/vmath.h"

#ifndef CMPLX   /* glibc defines it for gcc only */
#define CMPLX(x, y) ((double complex)((double)(x) + _Complex_I * (double)(y)))
#endif


static void test_fft_vs_direct(void)
{
	static const int64_t lens[] = { 1, 2, 3, 5, 7, 8, 13, 31, 64, 97, 127, 256, 257, 509, 1000, 1021, 2053 };
	double worst = 0;

	for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
		int64_t L = lens[li];
		for (int trunc = 0; trunc < 2; trunc++) {
			int64_t T = trunc ? 1 + (int64_t)(t_urand() * (double)L) : L;
			float *x = malloc((size_t)L * 4), *y = malloc((size_t)L * 4);
			float *K0 = malloc((size_t)T * 4), *K1 = malloc((size_t)T * 4);
			float D = (float)t_nrand();
			lc_err err;
			cmp_fftcache *fc = cmp_fftcache_new(&err);
			const cmp_fft *pl = fc ? cmp_fft_get(fc, ssm_fft_size(L, T), &err) : NULL;
			ssm_cwork *w = pl ? ssm_cwork_new(cmp_fft_n(pl), &err) : NULL;
			double mx = 0, er = 0;

			if (!T_OK(pl && w, "%s", err.msg))
				return;
			T_OK(cmp_fft_n(pl) >= L + T - 1 && cmp_fft_n(pl) % 2 == 0, "size");
			for (int64_t i = 0; i < L; i++)
				x[i] = (float)t_nrand();
			for (int64_t i = 0; i < T; i++) {
				K0[i] = (float)(t_nrand() * exp(-0.01 * (double)i));
				K1[i] = (float)(t_nrand() * exp(-0.01 * (double)i));
			}
			T_OK(ssm_conv(pl, w, x, L, K0, K1, T, D, y, &err) == 0, "%s", err.msg);
			for (int64_t t = 0; t < L; t++) {
				double s = (double)D * x[t];
				for (int64_t j = 0; j < T && j <= t; j++)
					s += (double)K0[j] * x[t - j];
				for (int64_t j = 0; j < T && t + j < L; j++)
					s += (double)K1[j] * x[t + j];
				mx = fmax(mx, fabs(s));
				er = fmax(er, fabs(s - y[t]));
			}
			T_OK(er <= 1e-5 * mx, "L %lld T %lld: rel err %g", (long long)L, (long long)T, er / mx);
			worst = fmax(worst, er / mx);
			/* in place gives the same */
			ssm_conv(pl, w, x, L, K0, K1, T, D, x, &err);
			T_OK(memcmp(x, y, (size_t)L * 4) == 0, "in place differs at L %lld", (long long)L);
			free(x); free(y); free(K0); free(K1);
			ssm_cwork_free(w);
			cmp_fftcache_free(fc);
		}
	}
	printf("# fft vs direct: worst rel err %.3g\n", worst);
}

/* The convolution by blocks (overlap-save: a transform size below
 * L + T - 1) against the direct sum: one and two directions, T = 1, the
 * last block short or full (two full blocks of the bidirectional case), in
 * place bit for bit as out of place; and ssm_conv_size choosing blocks
 * only where their context fits (B >= 2 ctx), one cycle where the kernel
 * is long. */
static void test_conv_blocks(void)
{
	static const int64_t cs[][3] = {         /* L, T, B */
		{ 5000, 1, 1024 }, { 5000, 3, 1024 }, { 3000, 300, 2048 }, { 1500, 300, 1536 },
		{ 20000, 100, 4096 }, { 2 * (4096 - 198), 100, 4096 }, { 200000, 50, 0 },
		{ 600000, 2000, 0 },
	};
	double worst = 0;
	lc_err err;
	cmp_fftcache *fc = cmp_fftcache_new(&err);

	for (size_t ci = 0; ci < sizeof cs / sizeof *cs; ci++)
		for (int bidir = 0; bidir < 2; bidir++) {
			int64_t L = cs[ci][0], T = cs[ci][1], ctx = (T - 1) * (bidir ? 2 : 1);
			int64_t n = cs[ci][2] ? cs[ci][2] : ssm_conv_size(L, T, bidir);
			const cmp_fft *pl = cmp_fft_get(fc, n, &err);
			ssm_cwork *w = pl ? ssm_cwork_new(n, &err) : NULL;
			float *x = malloc((size_t)L * 4), *y = malloc((size_t)L * 4);
			float *K0 = malloc((size_t)T * 4), *K1 = malloc((size_t)T * 4);
			float D = (float)t_nrand();
			double mx = 0, er = 0;

			if (!T_OK(pl && w && x && y && K0 && K1, "%s", err.msg))
				return;
			T_OK(n < L + T - 1 && n >= 2 * ctx, "L %lld T %lld: blocks of %lld", (long long)L,
			     (long long)T, (long long)n);
			for (int64_t i = 0; i < L; i++)
				x[i] = (float)t_nrand();
			for (int64_t i = 0; i < T; i++) {
				K0[i] = (float)(t_nrand() * exp(-0.01 * (double)i));
				K1[i] = (float)(t_nrand() * exp(-0.01 * (double)i));
			}
			T_OK(ssm_conv(pl, w, x, L, K0, bidir ? K1 : NULL, T, D, y, &err) == 0, "%s",
			     err.msg);
			for (int64_t t = 0; t < L; t++) {
				double sum = (double)D * x[t];
				for (int64_t j = 0; j < T && j <= t; j++)
					sum += (double)K0[j] * x[t - j];
				for (int64_t j = 0; bidir && j < T && t + j < L; j++)
					sum += (double)K1[j] * x[t + j];
				mx = fmax(mx, fabs(sum));
				er = fmax(er, fabs(sum - y[t]));
			}
			T_OK(er <= 1e-5 * mx, "blocks: L %lld T %lld bidir %d: rel err %g", (long long)L,
			     (long long)T, bidir, er / mx);
			worst = fmax(worst, er / mx);
			ssm_conv(pl, w, x, L, K0, bidir ? K1 : NULL, T, D, x, &err);
			T_OK(memcmp(x, y, (size_t)L * 4) == 0, "blocks: in place differs at L %lld T %lld",
			     (long long)L, (long long)T);
			free(x); free(y); free(K0); free(K1);
			ssm_cwork_free(w);
		}
	/* a size too small for the kernels' context is an error, not a hang */
	{
		const cmp_fft *pl = cmp_fft_get(fc, 1024, &err);
		ssm_cwork *w = pl ? ssm_cwork_new(1024, &err) : NULL;
		float *x = calloc(5000, sizeof *x), *K = calloc(2 * 600, sizeof *K);

		T_OK(x && K && w && ssm_conv(pl, w, x, 5000, K, K + 600, 600, 0.0f, x, &err) < 0 &&
		     strstr(err.msg, "too small"), "blocks too small: %s", err.msg);
		free(x); free(K);
		ssm_cwork_free(w);
	}
	cmp_fftcache_free(fc);
	/* long kernels: one cycle */
	T_EQ_I(ssm_conv_size(65536, 65536, 1), ssm_fft_size(65536, 65536));
	T_EQ_I(ssm_conv_size(600000, 300000, 1), ssm_fft_size(600000, 300000));
	T_EQ_I(ssm_conv_size(100, 1, 1), ssm_fft_size(100, 1));
	printf("# fft blocks vs direct: worst rel err %.3g\n", worst);
}

/* Random S4D-Lin parameters for H channels, N2 modes. */
static float *params(int H, int N2, ssm_params *p)
{
	float *buf = malloc(sizeof(float) * (size_t)(H + 2 * H * N2 + 2 * H * N2 + 4 * H * N2));
	float *q = buf;
	p->H = H; p->N2 = N2; p->nch = 2;
	p->log_dt = q; q += H;
	p->inv_A_real = q; q += H * N2;
	p->A_imag = q; q += H * N2;
	p->B = q; q += 2 * H * N2;
	p->C = q;
	for (int h = 0; h < H; h++) {
		buf[h] = (float)(log(1e-3) + t_urand() * (log(1e-1) - log(1e-3)));
		for (int n = 0; n < N2; n++) {
			((float *)p->inv_A_real)[h * N2 + n] = (float)(log(0.5) + 0.2 * t_nrand());
			((float *)p->A_imag)[h * N2 + n] = (float)(3.14159265 * n * (1 + 0.05 * t_nrand()));
			((float *)p->B)[(h * N2 + n) * 2] = (float)(1 + 0.2 * t_nrand());
			((float *)p->B)[(h * N2 + n) * 2 + 1] = (float)(0.2 * t_nrand());
		}
	}
	for (int i = 0; i < 4 * H * N2; i++)
		((float *)p->C)[i] = (float)(0.5 * t_nrand());
	return buf;
}

static void test_kernel_vs_recurrence(void)
{
	int H = 6, N2 = 16;
	int64_t L = 3000;
	ssm_params p;
	float *buf = params(H, N2, &p), *K = malloc(2 * (size_t)L * 4);
	lc_err err;
	ssm_kwork *w = ssm_kwork_new(N2, 2, L, &err);

	for (int h = 0; h < H; h++) {
		double dt = exp((double)p.log_dt[h]), mx = 0, er = 0;
		T_OK(ssm_kernel(&p, h, L, K, L, w, &err) == 0, "%s", err.msg);
		for (int c = 0; c < 2; c++) {
			double complex x[16], Ab[16], Bb[16], Cc[16];
			for (int n = 0; n < N2; n++) {
				double complex A = CMPLX(-exp((double)p.inv_A_real[h * N2 + n]), (double)p.A_imag[h * N2 + n]);
				Ab[n] = cexp(dt * A);
				Bb[n] = (Ab[n] - 1) / A * CMPLX(p.B[(h * N2 + n) * 2], p.B[(h * N2 + n) * 2 + 1]);
				Cc[n] = CMPLX(p.C[((c * H + h) * N2 + n) * 2], p.C[((c * H + h) * N2 + n) * 2 + 1]);
				x[n] = 0;
			}
			/* impulse response of x_t = Ab x_{t-1} + Bb u_t, y = 2 Re C x */
			for (int64_t t = 0; t < L; t++) {
				double complex s = 0;
				for (int n = 0; n < N2; n++) {
					x[n] = Ab[n] * x[n] + (t == 0 ? Bb[n] : 0);
					s += Cc[n] * x[n];
				}
				mx = fmax(mx, fabs(2 * creal(s)));
				er = fmax(er, fabs(2 * creal(s) - K[c * L + t]));
			}
		}
		T_OK(er <= 1e-5 * mx, "channel %d: kernel vs recurrence rel err %g", h, er / mx);
	}
	free(buf);
	free(K);
	ssm_kwork_free(w);
}

/* The AVX-512 evaluation of the kernels (vm_simd 1, where the processor
 * has it) gives the scalar code's bits, over more than 64 blocks of lags
 * (where the running power is re-anchored). */
static void test_kernel_wide(void)
{
	int H = 3, N2 = 16;
	int64_t L = 64 * SSM_KBLOCK + 1000;
	ssm_params p;
	float *buf = params(H, N2, &p), *K1 = malloc(2 * (size_t)L * 4), *K2 = malloc(2 * (size_t)L * 4);
	lc_err err;
	ssm_kwork *w = ssm_kwork_new(N2, 2, L, &err);
	int simd = vm_simd(-1);

	for (int h = 0; h < H; h++) {
		vm_simd(1);
		T_OK(ssm_kernel(&p, h, L, K1, L, w, &err) == 0, "%s", err.msg);
		vm_simd(2);
		T_OK(ssm_kernel(&p, h, L, K2, L, w, &err) == 0, "%s", err.msg);
		T_OK(!memcmp(K1, K2, 2 * (size_t)L * sizeof *K1), "channel %d: wide kernels' bits", h);
	}
	vm_simd(simd);
	free(buf);
	free(K1);
	free(K2);
	ssm_kwork_free(w);
}

/* The transforms (compute/fft.c: a real signal as the complex one of its
 * pairs, the half-spectra separated and put back together 8 or 4 pairs at
 * a time) in AVX-512, AVX2 and plain C (cmp_xk_simd 1, 2, 0) give the same
 * bits, a b in the convolution and a conj(b) in its backward, at sizes
 * where the vector loops run not at all, once, or stop one short of the
 * middle (n/2 odd and even), and the convolution is the direct sum's. */
static void test_spectra_paths(void)
{
	static const int64_t ns[] = { 2, 4, 6, 8, 10, 14, 16, 18, 28, 30, 32, 34, 36, 38, 46,
		                      48, 50, 62, 64, 66, 100, 1000, 1026, 3712 };
	int simd = cmp_xk_simd(-1), ok = 1;
	double worst = 0;
	lc_err err;
	cmp_fftcache *fc = cmp_fftcache_new(&err);

	for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
		int64_t n = ns[i], T = 1 + n / 5, L = n - 2 * (T - 1);
		const cmp_fft *pl = cmp_fft_get(fc, n, &err);
		ssm_cwork *w = pl ? ssm_cwork_new(n, &err) : NULL;
		float *x = malloc((size_t)L * 4), *wf = malloc((size_t)L * 4);
		float *k0 = malloc((size_t)T * 4), *k1 = malloc((size_t)T * 4);
		float *y[3], *dx[3], *dk[3];
		double dD, mx = 0, er = 0;

		if (!T_OK(pl && w && x && wf && k0 && k1, "n %lld: %s", (long long)n, err.msg))
			return;
		for (int64_t t = 0; t < L; t++) {
			x[t] = (float)t_nrand();
			wf[t] = (float)t_nrand();
		}
		for (int64_t t = 0; t < T; t++) {
			k0[t] = (float)t_nrand();
			k1[t] = (float)t_nrand();
		}
		for (int m = 0; m < 3; m++) {
			y[m] = malloc((size_t)L * 4);
			dx[m] = calloc((size_t)L, 4);
			dk[m] = calloc(2 * (size_t)T, 4);
			cmp_xk_simd(m == 0 ? 1 : m == 1 ? 2 : 0);
			T_OK(ssm_conv(pl, w, x, L, k0, k1, T, 0.5f, y[m], &err) == 0, "%s", err.msg);
			ssm_conv_backward(pl, w, x, L, k0, k1, T, 0.5f, wf, dx[m], dk[m], dk[m] + T,
			                  &dD);
		}
		cmp_xk_simd(simd);
		for (int m = 1; m < 3; m++)
			ok &= !memcmp(y[0], y[m], (size_t)L * 4) && !memcmp(dx[0], dx[m], (size_t)L * 4) &&
			      !memcmp(dk[0], dk[m], 2 * (size_t)T * 4);
		for (int64_t t = 0; t < L; t++) {
			double sum = 0.5 * x[t];
			for (int64_t j = 0; j < T && j <= t; j++)
				sum += (double)k0[j] * x[t - j];
			for (int64_t j = 0; j < T && t + j < L; j++)
				sum += (double)k1[j] * x[t + j];
			mx = fmax(mx, fabs(sum));
			er = fmax(er, fabs(sum - y[0][t]));
		}
		T_OK(er <= 1e-5 * mx, "n %lld: rel err %g", (long long)n, er / mx);
		worst = fmax(worst, er / mx);
		for (int m = 0; m < 3; m++) {
			free(y[m]);
			free(dx[m]);
			free(dk[m]);
		}
		ssm_cwork_free(w);
		free(x); free(wf); free(k0); free(k1);
	}
	T_OK(ok, "the transforms and the spectra's products: the same bits on every path");
	printf("# transforms at %zu sizes vs direct: worst rel err %.3g\n", sizeof ns / sizeof *ns,
	       worst);
	/* odd sizes, sizes below 2 and absurd ones have no plan, and say so
	 * (before any memory is asked for) */
	T_OK(!cmp_fft_get(fc, 7, &err) && strstr(err.msg, "even size"), "odd size: %s", err.msg);
	T_OK(!cmp_fft_get(fc, 0, &err) && strstr(err.msg, "even size"), "size 0: %s", err.msg);
	T_OK(!cmp_fft_get(fc, (int64_t)1 << 40, &err) && strstr(err.msg, "2^32"), "size 2^40: %s",
	     err.msg);
	cmp_fftcache_free(fc);
}

/* Beyond the support, the kernels' L1 mass is within the stated budget. */
static void test_support(void)
{
	int H = 8, N2 = 8;
	int64_t L = 40000;
	ssm_params p;
	float *buf = params(H, N2, &p), *K = malloc(2 * (size_t)L * 4);
	lc_err err;
	ssm_kwork *w = ssm_kwork_new(N2, 2, L, &err);
	int truncated = 0;

	for (int h = 0; h < H; h++) {
		int64_t T = ssm_support(&p, h, L);
		double tail = 0, head = 0;
		T_OK(T >= 1 && T <= L, "support %lld", (long long)T);
		truncated += T < L;
		ssm_kernel(&p, h, L, K, L, w, &err);
		for (int c = 0; c < 2; c++)
			for (int64_t l = 0; l < L; l++) {
				if (l >= T)
					tail += fabs(K[c * L + l]);
				else
					head = fmax(head, fabs(K[c * L + l]));
			}
		/* the budget is 1e-7 x sum 2|coef|; sum 2|coef| is within a small
		 * factor of max |K| for these parameters; 1e-5 leaves room for that */
		T_OK(tail <= 1e-5 * head, "channel %d: tail %g vs max %g", h, tail, head);
	}
	T_OK(truncated > 0, "no channel was truncated at L = %lld", (long long)L);
	free(buf);
	free(K);
	ssm_kwork_free(w);
}

static void test_fft_size(void)
{
	T_EQ_I(cmp_fft_size(1), 2);
	T_EQ_I(cmp_fft_size(11), 12);
	T_EQ_I(ssm_fft_size(1021, 1021), 2048);
	T_EQ_I(cmp_fft_size_smooth(2061), 2100);
	T_EQ_I(ssm_fft_size(1031, 1031), 2240);         /* 2^6 x 5 x 7 */
	T_EQ_I(cmp_fft_size(1024), 1024);
	T_EQ_I(cmp_fft_size(16384), 16384);
	T_EQ_I(cmp_fft_size(16385), 16800);             /* 2^5 x 3 x 5^2 x 7 */
	T_EQ_I(cmp_fft_size(131071), 131712);           /* not 2^17: 2^7 x 3 x 7^3 */
	T_EQ_I(cmp_fft_size_smooth(131071), 131072);
	/* above 1024, every size has 2^5..2^10 (or is a power of two up to
	 * 16,384) and none between need and it has */
	{
		int bad = 0;
		for (int64_t need = 1025; need < 300000; need += 997) {
			int64_t n = cmp_fft_size(need);
			for (int64_t m = need; m <= n && !bad; m++) {
				int64_t r = m;
				int a = 0;
				while (r % 2 == 0) { r /= 2; a++; }
				while (r % 3 == 0) r /= 3;
				while (r % 5 == 0) r /= 5;
				while (r % 7 == 0) r /= 7;
				int fits = r == 1 && ((a >= 5 && a <= 10) || ((m & (m - 1)) == 0 && m <= 16384));
				if (fits != (m == n))
					bad = 1;
			}
		}
		T_OK(!bad, "cmp_fft_size: the first size of the rule from need on");
	}
}

/* The convolution's backward against central differences of
 * f = sum_t w[t] y[t] (w random), for x, K0, K1 and D, truncated kernels
 * included. */
static void test_conv_backward(void)
{
	static const int64_t lens[][2] = { { 1, 1 }, { 7, 7 }, { 13, 5 }, { 64, 64 }, { 97, 40 } };
	double worst = 0;

	for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
		int64_t L = lens[li][0], T = lens[li][1];
		double *x = malloc((size_t)L * 8), *K0 = malloc((size_t)T * 8), *K1 = malloc((size_t)T * 8);
		float *xf = malloc((size_t)L * 4), *yf = malloc((size_t)L * 4), *wf = malloc((size_t)L * 4);
		float *k0f = malloc((size_t)T * 4), *k1f = malloc((size_t)T * 4);
		float *dx = calloc((size_t)L, 4), *dK0 = calloc((size_t)T, 4), *dK1 = calloc((size_t)T, 4);
		double D = t_nrand(), dD = 0;
		lc_err err;
		cmp_fftcache *fc = cmp_fftcache_new(&err);
		const cmp_fft *pl = cmp_fft_get(fc, ssm_fft_size(L, T), &err);
		ssm_cwork *w = ssm_cwork_new(cmp_fft_n(pl), &err);

		for (int64_t i = 0; i < L; i++) {
			xf[i] = (float)(x[i] = t_nrand());
			wf[i] = (float)t_nrand();
		}
		for (int64_t i = 0; i < T; i++) {
			k0f[i] = (float)(K0[i] = t_nrand());
			k1f[i] = (float)(K1[i] = t_nrand());
		}
		ssm_conv_backward(pl, w, xf, L, k0f, k1f, T, (float)D, wf, dx, dK0, dK1, &dD);
		/* f is linear in each argument: the direct sum gives exact partials */
		for (int64_t s2 = 0; s2 < L; s2++) {
			double g = D * wf[s2];
			for (int64_t t = 0; t < L; t++) {
				if (t >= s2 && t - s2 < T) g += K0[t - s2] * wf[t];
				if (s2 >= t && s2 - t < T) g += K1[s2 - t] * wf[t];
			}
			worst = fmax(worst, fabs(g - dx[s2]) / (1 + fabs(g)));
		}
		for (int64_t j = 0; j < T; j++) {
			double g0 = 0, g1 = 0;
			for (int64_t t = j; t < L; t++)
				g0 += x[t - j] * wf[t];
			for (int64_t t = 0; t + j < L; t++)
				g1 += x[t + j] * wf[t];
			worst = fmax(worst, fabs(g0 - dK0[j]) / (1 + fabs(g0)));
			worst = fmax(worst, fabs(g1 - dK1[j]) / (1 + fabs(g1)));
		}
		{
			double g = 0;
			for (int64_t t = 0; t < L; t++)
				g += x[t] * wf[t];
			worst = fmax(worst, fabs(g - dD) / (1 + fabs(g)));
		}
		ssm_cwork_free(w);
		cmp_fftcache_free(fc);
		free(x); free(K0); free(K1); free(xf); free(yf); free(wf); free(k0f); free(k1f);
		free(dx); free(dK0); free(dK1);
	}
	T_OK(worst < 1e-4, "conv backward vs exact partials: %.3g", worst);
	printf("# conv backward: worst error %.3g\n", worst);
}

/* K_c[l] of channel h in double, straight from the definition (ops/ssm.h),
 * with the parameters in double: f = sum_c,l w[c, l] K_c[l]. */
static double kernel_dot(const double *log_dt, const double *iar, const double *aim,
                         const double *B, const double *C, int H, int N2, int h, int64_t T,
                         const float *w)
{
	double dt = exp(log_dt[h]), f = 0;

	for (int c = 0; c < 2; c++)
		for (int n = 0; n < N2; n++) {
			double complex A = CMPLX(-exp(iar[h * N2 + n]), aim[h * N2 + n]);
			double complex coef = CMPLX(B[(h * N2 + n) * 2], B[(h * N2 + n) * 2 + 1]) *
			                      CMPLX(C[((c * H + h) * N2 + n) * 2], C[((c * H + h) * N2 + n) * 2 + 1]) *
			                      (cexp(dt * A) - 1) / A;
			for (int64_t l = 0; l < T; l++)
				f += w[c * T + l] * 2 * creal(coef * cexp(dt * A * (double)l));
		}
	return f;
}

/* The kernel parameters' backward against central differences of
 * f = sum_c,l w[c,l] K_c[l], computed in double from the definition. */
static void test_kernel_backward(void)
{
	int H = 3, N2 = 4, h = 1;
	int64_t T = 300;
	ssm_params p;
	float *buf = params(H, N2, &p), *w = malloc(2 * (size_t)T * 4);
	size_t np = (size_t)(H + 2 * H * N2 + 2 * H * N2 + 4 * H * N2);
	double *dp = malloc(np * 8);
	float *g = calloc(np, 4);
	ssm_grads gr;
	lc_err err;
	double worst = 0;
	int checked = 0;

	for (size_t i = 0; i < np; i++)
		dp[i] = buf[i];
	gr.log_dt = g;
	gr.inv_A_real = g + H;
	gr.A_imag = g + H + H * N2;
	gr.B = g + H + 2 * H * N2;
	gr.C = g + H + 4 * H * N2;
	for (int64_t i = 0; i < 2 * T; i++)
		w[i] = (float)t_nrand();
	T_OK(ssm_kernel_backward(&p, h, T, w, T, &gr, &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < np; i++) {
		double save = dp[i], st = 1e-6 * (fabs(save) > 1 ? fabs(save) : 1), f[2], fd, e;
		if (g[i] == 0)
			continue;   /* another channel's parameter */
		for (int sgn = 0; sgn < 2; sgn++) {
			dp[i] = save + (sgn ? -st : st);
			f[sgn] = kernel_dot(dp, dp + H, dp + H + H * N2, dp + H + 2 * H * N2,
			                    dp + H + 4 * H * N2, H, N2, h, T, w);
		}
		dp[i] = save;
		fd = (f[0] - f[1]) / (2 * st);
		e = fabs(fd - g[i]) / (1e-3 + fabs(fd));
		worst = fmax(worst, e);
		checked++;
	}
	T_EQ_I(checked, 1 + 2 * N2 + 2 * N2 + 4 * N2);
	T_OK(worst < 1e-4, "kernel backward vs finite differences: %.3g", worst);
	printf("# kernel backward: %d parameters, worst relative error %.3g\n", checked, worst);
	free(buf); free(w); free(g); free(dp);
}

int main(void)
{
	T_RUN(test_fft_size);
	T_RUN(test_fft_vs_direct);
	T_RUN(test_conv_blocks);
	T_RUN(test_kernel_vs_recurrence);
	T_RUN(test_kernel_wide);
	T_RUN(test_spectra_paths);
	T_RUN(test_support);
	T_RUN(test_conv_backward);
	T_RUN(test_kernel_backward);
	return t_done();
}
