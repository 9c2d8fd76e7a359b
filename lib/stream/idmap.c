/*
 * idmap.c: texts by id in an open-addressing table over entries kept in
 * the order added (see idmap.h).
 */
#include "stream/idmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hash.h"

/* At most this many bytes of an id in a message (as jsonl.c shows names). */
#define SHOW 100

struct idm_entry {
	char *id, *where;
	char *text;                  /* [len] + NUL; NULL once taken and dropped */
	size_t len;
	char *taken;                 /* where it was taken, or NULL */
};

struct idmap {
	struct idm_entry *e;         /* [n], in the order added */
	size_t n, cap;
	size_t *slot;                /* [nslot]: 0 empty, else entry index + 1 */
	size_t nslot;
	size_t last;                 /* the entry taken last, + 1 (0: none) */
};

idmap *idmap_new(lc_err *err)
{
	idmap *m = calloc(1, sizeof *m);

	if (!m || !(m->slot = calloc(m->nslot = 1024, sizeof *m->slot))) {
		free(m);
		lc_fail(err, "out of memory");
		return NULL;
	}
	return m;
}

void idmap_free(idmap *m)
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

size_t idmap_count(const idmap *m) { return m->n; }

/* The slot holding id, or the empty slot where it would go. */
static size_t find_slot(const idmap *m, const char *id)
{
	size_t mask = m->nslot - 1, s = (size_t)lc_hash_bytes(id, strlen(id)) & mask;

	while (m->slot[s] && strcmp(m->e[m->slot[s] - 1].id, id) != 0)
		s = (s + 1) & mask;
	return s;
}

static int rehash(idmap *m, lc_err *err)
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

int idmap_add(idmap *m, const char *id, const char *where, const char *text,
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
	if (lc_grow(&m->e, &m->cap, m->n + 1, sizeof *m->e, 256) < 0)
		return lc_fail(err, "out of memory");
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

int idmap_take(idmap *m, const char *id, const char *where, const char **text,
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

size_t idmap_untaken(const idmap *m, const char **id, const char **where)
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
