/* libFuzzer target: lc-rouge's JSON Lines records (rouge_jsonl_parse) on
 * arbitrary bytes, line by line, and the id map they go into. A record it
 * accepts has a valid id and its texts; every id added once can be taken
 * once, a second take is refused, and the untaken count adds up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/rouge_jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fields[2] = { "summary", "abstract" };
	const char *p = (const char *)data, *end = p + size;
	lc_err err;
	rouge_jsonl *j = rouge_jsonl_open(NULL, "id", fields, 2, &err);
	rouge_idmap *m = rouge_idmap_new(&err);
	size_t added = 0, taken = 0, line = 0;

	if (!j || !m)
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
		char where[48];
		int rc = rouge_jsonl_parse(j, p, (size_t)(e - p), &err);

		snprintf(where, sizeof where, "fuzz:%zu", ++line);
		if (rc > 0) {
			const char *id = rouge_jsonl_id(j), *t0, *t1;
			size_t l0, l1;
			if (!id || rouge_jsonl_check_id(id, strlen(id), NULL) < 0)
				abort();
			t0 = rouge_jsonl_text(j, 0, &l0);
			t1 = rouge_jsonl_text(j, 1, &l1);
			if (!t0 || !t1 || t0[l0] || t1[l1] || rouge_jsonl_text(j, 2, &l0))
				abort();
			if (rouge_idmap_add(m, id, where, t0, l0, &err) == 0)
				added++;
			else if (rouge_idmap_count(m) != added)
				abort();
		} else {
			size_t l;
			/* a bad or blank line leaves no half record behind */
			if (rouge_jsonl_id(j) || rouge_jsonl_text(j, 0, &l) || l)
				abort();
		}
		p = e + (nl != NULL);
	}
	/* take every other id twice: the second take is a duplicate */
	for (size_t i = 0; i < added; i += 2) {
		const char *id, *where, *t;
		size_t n = rouge_idmap_untaken(m, &id, &where), len;
		char *copy;
		if (n != added - taken || !id || !where)
			abort();
		if (!(copy = strdup(id)))
			abort();
		if (rouge_idmap_take(m, copy, "fuzz:take", &t, &len, &err) != 1 || !t || t[len])
			abort();
		taken++;
		if (rouge_idmap_take(m, copy, "fuzz:again", &t, &len, &err) != -1)
			abort();
		free(copy);
	}
	rouge_idmap_free(m);
	rouge_jsonl_close(j);
	return 0;
}
