/*
 * cudadev.c: compute/dev.h on an NVIDIA GPU (make CUDA=1): buffers and
 * copies through the CUDA runtime, products through compute/cuda.c's
 * cuBLAS (cmp_cuda_gemm_dev, under its lock), FFTs through cuFFT, the rest by
 * the kernels of compute/cudak.cu. Everything is queued on the default
 * stream, so it runs in the order called; the first error is kept here
 * (err) and makes every later call a no-op until cmp_dev_check says it.
 * Without CUDA, cmp_dev_on() is 0 and the rest is never called.
 */
#include "compute/dev.h"

#include <stdlib.h>

#include "compute/gemm.h"

#ifdef LC_HAVE_CUDA

#include <pthread.h>
#include <stdio.h>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "compute/cudak.h"

static char err_msg[256];       /* the first error since the last check */

static int bad(void)
{
	return err_msg[0] != '\0';
}

/* Keeps the first error; 1 when e is one. */
static int cu(int e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	if (!bad())
		snprintf(err_msg, sizeof err_msg, "%s: %s", what, cudaGetErrorString((cudaError_t)e));
	return 1;
}

int cmp_dev_on(void)
{
	char buf[256];

	return cmp_device_cuda() && cmp_cuda_open(buf, sizeof buf);
}

static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;

void cmp_dev_lock(void)
{
	pthread_mutex_lock(&dev_mu);
}

void cmp_dev_unlock(void)
{
	pthread_mutex_unlock(&dev_mu);
}

void cmp_dev_say(const char *what, const char *why)
{
	cmp_cuda_say(what, why);
}

float *cmp_dev_alloc(int64_t n)
{
	void *p = NULL;

	if (n < 1 || (uint64_t)n > SIZE_MAX / sizeof(float))
		return NULL;
	if (cudaMalloc(&p, (size_t)n * sizeof(float)) != cudaSuccess) {
		cudaGetLastError();     /* out of memory is not sticky: clear it */
		return NULL;
	}
	return p;
}

void cmp_dev_free(void *p)
{
	if (p)
		cudaFree(p);
}

void cmp_dev_put(float *dst, const float *src, int64_t n)
{
	cmp_dev_put_bytes(dst, src, n * (int64_t)sizeof(float));
}

void cmp_dev_put_bytes(void *dst, const void *src, int64_t bytes)
{
	if (!bad())
		cu(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyHostToDevice), "copying to the GPU");
}

void cmp_dev_get(float *dst, const float *src, int64_t n)
{
	if (!bad())
		cu(cudaMemcpy(dst, src, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost),
		   "copying from the GPU");
}

void cmp_dev_get_rows(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows,
                      int64_t cols)
{
	size_t f = sizeof(float);

	if (!bad() && rows > 0 && cols > 0)
		cu(cudaMemcpy2D(dst, (size_t)ldd * f, src, (size_t)lds * f, (size_t)cols * f,
		                (size_t)rows, cudaMemcpyDeviceToHost), "copying from the GPU");
}

const float *cmp_dev_weight(const float *p, int64_t n)
{
	return cmp_cuda_resident(p, n);
}

int cmp_dev_check(lc_err *err)
{
	if (!bad())
		cu(cudaDeviceSynchronize(), "the GPU's work");
	if (!bad())
		cu(cudaGetLastError(), "the GPU's work");
	if (!bad())
		return 0;
	lc_fail(err, "CUDA: %s", err_msg);
	err_msg[0] = '\0';
	return -1;
}

static int fits(int64_t v)
{
	return v >= 0 && v <= INT32_MAX;
}

static void gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                 int bf16)
{
	const char *why;

	if (bad())
		return;
	if (!fits(M) || !fits(N) || !fits(K) || !fits(lda) || !fits(ldb) || !fits(ldc)) {
		snprintf(err_msg, sizeof err_msg, "a product: a dimension over 2^31");
		return;
	}
	if (cmp_cuda_gemm_dev(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bf16, &why) < 0)
		snprintf(err_msg, sizeof err_msg, "a product: %s", why);
}

void cmp_dev_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
	gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 0);
}

void cmp_dev_gemm_w(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
	gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, cmp_bf16_active());
}

void cmp_dev_rmsnorm(const float *x, int64_t R, int d, const float *w, float eps, float *y)
{
	if (!bad())
		cu(cudak_rmsnorm(x, R, d, w, eps, y), "rmsnorm");
}

