/*
 * cpu.c: the compute seam on the CPU: OpenBLAS (cblas) and oneDNN's matmul
 * (compute/dnnl.c, when built with it) for the products, chosen per shape
 * class by one table below (the transforms are compute/fft.c's). With
 * the device cuda (cmp_set_device), every product goes to cuBLAS
 * (compute/cuda.c) first, and comes back here only if it fails.
 */
#include "compute/compute.h"
#include "compute/dev.h"
#include "compute/gemm.h"

#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "base/cpu.h"
#include "base/dtype.h"
#include "base/machine.h"
#include "base/parallel.h"

/* OpenBLAS's pthread build starts its pool (cores - 1 threads) when it is
 * loaded, before main; setting one thread leaves that pool asleep but
 * alive. blas_thread_shutdown_ (exported, no header: OpenBLAS's own fork
 * handler uses it) joins it, so that -j N means N threads. Weak: other
 * builds (OpenMP, serial) may not have it, and have no pool to stop. */
int blas_thread_shutdown_(void) __attribute__((weak));

/* OpenBLAS takes a buffer from its pool for each call under way, makes
 * one when none is free, and keeps it; where making one fails (near an
 * address-space limit, ulimit -v) it tries again forever: lc-encode under
 * ulimit -v 2000000 hung so, a thread at 100% in blas_memory_alloc. So
 * the buffers that lc's threads can ask for at once (one each, as many as
 * the processors this process may use) are made here, at the first
 * model's opening, after a check that the address space has room for
 * them: later calls find them made (OpenBLAS's own pool, stopped below,
 * made one for each of its threads as it started; they are free now and
 * taken first). At most BLAS_RESERVE_MAX: the check maps all of them at
 * once. The two functions are exported, with no header (OpenBLAS's own
 * interface uses them); weak, as for the pool. */
void *blas_memory_alloc(int procpos) __attribute__((weak));
void blas_memory_free(void *buf) __attribute__((weak));
#define BLAS_BUFFER ((uint64_t)160 << 20)   /* 128 MiB and its alignment, with room */
#define BLAS_RESERVE_MAX 16

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static int blas_no_room;        /* no room for the buffers: cmp_init fails */

/* The buffers to make: one for each processor this process may use. */
static int blas_count(void)
{
	int n = machine_cpus(NULL);

	return n < BLAS_RESERVE_MAX ? n : BLAS_RESERVE_MAX;
}

/* Without room even for them, OpenBLAS's own pool (started when it was
 * loaded) may be spinning already, its threads making buffers as they
 * start, and its destructor would wait for them at exit: the process
 * leaves through here instead, its output flushed, as exit would. */
static void leave_now(int status, void *arg)
{
	(void)arg;
	fflush(NULL);
	_Exit(status);
}

static void blas_single(void)
{
	int n = blas_count();
	void *b[BLAS_RESERVE_MAX];

	if (!machine_room(BLAS_BUFFER * (uint64_t)n)) {
		blas_no_room = 1;
		on_exit(leave_now, NULL);
		return;
	}
	openblas_set_num_threads(1);
	if (blas_thread_shutdown_)
		blas_thread_shutdown_();
	if (!blas_memory_alloc || !blas_memory_free)
		return;
	for (int i = 0; i < n; i++)
		b[i] = blas_memory_alloc(0);
	for (int i = 0; i < n; i++)
		blas_memory_free(b[i]);
}

int cmp_init(lc_err *err)
{
	/* lc parallelises around BLAS: every call runs on the calling thread */
	pthread_once(&blas_once, blas_single);
	if (blas_no_room)
		return lc_fail(err, "out of memory: no room in the address space for OpenBLAS's "
		               "buffers (%d x %d MiB; ulimit -v?)", blas_count(),
		               (int)(BLAS_BUFFER >> 20));
	return 0;
}

static enum CBLAS_TRANSPOSE tr(enum cmp_trans t)
{
	return t == CMP_T ? CblasTrans : CblasNoTrans;
}

