#include "base/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/machine.h"

/* Workers are kept between calls: starting and joining threads cost 58
 * us a call on a 2-core virtual machine, and the decoder makes about 120
 * calls a generated token (7 ms a step, 4-9% of a step at 16K-131K
 * states). One call at a time has the pool (the first to take `owner`);
 * a call made meanwhile, from another thread or from inside a task,
 * starts its own threads as before, so nesting and concurrent callers
 * work as they always did.
 *
 * Waking a sleeping thread costs as much again: a condition variable's
 * signal and wait took 28 us a call on the same machine (a futex each
 * way, and the virtual machine's interrupt to a halted CPU). So a worker
 * that has finished, and a caller whose workers have not, first watch
 * for the next job (or the last worker) for up to SPIN_NS, and sleep
 * only after that: calls that follow each other closely, as the
 * decoder's do, cost a few microseconds; a pool left idle sleeps after
 * SPIN_NS and takes no processor time. Watching yields the processor now
 * and then, to any thread that is waiting for it (another program's,
 * in a pipeline), and a pool with more threads than there are processors
 * the process may use (base/machine.h: taskset, a container's quota) does
 * not watch at all: its workers would take turns with the ones it waits
 * for. */
#define SPIN_NS 100000

struct job {
	par_fn fn;
	void *ctx;
	int64_t n;
	atomic_llong next;
};

#define POOL_MAX 256

static struct {
	pthread_mutex_t owner;      /* held by the call using the pool */
	pthread_mutex_t mu;         /* guards sleeping and started, and the waits */
	pthread_cond_t work, done;
	struct job *_Atomic job;
	atomic_int nwork;           /* workers that take part in this job, tids 1..nwork */
	atomic_ulong gen;           /* bumped (after job, nwork, active) for each job */
	atomic_ulong active;        /* workers yet to answer this job */
	atomic_int spin;            /* watch before sleeping: threads <= processors */
	int sleeping;               /* workers waiting on `work` */
	int started;                /* workers alive, tids 1..started */
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	   PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0 };

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Watches *v while it equals x (eq) or differs from it (!eq), for up to
 * SPIN_NS if the pool watches, yielding every 64 pauses; returns its last
 * value. */
static unsigned long watch(atomic_ulong *v, unsigned long x, int eq)
{
	int64_t start = atomic_load(&pool.spin) ? now_ns() : 0;
	unsigned long y;

	for (int i = 1; ((y = atomic_load_explicit(v, memory_order_acquire)) == x) == eq; i++) {
		if (!start)
			break;
		relax();
		if (!(i & 63)) {
			sched_yield();
			if (now_ns() - start >= SPIN_NS)
				break;
		}
	}
	return y;
}

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
	 * cannot end without it: when it first holds the lock, gen has been
	 * bumped for that job. */
	pthread_mutex_lock(&pool.mu);
	seen = atomic_load(&pool.gen) - 1;
	pthread_mutex_unlock(&pool.mu);
	for (;;) {
		unsigned long g = watch(&pool.gen, seen, 1);

		if (g == seen) {
			pthread_mutex_lock(&pool.mu);
			pool.sleeping++;
			while ((g = atomic_load(&pool.gen)) == seen)
				pthread_cond_wait(&pool.work, &pool.mu);
			pool.sleeping--;
			pthread_mutex_unlock(&pool.mu);
		}
		/* Every worker answers every job, taking part or not: the
		 * caller hands out the next one only after all have, so job
		 * and nwork are this job's, and no job is missed. */
		seen = g;
		if (tid <= atomic_load(&pool.nwork))
			run(atomic_load(&pool.job), tid);
		if (atomic_fetch_sub(&pool.active, 1) == 1) {
			pthread_mutex_lock(&pool.mu);
			pthread_cond_signal(&pool.done);
			pthread_mutex_unlock(&pool.mu);
		}
	}
	return NULL;
}

/* pthread_create, the thread started with SIGINT, SIGTERM and SIGHUP
 * blocked (it inherits the mask): a signal sent to the process is then
 * taken by the thread that called lc, so base/sigclean.h's handler runs
 * while that thread, the one writing the files it removes, is stopped,
 * never beside it (and a signal held back while that thread is in a
 * oneDNN product, compute/dnnl.c, waits for it). */
static int spawn(pthread_t *th, const pthread_attr_t *at, void *(*fn)(void *), void *arg)
{
	sigset_t set, old;
	int rc;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rc = pthread_create(th, at, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Workers 1..want alive (as many as could be started); under pool.mu. */
static int pool_grow(int want)
{
	static long ncpu;

	if (!ncpu)
		ncpu = machine_cpus(NULL);
	while (pool.started < want) {
		pthread_t th;
		pthread_attr_t at;
		int rc;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		rc = spawn(&th, &at, pool_main, (void *)(intptr_t)(pool.started + 1));
		pthread_attr_destroy(&at);
		if (rc != 0)
			break;
		pool.started++;
	}
	/* the workers and the caller against the processors this process may use */
	atomic_store(&pool.spin, pool.started + 1 <= ncpu);
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
			if (spawn(&th[t], NULL, thread_main, &w[t]) != 0) {
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
	atomic_store(&pool.nwork, got < nthreads - 1 ? got : nthreads - 1);
	atomic_store(&pool.active, (unsigned long)pool.started);
	atomic_store(&pool.job, &j);
	atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
	if (pool.sleeping)
		pthread_cond_broadcast(&pool.work);
	pthread_mutex_unlock(&pool.mu);
	run(&j, 0);
	if (watch(&pool.active, 0, 0) != 0) {
		pthread_mutex_lock(&pool.mu);
		while (atomic_load(&pool.active) != 0)
			pthread_cond_wait(&pool.done, &pool.mu);
		pthread_mutex_unlock(&pool.mu);
	}
	atomic_store(&pool.job, NULL);
	pthread_mutex_unlock(&pool.owner);
	return rc;
}
