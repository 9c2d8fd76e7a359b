/*
 * rouge.c: rouge-score's tokenizer and ROUGE-N/L/Lsum (see rouge.h).
 */
#include "text/rouge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/porter.h"

/* ------------------------------------------------------------------ */
/* types */

int rouge_type_parse(const char *s, rouge_type *t)
{
	if (strcmp(s, "rougeL") == 0) {
		t->kind = ROUGE_L, t->n = 0;
		return 0;
	}
	if (strcmp(s, "rougeLsum") == 0) {
		t->kind = ROUGE_LSUM, t->n = 0;
		return 0;
	}
	if (strncmp(s, "rouge", 5) == 0 && s[5] >= '1' && s[5] <= '9' && s[6] == 0) {
		t->kind = ROUGE_N, t->n = s[5] - '0';
		return 0;
	}
	return -1;
}

const char *rouge_type_name(rouge_type t, char *buf)
{
	switch (t.kind) {
	case ROUGE_N: snprintf(buf, 16, "rouge%d", t.n); break;
	case ROUGE_L: strcpy(buf, "rougeL"); break;
	case ROUGE_LSUM: strcpy(buf, "rougeLsum"); break;
	default: strcpy(buf, "?"); break;
	}
	return buf;
}

double rouge_fmeasure(double p, double r)
{
	if (p + r > 0)
		return 2 * p * r / (p + r);
	return 0.0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem, lc_err *err)
{
	size_t nc = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return lc_fail(err, "out of memory");
		nc *= 2;
	}
	q = realloc(*p, nc * elem);
	if (!q)
		return lc_fail(err, "out of memory (%zu bytes)", nc * elem);
	*p = q;
	*cap = nc;
	return 0;
}

/* ------------------------------------------------------------------ */
/* vocabulary: interned token strings */

typedef struct ventry {
	size_t off;          /* into chars */
	uint32_t len;
	uint32_t hash;
	uint32_t out;        /* id to emit for this spelling (its stem's id), or UINT32_MAX */
} ventry;

struct rouge_vocab {
	int stem;
	ventry *e;           /* [n] */
	uint32_t n;
	size_t ecap;
	char *chars;         /* spellings, each NUL-terminated */
	size_t nchars, ccap;
	uint32_t *slot;      /* [nslot] entry index + 1, 0 = empty */
	size_t nslot;
	char *sbuf;          /* stemming buffer */
	size_t sbcap;
	char *tbuf;          /* token being read */
	size_t tbcap;
};

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

rouge_vocab *rouge_vocab_new(int stem, lc_err *err)
{
	rouge_vocab *v = calloc(1, sizeof *v);

	if (!v || !(v->slot = calloc(v->nslot = 1024, sizeof *v->slot))) {
		free(v);
		lc_fail(err, "out of memory");
		return NULL;
	}
	v->stem = stem;
	return v;
}

void rouge_vocab_free(rouge_vocab *v)
{
	if (!v)
		return;
	free(v->e);
	free(v->chars);
	free(v->slot);
	free(v->sbuf);
	free(v->tbuf);
	free(v);
}

uint32_t rouge_vocab_size(const rouge_vocab *v)
{
	return v->n;
}

const char *rouge_vocab_word(const rouge_vocab *v, uint32_t id)
{
	return id < v->n ? v->chars + v->e[id].off : NULL;
}

static int vocab_rehash(rouge_vocab *v, lc_err *err)
{
	size_t ns = v->nslot * 2, i, k;
	uint32_t *s = calloc(ns, sizeof *s);

	if (!s)
		return lc_fail(err, "out of memory");
	for (i = 0; i < v->n; i++) {
		for (k = v->e[i].hash & (ns - 1); s[k]; k = (k + 1) & (ns - 1))
			;
		s[k] = (uint32_t)i + 1;
	}
	free(v->slot);
	v->slot = s;
	v->nslot = ns;
	return 0;
}

