/*
 * batch.c: several searches over one decoder state (see batch.h).
 *
 * Every search thread's step() hands its tokens over and waits; the last
 * of the running searches to arrive runs the step for all (under the
 * lock, which the others wait on): drops the documents that have ended,
 * applies the pending beam reorders, steps the state, hands each search
 * its rows' logits and wakes them. Since each search waits in every
 * step() for all the others, the documents stay at the same position.
 */
#include "gen/batch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { M_RUNNING, M_WAITING, M_DONE };

struct batch;

typedef struct member {
	struct batch *b;
	gen_job *job;
	int rows, state, in_state;
	const int32_t *tok;         /* the step's tokens [rows] */
	float *logits;              /* where its logits go [rows, V] */
	int32_t *src;               /* [rows] the pending reorder, if has_src */
	int has_src, rc;
} member;

typedef struct batch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	dec_state *s;
	member *m;
	int n, running, waiting, V, step, failed;
	unsigned long round;
	int32_t *tok, *src;         /* [rows at start] */
	int *keep;                  /* [n] */
	float *logits;              /* [rows at start, V] */
	lc_err err;                 /* the failure of a step, for every search */
	void (*progress)(void *ctx, int step, int running);
	void *pctx;
} batch;

/* One step for every running document; the lock is held. */
static void run_round(batch *b)
{
	int ng = 0, dropped = 0, reorder = 0, rows = 0;
	size_t V = (size_t)b->V;

	for (int i = 0; i < b->n; i++) {
		member *m = &b->m[i];
		if (!m->in_state)
			continue;
		b->keep[ng++] = m->state != M_DONE;
		if (m->state == M_DONE) {
			m->in_state = 0;
			dropped = 1;
		}
	}
	if (dropped && decoder_batch_keep(b->s, b->keep, &b->err) < 0)
		b->failed = 1;
	for (int i = 0; i < b->n && !b->failed; i++) {
		member *m = &b->m[i];
		if (!m->in_state)
			continue;
		for (int r = 0; r < m->rows; r++)
			b->src[rows + r] = rows + (m->has_src ? m->src[r] : r);
		reorder |= m->has_src;
		m->has_src = 0;
		memcpy(b->tok + rows, m->tok, (size_t)m->rows * sizeof *b->tok);
		rows += m->rows;
	}
	if (!b->failed && reorder && decoder_reorder(b->s, b->src, &b->err) < 0)
		b->failed = 1;
	if (!b->failed && decoder_step(b->s, b->tok, b->logits, &b->err) < 0)
		b->failed = 1;
	rows = 0;
	for (int i = 0; i < b->n; i++) {
		member *m = &b->m[i];
		if (!m->in_state)
			continue;
		if (b->failed)
			m->rc = -1;
		else
			memcpy(m->logits, b->logits + (size_t)rows * V, (size_t)m->rows * V * sizeof(float));
		m->state = M_RUNNING;
		rows += m->rows;
	}
	b->waiting = 0;
	b->step++;
	b->round++;
	if (b->progress && !b->failed)
		b->progress(b->pctx, b->step, b->running);
	pthread_cond_broadcast(&b->cv);
}

