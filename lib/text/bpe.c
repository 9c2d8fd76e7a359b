/*
 * bpe.c: byte-level BPE (see bpe.h).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/bpe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <pcre2.h>

#include "text/utf8.h"

#define MAX_ID (1 << 24)            /* ids accepted: [0, 2^24) */
#define CACHE_MAX_IDS (1u << 22)    /* ids kept in the word cache before it is cleared */

/* ---------------------------------------------------------- hash maps */

/* Byte strings -> int64 values; keys live in one pool. */
typedef struct smap {
	uint64_t *slot;             /* [cap]: 0 empty, else index + 1 into ent */
	uint64_t cap, n;
	struct sent { uint64_t off, len, hash; int64_t val; } *ent;
	uint64_t ecap;
	char *pool;
	uint64_t plen, pcap;
} smap;

static uint64_t hash64(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h ^ (h >> 32);
}

static void smap_free(smap *m)
{
	free(m->slot);
	free(m->ent);
	free(m->pool);
	memset(m, 0, sizeof *m);
}

static int64_t smap_get(const smap *m, const void *k, size_t len)
{
	uint64_t h, i;

	if (!m->cap)
		return -1;
	h = hash64(k, len);
	for (i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		uint64_t s = m->slot[i];
		const struct sent *e;
		if (!s)
			return -1;
		e = &m->ent[s - 1];
		if (e->hash == h && e->len == len && memcmp(m->pool + e->off, k, len) == 0)
			return e->val;
	}
}

static int smap_grow(smap *m)
{
	uint64_t nc = m->cap ? 2 * m->cap : 1024, *ns = calloc(nc, sizeof *ns);

	if (!ns)
		return -1;
	for (uint64_t e = 0; e < m->n; e++) {
		uint64_t i = m->ent[e].hash & (nc - 1);
		while (ns[i])
			i = (i + 1) & (nc - 1);
		ns[i] = e + 1;
	}
	free(m->slot);
	m->slot = ns;
	m->cap = nc;
	return 0;
}

/* Sets k -> v (replacing); -1 when out of memory. */
static int smap_put(smap *m, const void *k, size_t len, int64_t v)
{
	uint64_t h = hash64(k, len), i;

	if ((m->n + 1) * 2 > m->cap && smap_grow(m) < 0)
		return -1;
	for (i = h & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1)) {
		struct sent *e = &m->ent[m->slot[i] - 1];
		if (e->hash == h && e->len == len && memcmp(m->pool + e->off, k, len) == 0) {
			e->val = v;
			return 0;
		}
	}
	if (m->n == m->ecap) {
		uint64_t nc = m->ecap ? 2 * m->ecap : 1024;
		struct sent *ne = realloc(m->ent, nc * sizeof *ne);
		if (!ne)
			return -1;
		m->ent = ne;
		m->ecap = nc;
	}
	if (m->plen + len + 1 > m->pcap) {
		uint64_t nc = m->pcap ? 2 * m->pcap : 65536;
		char *np;
		while (nc < m->plen + len + 1)
			nc *= 2;
		if (!(np = realloc(m->pool, nc)))
			return -1;
		m->pool = np;
		m->pcap = nc;
	}
	memcpy(m->pool + m->plen, k, len);
	m->pool[m->plen + len] = 0;
	m->ent[m->n] = (struct sent){ m->plen, len, h, v };
	m->plen += len + 1;
	m->slot[i] = ++m->n;
	return 0;
}

static const char *smap_key(const smap *m, int64_t e, size_t *len)
{
	*len = m->ent[e].len;
	return m->pool + m->ent[e].off;
}

/* uint64 keys -> uint64 values (the merges: a pair of symbols). */
typedef struct umap {
	uint64_t *key, *val;        /* [cap]; key 0 is empty (keys are stored + 1) */
	uint64_t cap, n;
} umap;

