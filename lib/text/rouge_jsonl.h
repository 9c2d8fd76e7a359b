/*
 * rouge_jsonl: summaries kept in JSON Lines files, and their pairing by
 * id, for lc-rouge --jsonl.
 *
 * An input is JSON Lines: one JSON object per line, as lc-decode writes
 * {"id": ..., "summary": ...} and as a Hugging Face datasets export looks
 * ({"id": ..., "article": ..., "abstract": ...}). A line is what
 * stream/jsonl.h says (jsonl_parse: the same rules, checks and messages
 * as lc-tokenize --jsonl, so that the documents lc-tokenize names by id
 * keep their ids through lc-encode and lc-decode to be paired here),
 * with the id field required: a line without it, or with null, is bad.
 * The id is the record's name there: a string as it is, an integer in
 * decimal, so the integer 7 and the string "7" are the same id ("007" is
 * another). Plain, compressed and archived files and standard input are
 * read through textin (line by line); an input that is an lc stream gives
 * its documents instead, the id being the document's name (which must
 * pass jsonl_check_name) and its "text" record the one text.
 *
 * The texts of one side (the references) are kept by id (stream/idmap.h),
 * so that the other side, read in its own order, can take each
 * text once. Texts are held in memory: references are summaries, the
 * corpus of candidates is streamed.
 *
 * Every error names the file and line ("ref.jsonl:12: ..."), or the
 * input and document for an lc stream.
 */
#ifndef LC_ROUGE_JSONL_H
#define LC_ROUGE_JSONL_H

#include <stddef.h>

#include "base/err.h"
#include "stream/jsonl.h"

#define ROUGE_JSONL_MAX_FIELDS 2

typedef struct rouge_jsonl rouge_jsonl;

/* A reader of the input at path (NULL or "-": standard input) that takes
 * from each line the id field idkey and the text fields fields[nf]
 * (1 <= nf <= ROUGE_JSONL_MAX_FIELDS; the strings are copied). With skip
 * non-NULL a bad line is skipped and counted there, not an error. */
rouge_jsonl *rouge_jsonl_open(const char *path, const char *idkey, const char *const *fields,
                              size_t nf, jsonl_tally *skip, lc_err *err);
void rouge_jsonl_close(rouge_jsonl *j);

/* The next record: 1; 0 at the end of the input; -1 on a bad line or a
 * read error, with a message naming the file and line. */
int rouge_jsonl_next(rouge_jsonl *j, lc_err *err);

/* Of the last record (valid until the next call to next): its id; where
 * it was ("FILE:LINE", or "FILE: document \"NAME\"" in an lc stream); the
 * text of fields[k], [*len] bytes and a NUL (NULL for k >= nf). */
const char *rouge_jsonl_id(const rouge_jsonl *j);
const char *rouge_jsonl_where(const rouge_jsonl *j);
const char *rouge_jsonl_text(const rouge_jsonl *j, size_t k, size_t *len);


#endif
