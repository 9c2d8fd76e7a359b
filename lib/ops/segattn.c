/*
 * segattn.c: attention plans (see segattn.h). A plan is three growing
 * tables (buffers, segments, groups of at most CMP_DEV_SEG_ROWS rows);
 * sa_run places every buffer, the output and the tables in one
 * allocation on the GPU, turns the offsets into the GPU's pointers and
 * queues one kernel.
 */
#include "ops/segattn.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compute/dev.h"

typedef struct buf {
	const float *x;
	int64_t n;
	int dev;                        /* x is the GPU's: used where it is */
} buf;

/* An operand: buffer b (-1: none) at float offset off. */
typedef struct at {
	int b;
	int64_t off;
} at_t;

typedef struct seg {
	at_t k, v, mask, pad;
	int64_t ld, n;
} seg;

typedef struct grp {
	at_t q, pad;
	int64_t ldq, o, ldo;
	int m;
	int64_t seg0, nseg;
} grp;

struct sa_plan {
	int dk;
	float scale;
	int oom;                        /* a table could not grow */
	int stray;                      /* a pointer outside the buffers */
	buf *buf;
	int64_t nbuf, cbuf;
	seg *seg;
	int64_t nseg, cseg, open;       /* open: the first segment of the next range */
	grp *grp;
	int64_t ngrp, cgrp;
};

static atomic_llong runs;

int sa_takes(int dk)
{
	return dk >= 1 && dk <= CMP_DEV_SEG_DK && cmp_dev_on();
}

int64_t sa_gpu_runs(void)
{
	return atomic_load(&runs);
}

sa_plan *sa_new(int dk, float scale)
{
	sa_plan *p = calloc(1, sizeof *p);

	if (p) {
		p->dk = dk;
		p->scale = scale;
	}
	return p;
}

void sa_free(sa_plan *p)
{
	if (!p)
		return;
	free(p->buf);
	free(p->seg);
	free(p->grp);
	free(p);
}

/* Room for one more of *n items of size sz in *a (capacity *c). */
static int room(sa_plan *p, void **a, int64_t n, int64_t *c, size_t sz)
{
	int64_t nc;
	void *x;

	if (n < *c)
		return 1;
	nc = *c ? 2 * *c : 64;
	if (!(x = realloc(*a, (size_t)nc * sz))) {
		p->oom = 1;
		return 0;
	}
	*a = x;
	*c = nc;
	return 1;
}

static void add_buf(sa_plan *p, const float *x, int64_t n, int dev)
{
	void *a = p->buf;

	if (!room(p, &a, p->nbuf, &p->cbuf, sizeof *p->buf))
		return;
	p->buf = a;
	p->buf[p->nbuf++] = (buf){ x, n, dev };
}

void sa_buf(sa_plan *p, const float *x, int64_t n)
{
	add_buf(p, x, n, 0);
}

void sa_buf_dev(sa_plan *p, const float *x, int64_t n)
{
	add_buf(p, x, n, 1);
}

/* x as a buffer and offset ({ -1, 0 } for NULL) */
static at_t locate(sa_plan *p, const float *x)
{
	if (!x)
		return (at_t){ -1, 0 };
	for (int64_t i = 0; i < p->nbuf; i++)
		if (x >= p->buf[i].x && x < p->buf[i].x + p->buf[i].n)
			return (at_t){ (int)i, x - p->buf[i].x };
	p->stray = 1;
	return (at_t){ -1, 0 };
}

void sa_seg(sa_plan *p, const float *k, const float *v, int64_t ld, int64_t n,
            const float *mask, const float *pad)
{
	void *a = p->seg;

	if (n < 1 || !room(p, &a, p->nseg, &p->cseg, sizeof *p->seg))
		return;
	p->seg = a;
	p->seg[p->nseg++] = (seg){ locate(p, k), locate(p, v), locate(p, mask), locate(p, pad), ld,
	                           n };
}