/* The entry spelled s[len], added if new. */
static int vocab_intern(rouge_vocab *v, const char *s, size_t len, uint32_t *id, lc_err *err)
{
	uint32_t h = hash_bytes(s, len);
	size_t k;
	ventry *e;

	for (k = h & (v->nslot - 1); v->slot[k]; k = (k + 1) & (v->nslot - 1)) {
		e = &v->e[v->slot[k] - 1];
		if (e->hash == h && e->len == len && memcmp(v->chars + e->off, s, len) == 0) {
			*id = v->slot[k] - 1;
			return 0;
		}
	}
	if (v->n >= UINT32_MAX - 1 || len >= UINT32_MAX)
		return lc_fail(err, "too many distinct tokens");
	if (grow((void **)&v->e, &v->ecap, (size_t)v->n + 1, sizeof *v->e, err) < 0 ||
	    grow((void **)&v->chars, &v->ccap, v->nchars + len + 1, 1, err) < 0)
		return -1;
	e = &v->e[v->n];
	e->off = v->nchars;
	e->len = (uint32_t)len;
	e->hash = h;
	e->out = UINT32_MAX;
	memcpy(v->chars + v->nchars, s, len);
	v->chars[v->nchars + len] = 0;
	v->nchars += len + 1;
	v->slot[k] = v->n + 1;
	*id = v->n++;
	if ((size_t)v->n * 2 > v->nslot)
		return vocab_rehash(v, err);
	return 0;
}

/* The id to emit for the token s[len]: itself, or its stem. */
static int vocab_token(rouge_vocab *v, const char *s, size_t len, uint32_t *out, lc_err *err)
{
	uint32_t id, sid;
	size_t sl;

	if (vocab_intern(v, s, len, &id, err) < 0)
		return -1;
	if (v->e[id].out != UINT32_MAX) {
		*out = v->e[id].out;
		return 0;
	}
	if (!v->stem || len <= 3) {
		v->e[id].out = id;
	} else {
		if (grow((void **)&v->sbuf, &v->sbcap, len + 1, 1, err) < 0)
			return -1;
		sl = porter_stem(s, len, v->sbuf);
		if (vocab_intern(v, v->sbuf, sl, &sid, err) < 0)
			return -1;
		v->e[id].out = sid;
	}
	*out = v->e[id].out;
	return 0;
}

/* ------------------------------------------------------------------ */
/* tokenizer */

int rouge_tokenize(rouge_vocab *v, const char *text, size_t len,
                   uint32_t **ids, size_t *n, size_t *cap, lc_err *err)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t tl = 0, i = 0;

	for (;;) {
		int c = -1;          /* the token character here, or -1 for a separator */
		int end = 0;         /* the character after c is a separator */
		size_t adv = 1;

		if (i < len) {
			unsigned b = s[i];
			if (b >= 'A' && b <= 'Z')
				c = (int)(b - 'A' + 'a');
			else if ((b >= 'a' && b <= 'z') || (b >= '0' && b <= '9'))
				c = (int)b;
			else if (b == 0xC4 && i + 1 < len && s[i + 1] == 0xB0)
				c = 'i', adv = 2, end = 1;   /* U+0130 -> "i" + U+0307 (a separator) */
			else if (b == 0xE2 && i + 2 < len && s[i + 1] == 0x84 && s[i + 2] == 0xAA)
				c = 'k', adv = 3;            /* U+212A KELVIN SIGN -> "k" */
		}
		if (c >= 0) {
			if (grow((void **)&v->tbuf, &v->tbcap, tl + 1, 1, err) < 0)
				return -1;
			v->tbuf[tl++] = (char)c;
			if (!end) {
				i += adv;
				continue;
			}
		}
		if (tl) {
			uint32_t id;
			if (vocab_token(v, v->tbuf, tl, &id, err) < 0 ||
			    grow((void **)ids, cap, *n + 1, sizeof **ids, err) < 0)
				return -1;
			(*ids)[(*n)++] = id;
			tl = 0;
		}
		if (i >= len)
			return 0;
		i += adv;
	}
}

