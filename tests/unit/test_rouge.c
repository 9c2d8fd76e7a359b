/* test_rouge: the tokenizer goldens and every scores.tsv row of the
 * rouge-score oracle (tests/data/rouge), bit for bit; bags against
 * rouge_ngram; edge cases. */
#include "t.h"

#include <stdint.h>

#include "text/rouge.h"

static char *slurp_data(const char *name, size_t *len)
{
	char *p = t_slurp(t_data(name), len);

	T_OK(p != NULL, "cannot read %s", t_data(name));
	return p;
}

/* Splits buf into lines (in place); returns the count. */
static size_t lines(char *buf, size_t len, char ***out)
{
	size_t n = 0, cap = 1024, i;
	char **l = malloc(cap * sizeof *l), *p = buf;

	for (i = 0; i < len; i++)
		if (buf[i] == '\n') {
			buf[i] = 0;
			if (n == cap)
				l = realloc(l, (cap *= 2) * sizeof *l);
			l[n++] = p;
			p = buf + i + 1;
		}
	*out = l;
	return n;
}

static void test_tokenizer_goldens(void)
{
	size_t len, nl, i, bad = 0, rows = 0;
	char *buf = slurp_data("rouge/tokenize/tokens.tsv", &len), **l;
	rouge_vocab *v[2];
	uint32_t *ids = NULL;
	size_t cap = 0;

	if (!buf)
		return;
	v[0] = rouge_vocab_new(0, NULL);
	v[1] = rouge_vocab_new(1, NULL);
	nl = lines(buf, len, &l);
	T_EQ_S(l[0], "id\tstem\tcount\ttokens");
	for (i = 1; i < nl; i++) {
		char id[8], path[64], *text, got[1 << 16], *f[4], *p = l[i];
		size_t tl, n = 0, k, gl = 0;
		int stem, count;

		for (k = 0; k < 4; k++) {
			f[k] = p;
			p = k < 3 ? strchr(p, '\t') : NULL;
			if (k < 3) {
				if (!p) break;
				*p++ = 0;
			}
		}
		if (k < 4) {
			T_OK(0, "bad row %zu", i);
			continue;
		}
		snprintf(id, sizeof id, "%s", f[0]);
		stem = atoi(f[1]);
		count = atoi(f[2]);
		snprintf(path, sizeof path, "rouge/tokenize/texts/%s.txt", id);
		text = t_slurp(t_data(path), &tl);
		if (!text) {
			T_OK(0, "cannot read %s", path);
			continue;
		}
		T_OK(rouge_tokenize(v[stem], text, tl, &ids, &n, &cap, NULL) == 0, "tokenize %s", id);
		got[0] = 0;
		for (k = 0; k < n; k++) {
			const char *w = rouge_vocab_word(v[stem], ids[k]);
			gl += (size_t)snprintf(got + gl, sizeof got - gl, "%s%s", k ? " " : "", w);
			if (gl >= sizeof got) { gl = sizeof got - 1; break; }
		}
		rows++;
		if ((int)n != count || strcmp(got, f[3]) != 0) {
			if (bad++ < 10)
				T_OK(0, "text %s stem %d: got %zu tokens \"%.200s\", want %d \"%.200s\"",
				     id, stem, n, got, count, f[3]);
		}
		free(text);
	}
	T_EQ_I(rows, 600);
	T_EQ_I(bad, 0);
	free(ids);
	free(l);
	free(buf);
	rouge_vocab_free(v[0]);
	rouge_vocab_free(v[1]);
}

static const rouge_type types[4] = {
	{ ROUGE_N, 1 }, { ROUGE_N, 2 }, { ROUGE_L, 0 }, { ROUGE_LSUM, 0 },
};

static int doc_from_file(rouge_vocab *v, rouge_doc *d, const char *name)
{
	char path[128];
	size_t len;
	char *text;
	int rc;

	snprintf(path, sizeof path, "rouge/pairs/%s", name);
	text = t_slurp(t_data(path), &len);
	if (!text)
		return -1;
	rc = rouge_doc_set_text(v, d, text, len, NULL);
	free(text);
	return rc;
}

/* Every row of scores.tsv: single references through rouge_score_multi
 * with one reference, the multi-reference ids with all of theirs. */
