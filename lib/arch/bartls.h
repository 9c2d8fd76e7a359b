/*
 * bartls: BART-LS (see bartls.c), internal to the arch layer and its tests.
 */
#ifndef LC_BARTLS_H
#define LC_BARTLS_H

#include "arch/arch.h"
#include "arch/bart.h"
#include "ops/bartlsattn.h"

extern const lc_arch arch_bart_ls;

/* BART's weights and the pooled attention of the top layers. b comes
 * first: BART's decoder reads the struct as a bart_weights. */
typedef struct bartls_weights {
	bart_weights b;
	poolattn_w *pool;                 /* [num_layers]; set for the pooled layers */
} bartls_weights;

/* For tests: every row of the padded input (T rows, a multiple of
 * block_size) after the embeddings and nlayers layers (0: the
 * embeddings, < 0: all) into *rows [*T, d_model], which the caller frees. */
int bartls_encode_layers(lc_model *m, const int32_t *ids, int64_t L, int nlayers, float **rows,
                         int64_t *T, lc_err *err);

/* For tests: encoder layer `layer` alone on x [T, d_model] in place,
 * T a multiple of block_size, pad [T] the padding (NULL: no mask). When
 * non-NULL: a [T, d] gets the block attention's output (after its
 * out_proj); for a pooled layer, cross [T, d] the pooled attention's
 * output and *tape its tape (the caller frees it). */
int bartls_layer(lc_model *m, int layer, float *x, int64_t T, const unsigned char *pad, float *a,
                 float *cross, poolattn_tape *tape, lc_err *err);

#endif
