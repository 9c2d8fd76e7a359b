/*
 * bpe: byte-level BPE, the tokenizer of GPT-2, RoBERTa and BART, with the
 * ids and text of transformers' GPT2Tokenizer and BartTokenizer (4.36).
 *
 * Files, from a model directory: vocab.json + merges.txt (the slow
 * tokenizer's files; preferred) or tokenizer.json (the fast tokenizer's:
 * model.vocab, model.merges, added_tokens); tokenizer_config.json
 * (add_prefix_space, added_tokens_decoder, tokenizer_class,
 * clean_up_tokenization_spaces) when present; a tokenizer saved before
 * transformers 4.34 (no added_tokens_decoder) also has its roles in
 * special_tokens_map.json, which 4.36 reads only then, and a slow one takes
 * its added tokens from added_tokens.json, then from tokenizer.json's
 * added_tokens where there is one, merged by id, as 4.36 does;
 * a role neither names (bos_token, ...) takes the class's default, as its
 * constructor does: BART's <s> </s> <unk> <pad> <mask> where the
 * vocabulary has them, else GPT-2's <|endoftext|> for bos, eos and unk.
 * Every file is checked as it is read (JSON syntax, types, id ranges,
 * merge lines of exactly two symbols, sizes) and refused with a message.
 *
 * Encoding, as PreTrainedTokenizer.tokenize + convert_tokens_to_ids:
 *   1. ill-formed UTF-8 becomes U+FFFD, as Python's decode(errors="replace");
 *   2. add_prefix_space: a space is put before the text (BART's and
 *      RoBERTa's: only before a text that does not start with whitespace);
 *   3. added (special) tokens are split out, leftmost-longest; one with
 *      lstrip (BART's <mask>) strips the whitespace (str.isspace) before it,
 *      rstrip the whitespace after it;
 *   4. the rest is cut by GPT-2's pattern
 *        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      (case-sensitive; \s is Unicode White_Space, as in Python's regex
 *      module) through PCRE2 with its Unicode tables (bpe_unicode_version);
 *   5. each piece's UTF-8 bytes are merged by rank, every occurrence of the
 *      best pair per pass, left to right (GPT2Tokenizer.bpe), and looked
 *      up in the vocabulary (unknown: the unk token's id).
 * With BPE_ENC_SPECIAL, BART's and RoBERTa's <s> ... </s> wrap the ids
 * (GPT-2 adds nothing).
 *
 * fairseq's BART (its checkpoints' directories): encoder.json + vocab.bpe
 * (GPT-2's vocab.json and merges.txt under fairseq's names) and dict.txt,
 * fairseq's Dictionary ("SYMBOL COUNT [#fairseq:overwrite]" lines, the
 * symbols GPT-2 ids in decimal). The ids are then fairseq's: <s> 0, <pad> 1,
 * </s> 2, <unk> 3, dict.txt's lines from 4 in order, then <mask> (added as
 * the denoising task does, unless listed). Encoding is the hub interface's
 * encode(): GPT-2 BPE with no added tokens and no prefix space (text such
 * as "<s>" or "<|endoftext|>" is plain text), each GPT-2 id looked up in the
 * dictionary (absent: <unk>), <s> ... </s> with BPE_ENC_SPECIAL. Decoding
 * is its decode(): <s>, </s> (and <pad>) dropped when skipping specials,
 * other symbols that name no GPT-2 id (<unk>, <mask>) written as their
 * text; no clean-up. Decoding joins the tokens, maps the byte-level
 * alphabet back to bytes and decodes them as UTF-8 with errors="replace";
 * then, optionally, transformers' clean_up_tokenization.
 */
#ifndef LC_BPE_H
#define LC_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct bpe_model bpe_model;

/* The files of a byte-level BPE tokenizer in a model directory, which a
 * copy of the tokenizer carries: transformers', then fairseq's. */
#define BPE_HF_FILES "vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", \
	"special_tokens_map.json", "added_tokens.json"
#define BPE_FAIRSEQ_FILES "dict.txt", "encoder.json", "vocab.bpe"

