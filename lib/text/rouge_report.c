#include "text/rouge_report.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "text/bootstrap.h"

struct rouge_report {
	rouge_report_opts o;
	FILE *out;
	char sig[512];
	double *scores;              /* [ndoc][ntypes][3]: P R F */
	char **names;                /* [ndoc] */
	size_t ndoc, cap;
	json_t *jdocs;               /* json: the documents so far */
	size_t sorted[ROUGE_MAX_TYPES];   /* csv: the types in byte order of their names */
};

static void put_tsv(FILE *f, const char *a, const char *b, const rouge_score *s)
{
	fprintf(f, "%s\t%s\t%.17g\t%.17g\t%.17g\n", a, b, s->p, s->r, s->f);
}

/* A name as one field of a CSV line, quoted as Python's csv module does
 * (QUOTE_MINIMAL) when it holds the delimiter, the quote or a line break. */
static void put_csv_name(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int cmp_type_name(const rouge_type *a, const rouge_type *b)
{
	char na[16], nb[16];

	return strcmp(rouge_type_name(*a, na), rouge_type_name(*b, nb));
}

/* rouge-score's io.py sorts the types by name: rouge1 .. rouge9, rougeL,
 * rougeLsum (insertion sort: at most 11). */
static void sort_types(rouge_report *r)
{
	for (size_t i = 0; i < r->o.ntypes; i++) {
		size_t k = i;
		for (; k > 0 && cmp_type_name(&r->o.types[r->sorted[k - 1]], &r->o.types[i]) > 0; k--)
			r->sorted[k] = r->sorted[k - 1];
		r->sorted[k] = i;
	}
}

static json_t *json_score(const rouge_score *s)
{
	return json_pack("{s:f,s:f,s:f}", "P", s->p, "R", s->r, "F", s->f);
}

int rouge_report_types_parse(rouge_report_opts *o, const char *list, lc_err *err)
{
	o->ntypes = 0;
	for (const char *p = list; *p; p++) {
		size_t n = strcspn(p, ",");
		char tok[16];
		rouge_type t;
		if (n == 0)
			continue;
		if (n < sizeof tok) {
			memcpy(tok, p, n);
			tok[n] = 0;
		}
		if (n >= sizeof tok || rouge_type_parse(tok, &t) < 0)
			return lc_fail(err, "unknown type '%.*s' (rouge1..rouge9, rougeL, rougeLsum)",
			               (int)n, p);
		for (size_t i = 0; i < o->ntypes; i++)
			if (o->types[i].kind == t.kind && o->types[i].n == t.n)
				return lc_fail(err, "type '%s' given twice", tok);
		o->types[o->ntypes++] = t;
		p += n;
		if (!*p)
			break;
	}
	return o->ntypes ? 0 : lc_fail(err, "no type");
}

int rouge_report_fmt_parse(const char *s)
{
	static const char *const names[] = { [ROUGE_FMT_TABLE] = "table", [ROUGE_FMT_TSV] = "tsv",
	                                     [ROUGE_FMT_JSON] = "json", [ROUGE_FMT_CSV] = "csv" };

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

rouge_report *rouge_report_new(const rouge_report_opts *o, FILE *out, lc_err *err)
{
	rouge_report *r = calloc(1, sizeof *r);
	char types[256] = "", tn[16];
	size_t n = 0;

	if (!r || (o->fmt == ROUGE_FMT_JSON && !(r->jdocs = json_array()))) {
		free(r);
		lc_fail(err, "out of memory");
		return NULL;
	}
	r->o = *o;
	r->out = out;
	for (size_t i = 0; i < o->ntypes; i++)
		n += (size_t)snprintf(types + n, sizeof types - n, "%s%s", i ? "," : "",
		                      rouge_type_name(o->types[i], tn));
	snprintf(r->sig, sizeof r->sig,
	         "lc-rouge|types=%s|stem=%s|sentences=%s|tok=rouge-score-0.1.2|refs=%zu"
	         "|samples=%lld|seed=%llu|ci=%.15g|version=%s",
	         types, o->stem ? "porter-nltk" : "no", o->split_sentences ? "lc-sentence" : "newline",
	         o->nref, o->samples, o->seed, o->ci, o->version ? o->version : "?");
	sort_types(r);
	return r;
}

void rouge_report_free(rouge_report *r)
{
	if (!r)
		return;
	for (size_t k = 0; k < r->ndoc; k++)
		free(r->names[k]);
	free(r->names);
	free(r->scores);
	json_decref(r->jdocs);
	free(r);
}

const char *rouge_report_signature(const rouge_report *r) { return r->sig; }
size_t rouge_report_count(const rouge_report *r) { return r->ndoc; }

int rouge_report_add(rouge_report *r, const char *name, const rouge_score *s, lc_err *err)
{
	size_t nt = r->o.ntypes;
	char tn[16];

	if (r->ndoc == r->cap) {
		size_t nc = r->cap ? 2 * r->cap : 256;
		double *q = realloc(r->scores, nc * nt * 3 * sizeof *q);
		char **qn;
		if (!q)
			return lc_fail(err, "out of memory");
		r->scores = q;
		if (!(qn = realloc(r->names, nc * sizeof *qn)))
			return lc_fail(err, "out of memory");
		r->names = qn;
		r->cap = nc;
	}
	if (!(r->names[r->ndoc] = strdup(name)))
		return lc_fail(err, "out of memory");
	for (size_t i = 0; i < nt; i++) {
		double *x = r->scores + (r->ndoc * nt + i) * 3;
		x[0] = s[i].p;
		x[1] = s[i].r;
		x[2] = s[i].f;
	}
	r->ndoc++;
	if (r->o.fmt == ROUGE_FMT_JSON) {
		json_t *js = json_object();
		for (size_t i = 0; i < nt; i++)
			json_object_set_new(js, rouge_type_name(r->o.types[i], tn), json_score(&s[i]));
		if (json_array_append_new(r->jdocs, json_pack("{s:s,s:o}", "name", name, "scores", js)))
			return lc_fail(err, "out of memory");
	}
	return 0;
}

/* tsv and csv: the per-document lines, from the scores kept, once every
 * document has been scored (a run that fails writes none, rather than
 * lines that look like a whole corpus's). */
static void print_rows(rouge_report *r)
{
	size_t nt = r->o.ntypes;
	char tn[16];

	for (size_t k = 0; k < r->ndoc; k++) {
		const double *x = r->scores + k * nt * 3;
		if (r->o.fmt == ROUGE_FMT_TSV) {
			for (size_t i = 0; i < nt; i++)
				put_tsv(r->out, r->names[k], rouge_type_name(r->o.types[i], tn),
				        (const rouge_score *)(x + 3 * i));
			continue;
		}
		if (r->o.csv_ids)
			put_csv_name(r->out, r->names[k]);
		else
			fprintf(r->out, "%zu", k);
		for (size_t i = 0; i < nt; i++) {
			const double *y = x + 3 * r->sorted[i];
			fprintf(r->out, ",%f,%f,%f", y[0], y[1], y[2]);
		}
		fputc('\n', r->out);
	}
}

static int print_json(rouge_report *r, const double *agg, lc_err *err)
{
	static const char *const lv[3] = { "low", "mid", "high" };
	const rouge_report_opts *o = &r->o;
	json_t *root = json_object(), *ja = json_object(), *st = json_object();
	char tn[16];
	int rc = 0;

	for (size_t i = 0; o->samples > 0 && i < o->ntypes; i++) {
		json_t *t = json_object();
		for (int k = 0; k < 3; k++)
			json_object_set_new(t, lv[k], json_score((const rouge_score *)(agg + i * 9 + k * 3)));
		json_object_set_new(ja, rouge_type_name(o->types[i], tn), t);
	}
	json_object_set_new(st, "stem", json_boolean(o->stem));
	json_object_set_new(st, "sentences", json_string(o->split_sentences ? "lc-sentence" : "newline"));
	json_object_set_new(st, "samples", json_integer(o->samples));
	json_object_set_new(st, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(st, "ci", json_real(o->ci));
	json_object_set_new(st, "references", json_integer((json_int_t)o->nref));
	json_object_set_new(root, "signature", json_string(r->sig));
	json_object_set_new(root, "settings", st);
	json_object_set(root, "documents", r->jdocs);
	json_object_set_new(root, "aggregate", o->samples > 0 ? ja : json_null());
	if (o->samples <= 0)
		json_decref(ja);
	if (json_dumpf(root, r->out, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) < 0 ||
	    fputc('\n', r->out) == EOF)
		rc = lc_fail(err, "write error");
	json_decref(root);
	return rc;
}

static void print_table(rouge_report *r, const double *agg)
{
	const rouge_report_opts *o = &r->o;
	FILE *f = r->out;
	char tn[16];

	if (o->samples > 0) {
		fprintf(f, "%zu document%s, %lld resamples, %g%% intervals, scores x 100\n", r->ndoc,
		        r->ndoc == 1 ? "" : "s", o->samples, 100 * o->ci);
		fprintf(f, "%-10s %-24s %-24s %-24s\n", "type", "P mid [low, high]", "R mid [low, high]",
		        "F mid [low, high]");
		for (size_t i = 0; i < o->ntypes; i++) {
			const double *a = agg + i * 9;
			fprintf(f, "%-10s", rouge_type_name(o->types[i], tn));
			for (int k = 0; k < 3; k++) {
				char cell[64];
				snprintf(cell, sizeof cell, "%.2f [%.2f, %.2f]", 100 * a[3 + k], 100 * a[k],
				         100 * a[6 + k]);
				fprintf(f, " %-24s", cell);
			}
			fputc('\n', f);
		}
	} else {
		fprintf(f, "%-24s %-10s %8s %8s %8s   (x 100)\n", "document", "type", "P", "R", "F");
		for (size_t k = 0; k < r->ndoc; k++)
			for (size_t i = 0; i < o->ntypes; i++) {
				const double *a = r->scores + (k * o->ntypes + i) * 3;
				fprintf(f, "%-24s %-10s %8.2f %8.2f %8.2f\n", r->names[k],
				        rouge_type_name(o->types[i], tn), 100 * a[0], 100 * a[1], 100 * a[2]);
			}
	}
	fprintf(f, "signature: %s\n", r->sig);
}

/* rouge-score's aggregate CSV: for each type (by name) R, P, F lines of
 * low, mid, high. */
static void print_csv(rouge_report *r, const double *agg)
{
	static const char mc[3] = { 'R', 'P', 'F' };
	static const int col[3] = { 1, 0, 2 };
	char tn[16];

	fputs("score_type,low,mid,high\n", r->out);
	for (size_t i = 0; i < r->o.ntypes; i++) {
		const double *a = agg + r->sorted[i] * 9;   /* [low mid high][P R F] */
		rouge_type_name(r->o.types[r->sorted[i]], tn);
		for (int m = 0; m < 3; m++)
			fprintf(r->out, "%s-%c,%f,%f,%f\n", tn, mc[m], a[col[m]], a[3 + col[m]],
			        a[6 + col[m]]);
	}
}

int rouge_report_finish(rouge_report *r, lc_err *err)
{
	const rouge_report_opts *o = &r->o;
	double *agg = calloc(o->ntypes * 9, sizeof *agg);   /* [type][low mid high][P R F] */
	double *x = malloc((r->ndoc ? r->ndoc : 1) * 3 * sizeof *x);
	bootstrap_rng rng;
	char tn[16];
	int rc = -1;
	static const char *const lv[3] = { "low", "mid", "high" };

	if (!agg || !x) {
		lc_fail(err, "out of memory");
		goto out;
	}
	if (r->ndoc == 0) {
		lc_fail(err, "no documents");
		goto out;
	}
	bootstrap_seed(&rng, (uint32_t)o->seed);
	for (size_t i = 0; o->samples > 0 && i < o->ntypes; i++) {
		for (size_t k = 0; k < r->ndoc; k++)
			memcpy(x + 3 * k, r->scores + (k * o->ntypes + i) * 3, 3 * sizeof *x);
		if (bootstrap_aggregate(&rng, x, r->ndoc, 3, (size_t)o->samples, o->ci, agg + i * 9,
		                        err) < 0)
			goto out;
	}
	switch (o->fmt) {
	case ROUGE_FMT_TSV:
		fprintf(r->out, "# %s\n", r->sig);
		print_rows(r);
		for (size_t i = 0; o->samples > 0 && i < o->ntypes; i++)
			for (int k = 0; k < 3; k++)
				put_tsv(r->out, lv[k], rouge_type_name(o->types[i], tn),
				        (const rouge_score *)(agg + i * 9 + k * 3));
		break;
	case ROUGE_FMT_JSON:
		if (print_json(r, agg, err) < 0)
			goto out;
		break;
	case ROUGE_FMT_TABLE:
		print_table(r, agg);
		break;
	case ROUGE_FMT_CSV:
		if (o->samples > 0) {
			print_csv(r, agg);
			break;
		}
		fputs("id", r->out);
		for (size_t i = 0; i < o->ntypes; i++) {
			rouge_type_name(o->types[r->sorted[i]], tn);
			fprintf(r->out, ",%s-P,%s-R,%s-F", tn, tn, tn);
		}
		fputc('\n', r->out);
		print_rows(r);
		break;
	}
	if (ferror(r->out)) {
		lc_fail(err, "write error");
		goto out;
	}
	rc = 0;
out:
	free(agg);
	free(x);
	return rc;
}

int rouge_report_load(rouge_vocab *v, rouge_doc *d, const sentence_splitter *ss,
                      sentence_span **spans, size_t *cap, const char *text, size_t len,
                      lc_err *err)
{
	size_t n;

	if (!ss)
		return rouge_doc_set_text(v, d, text, len, err);
	rouge_doc_clear(d);
	if (sentence_split(ss, text, len, spans, &n, cap, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (rouge_doc_add_sentence(v, d, text + (*spans)[i].start,
		                           (*spans)[i].end - (*spans)[i].start, err) < 0)
			return -1;
	return 0;
}
