/* test_sentence: the English sentence splitter on hand-checked prose. */
#include "t.h"

#include "text/sentence.h"

/* Splits text and joins the sentences with " | ". */
static void split_join(const sentence_splitter *s, const char *text, char *buf, size_t bufsz)
{
	sentence_span *sp = NULL;
	size_t n = 0, cap = 0, i, o = 0;

	buf[0] = 0;
	if (sentence_split(s, text, strlen(text), &sp, &n, &cap, NULL) < 0) {
		snprintf(buf, bufsz, "ERROR");
		return;
	}
	for (i = 0; i < n && o < bufsz; i++)
		o += (size_t)snprintf(buf + o, bufsz - o, "%s%.*s", i ? " | " : "",
		                      (int)(sp[i].end - sp[i].start), text + sp[i].start);
	free(sp);
}

static const char *const cases[][2] = {
	/* plain prose */
	{ "The cat sat. The dog ran! Did it? Yes.",
	  "The cat sat. | The dog ran! | Did it? | Yes." },
	/* abbreviations and titles */
	{ "Mr. Smith met Dr. Jones at St. Mary's. They talked.",
	  "Mr. Smith met Dr. Jones at St. Mary's. | They talked." },
	{ "Use a stemmer, e.g. Porter's. Or not, i.e. none. See Fig. 3 for details.",
	  "Use a stemmer, e.g. Porter's. | Or not, i.e. none. | See Fig. 3 for details." },
	{ "It was signed on Jan. 5 by the board. No. 7 was absent.",
	  "It was signed on Jan. 5 by the board. | No. 7 was absent." },
	/* initials */
	{ "The Hobbit was written by J. R. R. Tolkien. It sold well.",
	  "The Hobbit was written by J. R. R. Tolkien. | It sold well." },
	/* decimals and versions */
	{ "Pi is about 3.14 and e is 2.718. Version 1.2.3 fixed it. Costs rose 4.5%.",
	  "Pi is about 3.14 and e is 2.718. | Version 1.2.3 fixed it. | Costs rose 4.5%." },
	/* ellipses */
	{ "He paused... and went on. Then silence\xe2\x80\xa6 Nobody spoke.",
	  "He paused... and went on. | Then silence\xe2\x80\xa6 | Nobody spoke." },
	{ "Wait... What happened?", "Wait... | What happened?" },
	/* closing quotes and brackets after the stop */
	{ "She said \"Stop.\" Then she left. (He stayed.) The end.",
	  "She said \"Stop.\" | Then she left. | (He stayed.) | The end." },
	{ "\xe2\x80\x9cReally?\xe2\x80\x9d he asked. Nobody knew.",
	  "\xe2\x80\x9cReally?\xe2\x80\x9d he asked. | Nobody knew." },
	/* hard-wrapped prose: line breaks inside a sentence */
	{ "The encoder reads the whole\ndocument at once and the decoder\nwrites the summary. It is fast.",
	  "The encoder reads the whole\ndocument at once and the decoder\nwrites the summary. | It is fast." },
	/* blank lines end a sentence even without punctuation */
	{ "First paragraph without a stop\n\nSecond one.",
	  "First paragraph without a stop | Second one." },
	/* headings */
	{ "Introduction\nLong documents are hard to summarize. We fix that.",
	  "Introduction | Long documents are hard to summarize. | We fix that." },
	{ "2.1 Related Work\nPrior work used attention.", "2.1 Related Work | Prior work used attention." },
	{ "# Usage\nRun the program.", "# Usage | Run the program." },
	{ "RESULTS AND DISCUSSION\nScores improved.", "RESULTS AND DISCUSSION | Scores improved." },
	/* list items */
	{ "Steps:\n1. Tokenize the text\n2. Encode it\n3. Decode a summary",
	  "Steps: | 1. Tokenize the text | 2. Encode it | 3. Decode a summary" },
	{ "Options:\n- fast mode\n- slow mode\n  with more detail\n* other",
	  "Options: | - fast mode | - slow mode\n  with more detail | * other" },
	{ "(a) first case\n(b) second case", "(a) first case | (b) second case" },
	/* lower-case continuation is not a new sentence */
	{ "The value is 5. and then it grows.", "The value is 5. and then it grows." },
	/* whitespace, empty */
	{ "   ", "" },
	{ "", "" },
	{ "  One.  Two.  ", "One. | Two." },
	/* real text (a Debian man page paragraph, lightly shortened) */
	{ "The tar program provides the ability to create tar archives, as well as various other kinds "
	  "of manipulation. For example, you can use tar on previously created archives to extract "
	  "files, to store additional files, or to update or list files which were already stored. "
	  "Initially, tar archives were used to store files conveniently on magnetic tape.",
	  "The tar program provides the ability to create tar archives, as well as various other kinds "
	  "of manipulation. | For example, you can use tar on previously created archives to extract "
	  "files, to store additional files, or to update or list files which were already stored. | "
	  "Initially, tar archives were used to store files conveniently on magnetic tape." },
	/* real text (abstract-style prose with numbers and abbreviations) */
	{ "We evaluate on arXiv and PubMed (Cohan et al., 2018). LOCOST reaches 93% of the "
	  "performance of the best models, i.e. it trades a little quality for a lot of memory. "
	  "Sec. 4 gives details.",
	  "We evaluate on arXiv and PubMed (Cohan et al., 2018). | LOCOST reaches 93% of the "
	  "performance of the best models, i.e. it trades a little quality for a lot of memory. | "
	  "Sec. 4 gives details." },
};

static void test_cases(void)
{
	sentence_splitter *s = sentence_new(NULL);
	char buf[4096];
	size_t i;

	T_OK(s != NULL, "sentence_new");
	if (!s)
		return;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		split_join(s, cases[i][0], buf, sizeof buf);
		T_OK(strcmp(buf, cases[i][1]) == 0, "case %zu:\n  got  [%s]\n  want [%s]", i, buf, cases[i][1]);
	}
	sentence_free(s);
}

/* Invalid UTF-8 and NUL bytes neither crash nor end sentences. */
static void test_bytes(void)
{
	sentence_splitter *s = sentence_new(NULL);
	static const char text[] = "Bad \xff\xfe bytes. More\0text. End";
	sentence_span *sp = NULL;
	size_t n = 0, cap = 0;

	T_OK(sentence_split(s, text, sizeof text - 1, &sp, &n, &cap, NULL) == 0, "split");
	T_EQ_I(n, 3);
	free(sp);
	sentence_free(s);
}

int main(void)
{
	T_RUN(test_cases);
	T_RUN(test_bytes);
	return t_done();
}