/* The files of a tokenizer, held in memory; a NULL buffer is absent. */
typedef struct bpe_files {
	const char *vocab, *merges;            /* vocab.json, merges.txt */
	size_t vocab_len, merges_len;
	const char *tokenizer;                 /* tokenizer.json: the model when vocab is
	                                          absent; with it, only its added_tokens,
	                                          where config has no added_tokens_decoder */
	size_t tokenizer_len;
	const char *config, *special;          /* tokenizer_config.json, special_tokens_map.json */
	size_t config_len, special_len;
	const char *added;                     /* added_tokens.json (with vocab, when config
	                                          has no added_tokens_decoder) */
	size_t added_len;
	const char *unread;                    /* why tokenizer.json or added_tokens.json
	                                          beside vocab could not be read: an error
	                                          only when they are needed, or NULL */
	const char *dict;                      /* fairseq's dict.txt: then vocab, merges are
	                                          encoder.json, vocab.bpe, nothing else is read */
	size_t dict_len;
	const char *label;                     /* names the tokenizer in messages */
} bpe_files;

#define BPE_MAX_FILE (256u << 20)          /* bytes of one tokenizer file accepted */

bpe_model *bpe_load(const bpe_files *f, lc_err *err);
/* The files of directory dir (fairseq's dict.txt + encoder.json + vocab.bpe
 * first); NULL and err when it has none. */
bpe_model *bpe_load_dir(const char *dir, lc_err *err);
/* 1 if dir holds a byte-level BPE tokenizer's files. */
int bpe_dir_has(const char *dir);
void bpe_free(bpe_model *m);

int32_t bpe_vocab_size(const bpe_model *m);   /* 1 + the largest id */
int32_t bpe_bos_id(const bpe_model *m);       /* -1 when none */
int32_t bpe_eos_id(const bpe_model *m);
int32_t bpe_pad_id(const bpe_model *m);
int32_t bpe_cls_id(const bpe_model *m);       /* cls_token */
int32_t bpe_sep_id(const bpe_model *m);       /* sep_token */
int32_t bpe_mask_id(const bpe_model *m);      /* mask_token (BART's <mask>) */
/* Whether encoding wraps a text in cls_token ... sep_token (<s> ... </s>),
 * as BartTokenizer's and RobertaTokenizer's build_inputs_with_special_tokens
 * do (and a tokenizer.json's RobertaProcessing, with its own cls and sep). */
int bpe_wraps(const bpe_model *m);
int bpe_add_prefix_space(const bpe_model *m);
int bpe_cleans_up(const bpe_model *m);        /* clean_up_tokenization_spaces */
const char *bpe_fingerprint(const bpe_model *m);
/* The Unicode version of PCRE2's tables, which decides \p{L} and \p{N}. */
const char *bpe_unicode_version(void);
/* The token of an id (byte-level alphabet); NULL if out of range. */
const char *bpe_token(const bpe_model *m, int32_t id, size_t *len);
int bpe_is_special(const bpe_model *m, int32_t id);

enum {
	BPE_ENC_SPECIAL = 1,    /* wrap in <s> ... </s> when the tokenizer does */
	BPE_ENC_NO_EOS = 2,     /* with BPE_ENC_SPECIAL: no </s> */
	BPE_ENC_PIECES = 4,     /* also the tokens, joined by ' ' */
	BPE_ENC_PREFIX = 8,     /* add_prefix_space, whatever the files say */
};

typedef struct bpe_enc {
	int32_t *ids;           /* [n] */
	size_t n;
	char *pieces;           /* [plen] + NUL with BPE_ENC_PIECES */
	size_t plen;
	/* private */
	size_t icap, pcap;
	char *buf;              /* sanitized text */
	size_t bcap;
	void *match;            /* PCRE2 match data */
	void *parts;            /* the added tokens' split (bpe.c) */
	size_t nparts, partcap;
	char *join;             /* a part's pieces joined */
	size_t jcap;
} bpe_enc;

/* Not thread-safe for one model (its cache); use one model per thread. */
int bpe_encode(bpe_model *m, const char *text, size_t len, unsigned flags, bpe_enc *e,
               lc_err *err);
void bpe_enc_free(bpe_enc *e);

enum {
	BPE_DEC_SKIP_SPECIAL = 1,   /* leave out special tokens */
	BPE_DEC_CLEANUP = 2,        /* " ." -> "." and the others of clean_up_tokenization */
};

/* Decodes ids[n] into *out (malloc'd, NUL-terminated; *cap reused). Fails
 * on an id out of range, naming it. */
int bpe_decode(const bpe_model *m, const int32_t *ids, size_t n, unsigned flags, char **out,
               size_t *outlen, size_t *cap, lc_err *err);

#endif
