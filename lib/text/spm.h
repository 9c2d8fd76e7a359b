/*
 * spm: SentencePiece unigram tokenization, byte-exact with spm_encode and
 * spm_decode 0.1.97.
 *
 * spm_load() reads a SentencePiece `.model` file (a ModelProto protobuf)
 * directly: the pieces (text, score, type), the trainer and normalizer
 * fields that encoding and decoding use, the precompiled character map
 * (a darts-clone double array) of the normalizer and denormalizer.
 * Unknown fields are skipped; a malformed or inconsistent file is refused
 * with a message. Only unigram models are accepted.
 *
 * spm_encode() normalizes a text (character map, user-defined symbols,
 * dummy prefix, whitespace removal and escaping) and segments it with
 * SentencePiece's Viterbi (same float arithmetic and tie rules), merging
 * runs of unknown characters or spelling them as byte pieces. A long text
 * is processed in a sliding window: memory beyond the input and the
 * output ids stays small. spm_decode() is spm_decode's inverse.
 *
 * T5 extra ids: when the model has no piece "<extra_id_0>", the markers
 * "<extra_id_N>" (N = 0..99, no leading zeros) in the text map to id
 * npieces + 99 - N (32099 - N for T5), as the Hugging Face T5 tokenizer
 * does; the text between markers is encoded as separate sentences.
 */
#ifndef LC_SPM_H
#define LC_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct spm_model spm_model;

/* Piece types, as in sentencepiece_model.proto. */
enum spm_type {
	SPM_NORMAL = 1, SPM_UNKNOWN = 2, SPM_CONTROL = 3, SPM_USER_DEFINED = 4,
	SPM_UNUSED = 5, SPM_BYTE = 6
};

#define SPM_EXTRA_IDS 100      /* <extra_id_0> .. <extra_id_99> */

/* --- models --- */
/* Parses buf[len] (copied as needed; buf may be freed afterwards). */
spm_model *spm_load(const void *buf, size_t len, lc_err *err);
spm_model *spm_load_file(const char *path, lc_err *err);
void spm_free(spm_model *m);

/* (Finding a model's tokenizer, SentencePiece or not: tokenizer.h.) */

int32_t spm_npieces(const spm_model *m);       /* pieces in the model */
/* npieces, plus SPM_EXTRA_IDS when the extra ids are in use. */
int32_t spm_vocab_size(const spm_model *m);
/* The piece of an id (extra ids give "<extra_id_N>"); NULL if out of range. */
const char *spm_piece(const spm_model *m, int32_t id, size_t *len);
int spm_type_of(const spm_model *m, int32_t id);   /* enum spm_type; 0 if out of range */
/* SentencePiece's PieceToId: the id, or the unk id when absent. */
int32_t spm_piece_to_id(const spm_model *m, const char *piece, size_t len);
int32_t spm_unk_id(const spm_model *m);
int32_t spm_eos_id(const spm_model *m);         /* -1 if the model has no eos piece */
int32_t spm_pad_id(const spm_model *m);         /* -1 if none */
/* 16 hex digits: FNV-1a 64 of the .model bytes; names the tokenizer in streams. */
const char *spm_fingerprint(const spm_model *m);

/* --- encoding --- */
enum {
	SPM_ENC_EOS = 1,        /* append the eos id (fails if the model has none) */
	SPM_ENC_EXTRA = 2,      /* map <extra_id_N> markers (when the model allows) */
	SPM_ENC_PIECES = 4      /* also build `pieces`: the pieces joined by ' ' */
};

/* Output of spm_encode, and work buffers reused between calls. Zero it
 * before the first use; spm_enc_free() at the end. */
typedef struct spm_enc {
	int32_t *ids;           /* [n] token ids */
	size_t n;
	char *pieces;           /* [plen] + NUL (never NULL) with SPM_ENC_PIECES; an unknown
	                           run shows its normalized text, as spm_encode does */
	size_t plen;
	/* private */
	size_t icap, pcap;
	struct spm_work *w;
} spm_enc;

/* Encodes text[len] as one document, replacing e->ids (and e->pieces). */
int spm_encode(const spm_model *m, const char *text, size_t len, unsigned flags,
               spm_enc *e, lc_err *err);
void spm_enc_free(spm_enc *e);

/* --- decoding --- */
/* Decodes ids[n] into *out (malloc'd, NUL-terminated, *outlen bytes; the
 * previous buffer *out of capacity *cap is reused). Fails on an id out of
 * range, naming it. */
int spm_decode(const spm_model *m, const int32_t *ids, size_t n,
               char **out, size_t *outlen, size_t *cap, lc_err *err);

#endif
