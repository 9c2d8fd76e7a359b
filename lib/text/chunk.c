#include "text/chunk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "text/rematch.h"

static const char *const chunk_keys[] = {"parent", "piece", "pieces", "offset", "length",
                                         "total", "unit", "head", "tail"};

void chunk_plan_free(chunk_plan *pl)
{
	free(pl->p);
	memset(pl, 0, sizeof *pl);
}

static int plan_push(chunk_plan *pl, uint64_t off, uint64_t len, lc_err *err)
{
	if (lc_grow(&pl->p, &pl->cap, pl->n + 1, sizeof *pl->p, 16) < 0)
		return lc_fail(err, "out of memory");
	pl->p[pl->n].offset = off;
	pl->p[pl->n++].length = len;
	return 0;
}

int chunk_plan_windows(chunk_plan *pl, uint64_t total, uint64_t size, uint64_t overlap, lc_err *err)
{
	pl->n = 0;
	pl->head = pl->tail = 0;
	if (size == 0 || overlap >= size)
		return lc_fail(err, "overlap %" PRIu64 " must be smaller than the size %" PRIu64, overlap, size);
	for (uint64_t off = 0;; off += size - overlap) {
		uint64_t len = total - off < size ? total - off : size;
		if (plan_push(pl, off, len, err) < 0)
			return -1;
		if (off + len >= total)
			return 0;
	}
}

int chunk_plan_windows_ends(chunk_plan *pl, uint64_t total, uint64_t size, uint64_t overlap,
                            uint64_t head, uint64_t tail, lc_err *err)
{
	uint64_t ends = head + tail;

	pl->n = 0;
	if (head > total || tail > total - head)
		return lc_fail(err, "%" PRIu64 " tokens, fewer than the %" PRIu64 " + %" PRIu64
		               " kept at the ends", total, head, tail);
	if (size <= ends || overlap >= size - ends)
		return lc_fail(err, "windows of %" PRIu64 " tokens with %" PRIu64 " at the ends leave no "
		               "room for more than %" PRIu64 " tokens of overlap", size, ends,
		               size > ends ? size - ends - 1 : 0);
	if (chunk_plan_windows(pl, total - ends, size - ends, overlap, err) < 0)
		return -1;
	for (size_t k = 0; k < pl->n; k++)
		pl->p[k].offset += head;
	pl->head = head;
	pl->tail = tail;
	return 0;
}

int chunk_plan_units(chunk_plan *pl, uint64_t total, const uint64_t *starts, size_t nstarts,
                     uint64_t size, uint64_t overlap, lc_err *err)
{
	pl->n = 0;
	if (size == 0 || overlap >= size)
		return lc_fail(err, "overlap %" PRIu64 " must be smaller than the size %" PRIu64, overlap, size);
	for (uint64_t u = 0;; u += size - overlap) {
		uint64_t b = u == 0 || u >= nstarts ? (u == 0 ? 0 : total) : starts[u];
		uint64_t e = u + size >= nstarts ? total : starts[u + size];
		if (plan_push(pl, b, e - b, err) < 0)
			return -1;
		if (e >= total || u + size >= nstarts)
			return 0;
	}
}

int chunk_plan_cuts(chunk_plan *pl, uint64_t total, const uint64_t *cut, size_t ncut, lc_err *err)
{
	uint64_t from = 0;

	pl->n = 0;
	for (size_t i = 0; i < ncut; i++) {
		if (cut[i] <= from || cut[i] >= total)
			continue;
		if (plan_push(pl, from, cut[i] - from, err) < 0)
			return -1;
		from = cut[i];
	}
	return plan_push(pl, from, total - from, err);
}

static int is_chunk_key(const char *k)
{
	for (size_t i = 0; i < sizeof chunk_keys / sizeof *chunk_keys; i++)
		if (strcmp(k, chunk_keys[i]) == 0)
			return 1;
	return 0;
}

