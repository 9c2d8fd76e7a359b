#include "base/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Workers are kept between calls: starting and joining threads cost 58
 * us a call on a 2-core virtual machine, and the decoder makes about 120
 * calls a generated token (7 ms a step, 4-9% of a step at 16K-131K
 * states). One call at a time has the pool (the first to take `owner`);
 * a call made meanwhile, from another thread or from inside a task,
 * starts its own threads as before, so nesting and concurrent callers
 * work as they always did. */

struct job {
	par_fn fn;
	void *ctx;
	int64_t n;
	atomic_llong next;
};

#define POOL_MAX 256

static struct {
	pthread_mutex_t owner;      /* held by the call using the pool */
	pthread_mutex_t mu;         /* guards the fields below */
	pthread_cond_t work, done;
	struct job *job;
	unsigned long gen;          /* bumped for each job handed out */
	int nwork;                  /* workers that take part in this job */
	int active;                 /* of those, still running it */
	int started;                /* workers alive, tids 1..started */
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	   PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0 };

static void run(struct job *j, int tid)
{
	for (;;) {
		long long i = atomic_fetch_add(&j->next, 1);
		if (i >= j->n)
			break;
		j->fn(j->ctx, (int64_t)i, tid);
	}
}

static void *pool_main(void *arg)
{
	int tid = (int)(intptr_t)arg;
	unsigned long seen;

	/* Started under pool.mu for the job about to be handed out, which
	 * cannot end without it: when it first holds the lock, that job is
	 * the current one. */
	pthread_mutex_lock(&pool.mu);
	seen = pool.gen - 1;
	for (;;) {
		struct job *j;

		while (pool.gen == seen)
			pthread_cond_wait(&pool.work, &pool.mu);
		seen = pool.gen;
		if (tid > pool.nwork)
			continue;               /* not needed for this one */
		j = pool.job;
		pthread_mutex_unlock(&pool.mu);
		run(j, tid);
		pthread_mutex_lock(&pool.mu);
		if (--pool.active == 0)
			pthread_cond_signal(&pool.done);
	}
	return NULL;
}

/* Workers 1..want alive (as many as could be started); under pool.mu. */
static int pool_grow(int want)
{
	while (pool.started < want) {
		pthread_t th;
		pthread_attr_t at;
		int rc;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&th, &at, pool_main, (void *)(intptr_t)(pool.started + 1));
		pthread_attr_destroy(&at);
		if (rc != 0)
			break;
		pool.started++;
	}
	return pool.started;
}

struct worker {
	struct job *job;
	int tid;
};

static void *thread_main(void *arg)
{
	struct worker *w = arg;
	run(w->job, w->tid);
	return NULL;
}

/* Threads of this call alone: a nested or concurrent call. */
static int fresh_threads(int nthreads, struct job *j)
{
	pthread_t *th = calloc((size_t)nthreads, sizeof *th);
	struct worker *w = calloc((size_t)nthreads, sizeof *w);
	int started = 0, rc = 0;

	if (th && w) {
		for (int t = 1; t < nthreads; t++) {
			w[t].job = j;
			w[t].tid = t;
			if (pthread_create(&th[t], NULL, thread_main, &w[t]) != 0) {
				rc = -1;
				break;
			}
			started = t;
		}
	} else {
		rc = -1;
	}
	run(j, 0);
	for (int t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	free(th);
	free(w);
	return rc;
}

int par_for(int nthreads, int64_t n, par_fn fn, void *ctx)
{
	struct job j;
	int got, rc = 0;

	j.fn = fn;
	j.ctx = ctx;
	j.n = n;
	atomic_init(&j.next, 0);
	if (nthreads > n)
		nthreads = (int)n;
	if (nthreads <= 1) {
		run(&j, 0);
		return 0;
	}
	if (nthreads > POOL_MAX || pthread_mutex_trylock(&pool.owner) != 0)
		return fresh_threads(nthreads, &j);
	pthread_mutex_lock(&pool.mu);
	got = pool_grow(nthreads - 1);
	if (got < nthreads - 1)
		rc = -1;                    /* fewer threads; the work is the same */
	pool.nwork = got < nthreads - 1 ? got : nthreads - 1;
	pool.active = pool.nwork;
	pool.job = &j;
	pool.gen++;
	pthread_cond_broadcast(&pool.work);
	pthread_mutex_unlock(&pool.mu);
	run(&j, 0);
	pthread_mutex_lock(&pool.mu);
	while (pool.active > 0)
		pthread_cond_wait(&pool.done, &pool.mu);
	pool.job = NULL;
	pthread_mutex_unlock(&pool.mu);
	pthread_mutex_unlock(&pool.owner);
	return rc;
}