static int cb_step(void *ctx, const int32_t *tokens, float *logits, lc_err *err)
{
	member *m = ctx;
	batch *b = m->b;
	unsigned long round;
	int rc;

	pthread_mutex_lock(&b->mu);
	if (b->failed) {
		*err = b->err;
		pthread_mutex_unlock(&b->mu);
		return -1;
	}
	m->tok = tokens;
	m->logits = logits;
	m->state = M_WAITING;
	m->rc = 0;
	round = b->round;
	if (++b->waiting == b->running)
		run_round(b);
	else
		while (b->round == round)
			pthread_cond_wait(&b->cv, &b->mu);
	rc = m->rc;
	if (rc < 0)
		*err = b->err;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

/* Beam reordering waits for the next step, which applies every
 * document's at once. */
static int cb_reorder(void *ctx, const int32_t *src, lc_err *err)
{
	member *m = ctx;

	(void)err;
	memcpy(m->src, src, (size_t)m->rows * sizeof *src);
	m->has_src = 1;
	return 0;
}

/* The search has ended: the others no longer wait for it. */
static void leave(member *m)
{
	batch *b = m->b;

	pthread_mutex_lock(&b->mu);
	m->state = M_DONE;
	b->running--;
	if (b->running > 0 && b->waiting == b->running)
		run_round(b);
	pthread_mutex_unlock(&b->mu);
}

static void *search_thread(void *p)
{
	member *m = p;
	search_model sm = { m, cb_step, cb_reorder };

	m->job->rc = search_run(&m->job->o, &sm, &m->job->res, &m->job->err);
	leave(m);
	return NULL;
}

int gen_batch_run(const lc_decoder *dec, gen_job *jobs, int n, int nthreads,
                  void (*progress)(void *ctx, int step, int running), void *ctx, lc_err *err)
{
	batch b;
	dec_input *in = NULL;
	pthread_t *th = NULL;
	int rows = 0, max_new = 0, rc = -1;
	int32_t *srcs = NULL;

	memset(&b, 0, sizeof b);
	if (n < 1)
		return lc_fail(err, "an empty batch");
	for (int i = 0; i < n; i++) {
		if (search_opts_check(&jobs[i].o, err) < 0)
			return lc_prefix(err, "document %d of the batch", i);
		if (jobs[i].o.vocab != jobs[0].o.vocab)
			return lc_fail(err, "the documents of a batch have different vocabularies");
		rows += search_rows(&jobs[i].o);
		if (jobs[i].o.max_new > max_new)
			max_new = jobs[i].o.max_new;
	}
	b.n = n;
	b.V = jobs[0].o.vocab;
	b.progress = progress;
	b.pctx = ctx;
	in = calloc((size_t)n, sizeof *in);
	th = calloc((size_t)n, sizeof *th);
	b.m = calloc((size_t)n, sizeof *b.m);
	b.keep = calloc((size_t)n, sizeof *b.keep);
	b.tok = calloc((size_t)rows, sizeof *b.tok);
	b.src = calloc((size_t)rows, sizeof *b.src);
	srcs = calloc((size_t)rows, sizeof *srcs);
	b.logits = calloc((size_t)rows * (size_t)b.V, sizeof *b.logits);
	if (!in || !th || !b.m || !b.keep || !b.tok || !b.src || !srcs || !b.logits) {
		lc_fail(err, "out of memory for a batch of %d documents (%d rows)", n, rows);
		goto out;
	}
	for (int i = 0, r = 0; i < n; i++) {
		int nr = search_rows(&jobs[i].o);
		in[i] = (dec_input){ jobs[i].enc, jobs[i].L, nr, jobs[i].enc16 };
		b.m[i] = (member){ &b, &jobs[i], nr, M_RUNNING, 1, NULL, NULL, srcs + r, 0, 0 };
		r += nr;
	}
	if (!(b.s = decoder_batch_new(dec, in, n, max_new, err)) ||
	    decoder_state_threads(b.s, nthreads, err) < 0)
		goto out;
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	b.running = n;
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, search_thread, &b.m[i]) != 0) {
			/* not run: the caller decodes it alone */
			lc_fail(&jobs[i].err, "cannot start a thread for its search");
			jobs[i].rc = 1;
			th[i] = pthread_self();
			leave(&b.m[i]);
		}
	for (int i = 0; i < n; i++)
		if (!pthread_equal(th[i], pthread_self()))
			pthread_join(th[i], NULL);
	pthread_cond_destroy(&b.cv);
	pthread_mutex_destroy(&b.mu);
	rc = 0;
out:
	decoder_state_free(b.s);
	free(in);
	free(th);
	free(b.m);
	free(b.keep);
	free(b.tok);
	free(b.src);
	free(srcs);
	free(b.logits);
	return rc;
}
