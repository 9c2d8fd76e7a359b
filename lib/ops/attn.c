#include "ops/attn.h"

#include <math.h>
#include <string.h>

#include "compute/compute.h"
#include "ops/softmax.h"

void attn_causal_fw(const attn_spec *s, const float *q, int64_t ldq, const float *k,
                    const float *v, int64_t ldk, int64_t T, int64_t pos, float *out, int64_t ldo,
                    float *P)
{
	int64_t S = pos + T;

	for (int h = 0; h < s->heads; h++) {
		float *Ph = P + (int64_t)h * T * S;
		const float *bias = s->bias ? s->bias + (int64_t)h * s->ldb : NULL;
		cmp_gemm(CMP_N, CMP_T, T, S, s->dk, s->scale, q + h * s->dk, ldq, k + h * s->dk, ldk,
		         0.0f, Ph, S);
		for (int64_t i = 0; i < T; i++)
			for (int64_t j = 0; j < S; j++) {
				int64_t dist = pos + i - j;
				float *x = &Ph[i * S + j];
				*x = dist < 0 ? -INFINITY : (bias ? *x + bias[dist] : *x);
			}
		softmax_fw(Ph, T, S, S);
		cmp_gemm(CMP_N, CMP_N, T, s->dk, S, 1.0f, Ph, S, v + h * s->dk, ldk, 0.0f,
		         out + h * s->dk, ldo);
	}
}

void attn_causal_bw(const attn_spec *s, const float *q, int64_t ldq, const float *k,
                    const float *v, int64_t ldk, int64_t T, int64_t pos, const float *dout,
                    int64_t ldo, float *P, float *dq, float *dk, float *dv, float *work)
{
	int64_t S = pos + T;

	for (int h = 0; h < s->heads; h++) {
		float *Ph = P + (int64_t)h * T * S;
		int64_t o = (int64_t)h * s->dk;
		/* dv += P^T dout; dP = dout v^T */
		cmp_gemm(CMP_T, CMP_N, S, s->dk, T, 1.0f, Ph, S, dout + o, ldo, 1.0f, dv + o, ldk);
		cmp_gemm(CMP_N, CMP_T, T, S, s->dk, 1.0f, dout + o, ldo, v + o, ldk, 0.0f, work, S);
		softmax_bw(Ph, work, T, S, S);
		/* S = scale q k^T: dq += scale dS k, dk += scale dS^T q */
		cmp_gemm(CMP_N, CMP_N, T, s->dk, S, s->scale, work, S, k + o, ldk, 1.0f, dq + o, ldq);
		cmp_gemm(CMP_T, CMP_N, S, s->dk, T, s->scale, work, S, q + o, ldq, 1.0f, dk + o, ldk);
		memcpy(Ph, work, (size_t)(T * S) * sizeof *Ph);
	}
}
