/*
 * idmap: texts by id, each to be taken once, in the order added: lc-rouge's
 * references by JSONL id or by file name (the candidates, read in their own
 * order, take theirs), and the names of lc-tokenize's records (a text of
 * none) to refuse one given twice.
 */
#ifndef LC_IDMAP_H
#define LC_IDMAP_H

#include <stddef.h>

#include "base/err.h"

typedef struct idmap idmap;

idmap *idmap_new(lc_err *err);
void idmap_free(idmap *m);
size_t idmap_count(const idmap *m);

/* Adds id -> text[len] (copied), found at where; an id already there is
 * an error naming both places, "WHERE: id \"ID\" given twice (first at
 * FIRST)". */
int idmap_add(idmap *m, const char *id, const char *where, const char *text,
                    size_t len, lc_err *err);

/* Takes the text of id for a record found at where: 1 and *text, *len
 * (valid until the next take; the map then drops it); 0 if the map has no
 * such id; -1 if the id was taken already (a duplicate: the message names
 * where it was taken first). */
int idmap_take(idmap *m, const char *id, const char *where, const char **text,
                     size_t *len, lc_err *err);

/* The number of ids never taken, and the first of them in the order they
 * were added (*id, *where; NULL when none). */
size_t idmap_untaken(const idmap *m, const char **id, const char **where);

#endif