void rouge_doc_init(rouge_doc *d)
{
	memset(d, 0, sizeof *d);
}

void rouge_doc_clear(rouge_doc *d)
{
	d->n = 0;
	d->nsent = 0;
}

void rouge_doc_free(rouge_doc *d)
{
	free(d->id);
	free(d->sent);
	rouge_doc_init(d);
}

int rouge_doc_add_sentence(rouge_vocab *v, rouge_doc *d, const char *text, size_t len, lc_err *err)
{
	if (grow((void **)&d->sent, &d->scap, d->nsent + 2, sizeof *d->sent, err) < 0)
		return -1;
	d->sent[d->nsent] = d->n;
	if (rouge_tokenize(v, text, len, &d->id, &d->n, &d->cap, err) < 0)
		return -1;
	d->nsent++;
	d->sent[d->nsent] = d->n;
	return 0;
}

int rouge_doc_set_text(rouge_vocab *v, rouge_doc *d, const char *text, size_t len, lc_err *err)
{
	size_t i = 0, j;

	rouge_doc_clear(d);
	if (grow((void **)&d->sent, &d->scap, 1, sizeof *d->sent, err) < 0)
		return -1;
	d->sent[0] = 0;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		j = nl ? (size_t)(nl - text) : len;
		/* rouge-score drops only zero-length lines; a line without
		 * tokens adds nothing, so it is left out too */
		if (j > i && rouge_doc_add_sentence(v, d, text + i, j - i, err) < 0)
			return -1;
		i = j + 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* scratch */

typedef struct ngslot {
	size_t pos;          /* start of one occurrence in ref, + 1; 0 = empty */
	uint32_t hash;
	uint32_t nref, ncand;
} ngslot;

struct rouge_work {
	ngslot *ng;          /* n-gram table */
	size_t ngcap;
	uint64_t *mask;      /* [nd][W] match masks of the pattern's distinct tokens */
	size_t maskcap;
	int32_t *slot_of;    /* [vocab] mask row of an id, -1 if none */
	size_t slotcap;
	uint64_t *cols;      /* [(nc+1)][W] LCS columns, for backtracking */
	size_t colcap;
	uint64_t *uni;       /* [W] union of LCS positions in a reference sentence */
	size_t unicap;
	uint32_t *cnt_r, *cnt_c; /* [vocab] token counts for Lsum */
	size_t rcap, ccap;
};

rouge_work *rouge_work_new(lc_err *err)
{
	rouge_work *w = calloc(1, sizeof *w);

	if (!w)
		lc_fail(err, "out of memory");
	return w;
}

void rouge_work_free(rouge_work *w)
{
	if (!w)
		return;
	free(w->ng);
	free(w->mask);
	free(w->slot_of);
	free(w->cols);
	free(w->uni);
	free(w->cnt_r);
	free(w->cnt_c);
	free(w);
}

static uint32_t max_id(const uint32_t *a, size_t n, uint32_t m)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] + 1 > m)
			m = a[i] + 1;
	return m;
}

/* Makes slot_of cover ids < nid, all -1. */
static int ensure_slots(rouge_work *w, uint32_t nid, lc_err *err)
{
	size_t old = w->slotcap;

	if (nid <= old)
		return 0;
	if (grow((void **)&w->slot_of, &w->slotcap, nid, sizeof *w->slot_of, err) < 0)
		return -1;
	memset(w->slot_of + old, 0xff, (w->slotcap - old) * sizeof *w->slot_of);
	return 0;
}

/* ------------------------------------------------------------------ */
/* ROUGE-N */

