/* ssm: FFT convolution against the direct O(L^2) sum at many lengths
 * (primes included, truncated kernels included), kernels against the
 * step-by-step ZOH recurrence, and the truncation bound. */
#include "t.h"

#include <complex.h>
#include <stdint.h>

#include "ops/ssm.h"

#ifndef CMPLX   /* glibc defines it for gcc only */
#define CMPLX(x, y) ((double complex)((double)(x) + _Complex_I * (double)(y)))
#endif

static uint64_t rs = 88172645463325252ull;
static double urand(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (double)(rs >> 11) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand()); }

static void test_fft_vs_direct(void)
{
	static const int64_t lens[] = { 1, 2, 3, 5, 7, 8, 13, 31, 64, 97, 127, 256, 257, 509, 1000, 1021, 2053 };
	double worst = 0;

	for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
		int64_t L = lens[li];
		for (int trunc = 0; trunc < 2; trunc++) {
			int64_t T = trunc ? 1 + (int64_t)(urand() * (double)L) : L;
			float *x = malloc((size_t)L * 4), *y = malloc((size_t)L * 4);
			float *K0 = malloc((size_t)T * 4), *K1 = malloc((size_t)T * 4);
			float D = (float)nrand();
			lc_err err;
			ssm_plans *pl = ssm_plans_new(ssm_fft_size(L + T - 1), &err);
			ssm_cwork *w = pl ? ssm_cwork_new(ssm_plans_n(pl), &err) : NULL;
			double mx = 0, er = 0;

			if (!T_OK(pl && w, "%s", err.msg))
				return;
			T_OK(ssm_plans_n(pl) >= L + T - 1 && ssm_plans_n(pl) % 2 == 0, "size");
			for (int64_t i = 0; i < L; i++)
				x[i] = (float)nrand();
			for (int64_t i = 0; i < T; i++) {
				K0[i] = (float)(nrand() * exp(-0.01 * (double)i));
				K1[i] = (float)(nrand() * exp(-0.01 * (double)i));
			}
			ssm_conv(pl, w, x, L, K0, K1, T, D, y);
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
			ssm_conv(pl, w, x, L, K0, K1, T, D, x);
			T_OK(memcmp(x, y, (size_t)L * 4) == 0, "in place differs at L %lld", (long long)L);
			free(x); free(y); free(K0); free(K1);
			ssm_cwork_free(w);
			ssm_plans_free(pl);
		}
	}
	printf("# fft vs direct: worst rel err %.3g\n", worst);
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
		buf[h] = (float)(log(1e-3) + urand() * (log(1e-1) - log(1e-3)));
		for (int n = 0; n < N2; n++) {
			((float *)p->inv_A_real)[h * N2 + n] = (float)(log(0.5) + 0.2 * nrand());
			((float *)p->A_imag)[h * N2 + n] = (float)(3.14159265 * n * (1 + 0.05 * nrand()));
			((float *)p->B)[(h * N2 + n) * 2] = (float)(1 + 0.2 * nrand());
			((float *)p->B)[(h * N2 + n) * 2 + 1] = (float)(0.2 * nrand());
		}
	}
	for (int i = 0; i < 4 * H * N2; i++)
		((float *)p->C)[i] = (float)(0.5 * nrand());
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
	T_EQ_I(ssm_fft_size(1), 2);
	T_EQ_I(ssm_fft_size(11), 12);
	T_EQ_I(ssm_fft_size(2 * 1021 - 1), 2048);
	T_EQ_I(ssm_fft_size(2 * 1031 - 1), 2100);
	T_EQ_I(ssm_fft_size(1024), 1024);
}

int main(void)
{
	T_RUN(test_fft_size);
	T_RUN(test_fft_vs_direct);
	T_RUN(test_kernel_vs_recurrence);
	T_RUN(test_support);
	return t_done();
}
