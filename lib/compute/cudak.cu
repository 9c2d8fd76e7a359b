/*
 * cudak.cu: lc's own CUDA kernels (make CUDA=1; built by nvcc), each
 * behind a C launcher of compute/cudak.h that queues it on the default
 * stream and returns the launch's error. compute/cudadev.c calls them;
 * their meaning is compute/dev.h's.
 *
 * Every kernel walks its elements with a grid-stride loop over 64-bit
 * indices, so any size runs with a bounded grid.
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "compute/cudak.h"

#define THREADS 256

static unsigned grid(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;

	return (unsigned)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

#define FOR_EACH(i, n) \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (int64_t)gridDim.x * blockDim.x)

/* The sum of v over the block's threads (a power of two of them), for
 * every thread; part [blockDim.x] is free again when it returns. */
__device__ static double block_sum(double v, double *part)
{
	part[threadIdx.x] = v;
	__syncthreads();
	for (int h = blockDim.x / 2; h > 0; h /= 2) {
		if ((int)threadIdx.x < h)
			part[threadIdx.x] += part[threadIdx.x + h];
		__syncthreads();
	}
	v = part[0];
	__syncthreads();
	return v;
}

/* ---------------------------------------------------------- RMSNorm */

/* One block per row (grid-stride over rows); the sum of squares in double,
 * as ops/norm.c. */
__global__ static void k_rmsnorm(const float *x, int64_t R, int d, const float *w, float eps,
                                 float *y)
{
	__shared__ double part[THREADS];

	for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
		const float *xr = x + r * d;
		float *yr = y + r * d;
		double s = 0;
		float k;

		for (int i = threadIdx.x; i < d; i += blockDim.x)
			s += (double)xr[i] * xr[i];
		k = (float)(1.0 / sqrt(block_sum(s, part) / d + (double)eps));
		for (int i = threadIdx.x; i < d; i += blockDim.x)
			yr[i] = w[i] * (xr[i] * k);
	}
}

extern "C" int cudak_rmsnorm(const float *x, int64_t R, int d, const float *w, float eps,
                             float *y)
{
	k_rmsnorm<<<(unsigned)(R < 65536 ? R : 65536), THREADS>>>(x, R, d, w, eps, y);
	return (int)cudaGetLastError();
}

/* -------------------------------------------------------- LayerNorm */

/* x = LN(x + t) (t NULL: LN(x)) in place, one block per row (grid-stride
 * over rows): mean and variance in double, the rest as ops/norm.c's
 * layernorm_fw. Each thread reads back only the columns it wrote. */
__global__ static void k_addln(float *x, const float *t, int64_t R, int d, const float *w,
                               const float *b, float eps)
{
	__shared__ double part[THREADS];

	for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
		float *xr = x + r * d;
		const float *tr = t ? t + r * d : NULL;
		double s = 0, m, v;
		float mf, k;

		for (int i = threadIdx.x; i < d; i += blockDim.x) {
			if (tr)
				xr[i] = xr[i] + tr[i];
			s += xr[i];
		}
		m = block_sum(s, part) / d;
		s = 0;
		for (int i = threadIdx.x; i < d; i += blockDim.x) {
			double c = xr[i] - m;
			s += c * c;
		}
		v = block_sum(s, part) / d;
		mf = (float)m;
		k = (float)(1.0 / sqrt(v + (double)eps));
		for (int i = threadIdx.x; i < d; i += blockDim.x)
			xr[i] = (xr[i] - mf) * k * w[i] + b[i];
	}
}

extern "C" int cudak_addln(float *x, const float *t, int64_t R, int d, const float *w,
                           const float *b, float eps)
{
	k_addln<<<(unsigned)(R < 65536 ? R : 65536), THREADS>>>(x, t, R, d, w, b, eps);
	return (int)cudaGetLastError();
}

/* ------------------------------------------------------------ biases */

__global__ static void k_bias(float *x, int64_t R, int64_t C, int64_t ld, const float *b,
                              int by_row)
{
	FOR_EACH(i, R * C) {
		int64_t r = i / C, c = i % C;
		x[r * ld + c] += b[by_row ? r : c];
	}
}

extern "C" int cudak_bias(float *x, int64_t R, int64_t C, int64_t ld, const float *b, int by_row)
{
	k_bias<<<grid(R * C), THREADS>>>(x, R, C, ld, b, by_row);
	return (int)cudaGetLastError();
}

/* ------------------------------------------------------- activations */

/* The values of ops/act.c's forward (enum lc_act: gelu_new, gelu, relu,
 * silu), in float. */
