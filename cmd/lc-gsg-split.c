/* lc-gsg-split: gap-sentence generation pairs (PEGASUS / LOCOST pretraining). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "pipe/gsgsplit.h"

static void usage(void)
{
	printf("usage: lc-gsg-split [-Fq] [-r RATIO] [-s ind|seq] [--uniq] [--stem]\n"
	       "                    [--mask none|sentence] [--mask-token TEXT] [-m MODEL] [-j N]\n"
	       "                    [-f stream|text] [-d file|line|blank|nul]\n"
	       "                    [--jsonl [--text FIELD | --source FIELD --target FIELD]\n"
	       "                     [--id FIELD] [--skip-bad]] [FILE...]\n"
	       "\n"
	       "Splits each document into sentences and selects floor(RATIO x M) of them,\n"
	       "by ROUGE-1 against the rest, as a pseudo-summary (target); the rest is the\n"
	       "pseudo-source. With --source and --target, writes the pairs that JSON Lines\n"
	       "records hold instead (a summarization data set), with no selection.\n"
	       "\n"
	       "  -r RATIO        share of sentences selected (default 0.2, as LOCOST)\n"
	       "  -s ind|seq      score sentences independently (default) or greedily\n"
	       "  --uniq          count each distinct word once (PEGASUS Uniq; default Orig)\n"
	       "  --stem          Porter-stem words longer than 3 letters when scoring\n"
	       "  --mask none     the source leaves selected sentences out (default)\n"
	       "  --mask sentence the source has the mask token in their place (PEGASUS)\n"
	       "  --mask-token T  the mask text (default <extra_id_0>)\n"
	       "  -m, --model MODEL\n"
	       "                  write token ids (with eos) instead of text, with this\n"
	       "                  tokenizer (as lc-tokenize -m)\n"
	       "  -f stream       a stream with \"source\" and \"target\" per document (default)\n"
	       "  -f text         '== target', its sentences, '== source', its sentences\n"
	       "  -d MODE         how inputs split into documents (as lc-tokenize)\n"
	       "  --jsonl         inputs are JSON Lines, a document per line (as lc-tokenize)\n"
	       "  --text FIELD    with --jsonl: the field GSG splits (default text)\n"
	       "  --source FIELD  with --jsonl: the pair's source text (default article)\n"
	       "  --target FIELD  with --jsonl: the pair's target text (default abstract);\n"
	       "                  either of the two writes the records' pairs, no GSG\n"
	       "  --id FIELD      with --jsonl: the field naming the document (default none:\n"
	       "                  FILE:LINE)\n"
	       "  --skip-bad      with --jsonl: skip bad lines, and say how many at the end\n"
	       "  -j, --threads N\n"
	       "                  lc-gsg-split runs on one thread: N (1..1024) is checked\n"
	       "                  and otherwise ignored, so that scripts can pass -j to every\n"
	       "                  program\n"
	       "  -F, --force     write a binary stream even to a terminal\n"
	       "  -q, --quiet     accepted; lc-gsg-split shows no progress\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

int main(int argc, char **argv)
{
	enum { O_JSONL = 256, O_TEXT, O_SOURCE, O_TARGET, O_ID, O_SKIPBAD };
	static const struct option lopts[] = {
		{"uniq", no_argument, NULL, 'U'},
		{"stem", no_argument, NULL, 'T'},
		{"mask", required_argument, NULL, 'M'},
		{"mask-token", required_argument, NULL, 'K'},
		{"jsonl", no_argument, NULL, O_JSONL},
		{"text", required_argument, NULL, O_TEXT},
		{"source", required_argument, NULL, O_SOURCE},
		{"target", required_argument, NULL, O_TARGET},
		{"id", required_argument, NULL, O_ID},
		{"skip-bad", no_argument, NULL, O_SKIPBAD},
		{"model", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	gsgsplit_opts o = {.g = {.ratio = 0.2}, .warn = cli_warn_cb};
	const char *model = NULL, *jsonl_opt = NULL;
	int force = 0, split_given = 0, c;
	lc_tokenizer *tok = NULL;
	gsgsplit *gs;
	lc_err err;

	cli_init("lc-gsg-split");
	while ((c = cli_getopt(argc, argv, "Fqr:s:m:f:d:j:", lopts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': break;
		case 'r': o.g.ratio = cli_double("-r", optarg, 0, 1); break;
		case 's':
			if (strcmp(optarg, "ind") && strcmp(optarg, "seq"))
				cli_usage_error("-s: expected ind or seq, got '%s'", optarg);
			o.g.seq = optarg[0] == 's';
			break;
		case 'U': o.g.uniq = 1; break;
		case 'T': o.g.stem = 1; break;
		case 'M':
			if (strcmp(optarg, "none") && strcmp(optarg, "sentence"))
				cli_usage_error("--mask: expected none or sentence, got '%s'", optarg);
			o.mask = optarg[0] == 's';
			break;
		case 'K': o.mask_token = optarg; break;
		case 'm': model = optarg; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'f':
			if (strcmp(optarg, "stream") && strcmp(optarg, "text"))
				cli_usage_error("-f: expected stream or text, got '%s'", optarg);
			o.text = optarg[0] == 't';
			break;
		case 'd':
			if ((c = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown document mode '%s' (file, line, blank, nul)",
				                optarg);
			o.split = c;
			split_given = 1;
			break;
		case O_JSONL: o.jsonl = 1; break;
		case O_TEXT: o.text_field = optarg; jsonl_opt = "--text"; break;
		case O_SOURCE: o.source_field = optarg; jsonl_opt = "--source"; break;
		case O_TARGET: o.target_field = optarg; jsonl_opt = "--target"; break;
		case O_ID: o.id_field = optarg; jsonl_opt = "--id"; break;
		case O_SKIPBAD: o.skip_bad = 1; jsonl_opt = "--skip-bad"; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (model && o.text)
		cli_usage_error("-m writes token ids: it goes with -f stream");
	if (jsonl_opt && !o.jsonl)
		cli_usage_error("%s goes with --jsonl", jsonl_opt);
	if (o.jsonl && split_given)
		cli_usage_error("-d and --jsonl exclude each other (JSON Lines are a document a line)");
	if (o.text_field && (o.source_field || o.target_field))
		cli_usage_error("--text (GSG of one field) and --source/--target (the records' "
		                "pairs) exclude each other");
	if (model) {
		/* -m/--model; an empty one: $LC_TOKENIZER, else the bundled spiece.model */
		const char *from, *path = cli_source(model, "-m/--model", "$LC_TOKENIZER", &from);
		cli_check_path(from, path);
		if (!(tok = tok_open(path, &err)))
			cli_die_source(from, path, err.msg);
	}
	if (!o.text)
		cli_binary_stdout(force);
	if (!(gs = gsgsplit_new(&o, tok, stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	for (int i = optind; i < argc || i == optind; i++) {
		if (gsgsplit_input(gs, i < argc ? argv[i] : "-", &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	if (gsgsplit_finish(gs, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	gsgsplit_free(gs);
	tok_free(tok);
	return cli_finish(0);
}
