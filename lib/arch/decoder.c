#include "arch/decoder.h"

#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/machine.h"
#include "compute/compute.h"
#include "compute/dev.h"

struct lc_decoder {
	const lc_dec_ops *ops;
	const lc_config *cfg;
	void *impl;
	uint64_t xbudget;           /* cross-attention caches, bytes */
	int xgreedy;                /* for one-row documents too */
	int xdefault;               /* xbudget is the default's, not --cross-cache */
};

struct dec_state {
	const lc_dec_ops *ops;
	void *impl;
};

lc_decoder *decoder_new(lc_model *m, lc_err *err)
{
	const lc_config *c = model_config(m);
	lc_decoder *d;

	if (!c->arch->dec) {
		lc_fail(err, "%s: the %s architecture has no decoder", model_dir(m), c->arch->name);
		return NULL;
	}
	if (!(d = calloc(1, sizeof *d))) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	d->ops = c->arch->dec;
	d->cfg = c;
	/* a quarter: room for the states, the weights and the other program
	 * of a pipeline, or a second pipeline beside it */
	d->xbudget = machine_memory(NULL) / 4;
	d->xdefault = 1;
	if (!(d->impl = d->ops->open(m, err))) {
		free(d);
		return NULL;
	}
	return d;
}

void decoder_free(lc_decoder *d)
{
	if (!d)
		return;
	d->ops->close(d->impl);
	free(d);
}

const lc_config *decoder_config(const lc_decoder *d)
{
	return d->cfg;
}

int decoder_set_cross_cache(lc_decoder *d, uint64_t bytes, int greedy_too, lc_err *err)
{
	const char *bound;
	uint64_t mem = machine_memory(&bound);

	if (mem && bytes > mem)
		return lc_fail(err, "%.1f GiB is more than the memory this process may use "
		               "(%.1f GiB: %s)", (double)bytes / 1073741824.0,
		               (double)mem / 1073741824.0, bound);
	d->xbudget = bytes;
	d->xgreedy = greedy_too;
	d->xdefault = 0;
	return 0;
}

uint64_t decoder_cross_cache(const lc_decoder *d, char *from, size_t cap)
{
	const char *bound;
	uint64_t mem = machine_memory(&bound);

	if (d->xdefault)
		snprintf(from, cap, "a quarter of the memory this process may use (%.1f GiB: %s)",
		         (double)mem / 1073741824.0, bound);
	else
		snprintf(from, cap, "--cross-cache");
	return d->xbudget;
}

/* enc (float32) or enc16 (bf16) [L, d_model]: no rows, or a NaN, would
 * decode into arbitrary tokens, silently */
static int check_states(const lc_decoder *d, const float *enc, const uint16_t *enc16,
                        int64_t L, lc_err *err)
{
	uint64_t n = (uint64_t)L * (uint64_t)d->cfg->d_model;
	const char *what;
	int64_t bad;

	if (L == 0)
		return lc_fail(err, "the encoder states have no rows (nothing was encoded)");
	bad = enc ? lc_first_nonfinite(enc, n, &what) : lc_first_nonfinite_bf16(enc16, n, &what);
	if (bad >= 0)
		return lc_fail(err, "the encoder states' row %lld of %lld holds %s",
		               (long long)(bad / d->cfg->d_model), (long long)L, what);
	return 0;
}

int decoder_check_states(const lc_decoder *d, const float *enc, int64_t L, lc_err *err)
{
	return check_states(d, enc, NULL, L, err);
}

int decoder_reads_bf16(const lc_decoder *d)
{
	return d->ops->bf16_states && (cmp_bf16_active() || cmp_xk_widens());
}

int decoder_check_states16(const lc_decoder *d, const uint16_t *enc, int64_t L, lc_err *err)
{
	return check_states(d, NULL, enc, L, err);
}

/* The checks every state's inputs get, before any architecture sees them. */
static int check_input(const lc_decoder *d, const dec_input *in, int max_steps, lc_err *err)
{
	if (in->nrow < 1 || in->nrow > (1 << 20) || max_steps < 1 || in->L < 0 ||
	    !(in->enc || (in->enc16 && decoder_reads_bf16(d))))
		return lc_fail(err, "decoder: bad state size (rows %d, steps %d, L %lld)", in->nrow,
		               max_steps, (long long)in->L);
	return check_states(d, in->enc, in->enc16, in->L, err);
}