__device__ static float act1(int k, float x)
{
	switch (k) {
	case 0: {
		float y = 0.7978845608028654f * (x + 0.044715f * x * x * x);
		return x / (1.0f + expf(-2.0f * y));
	}
	case 1:
		return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
	case 2:
		return x > 0 ? x : 0;
	default:
		return x / (1.0f + expf(-x));
	}
}

__global__ static void k_act(int k, const float *a, const float *b, int64_t n, float *out)
{
	FOR_EACH(i, n) {
		float g = act1(k, a[i]);
		out[i] = b ? g * b[i] : g;
	}
}

extern "C" int cudak_act(int k, const float *a, const float *b, int64_t n, float *out)
{
	k_act<<<grid(n), THREADS>>>(k, a, b, n, out);
	return (int)cudaGetLastError();
}

__global__ static void k_mul(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t R,
                             int64_t C)
{
	FOR_EACH(i, R * C) {
		int64_t r = i / C, c = i % C;
		y[r * ldy + c] *= x[r * ldx + c];
	}
}

extern "C" int cudak_mul(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t R, int64_t C)
{
	k_mul<<<grid(R * C), THREADS>>>(y, ldy, x, ldx, R, C);
	return (int)cudaGetLastError();
}

/* ----------------------------------------------------------- softmax */

/* One block per row: the max, the sum of exps (in double), then the
 * probabilities; lse = max + log(sum). */
__global__ static void k_softmax(float *S, int64_t R, int64_t n, float *lse)
{
	__shared__ double part[THREADS];
	__shared__ float mx;

	for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
		float *s = S + r * n, m = -INFINITY;
		double z = 0;
		float inv;

		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			m = fmaxf(m, s[i]);
		part[threadIdx.x] = m;
		__syncthreads();
		for (int h = blockDim.x / 2; h > 0; h /= 2) {
			if ((int)threadIdx.x < h)
				part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + h]);
			__syncthreads();
		}
		if (threadIdx.x == 0)
			mx = (float)part[0];
		__syncthreads();
		m = mx;
		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			z += (double)expf(s[i] - m);
		z = block_sum(z, part);
		inv = (float)(1.0 / z);
		if (lse && threadIdx.x == 0)
			lse[r] = m + (float)log(z);
		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			s[i] = expf(s[i] - m) * inv;
		__syncthreads();        /* part and mx reused by the next row */
	}
}

extern "C" int cudak_softmax(float *S, int64_t R, int64_t n, float *lse)
{
	k_softmax<<<(unsigned)(R < 65536 ? R : 65536), THREADS>>>(S, R, n, lse);
	return (int)cudaGetLastError();
}

/* ---------------------------------------------------- S4D convolution */

/* xp[g, t] = x[g, t] for g < cnt and t < L, else 0; xp [G, n]. */
__global__ static void k_pad(const float *x, int64_t ldx, int64_t L, int cnt, float *xp,
                             int64_t n, int G)
{
	FOR_EACH(i, (int64_t)G * n) {
		int64_t g = i / n, t = i % n;
		xp[i] = g < cnt && t < L ? x[g * ldx + t] : 0.0f;
	}
}

#define KLAGS 16        /* lags a thread evaluates, by powers of one step */

/* The placed kernels of channel g (one thread per KLAGS lags): gp[g, t] =
 * K0[t] for 0 <= t < T (plus K1[0] at t = 0) and gp[g, n - t] = K1[t] for
 * 1 <= t < T; the rest of gp is zero before (cudak_kernels clears it).
 * K_c[t] = 2 Re sum_m coef[g, c, m] z_m^t, z_m = exp(dtA[g, m]): z^t0 by
 * exp() at the thread's first lag, then KLAGS - 1 multiplications, in
 * double (ops/ssm.c re-anchors every 32 lags the same way). */
