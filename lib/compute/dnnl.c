/*
 * dnnl.c: oneDNN's matmul behind cmp_gemm (compute/gemm.h).
 *
 * A primitive is made once per product shape (transposes, sizes, row
 * strides, alpha, beta, precision) and kept in one process-wide table:
 * alpha is the primitive's output scale and beta a sum post-op, both
 * fixed at creation, so they are part of the shape. Primitives are
 * immutable; every call brings its own memory objects, stream and
 * scratchpad (user scratchpad mode), so several threads run one
 * primitive at once. par_for starts fresh threads for each loop, so the
 * per-thread state (the stream, the scratchpad, OpenMP's thread count) is
 * made on a thread's first product and released when it exits.
 *
 * Threads: lc parallelises around the libraries; oneDNN's OpenMP would
 * otherwise start a team as wide as the machine inside every call. The
 * OpenMP thread count is a per-thread setting (libgomp copies the global
 * one into each new thread), so every thread that calls here sets it to 1
 * before its first product.
 */
#include "compute/gemm.h"

#ifdef LC_HAVE_DNNL

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "base/hash.h"
#include "base/machine.h"

/* libgomp's; oneDNN is built on it (Debian's libdnnl2 uses OpenMP). */
void omp_set_num_threads(int n);

struct key {
	int64_t M, N, K, lda, ldb, ldc;
	uint32_t alpha, beta;       /* bit patterns: -0.0f and 0.0f differ, fine */
	int32_t ta, tb, bf16;
	int32_t packw;              /* B a weight: let oneDNN choose its layout (packed below) */
};

struct entry {
	struct key k;
	dnnl_primitive_t p;
	dnnl_memory_desc_t a, b, c, s;   /* src, weights (as stored), dst, scratchpad */
	dnnl_memory_desc_t bp;           /* the weights' layout the primitive reads, when packw */
	size_t ssize;
	int packed;                      /* bp differs from b: B is read from its packed copy */
};

/* Weights packed once into the layout a primitive reads them in.
 *
 * Given a weight in its stored layout, oneDNN's matmul repacks it into
 * blocks for its kernels inside every call: the encoder multiplies
 * 256-row blocks by the same 768 x 768 and 768 x 2048 matrices thousands
 * of times, and each call repacked a weight 3 to 8 times the size of its
 * own rows. Made with the weights' layout left to oneDNN (format_tag_any),
 * the primitive reads a copy packed once, kept by the weight's fp32
 * address and both layouts until its region is dropped (cmp_dnnl_drop). */
struct packed {
	const float *w, *base;          /* the weight's fp32 address, its constant region */
	dnnl_memory_desc_t src, dst;
	void *data;                     /* NULL: oneDNN could not pack it (read as stored) */
};

static struct {
	pthread_mutex_t mu;
	struct packed *p;
	int n, cap;
	atomic_int failed;              /* no memory once: weights as stored from then on */
} pk = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0 };

/* Beyond this many shapes, a product makes its primitive, runs it and
 * destroys it (oneDNN's own primitive cache keeps that cheap). */
#define MAXENT 1024
#define NSLOT (2 * MAXENT)

static struct {
	pthread_once_t once;
	pthread_mutex_t mu;
	pthread_key_t tls;
	dnnl_engine_t eng;
	struct entry *slot[NSLOT];
	int n;
	int bf16;                   /* -1 not known, else whether a bf16 matmul is creatable */
} g = { PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, 0, NULL, { 0 }, 0, -1 };

struct thr {
	dnnl_stream_t strm;
	void *scratch;
	size_t scap;
	uint16_t *a16, *b16;        /* bf16 operands converted per call */
	size_t acap, bcap;
};

static void thr_free(void *p)
{
	struct thr *t = p;

	if (t->strm)
		dnnl_stream_destroy(t->strm);
	free(t->scratch);
	free(t->a16);
	free(t->b16);
	free(t);
}

