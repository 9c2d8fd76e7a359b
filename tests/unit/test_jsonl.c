/* test_jsonl: one JSON Lines line to a record (stream/jsonl.h): fields,
 * names, escapes, the limits of an id (jsonl_check_name), a required id
 * (lc-rouge's), and the message of each bad line. */
#include "t.h"

#include "stream/jsonl.h"
#include "stream/stream.h"

static int parse(const jsonl_spec *s, const char *line, jsonl_rec *r, lc_err *err)
{
	return jsonl_parse(s, line, strlen(line), "f.jsonl:7", r, err);
}

static void test_records(void)
{
	jsonl_spec s = {.field = {"article", "abstract"}, .nfield = 2, .id = "id"};
	jsonl_rec r = {0};
	lc_err err;

	T_EQ_I(parse(&s, "{\"id\": \"x-1\", \"article\": \"A\\nB\", \"abstract\": \"\"}", &r, &err), 1);
	T_EQ_S(r.name, "x-1");
	T_EQ_S(r.text[0], "A\nB");
	T_EQ_I(r.len[0], 3);
	T_EQ_S(r.text[1], "");
	T_EQ_I(r.len[1], 0);
	T_EQ_I(parse(&s, "{\"abstract\": \"b\", \"id\": -12, \"article\": \"a\"}", &r, &err), 1);
	T_EQ_S(r.name, "-12");
	T_EQ_I(parse(&s, "{\"abstract\": \"b\", \"id\": 9223372036854775807, \"article\": \"a\"}", &r, &err), 1);
	T_EQ_S(r.name, "9223372036854775807");
	T_EQ_I(parse(&s, "{\"abstract\": \"b\", \"article\": \"a\"}", &r, &err), 1);
	T_EQ_S(r.name, "f.jsonl:7");
	T_EQ_I(parse(&s, "{\"abstract\": \"b\", \"article\": \"a\", \"id\": null}", &r, &err), 1);
	T_EQ_S(r.name, "f.jsonl:7");
	T_EQ_I(parse(&s, "\xef\xbb\xbf {\"abstract\": \"\\u00e9\\ud83d\\ude00\", \"article\": \"a\"}\r", &r, &err), 1);
	T_EQ_S(r.text[1], "\xc3\xa9\xf0\x9f\x98\x80");
	T_EQ_I(r.len[1], 6);
	/* the same field twice, and a record without an id field asked for */
	s = (jsonl_spec){.field = {"t", "t"}, .nfield = 2};
	T_EQ_I(parse(&s, "{\"t\": \"x\", \"id\": \"ignored\"}", &r, &err), 1);
	T_EQ_S(r.name, "f.jsonl:7");
	T_EQ_S(r.text[1], "x");
	jsonl_rec_free(&r);
	jsonl_rec_free(&r);   /* twice is harmless */
}

static void test_blank(void)
{
	jsonl_spec s = {.field = {"text"}, .nfield = 1};
	jsonl_rec r = {0};
	lc_err err;

	T_EQ_I(jsonl_parse(&s, "", 0, "w", &r, &err), 0);
	T_EQ_I(parse(&s, " \t\r", &r, &err), 0);
	T_EQ_I(parse(&s, "\xef\xbb\xbf", &r, &err), 0);
	T_OK(r.name == NULL && r.root == NULL, "a blank line leaves no record");
}

static void test_id_limits(void)
{
	jsonl_spec s = {.field = {"text"}, .nfield = 1, .id = "id"};
	jsonl_rec r = {0};
	lc_err err;
	size_t n = LC_MAX_NAME + 64;
	char *line = malloc(n);
	char *id = malloc(LC_MAX_NAME + 2);

	memset(id, 'a', LC_MAX_NAME + 1);
	id[LC_MAX_NAME] = 0;
	snprintf(line, n, "{\"text\": \"t\", \"id\": \"%s\"}", id);
	T_EQ_I(parse(&s, line, &r, &err), 1);
	T_EQ_I(strlen(r.name), LC_MAX_NAME);
	id[LC_MAX_NAME] = 'a';
	id[LC_MAX_NAME + 1] = 0;
	snprintf(line, n, "{\"text\": \"t\", \"id\": \"%s\"}", id);
	T_EQ_I(parse(&s, line, &r, &err), -1);
	T_OK(strstr(err.msg, "longer than 4096 bytes") != NULL, "%s", err.msg);
	T_EQ_I(parse(&s, "{\"text\": \"t\", \"id\": \"\\u007f\"}", &r, &err), -1);
	T_OK(strstr(err.msg, "control character (byte 1)") != NULL, "%s", err.msg);
	T_EQ_I(parse(&s, "{\"text\": \"t\", \"id\": \"caf\\u00e9 \\u2028\"}", &r, &err), 1);
	T_EQ_S(r.name, "caf\xc3\xa9 \xe2\x80\xa8");
	jsonl_rec_free(&r);
	free(line);
	free(id);
}