static void blas_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc)
{
	/* One row: OpenBLAS's sgemm would pack all of op(B) for it (the
	 * decoder's projections, one token at a time); sgemv reads B once. */
	if (M == 1 && ta == CMP_N) {
		if (tb == CMP_T)
			cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, alpha, B, (int)ldb, A,
			            1, beta, C, 1);
		else
			cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, alpha, B, (int)ldb, A, 1,
			            beta, C, 1);
		return;
	}
	cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), (int)M, (int)N, (int)K, alpha, A, (int)lda, B,
	            (int)ldb, beta, C, (int)ldc);
}

/* ------------------------------------------------- choice and settings */

enum { LIB_TABLE, LIB_BLAS, LIB_DNNL };
enum { DEV_CPU, DEV_CUDA };
enum { PREC_F32, PREC_BF16, PREC_BF16_EMULATED };

/* Whether a product goes to the GPU (the device cuda): each one crosses
 * the bus both ways (the operands up, unless a weight the GPU keeps, C
 * down), three synchronous copies that cost more than the CPU's work on
 * a small product. So the products with a weight of at least 2^16
 * multiply-adds (the decoders' projections of even one row, whose weights
 * the CPU would read from memory) and any other of at least GPU_MIN_MACS
 * (2^21: a 128 x 128 x 128 product) go; the rest (the per-block
 * products of the LSG and BART-LS attentions, the tests' tiny models)
 * stay. On an H200 the check-cuda unit test_bart took 175 s with every
 * product on the GPU. $LC_CUDA_ALL=1 sends every one (check-cuda's tests
 * of the products on the tests' small models). */
#define GPU_MIN_MACS (1 << 21)
#define GPU_MIN_WEIGHT_MACS (1 << 16)

/* Which library runs an fp32 product, by shape class: the first row whose
 * bounds hold, on a processor with AVX-512 (oneDNN's widest kernels).
 * The table was first made from shapes alone, single-threaded on an AVX2
 * Zen 3, where oneDNN looked as fast or faster (GFLOP/s,
 * OpenBLAS vs oneDNN 2.6, primitive made once; idle): 4096x768x768 NT 70
 * vs 83, 4096x2048x768 78 vs 81, 4096x768x2048 84 vs 84, 12x512x768 NT
 * 47 vs 56, 12x768x512 NN 55 vs 72, 48x512x768 72 vs 83, 48x768x512 74 vs
 * 73, 4x768x768 23.5 vs 34.6, 1x32128x768 2.1 vs 6.8. Through the seam
 * (load 2.5, so +-10%): the attention's per-head products 512x512x64 NT
 * 58 vs 78, 128x64x384 NN 63 vs 80, 4x300x64 NT 15 vs 20, 1x1000x64 equal;
 * below about 64K multiply-adds oneDNN's fixed cost per call (memory
 * objects, about 2 us) loses: 1x100x64 NT 0.8 us vs 2.8 us. A new shape
 * costs oneDNN 15-20 us once (its primitive). So oneDNN wherever it is
 * not slower; OpenBLAS is also the fallback when oneDNN is absent or
 * cannot make a primitive.
 *
 * Without AVX-512 (and off x86, unmeasured), OpenBLAS for every product:
 * on that same kind of machine the encoder's own use
 * (256-row blocks against packed weights, both threads at once) ran
 * slower on oneDNN's AVX2 kernels than the shapes alone showed. A
 * 16,384-token encoding of the full-size random LOCOST (bench/speed.sh's
 * model) on 2 threads of an AVX2 Zen 3, seconds summed over both
 * threads, OpenBLAS vs oneDNN: 256x2048x768 NT (the gated feed-forward's
 * first products) 20.5 vs 43.3, 256x768x2048 NT 10.0 vs 12.4,
 * 256x768x768 TT 3.9 vs 4.7, 768x256x768 NT 8.0 vs 8.0, the S4D block's
 * Mx256x256 NN 1.6 vs 1.3 (more of them on OpenBLAS); the encoding 24.4 s
 * against 37.3. */
