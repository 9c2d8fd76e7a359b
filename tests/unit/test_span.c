/* span: the BART-LS span corruption against the authors' outputs
 * (tests/data/span, from the oracle: LongDenoisingDataset run unchanged),
 * and base/nprand against numpy (tests/gen/nprand_ref.py). */
#include "t.h"

#include "base/nprand.h"
#include "text/span.h"

/* numpy 1.24.2: RandomState(seed): six raw outputs, key[1] and key[623] after seeding */
static const struct { uint32_t seed, u[6], k1, k623; } np_out[] = {
	{0u, {2357136044u, 2546248239u, 3071714933u, 3626093760u, 2588848963u, 3684848379u}, 1u, 1796872496u},
	{5489u, {3499211612u, 581869302u, 3890346734u, 3586334585u, 545404204u, 4161255391u}, 1301868182u, 79981964u},
	{133504u, {2552184070u, 1208505696u, 3985944428u, 1844053584u, 957442252u, 485066525u}, 1516453761u, 3279263823u},
	{4294967295u, {419326371u, 479346978u, 3918654476u, 2416749639u, 3388880820u, 2260532800u}, 1340201581u, 3413567280u},
};

static void test_mt19937(void)
{
	for (size_t c = 0; c < sizeof np_out / sizeof *np_out; c++) {
		nprand g;
		nprand_seed(&g, np_out[c].seed);
		T_EQ_I(g.mt[1], np_out[c].k1);
		T_EQ_I(g.mt[623], np_out[c].k623);
		for (int i = 0; i < 6; i++)
			T_EQ_I(nprand_u32(&g), np_out[c].u[i]);
	}
}

static void test_shuffle(void)
{
	static const struct { uint32_t seed; int n; int first[12]; long long sum; } sh[] = {
		{1, 10, {2, 9, 6, 4, 0, 3, 1, 7, 8, 5}, 212},
		{67392, 37, {10, 2, 12, 29, 22, 6, 16, 35, 34, 31, 5, 0}, 11760},
		{4294967295u, 1000, {94, 405, 819, 632, 217, 169, 449, 275, 165, 828, 959, 475}, 249935792},
	};
	int32_t a[1000];

	for (size_t c = 0; c < sizeof sh / sizeof *sh; c++) {
		nprand g;
		long long sum = 0;
		int first = 1;
		for (int i = 0; i < sh[c].n; i++)
			a[i] = i;
		nprand_seed(&g, sh[c].seed);
		nprand_shuffle(&g, a, (size_t)sh[c].n, sizeof *a);
		for (int i = 0; i < sh[c].n; i++)
			sum += (long long)i * a[i];
		for (int i = 0; i < 12 && i < sh[c].n; i++)
			first &= a[i] == sh[c].first[i];
		T_OK(first, "seed %u: the shuffle of arange(%d) starts as numpy's", sh[c].seed, sh[c].n);
		T_EQ_I(sum, sh[c].sum);
	}
}

static void test_py_hash(void)
{
	/* CPython 3.11: hash((1, 2)), hash(()), hash((-1,)), hash((2**61 - 1, -5)) */
	int64_t v12[] = {1, 2}, vm1[] = {-1}, vbig[] = {(1ll << 61) - 1, -5}, m2[] = {-2};

	T_EQ_I(nprand_py_hash(v12, 2), -3550055125485641917ll);
	T_EQ_I(nprand_py_hash(NULL, 0), 5740354900026072187ll);
	T_EQ_I(nprand_py_hash(vm1, 1), nprand_py_hash(m2, 1));   /* hash(-1) == hash(-2) */
	T_EQ_I(nprand_py_hash(vbig, 2), 4650188042650796216ll);
}

static int32_t *read_i32(const char *rel, int64_t *n)
{
	size_t len;
	int32_t *p = t_slurp(t_data(rel), &len);

	*n = p ? (int64_t)(len / 4) : -1;
	return p;
}

static int same_i32(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, (size_t)na * 4) == 0);
}

#define MAXCOL 32

static int split_tabs(char *line, char **col)
{
	int n = 0;

	for (char *p = line; n < MAXCOL; ) {
		col[n++] = p;
		if (!(p = strchr(p, '\t')))
			break;
		*p++ = 0;
	}
	return n;
}