static void umap_free(umap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int umap_get(const umap *m, uint64_t k, uint64_t *v)
{
	if (!m->cap)
		return 0;
	k++;
	for (uint64_t i = mix(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->key[i])
			return 0;
		if (m->key[i] == k) {
			*v = m->val[i];
			return 1;
		}
	}
}

static int umap_put(umap *m, uint64_t k, uint64_t v)
{
	uint64_t i;

	if ((m->n + 1) * 2 > m->cap) {
		uint64_t nc = m->cap ? 2 * m->cap : 1024;
		uint64_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		for (uint64_t j = 0; j < m->cap; j++)
			if (m->key[j]) {
				for (i = mix(m->key[j]) & (nc - 1); nk[i]; i = (i + 1) & (nc - 1))
					;
				nk[i] = m->key[j];
				nv[i] = m->val[j];
			}
		free(m->key);
		free(m->val);
		m->key = nk;
		m->val = nv;
		m->cap = nc;
	}
	k++;
	for (i = mix(k) & (m->cap - 1); m->key[i] && m->key[i] != k; i = (i + 1) & (m->cap - 1))
		;
	if (!m->key[i])
		m->n++;
	m->key[i] = k;
	m->val[i] = v;
	return 0;
}

/* -------------------------------------------------------------- model */

typedef struct added {
	char *content;              /* UTF-8 */
	size_t len;
	int32_t id;
	int lstrip, rstrip, special;
} added;

struct bpe_model {
	char label[256];
	/* the vocabulary: token (byte-level alphabet, UTF-8) -> id, and back */
	smap vocab;
	char **tok;                 /* [nid] or NULL */
	size_t *toklen;
	int32_t nid;
	/* symbols: raw byte strings that BPE builds, and their vocabulary ids */
	smap sym;
	int32_t *sym_id;            /* [nsym]: vocabulary id, or -1 */
	uint64_t nsym, symcap;
	umap merge;                 /* (a << 32 | b) -> rank << 32 | result symbol */
	added *add;                 /* [nadd], longest content first */
	int nadd;
	unsigned char *special;     /* [nid]: 1 for special tokens */
	int32_t bos, eos, pad, unk, cls, mask;
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

static void fail_label(const bpe_model *m, lc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_label(const bpe_model *m, lc_err *err, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	lc_fail(err, "%s: %s", m->label, msg);
}

void bpe_free(bpe_model *m)
{
	if (!m)
		return;
	smap_free(&m->vocab);
	for (int32_t i = 0; m->tok && i < m->nid; i++)
		free(m->tok[i]);
	free(m->tok);
	free(m->toklen);
	smap_free(&m->sym);
	free(m->sym_id);
	umap_free(&m->merge);
	for (int i = 0; i < m->nadd; i++)
		free(m->add[i].content);
	free(m->add);
	free(m->special);
	pcre2_code_free(m->re);
	smap_free(&m->cache);
	free(m->cids);
	free(m);
}

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
 * others for U+0100 upwards in byte order. */
static void byte_maps(bpe_model *m)
{
	int n = 0;

	for (int i = 0; i < 324; i++)
		m->byte_dec[i] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
		m->byte_enc[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
		m->byte_dec[m->byte_enc[b]] = (int16_t)b;
	}
}

/* A byte-level token (UTF-8 of the alphabet) as raw bytes: out [len]; -1
 * if a character is not of the alphabet. */
static int64_t to_raw(const bpe_model *m, const char *s, size_t len, unsigned char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = utf8_char(p + i, len - i, &cp);
		if (!n || cp >= 324 || m->byte_dec[cp] < 0)
			return -1;
		out[o++] = (unsigned char)m->byte_dec[cp];
		i += n;
	}
	return (int64_t)o;
}

/* Raw bytes as a byte-level token: out [2 len] (each code point < 0x800). */
static size_t to_alphabet(const bpe_model *m, const unsigned char *b, size_t len, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		uint32_t c = m->byte_enc[b[i]];
		if (c < 0x80) {
			out[o++] = (char)c;
		} else {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	return o;
}

/* The symbol of raw bytes b[len], interned; -1 when out of memory. */
static int64_t intern(bpe_model *m, const unsigned char *b, size_t len)
{
	int64_t s = smap_get(&m->sym, b, len);
	char *alpha;
	int64_t id;

	if (s >= 0)
		return s;
	if (m->nsym == m->symcap) {
		uint64_t nc = m->symcap ? 2 * m->symcap : 4096;
		int32_t *n = realloc(m->sym_id, nc * sizeof *n);
		if (!n)
			return -1;
		m->sym_id = n;
		m->symcap = nc;
	}
	if (!(alpha = malloc(2 * len + 1)))
		return -1;
	id = smap_get(&m->vocab, alpha, to_alphabet(m, b, len, alpha));
	free(alpha);
	s = (int64_t)m->nsym;
	if (smap_put(&m->sym, b, len, s) < 0)
		return -1;
	m->sym_id[m->nsym++] = (int32_t)id;
	return s;
}

static json_t *parse_json(const bpe_model *m, const char *buf, size_t len, const char *what,
                          lc_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		fail_label(m, err, "%s: %s (line %d)", what, je.text, je.line);
	else if (!json_is_object(j)) {
		fail_label(m, err, "%s: not a JSON object", what);
		json_decref(j);
		j = NULL;
	}
	return j;
}

static int set_vocab(bpe_model *m, const json_t *v, const char *what, lc_err *err)
{
	const char *k;
	json_t *x;
	int32_t max = -1;

	if (!json_is_object(v))
		return fail_label(m, err, "%s: the vocabulary is not a JSON object", what), -1;
	if (json_object_size(v) == 0 || json_object_size(v) > MAX_ID)
		return fail_label(m, err, "%s: %zu vocabulary entries (1 to %d accepted)", what,
		                  json_object_size(v), MAX_ID), -1;
	json_object_foreach((json_t *)v, k, x) {
		json_int_t id;
		if (!json_is_integer(x) || (id = json_integer_value(x)) < 0 || id >= MAX_ID)
			return fail_label(m, err, "%s: token \"%.40s\": id must be an integer in [0, %d)",
			                  what, k, MAX_ID), -1;
		if (smap_put(&m->vocab, k, strlen(k), id) < 0)
			return lc_fail(err, "out of memory"), -1;
		if (id > max)
			max = (int32_t)id;
	}
	m->nid = max + 1;
	m->tok = calloc((size_t)m->nid, sizeof *m->tok);
	m->toklen = calloc((size_t)m->nid, sizeof *m->toklen);
	if (!m->tok || !m->toklen)
		return lc_fail(err, "out of memory"), -1;
	json_object_foreach((json_t *)v, k, x) {
		int32_t id = (int32_t)json_integer_value(x);
		if (m->tok[id])
			return fail_label(m, err, "%s: id %ld is given to two tokens", what, (long)id), -1;
		if (!(m->tok[id] = strdup(k)))
			return lc_fail(err, "out of memory"), -1;
		m->toklen[id] = strlen(k);
	}
	return 0;
}

/* One merge "a b" (rank r): the symbols in the byte-level alphabet. */
static int add_merge(bpe_model *m, const char *a, size_t al, const char *b, size_t bl,
                     uint64_t r, const char *what, lc_err *err)
{
	unsigned char *raw = malloc(al + bl + 1);
	int64_t la, lb, sa, sb, sab;

	if (!raw)
		return lc_fail(err, "out of memory");
	la = to_raw(m, a, al, raw);
	lb = la < 0 ? -1 : to_raw(m, b, bl, raw + la);
	if (la <= 0 || lb <= 0) {
		free(raw);
		return fail_label(m, err, "%s: merge %llu (\"%.*s %.*s\"): not two symbols of the "
		                  "byte-level alphabet", what, (unsigned long long)r + 1,
		                  (int)(al > 40 ? 40 : al), a, (int)(bl > 40 ? 40 : bl), b), -1;
	}
	sa = intern(m, raw, (size_t)la);
	sb = sa < 0 ? -1 : intern(m, raw + la, (size_t)lb);
	sab = sb < 0 ? -1 : intern(m, raw, (size_t)(la + lb));
	free(raw);
	if (sab < 0 || sab > UINT32_MAX ||
	    umap_put(&m->merge, (uint64_t)sa << 32 | (uint64_t)sb, r << 32 | (uint64_t)sab) < 0)
		return lc_fail(err, "out of memory");
	return 0;
}

/* merges.txt as GPT2Tokenizer reads it: split on "\n", the first line (the
 * "#version" header) and the last (empty after the final newline) dropped,
 * each line exactly two symbols separated by white space; a repeated pair
 * takes its last rank. */
static int read_merges_txt(bpe_model *m, const char *p, size_t len, lc_err *err)
{
	size_t i = 0, nl = 0, r = 0;
	const char *line;

	for (size_t k = 0; k < len; k++)
		if (p[k] == '\n')
			nl++;
	/* lines are nl + 1 pieces; keep pieces 1 .. nl - 1 */
	while (i < len && p[i] != '\n')
		i++;
	i++;
	for (size_t ln = 1; ln + 1 <= nl; ln++) {
		size_t end = i, f[4], fl[4], nf = 0, k;
		line = p + i;
		while (end < len && p[end] != '\n')
			end++;
		for (k = i; k < end;) {
			while (k < end && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\v' ||
			                   p[k] == '\f'))
				k++;
			if (k >= end)
				break;
			if (nf < 4)
				f[nf] = k;
			while (k < end && !(p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\v' ||
			                    p[k] == '\f'))
				k++;
			if (nf < 4)
				fl[nf] = k - f[nf];
			nf++;
		}
		if (nf != 2)
			return fail_label(m, err, "merges.txt: line %zu: %zu symbols (\"%.*s\"); a merge is "
			                  "two", ln + 1, nf, (int)((end - i) > 40 ? 40 : (end - i)), line), -1;
		if (add_merge(m, p + f[0], fl[0], p + f[1], fl[1], r++, "merges.txt", err) < 0)
			return -1;
		i = end + 1;
	}
	return 0;
}

static int read_merges_json(bpe_model *m, const json_t *a, lc_err *err)
{
	size_t r;
	json_t *x;

	if (!json_is_array(a))
		return fail_label(m, err, "tokenizer.json: model.merges is not a list"), -1;
	json_array_foreach((json_t *)a, r, x) {
		const char *s, *sp;
		if (json_is_string(x)) {
			s = json_string_value(x);
			if (!(sp = strchr(s, ' ')) || strchr(sp + 1, ' ') || sp == s || !sp[1])
				return fail_label(m, err, "tokenizer.json: merge %zu (\"%.40s\") is not two "
				                  "symbols", r + 1, s), -1;
			if (add_merge(m, s, (size_t)(sp - s), sp + 1, strlen(sp + 1), r, "tokenizer.json",
			              err) < 0)
				return -1;
		} else if (json_is_array(x) && json_array_size(x) == 2 &&
		           json_is_string(json_array_get(x, 0)) && json_is_string(json_array_get(x, 1))) {
			const char *a0 = json_string_value(json_array_get(x, 0));
			const char *a1 = json_string_value(json_array_get(x, 1));
			if (add_merge(m, a0, strlen(a0), a1, strlen(a1), r, "tokenizer.json", err) < 0)
				return -1;
		} else {
			return fail_label(m, err, "tokenizer.json: merge %zu is not two symbols", r + 1), -1;
		}
	}
	return 0;
}

/* Adds or updates an added token. */
static int add_token(bpe_model *m, const char *content, int32_t id, int lstrip, int rstrip,
                     int special, lc_err *err)
{
	added *a = NULL;

	if (!*content)
		return fail_label(m, err, "an added token is empty"), -1;
	if (id < 0 || id >= m->nid)
		return fail_label(m, err, "added token \"%.40s\": id %ld outside the vocabulary [0, %ld)",
		                  content, (long)id, (long)m->nid), -1;
	for (int i = 0; i < m->nadd; i++)
		if (!strcmp(m->add[i].content, content))
			a = &m->add[i];
	if (!a) {
		added *n = realloc(m->add, (size_t)(m->nadd + 1) * sizeof *n);
		if (!n)
			return lc_fail(err, "out of memory");
		m->add = n;
		a = &m->add[m->nadd++];
		memset(a, 0, sizeof *a);
		if (!(a->content = strdup(content)))
			return lc_fail(err, "out of memory");
		a->len = strlen(content);
	}
	a->id = id;
	a->lstrip = lstrip;
	a->rstrip = rstrip;
	a->special = special;
	if (!m->tok[id]) {
		/* an added token outside vocab.json gets its content as its token */
		if (!(m->tok[id] = strdup(content)))
			return lc_fail(err, "out of memory");
		m->toklen[id] = strlen(content);
	}
	return 0;
}

static int flag(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

/* "name_token" of a config: a string or {"content": ..., "lstrip": ...}.
 * Registers it as a special added token (lstrip from the object, or the
 * given default) and returns its id, or -1 when absent or not in the
 * vocabulary. */
static int32_t role(bpe_model *m, const json_t *cfg, const char *key, int dflt_lstrip,
                    lc_err *err, int *fail)
{
	const json_t *v = cfg ? json_object_get(cfg, key) : NULL;
	const char *content;
	int lstrip = dflt_lstrip, rstrip = 0;
	int64_t id;

	if (!v || json_is_null(v))
		return -1;
	if (json_is_string(v)) {
		content = json_string_value(v);
	} else if (json_is_object(v) && json_is_string(json_object_get(v, "content"))) {
		content = json_string_value(json_object_get(v, "content"));
		lstrip = flag(v, "lstrip");
		rstrip = flag(v, "rstrip");
	} else {
		fail_label(m, err, "\"%s\" must be a string or an object with \"content\"", key);
		*fail = 1;
		return -1;
	}
	for (int i = 0; i < m->nadd; i++)
		if (!strcmp(m->add[i].content, content))
			return m->add[i].id;
	if ((id = smap_get(&m->vocab, content, strlen(content))) < 0)
		return -1;
	if (add_token(m, content, (int32_t)id, lstrip, rstrip, 1, err) < 0)
		*fail = 1;
	return (int32_t)id;
}

static int32_t by_content(const bpe_model *m, const char *s)
{
	for (int i = 0; i < m->nadd; i++)
		if (!strcmp(m->add[i].content, s))
			return m->add[i].id;
	return (int32_t)smap_get(&m->vocab, s, strlen(s));
}

static int cmp_added(const void *a, const void *b)
{
	const added *x = a, *y = b;
	return x->len < y->len ? 1 : x->len > y->len ? -1 : strcmp(x->content, y->content);
}

/* \s of Python's regex module: Unicode White_Space. */
#define WS "\\t\\n\\x{0b}\\x{0c}\\r\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}" \
           "\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}"

static const char pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS
	"])|[" WS "]+";

const char *bpe_unicode_version(void)
{
	static char v[32];

	if (!v[0] && pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, v) < 0)
		snprintf(v, sizeof v, "?");
	return v;
}

bpe_model *bpe_load(const bpe_files *f, lc_err *err)
{
	bpe_model *m = calloc(1, sizeof *m);
	json_t *voc = NULL, *tj = NULL, *cfg = NULL, *sm = NULL;
	const json_t *merges_json = NULL, *vocab_json;
	uint64_t h = 0xcbf29ce484222325ull;
	int fail = 0, ec;
	PCRE2_SIZE eo;
	const char *cls = NULL;

	if (!m) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	snprintf(m->label, sizeof m->label, "%s", f->label ? f->label : "tokenizer");
	byte_maps(m);
	m->bos = m->eos = m->pad = m->unk = m->cls = m->mask = -1;
	if (f->vocab_len > BPE_MAX_FILE || f->merges_len > BPE_MAX_FILE ||
	    f->tokenizer_len > BPE_MAX_FILE || f->config_len > BPE_MAX_FILE ||
	    f->special_len > BPE_MAX_FILE) {
		fail_label(m, err, "a tokenizer file is larger than %u MiB", BPE_MAX_FILE >> 20);
		goto fail;
	}
	/* the fingerprint: FNV-1a over the files that decide the ids */
	{
		const char *b[3] = { f->vocab, f->vocab ? f->merges : f->tokenizer, f->config };
		size_t l[3] = { f->vocab_len, f->vocab ? f->merges_len : f->tokenizer_len, f->config_len };
		for (int i = 0; i < 3; i++)
			for (size_t k = 0; b[i] && k < l[i]; k++)
				h = (h ^ (unsigned char)b[i][k]) * 0x100000001b3ull;
		snprintf(m->fp, sizeof m->fp, "%016llx", (unsigned long long)h);
	}
	if (f->vocab && !f->merges) {
		fail_label(m, err, "vocab.json without merges.txt");
		goto fail;
	}
	if (f->vocab) {
		if (!(voc = parse_json(m, f->vocab, f->vocab_len, "vocab.json", err)))
			goto fail;
		vocab_json = voc;
	} else if (f->tokenizer) {
		const json_t *model, *type;
		if (!(tj = parse_json(m, f->tokenizer, f->tokenizer_len, "tokenizer.json", err)))
			goto fail;
		model = json_object_get(tj, "model");
		type = model ? json_object_get(model, "type") : NULL;
		if (!json_is_object(model) || (type && !(json_is_string(type) &&
		                                          !strcmp(json_string_value(type), "BPE")))) {
			fail_label(m, err, "tokenizer.json: not a BPE model");
			goto fail;
		}
		vocab_json = json_object_get(model, "vocab");
		merges_json = json_object_get(model, "merges");
	} else {
		fail_label(m, err, "no vocab.json and merges.txt, and no tokenizer.json");
		goto fail;
	}
	if (set_vocab(m, vocab_json, f->vocab ? "vocab.json" : "tokenizer.json", err) < 0)
		goto fail;
	/* every single byte is a symbol */
	for (int b = 0; b < 256; b++) {
		unsigned char c = (unsigned char)b;
		if (intern(m, &c, 1) < 0) {
			lc_fail(err, "out of memory");
			goto fail;
		}
	}
	if (f->vocab ? read_merges_txt(m, f->merges, f->merges_len, err) < 0
	             : read_merges_json(m, merges_json, err) < 0)
		goto fail;
	if (!(m->special = calloc((size_t)m->nid, 1))) {
		lc_fail(err, "out of memory");
		goto fail;
	}
	if (f->config && !(cfg = parse_json(m, f->config, f->config_len, "tokenizer_config.json", err)))
		goto fail;
	if (f->special && !(sm = parse_json(m, f->special, f->special_len,
	                                    "special_tokens_map.json", err)))
		goto fail;
	/* added tokens: tokenizer_config.json's added_tokens_decoder, or tokenizer.json's */
	{
		const json_t *ad = cfg ? json_object_get(cfg, "added_tokens_decoder") : NULL, *x;
		const char *k;
		size_t i;
		if (ad && json_is_object(ad)) {
			json_object_foreach((json_t *)ad, k, x) {
				char *end;
				long id = strtol(k, &end, 10);
				if (*end || !json_is_object(x) || !json_is_string(json_object_get(x, "content"))) {
					fail_label(m, err, "tokenizer_config.json: added_tokens_decoder \"%.20s\" "
					           "is not an id with a content", k);
					goto fail;
				}
				if (add_token(m, json_string_value(json_object_get(x, "content")), (int32_t)id,
				              flag(x, "lstrip"), flag(x, "rstrip"), flag(x, "special"), err) < 0)
					goto fail;
			}
		} else if (tj && json_is_array(json_object_get(tj, "added_tokens"))) {
			json_array_foreach(json_object_get(tj, "added_tokens"), i, x) {
				const json_t *id = json_object_get(x, "id"), *c = json_object_get(x, "content");
				if (!json_is_integer(id) || !json_is_string(c) || json_integer_value(id) < 0 ||
				    json_integer_value(id) >= MAX_ID) {
					fail_label(m, err, "tokenizer.json: added token %zu has no id or content",
					           i + 1);
					goto fail;
				}
				if (add_token(m, json_string_value(c), (int32_t)json_integer_value(id),
				              flag(x, "lstrip"), flag(x, "rstrip"), flag(x, "special"), err) < 0)
					goto fail;
			}
		}
	}
	/* the roles, from special_tokens_map.json, else tokenizer_config.json,
	 * else BART's and GPT-2's names */
	{
		static const char *const keys[] = { "bos_token", "eos_token", "unk_token", "pad_token",
		                                    "sep_token", "cls_token", "mask_token" };
		int32_t id[7];
		for (int k = 0; k < 7; k++) {
			id[k] = role(m, sm, keys[k], k == 6, err, &fail);
			if (id[k] < 0 && !fail)
				id[k] = role(m, cfg, keys[k], k == 6, err, &fail);
			if (fail)
				goto fail;
		}
		if (!sm && !cfg) {
			static const char *const bart[] = { "<s>", "</s>", "<unk>", "<pad>", "</s>", "<s>",
			                                    "<mask>" };
			int32_t eot = by_content(m, "<|endoftext|>");
			for (int k = 0; k < 7; k++) {
				int32_t i = by_content(m, bart[k]);
				if (i < 0 && k < 3)
					i = eot;
				if (i >= 0 && add_token(m, m->tok[i], i, k == 6, 0, 1, err) < 0)
					goto fail;
				id[k] = i;
			}
		}
		m->bos = id[0];
		m->eos = id[1];
		m->unk = id[2];
		m->pad = id[3];
		m->cls = id[5];
		m->mask = id[6];
	}
	for (int i = 0; i < m->nadd; i++)
		if (m->add[i].special)
			m->special[m->add[i].id] = 1;
	if (m->nadd > 1)	/* qsort(NULL, 0, ...) is undefined */
		qsort(m->add, (size_t)m->nadd, sizeof *m->add, cmp_added);
	/* wrapping, add_prefix_space, clean-up */
	if (cfg && json_is_string(json_object_get(cfg, "tokenizer_class")))
		cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
	if (cls)
		m->wrap = !strncmp(cls, "Bart", 4) || !strncmp(cls, "Roberta", 7) ||
		          !strncmp(cls, "LED", 3) || !strncmp(cls, "Longformer", 10);
	else if (tj && json_is_object(json_object_get(tj, "post_processor")))
		m->wrap = json_is_string(json_object_get(json_object_get(tj, "post_processor"), "type")) &&
		          !strcmp(json_string_value(json_object_get(json_object_get(tj, "post_processor"),
		                                                    "type")), "RobertaProcessing");
	else
		m->wrap = m->bos >= 0 && m->eos >= 0 && m->bos != m->eos;
	if (m->wrap && (m->bos < 0 || m->eos < 0)) {
		fail_label(m, err, "a %s tokenizer needs <s> and </s>", cls ? cls : "BART");
		goto fail;
	}
	if (cfg && json_is_boolean(json_object_get(cfg, "add_prefix_space")))
		m->prefix = flag(cfg, "add_prefix_space");
	else if (tj && json_is_object(json_object_get(tj, "pre_tokenizer")))
		m->prefix = flag(json_object_get(tj, "pre_tokenizer"), "add_prefix_space");
	m->cleanup = !(cfg && json_is_false(json_object_get(cfg, "clean_up_tokenization_spaces")));
	m->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &eo, NULL);
	if (!m->re) {
		lc_fail(err, "the GPT-2 pattern does not compile (PCRE2 error %d)", ec);
		goto fail;
	}
	pcre2_jit_compile(m->re, PCRE2_JIT_COMPLETE);   /* falls back to the interpreter */
	json_decref(voc);
	json_decref(tj);
	json_decref(cfg);
	json_decref(sm);
	return m;
fail:
	json_decref(voc);
	json_decref(tj);
	json_decref(cfg);
	json_decref(sm);
	bpe_free(m);
	return NULL;
}

/* ------------------------------------------------------------ files */

static char *slurp(const char *dir, const char *name, size_t *len, int *missing, lc_err *err)
{
	char path[4096];
	struct stat sb;
	FILE *fp;
	char *p;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	*len = 0;
	if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		*missing = 1;
		return NULL;
	}
	*missing = 0;
	if ((uint64_t)sb.st_size > BPE_MAX_FILE) {
		lc_fail(err, "%s: %lld bytes, more than the %u MiB a tokenizer file may have", path,
		        (long long)sb.st_size, BPE_MAX_FILE >> 20);
		return NULL;
	}
	if (!(fp = fopen(path, "rb"))) {
		lc_fail(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (!(p = malloc((size_t)sb.st_size + 1))) {
		fclose(fp);
		lc_fail(err, "%s: out of memory", path);
		return NULL;
	}
	*len = fread(p, 1, (size_t)sb.st_size, fp);
	if (ferror(fp) || *len != (size_t)sb.st_size) {
		fclose(fp);
		free(p);
		lc_fail(err, "%s: read error", path);
		return NULL;
	}
	fclose(fp);
	p[*len] = 0;
	return p;
}

int bpe_dir_has(const char *dir)
{
	char path[4096];
	struct stat sb;

	snprintf(path, sizeof path, "%s/vocab.json", dir);
	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
		return 1;
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bpe_model *bpe_load_dir(const char *dir, lc_err *err)
{
	bpe_files f;
	char *buf[5] = { NULL };
	int miss[5], bad = 0;
	static const char *const names[5] = { "vocab.json", "merges.txt", "tokenizer.json",
	                                      "tokenizer_config.json", "special_tokens_map.json" };
	bpe_model *m = NULL;
	size_t len[5];

	for (int i = 0; i < 5; i++) {
		if (i == 2 && buf[0])
			continue;   /* the slow tokenizer's files win */
		buf[i] = slurp(dir, names[i], &len[i], &miss[i], err);
		if (!buf[i] && !miss[i])
			bad = 1;
		if (!buf[i])
			len[i] = 0;
	}
	if (!bad) {
		memset(&f, 0, sizeof f);
		f.vocab = buf[0];
		f.vocab_len = len[0];
		f.merges = buf[1];
		f.merges_len = len[1];
		f.tokenizer = buf[2];
		f.tokenizer_len = buf[2] ? len[2] : 0;
		f.config = buf[3];
		f.config_len = len[3];
		f.special = buf[4];
		f.special_len = len[4];
		f.label = dir;
		m = bpe_load(&f, err);
	}
	for (int i = 0; i < 5; i++)
		free(buf[i]);
	return m;
}

/* --------------------------------------------------------- accessors */

int32_t bpe_vocab_size(const bpe_model *m) { return m->nid; }
int32_t bpe_bos_id(const bpe_model *m) { return m->bos; }
int32_t bpe_eos_id(const bpe_model *m) { return m->eos; }
int32_t bpe_pad_id(const bpe_model *m) { return m->pad; }
int32_t bpe_cls_id(const bpe_model *m) { return m->cls; }
int32_t bpe_mask_id(const bpe_model *m) { return m->mask; }
int bpe_wraps(const bpe_model *m) { return m->wrap; }
int bpe_add_prefix_space(const bpe_model *m) { return m->prefix; }
int bpe_cleans_up(const bpe_model *m) { return m->cleanup; }
const char *bpe_fingerprint(const bpe_model *m) { return m->fp; }

const char *bpe_token(const bpe_model *m, int32_t id, size_t *len)
{
	if (id < 0 || id >= m->nid || !m->tok[id])
		return NULL;
	*len = m->toklen[id];
	return m->tok[id];
}

int bpe_is_special(const bpe_model *m, int32_t id)
{
	return id >= 0 && id < m->nid && m->special[id];
}

/* ----------------------------------------------------------- encoding */

static int push_id(bpe_enc *e, int32_t id)
{
	if (e->n == e->icap) {
		size_t nc = e->icap ? 2 * e->icap : 256;
		int32_t *n = realloc(e->ids, nc * sizeof *n);
		if (!n)
			return -1;
		e->ids = n;
		e->icap = nc;
	}
	e->ids[e->n++] = id;
	return 0;
}

static int push_piece(bpe_enc *e, const char *s, size_t n)
{
	if (e->plen + n + 2 > e->pcap) {
		size_t nc = e->pcap ? 2 * e->pcap : 4096;
		char *p;
		while (nc < e->plen + n + 2)
			nc *= 2;
		if (!(p = realloc(e->pieces, nc)))
			return -1;
		e->pieces = p;
		e->pcap = nc;
	}
	if (e->plen)
		e->pieces[e->plen++] = ' ';
	memcpy(e->pieces + e->plen, s, n);
	e->plen += n;
	e->pieces[e->plen] = 0;
	return 0;
}

/* A min-heap of candidate merges: (rank, position of the left symbol). */
typedef struct cand {
	uint32_t rank, pos;
	uint32_t a, b;              /* the pair it was made for */
} cand;

static int cand_less(const cand *x, const cand *y)
{
	return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(cand *h, size_t *n, cand c)
{
	size_t i = (*n)++;

	while (i > 0 && cand_less(&c, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = c;
}

static cand heap_pop(cand *h, size_t *n)
{
	cand top = h[0], last = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const cand *best = &last;
		if (l < *n && cand_less(&h[l], best)) {
			m = l;
			best = &h[l];
		}
		if (r < *n && cand_less(&h[r], best))
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* BPE of one piece b[n] (raw bytes): GPT2Tokenizer.bpe. The pass of the
 * lowest-ranked pair merges all its occurrences left to right; pairs that
 * pass creates wait for the next pass. Writes the symbols into out[]
 * (at most n) and returns their count, or -1 when out of memory. */
static int64_t bpe_word(const bpe_model *m, const unsigned char *b, size_t n, uint32_t *out)
{
	uint32_t *sym = malloc(n * sizeof *sym);
	int32_t *next = malloc(n * sizeof *next), *prev = malloc(n * sizeof *prev);
	cand *heap = malloc(4 * n * sizeof *heap), *pend = malloc(2 * n * sizeof *pend);
	size_t nh = 0, np = 0, k = 0;
	int64_t rc = -1;
	uint32_t pass = UINT32_MAX;

	if (!sym || !next || !prev || !heap || !pend)
		goto out;
	for (size_t i = 0; i < n; i++) {
		sym[i] = (uint32_t)smap_get(&m->sym, b + i, 1);
		next[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
		prev[i] = (int32_t)i - 1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		uint64_t v;
		if (umap_get(&m->merge, (uint64_t)sym[i] << 32 | sym[i + 1], &v))
			heap_push(heap, &nh, (cand){ (uint32_t)(v >> 32), (uint32_t)i, sym[i], sym[i + 1] });
	}
	for (;;) {
		cand c;
		int32_t j;
		uint64_t v;
		if (!nh || (np && heap[0].rank != pass)) {
			/* the pass is over: its new pairs join the candidates */
			if (!np)
				break;
			for (size_t i = 0; i < np; i++)
				heap_push(heap, &nh, pend[i]);
			np = 0;
			pass = UINT32_MAX;
			continue;
		}
		c = heap_pop(heap, &nh);
		j = next[c.pos];
		if (sym[c.pos] != c.a || j < 0 || sym[j] != c.b || prev[c.pos] == -2)
			continue;   /* stale: one of its symbols was merged away */
		pass = c.rank;
		umap_get(&m->merge, (uint64_t)c.a << 32 | c.b, &v);
		sym[c.pos] = (uint32_t)v;
		next[c.pos] = next[j];
		if (next[j] >= 0)
			prev[next[j]] = (int32_t)c.pos;
		prev[j] = -2;       /* dead */
		if (prev[c.pos] >= 0) {
			int32_t p = prev[c.pos];
			if (umap_get(&m->merge, (uint64_t)sym[p] << 32 | sym[c.pos], &v))
				pend[np++] = (cand){ (uint32_t)(v >> 32), (uint32_t)p, sym[p], sym[c.pos] };
		}
		if (next[c.pos] >= 0) {
			int32_t q = next[c.pos];
			if (umap_get(&m->merge, (uint64_t)sym[c.pos] << 32 | sym[q], &v))
				pend[np++] = (cand){ (uint32_t)(v >> 32), c.pos, sym[c.pos], sym[q] };
		}
		if (np + 2 > 2 * n) {   /* cannot happen: a merge adds at most two */
			for (size_t i = 0; i < np; i++)
				heap_push(heap, &nh, pend[i]);
			np = 0;
		}
	}
	for (int32_t i = 0; i >= 0; i = next[i])
		out[k++] = sym[i];
	rc = (int64_t)k;
out:
	free(sym);
	free(next);
	free(prev);
	free(heap);
	free(pend);
	return rc;
}

/* The ids of one piece, through the cache. */
static int encode_piece(bpe_model *m, const unsigned char *b, size_t n, unsigned flags,
                        bpe_enc *e, lc_err *err)
{
	int64_t at = smap_get(&m->cache, b, n);
	uint32_t small[64], *syms = n <= 64 ? small : malloc(n * sizeof *syms);
	int64_t k;

	if (at >= 0 && !(flags & BPE_ENC_PIECES)) {
		for (int32_t i = 0; i < m->cids[at]; i++)
			if (push_id(e, m->cids[at + 1 + i]) < 0)
				return lc_fail(err, "out of memory");
		if (syms != small)
			free(syms);
		return 0;
	}
	if (!syms || (k = bpe_word(m, b, n, syms)) < 0) {
		if (syms != small)
			free(syms);
		return lc_fail(err, "out of memory");
	}
	if (m->ncids + (uint64_t)k + 1 > CACHE_MAX_IDS) {
		smap_free(&m->cache);
		m->ncids = 0;
	}
	if (m->ncids + (uint64_t)k + 1 > m->ccap) {
		uint64_t nc = m->ccap ? 2 * m->ccap : 65536;
		int32_t *c;
		while (nc < m->ncids + (uint64_t)k + 1)
			nc *= 2;
		if ((c = realloc(m->cids, nc * sizeof *c))) {
			m->cids = c;
			m->ccap = nc;
		}
	}
	if (m->ncids + (uint64_t)k + 1 <= m->ccap && smap_put(&m->cache, b, n, (int64_t)m->ncids) == 0) {
		m->cids[m->ncids] = (int32_t)k;
		at = (int64_t)m->ncids;
		m->ncids += (uint64_t)k + 1;
	} else {
		at = -1;
	}
	for (int64_t i = 0; i < k; i++) {
		int32_t id = m->sym_id[syms[i]];
		if (id < 0)
			id = m->unk;
		if (id < 0) {
			size_t len;
			const char *raw = smap_key(&m->sym, syms[i], &len);
			char tok[64];
			size_t tl = to_alphabet(m, (const unsigned char *)raw, len > 30 ? 30 : len, tok);
			if (syms != small)
				free(syms);
			return fail_label(m, err, "token \"%.*s\" is not in the vocabulary, and there is "
			                  "no unknown token", (int)tl, tok), -1;
		}
		if (at >= 0)
			m->cids[at + 1 + i] = id;
		if (push_id(e, id) < 0)
			goto oom;
		if (flags & BPE_ENC_PIECES) {
			size_t len;
			const char *raw = smap_key(&m->sym, syms[i], &len);
			char *tok = malloc(2 * len + 1);
			int r = tok ? push_piece(e, tok, to_alphabet(m, (const unsigned char *)raw, len, tok))
			            : -1;
			free(tok);
			if (r < 0)
				goto oom;
		}
	}
	if (syms != small)
		free(syms);
	return 0;
oom:
	if (syms != small)
		free(syms);
	return lc_fail(err, "out of memory");
}

/* Pre-tokenizes s[n] (well-formed UTF-8) with the GPT-2 pattern and
 * encodes each piece. */
static int encode_text(bpe_model *m, const char *s, size_t n, unsigned flags, bpe_enc *e,
                       lc_err *err)
{
	pcre2_match_data *md = e->match;
	size_t off = 0;

	if (!n)
		return 0;
	if (!md && !(md = e->match = pcre2_match_data_create(4, NULL)))
		return lc_fail(err, "out of memory");
	while (off < n) {
		int rc = pcre2_match(m->re, (PCRE2_SPTR)s, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
		PCRE2_SIZE *ov;
		if (rc < 0) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(rc, msg, sizeof msg);
			return lc_fail(err, "pre-tokenizer failed at byte %zu: %s", off, (char *)msg);
		}
		ov = pcre2_get_ovector_pointer(md);
		/* the pattern matches every character, so matches are contiguous */
		if (ov[0] != off || ov[1] <= ov[0])
			return lc_fail(err, "pre-tokenizer skipped text at byte %zu", off);
		if (encode_piece(m, (const unsigned char *)s + ov[0], ov[1] - ov[0], flags, e, err) < 0)
			return -1;
		off = ov[1];
	}
	return 0;
}

static size_t rstrip_len(const char *s, size_t n)
{
	/* strips trailing str.isspace characters */
	while (n > 0) {
		size_t k = n - 1;
		uint32_t cp;
		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
		if (utf8_char((const unsigned char *)s + k, n - k, &cp) != n - k || !utf8_py_isspace(cp))
			break;
		n = k;
	}
	return n;
}

static size_t lstrip_off(const char *s, size_t n)
{
	size_t i = 0;
	uint32_t cp;

	while (i < n) {
		size_t k = utf8_char((const unsigned char *)s + i, n - i, &cp);
		if (!k || !utf8_py_isspace(cp))
			break;
		i += k;
	}
	return i;
}

/* The added token that starts at s[0..n), longest first; NULL if none. */
static const added *added_at(const bpe_model *m, const char *s, size_t n)
{
	for (int i = 0; i < m->nadd; i++)
		if (m->add[i].len <= n && memcmp(m->add[i].content, s, m->add[i].len) == 0)
			return &m->add[i];
	return NULL;
}

int bpe_encode(bpe_model *m, const char *text, size_t len, unsigned flags, bpe_enc *e,
               lc_err *err)
{
	size_t n, seg = 0, i;
	char *s;
	int wrap = (flags & BPE_ENC_SPECIAL) && m->wrap;

	e->n = 0;
	e->plen = 0;
	if (e->pieces)
		e->pieces[0] = 0;
	if (len > (SIZE_MAX - 2) / 3)
		return lc_fail(err, "text too long");
	if (3 * len + 2 > e->bcap) {
		char *b = realloc(e->buf, 3 * len + 2);
		if (!b)
			return lc_fail(err, "out of memory for a text of %zu bytes", len);
		e->buf = b;
		e->bcap = 3 * len + 2;
	}
	s = e->buf;
	n = 0;
	if (m->prefix || (flags & BPE_ENC_PREFIX))
		s[n++] = ' ';
	n += utf8_replace(text, len, s + n);
	if (wrap) {
		if (push_id(e, m->bos) < 0 ||
		    ((flags & BPE_ENC_PIECES) && push_piece(e, m->tok[m->bos], m->toklen[m->bos]) < 0))
			return lc_fail(err, "out of memory");
	}
	/* added tokens split the text; the segments between them are encoded */
	for (i = 0; i < n;) {
		const added *a = m->nadd ? added_at(m, s + i, n - i) : NULL;
		size_t end;
		if (!a) {
			i++;
			continue;
		}
		end = a->lstrip ? rstrip_len(s + seg, i - seg) + seg : i;
		if (encode_text(m, s + seg, end - seg, flags, e, err) < 0)
			return -1;
		if (push_id(e, a->id) < 0 ||
		    ((flags & BPE_ENC_PIECES) && push_piece(e, a->content, a->len) < 0))
			return lc_fail(err, "out of memory");
		i += a->len;
		if (a->rstrip)
			i += lstrip_off(s + i, n - i);
		seg = i;
	}
	if (encode_text(m, s + seg, n - seg, flags, e, err) < 0)
		return -1;
	if (wrap && !(flags & BPE_ENC_NO_EOS)) {
		if (push_id(e, m->eos) < 0 ||
		    ((flags & BPE_ENC_PIECES) && push_piece(e, m->tok[m->eos], m->toklen[m->eos]) < 0))
			return lc_fail(err, "out of memory");
	}
	if ((flags & BPE_ENC_PIECES) && !e->pieces && push_piece(e, "", 0) < 0)
		return lc_fail(err, "out of memory");
	return 0;
}

void bpe_enc_free(bpe_enc *e)
{
	free(e->ids);
	free(e->pieces);
	free(e->buf);
	pcre2_match_data_free(e->match);
	memset(e, 0, sizeof *e);
}

/* ----------------------------------------------------------- decoding */

static int grow(char **p, size_t *cap, size_t need)
{
	if (need > *cap) {
		size_t nc = *cap ? *cap : 256;
		char *q;
		while (nc < need)
			nc *= 2;
		if (!(q = realloc(*p, nc)))
			return -1;
		*p = q;
		*cap = nc;
	}
	return 0;
}

/* transformers' clean_up_tokenization, in place. */
static size_t cleanup(char *s, size_t n)
{
	static const char *const from[] = { " .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's",
	                                    " 've", " 're" };
	static const char *const to[] = { ".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re" };

	for (size_t r = 0; r < sizeof from / sizeof *from; r++) {
		size_t fl = strlen(from[r]), tl = strlen(to[r]), o = 0, i = 0;
		while (i < n) {
			if (i + fl <= n && memcmp(s + i, from[r], fl) == 0) {
				memmove(s + o, to[r], tl);
				o += tl;
				i += fl;
			} else {
				s[o++] = s[i++];
			}
		}
		n = o;
	}
	return n;
}

int bpe_decode(const bpe_model *m, const int32_t *ids, size_t n, unsigned flags, char **out,
               size_t *outlen, size_t *cap, lc_err *err)
{
	char *raw = NULL;
	size_t rl = 0, rc = 0, o;

	for (size_t i = 0; i < n; i++) {
		const unsigned char *t;
		size_t tl, k;
		if (ids[i] < 0 || ids[i] >= m->nid || !m->tok[ids[i]]) {
			free(raw);
			return lc_fail(err, "token %zu: id %ld is outside the vocabulary", i, (long)ids[i]);
		}
		if ((flags & BPE_DEC_SKIP_SPECIAL) && m->special[ids[i]])
			continue;
		t = (const unsigned char *)m->tok[ids[i]];
		tl = m->toklen[ids[i]];
		if (grow(&raw, &rc, rl + tl + 1) < 0) {
			free(raw);
			return lc_fail(err, "out of memory");
		}
		/* the byte-level alphabet back to bytes */
		for (k = 0; k < tl;) {
			uint32_t cp;
			size_t cl = utf8_char(t + k, tl - k, &cp);
			if (cl && cp < 324 && m->byte_dec[cp] >= 0) {
				raw[rl++] = (char)m->byte_dec[cp];
				k += cl;
			} else {
				/* not of the alphabet (an added token's text): its bytes as they are */
				size_t c = cl ? cl : 1;
				memcpy(raw + rl, t + k, c);
				rl += c;
				k += c;
			}
		}
	}
	if (grow(out, cap, 3 * rl + 1) < 0) {
		free(raw);
		return lc_fail(err, "out of memory");
	}
	o = utf8_replace(raw ? raw : "", rl, *out);
	free(raw);
	if (flags & BPE_DEC_CLEANUP)
		o = cleanup(*out, o);
	(*out)[o] = 0;
	*outlen = o;
	return 0;
}
