#include "ops/xcache.h"

#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "base/parallel.h"
#include "compute/compute.h"
#include "ops/linear.h"

/* Rows of the states projected at a time: large enough for the products'
 * full rate, small enough to keep the scratch (rows x nh dk floats) a few
 * MiB. */
#define FILL_ROWS 4096

struct xcache {
	int nl, nh, dk, bf16;
	int64_t L;
	void *kv;                   /* [nl][2][nh][L][dk], float or uint16_t */
};

uint64_t xcache_layer_bytes(int64_t L, int nh, int dk, int bf16)
{
	return 2 * (uint64_t)L * (uint64_t)nh * (uint64_t)dk * (bf16 ? 2u : 4u);
}

xcache *xcache_new(int nl, int64_t L, int nh, int dk, int bf16, lc_err *err)
{
	xcache *c = calloc(1, sizeof *c);
	uint64_t b = xcache_layer_bytes(L, nh, dk, bf16) * (uint64_t)(nl > 0 ? nl : 0);

	/* the callers' sizes come from a checked configuration and states
	 * that are in memory: no product here can overflow 64 bits */
	if (c && nl > 0 && L > 0 && nh > 0 && dk > 0)
		c->kv = lc_big_alloc(b);   /* 4 KiB faults took half of filling it */
	if (!c || !c->kv) {
		free(c);
		lc_fail(err, "out of memory for the cross-attention cache (%d layers of %lld rows, "
		        "%.1f MiB)", nl, (long long)L, (double)b / 1048576.0);
		return NULL;
	}
	c->nl = nl;
	c->L = L;
	c->nh = nh;
	c->dk = dk;
	c->bf16 = bf16;
	return c;
}

void xcache_free(xcache *c)
{
	if (c && c->kv)
		lc_big_free(c->kv, xcache_layer_bytes(c->L, c->nh, c->dk, c->bf16) * (uint64_t)c->nl);
	free(c);
}

int xcache_layers(const xcache *c)
{
	return c ? c->nl : 0;
}

/* Element offset of layer li's keys (kv 0) or values (1), head h, row j. */
static size_t at(const xcache *c, int li, int kv, int h, int64_t j)
{
	return ((((size_t)li * 2 + (size_t)kv) * (size_t)c->nh + (size_t)h) * (size_t)c->L +
	        (size_t)j) * (size_t)c->dk;
}

/* One head's columns of a block of projected rows, into its place. */
struct scatter {
	xcache *c;
	const float *y;             /* [n, nh dk] the block's keys or values */
	int64_t r0, n;
	int li, kv;
};

static void scatter_head(void *ctx, int64_t h, int tid)
{
	const struct scatter *s = ctx;
	const xcache *c = s->c;
	int inner = c->nh * c->dk;
	size_t o = at(c, s->li, s->kv, (int)h, s->r0);
	const float *y = s->y + (size_t)h * (size_t)c->dk;

	(void)tid;
	if (c->bf16)
		cmp_bf16_pack(y, s->n, c->dk, inner, (uint16_t *)c->kv + o, c->dk);
	else
		for (int64_t j = 0; j < s->n; j++)
			memcpy((float *)c->kv + o + (size_t)j * (size_t)c->dk, y + (size_t)j * (size_t)inner,
			       (size_t)c->dk * sizeof(float));
}

int xcache_fill(xcache *c, const float *E, const uint16_t *E16, int d, const xcache_w *w,
                int nth, lc_err *err)
{
	int inner = c->nh * c->dk;
	int64_t B = c->L < FILL_ROWS ? c->L : FILL_ROWS;
	float *x = E ? NULL : lc_calloc_f32((uint64_t)B, (uint64_t)d, 1);
	float *y = lc_calloc_f32((uint64_t)B, (uint64_t)inner, 1);

	if (!y || (!E && !x)) {
		free(x);
		free(y);
		return lc_fail(err, "out of memory filling the cross-attention cache");
	}
	/* a block of rows at a time, through every layer */
	for (int64_t r0 = 0; r0 < c->L; r0 += B) {
		int64_t n = c->L - r0 < B ? c->L - r0 : B;
		const float *xb = E ? E + (size_t)r0 * (size_t)d : x;

		if (!E)
			lc_bf16_to_f32_n(E16 + (size_t)r0 * (size_t)d, (uint64_t)(n * d), x);
		for (int li = 0; li < c->nl; li++)
			for (int kv = 0; kv < 2; kv++) {
				struct scatter s = { c, y, r0, n, li, kv };

				linear_fw(y, xb, kv ? w[li].wv : w[li].wk, kv ? w[li].bv : w[li].bk, n, inner,
				          d, 0.0f, nth);
				/* on every thread: these are the cache's first writes,
				 * and a page's first write costs the kernel clearing it */
				par_for(nth, c->nh, scatter_head, &s);
			}
	}
	free(x);
	free(y);
	return 0;
}

void xcache_attend(const xcache *c, int li, xattn_work *w, const float *q, int64_t R,
                   int64_t ldq, float *ctx, int64_t ldc)
{
	if (c->bf16)
		xattn_fw_kv_bf16(w, q, R, ldq, c->nh, c->dk, (const uint16_t *)c->kv + at(c, li, 0, 0, 0),
		                 (const uint16_t *)c->kv + at(c, li, 1, 0, 0), c->L, c->dk,
		                 c->L * c->dk, ctx, ldc, NULL);
	else
		xattn_fw_kv(w, q, R, ldq, c->nh, c->dk, (const float *)c->kv + at(c, li, 0, 0, 0),
		            (const float *)c->kv + at(c, li, 1, 0, 0), c->L, c->dk, c->L * c->dk, ctx,
		            ldc, NULL);
}
