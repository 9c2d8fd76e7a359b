/*
 * textin: text documents from the places users keep them.
 *
 * A path is a plain file (one document, or several by split mode), a
 * compressed file or archive (tar, zip, gzip, bzip2, xz, zstd, ... read
 * with libarchive: each regular member is a document named by its path,
 * in archive order, then split by mode), a directory (each regular file
 * is a document, in byte order of file names, not recursive), an lc
 * stream (each document's "text" tensor, name kept), or "-" for standard
 * input (any of the above but a directory).
 *
 * Split modes: FILE (the whole input is one document), LINE (each line,
 * without its "\n", is a document "NAME:N", N from 1), BLANK (paragraphs
 * separated by one or more blank lines, "NAME:N"), NUL (NUL-separated).
 * Documents are held whole in memory one at a time.
 */
#ifndef LC_TEXTIN_H
#define LC_TEXTIN_H

#include <stddef.h>

#include "base/err.h"

enum textin_split { TEXTIN_FILE, TEXTIN_LINE, TEXTIN_BLANK, TEXTIN_NUL };

typedef struct textin textin;

/* -1 if s is not "file", "line", "blank" or "nul". */
int textin_split_parse(const char *s);

textin *textin_open(const char *path, enum textin_split mode, lc_err *err);
/* 1: a document (name, text[len], NUL-terminated; valid until the next
 * call); 0: no more; -1: error naming the input and document. */
int textin_next(textin *t, const char **name, const char **text, size_t *len, lc_err *err);
/* Makes an input that is an lc stream an error, "NAME: an lc stream, not
 * FORMAT", instead of a source of documents: for readers of a text format
 * (JSON Lines) that streams do not carry. format is kept, not copied. */
void textin_refuse_streams(textin *t, const char *format);
/* The metadata of the document textin_next() returned last when it came
 * from an lc stream (so that programs can carry it on), else NULL. */
const struct lc_meta *textin_meta(const textin *t);
void textin_close(textin *t);

#endif
