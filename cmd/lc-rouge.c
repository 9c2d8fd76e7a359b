/* lc-rouge: ROUGE scores identical to Google's rouge-score, with bootstrap
 * confidence intervals. Wiring only: see lib/rouge.h, lib/bootstrap.h,
 * lib/sentence.h. */
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/bootstrap.h"
#include "base/cli.h"
#include "text/rouge.h"
#include "text/sentence.h"
#include "stream/textin.h"

#ifndef LC_VERSION
#define LC_VERSION "?"
#endif

static void usage(void)
{
	printf("usage: lc-rouge [-qs] [-t TYPES] [-d file|line|blank|nul] [-b SAMPLES] [--seed N]\n"
	       "                [--ci C] [-f table|tsv|json] [--split-sentences]\n"
	       "                CANDIDATES REFERENCES [REFERENCES...]\n"
	       "\n"
	       "Scores candidate summaries against references with ROUGE, exactly as Google's\n"
	       "rouge-score does, and aggregates them with its bootstrap. Each input is a file,\n"
	       "a directory (one document per file, paired by file name), an lc stream of text\n"
	       "records or - (standard input). Several REFERENCES give multi-reference scoring.\n"
	       "\n"
	       "  -t TYPES          comma-separated: rouge1..rouge9, rougeL, rougeLsum\n"
	       "                    (default rouge1,rouge2,rougeLsum)\n"
	       "  -s, --stem        Porter-stem tokens longer than 3 letters (use_stemmer=True)\n"
	       "  -d MODE           documents in a file: file (default), line, blank or nul\n"
	       "  -b SAMPLES        bootstrap resamples (default 1000; 0: per-document scores only)\n"
	       "  --seed N          numpy seed for the bootstrap, 0..4294967295 (default 0)\n"
	       "  --ci C            confidence level of the interval (default 0.95)\n"
	       "  -f FORMAT         table (default), tsv or json\n"
	       "  --split-sentences split summaries into sentences for rougeLsum with lc's\n"
	       "                    English splitter instead of at newlines\n"
	       "  -q                no progress on standard error\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

enum fmt { F_TABLE, F_TSV, F_JSON };

struct opts {
	rouge_type types[ROUGE_MAX_TYPES];
	size_t ntypes;
	int stem, split_sent, quiet;
	enum textin_split mode;
	long long samples;
	unsigned long long seed;
	double ci;
	enum fmt fmt;
	char sig[512];
};

static void parse_types(struct opts *o, const char *arg)
{
	char *s = strdup(arg), *tok, *save = NULL;
	size_t i;

	if (!s)
		cli_die(LC_EXIT_DATA, "out of memory");
	o->ntypes = 0;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		rouge_type t;
		if (rouge_type_parse(tok, &t) < 0)
			cli_usage_error("-t: unknown type '%s' (rouge1..rouge9, rougeL, rougeLsum)", tok);
		for (i = 0; i < o->ntypes; i++)
			if (o->types[i].kind == t.kind && o->types[i].n == t.n)
				cli_usage_error("-t: type '%s' given twice", tok);
		o->types[o->ntypes++] = t;
	}
	free(s);
	if (!o->ntypes)
		cli_usage_error("-t: no type");
}

static void make_signature(struct opts *o, size_t nref)
{
	char types[256] = "", tn[16];
	size_t i, n = 0;

	for (i = 0; i < o->ntypes; i++)
		n += (size_t)snprintf(types + n, sizeof types - n, "%s%s", i ? "," : "",
		                      rouge_type_name(o->types[i], tn));
	snprintf(o->sig, sizeof o->sig,
	         "lc-rouge|types=%s|stem=%s|sentences=%s|tok=rouge-score-0.1.2|refs=%zu"
	         "|samples=%lld|seed=%llu|ci=%.15g|version=%s",
	         types, o->stem ? "porter-nltk" : "no",
	         o->split_sent ? "lc-sentence" : "newline", nref,
	         o->samples, o->seed, o->ci, LC_VERSION);
}

static int is_dir(const char *p)
{
	struct stat st;

	return strcmp(p, "-") != 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Tokenizes one summary into d. */
struct spans {
	sentence_span *sp;
	size_t cap;
};

static void load_doc(const struct opts *o, rouge_vocab *v, const sentence_splitter *ss,
                     struct spans *b, rouge_doc *d, const char *text, size_t len, const char *name)
{
	size_t n, i;
	lc_err err;

	if (!o->split_sent) {
		if (rouge_doc_set_text(v, d, text, len, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		return;
	}
	rouge_doc_clear(d);
	if (sentence_split(ss, text, len, &b->sp, &n, &b->cap, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
	for (i = 0; i < n; i++)
		if (rouge_doc_add_sentence(v, d, text + b->sp[i].start,
		                           b->sp[i].end - b->sp[i].start, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
}

static void put_tsv(const char *a, const char *b, const rouge_score *s)
{
	printf("%s\t%s\t%.17g\t%.17g\t%.17g\n", a, b, s->p, s->r, s->f);
}

static json_t *json_score(const rouge_score *s)
{
	return json_pack("{s:f,s:f,s:f}", "P", s->p, "R", s->r, "F", s->f);
}

int main(int argc, char **argv)
{
	enum { O_SEED = 256, O_CI, O_SPLIT };
	static const struct option lo[] = {
		{ "types", required_argument, NULL, 't' },
		{ "stem", no_argument, NULL, 's' },
		{ "split", required_argument, NULL, 'd' },
		{ "samples", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "ci", required_argument, NULL, O_CI },
		{ "format", required_argument, NULL, 'f' },
		{ "split-sentences", no_argument, NULL, O_SPLIT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .mode = TEXTIN_FILE, .samples = 1000, .seed = 0, .ci = 0.95, .fmt = F_TABLE };
	textin **in;
	rouge_doc cand, *refs;
	rouge_vocab *v;
	rouge_work *w;
	sentence_splitter *ss = NULL;
	struct spans spans = { NULL, 0 };
	lc_progress prog;
	double *scores = NULL;            /* [ndoc][ntypes][3] */
	size_t ndoc = 0, scap = 0, nin, nref, i, k;
	char **names = NULL;
	json_t *jdocs = NULL;
	lc_err err;
	int c, dirs = 1, rc;

	cli_init("lc-rouge");
	parse_types(&o, "rouge1,rouge2,rougeLsum");
	while ((c = getopt_long(argc, argv, "t:sd:b:f:qhV", lo, NULL)) != -1) {
		switch (c) {
		case 't': parse_types(&o, optarg); break;
		case 's': o.stem = 1; break;
		case 'd':
			if ((rc = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown mode '%s' (file, line, blank, nul)", optarg);
			o.mode = (enum textin_split)rc;
			break;
		case 'b': o.samples = cli_int("-b", optarg, 0, 100000000); break;
		case O_SEED: o.seed = (unsigned long long)cli_int("--seed", optarg, 0, 4294967295LL); break;
		case O_CI:
			o.ci = cli_double("--ci", optarg, 0, 1);
			if (!(o.ci > 0))
				cli_usage_error("--ci: must be greater than 0");
			break;
		case 'f':
			if (strcmp(optarg, "table") == 0) o.fmt = F_TABLE;
			else if (strcmp(optarg, "tsv") == 0) o.fmt = F_TSV;
			else if (strcmp(optarg, "json") == 0) o.fmt = F_JSON;
			else cli_usage_error("-f: unknown format '%s' (table, tsv, json)", optarg);
			break;
		case O_SPLIT: o.split_sent = 1; break;
		case 'q': o.quiet = 1; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (argc - optind < 2)
		cli_usage_error("need CANDIDATES and at least one REFERENCES");
	nin = (size_t)(argc - optind);
	nref = nin - 1;
	for (i = 0; i < nin; i++)
		for (k = i + 1; k < nin; k++)
			if (strcmp(argv[optind + i], "-") == 0 && strcmp(argv[optind + k], "-") == 0)
				cli_usage_error("standard input can be read only once");
	make_signature(&o, nref);

	in = calloc(nin, sizeof *in);
	refs = calloc(nref, sizeof *refs);
	v = rouge_vocab_new(o.stem, &err);
	w = v ? rouge_work_new(&err) : NULL;
	if (!in || !refs || !v || !w)
		cli_die(LC_EXIT_DATA, "out of memory");
	if (o.split_sent && !(ss = sentence_new(&err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	for (i = 0; i < nin; i++) {
		if (!(in[i] = textin_open(argv[optind + i], o.mode, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (!is_dir(argv[optind + i]))
			dirs = 0;
	}
	rouge_doc_init(&cand);
	for (k = 0; k < nref; k++)
		rouge_doc_init(&refs[k]);
	if (o.fmt == F_JSON && !(jdocs = json_array()))
		cli_die(LC_EXIT_DATA, "out of memory");
	if (o.fmt == F_TSV)
		printf("# %s\n", o.sig);
	cli_progress_init(&prog, o.quiet);

	for (;;) {
		const char *name, *text, *rname, *rtext;
		size_t len, rlen;
		rouge_score *s;
		char tn[16];

		rc = textin_next(in[0], &name, &text, &len, &err);
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (rc > 0)
			load_doc(&o, v, ss, &spans, &cand, text, len, name);
		for (k = 0; k < nref; k++) {
			const char *rpath = cli_label(argv[optind + 1 + k]);
			int r2 = textin_next(in[1 + k], &rname, &rtext, &rlen, &err);
			if (r2 < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			if (r2 == 0 && rc > 0)
				cli_die(LC_EXIT_DATA, "%s: has %zu documents, but %s has more (next: %s)",
				        rpath, ndoc, cli_label(argv[optind]), name);
			if (r2 > 0 && rc == 0)
				cli_die(LC_EXIT_DATA, "%s: has more than the %zu documents of %s (next: %s)",
				        rpath, ndoc, cli_label(argv[optind]), rname);
			if (rc == 0)
				continue;
			if (dirs && strcmp(rname, name) != 0)
				cli_die(LC_EXIT_DATA, "%s: document %zu is \"%s\", but the candidate is \"%s\"",
				        rpath, ndoc + 1, rname, name);
			load_doc(&o, v, ss, &spans, &refs[k], rtext, rlen, rname);
		}
		if (rc == 0)
			break;
		if (ndoc + 1 > scap) {
			size_t nc = scap ? 2 * scap : 256;
			double *q = realloc(scores, nc * o.ntypes * 3 * sizeof *q);
			char **qn = realloc(names, nc * sizeof *qn);
			if (!q || !qn)
				cli_die(LC_EXIT_DATA, "out of memory");
			scores = q;
			names = qn;
			scap = nc;
		}
		s = (rouge_score *)(scores + ndoc * o.ntypes * 3);
		if (rouge_score_multi(w, o.types, o.ntypes, &cand, refs, nref, s, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		if (!(names[ndoc] = strdup(name)))
			cli_die(LC_EXIT_DATA, "out of memory");
		if (o.fmt == F_TSV) {
			for (i = 0; i < o.ntypes; i++)
				put_tsv(name, rouge_type_name(o.types[i], tn), &s[i]);
		} else if (o.fmt == F_JSON) {
			json_t *js = json_object();
			for (i = 0; i < o.ntypes; i++)
				json_object_set_new(js, rouge_type_name(o.types[i], tn), json_score(&s[i]));
			json_array_append_new(jdocs, json_pack("{s:s,s:o}", "name", name, "scores", js));
		}
		ndoc++;
		cli_progress(&prog, "%zu documents", ndoc);
	}
	cli_progress_done(&prog);
	if (!ndoc)
		cli_die(LC_EXIT_DATA, "%s: no documents", cli_label(argv[optind]));

	{
		double *agg = calloc(o.ntypes * 9, sizeof *agg);   /* [type][low mid high][P R F] */
		double *x = malloc(ndoc * 3 * sizeof *x);
		bootstrap_rng r;
		char tn[16];
		static const char *const lv[3] = { "low", "mid", "high" };

		if (!agg || !x)
			cli_die(LC_EXIT_DATA, "out of memory");
		bootstrap_seed(&r, (uint32_t)o.seed);
		for (i = 0; o.samples > 0 && i < o.ntypes; i++) {
			for (k = 0; k < ndoc; k++)
				memcpy(x + 3 * k, scores + (k * o.ntypes + i) * 3, 3 * sizeof *x);
			if (bootstrap_aggregate(&r, x, ndoc, 3, (size_t)o.samples, o.ci, agg + i * 9, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
		}
		if (o.fmt == F_TSV && o.samples > 0) {
			for (i = 0; i < o.ntypes; i++)
				for (k = 0; k < 3; k++)
					put_tsv(lv[k], rouge_type_name(o.types[i], tn),
					        (rouge_score *)(agg + i * 9 + k * 3));
		} else if (o.fmt == F_JSON) {
			json_t *root = json_object(), *ja = json_object(), *st = json_object();
			for (i = 0; o.samples > 0 && i < o.ntypes; i++) {
				json_t *t = json_object();
				for (k = 0; k < 3; k++)
					json_object_set_new(t, lv[k], json_score((rouge_score *)(agg + i * 9 + k * 3)));
				json_object_set_new(ja, rouge_type_name(o.types[i], tn), t);
			}
			json_object_set_new(st, "stem", json_boolean(o.stem));
			json_object_set_new(st, "sentences", json_string(o.split_sent ? "lc-sentence" : "newline"));
			json_object_set_new(st, "samples", json_integer(o.samples));
			json_object_set_new(st, "seed", json_integer((json_int_t)o.seed));
			json_object_set_new(st, "ci", json_real(o.ci));
			json_object_set_new(st, "references", json_integer((json_int_t)nref));
			json_object_set_new(root, "signature", json_string(o.sig));
			json_object_set_new(root, "settings", st);
			json_object_set_new(root, "documents", jdocs);
			json_object_set_new(root, "aggregate", o.samples > 0 ? ja : json_null());
			if (o.samples <= 0)
				json_decref(ja);
			if (json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) < 0)
				cli_die(LC_EXIT_DATA, "write error");
			putchar('\n');
			json_decref(root);
		} else if (o.fmt == F_TABLE) {
			if (o.samples > 0) {
				printf("%zu document%s, %lld resamples, %g%% intervals, scores x 100\n",
				       ndoc, ndoc == 1 ? "" : "s", o.samples, 100 * o.ci);
				printf("%-10s %-24s %-24s %-24s\n", "type", "P mid [low, high]",
				       "R mid [low, high]", "F mid [low, high]");
				for (i = 0; i < o.ntypes; i++) {
					const double *a = agg + i * 9;
					printf("%-10s", rouge_type_name(o.types[i], tn));
					for (k = 0; k < 3; k++) {
						char cell[64];
						snprintf(cell, sizeof cell, "%.2f [%.2f, %.2f]",
						         100 * a[3 + k], 100 * a[k], 100 * a[6 + k]);
						printf(" %-24s", cell);
					}
					putchar('\n');
				}
			} else {
				printf("%-24s %-10s %8s %8s %8s   (x 100)\n", "document", "type", "P", "R", "F");
				for (k = 0; k < ndoc; k++)
					for (i = 0; i < o.ntypes; i++) {
						const double *a = scores + (k * o.ntypes + i) * 3;
						printf("%-24s %-10s %8.2f %8.2f %8.2f\n", names[k],
						       rouge_type_name(o.types[i], tn), 100 * a[0], 100 * a[1], 100 * a[2]);
					}
			}
			printf("signature: %s\n", o.sig);
		}
		free(agg);
		free(x);
	}

	for (k = 0; k < ndoc; k++)
		free(names[k]);
	free(names);
	free(scores);
	for (i = 0; i < nin; i++)
		textin_close(in[i]);
	free(in);
	rouge_doc_free(&cand);
	for (k = 0; k < nref; k++)
		rouge_doc_free(&refs[k]);
	free(refs);
	rouge_work_free(w);
	rouge_vocab_free(v);
	sentence_free(ss);
	free(spans.sp);
	return cli_finish(0);
}
