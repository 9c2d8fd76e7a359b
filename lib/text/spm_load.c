/*
 * spm_load: reading a SentencePiece .model file (see spm.h, spm_int.h).
 *
 * The file is a ModelProto in protobuf wire format. We read it with a
 * small bounds-checked wire reader: every varint, length and nesting is
 * checked against what remains, unknown fields (and fields with an
 * unexpected wire type, as protobuf does) are skipped, the last value of
 * a scalar field wins and repeated embedded messages merge, as protobuf
 * does. Then the checks of SentencePiece's ModelInterface::InitializePieces
 * and Normalizer::DecodePrecompiledCharsMap, and the derived tables.
 */
#include "text/spm_int.h"

#include "base/fileio.h"
#include "base/hash.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

typedef struct pb {
	const uint8_t *p, *end, *start;
} pb;

/* Strings collected while parsing: an (offset, length) into the pool. */
typedef struct pstr {
	uint32_t off, len;
	int set;
} pstr;

typedef struct parse {
	spm_buf pool;
	spm_pc *pieces;
	size_t npieces, cap;
	int model_type, byte_fallback, treat_ws_suffix;
	pstr unk_surface, eos_piece, pad_piece;
	struct nspec {
		int seen;
		pstr charsmap;
		int add_dummy_prefix, remove_extra_ws, escape_ws;
	} ns[2];                /* normalizer_spec, denormalizer_spec */
	lc_err *err;
} parse;

int spm_buf_grow(spm_buf *b, size_t extra)
{
	size_t need, cap;
	char *q;

	if (extra > SIZE_MAX - b->len - 1)
		return -1;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	q = realloc(b->p, cap);
	if (!q)
		return -1;
	b->p = q;
	b->cap = cap;
	return 0;
}

static int pb_fail(const pb *b, lc_err *err, const char *what)
{
	return lc_fail(err, "malformed model file: %s at byte %zu", what,
	               (size_t)(b->p - b->start));
}

