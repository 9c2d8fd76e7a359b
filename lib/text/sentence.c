/*
 * sentence.c: the English sentence splitter (see sentence.h).
 *
 * Two passes. Lines are first grouped into blocks: a block ends at a blank
 * line, before a list item, after a heading, and after a list item whose
 * next line is not an indented continuation; a block never spans one of
 * those breaks. Inside a block, line breaks are ordinary spaces, and each
 * match of the stop pattern (terminal punctuation, closing quotes and
 * brackets, then whitespace) ends a sentence unless one of the exceptions
 * (lower-case next word, abbreviation, initial, list number) applies.
 */
#include "text/sentence.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "text/rematch.h"

struct sentence_splitter {
	pcre2_code *stop;       /* terminal punctuation + closers, before whitespace */
	pcre2_code *abbr;       /* abbreviations that never end a sentence */
	pcre2_code *abbr_num;   /* abbreviations that do not end one before a number */
	pcre2_code *item;       /* a line that starts a list item */
	pcre2_code *heading;    /* a heading line (trimmed) */
};

static const char STOP[] =
	"(?:[.!?]+|\xe2\x80\xa6+)[\"'\xe2\x80\x9d\xe2\x80\x99\xc2\xbb)\\]]*(?=\\s|\\z)";
static const char ABBR[] =
	"^(?:mr|mrs|ms|mx|messrs|dr|prof|sr|jr|st|mt|ft|gen|col|capt|lt|sgt|rev|hon|gov|sen|rep"
	"|e\\.g|i\\.e|cf|vs|viz|approx|ca|resp|incl|dept|univ)$";
static const char ABBR_NUM[] =
	"^(?:no|nos|fig|figs|eq|eqs|vol|vols|pp|p|ch|chap|sec|secs|sect|art|para|ref|refs|tab"
	"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|op|ed|eds|nr)$";
static const char ITEM[] =
	"^[ \\t]*(?:[-*+]|\xe2\x80\xa2|\xe2\x80\xa3|\xe2\x97\xa6|\xe2\x80\x93|\\d{1,3}[.)]"
	"|[a-z][.)]|[A-Z]\\)|\\(\\d{1,3}\\)|\\([a-zA-Z]\\)|\\((?:i|ii|iii|iv|v|vi|vii|viii|ix|x)\\))"
	"[ \\t]+\\S";
static const char HEADING[] =
	"^(?:#{1,6}[ \\t]+\\S.*"                                  /* Markdown */
	"|\\d+(?:\\.\\d+)*\\.?[ \\t]+[A-Z].*"                       /* 2.1 Results */
	"|[^a-z]*[A-Z]{2}[^a-z]*"                                 /* ALL CAPS */
	"|[A-Z0-9][^ \\t]*(?:[ \\t]+(?:[A-Z0-9&(\"'][^ \\t]*|a|an|the|and|or|nor|but|of|in|on|at"
	"|to|for|by|with|from|as|vs|via|into))*"                  /* Title Case */
	")(?<![.,;:])$";

static pcre2_code *compile(const char *pat, uint32_t opts, lc_err *err)
{
	int code;
	PCRE2_SIZE off;
	pcre2_code *c = re_compile(pat, opts | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off);

	if (!c) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(code, msg, sizeof msg);
		lc_fail(err, "sentence: pattern error at %zu: %s", (size_t)off, (char *)msg);
		return NULL;
	}
	return c;
}

sentence_splitter *sentence_new(lc_err *err)
{
	sentence_splitter *s = calloc(1, sizeof *s);

	if (!s) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	if (!(s->stop = compile(STOP, 0, err)) ||
	    !(s->abbr = compile(ABBR, PCRE2_CASELESS, err)) ||
	    !(s->abbr_num = compile(ABBR_NUM, PCRE2_CASELESS, err)) ||
	    !(s->item = compile(ITEM, 0, err)) ||
	    !(s->heading = compile(HEADING, 0, err))) {
		sentence_free(s);
		return NULL;
	}
	return s;
}

