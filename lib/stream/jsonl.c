/*
 * jsonl: records from JSON Lines files. See jsonl.h.
 *
 * Lines come from textin in line mode (the same reading path as text, so
 * compression and archives work alike); each is parsed whole by jansson,
 * which checks the UTF-8 (of the whole line, not only of its strings),
 * the escapes (a lone surrogate is an error), duplicate keys and the
 * nesting depth. jsonl_parse is also lc-rouge's parser of a line
 * (text/rouge_jsonl.c), so every rule about a line is here once.
 */
#include "stream/jsonl.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"
#include "stream/textin.h"

struct jsonl {
	jsonl_spec spec;
	textin *t;
	jsonl_rec rec;
	uint64_t skipped;
	char *first_bad;
};

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "a value";
}

void jsonl_rec_free(jsonl_rec *r)
{
	if (!r)
		return;
	json_decref(r->root);
	free(r->namebuf);
	memset(r, 0, sizeof *r);
}

/* At most this many bytes of a name in a message. */
#define SHOW 100

int jsonl_check_name(const char *name, size_t len, lc_err *err, const char *fmt, ...)
{
	char what[sizeof err->msg];
	va_list ap;
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			break;
	if (len > 0 && len <= LC_MAX_NAME && i == len)
		return 0;
	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (len == 0)
		return lc_fail(err, "%s is empty", what);
	if (len > LC_MAX_NAME)
		return lc_fail(err, "%s is longer than %d bytes (\"%.*s...\")", what, LC_MAX_NAME,
		               SHOW, name);
	if (i == 0)
		return lc_fail(err, "%s holds a control character (byte 1)", what);
	return lc_fail(err, "%s holds a control character (byte %zu, after \"%.*s\")", what, i + 1,
	               (int)(i < SHOW ? i : SHOW), name);
}

/* off: the bytes cut from the line's start (a byte order mark), so that
 * byte positions count from the line's start as in the file. */
static int bad_json(lc_err *err, const char *where, const json_error_t *je, size_t off)
{
	switch (json_error_code(je)) {
	case json_error_invalid_utf8:
		return lc_fail(err, "%s: invalid UTF-8 at byte %zu", where, off + (size_t)je->position + 1);
	case json_error_null_character:
	case json_error_null_byte_in_key:
		/* jansson decodes a string once it has read it whole */
		return lc_fail(err, "%s: a string holds \\u0000 (the string ending at byte %zu)",
		               where, off + (size_t)je->position);
	case json_error_duplicate_key:
		return lc_fail(err, "%s: a key given twice: %s", where, je->text);
	case json_error_out_of_memory:
		return lc_fail(err, "%s: out of memory", where);
	default:
		return lc_fail(err, "%s: invalid JSON at byte %zu: %s", where,
		               off + (size_t)je->position, je->text);
	}
}

