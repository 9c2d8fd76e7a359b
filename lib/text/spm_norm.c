/*
 * spm_norm: SentencePiece's normalizer (Normalizer::Normalize and
 * NormalizePrefix of 0.1.97), reading the precompiled character map as
 * darts-clone's DoubleArray::commonPrefixSearch does, with every array
 * index checked so that a corrupt map cannot make us read out of bounds.
 */
#include "text/spm_int.h"

#include <string.h>

static const char kSpace[] = "\xe2\x96\x81";    /* U+2581, the escaped space */

int spm_utf8_valid(const uint8_t *p, size_t len, size_t *mblen)
{
	uint32_t c = p[0], cp;

#define TRAIL(x) ((x) >= 0x80 && (x) <= 0xbf)
#define OKCP(c) ((c) < 0xd800 || ((c) >= 0xe000 && (c) <= 0x10ffff))
	if (c < 0x80) {
		*mblen = 1;
		return 1;
	}
	if (len >= 2 && (c & 0xe0) == 0xc0) {
		cp = (c & 0x1f) << 6 | (p[1] & 0x3f);
		if (TRAIL(p[1]) && cp >= 0x80 && OKCP(cp)) {
			*mblen = 2;
			return 1;
		}
	} else if (len >= 3 && (c & 0xf0) == 0xe0) {
		cp = (c & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		if (TRAIL(p[1]) && TRAIL(p[2]) && cp >= 0x800 && OKCP(cp)) {
			*mblen = 3;
			return 1;
		}
	} else if (len >= 4 && (c & 0xf8) == 0xf0) {
		cp = (c & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
		     (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
		if (TRAIL(p[1]) && TRAIL(p[2]) && TRAIL(p[3]) && cp >= 0x10000 && OKCP(cp)) {
			*mblen = 4;
			return 1;
		}
	}
#undef TRAIL
#undef OKCP
	*mblen = 1;
	return 0;
}

/* darts-clone unit accessors */
static inline uint32_t u_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
static inline int u_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static inline uint32_t u_value(uint32_t u) { return u & ((1u << 31) - 1); }
static inline uint32_t u_label(uint32_t u) { return u & ((1u << 31) | 0xff); }

/* The longest key of the map prefixing p[len]: its length, and its value
 * in *val; 0 if none. */
static size_t cm_longest(const spm_norm *n, const uint8_t *p, size_t len, uint32_t *val)
{
	const uint32_t *a = n->units;
	uint32_t id, u;
	size_t best = 0;

	if (n->nunits == 0)
		return 0;
	u = a[0];
	id = u_offset(u);
	for (size_t i = 0; i < len; i++) {
		id ^= p[i];
		if (id >= n->nunits)
			break;
		u = a[id];
		if (u_label(u) != p[i])
			break;
		id ^= u_offset(u);
		if (u_has_leaf(u) && id < n->nunits) {
			*val = u_value(a[id]);
			best = i + 1;
		}
	}
	return best;
}

size_t spm_norm_prefix(const spm_norm *n, const spm_model *m, const uint8_t *p,
                       size_t len, const char **out, size_t *outlen)
{
	size_t k, mblen;
	uint32_t v = 0;

	if (m && m->has_user) {
		k = spm_trie_longest_user(m, p, len);
		if (k) {
			*out = (const char *)p;
			*outlen = k;
			return k;
		}
	}
	k = cm_longest(n, p, len, &v);
	if (k && v < n->nrepl) {
		/* the replacement is NUL-terminated inside the blob (bounded by our copy's NUL) */
		*out = n->repl + v;
		*outlen = strlen(n->repl + v);
		return k;
	}
	if (!spm_utf8_valid(p, len, &mblen)) {
		*out = "\xef\xbf\xbd";
		*outlen = 3;
		return 1;
	}
	*out = (const char *)p;
	*outlen = mblen;
	return mblen;
}

void spm_normalize_init(spm_normst *st, const spm_norm *n, const spm_model *m,
                        const void *in, size_t len)
{
	memset(st, 0, sizeof *st);
	st->n = n;
	st->m = m;
	st->in = in;
	st->len = len;
}

static int add_ws(const spm_norm *n, spm_buf *out)
{
	if (spm_buf_grow(out, 3) < 0)
		return -1;
	if (n->escape_ws) {
		memcpy(out->p + out->len, kSpace, 3);
		out->len += 3;
	} else {
		out->p[out->len++] = ' ';
	}
	return 0;
}

/* Length of the trailing run of space units at the end of out. */
static size_t trailing_spaces(const spm_norm *n, const spm_buf *out, size_t from)
{
	size_t e = out->len;

	if (n->escape_ws) {
		while (e >= from + 3 && memcmp(out->p + e - 3, kSpace, 3) == 0)
			e -= 3;
	} else {
		while (e > from && out->p[e - 1] == ' ')
			e--;
	}
	return out->len - e;
}

int spm_normalize_more(spm_normst *st, spm_buf *out, size_t want, size_t *final)
{
	const spm_norm *n = st->n;
	size_t start = out->len, from = out->len;
	const char *sp;
	size_t splen, used;

	if (st->phase == 2) {
		*final = out->len;
		return 0;
	}
	if (st->phase == 0) {
		/* heading whitespace */
		if (n->remove_extra_ws)
			while (st->pos < st->len) {
				used = spm_norm_prefix(n, st->m, st->in + st->pos, st->len - st->pos, &sp, &splen);
				if (!(splen == 1 && sp[0] == ' '))
					break;
				st->pos += used;
			}
		if (st->pos >= st->len) {
			st->phase = 2;
			*final = out->len;
			return 0;
		}
		if (!n->treat_ws_suffix && n->add_dummy_prefix && add_ws(n, out) < 0)
			return -1;
		st->is_prev_space = n->remove_extra_ws;
		st->phase = 1;
	}
	while (st->pos < st->len && out->len - start < want) {
		used = spm_norm_prefix(n, st->m, st->in + st->pos, st->len - st->pos, &sp, &splen);
		if (st->is_prev_space)
			while (splen > 0 && sp[0] == ' ') {
				sp++;
				splen--;
			}
		if (splen > 0) {
			if (spm_buf_grow(out, 3 * splen) < 0)
				return -1;
			for (size_t i = 0; i < splen; i++) {
				if (n->escape_ws && sp[i] == ' ') {
					memcpy(out->p + out->len, kSpace, 3);
					out->len += 3;
				} else {
					out->p[out->len++] = sp[i];
				}
			}
			st->is_prev_space = sp[splen - 1] == ' ';
		}
		st->pos += used;
		if (!n->remove_extra_ws)
			st->is_prev_space = 0;
	}
	if (st->pos < st->len) {
		/* a trailing run of spaces is final only if something follows */
		*final = n->remove_extra_ws ? out->len - trailing_spaces(n, out, 0) : out->len;
		return 0;
	}
	/* end of input: drop trailing whitespace, then the suffix space */
	if (n->remove_extra_ws)
		out->len -= trailing_spaces(n, out, 0);
	(void)from;
	if (n->treat_ws_suffix && n->add_dummy_prefix && add_ws(n, out) < 0)
		return -1;
	st->phase = 2;
	*final = out->len;
	return 0;
}

int spm_normalize(const spm_norm *n, const spm_model *m, const void *in, size_t len,
                  spm_buf *out)
{
	spm_normst st;
	size_t fin;

	out->len = 0;
	spm_normalize_init(&st, n, m, in, len);
	while (st.phase != 2)
		if (spm_normalize_more(&st, out, (size_t)-1, &fin) < 0)
			return -1;
	if (spm_buf_grow(out, 0) < 0)
		return -1;
	out->p[out->len] = 0;
	return 0;
}