static void test_scores_oracle(void)
{
	size_t len, nl, i, rows = 0, bad = 0, multi_rows = 0;
	char *buf = slurp_data("rouge/scores.tsv", &len), **l;
	rouge_vocab *v[2];
	rouge_work *w = rouge_work_new(NULL);
	rouge_doc cand, refs[4];
	rouge_score got[4];
	char cur[16] = "";
	int curstem = -1, k;

	if (!buf)
		return;
	v[0] = rouge_vocab_new(0, NULL);
	v[1] = rouge_vocab_new(1, NULL);
	rouge_doc_init(&cand);
	for (k = 0; k < 4; k++)
		rouge_doc_init(&refs[k]);
	nl = lines(buf, len, &l);
	T_EQ_S(l[0], "id\tstem\ttype\tP\tR\tF");
	for (i = 1; i < nl; i++) {
		char id[16], type[16], name[64];
		int stem, t;
		double want[3];
		rouge_score *s;

		if (sscanf(l[i], "%15s\t%d\t%15s\t%lf\t%lf\t%lf", id, &stem, type,
		           &want[0], &want[1], &want[2]) != 6) {
			T_OK(0, "bad row %zu", i);
			continue;
		}
		if (strcmp(id, cur) != 0 || stem != curstem) {
			int nref = 0;
			snprintf(name, sizeof name, "%s.cand", id);
			T_OK(doc_from_file(v[stem], &cand, name) == 0, "read %s", name);
			snprintf(name, sizeof name, "%s.ref", id);
			if (doc_from_file(v[stem], &refs[0], name) == 0) {
				nref = 1;
			} else {
				for (nref = 0; nref < 4; nref++) {
					snprintf(name, sizeof name, "%s.ref.%d", id, nref + 1);
					if (doc_from_file(v[stem], &refs[nref], name) < 0)
						break;
				}
			}
			T_OK(nref >= 1, "references of %s", id);
			T_OK(rouge_score_multi(w, types, 4, &cand, refs, (size_t)nref, got, NULL) == 0,
			     "score %s", id);
			snprintf(cur, sizeof cur, "%s", id);
			curstem = stem;
			if (nref > 1)
				multi_rows += 4;
		}
		for (t = 0; t < 4; t++) {
			char tn[16];
			if (strcmp(rouge_type_name(types[t], tn), type) == 0)
				break;
		}
		T_OK(t < 4, "type %s", type);
		if (t == 4)
			continue;
		s = &got[t];
		rows++;
		if (s->p != want[0] || s->r != want[1] || s->f != want[2]) {
			if (bad++ < 20)
				T_OK(0, "%s stem=%d %s: got %.17g %.17g %.17g want %.17g %.17g %.17g",
				     id, stem, type, s->p, s->r, s->f, want[0], want[1], want[2]);
		}
	}
	T_EQ_I(rows, 2640);
	T_EQ_I(multi_rows, 240);
	T_EQ_I(bad, 0);
	rouge_doc_free(&cand);
	for (k = 0; k < 4; k++)
		rouge_doc_free(&refs[k]);
	rouge_work_free(w);
	rouge_vocab_free(v[0]);
	rouge_vocab_free(v[1]);
	free(l);
	free(buf);
}

/* rouge1_bag and rouge_bag_sub against rouge_ngram on the oracle pairs. */
static void test_bags(void)
{
	rouge_vocab *v = rouge_vocab_new(1, NULL);
	rouge_work *w = rouge_work_new(NULL);
	rouge_doc c, r;
	rouge_bag bc, br, both, diff;
	int id, bad = 0;

	rouge_doc_init(&c);
	rouge_doc_init(&r);
	rouge_bag_init(&bc);
	rouge_bag_init(&br);
	rouge_bag_init(&both);
	rouge_bag_init(&diff);
	for (id = 0; id < 300; id++) {
		char name[32];
		rouge_score a, b;
		uint32_t *cat;

		snprintf(name, sizeof name, "%04d.cand", id);
		doc_from_file(v, &c, name);
		snprintf(name, sizeof name, "%04d.ref", id);
		doc_from_file(v, &r, name);
		rouge_ngram(w, 1, c.id, c.n, r.id, r.n, &a, NULL);
		rouge_bag_set(&bc, c.id, c.n, NULL);
		rouge_bag_set(&br, r.id, r.n, NULL);
		b = rouge1_bag(&bc, &br);
		if (a.p != b.p || a.r != b.r || a.f != b.f)
			bad++;
		/* (c ++ r) - c == r */
		cat = malloc((c.n + r.n + 1) * sizeof *cat);
		memcpy(cat, c.id, c.n * sizeof *cat);
		memcpy(cat + c.n, r.id, r.n * sizeof *cat);
		rouge_bag_set(&both, cat, c.n + r.n, NULL);
		rouge_bag_sub(&diff, &both, &bc, NULL);
		b = rouge1_bag(&bc, &diff);
		if (a.p != b.p || a.r != b.r || a.f != b.f || diff.total != r.n)
			bad++;
		free(cat);
	}
	T_EQ_I(bad, 0);
	rouge_bag_free(&bc);
	rouge_bag_free(&br);
	rouge_bag_free(&both);
	rouge_bag_free(&diff);
	rouge_doc_free(&c);
	rouge_doc_free(&r);
	rouge_work_free(w);
	rouge_vocab_free(v);
}

