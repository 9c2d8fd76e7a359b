/* libFuzzer target: what the text programs do to the documents a user
 * gives them, on arbitrary bytes. The input is a file read through textin
 * (plain text, compressed, an archive or an lc stream; the first byte
 * picks the split mode), and each document it gives goes through every
 * text layer:
 *   - textin: a document has a name and NUL-terminated text of its
 *     length, no '\n' inside with --split line, no NUL with nul;
 *   - utf8_not_text refuses it exactly when it is not well-formed UTF-8
 *     free of NUL, and utf8_replace makes well-formed UTF-8;
 *   - the sentence splitter's spans are ordered, disjoint, inside the
 *     text and non-empty; GSG (Ind and Seq) selects among the same
 *     sentences with scores in [0, 1];
 *   - ROUGE: a document against itself scores 1 (0 with no tokens) for
 *     every type, and against the document before it in [0, 1], the same
 *     F either way round but for ROUGE-Lsum (its union LCS over the
 *     reference's sentences is not symmetric);
 *   - lc-chunk's plans (a chapter pattern, windows of 3 sentences, byte
 *     windows) cover the text in order;
 *   - the tokenizers (share/spiece.model and tests/data/bart/tiny_bart,
 *     from the source tree): ids inside the vocabulary, and the decoded
 *     text well-formed (NUL-terminated); byte-level BPE gives back the text itself (with
 *     ill-formed bytes replaced, as Python decodes them) when no added
 *     token is in it;
 *   - each line as lc-cat -i ids reads it: accepted exactly when it is
 *     decimal ids below 2^31 separated by white space, with one id a
 *     field. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "stream/convert.h"
#include "stream/stream.h"
#include "stream/textin.h"
#include "text/chunk.h"
#include "text/gsg.h"
#include "text/rouge.h"
#include "text/sentence.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sentence_splitter *ss;
static gsg *g_ind, *g_seq;
static rouge_vocab *rv;
static rouge_work *rw;
static chunk_pattern *chapter;
static lc_tokenizer *spm, *bpe;

static void setup(void)
{
	gsg_opts ind = { 0.3, 0, 0, 1 }, seq = { 0.5, 1, 1, 0 };
	lc_err err;
	int none;

	ss = sentence_new(&err);
	g_ind = gsg_new(&ind, &err);
	g_seq = gsg_new(&seq, &err);
	rv = rouge_vocab_new(1, &err);
	rw = rouge_work_new(&err);
	chapter = chunk_pattern_new("^CHAPTER [0-9IVXLC]+", &err);
	spm = tok_open("share/spiece.model", &err);
	bpe = tok_open_dir("tests/data/bart/tiny_bart", &none, &err);
	if (!ss || !g_ind || !g_seq || !rv || !rw || !chapter || !spm || !bpe) {
		fprintf(stderr, "fuzz_text: setup (run from the source tree): %s\n", err.msg);
		abort();
	}
}

static void check_spans(const sentence_span *sp, size_t n, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (sp[i].start >= sp[i].end || sp[i].end > len || (i && sp[i].start < sp[i - 1].end))
			abort();
}

static void sentences(const char *text, size_t len)
{
	static sentence_span *sp;
	static size_t cap;
	size_t n;
	lc_err err;
	gsg *gs[2] = { g_ind, g_seq };

	if (sentence_split(ss, text, len, &sp, &n, &cap, &err) < 0)
		return;
	check_spans(sp, n, len);
	for (int k = 0; k < 2; k++) {
		const sentence_span *gsp;
		const unsigned char *sel;
		const double *score;
		size_t gn;

		if (gsg_select(gs[k], text, len, &gsp, &sel, &score, &gn, &err) < 0)
			continue;
		if (gn != n)
			abort();
		for (size_t i = 0; i < gn; i++)
			if (gsp[i].start != sp[i].start || gsp[i].end != sp[i].end || sel[i] > 1 ||
			    !(score[i] >= 0 && score[i] <= 1) || (!sel[i] && score[i] != 0))
				abort();
	}
}

/* The document before this one in the input, for rouge(). */
static int have_prev;

static void rouge(const char *text, size_t len)
{
	static rouge_doc prev, cur;
	static int inited;
	static const char *types[] = { "rouge1", "rouge2", "rouge4", "rougeL", "rougeLsum" };
	lc_err err;

	if (!inited) {
		rouge_doc_init(&prev);
		rouge_doc_init(&cur);
		inited = 1;
	}
	if (rouge_doc_set_text(rv, &cur, text, len, &err) < 0)
		return;
	for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
		rouge_type t;
		rouge_score self, ab, ba;

		if (rouge_type_parse(types[k], &t) < 0)
			abort();
		if (rouge_score_type(rw, t, &cur, &cur, &self, &err) < 0)
			abort();
		/* n-grams of a text of fewer than n tokens: none, 0 */
		if (self.f != ((t.kind == ROUGE_N ? cur.n >= (size_t)t.n : cur.n > 0) ? 1.0 : 0.0))
			abort();
		if (!have_prev)
			continue;
		if (rouge_score_type(rw, t, &cur, &prev, &ab, &err) < 0 ||
		    rouge_score_type(rw, t, &prev, &cur, &ba, &err) < 0)
			abort();
		/* ROUGE-Lsum's union of LCS over the reference's sentences is
		 * not symmetric; the others are */
		if (!(ab.f >= 0 && ab.f <= 1) || !(ab.p >= 0 && ab.p <= 1) || !(ab.r >= 0 && ab.r <= 1) ||
		    (t.kind != ROUGE_LSUM && (ab.f != ba.f || ab.p != ba.r || ab.r != ba.p))) {
			fprintf(stderr, "%s: %g %g %g against %g %g %g\n", types[k], ab.p, ab.r, ab.f, ba.p, ba.r, ba.f);
			abort();
		}
	}
	{
		rouge_doc t = prev;

		prev = cur;
		cur = t;
		have_prev = 1;
	}
}