/* Names r by the id field of root: 1; or by where (no id): 0; -1: a bad id. */
static int set_id(const jsonl_spec *s, const json_t *root, const char *where, jsonl_rec *r,
                  lc_err *err)
{
	const json_t *v = s->id ? json_object_get(root, s->id) : NULL;

	if (s->id && s->id_required && !v)
		return lc_fail(err, "%s: no \"%s\" field (the id)", where, s->id);
	if (!v || (json_is_null(v) && !s->id_required)) {
		if (!(r->namebuf = strdup(where)))
			return lc_fail(err, "%s: out of memory", where);
		r->name = r->namebuf;
		return 0;
	}
	if (json_is_integer(v)) {
		/* in decimal: the integer 7 names a record as the string "7" does */
		if (asprintf(&r->namebuf, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0) {
			r->namebuf = NULL;
			return lc_fail(err, "%s: out of memory", where);
		}
		r->name = r->namebuf;
		return 1;
	}
	if (json_is_string(v)) {
		if (jsonl_check_name(json_string_value(v), json_string_length(v), err,
		                     "%s: the id field \"%s\"", where, s->id) < 0)
			return -1;
		r->name = json_string_value(v);
		return 1;
	}
	return lc_fail(err, "%s: the id field \"%s\" is %s, not a string or an integer", where,
	               s->id, type_name(v));
}

int jsonl_parse(const jsonl_spec *s, const char *line, size_t len, const char *where,
                jsonl_rec *r, lc_err *err)
{
	json_error_t je;
	json_t *root;
	size_t i, off = 0;
	int rc;
	char idmsg[SHOW + 8] = "";

	jsonl_rec_free(r);
	r->where = where;
	if (s->nfield < 1 || s->nfield > JSONL_MAX_FIELDS)
		return lc_fail(err, "%s: %d fields asked for (1 to %d)", where, s->nfield,
		               JSONL_MAX_FIELDS);
	if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0)
		off = 3;
	for (i = off; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n')
			break;
	if (i == len)
		return 0;
	if (!(root = json_loadb(line + off, len - off, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
	                        &je)))
		return bad_json(err, where, &je, off);
	r->root = root;
	if (!json_is_object(root)) {
		lc_fail(err, "%s: %s, not a JSON object", where, type_name(root));
		goto bad;
	}
	if ((rc = set_id(s, root, where, r, err)) < 0)
		goto bad;
	r->has_id = rc > 0;
	if (rc > 0)   /* messages about the fields name the id too */
		snprintf(idmsg, sizeof idmsg, "id \"%.*s\": ", SHOW, r->name);
	for (int k = 0; k < s->nfield; k++) {
		const json_t *v = json_object_get(root, s->field[k]);
		if (!v) {
			lc_fail(err, "%s: %sno \"%s\" field", where, idmsg, s->field[k]);
			goto bad;
		}
		if (!json_is_string(v)) {
			lc_fail(err, "%s: %sthe \"%s\" field is %s, not a string", where, idmsg,
			        s->field[k], type_name(v));
			goto bad;
		}
		r->text[k] = json_string_value(v);
		r->len[k] = json_string_length(v);
	}
	return 1;
bad:
	jsonl_rec_free(r);
	return -1;
}

jsonl *jsonl_open(const char *path, const jsonl_spec *s, lc_err *err)
{
	jsonl *j;

	if (s->nfield < 1 || s->nfield > JSONL_MAX_FIELDS) {
		lc_fail(err, "JSON Lines: %d fields asked for (1 to %d)", s->nfield, JSONL_MAX_FIELDS);
		return NULL;
	}
	if (!(j = calloc(1, sizeof *j))) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	j->spec = *s;
	if (!(j->t = textin_open(path, TEXTIN_LINE, err))) {
		jsonl_close(j);
		return NULL;
	}
	textin_refuse_streams(j->t, "JSON Lines");
	return j;
}

int jsonl_next(jsonl *j, const jsonl_rec **r, lc_err *err)
{
	const char *name, *text;
	size_t len;
	lc_err e;
	int rc;

	for (;;) {
		if ((rc = textin_next(j->t, &name, &text, &len, err)) <= 0)
			return rc;
		rc = jsonl_parse(&j->spec, text, len, name, &j->rec, &e);
		if (rc > 0) {
			*r = &j->rec;
			return 1;
		}
		if (rc == 0)
			continue;
		if (!j->spec.skip_bad) {
			if (err)
				*err = e;
			return -1;
		}
		j->skipped++;
		if (!j->first_bad && !(j->first_bad = strdup(e.msg)))
			return lc_fail(err, "out of memory");
	}
}

uint64_t jsonl_skipped(const jsonl *j)
{
	return j->skipped;
}

const char *jsonl_first_bad(const jsonl *j)
{
	return j->first_bad;
}

int jsonl_tally_add(jsonl_tally *t, const jsonl *j, lc_err *err)
{
	if (!j->skipped)
		return 0;
	if (!t->n && !(t->first = strdup(j->first_bad)))
		return lc_fail(err, "out of memory");
	t->n += j->skipped;
	return 0;
}

int jsonl_tally_note(jsonl_tally *t, const char *msg, lc_err *err)
{
	if (!t->n && !(t->first = strdup(msg)))
		return lc_fail(err, "out of memory");
	t->n++;
	return 0;
}

int jsonl_tally_msg(const jsonl_tally *t, char *buf, size_t n)
{
	if (!t->n)
		return 0;
	snprintf(buf, n, "skipped %llu bad JSON line%s (the first: %s)", (unsigned long long)t->n,
	         t->n == 1 ? "" : "s", t->first);
	return 1;
}

void jsonl_tally_free(jsonl_tally *t)
{
	free(t->first);
	t->first = NULL;
	t->n = 0;
}

void jsonl_close(jsonl *j)
{
	if (!j)
		return;
	textin_close(j->t);
	jsonl_rec_free(&j->rec);
	free(j->first_bad);
	free(j);
}