static const struct {
	int64_t macs;                   /* class: M N K <= macs */
	int lib;
} choice[] = {
	{ 65536, LIB_BLAS },
	{ INT64_MAX, LIB_DNNL },
};

static struct {
	pthread_once_t once;
	int lib;                        /* $LC_GEMM: LIB_TABLE unless forced */
	int emulate;                    /* $LC_BF16_EMULATE=1 */
	int prec;                       /* set by cmp_set_compute before threads start */
	int dnnl;                       /* this build has oneDNN */
	int dnnl_wide;                  /* and the processor AVX-512: the table's choice */
	char dnnl_ver[48];
	int dev;                        /* DEV_CUDA: the products on the GPU */
	int gpu_all;                    /* $LC_CUDA_ALL=1: every one there, whatever its size */
} cs = { PTHREAD_ONCE_INIT, LIB_TABLE, 0, PREC_F32, 0, 0, "", DEV_CPU, 0 };

/* The device cmp_set_device chose (-1: none chose), read by settings_init:
 * a program run with -d cpu never opens the GPU. */
static int dev_chosen = -1;

static void settings_init(void)
{
	const char *g = getenv("LC_GEMM"), *e = getenv("LC_BF16_EMULATE");
	char gpu[256];

	cs.dnnl = cmp_dnnl_present(cs.dnnl_ver, sizeof cs.dnnl_ver);
	cs.dnnl_wide = cs.dnnl && cpu_avx512f();
	if (g && !strcmp(g, "openblas"))
		cs.lib = LIB_BLAS;
	else if (g && !strcmp(g, "onednn") && cs.dnnl)
		cs.lib = LIB_DNNL;
	cs.emulate = e && !strcmp(e, "1");
	cs.gpu_all = (e = getenv("LC_CUDA_ALL")) && !strcmp(e, "1");
	/* the default device: the GPU where this lc has CUDA and one answers,
	 * unless $LC_DEVICE says otherwise (cmp_set_device checks its value) */
	if (dev_chosen >= 0)
		cs.dev = dev_chosen;
	else if ((e = getenv("LC_DEVICE")) && *e && strcmp(e, "cuda"))
		cs.dev = DEV_CPU;
	else
		cs.dev = cmp_cuda_open(gpu, sizeof gpu) ? DEV_CUDA : DEV_CPU;
}

int cmp_set_device(const char *name, void (*warn)(void *ctx, const char *msg), void *ctx,
                   lc_err *err)
{
	const char *what = "-d/--device", *env = getenv("LC_DEVICE"), *sep = " ";
	char gpu[256];

	if (!name && env && *env)
		name = env, what = "$LC_DEVICE", sep = "=";
	if (name && strcmp(name, "cpu") && strcmp(name, "cuda"))
		return lc_fail(err, "%s: '%s' is not cpu or cuda", what, name);
	if (name && !strcmp(name, "cuda") && !cmp_cuda_open(gpu, sizeof gpu))
		return lc_fail(err, "%s%scuda: %s", what, sep, gpu);
	if (name)
		dev_chosen = strcmp(name, "cpu") ? DEV_CUDA : DEV_CPU;
	cmp_cuda_on_fail(warn, ctx);
	pthread_once(&cs.once, settings_init);
	if (name)               /* settings_init may have run before */
		cs.dev = dev_chosen;
	return 0;
}

/* compute/dev.h's rule for an attention, beside to_gpu's for products */
int cmp_dev_worth(int64_t macs)
{
	pthread_once(&cs.once, settings_init);
	return cs.gpu_all || macs >= CMP_DEV_MIN_MACS;
}

int cmp_device_cuda(void)
{
	pthread_once(&cs.once, settings_init);
	return cs.dev == DEV_CUDA;
}

