/*
 * rematch: a PCRE2 match through the JIT where the pattern was compiled
 * for it, else (or where the JIT's fixed stack cannot hold the match, a
 * repeated group over thousands of bytes: PCRE2_ERROR_JIT_STACKLIMIT)
 * the interpreter, so that JIT-compiling a pattern never fails a match
 * the interpreter makes. The JIT is there for speed: under
 * PCRE2_MATCH_INVALID_UTF the interpreter checks the subject's UTF-8 from
 * the start offset to its end at every call, which made many matches in
 * a long text quadratic.
 */
#ifndef LC_REMATCH_H
#define LC_REMATCH_H

#define PCRE2_CODE_UNIT_WIDTH 8

#include <stddef.h>
#include <stdint.h>

#include <pcre2.h>

/* Compiles pattern (JIT too where PCRE2 has one): NULL with *code and
 * *offset as pcre2_compile sets them. */
pcre2_code *re_compile(const char *pattern, uint32_t options, int *code, PCRE2_SIZE *offset);
/* pcre2_match(re, s, len, off, options, md, NULL), as rematch.h says. */
int re_match(const pcre2_code *re, const char *s, size_t len, size_t off, uint32_t options,
             pcre2_match_data *md);

#endif
