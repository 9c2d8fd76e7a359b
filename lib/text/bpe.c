/*
 * bpe.c: byte-level BPE (see bpe.h): encoding and decoding with a loaded
 * model (bpe_load.c reads the files, bpe_map.c has the hash maps).
 */
#include "text/bpe_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "text/utf8.h"

void fail_label(const bpe_model *m, lc_err *err, const char *fmt, ...)
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
	smap_free(&m->addmap);
	free(m->lex);
	free(m->addix);
	free(m->special);
	pcre2_code_free(m->re);
	smap_free(&m->cache);
	free(m->cids);
	free(m);
}

/* Raw bytes as a byte-level token: out [2 len] (each code point < 0x800). */
size_t to_alphabet(const bpe_model *m, const unsigned char *b, size_t len, char *out)
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

/* --------------------------------------------------------- accessors */

int32_t bpe_vocab_size(const bpe_model *m) { return m->nid; }
int32_t bpe_bos_id(const bpe_model *m) { return m->bos; }
int32_t bpe_eos_id(const bpe_model *m) { return m->eos; }
int32_t bpe_pad_id(const bpe_model *m) { return m->pad; }
int32_t bpe_cls_id(const bpe_model *m) { return m->cls; }
int32_t bpe_sep_id(const bpe_model *m) { return m->sep; }
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
	return id >= 0 && id < m->nid && (m->special[id] & BPE_SP_SKIP);
}

/* ----------------------------------------------------------- encoding */

static int push_id(bpe_enc *e, int32_t id)
{
	if (lc_grow(&e->ids, &e->icap, e->n + 1, sizeof *e->ids, 256) < 0)
		return -1;
	e->ids[e->n++] = id;
	return 0;
}

