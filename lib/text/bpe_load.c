/*
 * bpe_load.c: reading a byte-level BPE tokenizer's files (vocab.json +
 * merges.txt, or tokenizer.json; tokenizer_config.json and
 * special_tokens_map.json for the special tokens and options).
 */
#include "text/bpe_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/fileio.h"
#include "base/grow.h"
#include "text/utf8.h"

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

/* buf[len] with every integer of more than 18 digits outside the strings
 * written as a real (".0" after it), for Jansson, which refuses integers
 * past int64_t: transformers saves a tokenizer with no length limit as
 * "model_max_length": 1000000000000000019884624838656 (int(1e30)). NULL
 * when out of memory. */
static char *big_ints_real(const char *buf, size_t len, size_t *outlen)
{
	char *o = malloc(len + len / 19 * 2 + 1);
	size_t n = 0;
	int str = 0;

	if (!o)
		return NULL;
	for (size_t i = 0; i < len;) {
		char c = buf[i];

		if (str) {
			o[n++] = buf[i++];
			if (c == '\\' && i < len)
				o[n++] = buf[i++];
			else if (c == '"')
				str = 0;
		} else if (c == '"') {
			str = 1;
			o[n++] = buf[i++];
		} else if (c >= '0' && c <= '9' && !(i > 0 && (buf[i - 1] == '.' ||
		                                              (buf[i - 1] >= '0' && buf[i - 1] <= '9')))) {
			size_t k = i;

			while (k < len && buf[k] >= '0' && buf[k] <= '9')
				k++;
			memcpy(o + n, buf + i, k - i);
			n += k - i;
			if (k - i > 18 && !(k < len && (buf[k] == '.' || buf[k] == 'e' || buf[k] == 'E'))) {
				o[n++] = '.';
				o[n++] = '0';
			}
			i = k;
		} else {
			o[n++] = buf[i++];
		}
	}
	*outlen = n;
	return o;
}

static json_t *parse_json(const bpe_model *m, const char *buf, size_t len, const char *what,
                          lc_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);

	if (!j && strstr(je.text, "too big integer")) {
		size_t n;
		char *r = big_ints_real(buf, len, &n);

		if (!r)
			return lc_fail(err, "out of memory"), NULL;
		j = json_loadb(r, n, JSON_REJECT_DUPLICATES, &je);
		free(r);
	}
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
	m->nid = m->nvocab = max + 1;
	m->idcap = (size_t)m->nid;
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

/* Added tokens may take ids after vocab.json's, as transformers'
 * add_tokens() and save_pretrained() give them (the model's embeddings
 * resized to match): up to this many, a bound on what a hostile file can
 * make lc allocate. */
#define BPE_ADDED_BEYOND 65536

/* The id arrays (tokens, their lengths, the special marks) made n long,
 * the new ids without a token until one is added there; their room grows
 * by doubling (one added token after another each asks for one more). */
static int extend_ids(bpe_model *m, int32_t n)
{
	if ((size_t)n > m->idcap) {
		size_t c1 = m->idcap, c2 = m->idcap, c3 = m->idcap;

		if (lc_grow(&m->tok, &c1, (size_t)n, sizeof *m->tok, 0) < 0 ||
		    lc_grow(&m->toklen, &c2, (size_t)n, sizeof *m->toklen, 0) < 0 ||
		    lc_grow(&m->special, &c3, (size_t)n, 1, 0) < 0)
			return -1;
		m->idcap = c1;      /* the same doubling from the same room: c1 == c2 == c3 */
	}
	for (int32_t i = m->nid; i < n; i++) {
		m->tok[i] = NULL;
		m->toklen[i] = 0;
		m->special[i] = 0;
	}
	m->nid = n;
	return 0;
}

/* The index in add of the added token content, or -1 (before the sort
 * that ends the loading). */
static int added_index(const bpe_model *m, const char *content)
{
	return (int)smap_get(&m->addmap, content, strlen(content));
}

/* An added token's flags (AddedToken's lstrip, rstrip, single_word). */
typedef struct {
	int lstrip, rstrip, single;
} tokflags;