static void score_texts(const char *cand, const char *ref, int stem, rouge_score *out)
{
	rouge_vocab *v = rouge_vocab_new(stem, NULL);
	rouge_work *w = rouge_work_new(NULL);
	rouge_doc c, r;

	rouge_doc_init(&c);
	rouge_doc_init(&r);
	rouge_doc_set_text(v, &c, cand, strlen(cand), NULL);
	rouge_doc_set_text(v, &r, ref, strlen(ref), NULL);
	T_OK(rouge_score_multi(w, types, 4, &c, &r, 1, out, NULL) == 0, "score");
	rouge_doc_free(&c);
	rouge_doc_free(&r);
	rouge_work_free(w);
	rouge_vocab_free(v);
}

static void test_edges(void)
{
	rouge_score s[4];
	rouge_type t;
	char buf[16];
	int k;

	/* empty and punctuation-only summaries score 0 everywhere */
	score_texts("", "the cat sat", 0, s);
	for (k = 0; k < 4; k++)
		T_OK(s[k].p == 0 && s[k].r == 0 && s[k].f == 0, "empty candidate, type %d", k);
	score_texts("... !!! ---\n;;", "the cat sat", 0, s);
	for (k = 0; k < 4; k++)
		T_OK(s[k].p == 0 && s[k].r == 0 && s[k].f == 0, "punctuation candidate, type %d", k);
	score_texts("", "", 1, s);
	for (k = 0; k < 4; k++)
		T_OK(s[k].f == 0, "both empty, type %d", k);
	/* Lsum: reordering lines does not matter, inside a line it does */
	score_texts("a b c\nd e f", "d e f\na b c", 0, s);
	T_OK(s[3].f == 1, "Lsum line order: %.17g", s[3].f);
	T_OK(s[2].f == 0.5, "L: %.17g", s[2].f);
	/* non-ASCII: U+0130 splits, KELVIN SIGN is k, accents separate */
	score_texts("\xc4\xb0stanbul \xe2\x84\xaa" "elvin caf\xc3\xa9", "i stanbul kelvin caf", 0, s);
	T_OK(s[0].f == 1, "unicode rouge1: %.17g", s[0].f);
	/* ROUGE-3 by hand: 2 of 3 candidate trigrams, 2 of 4 reference ones */
	{
		rouge_vocab *v = rouge_vocab_new(0, NULL);
		rouge_work *w = rouge_work_new(NULL);
		uint32_t *a = NULL, *b = NULL;
		size_t na = 0, nb = 0, ca = 0, cb = 0;
		rouge_score r3;

		rouge_tokenize(v, "x a b c d", 9, &a, &na, &ca, NULL);
		rouge_tokenize(v, "a b c d e y", 11, &b, &nb, &cb, NULL);
		rouge_ngram(w, 3, a, na, b, nb, &r3, NULL);
		T_OK(r3.p == 2.0 / 3 && r3.r == 2.0 / 4, "rouge3 %.17g %.17g", r3.p, r3.r);
		free(a);
		free(b);
		rouge_work_free(w);
		rouge_vocab_free(v);
	}
	T_OK(rouge_type_parse("rouge9", &t) == 0 && t.n == 9, "rouge9");
	T_OK(rouge_type_parse("rouge0", &t) < 0, "rouge0 refused");
	T_OK(rouge_type_parse("rougeLSum", &t) < 0, "spelling is exact");
	T_OK(rouge_type_parse("rougeLsum", &t) == 0 && strcmp(rouge_type_name(t, buf), "rougeLsum") == 0, "name");
}

int main(void)
{
	T_RUN(test_tokenizer_goldens);
	T_RUN(test_scores_oracle);
	T_RUN(test_bags);
	T_RUN(test_edges);
	return t_done();
}