template <int NCH>
__global__ static void k_kernels(const double *dtA, const double *coef, int N2,
                                 const int64_t *T, int cnt, float *gp, int64_t n)
{
	int g = blockIdx.y;
	int64_t Tg, t0 = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * KLAGS;
	double acc[NCH][KLAGS];

	if (g >= cnt)
		return;
	Tg = T[g];
	if (t0 >= Tg)
		return;
	for (int c = 0; c < NCH; c++)
		for (int j = 0; j < KLAGS; j++)
			acc[c][j] = 0;
	for (int m = 0; m < N2; m++) {
		const double *a = dtA + ((int64_t)g * N2 + m) * 2;
		double ar = a[0], ai = a[1], e = exp(ar * (double)t0), s, co, ss, cs, es;
		double zr, zi, sr, si;
		sincos(ai * (double)t0, &s, &co);
		zr = e * co, zi = e * s;
		sincos(ai, &ss, &cs);
		es = exp(ar);
		sr = es * cs, si = es * ss;
		for (int j = 0; j < KLAGS; j++) {
			for (int c = 0; c < NCH; c++) {
				const double *k = coef + (((int64_t)g * NCH + c) * N2 + m) * 2;
				acc[c][j] += k[0] * zr - k[1] * zi;
			}
			double nr = zr * sr - zi * si;
			zi = zr * si + zi * sr;
			zr = nr;
		}
	}
	for (int j = 0; j < KLAGS; j++) {
		int64_t t = t0 + j;
		if (t >= Tg)
			break;
		if (t == 0) {
			gp[(int64_t)g * n] = (float)(2 * acc[0][0]) + (NCH > 1 ? (float)(2 * acc[NCH - 1][0]) : 0.0f);
		} else {
			gp[(int64_t)g * n + t] = (float)(2 * acc[0][j]);
			if (NCH > 1)
				gp[(int64_t)g * n + n - t] = (float)(2 * acc[NCH - 1][j]);
		}
	}
}

extern "C" int cudak_kernels(const double *dtA, const double *coef, int N2, int nch,
                             const int64_t *T, int64_t Tmax, int cnt, float *gp, int64_t n,
                             int G)
{
	int64_t threads = (Tmax + KLAGS - 1) / KLAGS;
	dim3 gr((unsigned)((threads + 127) / 128), (unsigned)cnt);
	cudaError_t e = cudaMemsetAsync(gp, 0, (size_t)G * (size_t)n * sizeof *gp, 0);

	if (e != cudaSuccess)
		return (int)e;
	if (nch > 1)
		k_kernels<2><<<gr, 128>>>(dtA, coef, N2, T, cnt, gp, n);
	else
		k_kernels<1><<<gr, 128>>>(dtA, coef, N2, T, cnt, gp, n);
	return (int)cudaGetLastError();
}

/* a[i] = a[i] b[i] s, complex (re, im) pairs. */
__global__ static void k_cmul(float2 *a, const float2 *b, int64_t n, float s)
{
	FOR_EACH(i, n) {
		float2 x = a[i], y = b[i];
		a[i] = make_float2((x.x * y.x - x.y * y.y) * s, (x.x * y.y + x.y * y.x) * s);
	}
}

extern "C" int cudak_cmul(void *a, const void *b, int64_t n, float s)
{
	k_cmul<<<grid(n), THREADS>>>((float2 *)a, (const float2 *)b, n, s);
	return (int)cudaGetLastError();
}

/* x[g, t] = c[g, t] + D[g] x[g, t] for g < cnt, t < L; c [*, n]. */
__global__ static void k_combine(float *x, int64_t ldx, int64_t L, int cnt, const float *c,
                                 int64_t n, const float *D)
{
	FOR_EACH(i, (int64_t)cnt * L) {
		int64_t g = i / L, t = i % L;
		float *p = x + g * ldx + t;
		*p = c[g * n + t] + D[g] * *p;
	}
}

extern "C" int cudak_combine(float *x, int64_t ldx, int64_t L, int cnt, const float *c, int64_t n,
                             const float *D)
{
	k_combine<<<grid((int64_t)cnt * L), THREADS>>>(x, ldx, L, cnt, c, n, D);
	return (int)cudaGetLastError();
}

extern "C" int cudak_pad(const float *x, int64_t ldx, int64_t L, int cnt, float *xp, int64_t n,
                         int G)
{
	k_pad<<<grid((int64_t)G * n), THREADS>>>(x, ldx, L, cnt, xp, n, G);
	return (int)cudaGetLastError();
}

/* ------------------------------------------------------------ bf16 */

/* y[i] = x[i] rounded to bf16 (to nearest, ties to even: the CPU's
 * lc_f32_to_bf16, so both devices' bf16 products read the same operands). */
__global__ static void k_to_bf16(const float *x, int64_t n, __nv_bfloat16 *y)
{
	FOR_EACH(i, n)
		y[i] = __float2bfloat16_rn(x[i]);
}

extern "C" int cudak_to_bf16(const float *x, int64_t n, void *y)
{
	k_to_bf16<<<grid(n), THREADS>>>(x, n, (__nv_bfloat16 *)y);
	return (int)cudaGetLastError();
}

/* ------------------------------------------ attention over key segments */

#define SEG_KT 32       /* keys a tile holds */

