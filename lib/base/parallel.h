/*
 * parallel: a minimal fork-join loop over an index range.
 *
 * par_for(nthreads, n, fn, ctx) calls fn(ctx, i, tid) once for every i in
 * [0, n), spread over nthreads threads (tid in [0, nthreads)), items
 * taken in increasing order from a shared counter, and returns when all
 * are done. The calling thread works as tid 0; nthreads <= 1 runs inline.
 * Thread-local scratch is the caller's: index it by tid. Returns 0, or -1
 * if threads could not be started (the work is then done inline, so the
 * result is the same).
 */
#ifndef LC_PARALLEL_H
#define LC_PARALLEL_H

#include <stdint.h>

typedef void (*par_fn)(void *ctx, int64_t i, int tid);

int par_for(int nthreads, int64_t n, par_fn fn, void *ctx);

#endif