int chunk_make_piece(lc_doc *out, const lc_doc *parent, const char *tensor,
                     const chunk_plan *pl, size_t k, lc_err *err)
{
	const lc_tensor *src = doc_find(parent, tensor);
	const chunk_piece *p = &pl->p[k];
	size_t esz;
	char name[LC_MAX_NAME + 32];
	lc_tensor *t;
	uint64_t total, n;
	char *dst;

	if (!src || src->rank != 1)
		return lc_fail(err, "document \"%s\" has no \"%s\" record of rank 1", parent->name, tensor);
	esz = lc_dtype_size(src->dtype);
	total = src->dims[0];
	if (p->offset < pl->head || p->offset + p->length > total - pl->tail)
		return lc_fail(err, "document \"%s\": piece beyond the end", parent->name);
	n = pl->head + p->length + pl->tail;
	snprintf(name, sizeof name, "%s#%zu", parent->name, k + 1);
	if (doc_init(out, name, err) < 0)
		return -1;
	if (meta_copy(&out->meta, &parent->meta, err) < 0 ||
	    meta_set(&out->meta, "parent", parent->name, err) < 0 ||
	    meta_setf(&out->meta, "piece", err, "%zu", k + 1) < 0 ||
	    meta_setf(&out->meta, "pieces", err, "%zu", pl->n) < 0 ||
	    meta_setf(&out->meta, "offset", err, "%" PRIu64, p->offset) < 0 ||
	    meta_setf(&out->meta, "length", err, "%" PRIu64, p->length) < 0 ||
	    meta_setf(&out->meta, "total", err, "%" PRIu64, total) < 0 ||
	    meta_set(&out->meta, "unit", src->dtype == LC_U8 ? "bytes" : "tokens", err) < 0 ||
	    (pl->head && meta_setf(&out->meta, "head", err, "%" PRIu64, pl->head) < 0) ||
	    (pl->tail && meta_setf(&out->meta, "tail", err, "%" PRIu64, pl->tail) < 0) ||
	    !(t = doc_add_tensor(out, tensor, src->dtype, 1, &n, err)) ||
	    meta_copy(&t->meta, &src->meta, err) < 0) {
		doc_free(out);
		return -1;
	}
	dst = t->data;
	if (pl->head)
		memcpy(dst, src->data, pl->head * esz);
	memcpy(dst + pl->head * esz, (const char *)src->data + p->offset * esz, p->length * esz);
	if (pl->tail)
		memcpy(dst + (pl->head + p->length) * esz,
		       (const char *)src->data + (total - pl->tail) * esz, pl->tail * esz);
	return 0;
}

void chunk_joiner_init(chunk_joiner *j)
{
	memset(j, 0, sizeof *j);
}

static void drop_pending(chunk_joiner *j)
{
	for (size_t i = 0; i < j->npend; i++)
		doc_free(&j->pend[i]);
	j->npend = 0;
	j->active = 0;
}

void chunk_joiner_free(chunk_joiner *j)
{
	drop_pending(j);
	free(j->pend);
	memset(j, 0, sizeof *j);
}

static int meta_u64(const lc_doc *d, const char *key, uint64_t *v, lc_err *err)
{
	const char *s = meta_get(&d->meta, key);
	char *end;

	if (!s || !*s)
		return lc_fail(err, "piece \"%s\" has no \"%s\" metadata", d->name, key);
	errno = 0;
	*v = strtoull(s, &end, 10);
	/* strtoull takes "-5" as 2^64 - 5, and saturates silently */
	if (*end || *s < '0' || *s > '9' || errno == ERANGE)
		return lc_fail(err, "piece \"%s\": bad \"%s\" metadata '%s' (a decimal count)",
		               d->name, key, s);
	return 0;
}

/* An optional count: 0 when absent. */
static int meta_u64_opt(const lc_doc *d, const char *key, uint64_t *v, lc_err *err)
{
	*v = 0;
	return meta_get(&d->meta, key) ? meta_u64(d, key, v, err) : 0;
}

/* Whether d's record name, if it has one, is of dtype dt, rank 1, once:
 * a float "text" would be joined as nonsense, a second one dropped. */
static int well_formed(const lc_doc *d, const char *name, enum lc_dtype dt)
{
	const lc_tensor *t = doc_find(d, name);

	return !t || (t->rank == 1 && t->dtype == dt && doc_count(d, name) == 1);
}

/* A piece's content: its "tokens" (i32), else its "text" (u8), both of
 * rank 1 and once where present (lc-decode's summaries have both, and
 * both are joined); NULL if it has neither or one is ill-formed. */
