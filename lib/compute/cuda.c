/*
 * cuda.c: the matrix products on an NVIDIA GPU through cuBLAS, behind
 * cmp_gemm (compute/gemm.h), when lc is built with `make CUDA=1`.
 *
 * What runs here: the products of cmp_gemm, cmp_gemm_par and
 * cmp_gemm_batch that cpu.c sends once the device is cuda (all but the
 * smallest), and compute/cudadev.c's products of GPU buffers. fp32 stays
 * fp32: cuBLAS's default math mode, which never uses TF32 for sgemm.
 * Under --compute bf16 the products with a weight round both operands
 * to bf16 on the GPU (to nearest, ties to even, as the CPU does) and
 * accumulate in fp32 (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F).
 *
 * What stays where: the model's weights (the regions declared with
 * cmp_constant) are copied to the GPU on a product's first read of them
 * and stay there until cmp_constant_drop; every other operand crosses
 * the bus on each call (the activations are the CPU's: the FFTs, the
 * cross-attention kernels and the element-wise work run there), copied
 * as exactly the rows and columns the product reads and writes, so that
 * threads working on neighbouring columns of one matrix never see each
 * other's bytes rewritten.
 *
 * One lock serialises the GPU work: lc's threads call products on row
 * blocks at once, and one handle on the default stream with synchronous
 * copies is simple and never reorders anything. Any CUDA error makes the
 * call return -1 with C untouched (the caller computes it on the CPU);
 * the first one is said through the program's callback (cmp_set_device).
 * (Untouched but for one case: copying a batch's results back failing
 * after the first item, which CUDA's sticky errors make all but
 * impossible: the first failure fails every later call.)
 */
#include "compute/gemm.h"

#include <stdio.h>

#ifdef LC_HAVE_CUDA

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "compute/cudak.h"

struct dcopy {                  /* a constant region's copies on the GPU */
	const float *p;
	int64_t n;
	float *f32;
	int failed;             /* no GPU memory for it once: per call from then on */
};

static struct {
	pthread_once_t once;
	pthread_mutex_t mu;
	int ok;                         /* a GPU answered and cuBLAS started */
	char why[160];                  /* else why not */
	char name[256];
	size_t mem;
	cublasHandle_t h;
	void *buf[5];                   /* scratch for A, B, C and bf16 A, B; grown,
	                                 * never shrunk */
	size_t cap[5];
	struct dcopy *c;
	int nc, ccap;
	int warned;
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
	int major;                      /* compute capability: bf16 products from 8 */
} g = { PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, 0, "", "", 0, NULL, { 0 }, { 0 },
	NULL, 0, 0, 0, NULL, NULL, 0 };