static void init_once(void)
{
	pthread_key_create(&g.tls, thr_free);
	if (dnnl_engine_create(&g.eng, dnnl_cpu, 0) != dnnl_success)
		g.eng = NULL;     /* the engine and the table live as long as the process */
}

/* Runs primitive p to its end with the asynchronous signals blocked:
 * oneDNN 2.x's JIT f32 GEMM kernels point rsp into a heap workspace
 * (oneDNN issue 4845, fixed in 3.x), so a signal handled meanwhile
 * wrote its frame over the heap: lc-train, stopped by SIGINT, died in
 * free() now and then ("corrupted size vs. prev_size"), and a no-op
 * handler signalled every 0.5 ms broke every run. A signal that comes
 * meanwhile is delivered when the product is done (at most milliseconds
 * later); the synchronous ones are left open. */
static int execute(dnnl_primitive_t p, dnnl_stream_t strm, int nargs,
                   const dnnl_exec_arg_t *args)
{
	sigset_t all, old;
	int ok;

	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ok = dnnl_primitive_execute(p, strm, nargs, args) == dnnl_success &&
	     dnnl_stream_wait(strm) == dnnl_success;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok ? 0 : -1;
}

/* The calling thread's stream and scratchpad; NULL when oneDNN is unusable. */
static struct thr *thr_get(void)
{
	struct thr *t;

	pthread_once(&g.once, init_once);
	if (!g.eng)
		return NULL;
	if ((t = pthread_getspecific(g.tls)))
		return t;
	omp_set_num_threads(1);
	if (!(t = calloc(1, sizeof *t)))
		return NULL;
	if (dnnl_stream_create(&t->strm, g.eng, dnnl_stream_default_flags) != dnnl_success ||
	    pthread_setspecific(g.tls, t) != 0) {
		thr_free(t);
		return NULL;
	}
	return t;
}

/* oneDNN 2.6 crashes (SIGSEGV inside dnnl_primitive_create) where the
 * mapping for a primitive's generated code fails, as it does within a few
 * megabytes of an address-space limit (ulimit -v), and so does
 * dnnl_primitive_desc_create: lc-encode --compute bf16 under ulimit -v
 * 1800000 died in each. A primitive is made only while ROOM bytes can
 * still be mapped; without them the product takes the fallback
 * (OpenBLAS, or fp32 for a bf16 one), as when oneDNN declines. */
#define ROOM ((uint64_t)64 << 20)

/* The primitive for k, made with its memory descriptors; NULL when oneDNN
 * cannot (e.g. bf16 on a processor without it), or without ROOM. */
static struct entry *make(const struct key *k)
{
	struct entry *e = calloc(1, sizeof *e);
	dnnl_data_type_t in = k->bf16 ? dnnl_bf16 : dnnl_f32;
	dnnl_dims_t da = { k->M, k->K }, db = { k->K, k->N }, dc = { k->M, k->N };
	/* op(A)[m][k] is A[m lda + k], or A[k lda + m] when transposed; op(B) likewise */
	dnnl_dims_t sa = { k->ta ? 1 : k->lda, k->ta ? k->lda : 1 };
	dnnl_dims_t sb = { k->tb ? 1 : k->ldb, k->tb ? k->ldb : 1 };
	dnnl_dims_t sc = { k->ldc, 1 };
	dnnl_matmul_desc_t md;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	float alpha, beta;
	int ok = 0;

