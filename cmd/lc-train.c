/*
 * lc-train: pretrains or fine-tunes a LOCOST model on (source, target)
 * token pairs and writes checkpoints as model directories.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cli.h"
#include "base/clock.h"
#include "base/fileio.h"
#include "base/share.h"
#include "arch/model.h"
#include "stream/jsonl.h"
#include "stream/stream.h"
#include "text/tokenizer.h"
#include "train/train.h"
#include "train/traineval.h"
#include "train/trainlog.h"

static void usage(void)
{
	printf("usage: lc-train (-m INIT | --config JSON) -o OUTDIR [--steps N] [--lr X]\n"
	       "                [--schedule constant|invsqrt] [--warmup N] [--batch-tokens N]\n"
	       "                [--max-src N] [--max-tgt N] [--dropout X] [--weight-decay X]\n"
	       "                [--clip X] [--eval STREAM] [--holdout N] [--holdout-out PREFIX]\n"
	       "                [--eval-every N] [--save-every N] [--log-every N] [--no-rouge]\n"
	       "                [--rouge-max-new N] [-t TOKENIZER]\n"
	       "                [--seed N] [--restart] [--force-resume] [-j THREADS] [-q]\n"
	       "                [--jsonl [--source FIELD] [--target FIELD] [--id FIELD] [--skip-bad]]\n"
	       "                [TRAIN_STREAM...]\n"
	       "\n"
	       "Trains a LOCOST model on (source, target) pairs: documents with i32 \"source\"\n"
	       "and \"target\" tensors (lc-gsg-split -m output, or a tokenized summarization\n"
	       "set). Checkpoints are model directories that lc-encode and lc-decode load.\n"
	       "Running the same command again resumes from OUTDIR's checkpoint.\n"
	       "\n"
	       "  -m, --model INIT      start from this model directory (fine-tuning)\n"
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
	       "  -t, --tokenizer FILE  spiece.model copied into checkpoints (default\n"
	       "                        INIT/spiece.model, else the share directory's)\n"
	       "      --seed N          data order, dropout and random weights (default 1)\n"
	       "      --restart         ignore a checkpoint already in OUTDIR\n"
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
	       "  -j, --threads N       threads, 1..1024 (default $LC_THREADS, else the number\n"
	       "                        of cores)\n"
	       "  -q, --quiet           no progress or log lines on standard error\n"
	       "      --help, --version\n");
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

/* How the pairs are read: lc streams, or JSON Lines encoded with tk. */
struct pair_src {
	int64_t max_src, max_tgt;
	int32_t eos;
	lc_tokenizer *tk;           /* non-NULL: JSON Lines */
	jsonl_spec js;
	uint64_t nbad;              /* bad lines skipped */
	char *first_bad;
};

