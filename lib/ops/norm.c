#include "ops/norm.h"

#include <math.h>
#include <stddef.h>

#include "ops/vmath.h"

void rmsnorm_fw(const float *x, int64_t R, int d, const float *w, float eps, float *y,
                float *rstd)
{
	for (int64_t r = 0; r < R; r++) {
		const float *xr = x + r * d;
		float s = (float)(1.0 / sqrt(vm_sumsq(xr, d) / d + (double)eps));
		if (rstd)
			rstd[r] = s;
		vm_scale_mul(xr, s, w, y + r * d, d);
	}
}

void rmsnorm_fw_res(float *x, const float *a, int64_t R, int d, const float *w, float eps,
                    float *y, float *rstd)
{
	for (int64_t r = 0; r < R; r++) {
		vm_madd(x + r * d, 1.0f, a + r * d, x + r * d, d);    /* x + a exactly: a 1 = a */
		rmsnorm_fw(x + r * d, 1, d, w, eps, y + r * d, rstd ? rstd + r : NULL);
	}
}

void rmsnorm_bw(const float *dy, const float *x, const float *rstd, const float *w, int64_t R,
                int d, float *dx, float *dw)
{
	for (int64_t r = 0; r < R; r++) {
		const float *xr = x + r * d, *g = dy + r * d;
		double s = rstd[r], dot = 0;
		for (int i = 0; i < d; i++) {
			dot += (double)g[i] * w[i] * xr[i];
			if (dw)
				dw[i] += (float)(g[i] * xr[i] * s);
		}
		if (dx)
			for (int i = 0; i < d; i++)
				dx[r * d + i] += (float)(s * g[i] * w[i] - xr[i] * s * s * s * dot / d);
	}
}

void layernorm_fw(const float *x, int64_t R, int d, const float *w, const float *b, float eps,
                  float *y, float *mean, float *rstd)
{
	for (int64_t r = 0; r < R; r++) {
		const float *xr = x + r * d;
		float *o = y + r * d;
		double m = 0, v = 0;
		float mf, s;
		for (int i = 0; i < d; i++)
			m += xr[i];
		m /= d;
		for (int i = 0; i < d; i++) {
			double c = xr[i] - m;
			v += c * c;
		}
		mf = (float)m;
		s = (float)(1.0 / sqrt(v / d + (double)eps));
		if (mean)
			mean[r] = mf;
		if (rstd)
			rstd[r] = s;
		for (int i = 0; i < d; i++)
			o[i] = (xr[i] - mf) * s * w[i] + b[i];
	}
}

void layernorm_bw(const float *dy, const float *x, const float *mean, const float *rstd,
                  const float *w, int64_t R, int d, float *dx, float *dw, float *db)
{
	for (int64_t r = 0; r < R; r++) {
		const float *xr = x + r * d, *g = dy + r * d;
		double s = rstd[r], m = mean[r], sg = 0, sgx = 0;
		for (int i = 0; i < d; i++) {
			double xh = (xr[i] - m) * s, gw = (double)g[i] * w[i];
			sg += gw;
			sgx += gw * xh;
			if (dw)
				dw[i] += (float)(g[i] * xh);
			if (db)
				db[i] += g[i];
		}
		if (dx)
			for (int i = 0; i < d; i++) {
				double xh = (xr[i] - m) * s;
				dx[r * d + i] += (float)(s * ((double)g[i] * w[i] - sg / d - xh * sgx / d));
			}
	}
}
