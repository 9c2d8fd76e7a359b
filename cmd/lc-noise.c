/* lc-noise: span-corruption pairs (BART-LS / T5 pretraining data) from token streams. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "pipe/noise.h"

static void usage(void)
{
	printf("usage: lc-noise [-Fq] [-j N] [-m MODEL] [-r DENSITY] [-l MEAN | --span-set L,L,...]\n"
	       "                [--seed N] [--epoch N] [--sentinel-start ID | --sentinel-end ID]\n"
	       "                [--max-spans N] [--ends H,T] [--truncate-target N] [--concat LEN]\n"
	       "                [--stats] [FILE...]\n"
	       "\n"
	       "Noises each token document (lc-tokenize's streams) as the BART-LS authors'\n"
	       "span corruption and writes (source, target) pairs for lc-train: spans of\n"
	       "the body become sentinels in the source, and the target lists them.\n"
	       "\n"
	       "  -r, --density X     share of body tokens noised (default 0.0625, BART-LS)\n"
	       "  -l, --mean-span X   mean noise span length (default 3)\n"
	       "  --span-set L,...    a span length per document drawn from these (BART-LS\n"
	       "                      --dynamic-span-len: 4,8,12), deterministic from --seed\n"
	       "  --seed N            the seed (default 3, as BART-LS's run_pretrain.sh)\n"
	       "  --epoch N           the epoch (default 1)\n"
	       "  -m, --model MODEL   the tokenizer the ids came from: sets the sentinels and\n"
	       "                      --ends (T5's <extra_id_N> counting down, else the\n"
	       "                      authors' ids after <mask> counting up)\n"
	       "  --sentinel-start ID sentinel k is ID + k (the authors': after <mask>)\n"
	       "  --sentinel-end ID   sentinel k is ID - k (T5: ID = <extra_id_0>, the last id)\n"
	       "  --max-spans N       sentinels available: a document needing more is an error\n"
	       "  --ends H,T          tokens kept as they are at each end (BART <s> ... </s>:\n"
	       "                      1,1; T5 </s>: 0,1; default -m's, else 1,1)\n"
	       "  --truncate-target N cut the target between its ends to N ids (BART-LS: 1022)\n"
	       "  --concat LEN        join short documents, shuffled, into inputs of up to LEN\n"
	       "                      tokens before noising (reads every document first)\n"
	       "  --stats             print the achieved density and mean span length\n"
	       "  -j, --threads N     lc-noise runs on one thread: N (1..1024) is checked and\n"
	       "                      otherwise ignored, so that scripts can pass -j to every\n"
	       "                      program\n"
	       "  -F, --force         write a binary stream even to a terminal\n"
	       "  -q, --quiet         no warnings\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

static void warn(void *ctx, const char *msg)
{
	if (!*(int *)ctx)
		cli_warn("%s", msg);
}

/* "4,8,12" into set[max]; a usage error naming --span-set otherwise. */
static int parse_set(const char *arg, double *set, int max)
{
	char buf[64];
	const char *p = arg;
	int n = 0;

	for (;;) {
		size_t k = strcspn(p, ",");
		if (n == max || k == 0 || k >= sizeof buf)
			cli_usage_error("--span-set: expected up to %d lengths >= 1 separated by commas, "
			                "got '%s'", max, arg);
		memcpy(buf, p, k);
		buf[k] = 0;
		set[n++] = cli_double("--span-set", buf, 1, 1e6);
		if (!p[k])
			return n;
		p += k + 1;
	}
}

