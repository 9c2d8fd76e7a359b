/* lc-rouge: ROUGE scores identical to Google's rouge-score, with bootstrap
 * confidence intervals. Wiring only: see lib/text/rouge.h, bootstrap.h,
 * rouge_report.h, rouge_jsonl.h, sentence.h. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cli.h"
#include "stream/textin.h"
#include "text/rouge.h"
#include "text/rouge_jsonl.h"
#include "text/rouge_report.h"
#include "text/sentence.h"
#include "text/utf8.h"

#ifndef LC_VERSION
#define LC_VERSION "?"
#endif

static void usage(void)
{
	printf("usage: lc-rouge [-qs] [-t TYPES] [-d file|line|blank|nul] [-b SAMPLES] [--seed N]\n"
	       "                [--ci C] [-f table|tsv|json|csv] [--split-sentences] [-j N]\n"
	       "                CANDIDATES REFERENCES [REFERENCES...]\n"
	       "       lc-rouge --jsonl [--id FIELD] [--cand FIELD] [--ref FIELD] [--subset] [...]\n"
	       "                CANDIDATES REFERENCES [REFERENCES...] | BOTH\n"
	       "\n"
	       "Scores candidate summaries against references with ROUGE, exactly as Google's\n"
	       "rouge-score does, and aggregates them with its bootstrap. Each input is a file,\n"
	       "a directory (one document per file, paired by file name), an lc stream of text\n"
	       "records or - (standard input). Several REFERENCES give multi-reference scoring.\n"
	       "With --jsonl the inputs are JSON Lines, documents paired by id, not by order.\n"
	       "\n"
	       "  -t, --types TYPES comma-separated: rouge1..rouge9, rougeL, rougeLsum\n"
	       "                    (default rouge1,rouge2,rougeLsum)\n"
	       "  -s, --stem        Porter-stem tokens longer than 3 letters (use_stemmer=True)\n"
	       "  -d, --split MODE  documents in a file: file (default), line, blank or nul\n"
	       "  -b, --samples N   bootstrap resamples (default 1000; 0: per-document scores\n"
	       "                    only)\n"
	       "  --seed N          numpy seed for the bootstrap, 0..4294967295 (default 0)\n"
	       "  --ci C            confidence level of the interval (default 0.95)\n"
	       "  -f, --format F    table (default), tsv, json, or csv: rouge-score's own CSV\n"
	       "                    (the aggregate, or with -b 0 the per-document scores)\n"
	       "  --split-sentences split summaries into sentences for rougeLsum with lc's\n"
	       "                    English splitter instead of at newlines\n"
	       "  --jsonl           inputs are JSON Lines: one object per line, paired by id;\n"
	       "                    an input that is an lc stream pairs by document name;\n"
	       "                    a single input BOTH holds candidate and reference\n"
	       "  --id FIELD        the id field, a string or an integer (default id)\n"
	       "  --cand FIELD      the candidate's text field (default summary; alias --pred)\n"
	       "  --ref FIELD       the reference's text field (default summary)\n"
	       "                    (--id, --cand and --ref imply --jsonl)\n"
	       "  --subset          with --jsonl, references with no candidate are left out;\n"
	       "                    by default they are an error\n"
	       "  -j, --threads N   lc-rouge runs on one thread: N (1..1024) is checked and\n"
	       "                    otherwise ignored, so that scripts can pass -j to every\n"
	       "                    program\n"
	       "  -q, --quiet       no progress on standard error\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

struct opts {
	rouge_report_opts r;
	enum textin_split mode;
	int quiet;
	int jsonl, subset, mode_given;
	const char *idkey, *cand, *ref;   /* --jsonl fields */
};

/* What scoring a document needs, both ways of reading the inputs. */
struct run {
	const struct opts *o;
	char **paths;                 /* [nin]: the candidates, then each reference input */
	size_t nin, nref;
	char *warned;                 /* [nin] */
	rouge_doc cand, *refs;        /* refs[nref] */
	rouge_vocab *v;
	rouge_work *w;
	sentence_splitter *ss;
	sentence_span *spans;
	size_t spcap;
	rouge_report *rep;
	lc_progress prog;
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
			cli_usage_error("-t/--types: unknown type '%s' (rouge1..rouge9, rougeL, "
			                "rougeLsum)", tok);
		for (i = 0; i < o->ntypes; i++)
			if (o->types[i].kind == t.kind && o->types[i].n == t.n)
				cli_usage_error("-t/--types: type '%s' given twice", tok);
		o->types[o->ntypes++] = t;
	}
	free(s);
	if (!o->ntypes)
		cli_usage_error("-t/--types: no type");
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

