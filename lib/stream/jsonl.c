/*
 * jsonl: records from JSON Lines files. See jsonl.h.
 *
 * Lines come from textin in line mode (the same reading path as text, so
 * compression and archives work alike); each is parsed whole by jansson,
 * which checks the UTF-8, the escapes (a lone surrogate is an error) and
 * the nesting depth.
 */
#include "stream/jsonl.h"

#include <jansson.h>
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

static int bad_json(lc_err *err, const char *where, const json_error_t *je)
{
	switch (json_error_code(je)) {
	case json_error_invalid_utf8:
		return lc_fail(err, "%s: invalid UTF-8 at byte %d", where, je->position + 1);
	case json_error_null_character:
	case json_error_null_byte_in_key:
		return lc_fail(err, "%s: a string holds \\u0000 (column %d)", where, je->column);
	case json_error_duplicate_key:
		return lc_fail(err, "%s: a key given twice: %s", where, je->text);
	case json_error_out_of_memory:
		return lc_fail(err, "%s: out of memory", where);
	default:
		return lc_fail(err, "%s: invalid JSON (column %d): %s", where, je->column, je->text);
	}
}

static int set_id(const jsonl_spec *s, const json_t *root, const char *where, jsonl_rec *r,
                  lc_err *err)
{
	const json_t *v = s->id ? json_object_get(root, s->id) : NULL;

	if (!v || json_is_null(v)) {
		if (!(r->namebuf = strdup(where)))
			return lc_fail(err, "%s: out of memory", where);
		r->name = r->namebuf;
		return 0;
	}
	if (json_is_integer(v)) {
		if (asprintf(&r->namebuf, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0) {
			r->namebuf = NULL;
			return lc_fail(err, "%s: out of memory", where);
		}
		r->name = r->namebuf;
		return 0;
	}
	if (json_is_string(v)) {
		const char *p = json_string_value(v);
		size_t n = json_string_length(v);
		if (n == 0)
			return lc_fail(err, "%s: the id field \"%s\" is empty", where, s->id);
		if (n > LC_MAX_NAME)
			return lc_fail(err, "%s: the id field \"%s\" is longer than %d bytes", where,
			               s->id, LC_MAX_NAME);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return lc_fail(err, "%s: the id field \"%s\" holds a control character "
				               "(byte %zu)", where, s->id, i + 1);
		r->name = p;
		return 0;
	}
	return lc_fail(err, "%s: the id field \"%s\" is %s, not a string or an integer", where,
	               s->id, type_name(v));
}

int jsonl_parse(const jsonl_spec *s, const char *line, size_t len, const char *where,
                jsonl_rec *r, lc_err *err)
{
	json_error_t je;
	json_t *root;
	size_t i;

	jsonl_rec_free(r);
	if (s->nfield < 1 || s->nfield > JSONL_MAX_FIELDS)
		return lc_fail(err, "%s: %d fields asked for (1 to %d)", where, s->nfield,
		               JSONL_MAX_FIELDS);
	if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
		line += 3;
		len -= 3;
	}
	for (i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n')
			break;
	if (i == len)
		return 0;
	if (!(root = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je)))
		return bad_json(err, where, &je);
	r->root = root;
	if (!json_is_object(root)) {
		lc_fail(err, "%s: %s, not a JSON object", where, type_name(root));
		goto bad;
	}
	for (int k = 0; k < s->nfield; k++) {
		const json_t *v = json_object_get(root, s->field[k]);
		if (!v || json_is_null(v)) {
			lc_fail(err, "%s: no \"%s\" field", where, s->field[k]);
			goto bad;
		}
		if (!json_is_string(v)) {
			lc_fail(err, "%s: the \"%s\" field is %s, not a string", where, s->field[k],
			        type_name(v));
			goto bad;
		}
		r->text[k] = json_string_value(v);
		r->len[k] = json_string_length(v);
	}
	if (set_id(s, root, where, r, err) < 0)
		goto bad;
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

void jsonl_close(jsonl *j)
{
	if (!j)
		return;
	textin_close(j->t);
	jsonl_rec_free(&j->rec);
	free(j->first_bad);
	free(j);
}