	memcpy(&alpha, &k->alpha, sizeof alpha);
	memcpy(&beta, &k->beta, sizeof beta);
	if (!e || !machine_room(ROOM)) {
		free(e);
		return NULL;
	}
	e->k = *k;
	if (dnnl_memory_desc_init_by_strides(&e->a, 2, da, in, sa) != dnnl_success ||
	    dnnl_memory_desc_init_by_strides(&e->b, 2, db, in, sb) != dnnl_success ||
	    (k->packw ? dnnl_memory_desc_init_by_tag(&e->bp, 2, db, in, dnnl_format_tag_any)
	              : dnnl_memory_desc_init_by_strides(&e->bp, 2, db, in, sb)) != dnnl_success ||
	    dnnl_memory_desc_init_by_strides(&e->c, 2, dc, dnnl_f32, sc) != dnnl_success ||
	    dnnl_matmul_desc_init(&md, &e->a, &e->bp, NULL, &e->c) != dnnl_success ||
	    dnnl_primitive_attr_create(&attr) != dnnl_success ||
	    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success)
		goto out;
	if (alpha != 1.0f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) != dnnl_success)
		goto out;
	if (beta != 0.0f) {
		if (dnnl_post_ops_create(&po) != dnnl_success ||
		    dnnl_post_ops_append_sum(po, beta) != dnnl_success ||
		    dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
			goto out;
	}
	if (dnnl_primitive_desc_create(&pd, &md, attr, g.eng, NULL) != dnnl_success)
		goto out;
	e->s = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	e->ssize = dnnl_memory_desc_get_size(&e->s);
	e->bp = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	e->packed = !dnnl_memory_desc_equal(&e->bp, &e->b);
	ok = dnnl_primitive_create(&e->p, pd) == dnnl_success;
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (!ok) {
		free(e);
		return NULL;
	}
	return e;
}

/* The cached primitive for k (made on first use), or a fresh one the
 * caller destroys (*own = 1) when the table is full. NULL: unavailable.
 * Failures are cached too, as entries without a primitive. */
static struct entry *lookup(const struct key *k, int *own)
{
	uint64_t h = lc_hash_bytes(k, sizeof *k);
	size_t i = (size_t)(h % NSLOT);
	struct entry *e;

	*own = 0;
	pthread_mutex_lock(&g.mu);
	for (; g.slot[i]; i = (i + 1) % NSLOT)
		if (!memcmp(&g.slot[i]->k, k, sizeof *k)) {
			e = g.slot[i];
			pthread_mutex_unlock(&g.mu);
			return e->p ? e : NULL;
		}
	/* made under the lock: two threads asking for one new shape make it once */
	e = make(k);
	if (g.n < MAXENT) {
		if (!e && (e = calloc(1, sizeof *e)))
			e->k = *k;      /* remember that oneDNN cannot */
		if (e) {
			g.slot[i] = e;
			g.n++;
		}
	} else {
		*own = e != NULL;
	}
	pthread_mutex_unlock(&g.mu);
	return e && e->p ? e : NULL;
}

static void *grow(struct thr *t, size_t n)
{
	if (n > t->scap) {
		void *p = malloc(n);
		if (!p)
			return NULL;
		free(t->scratch);
		t->scratch = p;
		t->scap = n;
	}
	return t->scratch;
}

/* An entry lookup made for this call alone (own: past MAXENT shapes). */
static void release(struct entry *e, int own)
{
	if (own) {
		dnnl_primitive_destroy(e->p);
		free(e);
	}
}

/* B (data b: the fp32 weight or its bf16 copy) packed as e reads it, made
 * on first use by the calling thread (stream strm); NULL when there is no
 * memory for it (then for every weight from then on) or oneDNN cannot
 * pack this one (remembered): the caller multiplies B as stored. */
