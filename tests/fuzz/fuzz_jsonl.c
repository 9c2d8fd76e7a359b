/* libFuzzer target: the JSON Lines reader (stream/jsonl.h) on arbitrary
 * bytes. The first byte picks the fields asked for, the id field and
 * whether it is required (as lc-rouge asks); the rest is the input. Each line parsed alone must give a record, a blank
 * line or a bad line whose message names it; a record's texts and name
 * must be NUL-free UTF-8 of the stated length (a name from the id one
 * that jsonl_check_name accepts), and its fields written back as JSON must
 * parse to the same record. The whole input read through jsonl_open (as
 * a file: textin's line splitting, --skip-bad counting) must give as many
 * records and bad lines as the lines parsed alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fuzz_file.h"
#include "stream/jsonl.h"
#include "stream/stream.h"
#include "text/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const field_sets[4][2] = {
	{"text", NULL}, {"article", "abstract"}, {"a", "a"}, {"", "id"},
};

static void check_rec(const jsonl_spec *s, const jsonl_rec *r, const char *where)
{
	size_t nl = strlen(r->name);

	if (nl == 0 || nl > LC_MAX_NAME + 64 || !utf8_valid(r->name, nl))
		abort();
	if (strcmp(r->name, where) != 0 && jsonl_check_name(r->name, nl, NULL, "the name") < 0)
		abort();
	if (s->id && s->id_required && jsonl_check_name(r->name, nl, NULL, "the name") < 0)
		abort();
	for (int k = 0; k < s->nfield; k++)
		if (!r->text[k] || strlen(r->text[k]) != r->len[k] || !utf8_valid(r->text[k], r->len[k]))
			abort();
}

/* The record's fields (and id) written as a JSON object parse back to the same. */
static void round_trip(const jsonl_spec *s, const jsonl_rec *r, const char *where)
{
	json_t *o = json_object();
	char *line;
	jsonl_rec back = {0};
	lc_err err;

	for (int k = 0; k < s->nfield; k++)
		json_object_set_new(o, s->field[k], json_stringn(r->text[k], r->len[k]));
	if (s->id && (s->id_required || strcmp(r->name, where) != 0) && !json_object_get(o, s->id))
		json_object_set_new(o, s->id, json_string(r->name));
	if (!(line = json_dumps(o, JSON_COMPACT)))
		abort();
	if (jsonl_parse(s, line, strlen(line), where, &back, &err) != 1)
		abort();
	if (strcmp(back.name, r->name) != 0)
		abort();
	for (int k = 0; k < s->nfield; k++)
		if (back.len[k] != r->len[k] || memcmp(back.text[k], r->text[k], r->len[k]) != 0)
			abort();
	jsonl_rec_free(&back);
	free(line);
	json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	jsonl_spec s = {0};
	jsonl_rec r = {0};
	const char *p, *end;
	uint64_t nrec = 0, nbad = 0, line = 0;
	char where[64], path[64];
	lc_err err;
	jsonl *j;
	int fd, rc;

	if (size < 1)
		return 0;
	s.field[0] = field_sets[data[0] & 3][0];
	s.field[1] = field_sets[data[0] & 3][1];
	s.nfield = s.field[1] ? 2 : 1;
	s.id = data[0] & 4 ? "id" : NULL;
	s.id_required = (data[0] & 8) != 0;
	s.skip_bad = 1;
	p = (const char *)data + 1;
	end = (const char *)data + size;

	/* each line alone */
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		snprintf(where, sizeof where, "fuzz:%llu", (unsigned long long)++line);
		rc = jsonl_parse(&s, p, n, where, &r, &err);
		if (rc == 1) {
			check_rec(&s, &r, where);
			round_trip(&s, &r, where);
			nrec++;
		} else if (rc == -1) {
			if (strncmp(err.msg, where, strlen(where)) != 0 || r.root || r.name)
				abort();
			nbad++;
		} else if (rc != 0) {
			abort();
		}
		p += n + 1;
	}
	jsonl_rec_free(&r);

	/* the same through the reader, as a file */
	if ((fd = fuzz_file(data + 1, size - 1, path)) < 0)
		return 0;
	if ((j = jsonl_open(path, &s, &err))) {
		const jsonl_rec *rr;
		uint64_t n = 0;
		while ((rc = jsonl_next(j, &rr, &err)) > 0) {
			check_rec(&s, rr, rr->name);
			n++;
		}
		/* plain text (not an archive, compressed or a stream) reads as split above */
		if (rc == 0 && size > 1 && data[1] == '{' &&
		    (size - 1 < 262 || memcmp(data + 1 + 257, "ustar", 5) != 0) &&
		    (n != nrec || jsonl_skipped(j) != nbad || (nbad && !jsonl_first_bad(j))))
			abort();
		jsonl_close(j);
	}
	close(fd);
	return 0;
}