static void test_bad(void)
{
	static const struct { const char *line, *msg; } bad[] = {
		{"{", "f.jsonl:7: invalid JSON at byte 1: "},
		{"{\"text\": \"a\",}", "f.jsonl:7: invalid JSON at byte 14: "},
		{"{\"text\": \"a\"} {}", "f.jsonl:7: invalid JSON"},
		{"[{\"text\": \"a\"}]", "f.jsonl:7: an array, not a JSON object"},
		{"3.5", "f.jsonl:7: a number, not a JSON object"},
		{"false", "f.jsonl:7: false, not a JSON object"},
		{"{}", "f.jsonl:7: no \"text\" field"},
		{"{\"text\": null}", "f.jsonl:7: the \"text\" field is null, not a string"},
		{"{\"text\": null, \"id\": 3}", "f.jsonl:7: id \"3\": the \"text\" field is null, not a string"},
		{"{\"id\": \"x\"}", "f.jsonl:7: id \"x\": no \"text\" field"},
		{"{\"id\": \"\", \"text\": 1}", "f.jsonl:7: the id field \"id\" is empty"},   /* the id first */
		{"{\"text\": [\"a\"]}", "f.jsonl:7: the \"text\" field is an array, not a string"},
		{"{\"text\": true}", "f.jsonl:7: the \"text\" field is true, not a string"},
		{"{\"text\": \"a\\u0000\"}", "f.jsonl:7: a string holds \\u0000 (the string ending at byte 18)"},
		{"{\"te\\u0000xt\": \"a\"}", "f.jsonl:7: a string holds \\u0000"},
		{"{\"text\": \"\xc3\x28\"}", "f.jsonl:7: invalid UTF-8 at byte 11"},
		{"\xef\xbb\xbf{\"text\": \"\xc3\x28\"}", "f.jsonl:7: invalid UTF-8 at byte 14"},   /* BOM counted */
		{"{\"text\": \"a\"} \xff", "f.jsonl:7: invalid UTF-8 at byte 15"},   /* outside strings too */
		{"{\"text\": \"\xed\xa0\x80\"}", "f.jsonl:7: invalid UTF-8"},   /* an encoded surrogate */
		{"{\"text\": \"\\udc00\\ud800\"}", "f.jsonl:7: invalid JSON"},
		{"{\"text\": \"a\", \"text\": \"a\"}", "f.jsonl:7: a key given twice"},
		{"{\"text\": \"a\", \"id\": {}}", "f.jsonl:7: the id field \"id\" is an object, not a string or an integer"},
		{"{\"text\": \"a\", \"id\": 1e3}", "f.jsonl:7: the id field \"id\" is a number"},
		{"{\"text\": \"a\", \"id\": \"\"}", "f.jsonl:7: the id field \"id\" is empty"},
		{"{\"text\": \"a\", \"id\": \"a\\nb\"}", "f.jsonl:7: the id field \"id\" holds a control character (byte 2, after \"a\")"},
		{"{\"text\": \"a\", \"id\": \"\\tb\"}", "f.jsonl:7: the id field \"id\" holds a control character (byte 1)"},
	};
	jsonl_spec s = {.field = {"text"}, .nfield = 1, .id = "id"};
	jsonl_rec r = {0};
	lc_err err;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		strcpy(err.msg, "");
		T_EQ_I(parse(&s, bad[i].line, &r, &err), -1);
		T_OK(strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) == 0, "%s: \"%s\", want \"%s...\"",
		     bad[i].line, err.msg, bad[i].msg);
		T_OK(r.root == NULL && r.name == NULL, "a bad line leaves no record");
	}
	/* a raw NUL byte inside the line */
	T_EQ_I(jsonl_parse(&s, "{\"text\": \"a\0b\"}", 15, "w", &r, &err), -1);
	s.nfield = 0;
	T_EQ_I(parse(&s, "{}", &r, &err), -1);
	s.nfield = JSONL_MAX_FIELDS + 1;
	T_OK(jsonl_open("-", &s, &err) == NULL, "too many fields refused");
}

