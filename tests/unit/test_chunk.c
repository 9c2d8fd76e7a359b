/* chunk: plans, pieces and the joiner's refusals. */
#include "t.h"

#include "text/chunk.h"

static void test_plans(void)
{
	chunk_plan pl = {0};
	lc_err err;
	uint64_t starts[] = {0, 10, 25, 40}, cuts[] = {0, 5, 5, 12, 30};

	T_EQ_I(chunk_plan_windows(&pl, 25, 10, 3, &err), 0);
	T_EQ_I(pl.n, 4);
	T_EQ_I(pl.p[3].offset, 21);
	T_EQ_I(pl.p[3].length, 4);
	T_EQ_I(chunk_plan_windows(&pl, 10, 10, 0, &err), 0);
	T_EQ_I(pl.n, 1);
	T_EQ_I(chunk_plan_windows(&pl, 5, 3, 3, &err), -1);
	T_EQ_I(chunk_plan_units(&pl, 50, starts, 4, 2, 1, &err), 0);
	T_EQ_I(pl.n, 3);
	T_OK(pl.p[0].offset == 0 && pl.p[0].length == 25, "piece 1 [0, 25)");
	T_OK(pl.p[1].offset == 10 && pl.p[1].length == 30, "piece 2 [10, 40)");
	T_OK(pl.p[2].offset == 25 && pl.p[2].length == 25, "piece 3 [25, 50)");
	T_EQ_I(chunk_plan_cuts(&pl, 30, cuts, 5, &err), 0);
	T_EQ_I(pl.n, 3);
	T_OK(pl.p[0].length == 5 && pl.p[1].offset == 5 && pl.p[1].length == 7 &&
	     pl.p[2].offset == 12 && pl.p[2].length == 18, "cuts at 5 and 12; 0, 30 and the repeat ignored");
	chunk_plan_free(&pl);
}

/* Pieces of a 20-token parent in windows of 8 every 6: [0,8) [6,14) [12,20). */
static int make_pieces(lc_doc *p, size_t *n)
{
	lc_doc d;
	lc_err err;
	chunk_plan pl = {0};
	uint64_t len = 20;
	lc_tensor *t;

	doc_init(&d, "parent", &err);
	meta_set(&d.meta, "source", "x", &err);
	t = doc_add_tensor(&d, "tokens", LC_I32, 1, &len, &err);
	for (int i = 0; i < 20; i++)
		((int32_t *)t->data)[i] = 100 + i;
	chunk_plan_windows(&pl, 20, 8, 2, &err);
	for (size_t k = 0; k < pl.n; k++)
		chunk_make_piece(&p[k], &d, "tokens", &pl, k, &err);
	*n = pl.n;
	chunk_plan_free(&pl);
	doc_free(&d);
	return 0;
}

static int join(lc_doc *p, const size_t *order, size_t n, lc_doc *out, lc_err *err)
{
	chunk_joiner j;
	int rc = 0, got = 0;

	chunk_joiner_init(&j);
	for (size_t i = 0; i < n && rc >= 0; i++)
		if ((rc = chunk_join_add(&j, &p[order[i]], out, err)) > 0)
			got++;
	if (rc >= 0)
		rc = chunk_join_finish(&j, err);
	chunk_joiner_free(&j);
	return rc < 0 ? -1 : got;
}

