#include "text/gsg.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/rouge.h"

struct gsg {
	gsg_opts o;
	sentence_splitter *split;
	sentence_span *sp;           /* [n] sentences */
	size_t n, spcap;
	uint32_t *ids;               /* tokens of all sentences, [nids] */
	size_t nids, idcap;
	size_t *tb;                  /* [n + 1]: sentence i's tokens are ids[tb[i] .. tb[i+1]) */
	uint32_t *dw, *dc;           /* distinct words of each sentence and their counts */
	size_t *db;                  /* [n + 1]: sentence i's distinct words are dw[db[i] .. db[i+1]) */
	uint32_t *D, *S;             /* [V] counts in the document and in the selection */
	unsigned char *sel;          /* [n] */
	double *score;               /* [n] */
	size_t *order;               /* [n] scratch */
};

gsg *gsg_new(const gsg_opts *o, lc_err *err)
{
	gsg *g = calloc(1, sizeof *g);

	if (!g) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	if (!(o->ratio >= 0 && o->ratio <= 1)) {
		free(g);
		lc_fail(err, "ratio %g is not in [0, 1]", o->ratio);
		return NULL;
	}
	g->o = *o;
	if (!(g->split = sentence_new(err))) {
		free(g);
		return NULL;
	}
	return g;
}

static void free_doc_arrays(gsg *g)
{
	free(g->tb); free(g->dw); free(g->dc); free(g->db);
	free(g->D); free(g->S); free(g->sel); free(g->score); free(g->order);
	g->tb = g->db = g->order = NULL;
	g->dw = g->dc = g->D = g->S = NULL;
	g->sel = NULL;
	g->score = NULL;
}

void gsg_free(gsg *g)
{
	if (!g)
		return;
	sentence_free(g->split);
	free_doc_arrays(g);
	free(g->sp);
	free(g->ids);
	free(g);
}

/* Running state of a selection S against the rest R = D - S. */
struct sel_state {
	uint64_t nsel, nrest;        /* Orig: token counts; Uniq: distinct-word counts */
	uint64_t overlap;            /* Orig: sum min(S, R); Uniq: words in both */
};

/* The state after adding sentence i to the selection. */
static struct sel_state with(const gsg *g, const struct sel_state *st, size_t i)
{
	struct sel_state s = *st;

	for (size_t k = g->db[i]; k < g->db[i + 1]; k++) {
		uint32_t w = g->dw[k], c = g->dc[k];
		uint64_t S = g->S[w], R = g->D[w] - g->S[w];
		if (g->o.uniq) {
			s.nsel += S == 0;
			s.nrest -= R > 0 && R - c == 0;
			s.overlap += (R - c > 0) - (S > 0 && R > 0);
		} else {
			s.nsel += c;
			s.nrest -= c;
			s.overlap += (S + c < R - c ? S + c : R - c) - (S < R ? S : R);
		}
	}
	return s;
}

/* rouge-score: precision = overlap / max(|prediction|, 1), and so on. */
static double f_of(const struct sel_state *s)
{
	double p = (double)s->overlap / (double)(s->nsel ? s->nsel : 1);
	double r = (double)s->overlap / (double)(s->nrest ? s->nrest : 1);
	return rouge_fmeasure(p, r);
}

static void add(gsg *g, struct sel_state *st, size_t i)
{
	*st = with(g, st, i);
	for (size_t k = g->db[i]; k < g->db[i + 1]; k++)
		g->S[g->dw[k]] += g->dc[k];
	g->sel[i] = 1;
}