static void open_once(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	struct cudaDeviceProp prop;

	if (e != cudaSuccess || n <= 0) {
		snprintf(g.why, sizeof g.why, "no GPU (%s)",
		         e != cudaSuccess ? cudaGetErrorString(e) : "the driver lists none");
		return;
	}
	if ((e = cudaSetDevice(0)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
		snprintf(g.why, sizeof g.why, "GPU 0: %s", cudaGetErrorString(e));
		return;
	}
	if (cublasCreate(&g.h) != CUBLAS_STATUS_SUCCESS) {
		snprintf(g.why, sizeof g.why, "cuBLAS could not start on %s", prop.name);
		return;
	}
	/* the default: fp32 products in fp32 (no TF32 unless asked) */
	cublasSetMathMode(g.h, CUBLAS_DEFAULT_MATH);
	snprintf(g.name, sizeof g.name, "%s", prop.name);
	g.mem = prop.totalGlobalMem;
	g.major = prop.major;
	g.ok = 1;
}

int cmp_cuda_open(char *buf, size_t cap)
{
	pthread_once(&g.once, open_once);
	if (g.ok) {
		int v = 0;
		cublasGetVersion(g.h, &v);
		snprintf(buf, cap, "%s, %.0f GiB, cuBLAS %d", g.name, (double)g.mem / (1 << 30), v);
	} else {
		snprintf(buf, cap, "%s", g.why);
	}
	return g.ok;
}

int cmp_cuda_bf16_ok(void)
{
	return g.ok && g.major >= 8;
}

void cmp_cuda_on_fail(void (*warn)(void *ctx, const char *msg), void *ctx)
{
	g.warn = warn, g.ctx = ctx;
}

/* Says the first failure; under mu. */
static int fail(const char *what, const char *why)
{
	char msg[320];

	if (!g.warned++ && g.warn) {
		snprintf(msg, sizeof msg, "CUDA: %s: %s; such products run on the CPU", what, why);
		g.warn(g.ctx, msg);
	}
	return -1;
}

static int cfail(const char *what, cudaError_t e)
{
	return fail(what, cudaGetErrorString(e));
}

/* Scratch buffer i of at least bytes; NULL when the GPU has no memory. */
static void *scratch(int i, size_t bytes)
{
	if (bytes > g.cap[i]) {
		size_t want = bytes + bytes / 4;
		/* queued products may still read it (compute/dev.h's work
		 * returns before it is done) */
		cudaDeviceSynchronize();
		cudaFree(g.buf[i]);
		g.buf[i] = NULL, g.cap[i] = 0;
		if (cudaMalloc(&g.buf[i], want) != cudaSuccess) {
			cudaGetLastError();     /* clear it: not sticky */
			return NULL;
		}
		g.cap[i] = want;
	}
	return g.buf[i];
}

/* The GPU's copy of x (inside a constant region), made on first use
 * with the region's layout, so x's row stride holds there; NULL when x is
 * not constant or the GPU has no memory for it. */
static const float *resident(const float *x, int64_t n)
{
	int64_t len;
	const float *base = cmp_constant_base(x, n, &len);
	struct dcopy *c = NULL;

	if (!base)
		return NULL;
	for (int i = 0; i < g.nc; i++)
		if (g.c[i].p == base && g.c[i].n == len) {
			c = &g.c[i];
			break;
		}
	if (!c) {
		if (g.nc == g.ccap) {
			int cap = g.ccap ? 2 * g.ccap : 64;
			struct dcopy *nc = realloc(g.c, (size_t)cap * sizeof *nc);
			if (!nc)
				return NULL;
			g.c = nc, g.ccap = cap;
		}
		c = &g.c[g.nc++];
		*c = (struct dcopy){ base, len, NULL, 0 };
	}
	if (c->failed)
		return NULL;
	if (!c->f32 &&
	    (cudaMalloc((void **)&c->f32, (size_t)len * sizeof(float)) != cudaSuccess ||
	     cudaMemcpy(c->f32, base, (size_t)len * sizeof(float), cudaMemcpyHostToDevice) !=
	             cudaSuccess)) {
		cudaGetLastError();     /* clear it: not sticky */
		cudaFree(c->f32);
		c->f32 = NULL, c->failed = 1;
		return NULL;
	}
	return c->f32 + (x - base);
}

const float *cmp_cuda_resident(const float *x, int64_t n)
{
	const float *r;

	if (!g.ok)
		return NULL;
	pthread_mutex_lock(&g.mu);
	r = resident(x, n);
	pthread_mutex_unlock(&g.mu);
	return r;
}

void cmp_cuda_say(const char *what, const char *why)
{
	static int said;
	char msg[320];

	pthread_mutex_lock(&g.mu);
	if (!said++ && g.warn) {
		snprintf(msg, sizeof msg, "CUDA: %s: %s", what, why);
		g.warn(g.ctx, msg);
	}
	pthread_mutex_unlock(&g.mu);
}

void cmp_cuda_drop(const float *p)
{
	if (!g.ok)
		return;
	pthread_mutex_lock(&g.mu);
	for (int i = 0; i < g.nc; i++)
		if (g.c[i].p == p) {
			cudaFree(g.c[i].f32);
			g.c[i] = g.c[--g.nc];
			break;
		}
	pthread_mutex_unlock(&g.mu);
}

/* One operand of `batch` stored matrices [rows, cols] (row stride ld, the
 * i-th at x + i * s) on the GPU: the resident copy (*ldd = ld, *sd = s) or
 * packed into scratch slot (*ldd = cols, *sd = rows * cols). NULL on
 * failure, with the failure said. */
static const float *operand(int slot, const float *x, int64_t rows, int64_t cols, int64_t ld,
                            int64_t s, int64_t batch, int64_t *ldd, int64_t *sd)
{
	int64_t span = (batch - 1) * s + (rows - 1) * ld + cols;
	size_t item = (size_t)(rows * cols);
	const float *r = resident(x, span);
	float *d;
	cudaError_t e;

	if (r) {
		*ldd = ld, *sd = s;
		return r;
	}
	*ldd = cols, *sd = rows * cols;
	if (!(d = scratch(slot, item * (size_t)batch * sizeof *d))) {
		fail("an operand's memory", "out of GPU memory");
		return NULL;
	}
	for (int64_t i = 0; i < batch; i++)
		if ((e = cudaMemcpy2D(d + (size_t)i * item, (size_t)cols * sizeof *d, x + i * s,
		                      (size_t)ld * sizeof *x, (size_t)cols * sizeof *x, (size_t)rows,
		                      cudaMemcpyHostToDevice)) != cudaSuccess) {
			cfail("copying an operand to the GPU", e);
			return NULL;
		}
	return d;
}

static cublasOperation_t op(enum cmp_trans t)
{
	return t == CMP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* The product over operands on the GPU, under mu: 0, or -1 with *why.
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: a
 * row-major matrix read column-major is its transpose, so cuBLAS gets B
 * first, with the same transpose flags, and the dimensions N, M. With
 * bf16, A and B are rounded into scratch with their own layouts (the
 * span from the first element to the last), so the strides hold. */
static int gemm_on(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                   float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
                   int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
                   int64_t batch, int bf16, const char **why)
{
	int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	cublasStatus_t st;

	if (M <= 0 || N <= 0)
		return 0;       /* nothing (and no spans to round) */
	if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batch > INT32_MAX ||
	    lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX) {
		*why = "a dimension over 2^31";
		return -1;
	}
	if (bf16) {
		int64_t na = (batch - 1) * sA + (ar - 1) * lda + ac;
		int64_t nb = (batch - 1) * sB + (br - 1) * ldb + bc;
		void *a16 = scratch(3, (size_t)na * 2), *b16 = a16 ? scratch(4, (size_t)nb * 2) : NULL;
		if (!b16) {
			*why = "out of GPU memory";
			return -1;
		}
		if (cudak_to_bf16(A, na, a16) != cudaSuccess ||
		    cudak_to_bf16(B, nb, b16) != cudaSuccess) {
			*why = "rounding to bf16";
			return -1;
		}
		st = cublasGemmStridedBatchedEx(g.h, op(tb), op(ta), (int)N, (int)M, (int)K, &alpha,
		                                b16, CUDA_R_16BF, (int)ldb, sB, a16, CUDA_R_16BF,
		                                (int)lda, sA, &beta, C, CUDA_R_32F, (int)ldc, sC,
		                                (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	} else if (batch == 1) {
		st = cublasSgemm(g.h, op(tb), op(ta), (int)N, (int)M, (int)K, &alpha, B, (int)ldb, A,
		                 (int)lda, &beta, C, (int)ldc);
	} else {
		st = cublasSgemmStridedBatched(g.h, op(tb), op(ta), (int)N, (int)M, (int)K, &alpha, B,
		                               (int)ldb, sB, A, (int)lda, sA, &beta, C, (int)ldc, sC,
		                               (int)batch);
	}
	if (st != CUBLAS_STATUS_SUCCESS) {
		*why = cublasGetStatusString(st);
		return -1;
	}
	return 0;
}

int cmp_cuda_gemm_dev(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc, int bf16, const char **why)
{
	int r;

	if (!g.ok) {
		*why = "no GPU";
		return -1;
	}
	pthread_mutex_lock(&g.mu);
	r = gemm_on(ta ? CMP_T : CMP_N, tb ? CMP_T : CMP_N, M, N, K, alpha, A, lda, 0, B, ldb, 0,
	            beta, C, ldc, 0, 1, bf16, why);
	pthread_mutex_unlock(&g.mu);
	return r;
}

/* Operands up (or the weights' copies), the product, C down. */
static int run(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
               int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
               int64_t batch, int bf16)
{
	int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	int64_t la, lb, da, db;
	const float *dA, *dB;
	const char *why;
	float *dC;
	cudaError_t e;

	if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batch > INT32_MAX)
		return fail("a product", "a dimension over 2^31");
	if (!(dA = operand(0, A, ar, ac, lda, sA, batch, &la, &da)) ||
	    !(dB = operand(1, B, br, bc, ldb, sB, batch, &lb, &db)))
		return -1;
	if (!(dC = scratch(2, (size_t)(M * N * batch) * sizeof *dC)))
		return fail("a result's memory", "out of GPU memory");
	if (beta != 0.0f)
		for (int64_t i = 0; i < batch; i++)
			if ((e = cudaMemcpy2D(dC + i * M * N, (size_t)N * sizeof *dC, C + i * sC,
			                      (size_t)ldc * sizeof *C, (size_t)N * sizeof *C, (size_t)M,
			                      cudaMemcpyHostToDevice)) != cudaSuccess)
				return cfail("copying C to the GPU", e);
	if (gemm_on(ta, tb, M, N, K, alpha, dA, la, da, dB, lb, db, beta, dC, N, M * N, batch, bf16,
	            &why) < 0)
		return fail("a product", why);
	for (int64_t i = 0; i < batch; i++)
		if ((e = cudaMemcpy2D(C + i * sC, (size_t)ldc * sizeof *C, dC + i * M * N,
		                      (size_t)N * sizeof *dC, (size_t)N * sizeof *C, (size_t)M,
		                      cudaMemcpyDeviceToHost)) != cudaSuccess)
			return cfail("copying C from the GPU", e);
	return 0;
}

int cmp_cuda_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
                  int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
                  int64_t batch, int bf16)
{
	int r;

	if (!g.ok || (bf16 && g.major < 8))
		return -1;
	pthread_mutex_lock(&g.mu);
	r = run(ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch, bf16);
	pthread_mutex_unlock(&g.mu);
	return r;
}

#else /* built without CUDA */

int cmp_cuda_open(char *buf, size_t cap)
{
	snprintf(buf, cap, "this lc was built without CUDA (make CUDA=1)");
	return 0;
}

void cmp_cuda_drop(const float *p)
{
	(void)p;
}

const float *cmp_cuda_resident(const float *x, int64_t n)
{
	(void)x, (void)n;
	return NULL;
}

void cmp_cuda_say(const char *what, const char *why)
{
	(void)what, (void)why;
}

void cmp_cuda_on_fail(void (*warn)(void *ctx, const char *msg), void *ctx)
{
	(void)warn, (void)ctx;
}

int cmp_cuda_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
                  int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
                  int64_t batch, int bf16)
{
	(void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)sA;
	(void)B, (void)ldb, (void)sB, (void)beta, (void)C, (void)ldc, (void)sC, (void)batch;
	(void)bf16;
	return -1;
}

int cmp_cuda_bf16_ok(void)
{
	return 0;
}

#endif