static int col_of(char **hdr, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(hdr[i], name))
			return i;
	T_OK(0, "cases.tsv has a column %s", name);
	return 0;
}

/* Every case of cases.tsv: the hash and numpy seed, the counts, and the
 * mask, source and target bit for bit. */
static void test_oracle_cases(void)
{
	size_t len;
	char *tsv = t_slurp(t_data("span/cases.tsv"), &len), *line, *save = NULL;
	char *hdr[MAXCOL], *col[MAXCOL];
	int nh, ncase = 0, nbad = 0;
	int64_t tot_noise = 0, tot_len = 0, tot_spans = 0, or_noise = 0, or_spans = 0;
	span_out out = {0};

	T_OK(tsv != NULL, "tests/data/span/cases.tsv");
	if (!tsv)
		return;
	tsv = realloc(tsv, len + 1);
	tsv[len] = 0;
	line = strtok_r(tsv, "\n", &save);
	nh = split_tabs(line, hdr);
	int c_case = col_of(hdr, nh, "case"), c_dens = col_of(hdr, nh, "noise_density"),
	    c_seed = col_of(hdr, nh, "seed"), c_ep = col_of(hdr, nh, "epoch"),
	    c_idx = col_of(hdr, nh, "index"), c_hash = col_of(hdr, nh, "py_hash"),
	    c_np = col_of(hdr, nh, "np_seed"), c_len = col_of(hdr, nh, "length"),
	    c_span = col_of(hdr, nh, "span_len_used"), c_nn = col_of(hdr, nh, "num_noise_tokens"),
	    c_ns = col_of(hdr, nh, "num_noise_spans"), c_ss = col_of(hdr, nh, "sentinel_start"),
	    c_sl = col_of(hdr, nh, "src_len"), c_tl = col_of(hdr, nh, "tgt_len"),
	    c_tr = col_of(hdr, nh, "truncated_target"), c_first = col_of(hdr, nh, "first_noise_spans"),
	    c_vocab = col_of(hdr, nh, "vocab_size"), c_ms = col_of(hdr, nh, "mean_noise_span_length");
	while ((line = strtok_r(NULL, "\n", &save))) {
		char path[256], first[256] = "";
		int64_t v[3], nd, nm, nsrc, ntgt;
		int32_t *doc, *mask, *src, *tgt;
		int ok = 1;
		span_opts o = {0};

		if (split_tabs(line, col) != nh) {
			T_OK(0, "a row of cases.tsv has %d columns", nh);
			continue;
		}
		ncase++;
		t_current = col[c_case];
		v[0] = atoll(col[c_seed]);
		v[1] = atoll(col[c_ep]);
		v[2] = atoll(col[c_idx]);
		T_EQ_I(nprand_py_hash(v, 3), atoll(col[c_hash]));
		T_EQ_I(nprand_fairseq_seed(v, 3), atoll(col[c_np]));
		/* the authors' task: <mask> at the dictionary's end, then the sentinels */
		T_EQ_I(atoll(col[c_vocab]) - atoll(col[c_ss]),
		       span_num_sentinels(16384, atof(col[c_dens]), atof(col[c_ms])));

		snprintf(path, sizeof path, "span/docs/doc%lld.i32", (long long)v[2]);
		doc = read_i32(path, &nd);
		snprintf(path, sizeof path, "span/cases/%s/mask.i32", col[c_case]);
		mask = read_i32(path, &nm);
		snprintf(path, sizeof path, "span/cases/%s/source.i32", col[c_case]);
		src = read_i32(path, &nsrc);
		snprintf(path, sizeof path, "span/cases/%s/target.i32", col[c_case]);
		tgt = read_i32(path, &ntgt);
		T_OK(doc && mask && src && tgt, "the case's files");
		if (!doc || !mask || !src || !tgt)
			goto next;
		T_EQ_I(nd - 2, atoll(col[c_len]));
		o.density = atof(col[c_dens]);
		o.mean_span = atof(col[c_span]);    /* dynamic: the length the authors drew */
		o.sentinel = (int32_t)atoll(col[c_ss]);
		o.step = 1;
		o.truncate_target = 1022;           /* every configuration truncates */
		T_EQ_I(span_corrupt(&o, doc, nd, 1, 1, nprand_fairseq_seed(v, 3), &out, NULL), 0);
		T_EQ_I(out.len, nm);
		for (int64_t i = 0; i < nm && i < out.len; i++)
			ok &= out.mask[i] == mask[i];
		T_OK(ok && out.len == nm, "the mask, bit for bit");
		T_OK(same_i32(out.src, out.nsrc, src, nsrc), "the source, bit for bit (%lld ids, "
		     "oracle %lld)", (long long)out.nsrc, (long long)nsrc);
		T_OK(same_i32(out.tgt, out.ntgt, tgt, ntgt), "the target, bit for bit (%lld ids, "
		     "oracle %lld)", (long long)out.ntgt, (long long)ntgt);
		nbad += !ok || !same_i32(out.src, out.nsrc, src, nsrc) ||
		        !same_i32(out.tgt, out.ntgt, tgt, ntgt);
		T_EQ_I(out.nnoise, atoll(col[c_nn]));
		T_EQ_I(out.nspans, atoll(col[c_ns]));
		T_EQ_I(out.nsrc, atoll(col[c_sl]));
		T_EQ_I(out.ntgt, atoll(col[c_tl]));
		T_EQ_I(out.truncated, atoll(col[c_tr]));
		/* the first four spans as start+length, and the sentinels of the
		 * target: 1001, 1002, ... in order, each once */
		{
			int64_t i = 0, k = 0, nsent = 0, next = o.sentinel;
			size_t fl = 0;
			while (i < out.len) {
				int64_t j = i;
				if (!out.mask[i]) {
					i++;
					continue;
				}
				while (j < out.len && out.mask[j])
					j++;
				if (k++ < 4)
					fl += (size_t)snprintf(first + fl, sizeof first - fl, "%s%lld+%lld",
					                       fl ? ";" : "", (long long)i, (long long)(j - i));
				i = j;
			}
			T_EQ_S(first, col[c_first]);
			for (int64_t t = 1; t + 1 < out.ntgt; t++)
				if (out.tgt[t] > 1000) {
					ok &= out.tgt[t] == next++;
					nsent++;
				}
			T_OK(ok, "target sentinels count up from %d", o.sentinel);
			if (!out.truncated)
				T_EQ_I(nsent, out.nspans);
		}
		tot_noise += out.nnoise;
		tot_spans += out.nspans;
		tot_len += out.len;
		or_noise += atoll(col[c_nn]);
		or_spans += atoll(col[c_ns]);
next:
		free(doc);
		free(mask);
		free(src);
		free(tgt);
	}
	t_current = "test_oracle_cases";
	T_EQ_I(ncase, 60);
	T_EQ_I(nbad, 0);
	T_EQ_I(tot_noise, or_noise);
	T_EQ_I(tot_spans, or_spans);
	printf("# %d cases, %d differ; achieved density %.6f, mean span %.4f (oracle %lld noise "
	       "tokens in %lld spans)\n", ncase, nbad, (double)tot_noise / (double)tot_len,
	       (double)tot_noise / (double)tot_spans, (long long)or_noise, (long long)or_spans);
	span_out_free(&out);
	free(tsv);
}

