/*
 * spm_int: the inside of spm (spm.h), shared by spm_load.c (model file,
 * tries), spm_norm.c (normalizer) and spm.c (encoder, decoder). Not for
 * use outside the spm module.
 */
#ifndef LC_SPM_INT_H
#define LC_SPM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "text/spm.h"

/* A normalizer: NormalizerSpec plus its decoded character map. */
typedef struct spm_norm {
	const uint32_t *units;  /* [nunits] darts-clone double-array units (host order) */
	uint32_t nunits;
	const char *repl;       /* [nrepl] NUL-separated replacement strings */
	uint32_t nrepl;
	int add_dummy_prefix, remove_extra_ws, escape_ws;
	int treat_ws_suffix;    /* from the TrainerSpec (normalizer only) */
} spm_norm;

/* One piece. */
typedef struct spm_piece {
	uint32_t off, len;      /* text at m->strs + off */
	float score;
	uint8_t type;           /* enum spm_type */
} spm_pc;

/* Double-array trie over the pieces that the lattice can use (normal,
 * user-defined, unused): transition s --c--> t iff t = da[s].base + c
 * and da[t].check == s; da[t].val is the piece id ending at t or -1. */
typedef struct spm_da {
	int32_t base, check, val;
} spm_da;

/* Open-addressing map from piece text to id (one per id map). */
typedef struct spm_map {
	int32_t *slot;          /* [cap] ids, -1 empty */
	uint32_t cap;           /* power of two */
} spm_map;

struct spm_model {
	char *strs;             /* all piece texts and spec strings */
	spm_pc *pieces;      /* [npieces] */
	int32_t npieces;

	/* TrainerSpec */
	int model_type, byte_fallback, treat_ws_suffix;
	char *unk_surface, *eos_piece, *pad_piece;

	/* NormalizerSpec (normalizer_spec) and denormalizer_spec */
	spm_norm norm, denorm;
	int has_denorm;
	uint32_t *cm_units[2];  /* owned storage of the two character maps */
	char *cm_repl[2];

	/* derived */
	int32_t unk_id, eos_id, pad_id;
	float min_score, max_score;
	int32_t byte_id[256];   /* byte fallback pieces, -1 if absent */
	int has_user;           /* any user-defined piece */
	int32_t extra_base;     /* npieces when <extra_id_N> markers map, else -1 */
	char extra_text[SPM_EXTRA_IDS][16];   /* "<extra_id_N>" */
	spm_da *da;             /* [nda] */
	uint32_t nda;
	uint32_t max_key;       /* longest piece in the trie, bytes */
	spm_map normal_map, reserved_map;
	char fp[17];
};

/* The length of the longest user-defined piece that prefixes p[len]
 * (PrefixMatcher::PrefixMatch), 0 if none. */
size_t spm_trie_longest_user(const spm_model *m, const uint8_t *p, size_t len);

/* SentencePiece's DecodeUTF8 validity: the length of the character at
 * p[len] (len > 0) and whether it is valid (U+FFFD itself counts valid). */
int spm_utf8_valid(const uint8_t *p, size_t len, size_t *mblen);

/* Normalizer::NormalizePrefix: the normalized form of the longest prefix
 * of p[len] (len > 0): *out[*outlen] (not NUL-terminated); returns the
 * bytes consumed (>= 1). m may be NULL (no user-defined symbols). */
size_t spm_norm_prefix(const spm_norm *n, const spm_model *m, const uint8_t *p,
                       size_t len, const char **out, size_t *outlen);

/* A growable byte buffer. */
typedef struct spm_buf {
	char *p;
	size_t len, cap;
} spm_buf;
int spm_buf_grow(spm_buf *b, size_t extra);   /* room for extra more bytes; -1 on OOM */

/* Streaming normalizer (Normalizer::Normalize): appends normalized text
 * to out. spm_normalize_more() processes input until `want` more bytes are
 * out or the input ends; *final gets how many bytes of out are final (a
 * trailing run of spaces is held back until it is known whether it is
 * trailing). done is set when everything is out. */
typedef struct spm_normst {
	const spm_norm *n;
	const spm_model *m;
	const uint8_t *in;
	size_t len, pos;
	int phase;              /* 0 leading, 1 body, 2 done */
	int is_prev_space;
} spm_normst;

void spm_normalize_init(spm_normst *st, const spm_norm *n, const spm_model *m,
                        const void *in, size_t len);
int spm_normalize_more(spm_normst *st, spm_buf *out, size_t want, size_t *final);
/* Whole-string convenience (used by the decoder's denormalizer and tests). */
int spm_normalize(const spm_norm *n, const spm_model *m, const void *in, size_t len,
                  spm_buf *out);

#endif