void cmp_dev_add_layernorm(float *x, const float *t, int64_t R, int d, const float *w,
                           const float *b, float eps)
{
	if (!bad())
		cu(cudak_addln(x, t, R, d, w, b, eps), "a layer norm");
}

void cmp_dev_bias_cols(float *x, int64_t R, int64_t C, int64_t ld, const float *b)
{
	if (!bad())
		cu(cudak_bias(x, R, C, ld, b, 0), "a bias");
}

void cmp_dev_bias_rows(float *x, int64_t R, int64_t C, int64_t ld, const float *b)
{
	if (!bad())
		cu(cudak_bias(x, R, C, ld, b, 1), "a bias");
}

void cmp_dev_act(int act, const float *a, const float *b, int64_t n, float *out)
{
	if (!bad())
		cu(cudak_act(act, a, b, n, out), "an activation");
}

void cmp_dev_softmax_rows(float *S, int64_t R, int64_t n, float *lse)
{
	if (!bad())
		cu(cudak_softmax(S, R, n, lse), "a softmax");
}

void cmp_dev_mul(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t R, int64_t C)
{
	if (!bad())
		cu(cudak_mul(y, ldy, x, ldx, R, C), "a product of elements");
}

void cmp_dev_segattn(const cmp_dev_group *g, int64_t ng, const cmp_dev_seg *s, int dk,
                     float scale)
{
	if (!bad())
		cu(cudak_segattn(g, ng, s, dk, scale), "an attention");
}

/* ------------------------------------------------------- convolutions */

struct cmp_dev_conv {
	int64_t n, nc;                  /* transform size, n / 2 + 1 */
	int G;                          /* channels a run transforms */
	cufftHandle fwd, inv;
	int have_fwd, have_inv;
	float *xp, *gp;                 /* [G, n] signals, kernels (then results) */
	cufftComplex *sx, *sg;          /* [G, nc] their spectra */
};

cmp_dev_conv *cmp_dev_conv_new(int64_t n, int G)
{
	cmp_dev_conv *c = calloc(1, sizeof *c);
	int nn = (int)n;

	if (!c || n < 2 || !fits(n) || G < 1 || G > 65535 || (int64_t)G * n > INT32_MAX)
		goto fail;
	c->n = n, c->nc = n / 2 + 1, c->G = G;
	if (!(c->xp = cmp_dev_alloc((int64_t)G * n)) || !(c->gp = cmp_dev_alloc((int64_t)G * n)) ||
	    !(c->sx = (cufftComplex *)cmp_dev_alloc(2 * (int64_t)G * c->nc)) ||
	    !(c->sg = (cufftComplex *)cmp_dev_alloc(2 * (int64_t)G * c->nc)))
		goto fail;
	if (cufftPlanMany(&c->fwd, 1, &nn, NULL, 1, (int)n, NULL, 1, (int)c->nc, CUFFT_R2C, G) !=
	    CUFFT_SUCCESS)
		goto fail;
	c->have_fwd = 1;
	if (cufftPlanMany(&c->inv, 1, &nn, NULL, 1, (int)c->nc, NULL, 1, (int)n, CUFFT_C2R, G) !=
	    CUFFT_SUCCESS)
		goto fail;
	c->have_inv = 1;
	return c;
fail:
	cudaGetLastError();
	cmp_dev_conv_free(c);
	return NULL;
}

void cmp_dev_conv_free(cmp_dev_conv *c)
{
	if (!c)
		return;
	if (c->have_fwd)
		cufftDestroy(c->fwd);
	if (c->have_inv)
		cufftDestroy(c->inv);
	cmp_dev_free(c->xp);
	cmp_dev_free(c->gp);
	cmp_dev_free(c->sx);
	cmp_dev_free(c->sg);
	free(c);
}

static void fft(cufftResult r, const char *what)
{
	if (r != CUFFT_SUCCESS && !bad())
		snprintf(err_msg, sizeof err_msg, "cuFFT %s: error %d", what, (int)r);
}

