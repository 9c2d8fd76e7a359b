/*
 * test_parallel: par_for (base/parallel.c) calls fn once for every index,
 * with tids in [0, nthreads), for any thread count and length (the kept
 * workers growing and being reused), from inside a task (a nested call)
 * and from several threads at once (concurrent calls); calls that follow
 * each other closely (the workers still watching for the next job) and
 * after a pause (the workers asleep), with the thread count changing from
 * one call to the next (workers not needed for a job answer it too).
 * Its workers, kept or a call's own, hold SIGINT, SIGTERM and SIGHUP
 * back, so that base/sigclean.h's handler runs on the calling thread;
 * and that handler, armed for a directory before its mkdir and then
 * again for its files, removes both.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/parallel.h"
#include "base/sigclean.h"
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

struct masks {
	atomic_int open_workers, caller_blocks;
	int nested;     /* the calls in look are nested: their tid 0 may be a worker */
};

static void look(void *ctx, int64_t i, int tid)
{
	struct masks *m = ctx;
	sigset_t cur;

	(void)i;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (tid && !(sigismember(&cur, SIGTERM) && sigismember(&cur, SIGINT) &&
	             sigismember(&cur, SIGHUP)))
		atomic_fetch_add(&m->open_workers, 1);
	if (!tid && !m->nested && sigismember(&cur, SIGTERM))
		atomic_fetch_add(&m->caller_blocks, 1);
}

static void nested_look(void *ctx, int64_t i, int tid)
{
	struct masks *outer = ctx, m = { 0, 0, 1 };

	(void)i, (void)tid;
	par_for(3, 30, look, &m);       /* a nested call: threads of its own */
	atomic_fetch_add(&outer->open_workers, atomic_load(&m.open_workers));
}

static void test_signal_masks(void)
{
	struct masks m = { 0, 0, 0 };

	T_OK(par_for(4, 400, look, &m) == 0, "the kept workers");
	T_OK(par_for(2, 4, nested_look, &m) == 0, "a call's own threads");
	T_OK(!atomic_load(&m.open_workers), "no worker takes SIGINT, SIGTERM or SIGHUP (%d did)",
	     atomic_load(&m.open_workers));
	T_OK(!atomic_load(&m.caller_blocks), "the calling thread takes them");
}

/* In a child: armed for dir before its mkdir, armed again for a file in
 * it, then killed by SIGTERM: it dies of the signal, both removed. And
 * killed between the mkdir and the second arming: the directory
 * removed. */
static void test_sigclean_rearm(void)
{
	char dir[4096], file[4200];
	const char *files[1] = { file };

	for (int late = 0; late < 2; late++) {
		pid_t pid;
		int st = 0;
		struct stat sb;

		snprintf(dir, sizeof dir, "%s/lc-sigclean-%ld-%d",
		         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(), late);
		snprintf(file, sizeof file, "%s/f", dir);
		if ((pid = fork()) == 0) {
			FILE *f;

			sigclean_begin(NULL, 0, dir);
			if (mkdir(dir, 0777) != 0)
				_exit(3);
			if (late) {
				sigclean_begin(files, 1, dir);
				if (!(f = fopen(file, "w")) || fputs("x", f) < 0 || fclose(f) != 0)
					_exit(4);
			}
			raise(SIGTERM);
			_exit(5);
		}
		T_OK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
		     WTERMSIG(st) == SIGTERM, "%s: dies of SIGTERM (status %d)",
		     late ? "armed again" : "armed before the mkdir", st);
		T_OK(stat(dir, &sb) != 0, "%s: nothing left", late ? "armed again" : "armed before the mkdir");
		unlink(file);
		rmdir(dir);
	}
	{
		/* armed twice, then ended: SIGTERM's disposition as it was */
		struct sigaction sa;

		sigclean_begin(NULL, 0, "/nonexistent/a");
		sigclean_begin(NULL, 0, "/nonexistent/b");
		sigclean_end();
		T_OK(sigaction(SIGTERM, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL,
		     "armed twice and ended: SIGTERM at its default again");
	}
}

int main(void)
{
	T_RUN(test_spin_and_sleep);
	T_RUN(test_once_each);
	T_RUN(test_nested);
	T_RUN(test_concurrent);
	T_RUN(test_signal_masks);
	T_RUN(test_sigclean_rearm);
	return t_done();
}
