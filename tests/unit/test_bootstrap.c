/* test_bootstrap: MT19937 outputs, and every row of the oracle's
 * bootstrap.tsv from the per-pair scores in scores.tsv. */
#include "t.h"

#include <stdint.h>

#include "text/bootstrap.h"

static void test_mt(void)
{
	static const uint32_t want[3][6] = {
		{ 0, 2357136044u, 2546248239u, 3071714933u, 3626093760u, 2588848963u },
		{ 123, 2991312382u, 3062119789u, 1228959102u, 1840268610u, 974319580u },
		{ 7, 327741615u, 976413892u, 3349725721u, 1369975286u, 1882953283u },
	};
	bootstrap_rng r;
	int s, k;
	uint64_t v;

	for (s = 0; s < 3; s++) {
		bootstrap_seed(&r, want[s][0]);
		for (k = 1; k < 6; k++) {
			uint32_t v = bootstrap_next32(&r);
			T_OK(v == want[s][k], "seed %u output %d: %u", want[s][0], k, v);
		}
	}
	/* n == 1 draws nothing */
	bootstrap_seed(&r, 0);
	v = bootstrap_randint(&r, 1);
	T_EQ_I(v, 0);
	T_OK(bootstrap_next32(&r) == 2357136044u, "randint(1) drew");
	/* 2357136044 & 7 = 4 <= 4 */
	bootstrap_seed(&r, 0);
	v = bootstrap_randint(&r, 5);
	T_EQ_I(v, 4);
}

static void test_percentile(void)
{
	double s[5] = { 1, 2, 3, 4, 10 };

	T_OK(bootstrap_percentile(s, 5, 0.5) == 3, "median");
	T_OK(bootstrap_percentile(s, 5, 0.9) == 10 - 6 * (1 - (4 * 0.9 - 3)), "0.9");
	T_OK(bootstrap_percentile(s, 5, 1) == 10, "max");
	T_OK(bootstrap_percentile(s, 5, 0) == 1, "min");
	T_OK(bootstrap_percentile(s, 1, 0.3) == 1, "one value");
}

#define MAXID 330
static double scores[2][MAXID][4][3];   /* [stem][id][type][P R F] */

static const char *const tnames[4] = { "rouge1", "rouge2", "rougeL", "rougeLsum" };

static int type_index(const char *s)
{
	int t;

	for (t = 0; t < 4; t++)
		if (strcmp(s, tnames[t]) == 0)
			return t;
	return -1;
}

static int load_scores(void)
{
	size_t len;
	char *buf = t_slurp(t_data("rouge/scores.tsv"), &len), *p, *e;
	int n = 0;

	T_OK(buf != NULL, "read scores.tsv");
	if (!buf)
		return -1;
	e = buf + len;
	p = memchr(buf, '\n', len) + 1;
	while (p < e) {
		int id, stem, t;
		char type[16];
		double v[3];
		char *nl = memchr(p, '\n', (size_t)(e - p));

		if (nl)
			*nl = 0;
		if (sscanf(p, "%d\t%d\t%15s\t%lf\t%lf\t%lf", &id, &stem, type, &v[0], &v[1], &v[2]) == 6 &&
		    id >= 0 && id < MAXID && (stem == 0 || stem == 1) && (t = type_index(type)) >= 0) {
			memcpy(scores[stem][id][t], v, sizeof v);
			n++;
		}
		p = nl ? nl + 1 : e;
	}
	free(buf);
	T_EQ_I(n, 2640);
	return 0;
}

static void test_oracle(void)
{
	size_t len;
	char *buf, *p, *e;
	int rows = 0, bad = 0, cur_n = -1, cur_seed = -1, cur_stem = -1;
	double agg[4][3][3];                  /* [type][low mid high][P R F] */
	double *x = malloc(MAXID * 3 * sizeof *x);
	bootstrap_rng r;

	if (load_scores() < 0)
		return;
	buf = t_slurp(t_data("rouge/bootstrap.tsv"), &len);
	T_OK(buf != NULL, "read bootstrap.tsv");
	if (!buf)
		return;
	e = buf + len;
	p = memchr(buf, '\n', len) + 1;
	while (p < e) {
		int n, seed, stem, t, c, i;
		char type[16], stat[4];
		double want[3];
		char *nl = memchr(p, '\n', (size_t)(e - p));

		if (nl)
			*nl = 0;
		if (sscanf(p, "%d\t%d\t%d\t%15s\t%3s\t%lf\t%lf\t%lf", &n, &seed, &stem, type, stat,
		           &want[0], &want[1], &want[2]) != 8 || n < 1 || n > 300 ||
		    (t = type_index(type)) < 0 || !strchr("PRF", stat[0])) {
			T_OK(0, "bad row: %s", p);
			p = nl ? nl + 1 : e;
			continue;
		}
		if (n != cur_n || seed != cur_seed || stem != cur_stem) {
			bootstrap_seed(&r, (uint32_t)seed);
			for (c = 0; c < 4; c++) {
				for (i = 0; i < n; i++)
					memcpy(x + 3 * i, scores[stem][i][c], 3 * sizeof *x);
				T_OK(bootstrap_aggregate(&r, x, (size_t)n, 3, 1000, 0.95, &agg[c][0][0], NULL) == 0,
				     "aggregate");
			}
			cur_n = n, cur_seed = seed, cur_stem = stem;
		}
		c = stat[0] == 'P' ? 0 : stat[0] == 'R' ? 1 : 2;
		rows++;
		for (i = 0; i < 3; i++)
			if (agg[t][i][c] != want[i]) {
				if (bad++ < 10)
					T_OK(0, "n=%d seed=%d stem=%d %s %s [%d]: got %.17g want %.17g",
					     n, seed, stem, type, stat, i, agg[t][i][c], want[i]);
			}
		p = nl ? nl + 1 : e;
	}
	T_EQ_I(rows, 5 * 2 * 2 * 4 * 3);
	T_EQ_I(bad, 0);
	free(buf);
	free(x);
}

static void test_refusals(void)
{
	bootstrap_rng r;
	double x[3] = { 1, 2, 3 }, out[9];

	bootstrap_seed(&r, 0);
	T_OK(bootstrap_aggregate(&r, x, 0, 3, 10, 0.95, out, NULL) < 0, "no rows");
	T_OK(bootstrap_aggregate(&r, x, 1, 3, 10, 0, out, NULL) < 0, "ci 0");
	T_OK(bootstrap_aggregate(&r, x, 1, 3, 10, 1.5, out, NULL) < 0, "ci 1.5");
	T_OK(bootstrap_aggregate(&r, x, 1, 3, 10, 1, out, NULL) == 0 && out[0] == 1 && out[8] == 3, "ci 1");
}

int main(void)
{
	T_RUN(test_mt);
	T_RUN(test_percentile);
	T_RUN(test_oracle);
	T_RUN(test_refusals);
	return t_done();
}