void sa_rows(sa_plan *p, const float *q, int64_t ldq, int64_t m, int64_t o, int64_t ldo,
             const float *qpad)
{
	at_t aq, ap;

	if (m < 1) {
		p->open = p->nseg;
		return;
	}
	aq = locate(p, q), ap = locate(p, qpad);
	for (int64_t r = 0; r < m; r += CMP_DEV_SEG_ROWS) {
		void *a = p->grp;
		grp g = { aq, ap, ldq, o + r * ldo, ldo, 0, p->open, p->nseg - p->open };
		if (!room(p, &a, p->ngrp, &p->cgrp, sizeof *p->grp))
			break;
		p->grp = a;
		g.q.off += r * ldq;
		if (g.pad.b >= 0)
			g.pad.off += r;
		g.m = (int)(m - r < CMP_DEV_SEG_ROWS ? m - r : CMP_DEV_SEG_ROWS);
		p->grp[p->ngrp++] = g;
	}
	p->open = p->nseg;
}

/* floats, rounded up to 256 bytes */
static int64_t up(int64_t n)
{
	return (n + 63) / 64 * 64;
}

static int64_t floats_of(size_t bytes)
{
	return (int64_t)((bytes + sizeof(float) - 1) / sizeof(float));
}

/* multiply-adds of the plan: scores and outputs */
static int64_t macs(const sa_plan *p)
{
	int64_t n = 0;

	for (int64_t i = 0; i < p->ngrp; i++) {
		const grp *g = &p->grp[i];
		for (int64_t j = g->seg0; j < g->seg0 + g->nseg; j++)
			n += 2 * (int64_t)g->m * p->seg[j].n * p->dk;
	}
	return n;
}

static const float *at(float *const *dbuf, at_t a)
{
	return a.b < 0 ? NULL : dbuf[a.b] + a.off;
}

/* The plan on the GPU, under the device's lock (the caller's): the host
 * buffers, the output when it is the CPU's (out; else dout, the GPU's)
 * and the tables in one allocation, one kernel, the output copied back
 * when it is the CPU's. 0 done, 1 not run (said once), -1 err. */
static int launch(sa_plan *p, float *out, float *dout, int64_t rows, int64_t cols, int64_t ldo,
                  lc_err *err)
{
	int64_t total, fo, fg, fs;
	float *base, **dbuf = NULL, *o;
	cmp_dev_group *hg = NULL;
	cmp_dev_seg *hs = NULL;
	lc_err e;
	int rc = 1;

	dbuf = malloc((size_t)(p->nbuf ? p->nbuf : 1) * sizeof *dbuf);
	hg = malloc((size_t)p->ngrp * sizeof *hg);
	hs = malloc((size_t)(p->nseg ? p->nseg : 1) * sizeof *hs);
	if (!dbuf || !hg || !hs) {
		free(dbuf), free(hg), free(hs);
		return lc_fail(err, "out of memory (an attention's plan)");
	}
	total = 0;
	for (int64_t i = 0; i < p->nbuf; i++)
		total += p->buf[i].dev ? 0 : up(p->buf[i].n);
	fo = total;
	fg = fo + (dout ? 0 : up((rows - 1) * ldo + cols));
	fs = fg + up(floats_of((size_t)p->ngrp * sizeof *hg));
	total = fs + floats_of((size_t)p->nseg * sizeof *hs);
	if (!(base = cmp_dev_alloc(total))) {
		cmp_dev_say("an attention", "out of GPU memory; such attentions run on the CPU");
		goto out;
	}
	o = dout ? dout : base + fo;
	for (int64_t i = 0, off = 0; i < p->nbuf; i++) {
		if (p->buf[i].dev) {
			dbuf[i] = (float *)p->buf[i].x;
			continue;
		}
		dbuf[i] = base + off;
		cmp_dev_put(dbuf[i], p->buf[i].x, p->buf[i].n);
		off += up(p->buf[i].n);
	}
	for (int64_t i = 0; i < p->nseg; i++) {
		const seg *s = &p->seg[i];
		hs[i] = (cmp_dev_seg){ at(dbuf, s->k), at(dbuf, s->v), at(dbuf, s->mask),
		                       at(dbuf, s->pad), s->ld, s->n };
	}
	for (int64_t i = 0; i < p->ngrp; i++) {
		const grp *g = &p->grp[i];
		hg[i] = (cmp_dev_group){ at(dbuf, g->q), o + g->o, at(dbuf, g->pad), g->ldq,
		                         g->ldo, g->m, (int)g->seg0, (int)g->nseg };
	}
	cmp_dev_put_bytes(base + fg, hg, (int64_t)((size_t)p->ngrp * sizeof *hg));
	if (p->nseg)
		cmp_dev_put_bytes(base + fs, hs, (int64_t)((size_t)p->nseg * sizeof *hs));
	cmp_dev_segattn((const cmp_dev_group *)(base + fg), p->ngrp,
	                (const cmp_dev_seg *)(base + fs), p->dk, p->scale);
	if (!dout)
		cmp_dev_get_rows(out, ldo, o, ldo, rows, cols);
	/* waits for the kernel before its tables are freed */
	if (cmp_dev_check(&e) < 0) {
		if (dout)
			rc = lc_fail(err, "%s", e.msg);
		else
			cmp_dev_say("an attention", e.msg);     /* the CPU computes it */
	} else {
		rc = 0;
		atomic_fetch_add(&runs, 1);
	}
	cmp_dev_free(base);
out:
	free(dbuf), free(hg), free(hs);
	return rc;
}