static const void *packed_get(const struct entry *e, const float *B, const void *b,
                              dnnl_stream_t strm)
{
	const float *base;
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_primitive_t rp = NULL;
	dnnl_memory_t ms = NULL, md = NULL;
	struct packed *q;
	void *data = NULL;
	int64_t len;
	size_t size = dnnl_memory_desc_get_size(&e->bp);
	const void *r = NULL;

	pthread_mutex_lock(&pk.mu);
	for (int i = 0; i < pk.n; i++) {
		q = &pk.p[i];
		if (q->w == B && dnnl_memory_desc_equal(&q->src, &e->b) &&
		    dnnl_memory_desc_equal(&q->dst, &e->bp)) {
			r = q->data;
			goto out;
		}
	}
	/* packed under the lock: threads asking at once wait for one copy */
	if (atomic_load(&pk.failed) || !(base = cmp_constant_base(B, 1, &len)))
		goto out;
	if (pk.n == pk.cap) {
		int cap = pk.cap ? 2 * pk.cap : 64;
		struct packed *p = realloc(pk.p, (size_t)cap * sizeof *p);
		if (!p)
			goto fail;
		pk.p = p, pk.cap = cap;
	}
	if (posix_memalign(&data, 64, size ? size : 64) != 0) {
		data = NULL;
		goto fail;
	}
	if (dnnl_reorder_primitive_desc_create(&rpd, &e->b, g.eng, &e->bp, g.eng, NULL) !=
	            dnnl_success ||
	    dnnl_primitive_create(&rp, rpd) != dnnl_success ||
	    dnnl_memory_create(&ms, &e->b, g.eng, (void *)b) != dnnl_success ||
	    dnnl_memory_create(&md, &e->bp, g.eng, data) != dnnl_success)
		goto cannot;
	{
		dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, ms }, { DNNL_ARG_TO, md } };
		if (execute(rp, strm, 2, args) < 0)
			goto cannot;
	}
	pk.p[pk.n++] = (struct packed){ B, base, e->b, e->bp, data };
	r = data;
	goto out;
cannot:
	free(data);
	pk.p[pk.n++] = (struct packed){ B, base, e->b, e->bp, NULL };
	goto out;
fail:
	atomic_store(&pk.failed, 1);
	free(data);
out:
	if (md)
		dnnl_memory_destroy(md);
	if (ms)
		dnnl_memory_destroy(ms);
	if (rp)
		dnnl_primitive_destroy(rp);
	if (rpd)
		dnnl_primitive_desc_destroy(rpd);
	pthread_mutex_unlock(&pk.mu);
	return r;
}

void cmp_dnnl_drop(const float *p)
{
	pthread_mutex_lock(&pk.mu);
	for (int i = 0; i < pk.n;)
		if (pk.p[i].base == p) {
			free(pk.p[i].data);
			pk.p[i] = pk.p[--pk.n];
		} else {
			i++;
		}
	if (pk.n == 0) {
		free(pk.p);
		pk.p = NULL, pk.cap = 0;
	}
	pthread_mutex_unlock(&pk.mu);
}

/* One operand for a bf16 product: the constant copy with the stored row
 * stride, else packed (row stride cols) into the thread's buffer *buf.
 * NULL: out of memory. */
static const uint16_t *operand(const float *x, int64_t rows, int64_t cols, int64_t ld,
                               uint16_t **buf, size_t *cap, int64_t *ldo)
{
	const uint16_t *c = cmp_bf16_constant(x, (rows - 1) * ld + cols);
	size_t n = (size_t)(rows * cols);

	if (c) {
		*ldo = ld;
		return c;
	}
	if (n > *cap) {
		uint16_t *p = malloc(n * sizeof *p);
		if (!p)
			return NULL;
		free(*buf);
		*buf = p, *cap = n;
	}
	cmp_bf16_pack(x, rows, cols, ld, *buf, cols);
	*ldo = cols;
	return *buf;
}

