/*
 * utf8: UTF-8 as Python reads and writes it, for the tokenizers whose
 * reference is Python code (byte-level BPE).
 *
 * utf8_replace() is bytes.decode("utf-8", errors="replace") followed by
 * str.encode("utf-8"): every maximal subpart of an ill-formed sequence
 * (Unicode's "substitution of maximal subparts", which CPython follows)
 * becomes one U+FFFD; well-formed text is copied unchanged.
 * utf8_py_isspace() is str.isspace() for one code point: Unicode
 * White_Space plus the bidi separators U+001C..U+001F.
 */
#ifndef LC_UTF8_H
#define LC_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length of the well-formed character at p[0..len), or 0 if the bytes
 * there are not one (*cp gets the code point when well-formed). */
size_t utf8_char(const unsigned char *p, size_t len, uint32_t *cp);

/* 1 if p[0..len) is well-formed UTF-8. */
int utf8_valid(const char *p, size_t len);
/* The length of the longest well-formed prefix of p[0..len): len if all is. */
size_t utf8_valid_len(const char *p, size_t len);

/* Whether p[0..len) is not text, as a binary file given by mistake is
 * not: 1 with msg "LABEL: not text (a NUL byte at byte N): ACTION" (or
 * "LABEL: document \"NAME\" is not text (invalid UTF-8 at byte N): ACTION"
 * when the document's name is not the input's label), the first of the
 * two found; 0 for text. For the programs that read text and go on. */
int utf8_not_text(const char *p, size_t len, const char *label, const char *name,
                  const char *action, char *msg, size_t cap);

/* out [at most 3 len bytes]: in[len] with ill-formed subparts replaced;
 * returns the output length. */
size_t utf8_replace(const char *in, size_t len, char *out);

int utf8_py_isspace(uint32_t cp);
/* str.rstrip() and str.lstrip() of s[0..n): the length left, and the
 * offset of the first byte kept (ill-formed bytes are not whitespace). */
size_t utf8_py_rstrip_len(const char *s, size_t n);
size_t utf8_py_lstrip_off(const char *s, size_t n);

#endif
