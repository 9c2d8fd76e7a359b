#include "arch/decoder.h"

#include <stdlib.h>

#include "base/dtype.h"

struct lc_decoder {
	const lc_dec_ops *ops;
	const lc_config *cfg;
	void *impl;
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

dec_state *decoder_state_new(const lc_decoder *d, const float *enc, int64_t L, int nrow,
                             int max_steps, lc_err *err)
{
	dec_state *s;
	const char *what;
	int64_t bad;

	if (nrow < 1 || max_steps < 1 || L < 0 || !enc) {
		lc_fail(err, "decoder: bad state size (rows %d, steps %d, L %lld)", nrow, max_steps,
		        (long long)L);
		return NULL;
	}
	/* no rows, or a NaN, would decode into arbitrary tokens, silently */
	if (L == 0) {
		lc_fail(err, "the encoder states have no rows (nothing was encoded)");
		return NULL;
	}
	if ((bad = lc_first_nonfinite(enc, (uint64_t)L * (uint64_t)d->cfg->d_model,
	                                     &what)) >= 0) {
		lc_fail(err, "the encoder states' row %lld of %lld holds %s",
		        (long long)(bad / d->cfg->d_model), (long long)L, what);
		return NULL;
	}
	if (!(s = calloc(1, sizeof *s))) {
		lc_fail(err, "decoder: out of memory");
		return NULL;
	}
	s->ops = d->ops;
	if (!(s->impl = d->ops->state_new(d->impl, enc, L, nrow, max_steps, err))) {
		free(s);
		return NULL;
	}
	return s;
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
	return s->ops->reorder(s->impl, src, err);
}

int decoder_pos(const dec_state *s)
{
	return s->ops->pos(s->impl);
}
