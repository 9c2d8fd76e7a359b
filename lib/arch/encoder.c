#include "arch/encoder.h"

#include <stdlib.h>

#include "base/dtype.h"
#include "base/parallel.h"

struct lc_encoder {
	const lc_enc_ops *ops;
	const lc_config *cfg;
	void *impl;
};

lc_encoder *encoder_new(lc_model *m, int threads, lc_err *err)
{
	const lc_arch *a = model_config(m)->arch;
	lc_encoder *e = calloc(1, sizeof *e);

	if (!e) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	e->ops = a->enc;
	e->cfg = model_config(m);
	if (!(e->impl = e->ops->open(m, threads < 1 ? 1 : threads, err))) {
		free(e);
		return NULL;
	}
	return e;
}

void encoder_free(lc_encoder *e)
{
	if (!e)
		return;
	e->ops->close(e->impl);
	free(e);
}

int64_t encoder_out_len(const lc_encoder *e, int64_t L)
{
	return e->ops->out_len(e->impl, L);
}

int64_t encoder_max_len(const lc_encoder *e)
{
	return e->ops->max_len ? e->ops->max_len(e->impl) : 0;
}

int64_t encoder_truncate(const lc_encoder *e, int32_t *ids, int64_t L)
{
	int64_t max = encoder_max_len(e);

	if (!max || L <= max)
		return L;
	if (ids[L - 1] == e->cfg->eos_id)
		ids[max - 1] = e->cfg->eos_id;
	return max;
}

int encoder_run(lc_encoder *e, const int32_t *ids, int64_t L, float *out,
                encoder_progress_fn progress, void *ctx, lc_err *err)
{
	const char *what;
	int64_t bad, n = e->ops->out_len(e->impl, L);

	if (e->ops->run(e->impl, ids, L, out, progress, ctx, err) < 0)
		return -1;
	/* never hand on states a model overflowed into */
	if ((bad = lc_first_nonfinite(out, (uint64_t)n * (uint64_t)e->cfg->d_model, &what)) >= 0)
		return lc_fail(err, "the encoder's states are %s at row %lld of %lld (the model "
		               "overflows on this input)", what, (long long)(bad / e->cfg->d_model),
		               (long long)n);
	return 0;
}

int64_t encoder_keep(const lc_encoder *e, const int32_t *ids, int64_t L, float *out)
{
	return e->ops->keep ? e->ops->keep(e->impl, ids, L, out) : e->ops->out_len(e->impl, L);
}

int encoder_gemm_only(lc_encoder *e, int64_t L, double *seconds, lc_err *err)
{
	if (!e->ops->gemm_only)
		return lc_fail(err, "this encoder has no products-only mode");
	return e->ops->gemm_only(e->impl, L, seconds, err);
}

struct many {
	lc_encoder *const *encs;
	encoder_job *jobs;
};

static void run_one(void *ctx, int64_t i, int tid)
{
	struct many *m = ctx;
	encoder_job *j = &m->jobs[i];

	j->rc = encoder_run(m->encs[tid], j->ids, j->L, j->out, NULL, NULL, &j->err);
}

void encoder_run_many(lc_encoder *const *encs, int nenc, encoder_job *jobs, int n)
{
	struct many m = { encs, jobs };

	par_for(nenc, n, run_one, &m);
}
