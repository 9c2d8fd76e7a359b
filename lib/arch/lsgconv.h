/*
 * lsgconv: BART -> LSG-BART conversion, as the authors' converter
 * (ccdv-ai/convert_checkpoint_to_lsg, lsg_converter/bart, defaults:
 * global_positional_stride 64, no random global init) does it:
 *
 *   positions  encoder and decoder tables grow to max_len + 2 rows by
 *              tiling: new[0..1] = old[0..1], new[2 + k] = old[2 + k mod (rows - 2)]
 *   globals    model.encoder.global_embeddings.weight [512, d] from the
 *              original encoder positions P = old[2:] (cut to a multiple
 *              of 512 rows): every (n/512)th row, reordered with stride
 *              64 / (n/512); then row 0 += shared[<s>], rows 1.. += shared[<mask>]
 *              (the caller reads the ids from the tokenizer: arch/ knows no text/)
 *   config     architectures LSGBartForConditionalGeneration, auto_map,
 *              base_model_prefix "lsg", the LSG keys (given or the
 *              authors' defaults), max_position_embeddings, _name_or_path
 *   tokenizer  tokenizer_config.json's model_max_length = max_len; the
 *              other tokenizer files and generation_config.json copied
 *
 * An LSG-BART directory is extended instead (the authors' --resize_lsg):
 * only the position tables grow; its global embeddings and LSG keys stay
 * unless options change the keys. The authors' modeling_lsg_bart.py is
 * not written (lc does not ship their code; see lc-convert(1)).
 */
#ifndef LC_LSGCONV_H
#define LC_LSGCONV_H

#include <stdint.h>

#include "base/err.h"

typedef struct lsgconv_opts {
	int max_len;                  /* new max_position_embeddings */
	/* LSG keys; -1 (NULL): the source's, else the authors' default */
	int block_size, sparse_block_size, sparsity_factor, num_global_tokens;
	const char *sparsity_type;
	const char *set[16];          /* further config keys, "key=JSON value" */
	int nset;
	const char *name;             /* _name_or_path; NULL: dst as given */
	/* the tokenizer's ids (the converter reads them from it): <s> (else
	 * its cls token, else config.json's bos_token_id) and <mask>; a BART
	 * source needs mask_id; -1: none */
	int32_t bos_id, mask_id;
	void (*progress)(void *ctx, const char *what);
	void *ctx;
} lsgconv_opts;

void lsgconv_opts_default(lsgconv_opts *o);

/* A --set "KEY=JSON value" well formed (KEY 1 to LSG_SET_KEY - 1 bytes, the
 * value JSON); -1 and err if not. */
#define LSG_SET_KEY 128
int lsg_set_check(const char *kv, lc_err *err);

/* Converts the model directory src into a new directory dst (which must
 * not exist; it appears whole or not at all). */
int lsg_convert(const char *src, const char *dst, const lsgconv_opts *o, lc_err *err);

#endif