static int flag(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

/* an AddedToken object's flags; none for anything else */
static tokflags flags_of(const json_t *o)
{
	tokflags f = { 0, 0, 0 };

	if (json_is_object(o))
		f = (tokflags){ flag(o, "lstrip"), flag(o, "rstrip"), flag(o, "single_word") };
	return f;
}

/* Adds or updates an added token. */
static int add_token(bpe_model *m, const char *content, int32_t id, tokflags f, int special,
                     lc_err *err)
{
	added *a = NULL;
	int i;

	if (!*content)
		return fail_label(m, err, "an added token is empty"), -1;
	if (id < 0 || id >= m->nvocab + BPE_ADDED_BEYOND)
		return fail_label(m, err, "added token \"%.40s\": id %ld outside [0, %ld) (the "
		                  "vocabulary and %d ids after it)", content, (long)id,
		                  (long)m->nvocab + BPE_ADDED_BEYOND, BPE_ADDED_BEYOND), -1;
	if (id >= m->nid && extend_ids(m, id + 1) < 0)
		return lc_fail(err, "out of memory");
	if ((i = added_index(m, content)) >= 0) {
		a = &m->add[i];
	} else {
		if (m->nadd >= BPE_MAX_ADDED)
			return fail_label(m, err, "more than %d added tokens", BPE_MAX_ADDED), -1;
		if (lc_grow(&m->add, &m->addcap, (size_t)m->nadd + 1, sizeof *m->add, 16) < 0 ||
		    smap_put(&m->addmap, content, strlen(content), m->nadd) < 0)
			return lc_fail(err, "out of memory");
		a = &m->add[m->nadd++];
		memset(a, 0, sizeof *a);
		if (!(a->content = strdup(content)))
			return lc_fail(err, "out of memory");
		a->len = strlen(content);
	}
	a->id = id;
	a->lstrip = f.lstrip;
	a->rstrip = f.rstrip;
	a->single = f.single;
	a->special = special;
	a->legacy = 0;
	if (!m->tok[id]) {
		/* an added token outside vocab.json gets its content as its token */
		if (!(m->tok[id] = strdup(content)))
			return lc_fail(err, "out of memory");
		m->toklen[id] = strlen(content);
	}
	return 0;
}

/* A special token a file names that neither the vocabulary nor the added
 * tokens number: the slow tokenizer's constructor adds it after them
 * (unnumbered_add). */
typedef struct {
	const char *content;
	tokflags f;
} unnumbered;

/* "name_token" of a config: a string or {"content": ..., "lstrip": ...}.
 * Registers it as a special added token (lstrip from the object, or the
 * given default) and returns its id, or -1 when absent (*miss then names
 * it where the vocabulary lacks it). */
static int32_t role(bpe_model *m, const json_t *cfg, const char *key, int dflt_lstrip,
                    lc_err *err, int *fail, int *named, unnumbered *miss)
{
	const json_t *v = cfg ? json_object_get(cfg, key) : NULL;
	const char *content;
	tokflags f = { dflt_lstrip, 0, 0 };
	int i;
	int64_t id;

	if (v)
		*named = 1;     /* null too: the role is then none */
	if (!v || json_is_null(v))
		return -1;
	if (json_is_string(v)) {
		content = json_string_value(v);
	} else if (json_is_object(v) && json_is_string(json_object_get(v, "content"))) {
		content = json_string_value(json_object_get(v, "content"));
		f = flags_of(v);
	} else {
		fail_label(m, err, "\"%s\" must be a string or an object with \"content\"", key);
		*fail = 1;
		return -1;
	}
	/* an added token keeps its flags (transformers gives the role the
	 * added token's object), but for added_tokens.json's: the constructor
	 * adds the role again with its own (4.36 maps those by the wrong name) */
	if ((i = added_index(m, content)) >= 0) {
		int32_t at = m->add[i].id;
		if (m->add[i].legacy && add_token(m, content, at, f, 1, err) < 0)
			*fail = 1;
		return at;
	}
	if ((id = smap_get(&m->vocab, content, strlen(content))) < 0) {
		miss->content = content;
		miss->f = f;
		return -1;
	}
	if (add_token(m, content, (int32_t)id, f, 1, err) < 0)
		*fail = 1;
	return (int32_t)id;
}

static int32_t by_content(const bpe_model *m, const char *s)
{
	int i = added_index(m, s);

	return i >= 0 ? m->add[i].id : (int32_t)smap_get(&m->vocab, s, strlen(s));
}

/* The id of an unnumbered special token: as _add_tokens numbers them,
 * the count of distinct tokens (the vocabulary's and the added ones')
 * before the first, on up, one a text (a text met again keeps its id). */
static int32_t unnumbered_add(bpe_model *m, const unnumbered *u, int32_t *next, lc_err *err)
{
	int32_t id = by_content(m, u->content);

	if (id >= 0)
		return id;
	if (add_token(m, u->content, *next, u->f, 1, err) < 0)
		return -1;
	return (*next)++;
}

/* The count of distinct tokens: vocab.json's and the added ones it lacks. */
static int32_t distinct_tokens(const bpe_model *m, const json_t *vocab)
{
	int32_t n = (int32_t)json_object_size(vocab);

	for (int i = 0; i < m->nadd; i++)
		n += smap_get(&m->vocab, m->add[i].content, m->add[i].len) < 0;
	return n;
}

/* transformers' slow tokenizer (vocab.json and merges.txt), as its
 * constructor and _decode read them. additional_special_tokens: the
 * config's, and for a legacy tokenizer (no added_tokens_decoder) then
 * special_tokens_map.json's. The constructor adds each again (an object
 * with its flags; a text only when it is no added token yet, stripping
 * nothing), so one that vocab.json holds is split out of texts as the
 * roles are. skip_special_tokens leaves out all_special_ids, the named
 * roles (role[7]) and the additional special tokens, whatever an added
 * token's "special" flag says; the added tokens that are not among them,
 * and the additional special ones after the vocabulary, are "legacy added
 * tokens", decoded as texts of their own (bpe_decode). */
static int slow_specials(bpe_model *m, const json_t *sm, const json_t *cfg, int legacy,
                         const int32_t role[7], int32_t *next, lc_err *err)
{
	const json_t *lists[2] = { cfg ? json_object_get(cfg, "additional_special_tokens") : NULL,
	                           legacy && sm ? json_object_get(sm, "additional_special_tokens")
	                                        : NULL }, *x;
	size_t i;

	for (int k = 0; k < 7; k++)
		if (role[k] >= 0)
			m->special[role[k]] = BPE_SP_SKIP;
	for (int l = 0; l < 2; l++) {
		if (lists[l] && !json_is_null(lists[l]) && !json_is_array(lists[l]))
			return fail_label(m, err, "\"additional_special_tokens\" must be a list"), -1;
		json_array_foreach(lists[l], i, x) {
			const json_t *c = json_is_object(x) ? json_object_get(x, "content") : x;
			const char *t;
			int32_t id;

			if (!json_is_string(c))
				return fail_label(m, err, "\"additional_special_tokens\": entry %zu is not "
				                  "a token", i), -1;
			t = json_string_value(c);
			if ((id = by_content(m, t)) < 0) {
				/* in no file's vocabulary: numbered after it */
				unnumbered u = { t, flags_of(x) };
				if ((id = unnumbered_add(m, &u, next, err)) < 0)
					return -1;
			} else if (json_is_object(x) ? add_token(m, t, id, flags_of(x), 1, err) < 0
			                             : added_index(m, t) < 0 &&
			                                   add_token(m, t, id, flags_of(NULL), 1,
			                                             err) < 0) {
				return -1;
			}
			m->special[id] = BPE_SP_SKIP | (id >= m->nvocab ? BPE_SP_APART : 0);
		}
	}
	for (int k = 0; k < m->nadd; k++)
		if (!m->special[m->add[k].id])
			m->special[m->add[k].id] = BPE_SP_APART;
	return 0;
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

/* FNV-1a 64 of n bytes, on from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t k = 0; k < n; k++)
		h = (h ^ ((const unsigned char *)p)[k]) * 0x100000001b3ull;
	return h;
}

/* The fingerprint names the ids a text gets: the vocabulary and merges
 * (or tokenizer.json, or fairseq's files) and what the settings make of
 * them (prefix space, wrapping, the special and added tokens), not the
 * settings' files themselves, whose model_max_length and name_or_path
 * change with a conversion (lc-convert -n) and change no id. */
static void fingerprint(bpe_model *m, const bpe_files *f)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char s[160];

	h = fnv(h, f->vocab, f->vocab ? f->vocab_len : 0);
	h = fnv(h, f->vocab ? f->merges : f->tokenizer, f->vocab ? f->merges_len : f->tokenizer_len);
	h = fnv(h, f->dict, f->dict ? f->dict_len : 0);
	snprintf(s, sizeof s, "prefix %d wrap %d roles %d %d %d %d %d %d", m->prefix, m->wrap, m->bos,
	         m->eos, m->unk, m->pad, m->cls, m->mask);
	h = fnv(h, s, strlen(s) + 1);
	/* sep_token joined the roles later: named only where it closes a
	 * wrapped text and is not the eos, so that the streams made before
	 * still match */
	if (m->wrap && m->sep != m->eos) {
		snprintf(s, sizeof s, "sep %d", m->sep);
		h = fnv(h, s, strlen(s) + 1);
	}
	for (int i = 0; i < m->nadd; i++) {
		const added *a = &m->add[i];
		snprintf(s, sizeof s, "%d %d %d %d ", (int)a->id, a->lstrip, a->rstrip, a->special);
		h = fnv(fnv(h, s, strlen(s)), a->content, a->len + 1);
		/* single_word joined the flags later: named only where set, so
		 * that the streams made before still match */
		if (a->single)
			h = fnv(h, "single_word", sizeof "single_word");
	}
	snprintf(m->fp, sizeof m->fp, "%016llx", (unsigned long long)h);
}

/* tokenizer.json's "added_tokens" ({id, content, lstrip, rstrip, special}
 * each, checked), or NULL with *bad when it is not a list; NULL when absent. */
static const json_t *tokjson_list(bpe_model *m, const json_t *tj, int *bad, lc_err *err)
{
	const json_t *list = json_object_get(tj, "added_tokens"), *x;
	size_t i;

	*bad = 0;
	if (!list || json_is_null(list))
		return NULL;
	*bad = 1;
	if (!json_is_array(list))
		return fail_label(m, err, "tokenizer.json: \"added_tokens\" is not a list"), NULL;
	json_array_foreach(list, i, x) {
		const json_t *id = json_object_get(x, "id"), *c = json_object_get(x, "content");
		if (!json_is_integer(id) || !json_is_string(c))
			return fail_label(m, err, "tokenizer.json: added token %zu has no id or content",
			                  i + 1), NULL;
		if (json_integer_value(id) < 0 || json_integer_value(id) >= MAX_ID)
			return fail_label(m, err, "tokenizer.json: added token %zu: id %lld is not one "
			                  "(0 to %d)", i + 1, (long long)json_integer_value(id),
			                  MAX_ID - 1), NULL;
	}
	*bad = 0;
	return list;
}

/* RobertaProcessing's "cls" and "sep" ([token, id] each) as m's cls and
 * sep: the ids it puts around a text. Absent: the roles' stay. */
static int tokjson_wrap(bpe_model *m, const json_t *pp, lc_err *err)
{
	static const char *const keys[2] = { "cls", "sep" };

	for (int k = 0; k < 2; k++) {
		const json_t *v = json_object_get(pp, keys[k]), *id = json_array_get(v, 1);

		if (!v)
			continue;
		if (!json_is_array(v) || json_array_size(v) != 2 ||
		    !json_is_string(json_array_get(v, 0)) || !json_is_integer(id) ||
		    json_integer_value(id) < 0 || json_integer_value(id) >= m->nid)
			return fail_label(m, err, "tokenizer.json: the post_processor's \"%s\" is not "
			                  "[token, id] with an id of the vocabulary", keys[k]), -1;
		*(k ? &m->sep : &m->cls) = (int32_t)json_integer_value(id);
	}
	return 0;
}

/* An added token from a JSON object: content, its flags, special. */
static int add_object(bpe_model *m, const json_t *x, int32_t id, lc_err *err)
{
	return add_token(m, json_string_value(json_object_get(x, "content")), id, flags_of(x),
	                 flag(x, "special"), err);
}

/* A slow tokenizer saved before transformers 4.34 (no added_tokens_decoder
 * in its config), as 4.36 reads it: by id, added_tokens.json's {"text":
 * id}, none stripping (a role's text then takes the role's flags: role),
 * then tokenizer.json's added tokens with their flags where the directory
 * has one; an id given again takes the later token (transformers keeps
 * them in a dict by id), in the place of the first. (added_tokens.json's
 * "special", whether a role names the text, decides nothing in the slow
 * tokenizer's encoding or decoding: slow_specials.) */
static int legacy_added(bpe_model *m, const bpe_files *f, lc_err *err)
{
	json_t *at = NULL, *tj = NULL, *byid = json_object(), *x;
	const json_t *list = NULL;
	const char *k;
	char key[16];
	size_t i;
	int rc = -1, bad;

	if (!byid)
		return lc_fail(err, "out of memory");
	if (f->unread) {
		lc_fail(err, "%s", f->unread);
		goto out;
	}
	if (f->added && !(at = parse_json(m, f->added, f->added_len, "added_tokens.json", err)))
		goto out;
	if (at)
		json_object_foreach(at, k, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) > INT32_MAX) {
				fail_label(m, err, "added_tokens.json: \"%.40s\" is not given an id", k);
				goto out;
			}
			snprintf(key, sizeof key, "%lld", (long long)json_integer_value(x));
			if (json_object_set_new(byid, key, json_string(k)) < 0) {
				lc_fail(err, "out of memory");
				goto out;
			}
		}
	if (f->tokenizer && !(tj = parse_json(m, f->tokenizer, f->tokenizer_len, "tokenizer.json",
	                                      err)))
		goto out;
	if (tj && !(list = tokjson_list(m, tj, &bad, err)) && bad)
		goto out;
	json_array_foreach(list, i, x) {
		snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_object_get(x, "id")));
		if (json_object_set(byid, key, x) < 0) {
			lc_fail(err, "out of memory");
			goto out;
		}
	}
	/* added_tokens.json's are texts, tokenizer.json's objects */
	json_object_foreach(byid, k, x) {
		int32_t id = (int32_t)strtol(k, NULL, 10);
		if (json_is_string(x) ? add_token(m, json_string_value(x), id, flags_of(NULL), 0, err) < 0
		                      : add_object(m, x, id, err) < 0)
			goto out;
		if (json_is_string(x))
			m->add[added_index(m, json_string_value(x))].legacy = 1;
	}
	rc = 0;
