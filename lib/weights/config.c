#include "weights/config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"

static json_t *checked(json_t *root, const json_error_t *je, const char *path, lc_err *err)
{
	if (!root) {
		lc_fail(err, "%s: %s (line %d)", path, je->text, je->line);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		lc_fail(err, "%s: not a JSON object", path);
		return NULL;
	}
	return root;
}

json_t *cfg_load(const char *path, lc_err *err)
{
	json_error_t je;
	json_t *root;
	FILE *f;

	if (lc_small_file(path, LC_MAX_JSON_FILE, "config file", err) < 0)
		return NULL;
	if (!(f = fopen(path, "rb"))) {
		lc_fail(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	fclose(f);
	return checked(root, &je, path, err);
}

json_t *cfg_parse(const char *buf, size_t len, const char *label, lc_err *err)
{
	json_error_t je;

	return checked(json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je), &je, label, err);
}

static const json_t *get(const json_t *root, const char *key)
{
	const json_t *v = json_object_get(root, key);
	return v && !json_is_null(v) ? v : NULL;
}

int cfg_int(const json_t *root, const char *key, int def, int lo, int hi, int *out,
            const char *path, lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		if (def == CFG_REQUIRED)
			return lc_fail(err, "%s: \"%s\" is missing", path, key);
		if (def != CFG_UNSET && (def < lo || def > hi))
			return lc_fail(err, "%s: \"%s\" is missing, and its default %d is outside [%d, %d]",
			               path, key, def, lo, hi);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return lc_fail(err, "%s: \"%s\" must be an integer in [%d, %d]", path, key, lo, hi);
	*out = (int)json_integer_value(v);
	return 0;
}

int cfg_bool(const json_t *root, const char *key, int def, int *out, const char *path,
             lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return lc_fail(err, "%s: \"%s\" must be true or false", path, key);
	*out = json_is_true(v);
	return 0;
}

int cfg_num(const json_t *root, const char *key, double def, double lo, double hi, double *out,
            const char *path, lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi))
		return lc_fail(err, "%s: \"%s\" must be a number in [%g, %g]", path, key, lo, hi);
	*out = json_number_value(v);
	return 0;
}

int cfg_str(const json_t *root, const char *key, const char *def, const char **out,
            const char *path, lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return lc_fail(err, "%s: \"%s\" must be a string", path, key);
	*out = json_string_value(v);
	return 0;
}

/* ---------------------------------------------- writing as Python does */

typedef struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *q;
		while (cap < b->n + n + 1)
			cap *= 2;
		if (!(q = realloc(b->p, cap))) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void puts_(sbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* repr(float): the shortest digits that read back as x, in fixed notation
 * for decimal exponents -4..15, else d.ddde+XX. */
static void put_float(sbuf *b, double x)
{
	char tmp[64], digits[32], out[64];
	int p, e, nd = 0, o = 0;
	char *s;

	if (isnan(x)) {
		puts_(b, "NaN");
		return;
	}
	if (isinf(x)) {
		puts_(b, x < 0 ? "-Infinity" : "Infinity");
		return;
	}
	for (p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
		if (strtod(tmp, NULL) == x)
			break;
	}
	s = tmp;
	if (*s == '-') {
		out[o++] = '-';
		s++;
	}
	for (; *s && *s != 'e'; s++)
		if (*s != '.')
			digits[nd++] = *s;
	e = atoi(s + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	if (e >= -4 && e < 16) {
		if (e >= 0) {
			for (int i = 0; i <= e; i++)
				out[o++] = i < nd ? digits[i] : '0';
			out[o++] = '.';
			if (nd > e + 1)
				for (int i = e + 1; i < nd; i++)
					out[o++] = digits[i];
			else
				out[o++] = '0';
		} else {
			out[o++] = '0';
			out[o++] = '.';
			for (int i = 0; i < -e - 1; i++)
				out[o++] = '0';
			for (int i = 0; i < nd; i++)
				out[o++] = digits[i];
		}
		out[o] = 0;
	} else {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			for (int i = 1; i < nd; i++)
				out[o++] = digits[i];
		}
		snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	}
	puts_(b, out);
}

static void put_string(sbuf *b, const char *s, size_t n, int ascii)
{
	char u[16];

	put(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;
		int len;
		if (c == '"' || c == '\\') {
			put(b, "\\", 1);
			put(b, s + i++, 1);
			continue;
		}
		if (c < 0x20) {
			const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" :
			                  c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
			if (!esc) {
				snprintf(u, sizeof u, "\\u%04x", c);
				esc = u;
			}
			puts_(b, esc);
			i++;
			continue;
		}
		if (!ascii || (c >= 0x20 && c < 0x7f)) {
			put(b, s + i++, 1);
			continue;
		}
		/* ensure_ascii: DEL and every non-ASCII character as \uXXXX
		 * (UTF-16, surrogate pairs above U+FFFF); jansson gave valid UTF-8 */
		len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
		for (int k = 1; k < len && i + (size_t)k < n; k++)
			cp = (cp << 6) | ((unsigned char)s[i + (size_t)k] & 0x3f);
		if (cp >= 0x10000) {
			cp -= 0x10000;
			snprintf(u, sizeof u, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
		} else {
			snprintf(u, sizeof u, "\\u%04x", cp);
		}
		puts_(b, u);
		i += (size_t)len;
	}
	put(b, "\"", 1);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void indent(sbuf *b, int level)
{
	put(b, "\n", 1);
	for (int i = 0; i < level; i++)
		put(b, "  ", 2);
}

static void put_value(sbuf *b, const json_t *v, int level, int ascii)
{
	char tmp[32];

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		size_t n = json_object_size(v), k = 0;
		const char **keys;
		const char *key;
		json_t *x;
		if (n == 0) {
			puts_(b, "{}");
			return;
		}
		if (!(keys = malloc(n * sizeof *keys))) {
			b->oom = 1;
			return;
		}
		json_object_foreach((json_t *)v, key, x)
			keys[k++] = key;
		qsort(keys, n, sizeof *keys, cmp_key);
		puts_(b, "{");
		for (k = 0; k < n; k++) {
			indent(b, level + 1);
			put_string(b, keys[k], strlen(keys[k]), ascii);
			puts_(b, ": ");
			put_value(b, json_object_get(v, keys[k]), level + 1, ascii);
			if (k + 1 < n)
				puts_(b, ",");
		}
		free(keys);
		indent(b, level);
		puts_(b, "}");
		return;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		if (n == 0) {
			puts_(b, "[]");
			return;
		}
		puts_(b, "[");
		for (size_t k = 0; k < n; k++) {
			indent(b, level + 1);
			put_value(b, json_array_get(v, k), level + 1, ascii);
			if (k + 1 < n)
				puts_(b, ",");
		}
		indent(b, level);
		puts_(b, "]");
		return;
	}
	case JSON_STRING:
		put_string(b, json_string_value(v), json_string_length(v), ascii);
		return;
	case JSON_INTEGER:
		snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		puts_(b, tmp);
		return;
	case JSON_REAL:
		put_float(b, json_real_value(v));
		return;
	case JSON_TRUE:
		puts_(b, "true");
		return;
	case JSON_FALSE:
		puts_(b, "false");
		return;
	default:
		puts_(b, "null");
	}
}

char *cfg_dump_hf(const json_t *root, int ensure_ascii)
{
	sbuf b = { 0 };

	put_value(&b, root, 0, ensure_ascii);
	put(&b, "\n", 1);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