static int push_piece(bpe_enc *e, const char *s, size_t n)
{
	if (lc_grow(&e->pieces, &e->pcap, e->plen + n + 2, 1, 4096) < 0)
		return -1;
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

/* Byte order of two added tokens' contents (a prefix first); ctx: add. */
static int cmp_lex(const void *x, const void *y, void *ctx)
{
	const added *add = ctx, *a = &add[*(const int32_t *)x], *b = &add[*(const int32_t *)y];
	int c = memcmp(a->content, b->content, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

int bpe_index_added(bpe_model *m)
{
	if (!m->nadd)
		return 0;
	if (!(m->lex = malloc((size_t)m->nadd * sizeof *m->lex)) ||
	    !(m->addix = malloc((size_t)m->nid * sizeof *m->addix)))
		return -1;
	for (int i = 0; i < m->nadd; i++) {
		m->lex[i] = i;
		m->maxadd = m->add[i].len > m->maxadd ? m->add[i].len : m->maxadd;
	}
	qsort_r(m->lex, (size_t)m->nadd, sizeof *m->lex, cmp_lex, m->add);
	for (int32_t i = 0; i < m->nid; i++)
		m->addix[i] = -1;
	for (int i = m->nadd - 1; i >= 0; i--)    /* the first of an id wins */
		m->addix[m->add[i].id] = i;
	return 0;
}

/* The longest added token that starts at s[0..n); NULL if none. In byte
 * order the tokens that share s's first k bytes are a run of lex, those
 * of exactly k bytes first: each byte narrows the run by two binary
 * searches, so a position costs about log2(nadd) comparisons, however
 * many tokens were added (a scan of them all made a text with thousands
 * of added tokens 50 times slower to encode). */
static const added *added_at(const bpe_model *m, const char *s, size_t n)
{
	const added *best = NULL;
	size_t lo = 0, hi = (size_t)m->nadd;

	for (size_t k = 0; k < n && lo < hi; k++) {
		unsigned char c = (unsigned char)s[k];
		size_t a, b;

		if (m->add[m->lex[lo]].len == k)   /* s[0..k) itself, met already */
			lo++;
		/* the first with byte k >= c, then the first with byte k > c */
		for (a = lo, b = hi; a < b;) {
			size_t mid = a + (b - a) / 2;
			if ((unsigned char)m->add[m->lex[mid]].content[k] < c)
				a = mid + 1;
			else
				b = mid;
		}
		lo = a;
		for (b = hi; a < b;) {
			size_t mid = a + (b - a) / 2;
			if ((unsigned char)m->add[m->lex[mid]].content[k] <= c)
				a = mid + 1;
			else
				b = mid;
		}
		hi = a;
		if (lo < hi && m->add[m->lex[lo]].len == k + 1)
			best = &m->add[m->lex[lo]];
	}
	return best;
}

/* ------------------------------------------- the added tokens' split
 *
 * As PreTrainedTokenizer.tokenize (transformers 4.36) does it: the text
 * cut into parts at the added tokens (longest at the leftmost place),
 * then, part by part in order, each part whose text is an added token
 * acting on its neighbours as they are by then: rstrip strips the white
 * space at the start of the part after it, lstrip at the end of the part
 * before it, and single_word joins the token to the part before it when
 * that one ended (before the strips) in anything but a space, else to the
 * part after it when that one began so; then each part is its token, or
 * text to encode. A part is a run of the split's pieces, each of which
 * the strips may shorten; a joined token is text (unless the joined text
 * is itself an added token). */
typedef struct bpe_part {
	size_t off, len;            /* the piece: s[off, off + len) after strips */
	const added *a;             /* the split's token, NULL for text */
	int64_t first, last;        /* the part: pieces first..last, none if first > last */
	int changed;                /* stripped or joined: the split's a no longer holds */
} bpe_part;

static size_t part_len(const bpe_part *p, int64_t i)
{
	size_t n = 0;

	for (int64_t k = p[i].first; k <= p[i].last; k++)
		n += p[k].len;
	return n;
}

/* The part's first (end 0) or last (end 1) byte; its length is > 0. */
static unsigned char part_byte(const char *s, const bpe_part *p, int64_t i, int end)
{
	int64_t k = end ? p[i].last : p[i].first;

	while (!p[k].len)
		k += end ? -1 : 1;
	return (unsigned char)s[p[k].off + (end ? p[k].len - 1 : 0)];
}

/* str.lstrip() (end 0) or str.rstrip() (end 1) of a part */
static void part_strip(const char *s, bpe_part *p, int64_t i, int end)
{
	for (int64_t k = end ? p[i].last : p[i].first; k >= p[i].first && k <= p[i].last;
	     k += end ? -1 : 1) {
		size_t was = p[k].len;

		if (end) {
			p[k].len = utf8_py_rstrip_len(s + p[k].off, p[k].len);
		} else {
			size_t o = utf8_py_lstrip_off(s + p[k].off, p[k].len);
			p[k].off += o;
			p[k].len -= o;
		}
		p[i].changed |= p[k].len != was;
		if (p[k].len)
			break;
	}
}

/* The part's text, joined in e's buffer where it has several pieces. */
static const char *part_text(const char *s, const bpe_part *p, int64_t i, size_t n, bpe_enc *e)
{
	size_t o = 0;

	if (p[i].first == p[i].last)
		return s + p[p[i].first].off;
	if (lc_grow(&e->join, &e->jcap, n, 1, 64) < 0)
		return NULL;
	for (int64_t k = p[i].first; k <= p[i].last; k++) {
		memcpy(e->join + o, s + p[k].off, p[k].len);
		o += p[k].len;
	}
	return e->join;
}

/* The added token a part's text is (n bytes, > 0), or NULL. */
static const added *part_added(const bpe_model *m, const char *s, const bpe_part *p, int64_t i,
                               size_t n, bpe_enc *e, int *oom)
{
	const added *a;
	const char *t;

	if (!p[i].changed)      /* the split's own piece */
		return p[i].a;
	if (n > m->maxadd)
		return NULL;
	if (!(t = part_text(s, p, i, n, e))) {
		*oom = 1;
		return NULL;
	}
	a = added_at(m, t, n);
	return a && a->len == n ? a : NULL;
}

static int push_part(bpe_enc *e, size_t off, size_t len, const added *a)
{
	bpe_part *p;

	if (lc_grow(&e->parts, &e->partcap, e->nparts + 1, sizeof *p, 16) < 0)
		return -1;
	p = (bpe_part *)e->parts + e->nparts;
	*p = (bpe_part){ off, len, a, (int64_t)e->nparts, (int64_t)e->nparts, 0 };
	e->nparts++;
	return 0;
}

static int encode_parts(bpe_model *m, const char *s, size_t n, unsigned flags, bpe_enc *e,
                        lc_err *err)
{
	size_t seg = 0, i;
	int64_t np;
	bpe_part *p;
	int oom = 0;

	e->nparts = 0;
	for (i = 0; m->nadd && i < n;) {
		const added *a = added_at(m, s + i, n - i);
		if (!a) {
			i++;
			continue;
		}
		if ((seg < i && push_part(e, seg, i - seg, NULL) < 0) || push_part(e, i, a->len, a) < 0)
			return lc_fail(err, "out of memory");
		i += a->len;
		seg = i;
	}
	if (seg < n && push_part(e, seg, n - seg, NULL) < 0)
		return lc_fail(err, "out of memory");
	p = e->parts;
	np = (int64_t)e->nparts;
	for (int64_t k = 0; k < np; k++) {
		const added *a = part_added(m, s, p, k, part_len(p, k), e, &oom);
		size_t ln, rn;
		unsigned char lb, rb;

		if (!a)
			continue;
		/* the neighbours as they were before the strips */
		ln = k > 0 ? part_len(p, k - 1) : 0;
		rn = k + 1 < np ? part_len(p, k + 1) : 0;
		lb = ln ? part_byte(s, p, k - 1, 1) : 0;
		rb = rn ? part_byte(s, p, k + 1, 0) : 0;
		if (a->rstrip && rn)
			part_strip(s, p, k + 1, 0);
		if (a->lstrip && ln)
			part_strip(s, p, k - 1, 1);
		if (a->single && ln && lb != ' ') {
			p[k - 1].last = p[k].last;
			p[k - 1].changed = 1;
			p[k].first = p[k].last + 1;
			p[k].changed = 1;
		} else if (a->single && rn && rb != ' ') {
			p[k + 1].first = p[k].first;
			p[k + 1].changed = 1;
			p[k].first = p[k].last + 1;
			p[k].changed = 1;
		}
	}
	for (int64_t k = 0; !oom && k < np; k++) {
		size_t ln = part_len(p, k);
		const added *a;
		const char *t;

		if (!ln)
			continue;
		if ((a = part_added(m, s, p, k, ln, e, &oom))) {
			if (push_id(e, a->id) < 0 ||
			    ((flags & BPE_ENC_PIECES) && push_piece(e, a->content, a->len) < 0))
				return lc_fail(err, "out of memory");
		} else if (!oom) {
			if (!(t = part_text(s, p, k, ln, e)))
				return lc_fail(err, "out of memory");
			if (encode_text(m, t, ln, flags, e, err) < 0)
				return -1;
		}
	}
	return oom ? lc_fail(err, "out of memory") : 0;
}

int bpe_encode(bpe_model *m, const char *text, size_t len, unsigned flags, bpe_enc *e,
               lc_err *err)
{
	size_t n;
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
	n = utf8_replace(text, len, s);
	/* add_prefix_space: GPT2Tokenizer puts the space before any text;
	 * BartTokenizer and RobertaTokenizer (the wrapping ones) only before a
	 * text that does not start with whitespace (str.isspace) */
	if (m->prefix || (flags & BPE_ENC_PREFIX)) {
		uint32_t cp = 0;
		if (!m->wrap || (n > 0 && !(utf8_char((const unsigned char *)s, n, &cp) &&
		                            utf8_py_isspace(cp)))) {
			memmove(s + 1, s, n);
			s[0] = ' ';
			n++;
		}
	}
	if (wrap) {
		if (push_id(e, m->cls) < 0 ||
		    ((flags & BPE_ENC_PIECES) && push_piece(e, m->tok[m->cls], m->toklen[m->cls]) < 0))
			return lc_fail(err, "out of memory");
	}
	if (encode_parts(m, s, n, flags, e, err) < 0)
		return -1;
	if (wrap && !(flags & BPE_ENC_NO_EOS)) {
		if (push_id(e, m->sep) < 0 ||
		    ((flags & BPE_ENC_PIECES) && push_piece(e, m->tok[m->sep], m->toklen[m->sep]) < 0))
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
	free(e->parts);
	free(e->join);
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

/* The added token of id, or NULL: decoding takes its text, as
 * transformers' convert_ids_to_tokens does (apart, or in the run of
 * byte-level tokens when kept), even where vocab.json has another token
 * at its id. */
static const added *added_of(const bpe_model *m, int32_t id)
{
	return m->addix && id >= 0 && id < m->nid && m->addix[id] >= 0 ? &m->add[m->addix[id]]
	                                                                : NULL;
}

/* Appends raw[0..rl) as text (ill-formed UTF-8 replaced, as bytes.decode
 * with errors="replace"), after a space when out holds text already. */
static int put_run(char **out, size_t *o, size_t *cap, const char *raw, size_t rl, int sep)
{
	if (grow(out, cap, *o + 1 + 3 * rl + 1) < 0)
		return -1;
	if (sep)
		(*out)[(*o)++] = ' ';
	*o += utf8_replace(raw ? raw : "", rl, *out + *o);
	return 0;
}

/* transformers 4.36's PreTrainedTokenizer._decode: the added tokens that
 * are not special ("legacy added tokens") are texts of their own, the
 * runs of other tokens between them decoded each to a text (an empty
 * one left out, but the last), and the texts joined by spaces
 * (spaces_between_special_tokens); then the clean-up. */
int bpe_decode(const bpe_model *m, const int32_t *ids, size_t n, unsigned flags, char **out,
               size_t *outlen, size_t *cap, lc_err *err)
{
	char *raw = NULL;
	size_t rl = 0, rc = 0, o = 0;
	int texts = 0, run = 0;

	if (grow(out, cap, 1) < 0)
		return lc_fail(err, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const unsigned char *t;
		const added *a;
		size_t tl, k;
		if (ids[i] < 0 || ids[i] >= m->nid || !m->tok[ids[i]]) {
			free(raw);
			if (ids[i] >= 0 && ids[i] < m->nid)     /* vocab.json skips it */
				return lc_fail(err, "token %zu: id %ld has no token in the vocabulary (a gap "
				               "in its ids)", i, (long)ids[i]);
			return lc_fail(err, "token %zu: id %ld is outside the vocabulary [0, %ld)", i,
			               (long)ids[i], (long)m->nid);
		}
		if ((flags & BPE_DEC_SKIP_SPECIAL) && (m->special[ids[i]] & BPE_SP_SKIP))
			continue;
		if (m->special[ids[i]] & BPE_SP_APART) {
			a = added_of(m, ids[i]);
			if ((run && rl > 0 && put_run(out, &o, cap, raw, rl, texts++ > 0) < 0) ||
			    (a && put_run(out, &o, cap, a->content, a->len, texts++ > 0) < 0)) {
				free(raw);
				return lc_fail(err, "out of memory");
			}
			rl = 0;
			run = 0;
			continue;
		}
		run = 1;
		a = added_of(m, ids[i]);
		t = (const unsigned char *)(a ? a->content : m->tok[ids[i]]);
		tl = a ? a->len : m->toklen[ids[i]];
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
	if (run && put_run(out, &o, cap, raw, rl, texts > 0) < 0) {
		free(raw);
		return lc_fail(err, "out of memory");
	}
	free(raw);
	if (flags & BPE_DEC_CLEANUP)
		o = cleanup(*out, o);
	(*out)[o] = 0;
	*outlen = o;
	return 0;
}