static const lc_tensor *piece_tensor(const lc_doc *d)
{
	const lc_tensor *t = doc_find(d, "tokens");

	if (!well_formed(d, "tokens", LC_I32) || !well_formed(d, "text", LC_U8))
		return NULL;
	return t ? t : doc_find(d, "text");
}

/* The transformed pieces' tensor `name` (each summary of a chapter, say),
 * concatenated in piece order, text separated by newlines, into out.
 * Absent from the first piece: nothing to do. */
static int concat(chunk_joiner *j, lc_doc *out, const char *name, lc_err *err)
{
	const lc_tensor *t0 = doc_find(&j->pend[0], name), *ti;
	uint64_t n = 0;
	size_t esz;
	lc_tensor *t;
	char *dst;

	if (!t0 || t0->rank != 1)
		return 0;
	esz = lc_dtype_size(t0->dtype);
	for (size_t i = 0; i < j->npend; i++) {
		if (!(ti = doc_find(&j->pend[i], name)) || ti->rank != 1 || ti->dtype != t0->dtype)
			return lc_fail(err, "piece \"%s\" differs in kind from the first piece (\"%s\")",
			               j->pend[i].name, name);
		n += ti->dims[0] + (i && t0->dtype == LC_U8);
	}
	if (!(t = doc_add_tensor(out, name, t0->dtype, 1, &n, err)) ||
	    meta_copy(&t->meta, &t0->meta, err) < 0)
		return -1;
	dst = t->data;
	for (size_t i = 0; i < j->npend; i++) {
		ti = doc_find(&j->pend[i], name);
		if (i && t0->dtype == LC_U8)
			*dst++ = '\n';
		if (ti->dims[0])
			memcpy(dst, ti->data, ti->dims[0] * esz);
		dst += ti->dims[0] * esz;
	}
	return 0;
}

/* The untransformed pieces' content tensor, overlaps removed and the kept
 * ends put back once: the parent exactly. */
static int rebuild(chunk_joiner *j, lc_doc *out, lc_err *err)
{
	const lc_tensor *t0 = piece_tensor(&j->pend[0]), *tl;
	size_t esz = lc_dtype_size(t0->dtype);
	uint64_t end = j->head;
	lc_tensor *t;
	char *dst;

	for (size_t i = 0; i < j->npend; i++) {
		const lc_tensor *ti = piece_tensor(&j->pend[i]);
		if (!ti || ti->dtype != t0->dtype || strcmp(ti->name, t0->name))
			return lc_fail(err, "piece \"%s\" differs in kind from the first piece", j->pend[i].name);
	}
	/* the pieces' places first: a "total" in the metadata is believed
	 * (and allocated) only once the pieces cover it, without a gap */
	for (size_t i = 0; i < j->npend; i++) {
		const lc_doc *d = &j->pend[i];
		uint64_t off, len = piece_tensor(d)->dims[0] - j->head - j->tail;

		if (meta_u64(d, "offset", &off, err) < 0)
			return -1;
		if (off > end)
			return lc_fail(err, "piece \"%s\" leaves a gap at %" PRIu64, d->name, end);
		if (off > j->total - j->tail || len > j->total - j->tail - off)
			return lc_fail(err, "piece \"%s\" runs past the parent's end", d->name);
		if (off + len > end)
			end = off + len;
	}
	if (end != j->total - j->tail)
		return lc_fail(err, "pieces of \"%s\" end at %" PRIu64 " of %" PRIu64, out->name, end,
		               j->total);
	end = j->head;
	if (!(t = doc_add_tensor(out, t0->name, t0->dtype, 1, &j->total, err)) ||
	    meta_copy(&t->meta, &t0->meta, err) < 0)
		return -1;
	dst = t->data;
	for (size_t i = 0; i < j->npend; i++) {
		const lc_doc *d = &j->pend[i];
		const lc_tensor *ti = piece_tensor(d);
		/* the window between the kept ends */
		uint64_t off, len = ti->dims[0] - j->head - j->tail, skip;

		/* places checked above: no gap, nothing past the end */
		if (meta_u64(d, "offset", &off, err) < 0)
			return -1;
		skip = end - off < len ? end - off : len;
		/* untransformed pieces agree where they overlap: one that does
		 * not is another document's, or damaged */
		if (i > 0 && skip &&
		    memcmp(dst + off * esz, (const char *)ti->data + j->head * esz, skip * esz))
			return lc_fail(err, "piece \"%s\" differs from the pieces before it where they "
			               "overlap (positions %" PRIu64 " to %" PRIu64 ")", d->name, off,
			               off + skip - 1);
		if (len > skip)
			memcpy(dst + (off + skip) * esz, (const char *)ti->data + (j->head + skip) * esz,
			       (len - skip) * esz);
		if (off + len > end)
			end = off + len;
	}
	if (j->head)
		memcpy(dst, t0->data, j->head * esz);
	tl = piece_tensor(&j->pend[j->npend - 1]);
	if (j->tail)
		memcpy(dst + (j->total - j->tail) * esz,
		       (const char *)tl->data + (tl->dims[0] - j->tail) * esz, j->tail * esz);
	return 0;
}

