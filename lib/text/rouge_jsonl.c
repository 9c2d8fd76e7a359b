/*
 * rouge_jsonl: lc-rouge's JSON Lines inputs, paired by id; see
 * rouge_jsonl.h. A line is parsed by stream/jsonl (jsonl_parse, the id
 * required); what is here is the reading of lc streams as candidates and
 * the map of texts by id.
 */
#include "text/rouge_jsonl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "stream/jsonl.h"
#include "stream/textin.h"

#define SHOW 100       /* at most this many bytes of an id in a message */

struct rouge_jsonl {
	textin *in;
	char *label;                              /* the input, in messages */
	char *idkey;
	char *fields[ROUGE_JSONL_MAX_FIELDS];
	jsonl_spec spec;                          /* idkey and fields, the id required */
	jsonl_rec rec;                            /* the last line's record */

	/* the last record: of rec, or of an lc stream's document */
	const char *id;
	char *where;
	const char *text[ROUGE_JSONL_MAX_FIELDS];
	size_t len[ROUGE_JSONL_MAX_FIELDS];
};

rouge_jsonl *rouge_jsonl_open(const char *path, const char *idkey, const char *const *fields,
                              size_t nf, lc_err *err)
{
	rouge_jsonl *j;

	if (nf < 1 || nf > ROUGE_JSONL_MAX_FIELDS) {
		lc_fail(err, "rouge_jsonl_open: %zu text fields (1 to %d)", nf, ROUGE_JSONL_MAX_FIELDS);
		return NULL;
	}
	if (!(j = calloc(1, sizeof *j)))
		goto oom;
	if (!(j->idkey = strdup(idkey)))
		goto oom;
	j->spec.id = j->idkey;
	j->spec.id_required = 1;
	j->spec.nfield = (int)nf;
	for (size_t k = 0; k < nf; k++)
		if (!(j->spec.field[k] = j->fields[k] = strdup(fields[k])))
			goto oom;
	if (!(j->label = strdup(!path || strcmp(path, "-") == 0 ? "stdin" : path)))
		goto oom;
	if (!(j->in = textin_open(path, TEXTIN_LINE, err))) {
		rouge_jsonl_close(j);
		return NULL;
	}
	return j;
oom:
	rouge_jsonl_close(j);
	lc_fail(err, "out of memory");
	return NULL;
}

void rouge_jsonl_close(rouge_jsonl *j)
{
	if (!j)
		return;
	textin_close(j->in);
	jsonl_rec_free(&j->rec);
	free(j->label);
	free(j->idkey);
	for (size_t k = 0; k < ROUGE_JSONL_MAX_FIELDS; k++)
		free(j->fields[k]);
	free(j->where);
	free(j);
}

static void drop_record(rouge_jsonl *j)
{
	jsonl_rec_free(&j->rec);
	free(j->where);
	j->where = NULL;
	j->id = NULL;
	for (size_t k = 0; k < ROUGE_JSONL_MAX_FIELDS; k++) {
		j->text[k] = NULL;
		j->len[k] = 0;
	}
}

int rouge_jsonl_next(rouge_jsonl *j, lc_err *err)
{
	const char *name, *text;
	size_t len;
	int rc;

	for (;;) {
		drop_record(j);
		if ((rc = textin_next(j->in, &name, &text, &len, err)) <= 0)
			return rc;
		if (textin_meta(j->in)) {
			/* an lc stream: a document, named by its id */
			if (j->spec.nfield > 1)
				return lc_fail(err, "%s: document \"%.*s\": an lc stream holds one text per "
				               "document, not the fields \"%s\" and \"%s\"", j->label, SHOW,
				               name, j->fields[0], j->fields[1]);
			if (jsonl_check_name(name, strlen(name), err, "%s: the document name", j->label) < 0)
				return -1;
			if (asprintf(&j->where, "%s: document \"%.*s\"", j->label, SHOW, name) < 0) {
				j->where = NULL;
				return lc_fail(err, "out of memory");
			}
			j->id = name;
			j->text[0] = text;
			j->len[0] = len;
			return 1;
		}
		if ((rc = jsonl_parse(&j->spec, text, len, name, &j->rec, err)) < 0)
			return -1;
		if (rc == 0)
			continue;
		if (!(j->where = strdup(name)))
			return lc_fail(err, "out of memory");
		j->id = j->rec.name;
		for (int k = 0; k < j->spec.nfield; k++) {
			j->text[k] = j->rec.text[k];
			j->len[k] = j->rec.len[k];
		}
		return 1;
	}
}

const char *rouge_jsonl_id(const rouge_jsonl *j) { return j->id; }
const char *rouge_jsonl_where(const rouge_jsonl *j) { return j->where ? j->where : "?"; }