/* One block per group (dev.h), a thread per query row: the row's query
 * and output in registers (DK >= dk, the columns past dk zero), each tile
 * of SEG_KT keys and values read once into shared memory for the whole
 * group, then an online softmax: the tile's scores, the running maximum
 * moved once a tile (the output and the sum rescaled), the tile's
 * probabilities added in. */
template <int DK>
__global__ static void __launch_bounds__(CMP_DEV_SEG_ROWS)
k_segattn(const cmp_dev_group *G, const cmp_dev_seg *S, int dk, float scale)
{
	__shared__ float ks[SEG_KT][DK], vs[SEG_KT][DK], add[SEG_KT], kp[SEG_KT];
	const cmp_dev_group g = G[blockIdx.x];
	const int i = threadIdx.x, live = i < g.m;
	const float qp = live && g.qpad ? g.qpad[i] : 0.0f;
	float q[DK], acc[DK], sc[SEG_KT], mx = -INFINITY, l = 0.0f;

#pragma unroll
	for (int c = 0; c < DK; c++) {
		q[c] = live && c < dk ? g.q[(int64_t)i * g.ldq + c] : 0.0f;
		acc[c] = 0.0f;
	}
	for (int si = g.seg0; si < g.seg0 + g.nseg; si++) {
		const cmp_dev_seg s = S[si];

		for (int64_t t0 = 0; t0 < s.n; t0 += SEG_KT) {
			const int cnt = s.n - t0 < SEG_KT ? (int)(s.n - t0) : SEG_KT;
			float tm = -INFINITY;

			__syncthreads();        /* the last tile read by all */
			for (int e = threadIdx.x; e < SEG_KT * DK; e += blockDim.x) {
				int r = e / DK, c = e % DK, in = r < cnt && c < dk;
				ks[r][c] = in ? s.k[(t0 + r) * s.ld + c] : 0.0f;
				vs[r][c] = in ? s.v[(t0 + r) * s.ld + c] : 0.0f;
			}
			for (int r = threadIdx.x; r < SEG_KT; r += blockDim.x) {
				add[r] = r < cnt && s.mask ? s.mask[t0 + r] : 0.0f;
				kp[r] = r < cnt && s.kpad ? s.kpad[t0 + r] : 0.0f;
			}
			__syncthreads();
			if (!live)
				continue;
#pragma unroll
			for (int r = 0; r < SEG_KT; r++) {
				float d = 0.0f, v;
#pragma unroll
				for (int c = 0; c < DK; c++)
					d = fmaf(q[c], ks[r][c], d);
				v = d * scale;
				if (s.kpad)
					v = qp != 0.0f || kp[r] != 0.0f ? -10000.0f : v;
				else
					v += add[r];
				sc[r] = r < cnt ? v : -INFINITY;
				tm = fmaxf(tm, sc[r]);
			}
			if (tm == -INFINITY)
				continue;       /* nothing visible in this tile */
			if (tm > mx) {
				float corr = expf(mx - tm);     /* 0 while mx is -inf */
				l *= corr;
#pragma unroll
				for (int c = 0; c < DK; c++)
					acc[c] *= corr;
				mx = tm;
			}
#pragma unroll
			for (int r = 0; r < SEG_KT; r++) {
				float p = expf(sc[r] - mx);     /* 0 for -inf */
				l += p;
#pragma unroll
				for (int c = 0; c < DK; c++)
					acc[c] = fmaf(p, vs[r][c], acc[c]);
			}
		}
	}
	if (live) {
		float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
		for (int c = 0; c < DK; c++)
			if (c < dk)
				g.o[(int64_t)i * g.ldo + c] = acc[c] * inv;
	}
}

extern "C" int cudak_segattn(const cmp_dev_group *g, int64_t ng, const cmp_dev_seg *s, int dk,
                             float scale)
{
	unsigned n = (unsigned)ng;

	if (ng < 1)
		return 0;
	if (ng > INT32_MAX || dk < 1 || dk > CMP_DEV_SEG_DK)
		return (int)cudaErrorInvalidValue;
	if (dk <= 16)
		k_segattn<16><<<n, CMP_DEV_SEG_ROWS>>>(g, s, dk, scale);
	else if (dk <= 32)
		k_segattn<32><<<n, CMP_DEV_SEG_ROWS>>>(g, s, dk, scale);
	else if (dk <= 64)
		k_segattn<64><<<n, CMP_DEV_SEG_ROWS>>>(g, s, dk, scale);
	else
		k_segattn<128><<<n, CMP_DEV_SEG_ROWS>>>(g, s, dk, scale);
	return (int)cudaGetLastError();
}