static int pb_varint(pb *b, uint64_t *v, lc_err *err)
{
	uint64_t x = 0;

	for (int i = 0; i < 10; i++) {
		if (b->p >= b->end)
			return pb_fail(b, err, "truncated varint");
		uint8_t c = *b->p++;
		if (i == 9 && c > 1)
			return pb_fail(b, err, "varint too long");
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return pb_fail(b, err, "varint too long");
}

/* Reads a length-delimited field's bounds into *sub. */
static int pb_len(pb *b, pb *sub, lc_err *err)
{
	uint64_t n;

	if (pb_varint(b, &n, err) < 0)
		return -1;
	if (n > (uint64_t)(b->end - b->p))
		return pb_fail(b, err, "field length past the end");
	sub->start = b->start;
	sub->p = b->p;
	sub->end = b->p + n;
	b->p += n;
	return 0;
}

static int pb_skip(pb *b, int wt, uint32_t field, int depth, lc_err *err)
{
	uint64_t v;
	pb sub;

	switch (wt) {
	case WT_VARINT:
		return pb_varint(b, &v, err);
	case WT_I64:
		if (b->end - b->p < 8)
			return pb_fail(b, err, "truncated fixed64");
		b->p += 8;
		return 0;
	case WT_LEN:
		return pb_len(b, &sub, err);
	case WT_I32:
		if (b->end - b->p < 4)
			return pb_fail(b, err, "truncated fixed32");
		b->p += 4;
		return 0;
	case WT_SGROUP:
		if (depth > 64)
			return pb_fail(b, err, "groups nested too deep");
		for (;;) {
			uint64_t key;
			if (pb_varint(b, &key, err) < 0)
				return -1;
			if ((key & 7) == WT_EGROUP) {
				if ((key >> 3) != field)
					return pb_fail(b, err, "mismatched end of group");
				return 0;
			}
			if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
				return pb_fail(b, err, "bad field number");
			if (pb_skip(b, (int)(key & 7), (uint32_t)(key >> 3), depth + 1, err) < 0)
				return -1;
		}
	default:
		return pb_fail(b, err, "bad wire type");
	}
}

/* Next key of a message: 1 and *field, *wt; 0 at the end; -1 on error. */
static int pb_key(pb *b, uint32_t *field, int *wt, lc_err *err)
{
	uint64_t key;

	if (b->p >= b->end)
		return 0;
	if (pb_varint(b, &key, err) < 0)
		return -1;
	*wt = (int)(key & 7);
	if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return pb_fail(b, err, "bad field number");
	if (*wt == WT_EGROUP)
		return pb_fail(b, err, "unexpected end of group");
	*field = (uint32_t)(key >> 3);
	return 1;
}

static int pool_add(parse *ps, const pb *sub, pstr *s)
{
	size_t n = (size_t)(sub->end - sub->p);

	if (ps->pool.len + n > UINT32_MAX - 1)
		return lc_fail(ps->err, "model file too large");
	if (spm_buf_grow(&ps->pool, n + 1) < 0)
		return lc_fail(ps->err, "out of memory");
	s->off = (uint32_t)ps->pool.len;
	s->len = (uint32_t)n;
	s->set = 1;
	memcpy(ps->pool.p + ps->pool.len, sub->p, n);
	ps->pool.len += n;
	ps->pool.p[ps->pool.len++] = 0;
	return 0;
}

/* Reads a scalar of the field's expected wire type, or skips a mismatch. */
static int get_varint(pb *b, int wt, uint32_t field, uint64_t *v, int *got, lc_err *err)
{
	*got = 0;
	if (wt != WT_VARINT)
		return pb_skip(b, wt, field, 0, err);
	if (pb_varint(b, v, err) < 0)
		return -1;
	*got = 1;
	return 0;
}

static int parse_piece(parse *ps, pb *b)
{
	spm_pc pc = {0, 0, 0.0f, SPM_NORMAL};
	pstr text = {0, 0, 0};
	uint32_t field;
	int wt, r, got;
	uint64_t v;
	pb sub;

	while ((r = pb_key(b, &field, &wt, ps->err)) > 0) {
		if (field == 1 && wt == WT_LEN) {
			if (pb_len(b, &sub, ps->err) < 0 || pool_add(ps, &sub, &text) < 0)
				return -1;
		} else if (field == 2 && wt == WT_I32) {
			uint32_t u;
			if (b->end - b->p < 4)
				return pb_fail(b, ps->err, "truncated score");
			u = (uint32_t)b->p[0] | (uint32_t)b->p[1] << 8 |
			    (uint32_t)b->p[2] << 16 | (uint32_t)b->p[3] << 24;
			memcpy(&pc.score, &u, 4);
			/* a NaN or infinite score makes the segmentation arbitrary */
			if (!isfinite(pc.score))
				return pb_fail(b, ps->err, "a piece's score is not finite");
			b->p += 4;
		} else if (field == 3) {
			if (get_varint(b, wt, field, &v, &got, ps->err) < 0)
				return -1;
			/* proto2: an unknown enum value is kept as an unknown field */
			if (got && v >= SPM_NORMAL && v <= SPM_BYTE)
				pc.type = (uint8_t)v;
		} else if (pb_skip(b, wt, field, 0, ps->err) < 0) {
			return -1;
		}
	}
	if (r < 0)
		return -1;
	pc.off = text.off;
	pc.len = text.len;
	if (!text.set) {
		/* an empty piece: keep an empty string so the check below names it */
		pc.off = 0;
		pc.len = 0;
	}
	if (ps->npieces == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 1024;
		spm_pc *q;
		if (cap > (size_t)INT32_MAX)
			return lc_fail(ps->err, "too many pieces");
		q = realloc(ps->pieces, cap * sizeof *q);
		if (!q)
			return lc_fail(ps->err, "out of memory");
		ps->pieces = q;
		ps->cap = cap;
	}
	ps->pieces[ps->npieces++] = pc;
	return 0;
}

static int parse_trainer(parse *ps, pb *b)
{
	uint32_t field;
	int wt, r, got;
	uint64_t v;
	pb sub;

	while ((r = pb_key(b, &field, &wt, ps->err)) > 0) {
		pstr *s = NULL;
		switch (field) {
		case 44: s = &ps->unk_surface; break;
		case 47: s = &ps->eos_piece; break;
		case 48: s = &ps->pad_piece; break;
		}
		if (s && wt == WT_LEN) {
			if (pb_len(b, &sub, ps->err) < 0 || pool_add(ps, &sub, s) < 0)
				return -1;
			continue;
		}
		if (field == 3 || field == 24 || field == 35) {
			if (get_varint(b, wt, field, &v, &got, ps->err) < 0)
				return -1;
			if (!got)
				continue;
			if (field == 3) {
				if (v >= 1 && v <= 4)
					ps->model_type = (int)v;
			} else if (field == 24) {
				ps->treat_ws_suffix = v != 0;
			} else {
				ps->byte_fallback = v != 0;
			}
			continue;
		}
		if (pb_skip(b, wt, field, 0, ps->err) < 0)
			return -1;
	}
	return r;
}

static int parse_normspec(parse *ps, pb *b, struct nspec *ns)
{
	uint32_t field;
	int wt, r, got;
	uint64_t v;
	pb sub;

	ns->seen = 1;
	while ((r = pb_key(b, &field, &wt, ps->err)) > 0) {
		if (field == 2 && wt == WT_LEN) {
			if (pb_len(b, &sub, ps->err) < 0 || pool_add(ps, &sub, &ns->charsmap) < 0)
				return -1;
		} else if (field >= 3 && field <= 5) {
			if (get_varint(b, wt, field, &v, &got, ps->err) < 0)
				return -1;
			if (got) {
				int *f = field == 3 ? &ns->add_dummy_prefix :
				         field == 4 ? &ns->remove_extra_ws : &ns->escape_ws;
				*f = v != 0;
			}
		} else if (pb_skip(b, wt, field, 0, ps->err) < 0) {
			return -1;
		}
	}
	return r;
}

static int parse_model(parse *ps, const uint8_t *buf, size_t len)
{
	pb b = {buf, buf + len, buf}, sub;
	uint32_t field;
	int wt, r;

	while ((r = pb_key(&b, &field, &wt, ps->err)) > 0) {
		if (wt == WT_LEN && (field == 1 || field == 2 || field == 3 || field == 5)) {
			if (pb_len(&b, &sub, ps->err) < 0)
				return -1;
			if (field == 1)
				r = parse_piece(ps, &sub);
			else if (field == 2)
				r = parse_trainer(ps, &sub);
			else
				r = parse_normspec(ps, &sub, &ps->ns[field == 5]);
			if (r < 0)
				return -1;
		} else if (pb_skip(&b, wt, field, 0, ps->err) < 0) {
			return -1;
		}
	}
	return r;
}

/* --- piece maps --- */

static int32_t map_find(const spm_model *m, const spm_map *map, const char *s, size_t n)
{
	uint32_t i;

	if (!map->cap)
		return -1;
	for (i = (uint32_t)lc_hash_bytes(s, n) & (map->cap - 1);; i = (i + 1) & (map->cap - 1)) {
		int32_t id = map->slot[i];
		if (id < 0)
			return -1;
		if (m->pieces[id].len == n && memcmp(m->strs + m->pieces[id].off, s, n) == 0)
			return id;
	}
}

/* 0 inserted, 1 already present, -1 out of memory. */
static int map_insert(spm_model *m, spm_map *map, int32_t id)
{
	const char *s = m->strs + m->pieces[id].off;
	size_t n = m->pieces[id].len;
	uint32_t i;

	for (i = (uint32_t)lc_hash_bytes(s, n) & (map->cap - 1);; i = (i + 1) & (map->cap - 1)) {
		int32_t o = map->slot[i];
		if (o < 0) {
			map->slot[i] = id;
			return 0;
		}
		if (m->pieces[o].len == n && memcmp(m->strs + m->pieces[o].off, s, n) == 0)
			return 1;
	}
}

static int map_init(spm_map *map, size_t n)
{
	uint32_t cap = 16;

	while (cap < 2 * n + 1)
		cap *= 2;
	map->slot = malloc(cap * sizeof *map->slot);
	if (!map->slot)
		return -1;
	memset(map->slot, 0xff, cap * sizeof *map->slot);
	map->cap = cap;
	return 0;
}

int32_t spm_piece_to_id(const spm_model *m, const char *piece, size_t len)
{
	int32_t id = map_find(m, &m->reserved_map, piece, len);
	if (id >= 0)
		return id;
	id = map_find(m, &m->normal_map, piece, len);
	return id >= 0 ? id : m->unk_id;
}

/* "<0xAB>" -> 0xAB, or -1 (uppercase hex only, as ByteToPiece writes). */
static int piece_to_byte(const char *s, size_t n)
{
	int v = 0;

	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	for (int i = 3; i < 5; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* --- the double-array trie of pieces --- */

/* Builder state: the array, and a doubly linked list of its free slots
 * (check == -1) from which bases are searched. */
typedef struct dab {
	spm_da *da;
	int32_t *nx, *pv;       /* [cap] free-list links, -1 at the ends */
	uint32_t cap;
	int32_t head, tail;     /* first free slot to try, last free slot */
} dab;

static int dab_reserve(dab *d, uint64_t need)
{
	uint32_t cap = d->cap;
	spm_da *q;
	int32_t *nx, *pv;

	if (need <= d->cap)
		return 0;
	if (need > (uint64_t)INT32_MAX / 2)
		return -1;
	while (cap < need)
		cap = cap ? cap * 2 : 4096;
	q = realloc(d->da, (size_t)cap * sizeof *q);
	if (q)
		d->da = q;
	nx = realloc(d->nx, (size_t)cap * sizeof *nx);
	if (nx)
		d->nx = nx;
	pv = realloc(d->pv, (size_t)cap * sizeof *pv);
	if (pv)
		d->pv = pv;
	if (!q || !nx || !pv)
		return -1;
	for (uint32_t i = d->cap; i < cap; i++) {
		q[i].base = 0;
		q[i].check = -1;
		q[i].val = -1;
		nx[i] = i + 1 < cap ? (int32_t)i + 1 : -1;
		pv[i] = (int32_t)i - 1;
	}
	pv[d->cap] = d->tail;
	if (d->tail >= 0)
		nx[d->tail] = (int32_t)d->cap;
	if (d->head < 0)
		d->head = (int32_t)d->cap;
	d->tail = (int32_t)cap - 1;
	d->cap = cap;
	return 0;
}

static void dab_take(dab *d, int32_t t, int32_t check)
{
	d->da[t].check = check;
	if (d->pv[t] >= 0)
		d->nx[d->pv[t]] = d->nx[t];
	if (d->nx[t] >= 0)
		d->pv[d->nx[t]] = d->pv[t];
	if (d->head == t)
		d->head = d->nx[t];
	if (d->tail == t)
		d->tail = d->pv[t];
}

typedef struct dakey {
	const char *s;
	uint32_t len;
	int32_t id;
} dakey;

static int key_cmp(const void *a, const void *b)
{
	const dakey *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

typedef struct daitem {
	int32_t slot;
	uint32_t lo, hi, depth;
} daitem;

static int build_trie(spm_model *m, lc_err *err)
{
	dakey *keys = NULL;
	daitem *q = NULL;
	size_t nkeys = 0, qh = 0, qt = 0, qcap;
	dab d = {NULL, NULL, NULL, 0, -1, -1};
	int rc = -1;

	keys = malloc(((size_t)m->npieces + 1) * sizeof *keys);
	if (!keys)
		goto oom;
	for (int32_t i = 0; i < m->npieces; i++) {
		int t = m->pieces[i].type;
		if ((t == SPM_NORMAL || t == SPM_USER_DEFINED || t == SPM_UNUSED) &&
		    map_find(m, &m->normal_map, m->strs + m->pieces[i].off, m->pieces[i].len) == i)
			keys[nkeys++] = (dakey){m->strs + m->pieces[i].off, m->pieces[i].len, i};
	}
	qsort(keys, nkeys, sizeof *keys, key_cmp);

	qcap = 1024;
	q = malloc(qcap * sizeof *q);
	if (!q || dab_reserve(&d, 512) < 0)
		goto oom;
	dab_take(&d, 0, -2);
	q[qt++] = (daitem){0, 0, (uint32_t)nkeys, 0};
	m->max_key = 0;
	while (qh < qt) {
		daitem it = q[qh++];
		uint32_t i = it.lo;
		uint8_t labels[256];
		uint32_t glo[257];
		int nl = 0;

		if (i < it.hi && keys[i].len == it.depth) {
			d.da[it.slot].val = keys[i].id;
			if (it.depth > m->max_key)
				m->max_key = it.depth;
			i++;
		}
		for (; i < it.hi; i++) {
			uint8_t c = (uint8_t)keys[i].s[it.depth];
			if (nl == 0 || labels[nl - 1] != c) {
				labels[nl] = c;
				glo[nl++] = i;
			}
		}
		glo[nl] = it.hi;
		if (nl == 0)
			continue;
		/* find a base whose slots for every label are free, walking the
		 * free list; a long walk moves the list's head on, giving up on
		 * the holes it passed (a little memory for a fast build) */
		int32_t pos = d.head, base, mark = -1;
		uint32_t tried = 0;
		for (;;) {
			if (pos < 0) {
				/* end of the free list: new slots follow the old end */
				uint32_t old = d.cap;
				if (dab_reserve(&d, (uint64_t)d.cap + 257) < 0)
					goto oom;
				pos = (int32_t)old;
			}
			if (dab_reserve(&d, (uint64_t)pos + 257) < 0)
				goto oom;
			base = pos - (int32_t)labels[0];
			if (base >= 1) {
				int k;
				for (k = 1; k < nl; k++)
					if (d.da[base + labels[k]].check != -1)
						break;
				if (k == nl)
					break;
			}
			if (++tried == 32)
				mark = pos;
			pos = d.nx[pos];
		}
		d.da[it.slot].base = base;
		for (int k = 0; k < nl; k++)
			dab_take(&d, base + labels[k], it.slot);
		if (mark >= 0 && d.da[mark].check == -1)
			d.head = mark;
		if (qt + (size_t)nl > qcap) {
			daitem *nq;
			/* compact the consumed head before growing */
			memmove(q, q + qh, (qt - qh) * sizeof *q);
			qt -= qh;
			qh = 0;
			while (qt + (size_t)nl > qcap)
				qcap *= 2;
			nq = realloc(q, qcap * sizeof *q);
			if (!nq)
				goto oom;
			q = nq;
		}
		for (int k = 0; k < nl; k++)
			q[qt++] = (daitem){base + labels[k], glo[k], glo[k + 1], it.depth + 1};
	}
	m->da = d.da;
	m->nda = d.cap;
	d.da = NULL;
	{
		/* give back the unused tail */
		uint32_t used = d.cap;
		while (used > 1 && m->da[used - 1].check == -1)
			used--;
		used += 256;
		if (used < m->nda) {
			spm_da *sh = realloc(m->da, (size_t)used * sizeof *sh);
			if (sh)
				m->da = sh;
			m->nda = used;
		}
	}
	rc = 0;
	goto out;
oom:
	lc_fail(err, "out of memory building the piece trie");
out:
	free(d.da);
	free(d.nx);
	free(d.pv);
	free(keys);
	free(q);
	return rc;
}

size_t spm_trie_longest_user(const spm_model *m, const uint8_t *p, size_t len)
{
	int32_t s = 0;
	size_t best = 0;

	for (size_t i = 0; i < len; i++) {
		uint32_t t = (uint32_t)(m->da[s].base + p[i]);
		if (t >= m->nda || m->da[t].check != s)
			break;
		s = (int32_t)t;
		if (m->da[t].val >= 0 && m->pieces[m->da[t].val].type == SPM_USER_DEFINED)
			best = i + 1;
	}
	return best;
}

/* --- the precompiled character map --- */

static int load_charsmap(spm_model *m, int which, const char *blob, size_t n, lc_err *err)
{
	spm_norm *nm = which ? &m->denorm : &m->norm;
	uint32_t tsize;
	size_t nunits, nrepl;

	if (n == 0)
		return 0;
	if (n <= 4)
		return lc_fail(err, "malformed model file: character map blob is broken");
	tsize = (uint32_t)(uint8_t)blob[0] | (uint32_t)(uint8_t)blob[1] << 8 |
	        (uint32_t)(uint8_t)blob[2] << 16 | (uint32_t)(uint8_t)blob[3] << 24;
	if (tsize > n - 4)
		return lc_fail(err, "malformed model file: character map trie size %u "
		               "exceeds its blob (%zu bytes)", tsize, n);
	nunits = tsize / 4;
	nrepl = n - 4 - tsize;
	m->cm_units[which] = malloc((nunits ? nunits : 1) * sizeof(uint32_t));
	m->cm_repl[which] = malloc(nrepl + 1);
	if (!m->cm_units[which] || !m->cm_repl[which])
		return lc_fail(err, "out of memory");
	for (size_t i = 0; i < nunits; i++) {
		const uint8_t *u = (const uint8_t *)blob + 4 + 4 * i;
		m->cm_units[which][i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 |
		                        (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
	}
	memcpy(m->cm_repl[which], blob + 4 + tsize, nrepl);
	m->cm_repl[which][nrepl] = 0;
	nm->units = m->cm_units[which];
	nm->nunits = (uint32_t)nunits;
	nm->repl = m->cm_repl[which];
	nm->nrepl = (uint32_t)nrepl;
	return 0;
}

/* --- the whole model --- */

static char *dup_str(const char *pool, const pstr *s, const char *dflt)
{
	const char *src = s->set ? pool + s->off : dflt;
	size_t n = s->set ? s->len : strlen(dflt);
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, src, n);
		d[n] = 0;
	}
	return d;
}

static int32_t special_id(const spm_model *m, const char *piece)
{
	int32_t id = spm_piece_to_id(m, piece, strlen(piece));
	return id >= 0 && m->pieces[id].type != SPM_UNKNOWN ? id : -1;
}

static int finish(spm_model *m, parse *ps, lc_err *err)
{
	int byte_found = 0;

	if (ps->model_type != 1)
		return lc_fail(err, "unsupported model type %s (only unigram models are supported)",
		               ps->model_type == 2 ? "BPE" : ps->model_type == 3 ? "word" : "char");
	m->model_type = ps->model_type;
	m->byte_fallback = ps->byte_fallback;
	m->treat_ws_suffix = ps->treat_ws_suffix;
	m->unk_surface = dup_str(m->strs, &ps->unk_surface, " \xe2\x81\x87 ");
	m->eos_piece = dup_str(m->strs, &ps->eos_piece, "</s>");
	m->pad_piece = dup_str(m->strs, &ps->pad_piece, "<pad>");
	if (!m->unk_surface || !m->eos_piece || !m->pad_piece)
		return lc_fail(err, "out of memory");

	m->unk_id = -1;
	for (int i = 0; i < 256; i++)
		m->byte_id[i] = -1;
	if (map_init(&m->normal_map, (size_t)m->npieces) < 0 ||
	    map_init(&m->reserved_map, (size_t)m->npieces) < 0)
		return lc_fail(err, "out of memory");
	for (int32_t i = 0; i < m->npieces; i++) {
		const spm_pc *p = &m->pieces[i];
		const char *s = m->strs + p->off;
		int normal = p->type == SPM_NORMAL || p->type == SPM_USER_DEFINED ||
		             p->type == SPM_UNUSED;
		int r;

		if (p->len == 0)
			return lc_fail(err, "invalid model: piece %d is empty", (int)i);
		r = map_insert(m, normal ? &m->normal_map : &m->reserved_map, i);
		if (r > 0)
			return lc_fail(err, "invalid model: piece \"%.*s\" (id %d) is already defined",
			               (int)(p->len > 64 ? 64 : p->len), s, (int)i);
		if (p->type == SPM_USER_DEFINED)
			m->has_user = 1;
		if (p->type == SPM_UNKNOWN) {
			if (m->unk_id >= 0)
				return lc_fail(err, "invalid model: more than one unknown piece (ids %d and %d)",
				               (int)m->unk_id, (int)i);
			m->unk_id = i;
		}
		if (p->type == SPM_BYTE) {
			int b = piece_to_byte(s, p->len);
			if (!m->byte_fallback)
				return lc_fail(err, "invalid model: byte piece \"%.*s\" but byte_fallback is off",
				               (int)(p->len > 64 ? 64 : p->len), s);
			if (b < 0)
				return lc_fail(err, "invalid model: invalid byte piece \"%.*s\"",
				               (int)(p->len > 64 ? 64 : p->len), s);
			if (m->byte_id[b] < 0)
				byte_found++;
			m->byte_id[b] = i;
		}
	}
	if (m->unk_id < 0)
		return lc_fail(err, "invalid model: no unknown piece");
	if (m->byte_fallback && byte_found != 256)
		return lc_fail(err, "invalid model: byte_fallback is on but only %d of 256 byte pieces",
		               byte_found);
	/* byte pieces resolve through PieceToId, as SentencePiece does */
	if (m->byte_fallback)
		for (int b = 0; b < 256; b++) {
			char s[8];
			snprintf(s, sizeof s, "<0x%02X>", b);
			m->byte_id[b] = spm_piece_to_id(m, s, 6);
		}

	/* Model::Model: min and max over normal pieces, FLT_MIN quirk included */
	m->min_score = FLT_MAX;
	m->max_score = FLT_MIN;
	for (int32_t i = 0; i < m->npieces; i++)
		if (m->pieces[i].type == SPM_NORMAL) {
			if (m->pieces[i].score < m->min_score)
				m->min_score = m->pieces[i].score;
			if (m->pieces[i].score > m->max_score)
				m->max_score = m->pieces[i].score;
		}
	if (m->min_score == FLT_MAX)
		m->min_score = 0.0f;
	if (m->max_score == FLT_MIN)
		m->max_score = 0.0f;

	m->eos_id = special_id(m, m->eos_piece);
	m->pad_id = special_id(m, m->pad_piece);
	m->extra_base = spm_piece_to_id(m, "<extra_id_0>", 12) == m->unk_id &&
	                (int64_t)m->npieces + SPM_EXTRA_IDS <= INT32_MAX ? m->npieces : -1;

	for (int k = 0; k < SPM_EXTRA_IDS; k++)
		snprintf(m->extra_text[k], sizeof m->extra_text[k], "<extra_id_%d>", k);

	/* normalizers */
	for (int w = 0; w < 2; w++) {
		struct nspec *ns = &ps->ns[w];
		spm_norm *nm = w ? &m->denorm : &m->norm;
		nm->add_dummy_prefix = ns->add_dummy_prefix;
		nm->remove_extra_ws = ns->remove_extra_ws;
		nm->escape_ws = ns->escape_ws;
		nm->treat_ws_suffix = w ? 0 : m->treat_ws_suffix;
		if (ns->charsmap.set && load_charsmap(m, w, m->strs + ns->charsmap.off,
		                                      ns->charsmap.len, err) < 0)
			return -1;
	}
	m->has_denorm = ps->ns[1].seen && ps->ns[1].charsmap.set && ps->ns[1].charsmap.len > 0;
	return build_trie(m, err);
}

spm_model *spm_load(const void *buf, size_t len, lc_err *err)
{
	parse ps;
	spm_model *m;
	uint64_t h = 14695981039346656037ull;

	memset(&ps, 0, sizeof ps);
	ps.err = err;
	ps.model_type = 1;
	for (int w = 0; w < 2; w++) {
		ps.ns[w].add_dummy_prefix = 1;
		ps.ns[w].remove_extra_ws = 1;
		ps.ns[w].escape_ws = 1;
	}
	m = calloc(1, sizeof *m);
	if (!m) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	if (len == 0) {
		lc_fail(err, "empty model file");
		goto fail;
	}
	if (parse_model(&ps, buf, len) < 0)
		goto fail;
	m->strs = ps.pool.p ? ps.pool.p : calloc(1, 1);
	ps.pool.p = NULL;
	m->pieces = ps.pieces;
	ps.pieces = NULL;
	m->npieces = (int32_t)ps.npieces;
	if (!m->strs) {
		lc_fail(err, "out of memory");
		goto fail;
	}
	if (m->npieces == 0) {
		lc_fail(err, "invalid model: no pieces");
		goto fail;
	}
	if (finish(m, &ps, err) < 0)
		goto fail;
	for (size_t i = 0; i < len; i++)
		h = (h ^ ((const uint8_t *)buf)[i]) * 1099511628211ull;
	snprintf(m->fp, sizeof m->fp, "%016llx", (unsigned long long)h);
	free(ps.pool.p);
	return m;
fail:
	free(ps.pool.p);
	free(ps.pieces);
	spm_free(m);
	return NULL;
}

spm_model *spm_load_file(const char *path, lc_err *err)
{
	FILE *f;
	char *buf = NULL;
	size_t n = 0, cap = 0, got;
	spm_model *m;

	if (lc_regular_file(path, err) < 0)
		return NULL;
	if (!(f = fopen(path, "rb"))) {
		lc_fail(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			char *q;
			if (cap >= ((size_t)1 << 31)) {
				fclose(f);
				free(buf);
				lc_fail(err, "%s: model file too large", path);
				return NULL;
			}
			q = realloc(buf, cap = cap ? cap * 2 : 1 << 20);
			if (!q) {
				fclose(f);
				free(buf);
				lc_fail(err, "%s: out of memory", path);
				return NULL;
			}
			buf = q;
		}
		got = fread(buf + n, 1, cap - n, f);
		if (!got)
			break;
		n += got;
	}
	if (ferror(f)) {
		lc_fail(err, "%s: read error", path);
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	m = spm_load(buf, n, err);
	free(buf);
	if (!m)
		lc_prefix(err, "%s", path);
	return m;
}

void spm_free(spm_model *m)
{
	if (!m)
		return;
	free(m->strs);
	free(m->pieces);
	free(m->unk_surface);
	free(m->eos_piece);
	free(m->pad_piece);
	for (int w = 0; w < 2; w++) {
		free(m->cm_units[w]);
		free(m->cm_repl[w]);
	}
	free(m->da);
	free(m->normal_map.slot);
	free(m->reserved_map.slot);
	free(m);
}

int32_t spm_npieces(const spm_model *m) { return m->npieces; }

int32_t spm_vocab_size(const spm_model *m)
{
	return m->npieces + (m->extra_base >= 0 ? SPM_EXTRA_IDS : 0);
}

const char *spm_piece(const spm_model *m, int32_t id, size_t *len)
{
	if (id < 0 || id >= spm_vocab_size(m))
		return NULL;
	if (id >= m->npieces) {
		int k = SPM_EXTRA_IDS - 1 - (id - m->npieces);   /* <extra_id_k> */
		if (len)
			*len = strlen(m->extra_text[k]);
		return m->extra_text[k];
	}
	if (len)
		*len = m->pieces[id].len;
	return m->strs + m->pieces[id].off;
}

int spm_type_of(const spm_model *m, int32_t id)
{
	if (id < 0 || id >= spm_vocab_size(m))
		return 0;
	return id < m->npieces ? m->pieces[id].type : SPM_USER_DEFINED;
}

int32_t spm_unk_id(const spm_model *m) { return m->unk_id; }
int32_t spm_eos_id(const spm_model *m) { return m->eos_id; }
int32_t spm_pad_id(const spm_model *m) { return m->pad_id; }
const char *spm_fingerprint(const spm_model *m) { return m->fp; }