static void check_plan(const chunk_plan *pl, uint64_t total, int tiles)
{
	uint64_t at = 0;

	if (pl->n < 1)
		abort();
	for (size_t i = 0; i < pl->n; i++) {
		const chunk_piece *p = &pl->p[i];

		if (p->offset + p->length > total || (tiles && p->offset != at) ||
		    (i && p->offset < pl->p[i - 1].offset))
			abort();
		at = p->offset + p->length;
	}
	if (at != total)
		abort();
}

static void chunks(const char *text, size_t len)
{
	chunk_plan pl = {0};
	lc_err err;

	if (chunk_plan_pattern(&pl, chapter, text, len, &err) == 0)
		check_plan(&pl, len, 1);
	chunk_plan_free(&pl);
	memset(&pl, 0, sizeof pl);
	if (chunk_plan_sentences(&pl, ss, text, len, 3, 0, &err) == 0)
		check_plan(&pl, len, 1);
	chunk_plan_free(&pl);
	memset(&pl, 0, sizeof pl);
	if (chunk_plan_windows(&pl, len, 7, 2, &err) == 0)
		check_plan(&pl, len, 0);
	chunk_plan_free(&pl);
}

static void tokenize(lc_tokenizer *t, const char *text, size_t len, int byte_level)
{
	static char *out, *rep;
	static size_t cap, rcap;
	tok_enc e = {0};
	size_t olen;
	lc_err err;
	int32_t v = tok_vocab_size(t);

	if (tok_encode(t, text, len, 0, &e, &err) < 0) {
		tok_enc_free(&e);
		return;
	}
	for (size_t i = 0; i < e.n; i++)
		if (e.ids[i] < 0 || e.ids[i] >= v)
			abort();
	if (tok_decode(t, e.ids, e.n, TOK_DEC_KEEP_SPECIAL | TOK_DEC_NO_CLEANUP, &out, &olen, &cap,
	               &err) == 0) {
		if (out[olen] != 0 || !utf8_valid(out, olen))
			abort();
		if (byte_level && !memchr(text, '<', len)) {
			if (rcap < 3 * len + 1) {
				rcap = 3 * len + 1;
				if (!(rep = realloc(rep, rcap)))
					abort();
			}
			size_t rl = utf8_replace(text, len, rep);
			if (rl != olen || memcmp(rep, out, rl) != 0)
				abort();
		}
	}
	tok_enc_free(&e);
}

/* Each line as lc-cat -i ids reads it. */
static void ids_lines(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p), fields = 0, i = 0;
		int ok = 1;
		lc_doc d;
		lc_err err;

		/* what the parser should say: fields of digits, each < 2^31 */
		while (i < n) {
			uint64_t v = 0;
			size_t j = i;

			if (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\v' || p[i] == '\f') {
				i++;
				continue;
			}
			while (j < n && p[j] >= '0' && p[j] <= '9') {
				v = v * 10 + (uint64_t)(p[j] - '0');
				if (v >= (uint64_t)1 << 31)
					ok = 0;
				j++;
			}
			if (j == i || (j < n && p[j] != ' ' && p[j] != '\t' && p[j] != '\r' &&
			               p[j] != '\v' && p[j] != '\f')) {
				ok = 0;
				break;
			}
			fields++;
			i = j;
		}
		memset(&d, 0, sizeof d);
		if (convert_ids_doc(&d, "fuzz", p, n, &err) == 0) {
			const lc_tensor *t = doc_find(&d, "tokens");

			if (!ok || !t || t->dims[0] != (uint64_t)fields)
				abort();
		} else if (ok) {
			abort();
		}
		doc_free(&d);
		p += n + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum textin_split modes[4] = { TEXTIN_FILE, TEXTIN_LINE, TEXTIN_BLANK,
	                                            TEXTIN_NUL };
	enum textin_split mode;
	const char *name, *text;
	size_t len;
	char path[64], msg[512];
	lc_err err;
	textin *t;
	int fd, rc, ndoc = 0;

	if (!ss)
		setup();
	have_prev = 0;
	if (size < 1)
		return 0;
	mode = modes[data[0] & 3];
	if ((fd = fuzz_file(data + 1, size - 1, path)) < 0)
		return 0;
	if (!(t = textin_open(path, mode, &err))) {
		close(fd);
		return 0;
	}
	while (ndoc < 64 && (rc = textin_next(t, &name, &text, &len, &err)) == 1) {
		int bad = !utf8_valid(text, len) || memchr(text, 0, len) != NULL;

		ndoc++;
		if (!name || !*name || text[len] != 0 ||
		    (mode == TEXTIN_LINE && memchr(text, '\n', len)) ||
		    (mode == TEXTIN_NUL && memchr(text, 0, len)))
			abort();
		if (utf8_not_text(text, len, "fuzz", name, "skipped", msg, sizeof msg) != bad)
			abort();
		ids_lines(text, len);
		tokenize(bpe, text, len, 1);
		if (bad)
			continue;
		tokenize(spm, text, len, 0);
		sentences(text, len);
		rouge(text, len);
		chunks(text, len);
	}
	textin_close(t);
	close(fd);
	return 0;
}
