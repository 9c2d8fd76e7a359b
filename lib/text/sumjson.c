#include "text/sumjson.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

struct sumjson {
	json_t *o, *all;        /* the line; the array of every summary, or NULL */
	int added;
};

/* text[len] as a JSON string, ill-formed UTF-8 replaced; NULL: out of memory. */
static json_t *string(const char *text, size_t len)
{
	char *buf = malloc(3 * len + 1);
	json_t *v = buf ? json_stringn(buf, utf8_replace(text, len, buf)) : NULL;

	free(buf);
	return v;
}

void sumjson_free(sumjson *j)
{
	if (!j)
		return;
	json_decref(j->all);
	json_decref(j->o);
	free(j);
}

sumjson *sumjson_new(const char *name, int n, lc_err *err)
{
	sumjson *j = calloc(1, sizeof *j);

	if (!j || !(j->o = json_object()) || (n > 1 && !(j->all = json_array())) ||
	    json_object_set_new(j->o, "id", string(name, strlen(name))) < 0) {
		sumjson_free(j);
		lc_fail(err, "out of memory");
		return NULL;
	}
	return j;
}

int sumjson_add(sumjson *j, const char *text, size_t len, lc_err *err)
{
	json_t *v = string(text, len);
	int bad = !v || (j->added == 0 && json_object_set(j->o, "summary", v) < 0) ||
	          (j->all && json_array_append(j->all, v) < 0);

	json_decref(v);
	j->added++;
	return bad ? lc_fail(err, "out of memory") : 0;
}

int sumjson_write(const sumjson *j, FILE *f, lc_err *err)
{
	if (j->all && !json_object_get(j->o, "summaries") &&
	    json_object_set(j->o, "summaries", j->all) < 0)
		return lc_fail(err, "out of memory");
	if (json_dumpf(j->o, f, JSON_PRESERVE_ORDER) < 0 || putc('\n', f) == EOF)
		return lc_fail(err, "write error: %s", strerror(errno));
	return 0;
}