/* Builds the parent from the pending pieces into *out. */
static int assemble(chunk_joiner *j, lc_doc *out, lc_err *err)
{
	const lc_doc *first = &j->pend[0];

	if (doc_init(out, meta_get(&first->meta, "parent"), err) < 0)
		return -1;
	for (uint32_t i = 0; i < first->meta.n; i++)
		if (!is_chunk_key(first->meta.kv[i].key) &&
		    meta_set(&out->meta, first->meta.kv[i].key, first->meta.kv[i].val, err) < 0)
			goto fail;
	if (j->exact ? rebuild(j, out, err) < 0
	             : concat(j, out, "tokens", err) < 0 || concat(j, out, "text", err) < 0 ||
	                   meta_set(&out->meta, "joined", "concatenated", err) < 0)
		goto fail;
	drop_pending(j);
	return 1;
fail:
	doc_free(out);
	return -1;
}

int chunk_join_add(chunk_joiner *j, lc_doc *d, lc_doc *out, lc_err *err)
{
	const char *parent = meta_get(&d->meta, "parent");
	const lc_tensor *t;
	uint64_t piece, pieces, total, length, head, tail;

	if (!parent) {
		if (j->active)
			return lc_fail(err, "document \"%s\" comes between the pieces of \"%s\"",
			               d->name, meta_get(&j->pend[0].meta, "parent"));
		*out = *d;
		memset(d, 0, sizeof *d);
		return 1;
	}
	if (meta_u64(d, "piece", &piece, err) < 0 || meta_u64(d, "pieces", &pieces, err) < 0 ||
	    meta_u64(d, "total", &total, err) < 0 || meta_u64(d, "length", &length, err) < 0 ||
	    meta_u64_opt(d, "head", &head, err) < 0 || meta_u64_opt(d, "tail", &tail, err) < 0)
		return -1;
	if (head > total || tail > total - head)
		return lc_fail(err, "piece \"%s\": head %" PRIu64 " and tail %" PRIu64 " exceed the "
		               "parent's %" PRIu64 " units", d->name, head, tail, total);
	if (pieces < 1 || piece < 1 || piece > pieces)
		return lc_fail(err, "piece \"%s\": piece %" PRIu64 " of %" PRIu64 " is not one",
		               d->name, piece, pieces);
	if (!(t = piece_tensor(d)))
		return lc_fail(err, "piece \"%s\" has no \"tokens\" (i32) or \"text\" (u8) record "
		               "of rank 1, once", d->name);
	if (!j->active) {
		if (piece != 1)
			return lc_fail(err, "piece \"%s\" is number %" PRIu64 ", expected 1", d->name, piece);
		j->active = 1;
		j->pieces = pieces;
		j->next = 1;
		j->total = total;
		j->head = head;
		j->tail = tail;
		j->exact = 1;
	} else if (strcmp(parent, meta_get(&j->pend[0].meta, "parent")) != 0 || piece != j->next ||
	           pieces != j->pieces || total != j->total || head != j->head || tail != j->tail) {
		return lc_fail(err, "piece \"%s\" is not piece %" PRIu64 " of \"%s\"", d->name, j->next,
		               meta_get(&j->pend[0].meta, "parent"));
	}
	if (length > UINT64_MAX - head - tail || t->dims[0] != length + head + tail)
		j->exact = 0;
	if (lc_grow(&j->pend, &j->cap, j->npend + 1, sizeof *j->pend, 16) < 0)
		return lc_fail(err, "out of memory");
	j->pend[j->npend++] = *d;
	memset(d, 0, sizeof *d);
	{
		/* d keeps its name (its records are held here): the caller's
		 * messages name the document */
		lc_err e;
		doc_init(d, j->pend[j->npend - 1].name, &e);
	}
	if (j->next++ < j->pieces)
		return 0;
	return assemble(j, out, err);
}