void sentence_free(sentence_splitter *s)
{
	if (!s)
		return;
	pcre2_code_free(s->stop);
	pcre2_code_free(s->abbr);
	pcre2_code_free(s->abbr_num);
	pcre2_code_free(s->item);
	pcre2_code_free(s->heading);
	free(s);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int matches(const pcre2_code *c, pcre2_match_data *md, const char *p, size_t n)
{
	return re_match(c, p, n, 0, 0, md) >= 0;
}

typedef struct out {
	sentence_span **spans;
	size_t *n, *cap;
} out;

/* Appends text[a..b) trimmed, if anything is left. */
static int emit(out *o, const char *text, size_t a, size_t b, lc_err *err)
{
	while (a < b && is_space(text[a]))
		a++;
	while (b > a && is_space(text[b - 1]))
		b--;
	if (a == b)
		return 0;
	if (lc_grow(o->spans, o->cap, *o->n + 1, sizeof **o->spans, 64) < 0)
		return lc_fail(err, "out of memory");
	(*o->spans)[*o->n].start = a;
	(*o->spans)[(*o->n)++].end = b;
	return 0;
}

static int is_lower(unsigned char c)
{
	return c >= 'a' && c <= 'z';
}

static int is_alnum(unsigned char c)
{
	return is_lower(c) || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Sentences of the block text[a..b). */
static int split_block(const sentence_splitter *s, pcre2_match_data *md, const char *text,
                       size_t a, size_t b, out *o, lc_err *err)
{
	size_t start = a, off = a;

	while (off < b) {
		PCRE2_SIZE *ov;
		size_t ms, me, nx, ws, we;
		int rc = re_match(s->stop, text, b, off, 0, md);

		if (rc < 0)
			break;
		ov = pcre2_get_ovector_pointer(md);
		ms = ov[0];
		me = ov[1];
		off = me > off ? me : off + 1;
		for (nx = me; nx < b && is_space(text[nx]); nx++)
			;
		if (nx == b)
			break;                           /* the block's end ends it anyway */
		if (is_lower((unsigned char)text[nx]))
			continue;                        /* e.g. "... and", "e.g. the" */
		/* the word before the stop, without leading punctuation */
		for (ws = ms; ws > start && !is_space(text[ws - 1]); ws--)
			;
		we = ms;
		while (ws < we && !is_alnum((unsigned char)text[ws]))
			ws++;
		if (text[ms] == '.' && (ms + 1 == me || text[ms + 1] != '.') && ws < we) {
			size_t k, sstart = start;
			int digits = 1;

			while (sstart < ms && is_space(text[sstart]))
				sstart++;
			if (matches(s->abbr, md, text + ws, we - ws))
				continue;
			if (matches(s->abbr_num, md, text + ws, we - ws) &&
			    text[nx] >= '0' && text[nx] <= '9')
				continue;
			if (we - ws == 1 && text[ws] >= 'A' && text[ws] <= 'Z')
				continue;                    /* an initial: "J. R. R. Tolkien" */
			for (k = ws; k < we; k++)
				if (text[k] < '0' || text[k] > '9')
					digits = 0;
			if (ws == sstart && (digits || we - ws == 1))
				continue;                    /* a list number: "1. First" */
		}
		if (emit(o, text, start, me, err) < 0)
			return -1;
		start = me;
	}
	return emit(o, text, start, b, err);
}

static int blank_line(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_space(p[i]))
			return 0;
	return 1;
}

static int is_heading(const sentence_splitter *s, pcre2_match_data *md, const char *p, size_t n)
{
	size_t words = 0, i;

	while (n && is_space(p[n - 1]))
		n--;
	while (n && is_space(*p))
		p++, n--;
	if (!n || n > 100)
		return 0;
	for (i = 0; i < n; i++)
		if (!is_space(p[i]) && (i == 0 || is_space(p[i - 1])))
			words++;
	return words <= 12 && matches(s->heading, md, p, n);
}

int sentence_split(const sentence_splitter *s, const char *text, size_t len,
                   sentence_span **spans, size_t *n, size_t *cap, lc_err *err)
{
	pcre2_match_data *md = pcre2_match_data_create(4, NULL);
	out o = { spans, n, cap };
	size_t ls = 0, bstart = 0;
	int first = 1, in_item = 0, rc = 0;

	*n = 0;
	if (!md)
		return lc_fail(err, "out of memory");
	while (ls < len && rc == 0) {
		const char *nl = memchr(text + ls, '\n', len - ls);
		size_t le = nl ? (size_t)(nl - text) : len;
		size_t ns = le + 1, ne = 0;
		int brk, blank = blank_line(text + ls, le - ls);

		if (first)
			in_item = !blank && matches(s->item, md, text + ls, le - ls);
		if (ns <= len) {
			const char *nl2 = ns < len ? memchr(text + ns, '\n', len - ns) : NULL;
			ne = nl2 ? (size_t)(nl2 - text) : len;
		}
		if (blank || ns > len || ns >= len)
			brk = 1;
		else if (blank_line(text + ns, ne - ns) || matches(s->item, md, text + ns, ne - ns))
			brk = 1;
		else if (first && is_heading(s, md, text + ls, le - ls))
			brk = 1;
		else if (in_item && !(text[ns] == ' ' || text[ns] == '\t'))
			brk = 1;
		else
			brk = 0;
		if (brk) {
			if (!blank || !first)
				rc = split_block(s, md, text, bstart, le, &o, err);
			bstart = ns;
			first = 1;
		} else {
			first = 0;
		}
		ls = ns;
	}
	pcre2_match_data_free(md);
	return rc;
}