int main(int argc, char **argv)
{
	enum { O_SET = 256, O_SEED, O_EPOCH, O_START, O_END, O_MAXSP, O_ENDS, O_TRUNC, O_CONCAT,
	       O_STATS };
	static const struct option lopts[] = {
		{"density", required_argument, NULL, 'r'},
		{"mean-span", required_argument, NULL, 'l'},
		{"span-set", required_argument, NULL, O_SET},
		{"seed", required_argument, NULL, O_SEED},
		{"epoch", required_argument, NULL, O_EPOCH},
		{"sentinel-start", required_argument, NULL, O_START},
		{"sentinel-end", required_argument, NULL, O_END},
		{"max-spans", required_argument, NULL, O_MAXSP},
		{"ends", required_argument, NULL, O_ENDS},
		{"truncate-target", required_argument, NULL, O_TRUNC},
		{"concat", required_argument, NULL, O_CONCAT},
		{"stats", no_argument, NULL, O_STATS},
		{"model", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	static double set[64];
	noise_opts o = {.s = {.density = 0.0625, .mean_span = 3}, .seed = 3, .epoch = 1,
	                .head = 1, .tail = 1, .warn = warn};
	const char *model = NULL;
	long long start = -1, end = -1, maxsp = -1, head = -1, tail = -1;
	int force = 0, quiet = 0, stats = 0, mean_given = 0, c;
	lc_tokenizer *tok = NULL;
	noise *s;
	lc_err err;

	cli_init("lc-noise");
	o.ctx = &quiet;
	while ((c = cli_getopt(argc, argv, "Fqr:l:m:j:", lopts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': quiet = 1; break;
		case 'r': o.s.density = cli_double("-r/--density", optarg, 0, 1); break;
		case 'l':
			o.s.mean_span = cli_double("-l/--mean-span", optarg, 1, 1e6);
			mean_given = 1;
			break;
		case O_SET:
			o.nset = parse_set(optarg, set, (int)(sizeof set / sizeof *set));
			o.span_set = set;
			break;
		case O_SEED: o.seed = cli_int("--seed", optarg, 0, INT64_MAX); break;
		case O_EPOCH: o.epoch = cli_int("--epoch", optarg, 0, INT64_MAX); break;
		case O_START:
			start = cli_int("--sentinel-start", optarg, 0, INT32_MAX);
			break;
		case O_END:
			end = cli_int("--sentinel-end", optarg, 0, INT32_MAX);
			break;
		case O_MAXSP: maxsp = cli_int("--max-spans", optarg, 1, INT32_MAX); break;
		case O_ENDS: {
			const char *comma = strchr(optarg, ',');
			char h[32];
			if (!comma || (size_t)(comma - optarg) >= sizeof h)
				cli_usage_error("--ends takes HEAD,TAIL (say 1,1), not '%s'", optarg);
			memcpy(h, optarg, (size_t)(comma - optarg));
			h[comma - optarg] = 0;
			head = cli_int("--ends", h, 0, 1 << 20);
			tail = cli_int("--ends", comma + 1, 0, 1 << 20);
			break;
		}
		case O_TRUNC: o.s.truncate_target = cli_int("--truncate-target", optarg, 1, INT32_MAX); break;
		case O_CONCAT: o.concat = cli_int("--concat", optarg, 1, INT64_MAX); break;
		case O_STATS: stats = 1; break;
		case 'm': model = optarg; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (mean_given && o.span_set)
		cli_usage_error("-l/--mean-span and --span-set exclude each other");
	if (start >= 0 && end >= 0)
		cli_usage_error("--sentinel-start and --sentinel-end exclude each other");
	if (!model && start < 0 && end < 0)
		cli_usage_error("no sentinel ids: give -m MODEL (its tokenizer has them), "
		                "--sentinel-start ID or --sentinel-end ID");
	if (model) {
		const char *from, *path = cli_source(model, "-m/--model", "$LC_TOKENIZER", &from);
		cli_check_path(from, path);
		if (!(tok = tok_open(path, &err)))
			cli_die_source(from, path, err.msg);
		if (noise_tokenizer_defaults(tok, &o, &err) < 0)
			cli_die_source(from, path, err.msg);
		o.fingerprint = tok_fingerprint(tok);
		o.vocab = tok_vocab_size(tok);
	}
	/* the options given win over the tokenizer's defaults */
	if (start >= 0) {
		o.s.sentinel = (int32_t)start;
		o.s.step = 1;
		o.s.max_spans = 0;
	} else if (end >= 0) {
		o.s.sentinel = (int32_t)end;
		o.s.step = -1;
		o.s.max_spans = 0;
	}
	if (maxsp > 0)
		o.s.max_spans = maxsp;
	if (head >= 0) {
		o.head = head;
		o.tail = tail;
	}
	cli_binary_stdout(force);
	if (!(s = noise_new(&o, stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (stream_each(argc - optind, argv + optind, noise_doc, s, &err) < 0 ||
	    noise_finish(s, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (stats) {
		const noise_stats *st = noise_get_stats(s);
		fprintf(stderr, "%s: %lld pairs, %lld skipped; %lld of %lld body tokens noised "
		        "(density %.6f) in %lld spans (mean length %.4f); %lld targets truncated\n",
		        cli_name(), (long long)st->docs, (long long)st->skipped, (long long)st->noise,
		        (long long)st->body, st->body ? (double)st->noise / (double)st->body : 0.0,
		        (long long)st->spans, st->spans ? (double)st->noise / (double)st->spans : 0.0,
		        (long long)st->truncated);
	}
	noise_free(s);
	tok_free(tok);
	return cli_finish(0);
}