/* What the oracle does not cover: T5's sentinels and ends, the refusals,
 * and the dynamic span lengths. */
static void test_conventions(void)
{
	int32_t doc[40], ref_body[38];
	span_out a = {0}, b = {0};
	span_opts o = {.density = 0.15, .mean_span = 3, .sentinel = 1001, .step = 1};
	lc_err err;
	double set[] = {4, 8, 12};
	int in_set = 1, differ = 0;

	for (int i = 0; i < 40; i++)
		doc[i] = i == 0 ? 0 : i == 39 ? 2 : 100 + i;
	memcpy(ref_body, doc + 1, sizeof ref_body);
	/* <s> body </s> with the authors' sentinels, then body </s> with T5's:
	 * the same mask (it depends on the body's length alone), other ids */
	T_EQ_I(span_corrupt(&o, doc, 40, 1, 1, 1234, &a, &err), 0);
	o.sentinel = 32099;
	o.step = -1;
	T_EQ_I(span_corrupt(&o, doc + 1, 39, 0, 1, 1234, &b, &err), 0);
	T_OK(a.len == 38 && b.len == 38 && !memcmp(a.mask, b.mask, 38), "the same mask");
	T_EQ_I(a.nsrc, b.nsrc + 1);
	T_EQ_I(b.src[b.nsrc - 1], 2);
	T_EQ_I(b.tgt[0], 32099);
	T_EQ_I(b.tgt[b.ntgt - 1], 2);
	for (int64_t i = 0, k = 0; i < b.ntgt - 1; i++)
		if (b.tgt[i] >= 32000)
			T_EQ_I(b.tgt[i], 32099 - k++);
	/* source and target hold the body exactly once, in order */
	{
		int32_t got[38];
		int64_t n = 0, si = 0, ti = 0;
		while (si < b.nsrc - 1) {
			if (b.src[si] >= 32000) {
				si++;
				ti++;          /* the sentinel in the target */
				while (ti < b.ntgt - 1 && b.tgt[ti] < 32000 && n < 38)
					got[n++] = b.tgt[ti++];
			} else if (n < 38) {
				got[n++] = b.src[si++];
			} else {
				break;
			}
		}
		T_OK(n == 38 && !memcmp(got, ref_body, sizeof got), "source + target = the body");
	}
	/* the target cut between its ends */
	o.truncate_target = 3;
	T_EQ_I(span_corrupt(&o, doc + 1, 39, 0, 1, 1234, &b, &err), 0);
	T_EQ_I(b.ntgt, 4);
	T_EQ_I(b.truncated, 1);
	T_EQ_I(b.tgt[3], 2);
	o.truncate_target = 0;
	/* refusals: too short (skippable), more spans than sentinels (an error) */
	T_EQ_I(span_corrupt(&o, doc, 3, 1, 1, 1, &b, &err), SPAN_SHORT);
	T_EQ_I(span_corrupt(&o, doc, 1, 1, 1, 1, &b, &err), SPAN_SHORT);
	o.density = 0.55;
	o.mean_span = 1;
	T_EQ_I(span_corrupt(&o, doc, 22, 1, 1, 1, &b, &err), SPAN_SHORT);
	T_OK(strstr(err.msg, "11 noise tokens in 11 spans leave 9") != NULL, "%s", err.msg);
	o.density = 0.5;
	o.max_spans = 5;
	T_EQ_I(span_corrupt(&o, doc, 40, 1, 1, 1, &b, &err), -1);
	o.max_spans = 0;
	o.sentinel = 3;
	T_EQ_I(span_corrupt(&o, doc, 40, 1, 1, 1, &b, &err), -1);   /* ids below 0 */
	/* the counts of the authors' formula, half to even */
	{
		int64_t nn, ns;
		span_counts(10, 0.15, 3, &nn, &ns);     /* round(1.5) = 2 */
		T_OK(nn == 2 && ns == 1, "L 10: %lld noise in %lld spans", (long long)nn, (long long)ns);
		span_counts(50, 0.05, 1, &nn, &ns);     /* round(2.5) = 2 */
		T_OK(nn == 2 && ns == 2, "L 50: %lld noise in %lld spans", (long long)nn, (long long)ns);
		span_counts(1000, 0.0625, 8, &nn, &ns); /* 62, round(7.75) = 8 */
		T_OK(nn == 62 && ns == 8, "L 1000: %lld noise in %lld spans", (long long)nn, (long long)ns);
	}
	for (uint64_t i = 0; i < 100; i++) {
		double l = span_pick(set, 3, 3, i);
		in_set &= l == 4 || l == 8 || l == 12;
		differ |= l != span_pick(set, 3, 3, 0);
		in_set &= l == span_pick(set, 3, 3, i);
	}
	T_OK(in_set, "span_pick: from the set, the same for a seed and index");
	T_OK(differ, "span_pick: not one length for all");
	span_out_free(&a);
	span_out_free(&b);
}

int main(void)
{
	T_RUN(test_mt19937);
	T_RUN(test_shuffle);
	T_RUN(test_py_hash);
	T_RUN(test_oracle_cases);
	T_RUN(test_conventions);
	return t_done();
}