/* Tokenizes text[len] into d (input `in` of the run, for warnings). */
static void load(struct run *u, rouge_doc *d, size_t in, const char *name, const char *text,
                 size_t len)
{
	lc_err err;

	check_text(u->paths[in], name, text, len, &u->warned[in]);
	if (rouge_report_load(u->v, d, u->ss, &u->spans, &u->spcap, text, len, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
}

/* Scores the loaded candidate against the loaded references. */
static void score(struct run *u, const char *name)
{
	rouge_score s[ROUGE_MAX_TYPES];
	lc_err err;

	if (rouge_score_multi(u->w, u->o->r.types, u->o->r.ntypes, &u->cand, u->refs, u->nref, s,
	                      &err) < 0 ||
	    rouge_report_add(u->rep, name, s, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
	cli_progress(&u->prog, "%zu documents", rouge_report_count(u->rep));
}

static rouge_jsonl *jsonl_open(const struct opts *o, const char *path, const char *f1,
                               const char *f2)
{
	const char *fields[2] = { f1, f2 };
	rouge_jsonl *j;
	lc_err err;

	if (!(j = rouge_jsonl_open(path, o->idkey, fields, f2 ? 2 : 1, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	return j;
}

/* --jsonl with one input: each line holds the candidate and the reference. */
static void run_jsonl_both(struct run *u)
{
	const struct opts *o = u->o;
	rouge_jsonl *j = jsonl_open(o, u->paths[0], o->cand, o->ref);
	rouge_idmap *seen;
	lc_err err;
	int rc;

	if (!(seen = rouge_idmap_new(&err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	while ((rc = rouge_jsonl_next(j, &err)) > 0) {
		const char *id = rouge_jsonl_id(j), *ct, *rt;
		size_t cl, rl;
		if (rouge_idmap_add(seen, id, rouge_jsonl_where(j), "", 0, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		ct = rouge_jsonl_text(j, 0, &cl);
		rt = rouge_jsonl_text(j, 1, &rl);
		load(u, &u->cand, 0, id, ct, cl);
		load(u, &u->refs[0], 0, id, rt, rl);
		score(u, id);
	}
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	rouge_idmap_free(seen);
	rouge_jsonl_close(j);
}

/* --jsonl: every reference input into a map by id, then the candidates in
 * their order, each taking its references. */
static void run_jsonl(struct run *u)
{
	const struct opts *o = u->o;
	rouge_idmap **maps = calloc(u->nref, sizeof *maps);
	rouge_jsonl *j;
	lc_err err;
	size_t k;
	int rc;

	if (!maps)
		cli_die(LC_EXIT_DATA, "out of memory");
	for (k = 0; k < u->nref; k++) {
		if (!(maps[k] = rouge_idmap_new(&err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		j = jsonl_open(o, u->paths[1 + k], o->ref, NULL);
		while ((rc = rouge_jsonl_next(j, &err)) > 0) {
			const char *t;
			size_t l;
			t = rouge_jsonl_text(j, 0, &l);
			if (rouge_idmap_add(maps[k], rouge_jsonl_id(j), rouge_jsonl_where(j), t, l, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
		}
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		rouge_jsonl_close(j);
	}

	j = jsonl_open(o, u->paths[0], o->cand, NULL);
	while ((rc = rouge_jsonl_next(j, &err)) > 0) {
		const char *id = rouge_jsonl_id(j), *where = rouge_jsonl_where(j), *t;
		size_t l;
		t = rouge_jsonl_text(j, 0, &l);
		load(u, &u->cand, 0, id, t, l);
		for (k = 0; k < u->nref; k++) {
			int r2 = rouge_idmap_take(maps[k], id, where, &t, &l, &err);
			if (r2 < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			if (r2 == 0)
				cli_die(LC_EXIT_DATA, "%s: id \"%.100s\" has no reference in %s", where, id,
				        cli_label(u->paths[1 + k]));
			load(u, &u->refs[k], 1 + k, id, t, l);
		}
		score(u, id);
	}
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	rouge_jsonl_close(j);

	for (k = 0; k < u->nref; k++) {
		const char *id, *where;
		size_t n = rouge_idmap_untaken(maps[k], &id, &where);
		if (n && !o->subset && rouge_report_count(u->rep))   /* none at all: "no documents" */
			cli_die(LC_EXIT_DATA, "%s: id \"%.100s\" has no candidate in %s (%zu reference%s "
			        "without one; --subset scores the candidates only)", where, id,
			        cli_label(u->paths[0]), n, n == 1 ? "" : "s");
		rouge_idmap_free(maps[k]);
	}
	free(maps);
}

static int is_dir(const char *p)
{
	struct stat st;

	return strcmp(p, "-") != 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Documents paired in order: the candidates and each reference input in step. */
static void run_files(struct run *u)
{
	const struct opts *o = u->o;
	textin **in = calloc(u->nin, sizeof *in);
	lc_err err;
	size_t i, k;
	int dirs = 1, rc;

	if (!in)
		cli_die(LC_EXIT_DATA, "out of memory");
	for (i = 0; i < u->nin; i++) {
		if (!(in[i] = textin_open(u->paths[i], o->mode, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (!is_dir(u->paths[i]))
			dirs = 0;
	}
	for (;;) {
		const char *name, *text, *rname, *rtext;
		size_t len, rlen, ndoc = rouge_report_count(u->rep);

		rc = textin_next(in[0], &name, &text, &len, &err);
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (rc > 0)
			load(u, &u->cand, 0, name, text, len);
		for (k = 0; k < u->nref; k++) {
			const char *rpath = cli_label(u->paths[1 + k]);
			int r2 = textin_next(in[1 + k], &rname, &rtext, &rlen, &err);
			if (r2 < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			if (r2 == 0 && rc > 0)
				cli_die(LC_EXIT_DATA, "%s: has %zu documents, but %s has more (next: %s)",
				        rpath, ndoc, cli_label(u->paths[0]), name);
			if (r2 > 0 && rc == 0)
				cli_die(LC_EXIT_DATA, "%s: has more than the %zu documents of %s (next: %s)",
				        rpath, ndoc, cli_label(u->paths[0]), rname);
			if (rc == 0)
				continue;
			if (dirs && strcmp(rname, name) != 0)
				cli_die(LC_EXIT_DATA, "%s: document %zu is \"%s\", but the candidate is \"%s\"",
				        rpath, ndoc + 1, rname, name);
			load(u, &u->refs[k], 1 + k, rname, rtext, rlen);
		}
		if (rc == 0)
			break;
		score(u, name);
	}
	for (i = 0; i < u->nin; i++)
		textin_close(in[i]);
	free(in);
}

static const char *field(const char *opt, const char *arg)
{
	if (!*arg)
		cli_usage_error("%s: empty field name", opt);
	return arg;
}

int main(int argc, char **argv)
{
	enum { O_SEED = 256, O_CI, O_SPLIT, O_JSONL, O_ID, O_CAND, O_REF, O_SUBSET };
	static const struct option lo[] = {
		{ "types", required_argument, NULL, 't' },
		{ "stem", no_argument, NULL, 's' },
		{ "split", required_argument, NULL, 'd' },
		{ "samples", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "ci", required_argument, NULL, O_CI },
		{ "format", required_argument, NULL, 'f' },
		{ "split-sentences", no_argument, NULL, O_SPLIT },
		{ "jsonl", no_argument, NULL, O_JSONL },
		{ "id", required_argument, NULL, O_ID },
		{ "cand", required_argument, NULL, O_CAND },
		{ "pred", required_argument, NULL, O_CAND },
		{ "ref", required_argument, NULL, O_REF },
		{ "subset", no_argument, NULL, O_SUBSET },
		{ "threads", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .mode = TEXTIN_FILE, .idkey = "id", .cand = "summary", .ref = "summary",
	                  .r = { .samples = 1000, .seed = 0, .ci = 0.95, .fmt = ROUGE_FMT_TABLE,
	                         .version = LC_VERSION } };
	struct run u = { .o = &o };
	size_t i, k;
	lc_err err;
	int c, rc;

	cli_init("lc-rouge");
	parse_types(&o.r, "rouge1,rouge2,rougeLsum");
	while ((c = cli_getopt(argc, argv, "t:sd:b:f:j:qhV", lo)) != -1) {
		switch (c) {
		case 't': parse_types(&o.r, optarg); break;
		case 's': o.r.stem = 1; break;
		case 'd':
			if ((rc = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d/--split: unknown mode '%s' (file, line, blank, nul)",
				                optarg);
			o.mode = (enum textin_split)rc;
			o.mode_given = 1;
			break;
		case 'b': o.r.samples = cli_int("-b/--samples", optarg, 0, 100000000); break;
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
			else if (strcmp(optarg, "csv") == 0) o.r.fmt = ROUGE_FMT_CSV;
			else cli_usage_error("-f/--format: unknown format '%s' (table, tsv, json, csv)",
			                     optarg);
			break;
		case O_SPLIT: o.r.split_sentences = 1; break;
		case O_JSONL: o.jsonl = 1; break;
		case O_ID: o.idkey = field("--id", optarg); o.jsonl = 1; break;
		case O_CAND: o.cand = field("--cand", optarg); o.jsonl = 1; break;
		case O_REF: o.ref = field("--ref", optarg); o.jsonl = 1; break;
		case O_SUBSET: o.subset = 1; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'q': o.quiet = 1; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	u.nin = (size_t)(argc - optind);
	u.paths = argv + optind;
	if (o.jsonl && o.mode_given)
		cli_usage_error("-d/--split: not with --jsonl (a JSON Lines file has a document "
		                "per line)");
	if (o.subset && !o.jsonl)
		cli_usage_error("--subset: only with --jsonl (documents are paired by id)");
	if (o.jsonl && u.nin == 1) {
		if (strcmp(o.cand, o.ref) == 0)
			cli_usage_error("one input holds both texts: --cand and --ref must name two "
			                "fields (both are '%s')", o.cand);
		if (o.subset)
			cli_usage_error("--subset: not with one input (each line has both texts)");
	} else if (u.nin < 2) {
		cli_usage_error(o.jsonl ? "need CANDIDATES and REFERENCES, or one input with both"
		                        : "need CANDIDATES and at least one REFERENCES");
	}
	u.nref = o.r.nref = u.nin > 1 ? u.nin - 1 : 1;
	o.r.csv_ids = o.jsonl;
	for (i = 0; i < u.nin; i++)
		for (k = i + 1; k < u.nin; k++)
			if (strcmp(u.paths[i], "-") == 0 && strcmp(u.paths[k], "-") == 0)
				cli_usage_error("standard input can be read only once");

	u.warned = calloc(u.nin, 1);
	u.refs = calloc(u.nref, sizeof *u.refs);
	u.v = rouge_vocab_new(o.r.stem, &err);
	u.w = u.v ? rouge_work_new(&err) : NULL;
	if (!u.warned || !u.refs || !u.v || !u.w)
		cli_die(LC_EXIT_DATA, "out of memory");
	if (o.r.split_sentences && !(u.ss = sentence_new(&err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	rouge_doc_init(&u.cand);
	for (k = 0; k < u.nref; k++)
		rouge_doc_init(&u.refs[k]);
	if (!(u.rep = rouge_report_new(&o.r, stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_init(&u.prog, o.quiet);

	if (!o.jsonl)
		run_files(&u);
	else if (u.nin == 1)
		run_jsonl_both(&u);
	else
		run_jsonl(&u);

	cli_progress_done(&u.prog);
	if (!rouge_report_count(u.rep))
		cli_die(LC_EXIT_DATA, "%s: no documents", cli_label(u.paths[0]));
	if (rouge_report_finish(u.rep, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);

	rouge_report_free(u.rep);
	free(u.warned);
	rouge_doc_free(&u.cand);
	for (k = 0; k < u.nref; k++)
		rouge_doc_free(&u.refs[k]);
	free(u.refs);
	rouge_work_free(u.w);
	rouge_vocab_free(u.v);
	sentence_free(u.ss);
	free(u.spans);
	return cli_finish(0);
}