const char *rouge_jsonl_text(const rouge_jsonl *j, size_t k, size_t *len)
{
	if (k >= ROUGE_JSONL_MAX_FIELDS || !j->text[k]) {
		*len = 0;
		return NULL;
	}
	*len = j->len[k];
	return j->text[k];
}

/* ---------- texts by id ---------- */

struct idm_entry {
	char *id, *where;
	char *text;                  /* [len] + NUL; NULL once taken and dropped */
	size_t len;
	char *taken;                 /* where it was taken, or NULL */
};

struct rouge_idmap {
	struct idm_entry *e;         /* [n], in the order added */
	size_t n, cap;
	size_t *slot;                /* [nslot]: 0 empty, else entry index + 1 */
	size_t nslot;
	size_t last;                 /* the entry taken last, + 1 (0: none) */
};

rouge_idmap *rouge_idmap_new(lc_err *err)
{
	rouge_idmap *m = calloc(1, sizeof *m);

	if (!m || !(m->slot = calloc(m->nslot = 1024, sizeof *m->slot))) {
		free(m);
		lc_fail(err, "out of memory");
		return NULL;
	}
	return m;
}

void rouge_idmap_free(rouge_idmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->e[i].id);
		free(m->e[i].where);
		free(m->e[i].text);
		free(m->e[i].taken);
	}
	free(m->e);
	free(m->slot);
	free(m);
}

size_t rouge_idmap_count(const rouge_idmap *m) { return m->n; }

/* The slot holding id, or the empty slot where it would go. */
static size_t find_slot(const rouge_idmap *m, const char *id)
{
	size_t mask = m->nslot - 1, s = (size_t)lc_hash_bytes(id, strlen(id)) & mask;

	while (m->slot[s] && strcmp(m->e[m->slot[s] - 1].id, id) != 0)
		s = (s + 1) & mask;
	return s;
}

static int rehash(rouge_idmap *m, lc_err *err)
{
	size_t ns = m->nslot * 2, *old = m->slot;

	if (ns > SIZE_MAX / sizeof *m->slot || !(m->slot = calloc(ns, sizeof *m->slot))) {
		m->slot = old;
		return lc_fail(err, "out of memory");
	}
	m->nslot = ns;
	free(old);
	for (size_t i = 0; i < m->n; i++)
		m->slot[find_slot(m, m->e[i].id)] = i + 1;
	return 0;
}

int rouge_idmap_add(rouge_idmap *m, const char *id, const char *where, const char *text,
                    size_t len, lc_err *err)
{
	struct idm_entry *e;
	size_t s;

	if (2 * (m->n + 1) > m->nslot && rehash(m, err) < 0)
		return -1;
	s = find_slot(m, id);
	if (m->slot[s])
		return lc_fail(err, "%s: id \"%.*s\" given twice (first at %s)", where, SHOW, id,
		               m->e[m->slot[s] - 1].where);
	if (m->n == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 256;
		struct idm_entry *q = realloc(m->e, nc * sizeof *q);
		if (!q)
			return lc_fail(err, "out of memory");
		m->e = q;
		m->cap = nc;
	}
	e = &m->e[m->n];
	memset(e, 0, sizeof *e);
	if (len == SIZE_MAX || !(e->id = strdup(id)) || !(e->where = strdup(where)) ||
	    !(e->text = malloc(len + 1))) {
		free(e->id);
		free(e->where);
		return lc_fail(err, "out of memory");
	}
	if (len)
		memcpy(e->text, text, len);
	e->text[len] = 0;
	e->len = len;
	m->slot[s] = ++m->n;
	return 0;
}

int rouge_idmap_take(rouge_idmap *m, const char *id, const char *where, const char **text,
                     size_t *len, lc_err *err)
{
	size_t s = find_slot(m, id);
	struct idm_entry *e;

	if (!m->slot[s])
		return 0;
	e = &m->e[m->slot[s] - 1];
	if (e->taken)
		return lc_fail(err, "%s: id \"%.*s\" given twice (first at %s)", where, SHOW, id,
		               e->taken);
	if (!(e->taken = strdup(where)))
		return lc_fail(err, "out of memory");
	if (m->last) {
		struct idm_entry *p = &m->e[m->last - 1];
		free(p->text);
		p->text = NULL;
	}
	m->last = m->slot[s];
	*text = e->text;
	*len = e->len;
	return 1;
}

size_t rouge_idmap_untaken(const rouge_idmap *m, const char **id, const char **where)
{
	size_t n = 0;

	*id = *where = NULL;
	for (size_t i = 0; i < m->n; i++)
		if (!m->e[i].taken && n++ == 0) {
			*id = m->e[i].id;
			*where = m->e[i].where;
		}
	return n;
}