int cmp_set_compute(const char *name, char *note, size_t cap, lc_err *err)
{
	const char *g = getenv("LC_GEMM"), *e = getenv("LC_BF16_EMULATE");

	if (cap)
		*note = '\0';
	pthread_once(&cs.once, settings_init);
	if (g && *g && strcmp(g, "openblas") && strcmp(g, "onednn"))
		return lc_fail(err, "LC_GEMM=%s: expected openblas or onednn", g);
	if (g && !strcmp(g, "onednn") && !cs.dnnl)
		return lc_fail(err, "LC_GEMM=onednn: this lc was built without oneDNN");
	if (e && *e && strcmp(e, "0") && strcmp(e, "1"))
		return lc_fail(err, "LC_BF16_EMULATE=%s: expected 0 or 1", e);
	/* the other switches of the computation (ops/ssm.c reads the
	 * second), checked here with the rest: garbage is not "unset" */
	for (int i = 0; i < 2; i++) {
		const char *k = i ? "LC_FFT_BLOCKS" : "LC_CUDA_ALL", *v = getenv(k);
		if (v && *v && strcmp(v, "0") && strcmp(v, "1"))
			return lc_fail(err, "%s=%s: expected 0 or 1", k, v);
	}
	cs.emulate = e && !strcmp(e, "1");     /* as it is now, not at the first product */
	if (!name || !strcmp(name, "f32")) {
		cs.prec = PREC_F32;
		return 0;
	}
	if (strcmp(name, "bf16"))
		return lc_fail(err, "--compute: '%s' is not f32 or bf16", name);
	if (cs.emulate)
		cs.prec = PREC_BF16_EMULATED;
	else if (cs.dev == DEV_CUDA && cmp_cuda_bf16_ok())
		cs.prec = PREC_BF16;
	else if (cs.dev == DEV_CUDA)
		snprintf(note, cap, "this GPU has no bf16 products (compute capability under 8.0); "
		         "running fp32");
	else if (!cpu_bf16())
		snprintf(note, cap, "this processor has no AVX512-BF16 or AMX; running fp32");
	else if (!cs.dnnl)
		snprintf(note, cap, "this lc was built without oneDNN; running fp32");
	else if (!cmp_dnnl_bf16_ok())
		snprintf(note, cap, "oneDNN cannot make a bf16 matmul here; running fp32");
	else
		cs.prec = PREC_BF16;
	return 0;
}

/* 1 where cmp_xk_gemm runs here (vector units it uses, not turned off):
 * a 1 x 1 x 1 product it takes or declines. */
static int xk_here(void)
{
	float one = 1.0f, out = 0.0f;

	return !cmp_xk_gemm(CMP_N, CMP_T, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &out, 1);
}

void cmp_info(FILE *f)
{
	static const char *prec[] = { "f32", "bf16 (fp32 accumulation)",
		                      "bf16 emulated (LC_BF16_EMULATE=1: bf16 operands, fp32 products)" };
	char gpu[256];

	pthread_once(&cs.once, settings_init);
	if (cs.dev == DEV_CUDA && cmp_cuda_open(gpu, sizeof gpu))   /* opened once: its name */
		fprintf(f, "device\tcuda: %s: LOCOST's encoder whole, the other encoders' "
		        "layers whole from 2^26 multiply-adds a layer (their self-attention there, "
		        "heads of up to 128; LSG's sparse keys, BART-LS's pooled and the top-down "
		        "segment attention on the CPU), a smaller one's attention from 2^26 "
		        "multiply-adds, and the decoders' cross-attention "
		        "over the states (cuBLAS, cuFFT, lc's kernels); every other "
		        "matrix product with a weight of %d multiply-adds or more (under bf16 any), "
		        "or any of %d or more (LC_CUDA_ALL=1: every one), on cuBLAS (the weights "
		        "kept on the GPU), the rest on the CPU\n",
		        gpu, GPU_MIN_WEIGHT_MACS, GPU_MIN_MACS);
	else
		fprintf(f, "device\tcpu\n");
	if (!cs.dnnl || cs.lib == LIB_BLAS)
		fprintf(f, "gemm\tOpenBLAS%s", cs.dnnl ? " (LC_GEMM=openblas)" : "");
	else if (cs.lib == LIB_TABLE && !cs.dnnl_wide)
		fprintf(f, "gemm\tOpenBLAS (%s present, not used for fp32: slower than OpenBLAS "
		        "without AVX-512; LC_GEMM=onednn forces it)", cs.dnnl_ver);
	else if (cs.lib == LIB_DNNL)
		fprintf(f, "gemm\t%s for every product (LC_GEMM=onednn); OpenBLAS as the fallback",
		        cs.dnnl_ver);
	else
		fprintf(f, "gemm\t%s; OpenBLAS for the smallest products and as the fallback",
		        cs.dnnl_ver);
	if (cs.lib == LIB_TABLE && xk_here())
		fprintf(f, "; lc's kernels for products of up to %d rows (the decoder's)",
		        XK_GEMM_ROWS);
	fputc('\n', f);
	fprintf(f, "compute\t%s%s\n", prec[cs.prec],
	        cs.prec != PREC_BF16        ? ""
	        : cs.dev == DEV_CUDA        ? ": cuBLAS"
	                                    : ": oneDNN and lc's kernels");
}

