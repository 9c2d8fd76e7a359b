/*
 * tokenizer: a model's tokenizer, whichever kind its directory holds:
 *
 *   spiece.model                          SentencePiece unigram (spm.h): T5, LOCOST
 *   vocab.json + merges.txt, or           byte-level BPE (bpe.h): GPT-2, RoBERTa,
 *   tokenizer.json                        BART and every BART-based model
 *   dict.txt + encoder.json + vocab.bpe   the same with fairseq's dictionary: the
 *                                         ids of fairseq's BART checkpoints (BART-LS)
 *
 * A directory with spiece.model is SentencePiece whatever else it holds.
 * What the programs ask of either: ids (and tokens) for a text, the text of
 * ids, the special ids, and a fingerprint that names it in streams.
 */
#ifndef LC_TOKENIZER_H
#define LC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct lc_tokenizer lc_tokenizer;

enum tok_kind { TOK_SPM = 1, TOK_BPE = 2 };

/* Finds and loads a tokenizer: opt (a model directory, a .model file, or
 * a tokenizer.json / vocab.json / merges.txt / fairseq dict.txt, encoder.json
 * or vocab.bpe file, whose directory is read) if non-NULL, else $LC_TOKENIZER (the same forms), else the
 * share directory's spiece.model (base/share.h: $LC_SHARE, the build
 * tree's share/, the installed one). Messages name the file and where its
 * name came from, the option that gave it named as flag ("-t"); tok_open's
 * option is -m. */
lc_tokenizer *tok_open_as(const char *opt, const char *flag, lc_err *err);
lc_tokenizer *tok_open(const char *opt, lc_err *err);
/* The tokenizer of model directory dir; NULL with *none set (and err
 * saying so) when dir holds no tokenizer files. When dir has a
 * config.json, its vocab_size must cover the tokenizer's ids (all but
 * the special tokens at the end of the table, like bart-large-cnn's
 * <mask>): else an error naming both. */
lc_tokenizer *tok_open_dir(const char *dir, int *none, lc_err *err);
/* The tokenizer for model directory dir: opt if given (as tok_open_as),
 * else dir's, else tok_open's defaults. NULL and err when it fails; with
 * *none set, the failure is that there is no tokenizer anywhere (rather
 * than a broken one). */
lc_tokenizer *tok_open_model(const char *opt, const char *flag, const char *dir, int *none,
                             lc_err *err);
void tok_free(lc_tokenizer *t);

enum tok_kind tok_kind(const lc_tokenizer *t);
const char *tok_kind_name(const lc_tokenizer *t);   /* "sentencepiece", "bpe" */
const char *tok_path(const lc_tokenizer *t);        /* the file or directory read */
const char *tok_fingerprint(const lc_tokenizer *t);
int32_t tok_vocab_size(const lc_tokenizer *t);
/* The ids a model must have rows for (a config.json's vocab_size at
 * least): every id but the special tokens that close the table (BART's
 * <mask> lies beyond bart-large-cnn's vocab_size of 50264). */
int32_t tok_model_rows(const lc_tokenizer *t);
/* 0 if a model of vocab_size rows has every id of t; else -1 with "the
 * tokenizer's ids go to N but the model's vocab_size is V: they are not
 * one model's" (the caller names the tokenizer or the model). */
int tok_fits_model(const lc_tokenizer *t, int64_t vocab_size, lc_err *err);
/* For writing a model's ids as text: tok_fits_model, and t spells the
 * model's ids, up to TOK_ROW_PAD rows beyond its last or 1% of the
 * model's rows, whichever is more (T5's 32128 rows for 32100 ids; a
 * BART-LS made for span corruption, 343 sentinel rows over BART's 50265);
 * else -1, "the model's ids go to V - 1 but the tokenizer spells N: they
 * are not one model's" (another model's tokenizer: 32K ids for 50K). */
#define TOK_ROW_PAD 128
int tok_spells_model(const lc_tokenizer *t, int64_t vocab_size, lc_err *err);
/* The id a document's ids end with (-1 if none): SentencePiece's </s>, a
 * wrapping BPE tokenizer's sep_token (BART's </s>), else the eos_token. */
int32_t tok_eos_id(const lc_tokenizer *t);
/* Whether tok_encode with flags ends the ids with the eos id it adds. */
int tok_adds_eos(const lc_tokenizer *t, unsigned flags);
/* The token of an id as the tokenizer spells it; NULL if out of range. */
const char *tok_piece(const lc_tokenizer *t, int32_t id, size_t *len);

enum {
	TOK_ENC_SPECIAL = 1,    /* the special ids the model expects: SentencePiece's
	                           </s>, BPE's <s> ... </s> (BART, RoBERTa; none for GPT-2) */
	TOK_ENC_NO_EOS = 2,     /* with TOK_ENC_SPECIAL: no end-of-sequence id */
	TOK_ENC_EXTRA = 4,      /* SentencePiece: map <extra_id_N> markers (T5) */
	TOK_ENC_PIECES = 8,     /* also the tokens, joined by ' ' */
	TOK_ENC_PREFIX = 16,    /* BPE: a space before the text (add_prefix_space) */
};

typedef struct tok_enc {
	int32_t *ids;           /* [n] */
	size_t n;
	char *pieces;           /* [plen] + NUL with TOK_ENC_PIECES */
	size_t plen;
	/* private */
	void *impl;
} tok_enc;

/* Not thread-safe for one tokenizer. */
int tok_encode(lc_tokenizer *t, const char *text, size_t len, unsigned flags, tok_enc *e,
               lc_err *err);
void tok_enc_free(tok_enc *e);

enum {
	TOK_DEC_KEEP_SPECIAL = 1,   /* BPE: keep <s>, </s>, ... in the text */
	TOK_DEC_NO_CLEANUP = 2,     /* BPE: no clean_up_tokenization, whatever the files say */
	TOK_DEC_CLEANUP = 4,        /* BPE: clean_up_tokenization, whatever the files say */
};

/* ids[n] to text in *out (malloc'd, NUL-terminated; *cap reused). A
 * SentencePiece tokenizer decodes as spm_decode does; a BPE one as
 * transformers' decode(ids, skip_special_tokens=True) with the tokenizer's
 * clean_up_tokenization_spaces, unless flags say otherwise. */
int tok_decode(const lc_tokenizer *t, const int32_t *ids, size_t n, unsigned flags, char **out,
               size_t *outlen, size_t *cap, lc_err *err);

#endif
