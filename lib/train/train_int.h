/*
 * train_int: the trainer's insides, shared by train.c and checkpoint.c and
 * open to tests: the struct, one pair's loss and gradients at the current
 * weights, and the flat weights and gradients themselves (in the layout of
 * the architecture's declaration).
 */
#ifndef LC_TRAIN_INT_H
#define LC_TRAIN_INT_H

#include <stdint.h>

#include "arch/arch.h"
#include "train/train.h"
#include "weights/params.h"

struct trainer {
	lc_config cfg;              /* the model's configuration (its architecture inside) */
	const lc_train_ops *ops;
	train_opts o;
	lc_params *P;               /* the declaration: the flat layout */
	uint64_t n;                 /* floats in it */
	float *w, *g, *m, *v;       /* [n] weights, gradients, moments */
	void *W;                    /* the architecture's weights struct over w */
	int nth;
	float **tg;                 /* [nth][n] per-thread gradients (tg[0] == g) */
	void **TG;                  /* [nth] weights structs over them */
	lc_params **TGp;
	void *sh;                   /* the architecture's per-step state */
	int64_t step, epoch;
	size_t pos;                 /* next index into the epoch's order */
	size_t *order;
	size_t order_n;
};

/* Draws the epoch's permutation of n pairs into t->order. */
int trainer_order(trainer *t, size_t n, lc_err *err);

typedef struct train_pair_out {
	double loss;                /* summed cross-entropy over counted labels */
	int64_t ntok;               /* labels counted (not pad_id, not < 0) */
	float *logits;              /* optional [Lt, V]: filled if non-NULL */
	float *enc;                 /* optional [Ls, d]: the encoder's states, if non-NULL */
} train_pair_out;

/* The loss of one pair (dropout p, masks from seed) at the current
 * weights; with grad, its gradients (of the summed loss) replace
 * trainer_grads. One thread. */
int trainer_pair(trainer *t, const int32_t *src, int64_t Ls, const int32_t *tgt, int64_t Lt,
                 double dropout, uint64_t seed, int grad, train_pair_out *out, lc_err *err);

const lc_params *trainer_params(const trainer *t);
float *trainer_weights(trainer *t);           /* [trainer_nparams] */
const float *trainer_grads(const trainer *t); /* [trainer_nparams] */

#endif