static int use_dnnl(int64_t M, int64_t N, int64_t K)
{
	if (!cs.dnnl || cs.lib == LIB_BLAS || K <= 0)     /* K = 0: C = beta C, BLAS's case */
		return 0;
	if (cs.lib == LIB_DNNL)
		return 1;
	if (!cs.dnnl_wide)
		return 0;
	for (size_t i = 0; i < sizeof choice / sizeof *choice; i++)
		if (M * N * K <= choice[i].macs)
			return choice[i].lib == LIB_DNNL;
	return 0;
}

/* Whether A or B (over the whole batch) lies in a constant region: one of
 * the model's weights. */
static int weight_operand(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                          const float *A, int64_t lda, int64_t sA, const float *B, int64_t ldb,
                          int64_t sB, int64_t batch)
{
	int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;

	return cmp_is_constant(A, (batch - 1) * sA + (ar - 1) * lda + ac) ||
	       cmp_is_constant(B, (batch - 1) * sB + (br - 1) * ldb + bc);
}

static int to_gpu(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, int64_t sA, const float *B, int64_t ldb,
                  int64_t sB, int64_t batch)
{
	double macs = (double)M * (double)N * (double)K * (double)batch;

	if (cs.dev != DEV_CUDA || M <= 0 || N <= 0 || K <= 0 || batch <= 0)
		return 0;
	return cs.gpu_all || macs >= GPU_MIN_MACS ||
	       (macs >= GPU_MIN_WEIGHT_MACS &&
	        weight_operand(ta, tb, M, N, K, A, lda, sA, B, ldb, sB, batch));
}

/* Whether the GPU takes a product whole (cmp_gemm_par and
 * cmp_gemm_batch_par then split nothing): under --compute bf16 one with
 * a weight, whatever its size, else one worth the bus (to_gpu). */
static int gpu_takes(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                     const float *A, int64_t lda, int64_t sA, const float *B, int64_t ldb,
                     int64_t sB, int64_t batch)
{
	if (cs.dev != DEV_CUDA || M <= 0 || N <= 0 || K <= 0 || batch <= 0)
		return 0;
	if (cs.prec == PREC_BF16 && weight_operand(ta, tb, M, N, K, A, lda, sA, B, ldb, sB, batch))
		return 1;
	return to_gpu(ta, tb, M, N, K, A, lda, sA, B, ldb, sB, batch);
}

