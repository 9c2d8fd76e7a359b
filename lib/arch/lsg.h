/*
 * lsg: LSG-BART (see lsg.c), internal to the arch layer and its tests.
 */
#ifndef LC_LSG_H
#define LC_LSG_H

#include "arch/arch.h"

extern const lc_arch arch_lsg_bart;

/* For tests: every row of the encoder (the global rows, the tokens, the
 * adaptive padding) after nlayers layers (0: after layernorm_embedding,
 * < 0: all) into *rows [*R, d_model], which the caller frees. lsh_draws
 * (NULL: lc's own) gives each layer's random projections, the rounds one
 * after the other, each [heads][head_dim][buckets / 2]. */
int lsg_encode_layers(lc_model *m, const float *const *lsh_draws, const int32_t *ids, int64_t L,
                      int nlayers, float **rows, int64_t *R, lc_err *err);

#endif
