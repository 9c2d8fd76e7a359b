#include "text/rouge_jsonl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/hash.h"
#include "stream/textin.h"
#include "text/utf8.h"

#define SHOW 100       /* at most this many bytes of an id in a message */
#define MAX_ID 4096    /* bytes in an id */

struct rouge_jsonl {
	textin *in;                               /* NULL: a parser only */
	char *label;                              /* the input, in messages */
	char *idkey;
	char *fields[ROUGE_JSONL_MAX_FIELDS];
	size_t nf;

	/* the last record */
	json_t *root;                             /* the line's object, owns the strings */
	char num[32];                             /* an integer id, in decimal */
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
	j->nf = nf;
	if (!(j->idkey = strdup(idkey)))
		goto oom;
	for (size_t k = 0; k < nf; k++)
		if (!(j->fields[k] = strdup(fields[k])))
			goto oom;
	if (!path)
		return j;
	if (!(j->label = strdup(strcmp(path, "-") == 0 ? "stdin" : path)))
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
	json_decref(j->root);
	free(j->label);
	free(j->idkey);
	for (size_t k = 0; k < ROUGE_JSONL_MAX_FIELDS; k++)
		free(j->fields[k]);
	free(j->where);
	free(j);
}

int rouge_jsonl_check_id(const char *id, size_t len, lc_err *err)
{
	if (len == 0)
		return lc_fail(err, "the id is empty");
	if (len > MAX_ID)
		return lc_fail(err, "the id \"%.*s...\" is longer than %d bytes", SHOW, id, MAX_ID);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
			return lc_fail(err, "the id \"%.*s\" holds a control character (byte %zu)",
			               (int)(i < SHOW ? i : SHOW), id, i + 1);
	return 0;
}

/* "a string", "an array", ...: what a JSON value is, for messages. */
static const char *kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a JSON value";
}

static void drop_record(rouge_jsonl *j)
{
	json_decref(j->root);
	j->root = NULL;
	j->id = NULL;
	for (size_t k = 0; k < j->nf; k++) {
		j->text[k] = NULL;
		j->len[k] = 0;
	}
}

static int parse(rouge_jsonl *j, const char *line, size_t len, lc_err *err)
{
	json_error_t je;
	json_t *v;
	size_t i, good, bom = 0;

	if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {   /* a byte order mark */
		bom = 3;
		line += bom;
		len -= bom;
	}
	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'); i++)
		;
	if (i == len)
		return 0;
	if ((good = utf8_valid_len(line, len)) < len)
		return lc_fail(err, "invalid UTF-8 at byte %zu", bom + good + 1);
	j->root = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!j->root)
		return lc_fail(err, "invalid JSON: %s (byte %zu)", je.text, bom + (size_t)je.position);
	if (!json_is_object(j->root))
		return lc_fail(err, "%s, not a JSON object", kind(j->root));

	if (!(v = json_object_get(j->root, j->idkey)))
		return lc_fail(err, "no \"%s\" field (the id)", j->idkey);
	if (json_is_string(v)) {
		j->id = json_string_value(v);
		if (rouge_jsonl_check_id(j->id, json_string_length(v), err) < 0)
			return -1;
	} else if (json_is_integer(v)) {
		snprintf(j->num, sizeof j->num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		j->id = j->num;
	} else {
		return lc_fail(err, "the \"%s\" field (the id) is %s, not a string or an integer",
		               j->idkey, kind(v));
	}

	for (size_t k = 0; k < j->nf; k++) {
		if (!(v = json_object_get(j->root, j->fields[k])))
			return lc_fail(err, "id \"%.*s\": no \"%s\" field", SHOW, j->id, j->fields[k]);
		if (!json_is_string(v))
			return lc_fail(err, "id \"%.*s\": the \"%s\" field is %s, not a string", SHOW, j->id,
			               j->fields[k], kind(v));
		j->text[k] = json_string_value(v);
		j->len[k] = json_string_length(v);
	}
	return 1;
}

int rouge_jsonl_parse(rouge_jsonl *j, const char *line, size_t len, lc_err *err)
{
	int rc;

	drop_record(j);
	if ((rc = parse(j, line, len, err)) <= 0)
		drop_record(j);   /* no half record after a bad line */
	return rc;
}

int rouge_jsonl_next(rouge_jsonl *j, lc_err *err)
{
	const char *name, *text;
	size_t len;
	int rc;

	if (!j->in)
		return lc_fail(err, "rouge_jsonl_next: a parser has no input");
	for (;;) {
		drop_record(j);
		free(j->where);
		j->where = NULL;
		if ((rc = textin_next(j->in, &name, &text, &len, err)) <= 0)
			return rc;
		if (textin_meta(j->in)) {
			/* an lc stream: a document, named by its id */
			if (j->nf > 1)
				return lc_fail(err, "%s: document \"%.*s\": an lc stream holds one text per "
				               "document, not the fields \"%s\" and \"%s\"", j->label, SHOW,
				               name, j->fields[0], j->fields[1]);
			if (rouge_jsonl_check_id(name, strlen(name), err) < 0)
				return lc_prefix(err, "%s: document name", j->label);
			if (asprintf(&j->where, "%s: document \"%.*s\"", j->label, SHOW, name) < 0) {
				j->where = NULL;
				return lc_fail(err, "out of memory");
			}
			j->id = name;
			j->text[0] = text;
			j->len[0] = len;
			return 1;
		}
		if ((rc = rouge_jsonl_parse(j, text, len, err)) < 0)
			return lc_prefix(err, "%s", name);
		if (rc == 0)
			continue;
		if (!(j->where = strdup(name)))
			return lc_fail(err, "out of memory");
		return 1;
	}
}

const char *rouge_jsonl_id(const rouge_jsonl *j) { return j->id; }
const char *rouge_jsonl_where(const rouge_jsonl *j) { return j->where ? j->where : "?"; }

const char *rouge_jsonl_text(const rouge_jsonl *j, size_t k, size_t *len)
{
	if (k >= j->nf || !j->text[k]) {
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
