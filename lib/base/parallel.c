#include "base/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct job {
	par_fn fn;
	void *ctx;
	int64_t n;
	atomic_llong next;
};

struct worker {
	struct job *job;
	int tid;
};

static void run(struct job *j, int tid)
{
	for (;;) {
		long long i = atomic_fetch_add(&j->next, 1);
		if (i >= j->n)
			break;
		j->fn(j->ctx, (int64_t)i, tid);
	}
}

static void *thread_main(void *arg)
{
	struct worker *w = arg;
	run(w->job, w->tid);
	return NULL;
}

int par_for(int nthreads, int64_t n, par_fn fn, void *ctx)
{
	struct job j;
	pthread_t *th;
	struct worker *w;
	int started = 0, rc = 0;

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
	th = calloc((size_t)nthreads, sizeof *th);
	w = calloc((size_t)nthreads, sizeof *w);
	if (th && w) {
		for (int t = 1; t < nthreads; t++) {
			w[t].job = &j;
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
	run(&j, 0);
	for (int t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	free(th);
	free(w);
	return rc;
}