static void gemm_f32(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc)
{
	if (to_gpu(ta, tb, M, N, K, A, lda, 0, B, ldb, 0, 1) &&
	    !cmp_cuda_gemm(ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, 0))
		return;
	if (cs.lib == LIB_TABLE &&
	    !cmp_xk_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
		return;
	if (use_dnnl(M, N, K) &&
	    !cmp_dnnl_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 0))
		return;
	blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int cmp_bf16_active(void)
{
	pthread_once(&cs.once, settings_init);
	return cs.prec != PREC_F32;
}

float cmp_bf16_round(float x)
{
	return lc_bf16_to_f32(lc_f32_to_bf16(x));
}

/* The stored matrix (rows x cols, row stride ld) rounded to bf16 values,
 * packed with row stride cols. */
static float *round_copy(const float *x, int64_t rows, int64_t cols, int64_t ld)
{
	float *y = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof *y);

	for (int64_t r = 0; y && r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			y[r * cols + c] = cmp_bf16_round(x[r * ld + c]);
	return y;
}

void cmp_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
              float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
              float beta, float *C, int64_t ldc)
{
	int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;

	if (M <= 0 || N <= 0)
		return;
	pthread_once(&cs.once, settings_init);
	/* bf16 for the products with weights only (compute.h); on the GPU
	 * every one, whatever its size, so that none is fp32 by chance; where
	 * the GPU fails one (said once), the same numbers by rounding here */
	if (cs.prec != PREC_F32 && K > 0 &&
	    weight_operand(ta, tb, M, N, K, A, lda, 0, B, ldb, 0, 1)) {
		int gpu = cs.dev == DEV_CUDA && cs.prec == PREC_BF16;
		if (gpu &&
		    !cmp_cuda_gemm(ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, 1))
			return;
		if (cs.prec == PREC_BF16_EMULATED || gpu) {
			/* bf16 hardware's numbers up to summation order: bf16
			 * operands, exact products (a bf16 product fits in fp32),
			 * fp32 sums */
			float *a = round_copy(A, ar, ac, lda), *b = a ? round_copy(B, br, bc, ldb) : NULL;
			if (a && b) {
				gemm_f32(ta, tb, M, N, K, alpha, a, ac, b, bc, beta, C, ldc);
				free(a);
				free(b);
				return;
			}
			free(a);        /* out of memory: unrounded rather than nothing */
		} else if (cs.lib == LIB_TABLE &&
		           !cmp_xk_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) {
			return;
		} else if (!cmp_dnnl_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1)) {
			return;
		}
	}
	gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

struct par_job {
	enum cmp_trans ta, tb;
	int64_t M, N, K, lda, ldb, ldc;
	float alpha, beta;
	const float *A, *B;
	float *C;
	int64_t width;                  /* columns of C per part, the last one fewer */
	int64_t height;                 /* or rows of C per part (0: by columns) */
};

/* Products of up to PAR_ROWS rows (the decoder's, a short encoding's) are
 * split into column blocks of PAR_COLS: the same calls whatever the
 * thread count, so the same bits (an OpenBLAS kernel's rounding depends
 * on where a column falls in the call). Taller products (an encoder's
 * projections of a whole document) are split into row blocks of
 * PAR_TALL_ROWS, again the same calls for every thread count: each block
 * packs its own rows and reads the weight (one part per thread by columns
 * had every thread pack all the rows, 16 times over on 16 cores, where
 * BART's products ran at a tenth of LOCOST's rate). 256 rows as LOCOST's
 * encoder's blocks: enough blocks for many cores from 1025 rows on; on 2
 * cores 256 and 1024 measured the same (LSG 16K --gemm-only, oneDNN and
 * OpenBLAS). Products for lc's kernels (up to
 * XK_GEMM_ROWS rows) take blocks of PAR_COLS_XK: they pack nothing, and
 * the decoder's 768-column projections then split 3 + 3 over two
 * threads, not 2 + 1 (L = 64 greedy steps 0.0249 / 0.0237 / 0.0184 s
 * against 0.0256 / 0.0242 / 0.0209 at 256, alternating). */
#define PAR_COLS 256
#define PAR_COLS_XK 128
#define PAR_ROWS 1024
#define PAR_TALL_ROWS 256

