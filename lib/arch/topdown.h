/*
 * topdown: the top-down transformer (see topdown.c), internal to the arch
 * layer and its tests.
 */
#ifndef LC_TOPDOWN_H
#define LC_TOPDOWN_H

#include "arch/arch.h"
#include "arch/bart.h"

extern const lc_arch arch_bart_topdown;

/* BART's weights (b.enc: the bottom-up then the top-down layers), the
 * segment layers, the top-down layers' cross-attention to the segments
 * and AdaPool's tagger. b comes first: BART's decoder reads the struct
 * as a bart_weights. */
typedef struct topdown_weights {
	bart_weights b;
	bart_enc_layer *seg;              /* [segment_layers] model.encoder.top_layers.M */
	bart_attn *cross;                 /* [top-down layers] ...layers.N.cross_attn; its
	                                   * LayerNorm (cross_attn_layer_norm) is unused */
	float *tag_w, *tag_b;             /* [1, d], [1]: AdaPool's importance tagger */
} topdown_weights;

/* For tests: every stage of the encoder on ids [L] (pads where ids ==
 * pad_token_id, as fairseq's mask; L < pool_kernel: padded to it), each
 * [T, d] or [S, d], freed by topdown_stages_free. */
typedef struct topdown_stages {
	int64_t T, S;
	float *emb, *bu0_attn, *seg_pool;
	float **bu, **seg, **td;          /* [bottom-up], [segment], [top-down layers] */
	int nbu, nseg, ntd;
} topdown_stages;

int topdown_encode_stages(lc_model *m, const int32_t *ids, int64_t L, topdown_stages *st,
                          lc_err *err);
void topdown_stages_free(topdown_stages *st);

#endif
