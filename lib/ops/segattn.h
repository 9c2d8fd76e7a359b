/*
 * segattn: an encoder attention as groups of query rows over lists of
 * key segments, built on the CPU and run on the GPU by one kernel
 * (compute/dev.h's cmp_dev_segattn). Every encoder attention of lc takes
 * this form: LSG's blocks (global rows, the sparse slots on each side,
 * three blocks of tokens) and global queries, the dense attention of
 * BART and LSG's short inputs, BART-LS's blocks and pooled keys, the
 * top-down transformer's blocks with token 0 and its token-to-segment
 * attention. The CPU computes the same attentions by matrix products
 * (ops/lsgattn.c, ops/bartlsattn.c); those files build a plan here only
 * when the device is cuda.
 *
 * Operands are the caller's arrays, registered as buffers; a segment or
 * a row range points into them, and the plan keeps each pointer as its
 * buffer and offset, so it reads the same on both sides of the bus. A
 * buffer may also be one already on the GPU (an encoder whose layers run
 * there, arch/bart_gpu.c), used in place. A
 * row range's rows attend to the segments added since the previous row
 * range (one head each: dk floats of each row, from the pointers given).
 *
 * Scores: scale q.k; in a segment with pad flags, -10000 (assigned) where
 * the key's or the query's flag is non-zero (BART-LS's block_noglobal);
 * otherwise plus the segment's additive mask (LSG's -FLT_MAX, the pooled
 * keys' -inf). Outputs: softmax(scores) v, zeros where every score is
 * -inf.
 */
#ifndef LC_SEGATTN_H
#define LC_SEGATTN_H

#include <stdint.h>

#include "base/err.h"

typedef struct sa_plan sa_plan;

/* 1 when a plan for heads of dk floats would run on the GPU: the device
 * is cuda and dk <= CMP_DEV_SEG_DK (128; wider heads stay on the CPU). */
int sa_takes(int dk);

/* Plans the GPU has run in this process (the tests count them). */
int64_t sa_gpu_runs(void);

/* An empty plan for heads of dk floats, scores scaled by scale; NULL when
 * out of memory. */
sa_plan *sa_new(int dk, float scale);
void sa_free(sa_plan *p);

/* Registers the n floats at x (read on the GPU; not changed). */
void sa_buf(sa_plan *p, const float *x, int64_t n);
/* The same for n floats already in the GPU's memory (x the GPU's pointer:
 * read where it is, not copied). */
void sa_buf_dev(sa_plan *p, const float *x, int64_t n);

/* n keys and values (rows of stride ld) for the next row range; mask
 * additive [n] or pad flags [n] (at most one of them), or NULL. n < 1
 * adds nothing. Every pointer lies in a registered buffer. */
void sa_seg(sa_plan *p, const float *k, const float *v, int64_t ld, int64_t n,
            const float *mask, const float *pad);

/* m query rows at q (stride ldq), their outputs at float offset o of the
 * run's output (stride ldo), their pad flags [m] at qpad or NULL, over
 * the segments added since the last call. */
void sa_rows(sa_plan *p, const float *q, int64_t ldq, int64_t m, int64_t o, int64_t ldo,
             const float *qpad);

/* Runs the plan on the GPU into out: the row ranges must write every one
 * of its rows x cols floats (row stride ldo); only those are copied back.
 * 0: done; 1: not run, the caller computes on the CPU (!sa_takes(dk), too
 * little work to be worth the GPU's fixed costs (compute/dev.h's
 * cmp_dev_worth), or the GPU has no memory for it or failed: said once
 * on standard error); -1: out of memory here, or a pointer outside the
 * registered buffers (err). */
int sa_run(sa_plan *p, float *out, int64_t rows, int64_t cols, int64_t ldo, lc_err *err);

/* Runs the plan into out, an array in the GPU's memory (the output
 * offsets of sa_rows from it), for a caller that holds the device's lock
 * (compute/dev.h) and has decided the GPU is worth it: no copy back. 0:
 * done; 1: not run (!sa_takes(dk), or no GPU memory for the plan's tables
 * and host buffers: said once); -1: err (out of memory here, a stray
 * pointer, or the GPU failed). */
int sa_run_dev(sa_plan *p, float *out, lc_err *err);

/* The floats of R rows of stride ld whose last row holds w (a buffer's
 * length for sa_buf). */
static inline int64_t sa_span(int64_t R, int64_t ld, int64_t w)
{
	return R < 1 ? 0 : (R - 1) * ld + w;
}

/* The dense attention as a plan, run: every head's T query rows (q,
 * stride ldq) over all Tk keys and values (k, v, stride ldk; mask
 * additive [Tk] or NULL), outputs at out (stride ldo), heads of dk floats
 * side by side. Returns as sa_run. */
int sa_dense(int heads, int dk, float scale, const float *q, int64_t ldq, int64_t T,
             const float *k, const float *v, int64_t ldk, int64_t Tk, const float *mask,
             float *out, int64_t ldo, lc_err *err);
/* The same with q, k, v and out in the GPU's memory (mask, if any, the
 * CPU's), run by sa_run_dev: the caller holds the device's lock. */
int sa_dense_dev(int heads, int dk, float scale, const float *q, int64_t ldq, int64_t T,
                 const float *k, const float *v, int64_t ldk, int64_t Tk, const float *mask,
                 float *out, int64_t ldo, lc_err *err);

#endif
