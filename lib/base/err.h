/*
 * err: how library functions report failure.
 *
 * A library function that can fail takes an `lc_err *` last and returns
 * an int: 0 (or a positive count) on success, -1 on failure with a
 * human-readable message in err->msg. The library never prints and never
 * exits; programs decide. `err` may be NULL when the caller does not want
 * the message.
 */
#ifndef LC_ERR_H
#define LC_ERR_H

#include <stddef.h>

typedef struct lc_err {
	char msg[1024];
} lc_err;

/* Formats into err (if non-NULL) and returns -1, so `return lc_fail(e, ...)`. */
int lc_fail(lc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefixes the existing message with "CONTEXT: "; returns -1. */
int lc_prefix(lc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
