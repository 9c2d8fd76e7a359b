#include "text/utf8.h"

#include <stdio.h>
#include <string.h>

size_t utf8_char(const unsigned char *p, size_t len, uint32_t *cp)
{
	unsigned c = p[0];
	size_t n;
	uint32_t v, lo = 0x80, hi = 0xbf;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (len < n)
		return 0;
	/* the second byte has the lead byte's range; the others 80..BF */
	if (p[1] < lo || p[1] > hi)
		return 0;
	v = v << 6 | (p[1] & 0x3f);
	for (size_t i = 2; i < n; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	*cp = v;
	return n;
}

size_t utf8_valid_len(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t i = 0;

	while (i < len) {
		size_t n = utf8_char(p + i, len - i, &cp);
		if (!n)
			break;
		i += n;
	}
	return i;
}

int utf8_valid(const char *s, size_t len)
{
	return utf8_valid_len(s, len) == len;
}

int utf8_not_text(const char *p, size_t len, const char *label, const char *name,
                  const char *action, char *msg, size_t cap)
{
	const char *nul = memchr(p, 0, len);
	size_t good = utf8_valid_len(p, len);
	char why[64];

	if (!nul && good == len)
		return 0;
	if (nul && (size_t)(nul - p) < good)
		snprintf(why, sizeof why, "a NUL byte at byte %zu", (size_t)(nul - p));
	else
		snprintf(why, sizeof why, "invalid UTF-8 at byte %zu", good);
	if (strcmp(name, label) == 0)
		snprintf(msg, cap, "%s: not text (%s): %s", label, why, action);
	else
		snprintf(msg, cap, "%s: document \"%s\" is not text (%s): %s", label, name, why,
		         action);
	return 1;
}

/* The length of the maximal subpart at p: the longest prefix of a
 * well-formed sequence (at least 1). */
static size_t maximal_subpart(const unsigned char *p, size_t len)
{
	unsigned c = p[0];
	size_t n, i;
	unsigned lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 1;
	if (len < 2 || p[1] < lo || p[1] > hi)
		return 1;
	for (i = 2; i < n && i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			break;
	return i;
}

size_t utf8_replace(const char *in, size_t len, char *out)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, o = 0;
	uint32_t cp;

	while (i < len) {
		size_t n = utf8_char(p + i, len - i, &cp);
		if (n) {
			for (size_t k = 0; k < n; k++)
				out[o++] = in[i + k];
			i += n;
		} else {
			out[o++] = (char)0xef;
			out[o++] = (char)0xbf;
			out[o++] = (char)0xbd;
			i += maximal_subpart(p + i, len - i);
		}
	}
	return o;
}

int utf8_py_isspace(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202f || c == 0x205f || c == 0x3000;
}

size_t utf8_py_rstrip_len(const char *s, size_t n)
{
	while (n > 0) {
		size_t k = n - 1;
		uint32_t cp;

		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
		if (utf8_char((const unsigned char *)s + k, n - k, &cp) != n - k || !utf8_py_isspace(cp))
			break;
		n = k;
	}
	return n;
}

size_t utf8_py_lstrip_off(const char *s, size_t n)
{
	size_t i = 0;
	uint32_t cp;

	while (i < n) {
		size_t k = utf8_char((const unsigned char *)s + i, n - i, &cp);

		if (!k || !utf8_py_isspace(cp))
			break;
		i += k;
	}
	return i;
}