dec_state *decoder_batch_new(const lc_decoder *d, const dec_input *in, int n, int max_steps,
                             lc_err *err)
{
	dec_state *s;
	int64_t rows = 0;

	if (n < 1 || n > (1 << 20)) {
		lc_fail(err, "decoder: bad batch of %d documents", n);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (check_input(d, &in[i], max_steps, err) < 0) {
			if (n > 1)
				lc_prefix(err, "document %d of the batch", i);
			return NULL;
		}
		rows += in[i].nrow;
	}
	if (rows > (1 << 20)) {
		lc_fail(err, "decoder: a batch of %lld rows", (long long)rows);
		return NULL;
	}
	if (!(s = calloc(1, sizeof *s))) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	s->ops = d->ops;
	if (!(s->impl = d->ops->state_new(d->impl, in, n, max_steps, err))) {
		free(s);
		return NULL;
	}
	s->ops->groups(s->impl)->xbudget = d->xbudget;
	s->ops->groups(s->impl)->xgreedy = d->xgreedy;
	s->ops->groups(s->impl)->xdefault = d->xdefault;
	return s;
}

dec_state *decoder_state_new(const lc_decoder *d, const float *enc, int64_t L, int nrow,
                             int max_steps, lc_err *err)
{
	dec_input in = { enc, L, nrow, NULL };

	return decoder_batch_new(d, &in, 1, max_steps, err);
}

int decoder_batch_keep(dec_state *s, const int *keep, lc_err *err)
{
	return s->ops->keep(s->impl, keep, err);
}

int decoder_docs(const dec_state *s)
{
	return s->ops->groups(s->impl)->n;
}

int decoder_rows(const dec_state *s)
{
	return s->ops->groups(s->impl)->nrow;
}

int decoder_cross_cached(const dec_state *s)
{
	return s->ops->groups(s->impl)->xlayers;
}

/* ------------------------------------------------ the documents of a state */

/* The states up: E as it is, or E16's values (a bf16 copy or stream) in
 * float32, converted a block of rows at a time. */
static void states_up(dec_group *g, int d)
{
	enum { ROWS = 16384 };
	lc_err err;
	int64_t n = g->L * d;
	float *tmp = NULL;

	if ((!g->E && !g->E16) || g->L < 1)
		return;
	if (g->E16 && !(tmp = malloc((size_t)(g->L < ROWS ? g->L : ROWS) * (size_t)d * sizeof *tmp)))
		return;         /* no memory to convert: the CPU's, as without a GPU */
	cmp_dev_lock();
	if ((g->Edev = cmp_dev_alloc(n))) {
		for (int64_t r = 0; tmp && r < g->L; r += ROWS) {
			int64_t m = (g->L - r < ROWS ? g->L - r : ROWS) * d;
			lc_bf16_to_f32_n(g->E16 + r * d, (uint64_t)m, tmp);
			cmp_dev_put(g->Edev + r * d, tmp, m);
		}
		if (!tmp)
			cmp_dev_put(g->Edev, g->E, n);
		if (cmp_dev_check(&err) < 0) {
			cmp_dev_say("the decoder's states", err.msg);
			cmp_dev_free(g->Edev);
			g->Edev = NULL;
		}
	} else {
		cmp_dev_say("the decoder", "no GPU memory for the encoder states; the "
		            "cross-attention on the CPU");
	}
	cmp_dev_unlock();
	free(tmp);
}

int dec_groups_init(dec_groups *gs, const dec_input *in, int n, lc_err *err)
{
	memset(gs, 0, sizeof *gs);
	if (!(gs->g = calloc((size_t)n, sizeof *gs->g)))
		return lc_fail(err, "decoder: out of memory");
	gs->n = n;
	for (int i = 0; i < n; i++) {
		gs->g[i].E = in[i].enc;
		gs->g[i].L = in[i].L;
		gs->g[i].nrow = in[i].nrow;
		gs->g[i].row0 = gs->nrow;
		gs->nrow += in[i].nrow;
	}
	gs->rcap = gs->nrow;
	return 0;
}

void dec_groups_to_device(dec_groups *gs, int d)
{
	for (int i = 0; i < gs->n && cmp_dev_on(); i++)
		states_up(&gs->g[i], d);
}