static void par_part(void *ctx, int64_t i, int tid)
{
	const struct par_job *j = ctx;

	(void)tid;
	if (j->height) {
		int64_t lo = i * j->height, hi = lo + j->height < j->M ? lo + j->height : j->M;
		/* rows lo..hi of op(A): columns of A when it is transposed */
		const float *A = j->A + (j->ta == CMP_T ? lo : lo * j->lda);

		cmp_gemm(j->ta, j->tb, hi - lo, j->N, j->K, j->alpha, A, j->lda, j->B, j->ldb,
		         j->beta, j->C + lo * j->ldc, j->ldc);
	} else {
		int64_t lo = i * j->width, hi = lo + j->width < j->N ? lo + j->width : j->N;
		/* columns lo..hi of op(B): rows of B when it is transposed */
		const float *B = j->B + (j->tb == CMP_T ? lo * j->ldb : lo);

		cmp_gemm(j->ta, j->tb, j->M, hi - lo, j->K, j->alpha, j->A, j->lda, B, j->ldb,
		         j->beta, j->C + lo, j->ldc);
	}
}

void cmp_gemm_par(int nth, enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                  int64_t ldb, float beta, float *C, int64_t ldc)
{
	struct par_job j = { ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C, 0, 0 };
	int64_t w = M <= XK_GEMM_ROWS ? PAR_COLS_XK : PAR_COLS;

	pthread_once(&cs.once, settings_init);
	if (gpu_takes(ta, tb, M, N, K, A, lda, 0, B, ldb, 0, 1) ||     /* the GPU: one call */
	    (M <= PAR_ROWS && N < 2 * w)) {
		cmp_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	if (M > PAR_ROWS) {
		j.height = PAR_TALL_ROWS;
		par_for(nth, (M + PAR_TALL_ROWS - 1) / PAR_TALL_ROWS, par_part, &j);
	} else {
		j.width = w;
		par_for(nth, (N + w - 1) / w, par_part, &j);
	}
}

struct batch_job {
	enum cmp_trans ta, tb;
	int64_t M, N, K, lda, sA, ldb, sB, ldc, sC;
	float alpha, beta;
	const float *A, *B;
	float *C;
};

static void batch_part(void *ctx, int64_t i, int tid)
{
	const struct batch_job *j = ctx;

	(void)tid;
	cmp_gemm(j->ta, j->tb, j->M, j->N, j->K, j->alpha, j->A + i * j->sA, j->lda,
	         j->B + i * j->sB, j->ldb, j->beta, j->C + i * j->sC, j->ldc);
}

void cmp_gemm_batch_par(int nth, enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N,
                        int64_t K, float alpha, const float *A, int64_t lda, int64_t sA,
                        const float *B, int64_t ldb, int64_t sB, float beta, float *C,
                        int64_t ldc, int64_t sC, int64_t batch)
{
	struct batch_job j = { ta, tb, M, N, K, lda, sA, ldb, sB, ldc, sC, alpha, beta, A, B, C };

	pthread_once(&cs.once, settings_init);
	if (gpu_takes(ta, tb, M, N, K, A, lda, sA, B, ldb, sB, batch) || nth <= 1 || batch < 2) {
		cmp_gemm_batch(ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
		               batch);
		return;
	}
	par_for(nth, batch, batch_part, &j);
}

void cmp_gemm_batch(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, int64_t sA, const float *B,
                    int64_t ldb, int64_t sB, float beta, float *C, int64_t ldc, int64_t sC,
                    int64_t batch)
{
	pthread_once(&cs.once, settings_init);
	/* on the GPU in one call: under --compute bf16 one with a weight in
	 * bf16 (emulated bf16 goes product by product: cmp_gemm rounds the
	 * operands of those), the rest in fp32 where worth the bus; a failed
	 * one product by product */
	if (cs.dev == DEV_CUDA && batch > 0 && M > 0 && N > 0 && K > 0) {
		int w = cs.prec != PREC_F32 &&
		        weight_operand(ta, tb, M, N, K, A, lda, sA, B, ldb, sB, batch);
		if ((w ? cs.prec == PREC_BF16 : to_gpu(ta, tb, M, N, K, A, lda, sA, B, ldb, sB, batch)) &&
		    !cmp_cuda_gemm(ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
		                   batch, w))
			return;
	}
	for (int64_t i = 0; i < batch; i++)
		cmp_gemm(ta, tb, M, N, K, alpha, A + i * sA, lda, B + i * sB, ldb, beta, C + i * sC,
		         ldc);
}