int cmp_dnnl_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc, int bf16)
{
	struct thr *t = thr_get();
	struct key k;
	struct entry *e;
	dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
	const void *a = A, *b = B, *bp = NULL;
	int64_t br = tb ? N : K, bc = tb ? K : N;
	int own, rc = -1;

	if (!t)
		return -1;
	memset(&k, 0, sizeof k);
	k.M = M, k.N = N, k.K = K, k.ldc = ldc, k.lda = lda, k.ldb = ldb;
	if (bf16) {
		int64_t ar = ta ? K : M, ac = ta ? M : K;
		if (!(a = operand(A, ar, ac, lda, &t->a16, &t->acap, &k.lda)) ||
		    !(b = operand(B, br, bc, ldb, &t->b16, &t->bcap, &k.ldb)))
			return -1;
	}
	memcpy(&k.alpha, &alpha, sizeof alpha);
	memcpy(&k.beta, &beta, sizeof beta);
	k.ta = ta == CMP_T, k.tb = tb == CMP_T, k.bf16 = !!bf16;
	/* a weight (bf16: operand found its constant copy, so b is not the
	 * thread's buffer) in oneDNN's own layout, packed once */
	k.packw = !atomic_load_explicit(&pk.failed, memory_order_relaxed) &&
	          (bf16 ? b != t->b16 : cmp_is_constant(B, (br - 1) * ldb + bc));
	if ((e = k.packw ? lookup(&k, &own) : NULL) && e->packed &&
	    !(bp = packed_get(e, B, b, t->strm))) {
		release(e, own);
		e = NULL;
	}
	if (!e) {
		k.packw = 0;
		bp = NULL;
		if (!(e = lookup(&k, &own)))
			return -1;
	}
	if (dnnl_memory_create(&ma, &e->a, g.eng, (void *)a) != dnnl_success ||
	    dnnl_memory_create(&mb, &e->bp, g.eng, (void *)(bp ? bp : b)) != dnnl_success ||
	    dnnl_memory_create(&mc, &e->c, g.eng, C) != dnnl_success)
		goto out;
	if (e->ssize) {
		void *s = grow(t, e->ssize);
		if (!s || dnnl_memory_create(&ms, &e->s, g.eng, s) != dnnl_success)
			goto out;
	}
	{
		dnnl_exec_arg_t args[4] = { { DNNL_ARG_SRC, ma }, { DNNL_ARG_WEIGHTS, mb },
			                    { DNNL_ARG_DST, mc }, { DNNL_ARG_SCRATCHPAD, ms } };
		if (execute(e->p, t->strm, ms ? 4 : 3, args) == 0)
			rc = 0;
	}
out:
	if (ms)
		dnnl_memory_destroy(ms);
	if (mc)
		dnnl_memory_destroy(mc);
	if (mb)
		dnnl_memory_destroy(mb);
	if (ma)
		dnnl_memory_destroy(ma);
	release(e, own);
	return rc;
}

int cmp_dnnl_present(char *buf, size_t cap)
{
	const dnnl_version_t *v = dnnl_version();

	snprintf(buf, cap, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
	return 1;
}

int cmp_dnnl_bf16_ok(void)
{
	if (!thr_get())         /* also this thread's OpenMP count, before oneDNN runs */
		return 0;
	pthread_mutex_lock(&g.mu);
	if (g.bf16 < 0) {
		/* a representative shape: the encoder's projections */
		struct key k = { 64, 768, 768, 768, 768, 768, 0x3f800000u, 0, 0, 1, 1, 0 };
		struct entry *e = make(&k);
		g.bf16 = e != NULL;
		if (e) {
			dnnl_primitive_destroy(e->p);
			free(e);
		}
	}
	pthread_mutex_unlock(&g.mu);
	return g.bf16;
}

#else /* no oneDNN in this build: cpu.c uses OpenBLAS for every product */

int cmp_dnnl_gemm(enum cmp_trans ta, enum cmp_trans tb, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc, int bf16)
{
	(void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
	(void)B, (void)ldb, (void)beta, (void)C, (void)ldc, (void)bf16;
	return -1;
}

int cmp_dnnl_present(char *buf, size_t cap)
{
	(void)buf, (void)cap;
	return 0;
}

int cmp_dnnl_bf16_ok(void)
{
	return 0;
}

void cmp_dnnl_drop(const float *p)
{
	(void)p;
}

#endif
