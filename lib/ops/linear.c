#include "ops/linear.h"

#include "compute/compute.h"
#include "ops/vmath.h"

static void add_bias_rows(float *y, const float *b, int64_t R, int dout)
{
	if (b)
		for (int64_t r = 0; r < R; r++)
			vm_madd(y + r * dout, 1.0f, b, y + r * dout, dout);
}

void linear_fw(float *y, const float *x, const float *W, const float *b, int64_t R, int dout,
               int din, float beta, int nth)
{
	if (nth == 0)
		cmp_gemm(CMP_N, CMP_T, R, dout, din, 1.0f, x, din, W, din, beta, y, dout);
	else
		cmp_gemm_par(nth, CMP_N, CMP_T, R, dout, din, 1.0f, x, din, W, din, beta, y, dout);
	add_bias_rows(y, b, R, dout);
}

void linear_fw_to_t(float *yT, int64_t ldy, const float *x, const float *W, const float *b,
                    int64_t R, int dout, int din)
{
	cmp_gemm(CMP_N, CMP_T, dout, R, din, 1.0f, W, din, x, din, 0.0f, yT, ldy);
	if (b)
		for (int o = 0; o < dout; o++)
			vm_addc(yT + (int64_t)o * ldy, b[o], yT + (int64_t)o * ldy, R);
}

void linear_fw_from_t(float *y, const float *xT, int64_t ldx, const float *W, const float *b,
                      int64_t R, int dout, int din, float beta)
{
	cmp_gemm(CMP_T, CMP_T, R, dout, din, 1.0f, xT, ldx, W, din, beta, y, dout);
	add_bias_rows(y, b, R, dout);
}

static void bias_grad_rows(const float *dy, int64_t R, int dout, float *db)
{
	if (db)
		for (int64_t r = 0; r < R; r++)
			for (int o = 0; o < dout; o++)
				db[o] += dy[r * dout + o];
}

void linear_bw(const float *dy, const float *x, const float *W, int64_t R, int dout, int din,
               float *dx, float *dW, float *db)
{
	if (dx)
		cmp_gemm(CMP_N, CMP_N, R, din, dout, 1.0f, dy, dout, W, din, 1.0f, dx, din);
	if (dW)
		cmp_gemm(CMP_T, CMP_N, dout, din, R, 1.0f, dy, dout, x, din, 1.0f, dW, din);
	bias_grad_rows(dy, R, dout, db);
}

void linear_bw_to_t(const float *dyT, int64_t ldy, const float *x, const float *W, int64_t R,
                    int dout, int din, float *dx, float *dW, float *db)
{
	/* yT = W x^T: dx = dyT^T W, dW = dyT x */
	if (dx)
		cmp_gemm(CMP_T, CMP_N, R, din, dout, 1.0f, dyT, ldy, W, din, 1.0f, dx, din);
	if (dW)
		cmp_gemm(CMP_N, CMP_N, dout, din, R, 1.0f, dyT, ldy, x, din, 1.0f, dW, din);
	if (db)
		for (int o = 0; o < dout; o++) {
			const float *row = dyT + (int64_t)o * ldy;
			double s = 0;
			for (int64_t r = 0; r < R; r++)
				s += row[r];
			db[o] += (float)s;
		}
}

void linear_bw_from_t(const float *dy, const float *xT, int64_t ldx, const float *W, int64_t R,
                      int dout, int din, float *dxT, float *dW, float *db)
{
	/* y = xT^T W^T: dxT = W^T dy^T, dW = dy^T xT^T */
	if (dxT)
		cmp_gemm(CMP_T, CMP_T, din, R, dout, 1.0f, W, din, dy, dout, 1.0f, dxT, ldx);
	if (dW)
		cmp_gemm(CMP_T, CMP_T, dout, din, R, 1.0f, dy, dout, xT, ldx, 1.0f, dW, din);
	bias_grad_rows(dy, R, dout, db);
}
