#include "ops/attn.h"

#include <math.h>
#include <string.h>

#include "compute/compute.h"
#include "ops/softmax.h"

void attn_fw(const attn_spec *s, const float *q, int64_t ldq, const float *k,
             const float *v, int64_t ldk, int64_t T, int64_t pos, float *out, int64_t ldo,
             float *P)
{
	int64_t S = pos + T, dk = s->dk;

	/* per head: P_h = scale q_h k_h^T */
	cmp_gemm_batch(CMP_N, CMP_T, T, S, dk, s->scale, q, ldq, dk, k, ldk, dk, 0.0f, P, S, T * S,
	               s->heads);
	for (int h = 0; s->causal && h < s->heads; h++) {
		float *Ph = P + (int64_t)h * T * S;
		const float *bias = s->bias ? s->bias + (int64_t)h * s->ldb : NULL;
		for (int64_t i = 0; i < T; i++)
			for (int64_t j = 0; j < S; j++) {
				int64_t dist = pos + i - j;
				float *x = &Ph[i * S + j];
				*x = dist < 0 ? -INFINITY : (bias ? *x + bias[dist] : *x);
			}
	}
	softmax_fw(P, (int64_t)s->heads * T, S, S);
	/* out_h = P_h v_h */
	cmp_gemm_batch(CMP_N, CMP_N, T, dk, S, 1.0f, P, S, T * S, v, ldk, dk, 0.0f, out, ldo, dk,
	               s->heads);
}

void attn_bw(const attn_spec *s, const float *q, int64_t ldq, const float *k,
             const float *v, int64_t ldk, int64_t T, int64_t pos, const float *dout,
             int64_t ldo, float *P, float *dq, float *dk, float *dv, float *work)
{
	int64_t S = pos + T, d = s->dk, n = (int64_t)s->heads * T * S;

	/* dv_h += P_h^T dout_h; dP_h = dout_h v_h^T */
	cmp_gemm_batch(CMP_T, CMP_N, S, d, T, 1.0f, P, S, T * S, dout, ldo, d, 1.0f, dv, ldk, d,
	               s->heads);
	cmp_gemm_batch(CMP_N, CMP_T, T, S, d, 1.0f, dout, ldo, d, v, ldk, d, 0.0f, work, S, T * S,
	               s->heads);
	softmax_bw(P, work, (int64_t)s->heads * T, S, S);
	/* S = scale q k^T: dq_h += scale dS_h k_h, dk_h += scale dS_h^T q_h */
	cmp_gemm_batch(CMP_N, CMP_N, T, d, S, s->scale, work, S, T * S, k, ldk, d, 1.0f, dq, ldq, d,
	               s->heads);
	cmp_gemm_batch(CMP_T, CMP_N, S, d, T, s->scale, work, S, T * S, q, ldq, d, 1.0f, dk, ldk, d,
	               s->heads);
	memcpy(P, work, (size_t)n * sizeof *P);
}

int attn_cache_reorder(float *const *caches, int ncache, int nl, int rcap, int nin, int nout,
                       size_t stride, size_t used, const int32_t *src, float *tmp, lc_err *err)
{
	int identity = nout == nin;

	if (nout < 0 || nout > nin || nin > rcap)
		return lc_fail(err, "decoder: reorder of %d rows into %d (of %d)", nin, nout, rcap);
	for (int r = 0; r < nout; r++) {
		if (src[r] < 0 || src[r] >= nin)
			return lc_fail(err, "decoder: reorder source %ld out of range [0, %d)",
			               (long)src[r], nin);
		if (src[r] != r)
			identity = 0;
	}
	if (identity || used == 0)
		return 0;
	if (nout < nin) {
		/* dropping rows (src increasing, src[r] >= r): in place, copying
		 * only the rows that move; each source row is read before any
		 * write reaches it */
		int inplace = 1;
		for (int r = 0; r < nout && inplace; r++)
			inplace = src[r] >= r && (r == 0 || src[r] > src[r - 1]);
		if (inplace) {
			for (int c = 0; c < ncache; c++)
				for (int li = 0; li < nl; li++) {
					float *base = caches[c] + (size_t)li * (size_t)rcap * stride;
					for (int r = 0; r < nout; r++)
						if (src[r] != r)
							memcpy(base + (size_t)r * stride, base + (size_t)src[r] * stride,
							       used * sizeof(float));
				}
			return 0;
		}
	}
	for (int c = 0; c < ncache; c++)
		for (int li = 0; li < nl; li++) {
			float *base = caches[c] + (size_t)li * (size_t)rcap * stride;
			for (int r = 0; r < nout; r++)
				memcpy(tmp + (size_t)r * stride, base + (size_t)src[r] * stride,
				       used * sizeof(float));
			for (int r = 0; r < nout; r++)
				memcpy(base + (size_t)r * stride, tmp + (size_t)r * stride, used * sizeof(float));
		}
	return 0;
}
