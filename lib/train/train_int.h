/*
 * train_int: the trainer's insides, for tests: one pair's loss and
 * gradients at the current weights, and the flat weights and gradients
 * themselves (in the layout of the architecture's declaration).
 */
#ifndef LC_TRAIN_INT_H
#define LC_TRAIN_INT_H

#include <stdint.h>

#include "train/train.h"
#include "weights/params.h"

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
