/*
 * bpe_int: what the parts of the byte-level BPE tokenizer share (not part
 * of lib's interface): the model struct, its hash maps (bpe_map.c), the
 * byte-level alphabet and messages (bpe.c); bpe_load.c reads the files,
 * bpe.c encodes and decodes.
 */
#ifndef LC_BPE_INT_H
#define LC_BPE_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8

#include <stddef.h>
#include <stdint.h>

#include <pcre2.h>

#include "base/err.h"
#include "text/bpe.h"

#define MAX_ID (1 << 24)            /* ids accepted: [0, 2^24) */
#define CACHE_MAX_IDS (1u << 22)    /* ids kept in the word cache before it is cleared */

/* Byte strings -> int64 values; keys live in one pool. */
typedef struct smap {
	uint64_t *slot;             /* [cap]: 0 empty, else index + 1 into ent */
	uint64_t cap, n;
	struct sent { uint64_t off, len, hash; int64_t val; } *ent;
	uint64_t ecap;
	char *pool;
	uint64_t plen, pcap;
} smap;

/* uint64 keys -> uint64 values (the merges: a pair of symbols). */
typedef struct umap {
	uint64_t *key, *val;        /* [cap]; key 0 is empty (keys are stored + 1) */
	uint64_t cap, n;
} umap;

void smap_free(smap *m);
/* The value of k[len], or -1. */
int64_t smap_get(const smap *m, const void *k, size_t len);
/* Sets k -> v (replacing); -1 when out of memory. */
int smap_put(smap *m, const void *k, size_t len, int64_t v);
/* The key of entry e (in insertion order). */
const char *smap_key(const smap *m, int64_t e, size_t *len);
void umap_free(umap *m);
/* 1 and *v when k is present, else 0. */
int umap_get(const umap *m, uint64_t k, uint64_t *v);
/* Sets k -> v; -1 when out of memory. */
int umap_put(umap *m, uint64_t k, uint64_t v);

#define BPE_MAX_ADDED (1 << 20)     /* added tokens accepted */

/* What decoding does with a token (bpe_model.special): leaves it out
 * under skip_special_tokens; decodes it as a text of its own (the slow
 * tokenizer's legacy added tokens). */
enum { BPE_SP_SKIP = 1, BPE_SP_APART = 2 };

typedef struct added {
	char *content;              /* UTF-8 */
	size_t len;
	int32_t id;
	int lstrip, rstrip, single, special;   /* single: single_word */
	int legacy;                 /* from added_tokens.json: a role's flags replace its own */
} added;

struct bpe_model {
	char label[256];
	/* the vocabulary: token (byte-level alphabet, UTF-8) -> id, and back */
	smap vocab;
	char **tok;                 /* [nid] or NULL */
	size_t *toklen;
	int32_t nid;
	int32_t nvocab;             /* the vocabulary's own ids: nid less the added after it */
	size_t idcap;               /* room in tok, toklen and special (extend_ids) */
	/* symbols: raw byte strings that BPE builds, and their vocabulary ids */
	smap sym;
	int32_t *sym_id;            /* [nsym]: vocabulary id, or -1 */
	uint64_t nsym, symcap;
	umap merge;                 /* (a << 32 | b) -> rank << 32 | result symbol */
	added *add;                 /* [nadd], longest content first: the order the
	                               fingerprint hashes them in, kept so that the
	                               streams made before still match */
	int nadd;
	size_t addcap;
	smap addmap;                /* content -> index in add (while loading) */
	int32_t *lex;               /* [nadd]: indices in add, contents in byte order */
	size_t maxadd;              /* the longest content's bytes */
	int32_t *addix;             /* [nid]: the first added token of each id, or -1 */
	unsigned char *special;     /* [nid]: BPE_SP_* bits */
	int32_t bos, eos, pad, unk, cls, sep, mask;
	int wrap, prefix, cleanup;
	uint32_t byte_enc[256];     /* byte -> code point of the byte-level alphabet */
	int16_t byte_dec[324];      /* code point -> byte, -1 */
	pcre2_code *re;
	char fp[17];
	/* the word cache: raw bytes -> offset into ids (count first) */
	smap cache;
	int32_t *cids;
	uint64_t ncids, ccap;
};

/* The lookups of the added tokens (lex, addix), once add is final;
 * -1 when out of memory. */
int bpe_index_added(bpe_model *m);

/* fairseq's dict.txt p[len] over the loaded GPT-2 encoder: the ids become
 * fairseq's (bpe_dict.c). */
int bpe_use_dict(bpe_model *m, const char *p, size_t len, lc_err *err);
/* "LABEL: message" into err (LABEL names the tokenizer files). */
void fail_label(const bpe_model *m, lc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Raw bytes as a byte-level token: out [2 len] (each code point < 0x800). */
size_t to_alphabet(const bpe_model *m, const unsigned char *b, size_t len, char *out);

#endif