/* The checks before a plan runs: 0 to run it, else what sa_run returns. */
static int runnable(const sa_plan *p, lc_err *err)
{
	if (p->oom)
		return lc_fail(err, "out of memory (an attention's plan)");
	if (p->stray)
		return lc_fail(err, "an attention's plan points outside its buffers");
	if (!sa_takes(p->dk) || p->nseg > INT32_MAX || p->nbuf > INT32_MAX)
		return 1;
	return 0;
}

int sa_run(sa_plan *p, float *out, int64_t rows, int64_t cols, int64_t ldo, lc_err *err)
{
	int rc = runnable(p, err);

	if (rc)
		return rc;
	if (rows < 1 || cols < 1 || p->ngrp == 0)
		return 0;
	if (!cmp_dev_worth(macs(p)))
		return 1;               /* small: the CPU computes it sooner */
	cmp_dev_lock();
	rc = launch(p, out, NULL, rows, cols, ldo, err);
	cmp_dev_unlock();
	return rc;
}

int sa_run_dev(sa_plan *p, float *out, lc_err *err)
{
	int rc = runnable(p, err);

	if (rc)
		return rc;
	if (p->ngrp == 0)
		return 0;
	return launch(p, NULL, out, 0, 0, 0, err);
}

/* The dense attention (sa_dense), its operands the CPU's or (dev) the
 * GPU's; the mask is the CPU's either way. */
static int dense(int heads, int dk, float scale, const float *q, int64_t ldq, int64_t T,
                 const float *k, const float *v, int64_t ldk, int64_t Tk, const float *mask,
                 float *out, int64_t ldo, int dev, lc_err *err)
{
	sa_plan *p = sa_new(dk, scale);
	int64_t w = (int64_t)heads * dk;
	int rc;

	if (!p)
		return lc_fail(err, "out of memory (an attention's plan)");
	add_buf(p, q, sa_span(T, ldq, w), dev);
	add_buf(p, k, sa_span(Tk, ldk, w), dev);
	add_buf(p, v, sa_span(Tk, ldk, w), dev);
	if (mask)
		sa_buf(p, mask, Tk);
	for (int h = 0; h < heads; h++) {
		int64_t off = (int64_t)h * dk;
		sa_seg(p, k + off, v + off, ldk, Tk, mask, NULL);
		sa_rows(p, q + off, ldq, T, off, ldo, NULL);
	}
	if (dev)
		rc = T < 1 ? 0 : sa_run_dev(p, out, err);
	else
		rc = sa_run(p, out, T, w, ldo, err);
	sa_free(p);
	return rc;
}

int sa_dense(int heads, int dk, float scale, const float *q, int64_t ldq, int64_t T,
             const float *k, const float *v, int64_t ldk, int64_t Tk, const float *mask,
             float *out, int64_t ldo, lc_err *err)
{
	return dense(heads, dk, scale, q, ldq, T, k, v, ldk, Tk, mask, out, ldo, 0, err);
}

int sa_dense_dev(int heads, int dk, float scale, const float *q, int64_t ldq, int64_t T,
                 const float *k, const float *v, int64_t ldk, int64_t Tk, const float *mask,
                 float *out, int64_t ldo, lc_err *err)
{
	return dense(heads, dk, scale, q, ldq, T, k, v, ldk, Tk, mask, out, ldo, 1, err);
}