static uint32_t hash_ngram(const uint32_t *p, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	int k;

	for (k = 0; k < n; k++) {
		h ^= p[k];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

int rouge_ngram(rouge_work *w, int n, const uint32_t *cand, size_t nc,
                const uint32_t *ref, size_t nr, rouge_score *out, lc_err *err)
{
	size_t nref = nr >= (size_t)n ? nr - (size_t)n + 1 : 0;
	size_t ncand = nc >= (size_t)n ? nc - (size_t)n + 1 : 0;
	size_t cap = 16, mask, i, k;
	uint64_t hits = 0;

	if (n < 1 || n > 9)
		return lc_fail(err, "rouge%d: n must be 1..9", n);
	while (cap < 2 * nref + 2)
		cap *= 2;
	if (cap > w->ngcap) {
		free(w->ng);
		w->ngcap = 0;
		if (!(w->ng = malloc(cap * sizeof *w->ng)))
			return lc_fail(err, "out of memory");
		w->ngcap = cap;
	}
	memset(w->ng, 0, cap * sizeof *w->ng);
	mask = cap - 1;
	for (i = 0; i < nref; i++) {
		uint32_t h = hash_ngram(ref + i, n);
		for (k = h & mask; w->ng[k].pos; k = (k + 1) & mask)
			if (w->ng[k].hash == h &&
			    memcmp(ref + w->ng[k].pos - 1, ref + i, (size_t)n * sizeof *ref) == 0)
				break;
		if (!w->ng[k].pos) {
			w->ng[k].pos = i + 1;
			w->ng[k].hash = h;
		}
		w->ng[k].nref++;
	}
	for (i = 0; nref && i < ncand; i++) {
		uint32_t h = hash_ngram(cand + i, n);
		for (k = h & mask; w->ng[k].pos; k = (k + 1) & mask)
			if (w->ng[k].hash == h &&
			    memcmp(ref + w->ng[k].pos - 1, cand + i, (size_t)n * sizeof *ref) == 0) {
				if (w->ng[k].ncand < w->ng[k].nref) {
					w->ng[k].ncand++;
					hits++;
				}
				break;
			}
	}
	out->p = (double)hits / (double)(ncand > 1 ? ncand : 1);
	out->r = (double)hits / (double)(nref > 1 ? nref : 1);
	out->f = rouge_fmeasure(out->p, out->r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* bit-parallel LCS */

/* Builds match masks for pattern a[na]: W words per row, one row per
 * distinct id; slot_of[id] = row. Undo with clear_masks. */
static int build_masks(rouge_work *w, const uint32_t *a, size_t na, size_t W, lc_err *err)
{
	size_t i, nd = 0;

	if (ensure_slots(w, max_id(a, na, 0), err) < 0)
		return -1;
	for (i = 0; i < na; i++)
		if (w->slot_of[a[i]] < 0)
			w->slot_of[a[i]] = (int32_t)nd++;
	if (nd > SIZE_MAX / 8 / W ||
	    grow((void **)&w->mask, &w->maskcap, nd * W, sizeof *w->mask, err) < 0) {
		for (i = 0; i < na; i++)
			w->slot_of[a[i]] = -1;
		return lc_fail(err, "out of memory");
	}
	memset(w->mask, 0, nd * W * sizeof *w->mask);
	for (i = 0; i < na; i++)
		w->mask[(size_t)w->slot_of[a[i]] * W + i / 64] |= 1ull << (i % 64);
	return 0;
}

static void clear_masks(rouge_work *w, const uint32_t *a, size_t na)
{
	size_t i;

	for (i = 0; i < na; i++)
		w->slot_of[a[i]] = -1;
}

/* One column step: V = (V + (V & M)) | (V & ~M). */
static void lcs_step(uint64_t *V, const uint64_t *M, size_t W)
{
	uint64_t carry = 0;
	size_t k;

	for (k = 0; k < W; k++) {
		uint64_t v = V[k], u = v & M[k];
		uint64_t x = v + u, c1 = x < v;
		uint64_t y = x + carry, c2 = y < x;
		carry = c1 | c2;
		V[k] = y | (v & ~M[k]);
	}
}

/* Bits set in x (portable: no -mpopcnt needed). */
static size_t popcount64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (size_t)((x * 0x0101010101010101ull) >> 56);
}

/* Zero bits among the first i bits of V: the LCS table's value t[i][j]. */
static size_t zeros_prefix(const uint64_t *V, size_t i)
{
	size_t k, ones = 0;

	for (k = 0; k < i / 64; k++)
		ones += popcount64(V[k]);
	if (i % 64)
		ones += popcount64(V[i / 64] & ((1ull << (i % 64)) - 1));
	return i - ones;
}

int rouge_lcs_len(rouge_work *w, const uint32_t *a, size_t na,
                  const uint32_t *b, size_t nb, size_t *len, lc_err *err)
{
	size_t W, j;
	uint64_t *V;

	if (na > nb) {           /* the shorter one is the bit pattern */
		const uint32_t *t = a; size_t tn = na;
		a = b, na = nb, b = t, nb = tn;
	}
	*len = 0;
	if (!na)
		return 0;
	W = (na + 63) / 64;
	if (build_masks(w, a, na, W, err) < 0)
		return -1;
	if (grow((void **)&w->cols, &w->colcap, W, sizeof *w->cols, err) < 0) {
		clear_masks(w, a, na);
		return -1;
	}
	V = w->cols;
	memset(V, 0xff, W * sizeof *V);
	for (j = 0; j < nb; j++) {
		int32_t s = b[j] < w->slotcap ? w->slot_of[b[j]] : -1;
		if (s >= 0)
			lcs_step(V, w->mask + (size_t)s * W, W);
	}
	*len = zeros_prefix(V, na);
	clear_masks(w, a, na);
	return 0;
}

int rouge_lcs(rouge_work *w, const uint32_t *cand, size_t nc,
              const uint32_t *ref, size_t nr, rouge_score *out, lc_err *err)
{
	size_t l;

	out->p = out->r = out->f = 0;
	if (!nc || !nr)
		return 0;
	if (rouge_lcs_len(w, ref, nr, cand, nc, &l, err) < 0)
		return -1;
	out->p = (double)l / (double)nc;
	out->r = (double)l / (double)nr;
	out->f = rouge_fmeasure(out->p, out->r);
	return 0;
}

/* Marks in w->uni the reference positions of the LCS of r[nr] (pattern,
 * masks built) and c[nc] that rouge-score's _backtrack_norec picks. */
static int lcs_union_add(rouge_work *w, const uint32_t *r, size_t nr,
                         const uint32_t *c, size_t nc, size_t W, lc_err *err)
{
	size_t i, j, steps = 0, left;
	uint64_t *cols;

	for (j = 0; j < nc; j++)            /* most sentence pairs share no token */
		if (c[j] < w->slotcap && w->slot_of[c[j]] >= 0)
			break;
	if (j == nc)
		return 0;
	if (nc + 1 > SIZE_MAX / 8 / W ||
	    grow((void **)&w->cols, &w->colcap, (nc + 1) * W, sizeof *w->cols, err) < 0)
		return lc_fail(err, "out of memory for a %zu x %zu LCS", nr, nc);
	cols = w->cols;
	memset(cols, 0xff, W * sizeof *cols);
	for (j = 0; j < nc; j++) {
		int32_t s = c[j] < w->slotcap ? w->slot_of[c[j]] : -1;
		memcpy(cols + (j + 1) * W, cols + j * W, W * sizeof *cols);
		if (s >= 0) {
			lcs_step(cols + (j + 1) * W, w->mask + (size_t)s * W, W);
			steps++;
		}
	}
	if (!steps || !(left = zeros_prefix(cols + nc * W, nr)))
		return 0;                       /* nothing in common */
	i = nr;
	j = nc;
	while (i > 0 && j > 0 && left > 0) {    /* stops once all LCS tokens are found */
		if (r[i - 1] == c[j - 1]) {
			w->uni[(i - 1) / 64] |= 1ull << ((i - 1) % 64);
			i--, j--;
			left--;
		} else if (zeros_prefix(cols + (j - 1) * W, i) > zeros_prefix(cols + j * W, i - 1)) {
			j--;
		} else {
			i--;
		}
	}
	return 0;
}

static int ensure_counts(rouge_work *w, uint32_t nid, lc_err *err)
{
	size_t old;

	if (nid > w->rcap) {
		old = w->rcap;
		if (grow((void **)&w->cnt_r, &w->rcap, nid, sizeof *w->cnt_r, err) < 0)
			return -1;
		memset(w->cnt_r + old, 0, (w->rcap - old) * sizeof *w->cnt_r);
	}
	if (nid > w->ccap) {
		old = w->ccap;
		if (grow((void **)&w->cnt_c, &w->ccap, nid, sizeof *w->cnt_c, err) < 0)
			return -1;
		memset(w->cnt_c + old, 0, (w->ccap - old) * sizeof *w->cnt_c);
	}
	return 0;
}

int rouge_lsum(rouge_work *w, const rouge_doc *cand, const rouge_doc *ref,
               rouge_score *out, lc_err *err)
{
	size_t m = ref->n, n = cand->n, si, sj, i, k;
	uint64_t hits = 0;
	int rc = 0;

	out->p = out->r = out->f = 0;
	if (!m || !n)
		return 0;
	if (ensure_counts(w, max_id(cand->id, n, max_id(ref->id, m, 0)), err) < 0)
		return -1;
	for (i = 0; i < m; i++)
		w->cnt_r[ref->id[i]]++;
	for (i = 0; i < n; i++)
		w->cnt_c[cand->id[i]]++;
	for (si = 0; si < ref->nsent && rc == 0; si++) {
		const uint32_t *r = ref->id + ref->sent[si];
		size_t nr = ref->sent[si + 1] - ref->sent[si], W = (nr + 63) / 64;

		if (!nr)
			continue;
		if (grow((void **)&w->uni, &w->unicap, W, sizeof *w->uni, err) < 0 ||
		    build_masks(w, r, nr, W, err) < 0) {
			rc = -1;
			break;
		}
		memset(w->uni, 0, W * sizeof *w->uni);
		for (sj = 0; sj < cand->nsent; sj++) {
			size_t nc = cand->sent[sj + 1] - cand->sent[sj];
			if (nc && lcs_union_add(w, r, nr, cand->id + cand->sent[sj], nc, W, err) < 0) {
				rc = -1;
				break;
			}
		}
		clear_masks(w, r, nr);
		if (rc)
			break;
		/* the union, in reference order, counted at most as often as
		 * the token occurs on both sides */
		for (k = 0; k < nr; k++) {
			uint32_t t = r[k];
			if (!(w->uni[k / 64] >> (k % 64) & 1))
				continue;
			if (w->cnt_c[t] > 0 && w->cnt_r[t] > 0) {
				hits++;
				w->cnt_c[t]--;
				w->cnt_r[t]--;
			}
		}
	}
	for (i = 0; i < m; i++)
		w->cnt_r[ref->id[i]] = 0;
	for (i = 0; i < n; i++)
		w->cnt_c[cand->id[i]] = 0;
	if (rc)
		return -1;
	out->r = (double)hits / (double)m;
	out->p = (double)hits / (double)n;
	out->f = rouge_fmeasure(out->p, out->r);
	return 0;
}

int rouge_score_type(rouge_work *w, rouge_type t, const rouge_doc *cand,
                     const rouge_doc *ref, rouge_score *out, lc_err *err)
{
	switch (t.kind) {
	case ROUGE_N: return rouge_ngram(w, t.n, cand->id, cand->n, ref->id, ref->n, out, err);
	case ROUGE_L: return rouge_lcs(w, cand->id, cand->n, ref->id, ref->n, out, err);
	case ROUGE_LSUM: return rouge_lsum(w, cand, ref, out, err);
	}
	return lc_fail(err, "unknown ROUGE type");
}

int rouge_score_multi(rouge_work *w, const rouge_type *t, size_t nt,
                      const rouge_doc *cand, const rouge_doc *refs, size_t nref,
                      rouge_score *out, lc_err *err)
{
	size_t i, k;
	rouge_score s;

	if (!nref)
		return lc_fail(err, "no reference");
	for (i = 0; i < nt; i++) {
		for (k = 0; k < nref; k++) {
			if (rouge_score_type(w, t[i], cand, &refs[k], &s, err) < 0)
				return -1;
			if (k == 0 || s.f > out[i].f)     /* np.argmax: the first wins a tie */
				out[i] = s;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* bags */

void rouge_bag_init(rouge_bag *b)
{
	memset(b, 0, sizeof *b);
}

void rouge_bag_free(rouge_bag *b)
{
	free(b->id);
	free(b->cnt);
	rouge_bag_init(b);
}

static int bag_reserve(rouge_bag *b, size_t n, lc_err *err)
{
	size_t c1 = b->cap, c2 = b->cap;

	if (n <= b->cap)
		return 0;
	if (grow((void **)&b->id, &c1, n, sizeof *b->id, err) < 0)
		return -1;
	if (grow((void **)&b->cnt, &c2, n, sizeof *b->cnt, err) < 0)
		return -1;
	b->cap = c1 < c2 ? c1 : c2;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int rouge_bag_set(rouge_bag *b, const uint32_t *ids, size_t n, lc_err *err)
{
	size_t i, k = 0;

	b->n = 0;
	b->total = n;
	if (!n)
		return 0;
	if (bag_reserve(b, n, err) < 0)
		return -1;
	memcpy(b->id, ids, n * sizeof *ids);
	qsort(b->id, n, sizeof *b->id, cmp_u32);
	for (i = 0; i < n; i++) {
		if (k && b->id[k - 1] == b->id[i]) {
			b->cnt[k - 1]++;
		} else {
			b->id[k] = b->id[i];
			b->cnt[k++] = 1;
		}
	}
	b->n = k;
	return 0;
}

int rouge_bag_sub(rouge_bag *out, const rouge_bag *a, const rouge_bag *b, lc_err *err)
{
	size_t i = 0, j = 0;

	out->n = 0;
	out->total = 0;
	if (bag_reserve(out, a->n ? a->n : 1, err) < 0)
		return -1;
	for (i = 0; i < a->n; i++) {
		uint32_t c = a->cnt[i];
		while (j < b->n && b->id[j] < a->id[i])
			j++;
		if (j < b->n && b->id[j] == a->id[i])
			c = c > b->cnt[j] ? c - b->cnt[j] : 0;
		if (c) {
			out->id[out->n] = a->id[i];
			out->cnt[out->n++] = c;
			out->total += c;
		}
	}
	return 0;
}

rouge_score rouge1_bag(const rouge_bag *cand, const rouge_bag *ref)
{
	size_t i = 0, j = 0;
	uint64_t hits = 0;
	rouge_score s;

	while (i < cand->n && j < ref->n) {
		if (cand->id[i] < ref->id[j]) {
			i++;
		} else if (cand->id[i] > ref->id[j]) {
			j++;
		} else {
			hits += cand->cnt[i] < ref->cnt[j] ? cand->cnt[i] : ref->cnt[j];
			i++, j++;
		}
	}
	s.p = (double)hits / (double)(cand->total > 1 ? cand->total : 1);
	s.r = (double)hits / (double)(ref->total > 1 ? ref->total : 1);
	s.f = rouge_fmeasure(s.p, s.r);
	return s;
}