int chunk_join_finish(chunk_joiner *j, lc_err *err)
{
	if (j->active)
		return lc_fail(err, "document \"%s\": the input ends after piece %" PRIu64 " of %" PRIu64
		               " of \"%s\"", j->pend[j->npend - 1].name, j->next - 1, j->pieces,
		               meta_get(&j->pend[0].meta, "parent"));
	return 0;
}

struct chunk_pattern {
	pcre2_code *re;
};

chunk_pattern *chunk_pattern_new(const char *pattern, lc_err *err)
{
	chunk_pattern *p = calloc(1, sizeof *p);
	pcre2_match_data *md;
	int ec, empty;
	PCRE2_SIZE eo;

	if (!p) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	p->re = re_compile(pattern, PCRE2_MULTILINE | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &eo);
	if (!p->re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ec, msg, sizeof msg);
		lc_fail(err, "at offset %zu: %s", (size_t)eo, (char *)msg);
		free(p);
		return NULL;
	}
	/* One that matches the empty string (line anchors aside: '^' still
	 * cuts before every line) would cut before every byte. */
	if (!(md = pcre2_match_data_create_from_pattern(p->re, NULL))) {
		lc_fail(err, "out of memory");
		chunk_pattern_free(p);
		return NULL;
	}
	empty = pcre2_match(p->re, (PCRE2_SPTR)"", 0, 0, PCRE2_NOTBOL | PCRE2_NOTEOL, md, NULL) >= 0;
	pcre2_match_data_free(md);
	if (empty) {
		lc_fail(err, "the pattern matches the empty string, so it would cut before every byte: "
		        "give one that matches some text (e.g. '^CHAPTER ')");
		chunk_pattern_free(p);
		return NULL;
	}
	return p;
}

void chunk_pattern_free(chunk_pattern *p)
{
	if (!p)
		return;
	pcre2_code_free(p->re);
	free(p);
}

int chunk_plan_pattern(chunk_plan *pl, const chunk_pattern *p, const char *text, size_t len,
                       lc_err *err)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->re, NULL);
	uint64_t *cut = NULL;
	size_t n = 0, cap = 0, off = 0;
	int rc = -1;

	if (!md)
		return lc_fail(err, "out of memory");
	while (off <= len) {
		int m = re_match(p->re, text, len, off, 0, md);
		PCRE2_SIZE *ov;
		if (m == PCRE2_ERROR_NOMATCH)
			break;
		if (m < 0) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(m, msg, sizeof msg);
			lc_fail(err, "matching from byte %zu: %s", off, (char *)msg);
			goto out;
		}
		ov = pcre2_get_ovector_pointer(md);
		if (lc_grow(&cut, &cap, n + 1, sizeof *cut, 64) < 0) {
			lc_fail(err, "out of memory");
			goto out;
		}
		cut[n++] = ov[0];
		off = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
	}
	rc = chunk_plan_cuts(pl, len, cut, n, err);
out:
	free(cut);
	pcre2_match_data_free(md);
	return rc;
}

int chunk_plan_sentences(chunk_plan *pl, const sentence_splitter *ss, const char *text,
                         size_t len, uint64_t size, uint64_t overlap, lc_err *err)
{
	sentence_span *sp = NULL;
	size_t nsp = 0, cap = 0;
	uint64_t *starts;
	int rc;

	if (sentence_split(ss, text, len, &sp, &nsp, &cap, err) < 0)
		return -1;
	if (!(starts = malloc((nsp + 1) * sizeof *starts))) {
		free(sp);
		return lc_fail(err, "out of memory");
	}
	for (size_t i = 0; i < nsp; i++)
		starts[i] = sp[i].start;
	rc = chunk_plan_units(pl, len, starts, nsp, size, overlap, err);
	free(starts);
	free(sp);
	return rc;
}
