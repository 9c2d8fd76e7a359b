/* libFuzzer target: lc-rouge's JSON Lines inputs (text/rouge_jsonl.h) on
 * arbitrary bytes, read as a file (textin's lines, or an lc stream's
 * documents), and the id map the records go into; the input is read
 * twice, for two text fields and for one (an lc stream has one). A record it gives has an
 * id that jsonl_check_name accepts, a place, and its texts; in plain
 * text the records are those jsonl_parse gives line by line with the id
 * required, up to the first bad line, whose message is jsonl_parse's.
 * Every id added once can be taken once, a second take is refused, and
 * the untaken count adds up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "stream/idmap.h"
#include "stream/jsonl.h"
#include "text/rouge_jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines parsed alone as rouge_jsonl parses them: the records before the
 * first bad line, and that line's message in *bad (empty if none). */
static size_t parse_alone(const char *p, const char *end, const jsonl_spec *s, const char *path,
                          lc_err *bad)
{
	jsonl_rec r = {0};
	size_t nrec = 0, line = 0;
	char where[80];

	bad->msg[0] = 0;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
		int rc;

		snprintf(where, sizeof where, "%s:%zu", path, ++line);
		rc = jsonl_parse(s, p, n, where, &r, bad);
		if (rc < 0)
			break;
		nrec += rc == 1;
		p += n + 1;
	}
	jsonl_rec_free(&r);
	return nrec;
}

/* Reads data[size] (as the file path) with nf text fields. */
static void run(const uint8_t *data, size_t size, const char *path, size_t nf)
{
	static const char *const fields[2] = { "summary", "abstract" };
	size_t added = 0, taken = 0, nrec = 0, want;
	lc_err err, bad;
	rouge_jsonl *j;
	idmap *m;
	int rc, plain;

	if (!(j = rouge_jsonl_open(path, "id", fields, nf, NULL, &err)))
		return;
	if (!(m = idmap_new(&err)))
		abort();
	while ((rc = rouge_jsonl_next(j, &err)) > 0) {
		const char *id = rouge_jsonl_id(j), *where = rouge_jsonl_where(j), *t;
		size_t l;

		if (!id || jsonl_check_name(id, strlen(id), NULL, "the id") < 0 || !where ||
		    strcmp(where, "?") == 0)
			abort();
		for (size_t k = 0; k < nf; k++)
			if (!(t = rouge_jsonl_text(j, k, &l)) || t[l] || strlen(t) > l)
				abort();
		if (rouge_jsonl_text(j, nf, &l) || l)
			abort();
		t = rouge_jsonl_text(j, 0, &l);
		if (idmap_add(m, id, where, t, l, &err) == 0)
			added++;
		else if (idmap_count(m) != added || !strstr(err.msg, "given twice"))
			abort();
		nrec++;
	}
	if (rc < 0 && !err.msg[0])
		abort();
	/* plain text (not an archive, compressed or a stream) reads as lines alone */
	plain = size > 0 && data[0] == '{' && (size < 262 || memcmp(data + 257, "ustar", 5) != 0);
	if (plain) {
		jsonl_spec s = {.field = {fields[0], fields[1]}, .nfield = (int)nf, .id = "id",
		                .id_required = 1};
		want = parse_alone((const char *)data, (const char *)data + size, &s, path, &bad);
		if (nrec != want || (rc < 0) != (bad.msg[0] != 0) ||
		    (rc < 0 && strcmp(err.msg, bad.msg) != 0))
			abort();
	}
	rouge_jsonl_close(j);

	/* take every other id twice: the second take is a duplicate */
	for (size_t i = 0; i < added; i += 2) {
		const char *id, *where, *t;
		size_t n = idmap_untaken(m, &id, &where), len;
		char *copy;
		if (n != added - taken || !id || !where)
			abort();
		if (!(copy = strdup(id)))
			abort();
		if (idmap_take(m, copy, "fuzz:take", &t, &len, &err) != 1 || !t || t[len])
			abort();
		taken++;
		if (idmap_take(m, copy, "fuzz:again", &t, &len, &err) != -1)
			abort();
		free(copy);
	}
	idmap_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path);

	if (fd < 0)
		return 0;
	run(data, size, path, 2);
	run(data, size, path, 1);
	close(fd);
	return 0;
}
