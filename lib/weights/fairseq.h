/*
 * fairseq: a fairseq checkpoint (.pt: BART, BART-LS's model_*.pt) as a
 * model: its state dict (torchzip.h, checkpoint mode: state["model"]) and
 * its arguments translated into config.json keys, so that the
 * architecture's config parser (arch/arch.h) reads them as it reads a
 * config.json.
 *
 * The arguments: state["cfg"]["model"] (fairseq >= 0.10: an
 * argparse.Namespace for legacy models such as BART, or a dict / omegaconf
 * DictConfig), else state["args"] (an argparse.Namespace, older fairseq).
 * A BART architecture (arch bart_*) only:
 *
 *   model_type         "bart_ls" when pooling_layers > 0 or use_xformers
 *                      (block attention; fairseq resets use_xformers to
 *                      false after building the encoder, so pooling_layers
 *                      is what the released BART-LS checkpoints show), else
 *                      "bart"
 *   d_model            encoder_embed_dim (decoder_embed_dim, decoder_input_dim
 *                      and decoder_output_dim must be the same)
 *   encoder_layers, decoder_layers, encoder_attention_heads,
 *   decoder_attention_heads
 *   encoder_ffn_dim, decoder_ffn_dim   encoder_/decoder_ffn_embed_dim
 *   vocab_size         the rows of encoder.embed_tokens.weight
 *   max_position_embeddings            max_source_positions
 *   max_decoder_position_embeddings    max_target_positions (BART: must equal
 *                                      max_source_positions)
 *   activation_function  activation_fn (gelu, gelu_accurate/gelu_fast ->
 *                      gelu_new, relu, swish -> silu)
 *   scale_embedding    !no_scale_embedding
 *   tie_word_embeddings  share_decoder_input_output_embed
 *   normalize_before, layernorm_embedding   as the arguments say
 *   pad 1, bos 0, eos 2, decoder_start 2 (fairseq's Dictionary)
 *   BART-LS: block_size (xformer_config's, default 1024), pooling_layers,
 *   pool_kernel 18, pool_stride 12, pool_padding 9
 *
 * Refused, naming the argument: a missing or mistyped one, a value that is
 * an opaque object (an enum, a numpy scalar), an architecture other than
 * BART's, pre-norm layers (encoder_/decoder_normalize_before), no
 * layernorm_embedding, sinusoidal or no positions, separate encoder and
 * decoder embeddings (share_all_embeddings false), an adaptive softmax,
 * ALiBi, block_attention / top_down encoders, an attention_name other than
 * block_noglobal, an unreadable xformer_config.
 */
#ifndef LC_FAIRSEQ_H
#define LC_FAIRSEQ_H

#include <stddef.h>

#include <jansson.h>

#include "base/err.h"
#include "weights/torchzip.h"

/* The config.json keys of checkpoint f (opened with tz_open_ckpt(path,
 * "model")); a new reference, or NULL and err naming the file and the
 * argument. *src (if non-NULL) gets where the arguments were read:
 * "cfg.model" or "args". */
json_t *fs_config(const tz_file *f, const char *label, const char **src, lc_err *err);

#endif