/* lc-rouge's records: the id is required, and 7 and "7" name alike. */
static void test_id_required(void)
{
	static const struct { const char *line, *msg; } bad[] = {
		{"{\"summary\": \"s\"}", "r.jsonl:3: no \"id\" field (the id)"},
		{"{\"id\": null, \"summary\": \"s\"}",
		 "r.jsonl:3: the id field \"id\" is null, not a string or an integer"},
		{"{\"id\": 1.5, \"summary\": \"s\"}",
		 "r.jsonl:3: the id field \"id\" is a number, not a string or an integer"},
		{"{\"id\": \"b\", \"summary\": [\"s\"]}",
		 "r.jsonl:3: id \"b\": the \"summary\" field is an array, not a string"},
		{"{\"id\": 8}", "r.jsonl:3: id \"8\": no \"summary\" field"},
	};
	jsonl_spec s = {.field = {"summary"}, .nfield = 1, .id = "id", .id_required = 1};
	jsonl_rec r = {0};
	lc_err err;
	char *name;

	T_EQ_I(jsonl_parse(&s, "{\"id\": 7, \"summary\": \"s\"}", 25, "r.jsonl:1", &r, &err), 1);
	name = strdup(r.name);
	T_EQ_I(jsonl_parse(&s, "{\"id\": \"7\", \"summary\": \"s\"}", 27, "r.jsonl:2", &r, &err), 1);
	T_EQ_S(r.name, name);
	T_EQ_I(jsonl_parse(&s, "{\"id\": \"007\", \"summary\": \"s\"}", 29, "r.jsonl:2", &r, &err), 1);
	T_OK(strcmp(r.name, name) != 0, "\"007\" is another id than 7");
	free(name);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		strcpy(err.msg, "");
		T_EQ_I(jsonl_parse(&s, bad[i].line, strlen(bad[i].line), "r.jsonl:3", &r, &err), -1);
		T_EQ_S(err.msg, bad[i].msg);
		T_OK(r.root == NULL && r.name == NULL, "a bad line leaves no record");
	}
	/* blank lines are no records, the id required or not */
	T_EQ_I(jsonl_parse(&s, " \r", 2, "r.jsonl:4", &r, &err), 0);
	jsonl_rec_free(&r);
}

static void test_check_name(void)
{
	char *big = malloc(LC_MAX_NAME + 2);
	lc_err err;

	T_EQ_I(jsonl_check_name("doc-1 caf\xc3\xa9", 11, &err, "the name"), 0);
	T_EQ_I(jsonl_check_name("x", 1, NULL, "unused"), 0);
	T_EQ_I(jsonl_check_name("", 0, NULL, "unused"), -1);
	T_EQ_I(jsonl_check_name("", 0, &err, "%s: the %s", "in", "name"), -1);
	T_EQ_S(err.msg, "in: the name is empty");
	T_EQ_I(jsonl_check_name("ab\x7f", 3, &err, "the name"), -1);
	T_EQ_S(err.msg, "the name holds a control character (byte 3, after \"ab\")");
	T_EQ_I(jsonl_check_name("a\0b", 3, &err, "the name"), -1);   /* a NUL inside */
	T_EQ_S(err.msg, "the name holds a control character (byte 2, after \"a\")");
	memset(big, 'x', LC_MAX_NAME + 1);
	big[LC_MAX_NAME + 1] = 0;
	T_EQ_I(jsonl_check_name(big, LC_MAX_NAME, &err, "the name"), 0);
	T_EQ_I(jsonl_check_name(big, LC_MAX_NAME + 1, &err, "the name"), -1);
	T_OK(strncmp(err.msg, "the name is longer than 4096 bytes (\"xxx", 40) == 0 &&
	     strlen(err.msg) == 40 + 97 + 5, "%s", err.msg);   /* 100 bytes of it shown */
	free(big);
}

int main(void)
{
	T_RUN(test_records);
	T_RUN(test_blank);
	T_RUN(test_id_limits);
	T_RUN(test_bad);
	T_RUN(test_id_required);
	T_RUN(test_check_name);
	return t_done();
}
