/*
 * fileio: whole-file operations that must not lose data.
 */
#ifndef LC_FILEIO_H
#define LC_FILEIO_H

#include <stddef.h>

#include "base/err.h"

/* Copies from to to (created or truncated); every read and write checked,
 * including the close. */
int lc_copy_file(const char *from, const char *to, lc_err *err);
/* Writes n bytes of s to path (created or truncated), every write and the
 * close checked. */
int lc_write_file(const char *path, const char *s, size_t n, lc_err *err);

#endif
