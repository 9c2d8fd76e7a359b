/*
 * adamw: the optimizer and the learning-rate schedules of training.
 *
 * AdamW (Loshchilov & Hutter): decoupled weight decay, bias-corrected
 * moments, in float with the moments kept by the caller (so that they can
 * be saved and a run resumed bit for bit). Gradient clipping by the global
 * L2 norm. Schedules as in the LOCOST paper: inverse square root with
 * linear warm-up for pretraining, constant for fine-tuning.
 */
#ifndef LC_ADAMW_H
#define LC_ADAMW_H

#include <stdint.h>

typedef struct adamw_opts {
	double beta1, beta2, eps;   /* 0.9, 0.999, 1e-8 */
	double weight_decay;        /* decoupled; applied where the caller says */
} adamw_opts;

/* One update of n parameters at step t (1-based): m, v [n] updated in place.
 * decay: 1 to apply weight decay to this range, 0 not (norms, biases). */
void adamw_update(float *w, const float *g, float *m, float *v, uint64_t n, int64_t t,
                  double lr, const adamw_opts *o, int decay);

/* Global L2 norm of g[n]; if max_norm > 0 and the norm exceeds it, scales
 * g by max_norm / norm. Returns the norm before clipping. */
double grad_clip(float *g, uint64_t n, double max_norm);

enum lr_sched { LR_CONSTANT = 0, LR_INVSQRT = 1 };

/* The learning rate at step t (1-based): constant: base; invsqrt: base *
 * min(t / warmup, sqrt(warmup / t)) (peak base at t = warmup; warmup 0:
 * base * sqrt(1 / t)). Constant with warmup > 0 ramps linearly first. */
double lr_at(enum lr_sched s, double base, int64_t t, int64_t warmup);
int lr_sched_parse(const char *s, enum lr_sched *out);   /* "constant", "invsqrt" */
const char *lr_sched_name(enum lr_sched s);

#endif
