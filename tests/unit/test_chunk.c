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
}

int main(void)
{
	T_RUN(test_plans);
	T_RUN(test_join);
	return t_done();
}
