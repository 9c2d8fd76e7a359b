/*
 * lc-train: pretrains or fine-tunes a LOCOST or BART model on (source, target)
 * token pairs and writes checkpoints as model directories: the options
 * here, the run in train/trainjob.h.
 */
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/cli.h"
#include "compute/compute.h"
#include "train/adamw.h"
#include "train/trainjob.h"

static void usage(void)
{
	printf("usage: lc-train (-m INIT | --config JSON) -o OUTDIR [--steps N] [--lr X]\n"
	       "                [--schedule constant|invsqrt] [--warmup N] [--batch-tokens N]\n"
	       "                [--max-src N] [--max-tgt N] [--dropout X] [--weight-decay X]\n"
	       "                [--clip X] [--eval STREAM] [--holdout N] [--holdout-out PREFIX]\n"
	       "                [--eval-every N] [--save-every N] [--log-every N] [--no-rouge]\n"
	       "                [--rouge-max-new N] [-t TOKENIZER] [-d cpu|cuda]\n"
	       "                [--seed N] [--restart] [--force-resume] [-j THREADS] [-q]\n"
	       "                [--jsonl [--source FIELD] [--target FIELD] [--id FIELD] [--skip-bad]]\n"
	       "                [TRAIN_STREAM...]\n"
	       "\n"
	       "Trains a LOCOST, BART, BART-LS or top-down model on (source, target) pairs:\n"
	       "documents with i32 \"source\" and \"target\" tensors (lc-gsg-split -m output, or\n"
	       "a tokenized summarization set). Checkpoints are model directories that\n"
	       "lc-encode and lc-decode load. Running the same command again resumes from\n"
	       "OUTDIR's checkpoint.\n"

	       "\n"
	       "  -m, --model INIT      start from this model directory, or a fairseq .pt file\n"
	       "                        (fine-tuning)\n"
	       "      --config JSON     start from random weights for this config.json\n"
	       "  -o, --output OUTDIR   checkpoint directory (created)\n"
	       "      --steps N         train until step N (default 1000)\n"
	       "      --lr X            peak learning rate (default 1e-3 with --config, else 1e-4)\n"
	       "      --schedule S      invsqrt (default with --config) or constant\n"
	       "      --warmup N        warm-up steps (default 100 for invsqrt, 0 for constant)\n"
	       "      --batch-tokens N  source + target tokens per step (default 8192)\n"
	       "      --max-src N       cut sources to N tokens (default 1024)\n"
	       "      --max-tgt N       cut targets to N tokens (default 256)\n"
	       "      --dropout X       dropout probability (default 0)\n"
	       "      --weight-decay X  AdamW decoupled weight decay of matrices (default 0.01)\n"
	       "      --clip X          clip the global gradient norm to X (default 1; 0: off)\n"
	       "      --eval STREAM     held-out pairs: evaluation loss every --eval-every steps\n"
	       "      --holdout N       hold the last N training pairs out as the evaluation set\n"
	       "      --holdout-out P   write the held-out pairs as P.src.lc and P.tgt.lc\n"
	       "                        (\"tokens\" streams for lc-encode and lc-detokenize)\n"
	       "      --eval-every N    evaluation interval in steps (default 100)\n"
	       "      --save-every N    checkpoint interval in steps (default 500)\n"
	       "      --log-every N     log line interval in steps (default 10)\n"
	       "      --no-rouge        no ROUGE of greedy summaries of the evaluation set at\n"
	       "                        each checkpoint (written to OUTDIR/rouge.tsv)\n"
	       "      --rouge-max-new N at most N tokens per greedy summary (default 128)\n"
	       "  -t, --tokenizer FILE  tokenizer copied into checkpoints: a spiece.model, or\n"
	       "                        a BPE vocab.json, merges.txt, tokenizer.json or its\n"
	       "                        directory (default INIT's, else the share directory's\n"
	       "                        spiece.model)\n"
	       "      --seed N          data order, dropout and random weights (default 1)\n"
	       "      --restart         ignore a checkpoint already in OUTDIR, or start over in an\n"
	       "                        OUTDIR holding other files (by default refused)\n"
	       "      --force-resume    resume even with other data or options than the\n"
	       "                        checkpoint's (otherwise refused, saying what changed)\n"
	       "      --jsonl           the training inputs and --eval are JSON Lines, a pair\n"
	       "                        per line (a summarization data set), its texts encoded\n"
	       "                        as lc-gsg-split -m does, with the tokenizer of -t\n"
	       "                        (or its default)\n"
	       "      --source FIELD    with --jsonl: the source text field (default article)\n"
	       "      --target FIELD    with --jsonl: the target text field (default abstract)\n"
	       "      --id FIELD        with --jsonl: the field naming the pair (default none:\n"
	       "                        FILE:LINE)\n"
	       "      --skip-bad        with --jsonl: skip bad lines, and say how many\n"
	       "  -j, --threads N       threads, 1..1024 (default $LC_THREADS, else the\n"
	       "                        processors this process may use: taskset, cgroup quota)\n"
	       "  -d, --device D        cpu, or cuda: the matrix products on the GPU (a build\n"
	       "                        with CUDA=1; the default there when one answers)\n"
	       "  -q, --quiet           no progress or log lines on standard error\n"
	       "      --help, --version\n");
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* What the run has to say, on standard error. */
static void report(void *ctx, enum train_report kind, const char *text)
{
	lc_progress *pr = ctx;

	switch (kind) {
	case TRAIN_NOTE:
	case TRAIN_WARN: cli_warn("%s", text); break;
	case TRAIN_LINE: fprintf(stderr, "%s\n", text); break;
	case TRAIN_PROGRESS_START: cli_progress_init(pr, 0); break;
	case TRAIN_PROGRESS: cli_progress(pr, "%s", text); break;
	case TRAIN_PROGRESS_END: cli_progress_done(pr); break;
	}
}

int main(int argc, char **argv)
{
	enum { O_CONFIG = 256, O_STEPS, O_LR, O_SCHED, O_WARMUP, O_BATCH, O_MAXSRC, O_MAXTGT,
	       O_DROPOUT, O_WD, O_CLIP, O_EVAL, O_HOLDOUT, O_HOLDOUT_OUT, O_EVAL_EVERY,
	       O_SAVE_EVERY, O_LOG_EVERY, O_SEED, O_RESTART, O_FORCE_RESUME, O_NO_ROUGE, O_ROUGE_MAX, O_HELP, O_VERSION,
	       O_JSONL, O_SOURCE, O_TARGET, O_ID, O_SKIPBAD };
	static const struct option lo[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "output", required_argument, NULL, 'o' },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "lr", required_argument, NULL, O_LR },
		{ "schedule", required_argument, NULL, O_SCHED },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "batch-tokens", required_argument, NULL, O_BATCH },
		{ "max-src", required_argument, NULL, O_MAXSRC },
		{ "max-tgt", required_argument, NULL, O_MAXTGT },
		{ "dropout", required_argument, NULL, O_DROPOUT },
		{ "weight-decay", required_argument, NULL, O_WD },
		{ "clip", required_argument, NULL, O_CLIP },
		{ "eval", required_argument, NULL, O_EVAL },
		{ "holdout", required_argument, NULL, O_HOLDOUT },
		{ "holdout-out", required_argument, NULL, O_HOLDOUT_OUT },
		{ "eval-every", required_argument, NULL, O_EVAL_EVERY },
		{ "save-every", required_argument, NULL, O_SAVE_EVERY },
		{ "log-every", required_argument, NULL, O_LOG_EVERY },
		{ "no-rouge", no_argument, NULL, O_NO_ROUGE },
		{ "rouge-max-new", required_argument, NULL, O_ROUGE_MAX },
		{ "tokenizer", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "restart", no_argument, NULL, O_RESTART },
		{ "force-resume", no_argument, NULL, O_FORCE_RESUME },
		{ "jsonl", no_argument, NULL, O_JSONL },
		{ "source", required_argument, NULL, O_SOURCE },
		{ "target", required_argument, NULL, O_TARGET },
		{ "id", required_argument, NULL, O_ID },
		{ "skip-bad", no_argument, NULL, O_SKIPBAD },
		{ "threads", required_argument, NULL, 'j' }, { "device", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *jopt = NULL, *jsonl_opt = NULL, *dopt = NULL;
	train_job job;
	lc_progress pr = { 0 };
	lc_err err;
	struct sigaction sa;
	int c;

	cli_init("lc-train");
	/* from here on, SIGINT / SIGTERM end training with a checkpoint */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	train_job_init(&job);
	while ((c = cli_getopt(argc, argv, "m:o:t:j:d:q", lo)) != -1) {
		switch (c) {
		case 'm': job.init = optarg; break;
		case O_CONFIG: job.config = optarg; break;
		case 'o': job.outdir = optarg; break;
		case O_STEPS: job.steps = cli_int("--steps", optarg, 0, INT64_C(1) << 40); break;
		case O_LR: job.lr = cli_double("--lr", optarg, 0, 10); break;
		case O_SCHED: {
			enum lr_sched s;
			if (lr_sched_parse(optarg, &s) < 0)
				cli_usage_error("--schedule: \"%s\": use constant or invsqrt", optarg);
			job.sched = (int)s;
			break;
		}
		case O_WARMUP: job.warmup = cli_int("--warmup", optarg, 0, INT64_C(1) << 40); break;
		case O_BATCH: job.batch_tokens = cli_int("--batch-tokens", optarg, 1, INT64_C(1) << 40); break;
		case O_MAXSRC: job.max_src = cli_int("--max-src", optarg, 1, 1 << 20); break;
		case O_MAXTGT: job.max_tgt = cli_int("--max-tgt", optarg, 1, 1 << 16); break;
		case O_DROPOUT: job.dropout = cli_double("--dropout", optarg, 0, 0.95); break;
		case O_WD: job.weight_decay = cli_double("--weight-decay", optarg, 0, 1); break;
		case O_CLIP: job.clip = cli_double("--clip", optarg, 0, 1e9); break;
		case O_EVAL: job.eval = optarg; break;
		case O_HOLDOUT: job.holdout = cli_int("--holdout", optarg, 0, INT64_C(1) << 40); break;
		case O_HOLDOUT_OUT: job.holdout_out = optarg; break;
		case O_EVAL_EVERY: job.eval_every = cli_int("--eval-every", optarg, 1, INT64_C(1) << 40); break;
		case O_SAVE_EVERY: job.save_every = cli_int("--save-every", optarg, 1, INT64_C(1) << 40); break;
		case O_LOG_EVERY: job.log_every = cli_int("--log-every", optarg, 1, INT64_C(1) << 40); break;
		case 't': job.tokenizer = optarg; break;
		case O_SEED: job.seed = (uint64_t)cli_int("--seed", optarg, 0, INT64_MAX); job.seed_given = 1; break;
		case O_RESTART: job.restart = 1; break;
		case O_FORCE_RESUME: job.force_resume = 1; break;
		case O_NO_ROUGE: job.rouge = 0; break;
		case O_ROUGE_MAX: job.rouge_max_new = (int)cli_int("--rouge-max-new", optarg, 1, 1 << 16); break;
		case O_JSONL: job.jsonl = 1; break;
		case O_SOURCE: job.js.field[0] = optarg; jsonl_opt = "--source"; break;
		case O_TARGET: job.js.field[1] = optarg; jsonl_opt = "--target"; break;
		case O_ID: job.js.id = optarg; jsonl_opt = "--id"; break;
		case O_SKIPBAD: job.js.skip_bad = 1; jsonl_opt = "--skip-bad"; break;
		case 'j': jopt = optarg; cli_threads_arg(optarg); break;
		case 'q': job.quiet = 1; break;
		case 'd': dopt = optarg; break;
		case O_HELP: usage(); return cli_finish(LC_EXIT_OK);
		case O_VERSION: cli_version();
		default: cli_usage_error("unknown option");
		}
	}
	if (!job.outdir)
		cli_usage_error("-o OUTDIR is required");
	if (job.init && job.config)
		cli_usage_error("-m and --config exclude each other");
	if (job.eval && job.holdout)
		cli_usage_error("--eval and --holdout exclude each other");
	if (job.holdout_out && !job.holdout)
		cli_usage_error("--holdout-out needs --holdout N");
	if (jsonl_opt && !job.jsonl)
		cli_usage_error("%s goes with --jsonl", jsonl_opt);
	job.threads = cli_threads(jopt, NULL);
	/* fp32 products; and the environment's switches checked, as the
	 * other programs check them */
	if (cmp_set_device(dopt, cli_warn_cb, NULL, &err) < 0 ||
	    cmp_set_compute(NULL, NULL, 0, &err) < 0)
		cli_usage_error("%s", err.msg);
	job.inputs = argv + optind;
	job.ninputs = argc - optind;
	job.stop = &stop_signal;
	job.report = report;
	job.ctx = &pr;
	if (train_job_run(&job, &err) < 0) {
		if (stop_signal && !job.began) {
			/* stopped before training began (reading its input: the
			 * read interrupted, or the pipe cut short as the signal
			 * ended the writer too): nothing to save, and the data is
			 * not to blame; it dies of the signal as the others do */
			signal(stop_signal, SIG_DFL);
			raise(stop_signal);
		}
		if (job.err_usage)
			cli_usage_error("%s", err.msg);
		cli_die_source(job.err_from, job.err_path, err.msg);
	}
	return cli_finish(LC_EXIT_OK);
}