out:
	json_decref(at);
	json_decref(tj);
	json_decref(byid);
	return rc;
}

bpe_model *bpe_load(const bpe_files *f, lc_err *err)
{
	bpe_model *m = calloc(1, sizeof *m);
	json_t *voc = NULL, *tj = NULL, *cfg = NULL, *sm = NULL;
	const json_t *merges_json = NULL, *vocab_json;
	int fail = 0, ec, modern;
	PCRE2_SIZE eo;
	const char *cls = NULL;

	if (!m) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	snprintf(m->label, sizeof m->label, "%s", f->label ? f->label : "tokenizer");
	byte_maps(m);
	m->bos = m->eos = m->pad = m->unk = m->cls = m->sep = m->mask = -1;
	if (f->vocab_len > BPE_MAX_FILE || f->merges_len > BPE_MAX_FILE ||
	    f->tokenizer_len > BPE_MAX_FILE || f->config_len > BPE_MAX_FILE ||
	    f->special_len > BPE_MAX_FILE || f->dict_len > BPE_MAX_FILE ||
	    f->added_len > BPE_MAX_FILE) {
		fail_label(m, err, "a tokenizer file is larger than %u MiB", BPE_MAX_FILE >> 20);
		goto fail;
	}
	if (f->vocab && !f->merges) {
		fail_label(m, err, "vocab.json without merges.txt");
		goto fail;
	}
	if (f->dict && (!f->vocab || f->config || f->special || f->added)) {
		fail_label(m, err, "dict.txt goes with encoder.json and vocab.bpe only");
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
	if (f->dict) {
		if (bpe_use_dict(m, f->dict, f->dict_len, err) < 0)
			goto fail;
		goto pattern;
	}
	if (f->config && !(cfg = parse_json(m, f->config, f->config_len, "tokenizer_config.json", err)))
		goto fail;
	/* transformers 4.36 reads special_tokens_map.json only for a tokenizer
	 * saved before 4.34, whose config has no added_tokens_decoder; the
	 * config names the roles of the others */
	modern = cfg && json_is_object(json_object_get(cfg, "added_tokens_decoder"));
	if (f->special && !modern && !(sm = parse_json(m, f->special, f->special_len,
	                                               "special_tokens_map.json", err)))
		goto fail;
	/* added tokens: tokenizer_config.json's added_tokens_decoder; without
	 * it, the slow tokenizer's legacy files (legacy_added), or the fast
	 * tokenizer's tokenizer.json */
	{
		const json_t *ad = cfg ? json_object_get(cfg, "added_tokens_decoder") : NULL, *x;
		const char *k;
		if (modern) {
			json_object_foreach((json_t *)ad, k, x) {
				char *end;
				long id = strtol(k, &end, 10);
				if (*end || id < 0 || id > INT32_MAX || !json_is_object(x) ||
				    !json_is_string(json_object_get(x, "content"))) {
					fail_label(m, err, "tokenizer_config.json: added_tokens_decoder \"%.20s\" "
					           "is not an id with a content", k);
					goto fail;
				}
				if (add_object(m, x, (int32_t)id, err) < 0)
					goto fail;
			}
		} else if (f->vocab) {
			if (legacy_added(m, f, err) < 0)
				goto fail;
		} else if (tj) {
			const json_t *list;
			int bad;
			size_t i;
			if (!(list = tokjson_list(m, tj, &bad, err)) && bad)
				goto fail;
			json_array_foreach(list, i, x)
				if (add_object(m, x, (int32_t)json_integer_value(json_object_get(x, "id")),
				               err) < 0)
					goto fail;
		}
	}
	/* the roles, from special_tokens_map.json, else tokenizer_config.json,
	 * else the class's defaults, as its constructor has them: BART's and
	 * RoBERTa's names where the vocabulary has them, GPT-2's
	 * <|endoftext|> for bos, eos and unk otherwise (a config that names
	 * some roles leaves the others at their defaults) */
	{
		static const char *const keys[] = { "bos_token", "eos_token", "unk_token", "pad_token",
		                                    "sep_token", "cls_token", "mask_token" };
		static const char *const bart[] = { "<s>", "</s>", "<unk>", "<pad>", "</s>", "<s>",
		                                    "<mask>" };
		/* transformers numbers the unnumbered in this order of the roles */
		static const int order[7] = { 0, 1, 2, 4, 3, 5, 6 };
		int32_t id[7], eot = by_content(m, "<|endoftext|>"), next = 0;
		unnumbered miss[7];
		for (int k = 0; k < 7; k++) {
			int named = 0;
			miss[k].content = NULL;
			/* special_tokens_map.json's, where it names the role, even
			 * one that no file numbers (it replaces the config's) */
			id[k] = role(m, sm, keys[k], k == 6, err, &fail, &named, &miss[k]);
			if (!named && !fail)
				id[k] = role(m, cfg, keys[k], k == 6, err, &fail, &named, &miss[k]);
			if (fail)
				goto fail;
			if (!named) {
				int32_t i = by_content(m, bart[k]);
				if (i < 0 && k < 3)
					i = eot;
				if (i >= 0 && add_token(m, m->tok[i], i, (tokflags){ k == 6, 0, 0 }, 1, err) < 0)
					goto fail;
				id[k] = i;
			}
		}
		/* the slow tokenizer's constructor numbers the special tokens
		 * no file gives an id after the others, roles first */
		if (f->vocab) {
			next = distinct_tokens(m, vocab_json);
			for (int o = 0; o < 7; o++)
				if (miss[order[o]].content &&
				    (id[order[o]] = unnumbered_add(m, &miss[order[o]], &next, err)) < 0)
					goto fail;
		}
		m->bos = id[0];
		m->eos = id[1];
		m->unk = id[2];
		m->pad = id[3];
		m->sep = id[4];
		m->cls = id[5];
		m->mask = id[6];
		if (f->vocab) {
			if (slow_specials(m, sm, cfg, !modern, id, &next, err) < 0)
				goto fail;
		} else {
			/* tokenizer.json alone: the fast tokenizer, whose decode
			 * skips the tokens its added vocabulary marks special and
			 * joins the others to the text */
			for (int i = 0; i < m->nadd; i++)
				if (m->add[i].special)
					m->special[m->add[i].id] = BPE_SP_SKIP;
		}
	}
	if (m->nadd > 1)	/* qsort(NULL, 0, ...) is undefined */
		qsort(m->add, (size_t)m->nadd, sizeof *m->add, cmp_added);
	smap_free(&m->addmap);  /* its indices are the unsorted ones */
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
	/* a tokenizer.json alone wraps with its RobertaProcessing's own cls and
	 * sep, each [token, id] */
	if (m->wrap && !f->vocab && tj && tokjson_wrap(m, json_object_get(tj, "post_processor"),
	                                               err) < 0)
		goto fail;
	if (m->wrap && (m->cls < 0 || m->sep < 0)) {
		fail_label(m, err, "a %s tokenizer needs a cls_token and a sep_token (<s> and </s>)",
		           cls ? cls : "BART");
		goto fail;
	}
	if (cfg && json_is_boolean(json_object_get(cfg, "add_prefix_space")))
		m->prefix = flag(cfg, "add_prefix_space");
	else if (tj && json_is_object(json_object_get(tj, "pre_tokenizer")))
		m->prefix = flag(json_object_get(tj, "pre_tokenizer"), "add_prefix_space");
	m->cleanup = !(cfg && json_is_false(json_object_get(cfg, "clean_up_tokenization_spaces")));
pattern:
	if (bpe_index_added(m) < 0) {
		lc_fail(err, "out of memory");
		goto fail;
	}
	fingerprint(m, f);
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
	if (lc_file_kind(path) == LC_FILE_NONE) {
		*missing = 1;
		return NULL;
	}
	*missing = 0;
	if (lc_regular_file(path, err) < 0 || stat(path, &sb) < 0)
		return NULL;
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

static int has(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return lc_file_kind(path) != LC_FILE_NONE;   /* slurp refuses a non-file by name */
}

/* fairseq's three files, beside a checkpoint */
static int fairseq_dir(const char *dir)
{
	return has(dir, "dict.txt") && has(dir, "encoder.json") && has(dir, "vocab.bpe");
}

int bpe_dir_has(const char *dir)
{
	return fairseq_dir(dir) || has(dir, "vocab.json") || has(dir, "tokenizer.json");
}

bpe_model *bpe_load_dir(const char *dir, lc_err *err)
{
	bpe_files f;
	char *buf[7] = { NULL }, unread[300] = "";
	int miss[7], bad = 0, fs = fairseq_dir(dir);
	static const char *const names[7] = { "vocab.json", "merges.txt", "tokenizer.json",
	                                      "tokenizer_config.json", "special_tokens_map.json",
	                                      "dict.txt", "added_tokens.json" };
	bpe_model *m = NULL;
	size_t len[7] = { 0 };

	for (int i = 0; i < 7; i++) {
		const char *name = names[i];
		if (fs && i != 0 && i != 1 && i != 5)
			continue;   /* fairseq's: the three files and nothing else */
		if (!fs && i == 5)
			continue;
		if (i == 6 && !buf[0])
			continue;   /* the slow tokenizer's legacy file */
		if (fs && i < 2)
			name = i == 0 ? "encoder.json" : "vocab.bpe";
		buf[i] = slurp(dir, name, &len[i], &miss[i], err);
		if (!buf[i] && !miss[i] && (i == 2 || i == 6) && buf[0]) {
			/* beside vocab.json, read only for a legacy tokenizer */
			if (!unread[0])
				snprintf(unread, sizeof unread, "%s", err->msg);
		} else if (!buf[i] && !miss[i]) {
			bad = 1;
		}
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
		f.dict = buf[5];
		f.dict_len = len[5];
		f.added = buf[6];
		f.added_len = len[6];
		f.unread = unread[0] ? unread : NULL;
		f.label = dir;
		m = bpe_load(&f, err);
	}
	for (int i = 0; i < 7; i++)
		free(buf[i]);
	return m;
}