static void read_pairs(const char *path, struct pair_src *ps, train_data *d)
{
	FILE *f;
	jsonl *j;
	lc_err err;

	if (ps->tk) {
		if (!(j = jsonl_open(path, &ps->js, &err)) ||
		    train_data_read_jsonl(j, ps->tk, ps->max_src, ps->max_tgt, ps->eos, d, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (jsonl_skipped(j) && !ps->nbad && !(ps->first_bad = strdup(jsonl_first_bad(j))))
			cli_die(LC_EXIT_DATA, "out of memory");
		ps->nbad += jsonl_skipped(j);
		jsonl_close(j);
		return;
	}
	f = cli_open(path);
	if (train_data_read(f, cli_label(path), ps->max_src, ps->max_tgt, ps->eos, d, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (f != stdin)
		fclose(f);
}

/* Saves a checkpoint; with an evaluation set and a tokenizer, scores greedy
 * summaries of it and logs them to OUTDIR/rouge.tsv and standard error. */
static void checkpoint(trainer *tr, const char *outdir, const char *cfgpath, const char *tok,
                       const train_data *ed, int rouge, int max_new, int threads, int quiet)
{
	lc_err err;
	train_rouge r;

	if (trainer_save(tr, outdir, cfgpath, tok, 1, &err) < 0)
		cli_die(LC_EXIT_DATA, "checkpoint: %s", err.msg);
	if (!rouge || !tok || !ed->n)
		return;
	if (train_eval_rouge(outdir, tok, ed, max_new, threads, &r, &err) < 0)
		cli_die(LC_EXIT_DATA, "ROUGE evaluation: %s", err.msg);
	if (train_log_rouge(outdir, trainer_step_count(tr) == 0, trainer_step_count(tr), &r, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (!quiet)
		fprintf(stderr, "step %" PRId64 "  greedy summaries of %zu evaluation pairs: "
		        "ROUGE-1 %.2f  ROUGE-2 %.2f  ROUGE-Lsum %.2f\n", trainer_step_count(tr), r.n,
		        r.r1, r.r2, r.rlsum);
}

static void fmt_time(char *buf, size_t n, double s)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
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
		{ "threads", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *init = NULL, *config = NULL, *outdir = NULL, *evalp = NULL, *hout = NULL;
	const char *tok = NULL, *topt = NULL, *jopt = NULL, *jsonl_opt = NULL;
	struct pair_src ps = { .js = { .field = { "article", "abstract" }, .nfield = 2 } };
	int jsonl_in = 0;
	int64_t steps = 1000, batch = 8192, maxsrc = 1024, maxtgt = 256, warmup = -1;
	int64_t holdout = 0, eval_every = 100, save_every = 500, log_every = 10;
	double lr = -1, dropout = 0, wd = 0.01, clip = 1.0;
	int sched = -1, quiet = 0, restart = 0, force_resume = 0, seed_given = 0, no_rouge = 0, rouge_max = 128, c;
	int threads;
	uint64_t seed = 1;
	char cfgpath[4096], spath[4096];
	lc_model *m;
	lc_err err;
	train_opts to;
	train_data td, ed;
	trainer *tr;
	lc_progress pr;
	FILE *logf;
	double t0, tok_done = 0, last_eval = NAN;
	int64_t start_step;
	struct sigaction sa;

	cli_init("lc-train");
	/* from here on, SIGINT / SIGTERM end training with a checkpoint */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while ((c = cli_getopt(argc, argv, "m:o:t:j:q", lo)) != -1) {
		switch (c) {
		case 'm': init = optarg; break;
		case O_CONFIG: config = optarg; break;
		case 'o': outdir = optarg; break;
		case O_STEPS: steps = cli_int("--steps", optarg, 0, INT64_C(1) << 40); break;
		case O_LR: lr = cli_double("--lr", optarg, 0, 10); break;
		case O_SCHED: {
			enum lr_sched s;
			if (lr_sched_parse(optarg, &s) < 0)
				cli_usage_error("--schedule: \"%s\": use constant or invsqrt", optarg);
			sched = (int)s;
			break;
		}
		case O_WARMUP: warmup = cli_int("--warmup", optarg, 0, INT64_C(1) << 40); break;
		case O_BATCH: batch = cli_int("--batch-tokens", optarg, 1, INT64_C(1) << 40); break;
		case O_MAXSRC: maxsrc = cli_int("--max-src", optarg, 1, 1 << 20); break;
		case O_MAXTGT: maxtgt = cli_int("--max-tgt", optarg, 1, 1 << 16); break;
		case O_DROPOUT: dropout = cli_double("--dropout", optarg, 0, 0.95); break;
		case O_WD: wd = cli_double("--weight-decay", optarg, 0, 1); break;
		case O_CLIP: clip = cli_double("--clip", optarg, 0, 1e9); break;
		case O_EVAL: evalp = optarg; break;
		case O_HOLDOUT: holdout = cli_int("--holdout", optarg, 0, INT64_C(1) << 40); break;
		case O_HOLDOUT_OUT: hout = optarg; break;
		case O_EVAL_EVERY: eval_every = cli_int("--eval-every", optarg, 1, INT64_C(1) << 40); break;
		case O_SAVE_EVERY: save_every = cli_int("--save-every", optarg, 1, INT64_C(1) << 40); break;
		case O_LOG_EVERY: log_every = cli_int("--log-every", optarg, 1, INT64_C(1) << 40); break;
		case 't': tok = topt = optarg; break;
		case O_SEED: seed = (uint64_t)cli_int("--seed", optarg, 0, INT64_MAX); seed_given = 1; break;
		case O_RESTART: restart = 1; break;
		case O_FORCE_RESUME: force_resume = 1; break;
		case O_NO_ROUGE: no_rouge = 1; break;
		case O_ROUGE_MAX: rouge_max = (int)cli_int("--rouge-max-new", optarg, 1, 1 << 16); break;
		case O_JSONL: jsonl_in = 1; break;
		case O_SOURCE: ps.js.field[0] = optarg; jsonl_opt = "--source"; break;
		case O_TARGET: ps.js.field[1] = optarg; jsonl_opt = "--target"; break;
		case O_ID: ps.js.id = optarg; jsonl_opt = "--id"; break;
		case O_SKIPBAD: ps.js.skip_bad = 1; jsonl_opt = "--skip-bad"; break;
		case 'j': jopt = optarg; cli_threads_arg(optarg); break;
		case 'q': quiet = 1; break;
		case O_HELP: usage(); return cli_finish(LC_EXIT_OK);
		case O_VERSION: cli_version();
		default: cli_usage_error("unknown option");
		}
	}
	if (!outdir)
		cli_usage_error("-o OUTDIR is required");
	if (init && config)
		cli_usage_error("-m and --config exclude each other");
	if (evalp && holdout)
		cli_usage_error("--eval and --holdout exclude each other");
	if (hout && !holdout)
		cli_usage_error("--holdout-out needs --holdout N");
	if (jsonl_opt && !jsonl_in)
		cli_usage_error("%s goes with --jsonl", jsonl_opt);
	threads = cli_threads(jopt);

	snprintf(spath, sizeof spath, "%s/trainer_state.json", outdir);
	/* a save killed after its commit is finished, a mixed set refused,
	 * before anything reads OUTDIR */
	if (!restart && exists(outdir) && checkpoint_recover(outdir, &err) < 0)
		cli_die(LC_EXIT_DATA, "resume: %s (--restart starts over)", err.msg);
	if (!restart && exists(spath)) {
		/* resume: OUTDIR is the model */
		init = outdir;
		config = NULL;
	} else if (!init && !config) {
		cli_usage_error("%s holds no checkpoint: give -m INIT or --config JSON", outdir);
	}
	/* before anything is created */
	if (config) {
		cli_check_path("--config", config);
		if (arch_config_check(config, &err) < 0)
			cli_die_source("--config", config, err.msg);
	}
	if (init != outdir)
		cli_check_path("-m/--model", init);
	if (tok)
		cli_check_path("-t/--tokenizer", tok);
	if (evalp && strcmp(evalp, "-") != 0)
		cli_check_path("--eval", evalp);
	if (mkdir(outdir, 0777) < 0 && errno != EEXIST)
		cli_die(LC_EXIT_DATA, "-o/--output %s: %s", outdir, strerror(errno));
	/* the model to start from */
	if (config) {
		lc_err e2;
		snprintf(cfgpath, sizeof cfgpath, "%s/config.json", outdir);
		if (lc_copy_file(config, cfgpath, &e2) < 0)
			cli_die(LC_EXIT_DATA, "%s", e2.msg);
		if (model_write_random(outdir, seed, &e2) < 0)
			cli_die_source("--config", config, e2.msg);
		if (!(m = model_open(outdir, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	} else {
		if (!(m = model_open(init, &err)))
			cli_die_source(init == outdir ? NULL : "-m/--model", init, err.msg);
		snprintf(cfgpath, sizeof cfgpath, "%s/config.json", model_dir(m));
	}
	/* the tokenizer copied into checkpoints */
	if (!tok) {
		static char tb[4096];
		enum share_from from = SHARE_ENV;
		snprintf(tb, sizeof tb, "%s/spiece.model", model_dir(m));
		if (!exists(tb))
			share_path("spiece.model", tb, sizeof tb, &from);
		tok = exists(tb) ? tb : NULL;
		if (!tok && !quiet)
			cli_warn("no spiece.model in %s nor %s (%s): checkpoints hold no tokenizer "
			         "(use -t)", model_dir(m), tb, share_from_name(from));
	}
	{
		static char tcopy[4096];
		/* copy the path: a checkpoint may overwrite the file it came from */
		if (tok) {
			char *real = realpath(tok, NULL);
			snprintf(tcopy, sizeof tcopy, "%s", real ? real : tok);
			free(real);
			tok = tcopy;
		}
	}

	memset(&to, 0, sizeof to);
	to.sched = sched >= 0 ? (enum lr_sched)sched : (config ? LR_INVSQRT : LR_CONSTANT);
	to.lr = lr >= 0 ? lr : (config ? 1e-3 : 1e-4);
	to.warmup = warmup >= 0 ? warmup : (to.sched == LR_INVSQRT ? 100 : 0);
	to.batch_tokens = batch;
	to.dropout = dropout;
	to.clip = clip;
	to.adam.beta1 = 0.9;
	to.adam.beta2 = 0.999;
	to.adam.eps = 1e-8;
	to.adam.weight_decay = wd;
	to.threads = threads;
	to.seed = seed;
	if (init == outdir) {
		/* resuming: the checkpoint's schedule unless given again */
		train_opts saved = to;
		if (train_state_opts(outdir, &saved, &err) < 0)
			cli_die(LC_EXIT_DATA, "resume: %s", err.msg);
		to.lr = lr >= 0 ? lr : saved.lr;
		to.sched = sched >= 0 ? (enum lr_sched)sched : saved.sched;
		to.warmup = warmup >= 0 ? warmup : saved.warmup;
		to.seed = seed_given ? seed : saved.seed;
	}

	/* data */
	memset(&td, 0, sizeof td);
	memset(&ed, 0, sizeof ed);
	ps.max_src = maxsrc;
	ps.max_tgt = maxtgt;
	ps.eos = model_config(m)->eos_id;
	if (jsonl_in) {
		/* the texts are encoded with the tokenizer the checkpoints carry */
		if (!tok)
			cli_die(LC_EXIT_DATA, "--jsonl: no tokenizer to encode the texts with (use -t)");
		if (!(ps.tk = tok_open(tok, &err)))
			cli_die_source(topt ? "-t/--tokenizer" : NULL, topt, err.msg);
	}
	if (optind >= argc)
		read_pairs("-", &ps, &td);
	for (int i = optind; i < argc; i++)
		read_pairs(argv[i], &ps, &td);
	if (holdout) {
		if ((size_t)holdout >= td.n)
			cli_die(LC_EXIT_DATA, "--holdout %" PRId64 " leaves no training pairs (%zu in all)",
			        holdout, td.n);
		if (train_data_split(&td, (size_t)holdout, &ed, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (hout && train_data_write_pairs(&ed, hout, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	if (evalp) {
		read_pairs(evalp, &ps, &ed);
		if (ed.n == 0 && ed.skipped == 0)
			cli_die(LC_EXIT_DATA, "%s: no documents, so no pairs to evaluate on (--eval)",
			        cli_label(evalp));
		if (ed.n == 0)
			cli_die(LC_EXIT_DATA, "%s: no (source, target) pairs to evaluate on (--eval): %zu "
			        "document%s without both i32 \"source\" and \"target\"", cli_label(evalp),
			        ed.skipped, ed.skipped == 1 ? "" : "s");
	}
	if (ps.nbad)
		cli_warn("skipped %llu bad JSON line%s (the first: %s)", (unsigned long long)ps.nbad,
		         ps.nbad == 1 ? "" : "s", ps.first_bad);
	free(ps.first_bad);
	tok_free(ps.tk);
	if (td.n == 0 && jsonl_in)
		cli_die(LC_EXIT_DATA, "no (source, target) pairs in the training input");
	if (td.n == 0)
		cli_die(LC_EXIT_DATA, "no (source, target) pairs in the training input (%zu documents "
		        "without both i32 \"source\" and \"target\")", td.skipped);
	if (train_data_check_vocab(&td, model_config(m)->vocab_size, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	to.data_pairs = td.n;
	to.data_crc = train_data_crc(&td);
	if (init == outdir) {
		char diff[1024];
		int nd = train_state_check(outdir, &to, diff, sizeof diff, &err);
		if (nd < 0)
			cli_die(LC_EXIT_DATA, "resume: %s", err.msg);
		if (nd > 0 && !force_resume)
			cli_die(LC_EXIT_DATA, "resume: %s was trained with other data or options: %s "
			        "(--force-resume continues with these, --restart starts over)", outdir, diff);
		if (nd > 0)
			cli_warn("resuming %s with other data or options (--force-resume): %s", outdir, diff);
	}
	if (!(tr = trainer_new(m, &to, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (init == outdir && trainer_resume(tr, outdir, &err) < 0)
		cli_die(LC_EXIT_DATA, "resume: %s", err.msg);
	model_free(m);
	start_step = trainer_step_count(tr);
	if (!quiet)
		fprintf(stderr, "lc-train: %llu parameters, %zu training pairs%s%zu evaluation pairs, "
		        "%s lr %g (warm-up %" PRId64 "), %d threads, %s at step %" PRId64 "\n",
		        (unsigned long long)trainer_nparams(tr), td.n, td.skipped ? " (some skipped), " : ", ",
		        ed.n, lr_sched_name(to.sched), to.lr, to.warmup, to.threads,
		        start_step ? "resuming" : "starting", start_step);
	if (!(logf = train_log_open(outdir, start_step == 0, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);

	cli_progress_init(&pr, quiet);
	t0 = clock_now();
	while (trainer_step_count(tr) < steps && !stop_signal) {
		train_stats s;
		double el, tps, eta;
		char etas[32];
		int64_t done;

		if (trainer_step(tr, &td, &s, &err) < 0)
			cli_die(LC_EXIT_DATA, "step %" PRId64 ": %s; the last checkpoint in %s is kept",
			        trainer_step_count(tr) + 1, err.msg, outdir);
		tok_done += (double)s.tokens;
		el = clock_now() - t0;
		done = s.step - start_step;
		tps = el > 0 ? tok_done / el : 0;
		eta = done > 0 ? el / (double)done * (double)(steps - s.step) : 0;
		fmt_time(etas, sizeof etas, eta);
		last_eval = NAN;
		if (ed.n && (s.step % eval_every == 0 || s.step == steps)) {
			int64_t nl;
			if (trainer_eval(tr, &ed, &last_eval, &nl, &err) < 0)
				cli_die(LC_EXIT_DATA, "evaluation: %s", err.msg);
		}
		if (train_log_step(logf, &s, tps, last_eval, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		cli_progress(&pr, "step %" PRId64 "/%" PRId64 "  loss %.4f  lr %.2e  %.0f tok/s  ETA %s",
		             s.step, steps, s.loss, s.lr, tps, etas);
		if (!quiet && (s.step % log_every == 0 || !isnan(last_eval) || s.step == steps)) {
			cli_progress_done(&pr);
			fprintf(stderr, "step %" PRId64 "/%" PRId64 "  epoch %" PRId64 "  loss %.4f  lr %.2e"
			        "  |g| %.3g  %.0f tok/s  ETA %s", s.step, steps, s.epoch, s.loss, s.lr,
			        s.gnorm, tps, etas);
			if (!isnan(last_eval))
				fprintf(stderr, "  eval loss %.4f", last_eval);
			fputc('\n', stderr);
		}
		if (s.step % save_every == 0 && s.step < steps && !stop_signal)
			checkpoint(tr, outdir, cfgpath, tok, &ed, !no_rouge, rouge_max, to.threads, quiet);
	}
	cli_progress_done(&pr);
	if (train_log_close(logf, outdir, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	checkpoint(tr, outdir, cfgpath, tok, &ed, !no_rouge && !stop_signal, rouge_max, to.threads,
	           quiet);
	if (!quiet || stop_signal)
		fprintf(stderr, "lc-train: %s at step %" PRId64 "; checkpoint in %s%s\n",
		        stop_signal ? "interrupted" : "done", trainer_step_count(tr), outdir,
		        stop_signal ? " (run the same command again to resume)" : "");
	trainer_free(tr);
	train_data_free(&td);
	train_data_free(&ed);
	return cli_finish(LC_EXIT_OK);
}
