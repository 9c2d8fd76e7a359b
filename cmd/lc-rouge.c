/* lc-rouge: ROUGE scores identical to Google's rouge-score, with bootstrap
 * confidence intervals. Wiring only: see lib/rouge.h, lib/bootstrap.h,
 * lib/sentence.h. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cli.h"
#include "stream/textin.h"
#include "text/rouge.h"
#include "text/rouge_report.h"
#include "text/sentence.h"
#include "text/utf8.h"

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

struct opts {
	rouge_report_opts r;
	enum textin_split mode;
	int quiet;
};

static void parse_types(rouge_report_opts *o, const char *arg)
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

/* Warns, once per input, of a document that is not text: a NUL byte or
 * bytes that are not UTF-8 (rouge-score reads UTF-8 text). */
static void check_text(const char *path, const char *name, const char *text, size_t len,
                       char *warned)
{
	const char *label = cli_label(path), *nul;
	size_t good;
	char why[64];

	if (*warned)
		return;
	nul = memchr(text, 0, len);
	good = utf8_valid_len(text, len);
	if (!nul && good == len)
		return;
	*warned = 1;
	if (nul && (size_t)(nul - text) < good)
		snprintf(why, sizeof why, "a NUL byte at byte %zu", (size_t)(nul - text));
	else
		snprintf(why, sizeof why, "invalid UTF-8 at byte %zu", good);
	if (strcmp(name, label) == 0)
		cli_warn("%s: not text (%s): scored as text anyway", label, why);
	else
		cli_warn("%s: document \"%s\" is not text (%s): scored as text anyway", label, name, why);
}

static int is_dir(const char *p)
{
	struct stat st;

	return strcmp(p, "-") != 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
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
	struct opts o = { .mode = TEXTIN_FILE,
	                  .r = { .samples = 1000, .seed = 0, .ci = 0.95, .fmt = ROUGE_FMT_TABLE,
	                         .version = LC_VERSION } };
	textin **in;
	char *warned;
	rouge_doc cand, *refs;
	rouge_vocab *v;
	rouge_work *w;
	rouge_report *rep;
	rouge_score s[ROUGE_MAX_TYPES];
	sentence_splitter *ss = NULL;
	sentence_span *spans = NULL;
	size_t spcap = 0, nin, nref, i, k;
	lc_progress prog;
	lc_err err;
	int c, dirs = 1, rc;

	cli_init("lc-rouge");
	parse_types(&o.r, "rouge1,rouge2,rougeLsum");
	while ((c = cli_getopt(argc, argv, "t:sd:b:f:qhV", lo)) != -1) {
		switch (c) {
		case 't': parse_types(&o.r, optarg); break;
		case 's': o.r.stem = 1; break;
		case 'd':
			if ((rc = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown mode '%s' (file, line, blank, nul)", optarg);
			o.mode = (enum textin_split)rc;
			break;
		case 'b': o.r.samples = cli_int("-b", optarg, 0, 100000000); break;
		case O_SEED: o.r.seed = (unsigned long long)cli_int("--seed", optarg, 0, 4294967295LL); break;
		case O_CI:
			o.r.ci = cli_double("--ci", optarg, 0, 1);
			if (!(o.r.ci > 0))
				cli_usage_error("--ci: must be greater than 0");
			break;
		case 'f':
			if (strcmp(optarg, "table") == 0) o.r.fmt = ROUGE_FMT_TABLE;
			else if (strcmp(optarg, "tsv") == 0) o.r.fmt = ROUGE_FMT_TSV;
			else if (strcmp(optarg, "json") == 0) o.r.fmt = ROUGE_FMT_JSON;
			else cli_usage_error("-f: unknown format '%s' (table, tsv, json)", optarg);
			break;
		case O_SPLIT: o.r.split_sentences = 1; break;
		case 'q': o.quiet = 1; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (argc - optind < 2)
		cli_usage_error("need CANDIDATES and at least one REFERENCES");
	nin = (size_t)(argc - optind);
	nref = o.r.nref = nin - 1;
	for (i = 0; i < nin; i++)
		for (k = i + 1; k < nin; k++)
			if (strcmp(argv[optind + i], "-") == 0 && strcmp(argv[optind + k], "-") == 0)
				cli_usage_error("standard input can be read only once");

	in = calloc(nin, sizeof *in);
	warned = calloc(nin, 1);
	refs = calloc(nref, sizeof *refs);
	v = rouge_vocab_new(o.r.stem, &err);
	w = v ? rouge_work_new(&err) : NULL;
	if (!in || !warned || !refs || !v || !w)
		cli_die(LC_EXIT_DATA, "out of memory");
	if (o.r.split_sentences && !(ss = sentence_new(&err)))
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
	if (!(rep = rouge_report_new(&o.r, stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_init(&prog, o.quiet);

	/* the documents of the candidates and of each reference input, in step */
	for (;;) {
		const char *name, *text, *rname, *rtext;
		size_t len, rlen, ndoc = rouge_report_count(rep);

		rc = textin_next(in[0], &name, &text, &len, &err);
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (rc > 0)
			check_text(argv[optind], name, text, len, &warned[0]);
		if (rc > 0 && rouge_report_load(v, &cand, ss, &spans, &spcap, text, len, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
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
			check_text(argv[optind + 1 + k], rname, rtext, rlen, &warned[1 + k]);
			if (dirs && strcmp(rname, name) != 0)
				cli_die(LC_EXIT_DATA, "%s: document %zu is \"%s\", but the candidate is \"%s\"",
				        rpath, ndoc + 1, rname, name);
			if (rouge_report_load(v, &refs[k], ss, &spans, &spcap, rtext, rlen, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s: %s", rname, err.msg);
		}
		if (rc == 0)
			break;
		if (rouge_score_multi(w, o.r.types, o.r.ntypes, &cand, refs, nref, s, &err) < 0 ||
		    rouge_report_add(rep, name, s, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		cli_progress(&prog, "%zu documents", ndoc + 1);
	}
	cli_progress_done(&prog);
	if (!rouge_report_count(rep))
		cli_die(LC_EXIT_DATA, "%s: no documents", cli_label(argv[optind]));
	if (rouge_report_finish(rep, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);

	rouge_report_free(rep);
	for (i = 0; i < nin; i++)
		textin_close(in[i]);
	free(in);
	free(warned);
	rouge_doc_free(&cand);
	for (k = 0; k < nref; k++)
		rouge_doc_free(&refs[k]);
	free(refs);
	rouge_work_free(w);
	rouge_vocab_free(v);
	sentence_free(ss);
	free(spans);
	return cli_finish(0);
}
