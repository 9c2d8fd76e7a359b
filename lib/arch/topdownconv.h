/*
 * topdownconv: BART -> top-down transformer, as Pang et al. (2022)
 * initialise theirs from BART (the bottom-up and top-down layers are
 * BART's encoder layers; the paper's large model: 8 + 4 of bart-large's
 * 12). Where the paper does not say, lc chooses (lc-convert(1)):
 *
 *   layers.N           BART's encoder layer N: 0 .. n1-1 bottom-up,
 *                      n1 .. L-1 top-down (n1 = --bottom-up-layers)
 *   top_layers.M       the segment layers: copies of BART's last n2
 *                      encoder layers (layer L - n2 + M), the layers whose
 *                      inputs are most abstract
 *   layers.N.cross_attn  (top-down layers, new) a copy of layer N's own
 *                      self-attention (q, k, v, out and the unused
 *                      cross_attn_layer_norm from self_attn_layer_norm):
 *                      c starts as the layer's attention over the segments,
 *                      on the scale (a + c) / 2 expects
 *   pool_tagger        (AdaPool, new) zero: every weight 1/2, the average
 *   encoder positions  tiled to max_len as BART-LS's conversion tiles them
 *                      (convdir.h), max_len a multiple of BART's
 *   the rest           copied; the decoder keeps BART's positions
 *                      (max_decoder_position_embeddings)
 *   config             model_type bart_topdown,
 *                      BartTopDownForConditionalGeneration, window_size,
 *                      bottom_up_layers, top_down_layers, segment_layers,
 *                      pool_kernel 32, pool_stride 24, pool_type,
 *                      max_segments, _name_or_path
 *   tokenizer          as lsgconv.h: model_max_length = max_len
 */
#ifndef LC_TOPDOWNCONV_H
#define LC_TOPDOWNCONV_H

#include "base/err.h"

typedef struct topdownconv_opts {
	int max_len;                  /* new max_position_embeddings (16384) */
	int window_size;              /* 1024 */
	int bottom_up;                /* n1; -1: two thirds of BART's layers (8 of 12) */
	int segment_layers;           /* n2 (2), at most BART's layers */
	int max_segments;             /* 0: no limit */
	int adapool;                  /* pool_type adapool */
	const char *name;             /* _name_or_path; NULL: dst as given */
	void (*progress)(void *ctx, const char *what);
	void *ctx;
} topdownconv_opts;

void topdownconv_opts_default(topdownconv_opts *o);

/* Converts the BART model directory src into a new directory dst (which
 * must not exist; it appears whole or not at all). */
int topdown_convert(const char *src, const char *dst, const topdownconv_opts *o, lc_err *err);

#endif
