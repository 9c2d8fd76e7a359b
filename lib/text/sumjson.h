/*
 * sumjson: one document's summaries as a line of JSON Lines, the one
 * shape lc-decode -f jsonl and lc-cat -o jsonl write:
 *
 *   {"id": NAME, "summary": FIRST}
 *   {"id": NAME, "summary": FIRST, "summaries": [FIRST, SECOND, ...]}
 *
 * the second with several summaries (--num-return-sequences). Ill-formed
 * UTF-8 in the name or a text becomes U+FFFD (as Python's
 * errors="replace"), so the line stays valid JSON.
 */
#ifndef LC_SUMJSON_H
#define LC_SUMJSON_H

#include <stddef.h>
#include <stdio.h>

#include "base/err.h"

typedef struct sumjson sumjson;

/* A line for the document NAME that will get n (>= 1) summaries. */
sumjson *sumjson_new(const char *name, int n, lc_err *err);
/* The next summary, text[len]. */
int sumjson_add(sumjson *j, const char *text, size_t len, lc_err *err);
/* Writes the line and its newline to f ("write error: ..." on failure). */
int sumjson_write(const sumjson *j, FILE *f, lc_err *err);
void sumjson_free(sumjson *j);

#endif
