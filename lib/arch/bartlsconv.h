/*
 * bartlsconv: BART -> BART-LS conversion, as the authors initialise BART-LS
 * from BART (facebookresearch/bart_ls, fairseq-py/scripts/long_denoising/
 * initialize_models_long_denoising.py and BARTModel's init_bert_params):
 *
 *   encoder positions  max_len + 2 rows: row r >= 2 <- BART's row
 *                      2 + (r - 2) mod (rows - 2); max_len must be a
 *                      multiple of BART's max_position_embeddings.
 *                      Rows 0 and 1 are undefined memory in the authors'
 *                      code (new_empty); lc takes BART's rows 0 and 1
 *                      (row 1 is only read by pads, whose states are zeroed)
 *   vocabulary         BART's; with a larger vocab_size the new rows of the
 *                      shared embedding (and of an untied lm_head) are
 *                      BART's last row, final_logits_bias 0
 *   pooled attention   model.encoder.layers.N.pool_attn.{q,k,v,out}_proj of
 *                      the top pooling_layers: weights N(0, 0.02) drawn from
 *                      seed (base/rng.h), biases 0
 *   the rest           copied, the decoder's position table included (its
 *                      length becomes max_decoder_position_embeddings)
 *   config             model_type bart_ls, BartLSForConditionalGeneration,
 *                      max_position_embeddings, block_size, pooling_layers,
 *                      pool_kernel/stride/padding 18/12/9,
 *                      max_decoder_position_embeddings, _name_or_path
 *   tokenizer          as lsgconv.h: model_max_length = max_len, the rest copied
 */
#ifndef LC_BARTLSCONV_H
#define LC_BARTLSCONV_H

#include <stdint.h>

#include "base/err.h"

typedef struct bartlsconv_opts {
	int max_len;                  /* new max_position_embeddings (16384) */
	int block_size;               /* 1024 */
	int pooling_layers;           /* 4 (at most the encoder's layers) */
	int vocab_size;               /* -1: BART's; else at least BART's */
	uint64_t seed;                /* of the pooled attention's weights */
	const char *name;             /* _name_or_path; NULL: dst as given */
	void (*progress)(void *ctx, const char *what);
	void *ctx;
} bartlsconv_opts;

void bartlsconv_opts_default(bartlsconv_opts *o);

/* Converts the BART model directory src into a new directory dst (which
 * must not exist; it appears whole or not at all). */
int bartls_convert(const char *src, const char *dst, const bartlsconv_opts *o, lc_err *err);

#endif