static void test_join(void)
{
	lc_doc p[8], out;
	size_t n, all[] = {0, 1, 2}, missing[] = {0, 2}, swapped[] = {1, 0, 2}, cut[] = {0, 1};
	lc_err err;

	make_pieces(p, &n);
	T_EQ_I(n, 3);
	T_EQ_I(join(p, all, 3, &out, &err), 1);
	T_EQ_S(out.name, "parent");
	T_EQ_S(meta_get(&out.meta, "source"), "x");
	T_OK(meta_get(&out.meta, "piece") == NULL, "chunk metadata removed");
	T_EQ_I(doc_find(&out, "tokens")->dims[0], 20);
	int ok = 1;
	for (int i = 0; i < 20; i++)
		ok &= ((int32_t *)doc_find(&out, "tokens")->data)[i] == 100 + i;
	T_OK(ok, "tokens rebuilt exactly");
	doc_free(&out);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);

	make_pieces(p, &n);
	T_EQ_I(join(p, missing, 2, &out, &err), -1);
	T_OK(strstr(err.msg, "not piece 2") != NULL, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	make_pieces(p, &n);
	T_EQ_I(join(p, swapped, 3, &out, &err), -1);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	make_pieces(p, &n);
	T_EQ_I(join(p, cut, 2, &out, &err), -1);
	T_OK(strstr(err.msg, "ends after piece 2 of 3") != NULL, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* windows of 8 overlapping by 2: piece 1's first token is also piece
	 * 0's seventh; changed, the pieces are not one document's */
	make_pieces(p, &n);
	((int32_t *)doc_find(&p[1], "tokens")->data)[0] = 7;
	T_EQ_I(join(p, all, 3, &out, &err), -1);
	T_OK(strstr(err.msg, "differs from the pieces before it where they overlap (positions 6 "
	            "to 7)") != NULL, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* a negative count is no count (strtoull would read 2^64 - 5) */
	make_pieces(p, &n);
	meta_set(&p[1].meta, "offset", "-5", &err);
	T_EQ_I(join(p, all, 3, &out, &err), -1);
	T_OK(strstr(err.msg, "bad \"offset\" metadata '-5' (a decimal count)") != NULL, "%s",
	     err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* Transformed pieces: concatenated in order. */
	make_pieces(p, &n);
	for (size_t i = 0; i < n; i++)
		doc_find(&p[i], "tokens")->dims[0] = 1;
	T_EQ_I(join(p, all, 3, &out, &err), 1);
	T_EQ_I(doc_find(&out, "tokens")->dims[0], 3);
	T_EQ_S(meta_get(&out.meta, "joined"), "concatenated");
	doc_free(&out);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* Summaries as lc-decode writes them: "tokens" and "text", both joined. */
	make_pieces(p, &n);
	for (size_t i = 0; i < n; i++) {
		uint64_t two = 2;
		lc_tensor *x = doc_add_tensor(&p[i], "text", LC_U8, 1, &two, &err);
		memcpy(x->data, i == 0 ? "ab" : i == 1 ? "cd" : "ef", 2);
		doc_find(&p[i], "tokens")->dims[0] = 1;
	}
	T_EQ_I(join(p, all, 3, &out, &err), 1);
	T_EQ_I(doc_find(&out, "tokens")->dims[0], 3);
	T_OK(doc_find(&out, "text") && doc_find(&out, "text")->dims[0] == 8 &&
	     !memcmp(doc_find(&out, "text")->data, "ab\ncd\nef", 8), "the summaries' text, one per line");
	doc_free(&out);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* pieces that are not: "pieces" 0, ids not i32, two "tokens" */
	make_pieces(p, &n);
	meta_set(&p[0].meta, "pieces", "0", &err);
	T_EQ_I(join(p, all, 3, &out, &err), -1);
	T_OK(strstr(err.msg, "piece 1 of 0 is not one") != NULL, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	make_pieces(p, &n);
	doc_find(&p[0], "tokens")->dtype = LC_F32;
	T_EQ_I(join(p, all, 3, &out, &err), -1);
	T_OK(strstr(err.msg, "has no \"tokens\" (i32) or \"text\" (u8) record of rank 1, once") != NULL,
	     "f32 tokens: %s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	make_pieces(p, &n);
	{
		uint64_t one = 1;
		doc_add_tensor(&p[0], "tokens", LC_I32, 1, &one, &err);
	}
	T_EQ_I(join(p, all, 3, &out, &err), -1);
	T_OK(strstr(err.msg, "record of rank 1, once") != NULL, "two tokens: %s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* a "total" of 60 GB that the pieces do not cover: refused before the
	 * parent is allocated (it was allocated first: an abort under ASan) */
	make_pieces(p, &n);
	for (size_t i = 0; i < n; i++)
		meta_set(&p[i].meta, "total", "64424509440", &err);
	T_EQ_I(join(p, all, 3, &out, &err), -1);
	T_OK(strstr(err.msg, "end at 20 of 64424509440") != NULL, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		doc_free(&p[i]);
	/* summaries with "tokens" and a "text" that is not u8, or twice: both
	 * are joined, so both are checked */
	for (int k = 0; k < 2; k++) {
		make_pieces(p, &n);
		for (size_t i = 0; i < n; i++) {
			uint64_t two = 2;
			doc_add_tensor(&p[i], "text", k ? LC_U8 : LC_F32, 1, &two, &err);
			if (k)
				doc_add_tensor(&p[i], "text", LC_U8, 1, &two, &err);
			doc_find(&p[i], "tokens")->dims[0] = 1;
		}
		T_EQ_I(join(p, all, 3, &out, &err), -1);
		T_OK(strstr(err.msg, "record of rank 1, once") != NULL, "%s: %s",
		     k ? "two texts" : "an f32 text", err.msg);
		for (size_t i = 0; i < n; i++)
			doc_free(&p[i]);
	}
}

/* Windows that keep the parent's first head and last tail tokens (BART's
 * <s> ... </s>): every piece is head + window + tail, at most size long,
 * the windows cover the inside in order, and --join rebuilds the parent. */
static void test_ends(void)
{
	lc_err err;
	int bad = 0, cases = 0;

	for (uint64_t total = 0; total <= 30; total++)
		for (uint64_t head = 0; head <= 1; head++)
			for (uint64_t tail = 0; tail <= 2; tail++)
				for (uint64_t size = head + tail + 1; size <= 12; size++)
					for (uint64_t ov = 0; ov < size - head - tail; ov++) {
		chunk_plan pl = {0};
		lc_doc d, p[64], out;
		uint64_t n = total, covered = head;
		lc_tensor *t;
		int rc;

		doc_init(&d, "parent", &err);
		t = doc_add_tensor(&d, "tokens", LC_I32, 1, &n, &err);
		for (uint64_t i = 0; i < total; i++)
			((int32_t *)t->data)[i] = (int32_t)(1000 + i);
		rc = chunk_plan_windows_ends(&pl, total, size, ov, head, tail, &err);
		cases++;
		if (total < head + tail) {
			bad += rc != -1 || !strstr(err.msg, "fewer than");
			doc_free(&d);
			continue;
		}
		bad += rc != 0 || pl.n > 64;
		for (size_t k = 0; !rc && k < pl.n; k++) {
			const int32_t *x;
			uint64_t len;
			chunk_make_piece(&p[k], &d, "tokens", &pl, k, &err);
			x = doc_find(&p[k], "tokens")->data;
			len = doc_find(&p[k], "tokens")->dims[0];
			bad += len > size || len != head + pl.p[k].length + tail;
			for (uint64_t i = 0; i < head; i++)
				bad += x[i] != (int32_t)(1000 + i);
			for (uint64_t i = 0; i < pl.p[k].length; i++)
				bad += x[head + i] != (int32_t)(1000 + pl.p[k].offset + i);
			for (uint64_t i = 0; i < tail; i++)
				bad += x[len - tail + i] != (int32_t)(1000 + total - tail + i);
			bad += pl.p[k].offset > covered;
			if (pl.p[k].offset + pl.p[k].length > covered)
				covered = pl.p[k].offset + pl.p[k].length;
		}
		bad += covered != total - tail;
		if (!rc) {
			size_t order[64];
			for (size_t k = 0; k < pl.n; k++)
				order[k] = k;
			if (join(p, order, pl.n, &out, &err) != 1) {
				bad++;
			} else {
				const lc_tensor *o = doc_find(&out, "tokens");
				bad += o->dims[0] != total;
				for (uint64_t i = 0; i < total && o->dims[0] == total; i++)
					bad += ((const int32_t *)o->data)[i] != (int32_t)(1000 + i);
				doc_free(&out);
			}
			for (size_t k = 0; k < pl.n; k++)
				doc_free(&p[k]);
		}
		chunk_plan_free(&pl);
		doc_free(&d);
	}
	T_OK(bad == 0, "%d cases: pieces hold the ends around their window, cover the inside, "
	     "and join back exactly (%d wrong)", cases, bad);
	{
		chunk_plan pl = {0};
		T_EQ_I(chunk_plan_windows_ends(&pl, 10, 2, 0, 1, 1, &err), -1);
		T_OK(strstr(err.msg, "no room") != NULL, "%s", err.msg);
		T_EQ_I(chunk_plan_windows_ends(&pl, 10, 5, 3, 1, 1, &err), -1);
		chunk_plan_free(&pl);
	}
}

/* Patterns: one that matches the empty string is refused (line anchors
 * aside); a match that fails says why in PCRE2's words. */
static void test_pattern(void)
{
	static const char *refused[] = { "", "x*", "a?", "\\s*", "(?:)" };
	chunk_pattern *p;
	chunk_plan pl = {0};
	lc_err err;
	char text[64];

	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		p = chunk_pattern_new(refused[i], &err);
		T_OK(!p && strstr(err.msg, "matches the empty string"), "'%s': %s", refused[i],
		     p ? "accepted" : err.msg);
		chunk_pattern_free(p);
	}
	p = chunk_pattern_new("^", &err);
	if (T_OK(p != NULL, "'^': %s", err.msg)) {
		T_EQ_I(chunk_plan_pattern(&pl, p, "a\nb\nc\n", 6, &err), 0);
		T_EQ_I(pl.n, 3);
	}
	chunk_pattern_free(p);
	p = chunk_pattern_new("(", &err);
	T_OK(!p && strstr(err.msg, "at offset 1"), "%s", p ? "accepted" : err.msg);
	memset(text, 'a', sizeof text);
	text[sizeof text - 1] = '!';
	p = chunk_pattern_new("^(a|a)+$", &err);
	if (T_OK(p != NULL, "%s", err.msg)) {
		T_EQ_I(chunk_plan_pattern(&pl, p, text, sizeof text, &err), -1);
		T_OK(strstr(err.msg, "match limit exceeded") != NULL, "%s", err.msg);
	}
	chunk_pattern_free(p);
	chunk_plan_free(&pl);
}

int main(void)
{
	T_RUN(test_plans);
	T_RUN(test_join);
	T_RUN(test_ends);
	T_RUN(test_pattern);
	return t_done();
}
