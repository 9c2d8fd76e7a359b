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
	jsonl_tally *skip;                        /* bad lines skipped, or NULL: errors */

	/* the last record: of rec, or of an lc stream's document */
	const char *id;
	char *where;
	const char *text[ROUGE_JSONL_MAX_FIELDS];
	size_t len[ROUGE_JSONL_MAX_FIELDS];
};

rouge_jsonl *rouge_jsonl_open(const char *path, const char *idkey, const char *const *fields,
                              size_t nf, jsonl_tally *skip, lc_err *err)
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
	j->skip = skip;
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
		if ((rc = jsonl_parse(&j->spec, text, len, name, &j->rec, err)) < 0) {
			if (!j->skip)
				return -1;
			if (jsonl_tally_note(j->skip, err->msg, err) < 0)
				return -1;
			continue;
		}
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