void cmp_dev_conv_run(cmp_dev_conv *c, float *x, int64_t ldx, int64_t L, int cnt,
                      const double *dtA, const double *coef, int N2, int nch,
                      const int64_t *T, int64_t Tmax, const float *D)
{
	if (bad())
		return;
	if (cnt < 1 || cnt > c->G || L > c->n || Tmax < 1) {
		snprintf(err_msg, sizeof err_msg, "a convolution: %d channels of %lld for %lld-point "
		         "transforms", cnt, (long long)L, (long long)c->n);
		return;
	}
	if (cu(cudak_pad(x, ldx, L, cnt, c->xp, c->n, c->G), "a convolution's signals") ||
	    cu(cudak_kernels(dtA, coef, N2, nch, T, Tmax, cnt, c->gp, c->n, c->G),
	       "a convolution's kernels"))
		return;
	fft(cufftExecR2C(c->fwd, c->xp, c->sx), "forward");
	fft(cufftExecR2C(c->fwd, c->gp, c->sg), "forward");
	if (bad() || cu(cudak_cmul(c->sx, c->sg, (int64_t)c->G * c->nc, 1.0f / (float)c->n),
	                "a product of spectra"))
		return;
	/* C2R overwrites its input (sx), which is not needed after */
	fft(cufftExecC2R(c->inv, c->sx, c->gp), "inverse");
	if (!bad())
		cu(cudak_combine(x, ldx, L, cnt, c->gp, c->n, D), "a convolution's output");
}

#else /* built without CUDA: the device is never cuda */

int cmp_dev_on(void)
{
	return 0;
}

void cmp_dev_say(const char *what, const char *why)
{
	(void)what, (void)why;
}

float *cmp_dev_alloc(int64_t n)
{
	(void)n;
	return NULL;
}

void cmp_dev_free(void *p)
{
	(void)p;
}

void cmp_dev_put(float *dst, const float *src, int64_t n)
{
	(void)dst, (void)src, (void)n;
}

void cmp_dev_put_bytes(void *dst, const void *src, int64_t bytes)
{
	(void)dst, (void)src, (void)bytes;
}

void cmp_dev_get(float *dst, const float *src, int64_t n)
{
	(void)dst, (void)src, (void)n;
}

void cmp_dev_get_rows(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows,
                      int64_t cols)
{
	(void)dst, (void)ldd, (void)src, (void)lds, (void)rows, (void)cols;
}

const float *cmp_dev_weight(const float *p, int64_t n)
{
	(void)p, (void)n;
	return NULL;
}

int cmp_dev_check(lc_err *err)
{
	return lc_fail(err, "this lc was built without CUDA (make CUDA=1)");
}

void cmp_dev_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
	(void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B;
	(void)ldb, (void)beta, (void)C, (void)ldc;
}

void cmp_dev_gemm_w(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
	cmp_dev_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void cmp_dev_rmsnorm(const float *x, int64_t R, int d, const float *w, float eps, float *y)
{
	(void)x, (void)R, (void)d, (void)w, (void)eps, (void)y;
}

void cmp_dev_add_layernorm(float *x, const float *t, int64_t R, int d, const float *w,
                           const float *b, float eps)
{
	(void)x, (void)t, (void)R, (void)d, (void)w, (void)b, (void)eps;
}

void cmp_dev_bias_cols(float *x, int64_t R, int64_t C, int64_t ld, const float *b)
{
	(void)x, (void)R, (void)C, (void)ld, (void)b;
}

void cmp_dev_bias_rows(float *x, int64_t R, int64_t C, int64_t ld, const float *b)
{
	(void)x, (void)R, (void)C, (void)ld, (void)b;
}

void cmp_dev_act(int act, const float *a, const float *b, int64_t n, float *out)
{
	(void)act, (void)a, (void)b, (void)n, (void)out;
}

void cmp_dev_mul(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t R, int64_t C)
{
	(void)y, (void)ldy, (void)x, (void)ldx, (void)R, (void)C;
}

void cmp_dev_softmax_rows(float *S, int64_t R, int64_t n, float *lse)
{
	(void)S, (void)R, (void)n, (void)lse;
}

void cmp_dev_lock(void)
{
}

void cmp_dev_unlock(void)
{
}

void cmp_dev_segattn(const cmp_dev_group *g, int64_t ng, const cmp_dev_seg *s, int dk,
                     float scale)
{
	(void)g, (void)ng, (void)s, (void)dk, (void)scale;
}

cmp_dev_conv *cmp_dev_conv_new(int64_t n, int G)
{
	(void)n, (void)G;
	return NULL;
}

void cmp_dev_conv_free(cmp_dev_conv *c)
{
	(void)c;
}

void cmp_dev_conv_run(cmp_dev_conv *c, float *x, int64_t ldx, int64_t L, int cnt,
                      const double *dtA, const double *coef, int N2, int nch,
                      const int64_t *T, int64_t Tmax, const float *D)
{
	(void)c, (void)x, (void)ldx, (void)L, (void)cnt, (void)dtA, (void)coef, (void)N2;
	(void)nch, (void)T, (void)Tmax, (void)D;
}

#endif
