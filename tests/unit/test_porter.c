/* test_porter: the whole NLTK 3.8 PorterStemmer list (tests/data/porter). */
#include "t.h"

#include "text/porter.h"

static void test_nltk_list(void)
{
	size_t len, nrows = 0, bad = 0, changed = 0;
	char *buf = t_slurp(t_data("porter/porter.tsv"), &len);
	char *p, *end, *line, *tab, out[256];

	T_OK(buf != NULL, "cannot read %s", t_data("porter/porter.tsv"));
	if (!buf)
		return;
	end = buf + len;
	p = memchr(buf, '\n', len);          /* skip the header */
	T_OK(p && strncmp(buf, "word\tstem\n", 10) == 0, "header");
	for (p = p + 1; p < end; p = line + 1) {
		size_t wl, sl, got;

		line = memchr(p, '\n', (size_t)(end - p));
		if (!line)
			line = end;
		tab = memchr(p, '\t', (size_t)(line - p));
		if (!tab) {
			T_OK(0, "row %zu has no tab", nrows + 1);
			break;
		}
		wl = (size_t)(tab - p);
		sl = (size_t)(line - tab - 1);
		if (wl >= sizeof out) {
			T_OK(0, "word too long in row %zu", nrows + 1);
			continue;
		}
		got = porter_stem(p, wl, out);
		nrows++;
		if (got != sl || memcmp(out, tab + 1, sl) != 0) {
			if (bad++ < 20)
				T_OK(0, "%.*s -> %s, want %.*s", (int)wl, p, out, (int)sl, tab + 1);
		}
		if (got != wl || memcmp(out, p, wl) != 0)
			changed++;
		T_OK(strlen(out) == got, "NUL-terminated");
	}
	T_EQ_I(nrows, 75492);
	T_EQ_I(bad, 0);
	T_EQ_I(changed, 51895);
	free(buf);
}

/* The irregular forms and short words, spelled out. */
static void test_edges(void)
{
	static const char *const cases[][2] = {
		{ "skies", "sky" }, { "dying", "die" }, { "innings", "inning" },
		{ "news", "news" }, { "ies", "i" }, { "ties", "tie" }, { "cried", "cri" },
		{ "died", "die" }, { "s", "s" }, { "is", "is" }, { "", "" },
		{ "generalization", "gener" }, { "yyy", "yyy" },
	};
	char out[64];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		porter_stem(cases[i][0], strlen(cases[i][0]), out);
		T_OK(strcmp(out, cases[i][1]) == 0, "%s -> %s, want %s", cases[i][0], out, cases[i][1]);
	}
}

int main(void)
{
	T_RUN(test_nltk_list);
	T_RUN(test_edges);
	return t_done();
}
