/*
 * test_parallel: par_for (base/parallel.c) calls fn once for every index,
 * with tids in [0, nthreads), for any thread count and length (the kept
 * workers growing and being reused), from inside a task (a nested call)
 * and from several threads at once (concurrent calls); calls that follow
 * each other closely (the workers still watching for the next job) and
 * after a pause (the workers asleep), with the thread count changing from
 * one call to the next (workers not needed for a job answer it too).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/parallel.h"
#include "t.h"

struct count {
	atomic_int *hits;
	int nthreads;
	atomic_int bad_tid;
};

static void hit(void *ctx, int64_t i, int tid)
{
	struct count *c = ctx;

	atomic_fetch_add(&c->hits[i], 1);
	if (tid < 0 || tid >= c->nthreads)
		atomic_store(&c->bad_tid, 1);
}

/* 1 when par_for(nthreads, n) hit every index once with valid tids */
static int once_each(int nthreads, int64_t n)
{
	struct count c = { calloc((size_t)(n ? n : 1), sizeof(atomic_int)), nthreads, 0 };
	int ok = c.hits != NULL;

	if (ok && par_for(nthreads, n, hit, &c) != 0)
		ok = 0;
	for (int64_t i = 0; ok && i < n; i++)
		ok = atomic_load(&c.hits[i]) == 1;
	ok = ok && !atomic_load(&c.bad_tid);
	free(c.hits);
	return ok;
}

static void test_once_each(void)
{
	static const int64_t ns[] = { 0, 1, 2, 3, 7, 64, 1000 };
	int ok = 1;

	/* thread counts up and down: the kept workers grow, then serve fewer */
	for (int t = 1; t <= 9 && ok; t++)
		for (size_t k = 0; k < sizeof ns / sizeof *ns && ok; k++)
			ok = once_each(t, ns[k]);
	for (int t = 9; t >= 1 && ok; t--)
		ok = once_each(t, 100);
	for (int r = 0; r < 2000 && ok; r++)  /* many calls in a row */
		ok = once_each(2, 3);
	T_OK(ok, "every index once, tids in range, 1 to 9 threads");
}

/* First in main: while the pool has no more threads than the machine
 * has processors, its workers watch for the next job before sleeping. */
static void test_spin_and_sleep(void)
{
	static const int ts[] = { 2, 9, 3, 1, 5, 2, 8, 4 };
	struct timespec pause = { 0, 2000000 };   /* 2 ms: past the workers' watch */
	int ok = 1;

	for (int r = 0; r < 4000 && ok; r++)      /* one worker, back to back */
		ok = once_each(2, 1 + r % 11);
	for (int r = 0; r < 20 && ok; r++) {
		nanosleep(&pause, NULL);
		ok = once_each(2, 20);
	}
	for (int r = 0; r < 4000 && ok; r++)      /* the pool growing, workers left out */
		ok = once_each(ts[r % 8], 1 + r % 11);
	for (int r = 0; r < 40 && ok; r++) {
		nanosleep(&pause, NULL);
		ok = once_each(ts[r % 8], 20);
	}
	T_OK(ok, "calls back to back and after pauses, thread counts changing");
}

static atomic_int nested_ok;

static void outer(void *ctx, int64_t i, int tid)
{
	(void)ctx;
	(void)i;
	(void)tid;
	if (!once_each(3, 50))
		atomic_store(&nested_ok, 0);
}

static void test_nested(void)
{
	atomic_store(&nested_ok, 1);
	T_OK(par_for(2, 8, outer, NULL) == 0 && atomic_load(&nested_ok),
	     "a par_for inside a task");
}

static void *caller(void *arg)
{
	atomic_int *ok = arg;

	for (int r = 0; r < 300; r++)
		if (!once_each(2 + r % 3, 40 + r % 7))
			atomic_store(ok, 0);
	return NULL;
}

static void test_concurrent(void)
{
	pthread_t th[4];
	atomic_int ok = 1;
	int started = 0;

	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, caller, &ok) == 0)
			started++;
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	T_OK(started == 4 && atomic_load(&ok), "four threads calling par_for at once");
}

int main(void)
{
	T_RUN(test_spin_and_sleep);
	T_RUN(test_once_each);
	T_RUN(test_nested);
	T_RUN(test_concurrent);
	return t_done();
}
