/* lc-rouge: ROUGE scores identical to Google's rouge-score, with bootstrap
 * confidence intervals. Options only: the inputs, their pairing and the
 * scoring are lib/text/rouge_run.h, the output rouge_report.h. */
#include <getopt.h>
#include <stdlib.h>

#include "base/cli.h"
#include "stream/textin.h"
#include "text/rouge_report.h"
#include "text/rouge_run.h"

#ifndef LC_VERSION
#define LC_VERSION "?"
#endif

static void usage(void)
{
	printf("usage: lc-rouge [-qs] [-t TYPES] [-d file|line|blank|nul] [-b SAMPLES] [--seed N]\n"
	       "                [--ci C] [-f table|tsv|json|csv] [--split-sentences] [--subset]\n"
	       "                [-j N]\n"
	       "                CANDIDATES REFERENCES [REFERENCES...]\n"
	       "       lc-rouge --jsonl [--id FIELD] [--cand FIELD] [--ref FIELD] [--subset]\n"
	       "                [--skip-bad] [...]\n"
	       "                CANDIDATES REFERENCES [REFERENCES...] | BOTH\n"
	       "\n"
	       "Scores candidate summaries against references with ROUGE, exactly as Google's\n"
	       "rouge-score does, and aggregates them with its bootstrap. Each input is a file,\n"
	       "a directory (one document per file), an lc stream of text records or - (standard\n"
	       "input). Documents are paired in order, but a directory of REFERENCES by file\n"
	       "name: each candidate takes the file named as its name's last component.\n"
	       "Several REFERENCES give multi-reference scoring.\n"
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
	       "  --subset          references with no candidate (by id, or a directory's files\n"
	       "                    by name) are left out; by default they are an error\n"
	       "  --skip-bad        with --jsonl: skip bad lines (as lc-tokenize --skip-bad),\n"
	       "                    and say how many at the end\n"
	       "  -j, --threads N   lc-rouge runs on one thread: N (1..1024) is checked and\n"
	       "                    otherwise ignored, so that scripts can pass -j to every\n"
	       "                    program\n"
	       "  -q, --quiet       no progress on standard error\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

static const char *field(const char *opt, const char *arg)
{
	if (!*arg)
		cli_usage_error("%s: empty field name", opt);
	return arg;
}

int main(int argc, char **argv)
{
	enum { O_SEED = 256, O_CI, O_SPLIT, O_JSONL, O_ID, O_CAND, O_REF, O_SUBSET, O_SKIPBAD };
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
		{ "skip-bad", no_argument, NULL, O_SKIPBAD },
		{ "threads", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	rouge_run_opts o;
	rouge_run *u;
	lc_progress prog;
	lc_err err;
	int c, rc, quiet = 0, mode_given = 0;

	cli_init("lc-rouge");
	rouge_run_opts_init(&o);
	o.r.version = LC_VERSION;
	o.warn = cli_warn_cb;
	while ((c = cli_getopt(argc, argv, "t:sd:b:f:j:qhV", lo)) != -1) {
		switch (c) {
		case 't':
			if (rouge_report_types_parse(&o.r, optarg, &err) < 0)
				cli_usage_error("-t/--types: %s", err.msg);
			break;
		case 's': o.r.stem = 1; break;
		case 'd':
			if ((rc = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d/--split: unknown mode '%s' (file, line, blank, nul)",
				                optarg);
			o.mode = (enum textin_split)rc;
			mode_given = 1;
			break;
		case 'b': o.r.samples = cli_int("-b/--samples", optarg, 0, 100000000); break;
		case O_SEED: o.r.seed = (unsigned long long)cli_int("--seed", optarg, 0, 4294967295LL); break;
		case O_CI:
			o.r.ci = cli_double("--ci", optarg, 0, 1);
			if (!(o.r.ci > 0))
				cli_usage_error("--ci: must be greater than 0");
			break;
		case 'f':
			if ((rc = rouge_report_fmt_parse(optarg)) < 0)
				cli_usage_error("-f/--format: unknown format '%s' (table, tsv, json, csv)",
				                optarg);
			o.r.fmt = (enum rouge_fmt)rc;
			break;
		case O_SPLIT: o.r.split_sentences = 1; break;
		case O_JSONL: o.jsonl = 1; break;
		case O_ID: o.idkey = field("--id", optarg); o.jsonl = 1; break;
		case O_CAND: o.cand = field("--cand", optarg); o.jsonl = 1; break;
		case O_REF: o.ref = field("--ref", optarg); o.jsonl = 1; break;
		case O_SUBSET: o.subset = 1; break;
		case O_SKIPBAD: o.skip_bad = 1; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'q': quiet = 1; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (o.jsonl && mode_given)
		cli_usage_error("-d/--split: not with --jsonl (a JSON Lines file has a document "
		                "per line)");
	if (rouge_run_check(&o, argv + optind, (size_t)(argc - optind), &err) < 0)
		cli_usage_error("%s", err.msg);

	if (!(u = rouge_run_new(&o, argv + optind, (size_t)(argc - optind), stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_init(&prog, quiet);
	while ((rc = rouge_run_next(u, &err)) > 0)
		cli_progress(&prog, "%zu documents", rouge_run_count(u));
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_done(&prog);
	if (rouge_run_finish(u, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	rouge_run_free(u);
	return cli_finish(0);
}