int dec_groups_keep(dec_groups *gs, const int *keep, int32_t *src)
{
	int n = 0, rows = 0;

	for (int i = 0; i < gs->n; i++) {
		dec_group g = gs->g[i];
		if (!keep[i]) {
			free(g.own);
			free(g.own16);
			cmp_dev_free(g.Edev);
			xcache_free(g.xc);
			continue;
		}
		for (int r = 0; r < g.nrow; r++)
			src[rows + r] = g.row0 + r;
		g.row0 = rows;
		rows += g.nrow;
		gs->g[n++] = g;
	}
	gs->n = n;
	gs->nrow = rows;
	return rows;
}

void dec_groups_free(dec_groups *gs)
{
	for (int i = 0; i < gs->n; i++) {
		free(gs->g[i].own);
		free(gs->g[i].own16);
		xcache_free(gs->g[i].xc);
		cmp_dev_free(gs->g[i].Edev);
	}
	free(gs->g);
	memset(gs, 0, sizeof *gs);
}

int dec_groups_xcache(dec_groups *gs, int nl, int nh, int dk, int d, const xcache_w *w,
                      int nth, lc_err *err)
{
	uint64_t per = 0, n;
	int many = gs->xgreedy, bf16 = cmp_bf16_active();

	if (!gs->xbudget || gs->xlayers)
		return 0;
	for (int i = 0; i < gs->n; i++)
		if (gs->g[i].Edev)      /* the GPU reads the states faster than a cache helps */
			return 0;
	for (int i = 0; i < gs->n; i++) {
		per += xcache_layer_bytes(gs->g[i].L, nh, dk, bf16);
		many |= gs->g[i].nrow > 1;
	}
	n = per && many ? gs->xbudget / per : 0;
	n = n < (uint64_t)nl ? n : (uint64_t)nl;
	for (int i = 0; i < gs->n && n; i++) {
		dec_group *g = &gs->g[i];
		if (!(g->xc = xcache_new((int)n, g->L, nh, dk, bf16, err)) ||
		    xcache_fill(g->xc, g->E, g->E ? NULL : g->E16, d, w, nth, err) < 0) {
			for (int j = 0; j <= i; j++) {
				xcache_free(gs->g[j].xc);
				gs->g[j].xc = NULL;
			}
			if (!gs->xdefault)
				return lc_prefix(err, "decoder (--cross-cache 0 does without)");
			n /= 2;         /* the default's: fewer layers, from the first */
			i = -1;
		}
	}
	gs->xlayers = (int)n;
	return 0;
}

void dec_groups_attend(const dec_groups *gs, int li, xattn_work *xw, const float *q, float *o,
                       int inner, int64_t T)
{
	for (int i = 0; i < gs->n; i++) {
		const dec_group *g = &gs->g[i];
		int64_t r0 = (int64_t)g->row0 * T;

		xcache_attend(g->xc, li, xw, q + r0 * inner, (int64_t)g->nrow * T, inner,
		              o + r0 * inner, inner);
	}
}

void decoder_state_free(dec_state *s)
{
	if (!s)
		return;
	s->ops->state_free(s->impl);
	free(s);
}

int decoder_state_threads(dec_state *s, int nthreads, lc_err *err)
{
	if (nthreads < 1 || nthreads > 1024)
		return lc_fail(err, "decoder: bad thread count %d", nthreads);
	return s->ops->state_threads(s->impl, nthreads, err);
}

int decoder_step(dec_state *s, const int32_t *tokens, float *logits, lc_err *err)
{
	return s->ops->step(s->impl, tokens, logits, err);
}

int decoder_reorder(dec_state *s, const int32_t *src, lc_err *err)
{
	const dec_groups *gs = s->ops->groups(s->impl);

	for (int i = 0; i < gs->n; i++) {
		const dec_group *g = &gs->g[i];
		for (int r = g->row0; r < g->row0 + g->nrow; r++)
			if (src[r] < g->row0 || src[r] >= g->row0 + g->nrow)
				return lc_fail(err, "decoder: row %d cannot take row %ld of another "
				               "document", r, (long)src[r]);
	}
	return s->ops->reorder(s->impl, src, err);
}

int decoder_pos(const dec_state *s)
{
	return s->ops->pos(s->impl);
}