static int cmp_desc(const void *a, const void *b, void *ctx)
{
	const double *sc = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (sc[i] != sc[j])
		return sc[i] > sc[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Tokenizes the sentences and builds the per-sentence distinct word lists. */
static int prepare(gsg *g, const char *text, rouge_vocab *v, lc_err *err)
{
	size_t n = g->n, V;
	uint32_t *cnt;

	free_doc_arrays(g);
	if (!(g->tb = malloc((n + 1) * sizeof *g->tb)) || !(g->db = malloc((n + 1) * sizeof *g->db)) ||
	    !(g->sel = calloc(n + 1, 1)) || !(g->score = calloc(n + 1, sizeof *g->score)) ||
	    !(g->order = malloc((n + 1) * sizeof *g->order)))
		return lc_fail(err, "out of memory");
	g->nids = 0;
	for (size_t i = 0; i < n; i++) {
		g->tb[i] = g->nids;
		if (rouge_tokenize(v, text + g->sp[i].start, g->sp[i].end - g->sp[i].start,
		                   &g->ids, &g->nids, &g->idcap, err) < 0)
			return -1;
	}
	g->tb[n] = g->nids;
	V = rouge_vocab_size(v);
	cnt = NULL;
	if (!(g->D = calloc(V + 1, sizeof *g->D)) || !(g->S = calloc(V + 1, sizeof *g->S)) ||
	    !(cnt = calloc(V + 1, sizeof *cnt)) ||
	    !(g->dw = malloc((g->nids + 1) * sizeof *g->dw)) ||
	    !(g->dc = malloc((g->nids + 1) * sizeof *g->dc))) {
		free(cnt);   /* the rest is g's, freed with it */
		return lc_fail(err, "out of memory");
	}
	size_t nd = 0;
	for (size_t i = 0; i < n; i++) {
		g->db[i] = nd;
		for (size_t k = g->tb[i]; k < g->tb[i + 1]; k++)
			if (cnt[g->ids[k]]++ == 0)
				g->dw[nd++] = g->ids[k];
		for (size_t k = g->db[i]; k < nd; k++) {
			g->dc[k] = cnt[g->dw[k]];
			g->D[g->dw[k]] += g->dc[k];
			cnt[g->dw[k]] = 0;
		}
	}
	g->db[n] = nd;
	free(cnt);
	return 0;
}

int gsg_select(gsg *g, const char *text, size_t len, const sentence_span **spans,
               const unsigned char **selected, const double **score, size_t *n, lc_err *err)
{
	struct sel_state st = {0, 0, 0};
	rouge_vocab *v;
	size_t K;
	int rc;

	if (sentence_split(g->split, text, len, &g->sp, &g->n, &g->spcap, err) < 0)
		return -1;
	if (!(v = rouge_vocab_new(g->o.stem, err)))
		return -1;
	rc = prepare(g, text, v, err);
	rouge_vocab_free(v);
	if (rc < 0)
		return -1;
	/* The empty selection: the rest is the whole document. */
	for (size_t i = 0; i < g->n; i++)
		for (size_t k = g->db[i]; k < g->db[i + 1]; k++)
			st.nrest += g->o.uniq ? 0 : g->dc[k];
	if (g->o.uniq) {
		/* Distinct words of the document: S (all zero now) marks the seen ones. */
		for (size_t k = 0; k < g->db[g->n]; k++)
			if (g->S[g->dw[k]] == 0) {
				g->S[g->dw[k]] = 1;
				st.nrest++;
			}
		for (size_t k = 0; k < g->db[g->n]; k++)
			g->S[g->dw[k]] = 0;
	}
	K = (size_t)floor(g->o.ratio * (double)g->n);
	if (K > g->n)
		K = g->n;
	if (!g->o.seq) {
		for (size_t i = 0; i < g->n; i++) {
			struct sel_state s = with(g, &st, i);
			g->score[i] = f_of(&s);
			g->order[i] = i;
		}
		qsort_r(g->order, g->n, sizeof *g->order, cmp_desc, g->score);
		for (size_t k = 0; k < K; k++)
			g->sel[g->order[k]] = 1;
		for (size_t i = 0; i < g->n; i++)
			if (!g->sel[i])
				g->score[i] = 0;
	} else {
		for (size_t k = 0; k < K; k++) {
			size_t best = SIZE_MAX;
			double bf = -1;
			for (size_t i = 0; i < g->n; i++) {
				if (g->sel[i])
					continue;
				struct sel_state s = with(g, &st, i);
				double f = f_of(&s);
				if (f > bf) {
					bf = f;
					best = i;
				}
			}
			add(g, &st, best);
			g->score[best] = bf;
		}
	}
	*spans = g->sp;
	*selected = g->sel;
	*score = g->score;
	*n = g->n;
	return 0;
}
