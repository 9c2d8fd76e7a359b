/*
 * trainjob.c: an lc-train run from its resolved options (see trainjob.h).
 */
#include "train/trainjob.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fileio.h"
#include "base/share.h"
#include "arch/model.h"
#include "gen/settings.h"
#include "text/tokenizer.h"
#include "train/train.h"
#include "train/traineval.h"
#include "train/trainlog.h"

void train_job_init(train_job *j)
{
	memset(j, 0, sizeof *j);
	j->js.field[0] = "article";
	j->js.field[1] = "abstract";
	j->js.nfield = 2;
	j->steps = 1000;
	j->batch_tokens = 8192;
	j->max_src = 1024;
	j->max_tgt = 256;
	j->lr = -1;
	j->sched = -1;
	j->warmup = -1;
	j->weight_decay = 0.01;
	j->clip = 1.0;
	j->seed = 1;
	j->eval_every = 100;
	j->save_every = 500;
	j->log_every = 10;
	j->rouge = 1;
	j->rouge_max_new = 128;
	j->threads = 1;
}

/* What a run holds between its phases. */
struct run {
	train_job *j;
	int resume;                 /* outdir is the model */
	const char *config;         /* the config.json of random weights, or NULL */
	char cfgpath[4096];         /* the config.json checkpoints copy */
	char tok[4096];             /* the tokenizer (a file or a directory), when has_tok */
	int has_tok;
	lc_tokenizer *tk;           /* tok opened once (NULL if it would not open) */
	/* what checkpoints copy besides config.json: the tokenizer's files
	 * and generation_config.json */
	char from[TRAIN_CKPT_MAXCOPY][4096];
	train_file copy[TRAIN_CKPT_MAXCOPY];
	int ncopy;
	lc_model *m;
	train_opts to;
	train_data td, ed;          /* training and evaluation pairs */
	trainer *tr;
	/* a fresh start into a directory this run made, or found empty: what
	 * it wrote there is taken back if the run fails before training */
	int made_dir, undo;
	int wrote_mark, wrote_cfg, wrote_model;
	int cfg_new;                /* the config.json it wrote was not there before */
};

/* Hands the formatted text to the job's report. */
static void say(const train_job *j, enum train_report kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(const train_job *j, enum train_report kind, const char *fmt, ...)
{
	char small[512], *buf = small;
	va_list ap, aq;
	int n;

	if (!j->report)
		return;
	va_start(ap, fmt);
	va_copy(aq, ap);
	n = vsnprintf(small, sizeof small, fmt, ap);
	if (n >= (int)sizeof small && (buf = malloc((size_t)n + 1)))
		vsnprintf(buf, (size_t)n + 1, fmt, aq);
	else
		buf = small;
	va_end(aq);
	va_end(ap);
	j->report(j->ctx, kind, buf);
	if (buf != small)
		free(buf);
}

static void mark(const train_job *j, enum train_report kind)
{
	if (j->report)
		j->report(j->ctx, kind, NULL);
}

static int stopped(const train_job *j)
{
	return j->stop && *j->stop;
}

static int exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

/* A path given with the option from must name something (none given: no
 * check). */
static int check_path(const char *from, const char *path, lc_err *err)
{
	struct stat sb;

	if (path && stat(path, &sb) < 0)
		return lc_fail(err, "%s %s: %s", from, path, strerror(errno));
	return 0;
}

/* Fails with err, which is about path, given with the option from. */
static int fail_source(train_job *j, const char *from, const char *path)
{
	j->err_from = from;
	j->err_path = path;
	return -1;
}

static int is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* dir holds a byte-level BPE tokenizer (text/tokenizer.h), fairseq's
 * dict.txt + encoder.json + vocab.bpe included */
static int has_bpe(const char *dir)
{
	char a[4096], b[4096];

	snprintf(a, sizeof a, "%s/vocab.json", dir);
	snprintf(b, sizeof b, "%s/merges.txt", dir);
	if (exists(a) && exists(b))
		return 1;
	snprintf(a, sizeof a, "%s/dict.txt", dir);
	snprintf(b, sizeof b, "%s/encoder.json", dir);
	if (exists(a) && exists(b)) {
		snprintf(a, sizeof a, "%s/vocab.bpe", dir);
		if (exists(a))
			return 1;
	}
	snprintf(a, sizeof a, "%s/tokenizer.json", dir);
	return exists(a);
}

/* The tokenizer at path has no id at or above vocab. */
static int fits_vocab(const char *path, int vocab)
{
	lc_err e;
	lc_tokenizer *t = tok_open(path, &e);
	int ok = t && tok_fits_model(t, vocab, &e) == 0;

	tok_free(t);
	return ok;
}

static void add_copy(struct run *r, const char *from, const char *name)
{
	if (r->ncopy >= TRAIN_CKPT_MAXCOPY)
		return;
	snprintf(r->from[r->ncopy], sizeof r->from[r->ncopy], "%s", from);
	r->copy[r->ncopy].from = r->from[r->ncopy];
	r->copy[r->ncopy].name = name;
	r->ncopy++;
}

/* The files of the tokenizer r->tok that checkpoints copy: a
 * SentencePiece model as spiece.model, or the BPE files of its directory
 * (r->tok then becomes that directory, which tok_open reads). */
static void tok_files(struct run *r)
{
	/* transformers' files, then fairseq's (the tokenizer reads fairseq's
	 * three alone when all three are there: a copy of both reads the same) */
	static const char *const bpe[] = { BPE_HF_FILES, BPE_FAIRSEQ_FILES };
	char dir[4096], path[4200];
	const char *slash;
	size_t n;

	if (is_dir(r->tok)) {
		snprintf(path, sizeof path, "%s/spiece.model", r->tok);
		if (exists(path)) {
			snprintf(r->tok, sizeof r->tok, "%s", path);
			add_copy(r, path, "spiece.model");
			return;
		}
		snprintf(dir, sizeof dir, "%s", r->tok);
	} else {
		/* vocab.json, merges.txt, tokenizer.json, fairseq's dict.txt,
		 * encoder.json, vocab.bpe: BPE; anything else SentencePiece */
		n = strlen(r->tok);
		slash = strrchr(r->tok, '/');
		if (!(n >= 5 && !strcmp(r->tok + n - 5, ".json")) &&
		    !(n >= 10 && !strcmp(r->tok + n - 10, "merges.txt")) &&
		    !(n >= 9 && !strcmp(r->tok + n - 9, "vocab.bpe")) &&
		    !(n >= 8 && !strcmp(r->tok + n - 8, "dict.txt"))) {
			add_copy(r, r->tok, "spiece.model");
			return;
		}
		if (slash)
			snprintf(dir, sizeof dir, "%.*s", (int)(slash - r->tok), r->tok);
		else
			snprintf(dir, sizeof dir, ".");
		snprintf(r->tok, sizeof r->tok, "%s", dir);
	}
	for (size_t i = 0; i < sizeof bpe / sizeof *bpe; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, bpe[i]);
		if (exists(path))
			add_copy(r, path, bpe[i]);
	}
}

/* Left in OUTDIR by a fresh start until its first checkpoint: a
 * directory holding it and no checkpoint is this program's own, from a
 * run killed before that (run again, it starts over), not a user's; and
 * no model to load (model_open refuses it). */
static void mark_path(char *path, size_t n, const char *dir)
{
	snprintf(path, n, "%s/" MODEL_FRESH_MARK, dir);
}

/* Whether directory path holds any entry (a file a user may keep). */
/* A directory one may not list (mode 333). */
static int unlisted(const char *path)
{
	DIR *d = opendir(path);

	if (d)
		closedir(d);
	return !d && errno == EACCES;
}

static int has_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int any = 0;

	if (!d)   /* one that cannot be listed (mode 333) may hold a user's files */
		return errno == EACCES;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

/* Whether model (a directory, or a weight file such as a fairseq .pt
 * given directly) lives in directory dir. */
static int model_in(const char *model, const char *dir)
{
	char parent[4096];

	if (!model)
		return 0;
	if (is_dir(model))
		return lc_same_file(model, dir);
	lc_parent_dir(model, parent, sizeof parent);
	return lc_same_file(parent, dir);
}

/* A fresh start that failed before training: the files start() wrote
 * into OUTDIR removed, and OUTDIR too when this run made it, so that no
 * directory is left looking like a model (config.json, random weights)
 * without a checkpoint. */
static void undo_start(struct run *r)
{
	char path[4096], mark[4096];
	lc_err e;

	mark_path(mark, sizeof mark, r->j->outdir);
	if (r->wrote_cfg && (r->undo || r->cfg_new)) {
		snprintf(path, sizeof path, "%s/config.json", r->j->outdir);
		unlink(path);
	}
	if (!r->undo) {
		/* a directory of a user's files (--restart): the mark goes, unless
		 * random weights of this run now stand there */
		if (r->wrote_mark && !r->wrote_model)
			unlink(mark);
		return;
	}
	if (r->wrote_model) {
		snprintf(path, sizeof path, "%s/model.safetensors", r->j->outdir);
		unlink(path);
	}
	/* while anything else is left (a killed run's loss.tsv, --holdout-out
	 * files) the directory stays this program's, marked, and a later run
	 * starts over in it */
	unlink(mark);
	if (has_entries(r->j->outdir))
		lc_write_file(mark, "", 0, &e);
	else if (r->made_dir)
		rmdir(r->j->outdir);
}

/* OUTDIR recovered and resumed or created, every path checked, the model
 * to start from open, the tokenizer of checkpoints chosen. */
static int start(struct run *r, lc_err *err)
{
	train_job *j = r->j;
	const char *init = j->init, *tok;
	char path[4096];

	r->config = j->config;
	snprintf(path, sizeof path, "%s/trainer_state.json", j->outdir);
	/* a save killed after its commit is finished, a mixed set refused,
	 * before anything reads OUTDIR */
	if (!j->restart && exists(j->outdir) && checkpoint_recover(j->outdir, err) < 0) {
		lc_err e = *err;
		return lc_fail(err, "resume: %s (--restart starts over)", e.msg);
	}
	if (!j->restart && exists(path)) {
		r->resume = 1;
		init = j->outdir;
		r->config = NULL;
		mark_path(path, sizeof path, j->outdir);
		unlink(path);   /* a save that committed but was stopped before this */
	} else if (!init && !r->config) {
		j->err_usage = 1;
		return lc_fail(err, "%s holds no checkpoint: give -m INIT or --config JSON", j->outdir);
	}
	/* before anything is created */
	if (r->config && check_path("--config", r->config, err) < 0)
		return -1;
	if (r->config && arch_config_check(r->config, err) < 0)
		return fail_source(j, "--config", r->config);
	if ((!r->resume && check_path("-m/--model", init, err) < 0) ||
	    check_path("-t/--tokenizer", j->tokenizer, err) < 0 ||
	    (j->eval && strcmp(j->eval, "-") != 0 && check_path("--eval", j->eval, err) < 0))
		return -1;
	/* a fresh start writes config.json and random weights into OUTDIR,
	 * and checkpoints replace what is there: never over files a user
	 * keeps in it, unless --restart says so (or -m is OUTDIR itself) */
	mark_path(path, sizeof path, j->outdir);
	if (!r->resume && !j->restart && has_entries(j->outdir) && !exists(path) &&
	    !model_in(init, j->outdir))
		return lc_fail(err, "-o/--output %s: %s but no checkpoint to resume (no "
		               "trainer_state.json); give another directory, or --restart to start "
		               "over in this one", j->outdir, unlisted(j->outdir) ?
		               "cannot be listed (it may hold files)" : "holds files");
	r->undo = !r->resume && (!has_entries(j->outdir) || exists(path));
	if (mkdir(j->outdir, 0777) == 0)
		r->made_dir = 1;
	else if (errno != EEXIST)
		return lc_fail(err, "-o/--output %s: %s", j->outdir, strerror(errno));
	/* not in the -m model itself (fine-tuning in place): it is a model
	 * already, and must stay one if this run fails */
	if (!r->resume && !model_in(init, j->outdir)) {
		r->wrote_mark = 1;
		if (lc_write_file(path, "", 0, err) < 0)
			return -1;
	}
	/* the model to start from */
	if (r->config) {
		snprintf(r->cfgpath, sizeof r->cfgpath, "%s/config.json", j->outdir);
		/* --config OUTDIR/config.json: already in place (a copy onto
		 * itself would truncate it) */
		if (!lc_same_file(r->config, r->cfgpath)) {
			r->cfg_new = !exists(r->cfgpath);
			r->wrote_cfg = 1;
			if (lc_copy_file(r->config, r->cfgpath, err) < 0)
				return -1;
		}
		r->wrote_model = 1;
		if (model_write_random(j->outdir, j->seed, err) < 0)
			return fail_source(j, "--config", r->config);
		if (!(r->m = model_open(j->outdir, MODEL_FRESH, err)))
			return -1;
	} else {
		if (!(r->m = model_open(init, 0, err)))
			return fail_source(j, r->resume ? NULL : "-m/--model", init);
		snprintf(r->cfgpath, sizeof r->cfgpath, "%s/config.json", model_dir(r->m));
		if (model_config_text(r->m)) {
			/* a fairseq checkpoint: checkpoints are lc directories, with the
			 * config.json its arguments translate to */
			const char *txt = model_config_text(r->m);
			snprintf(r->cfgpath, sizeof r->cfgpath, "%s/config.json", j->outdir);
			r->cfg_new = !exists(r->cfgpath);
			r->wrote_cfg = 1;
			if (lc_write_file(r->cfgpath, txt, strlen(txt), err) < 0)
				return -1;
		}
	}
	/* the tokenizer copied into checkpoints */
	if (!(tok = j->tokenizer)) {
		enum share_from from = SHARE_ENV;
		snprintf(path, sizeof path, "%s/spiece.model", model_dir(r->m));
		if (!exists(path) && has_bpe(model_dir(r->m)))
			snprintf(path, sizeof path, "%s", model_dir(r->m));
		else if (!exists(path) && share_path("spiece.model", path, sizeof path, &from) &&
		         !fits_vocab(path, model_config(r->m)->vocab_size))
			path[0] = 0;   /* the share's tokenizer has ids the model has not */
		tok = path[0] && exists(path) ? path : NULL;
		if (!tok && !j->quiet)
			say(j, TRAIN_WARN, "no tokenizer in %s (spiece.model, vocab.json and merges.txt, "
			    "or tokenizer.json) nor a share/spiece.model (%s) that fits its vocabulary: "
			    "checkpoints hold no tokenizer (use -t)", model_dir(r->m),
			    share_from_name(from));
	}
	/* copy the path: a checkpoint may overwrite the file it came from */
	if (tok) {
		char *real;
		if (!is_dir(tok) && lc_regular_file(tok, err) < 0)   /* named as given, not resolved */
			return lc_prefix(err, "the tokenizer copied into every checkpoint");
		real = realpath(tok, NULL);
		snprintf(r->tok, sizeof r->tok, "%s", real ? real : tok);
		free(real);
		r->has_tok = 1;
		tok_files(r);
		/* opened once, for the fit below, the pairs' fingerprints and
		 * --jsonl's texts; the model's own may fail to open where only
		 * its files are copied */
		if (!(r->tk = tok_open_as(r->tok, j->tokenizer ? "-t" : "-m", err)) && (j->tokenizer || j->jsonl))
			return fail_source(j, j->tokenizer ? "-t/--tokenizer" : NULL, j->tokenizer);
	}
	/* one model's: a checkpoint with a tokenizer of more ids than rows
	 * would load nowhere (lc-tokenize and lc-decode refuse it) */
	if (j->tokenizer && tok_fits_model(r->tk, model_config(r->m)->vocab_size, err) < 0)
		return fail_source(j, "-t/--tokenizer", j->tokenizer);
	/* the generation settings follow the model (not a checkpoint's own:
	 * a resumed run copies them from OUTDIR itself) */
	snprintf(path, sizeof path, "%s/generation_config.json", model_dir(r->m));
	if (exists(path))
		add_copy(r, path, "generation_config.json");
	/* what every checkpoint copies is a regular file, found now: one that
	 * is /dev/zero or a FIFO filled the disk or hung at the first save */
	for (int i = 0; i < r->ncopy; i++)
		if (lc_regular_file(r->copy[i].from, err) < 0)
			return lc_prefix(err, "a file copied into every checkpoint");
	return 0;
}

/* The trainer's options: the job's, their defaults, or on resume the
 * checkpoint's schedule unless given again. */
static int options(struct run *r, lc_err *err)
{
	const train_job *j = r->j;
	train_opts *to = &r->to, saved;

	memset(to, 0, sizeof *to);
	to->sched = j->sched >= 0 ? (enum lr_sched)j->sched : r->config ? LR_INVSQRT : LR_CONSTANT;
	to->lr = j->lr >= 0 ? j->lr : r->config ? 1e-3 : 1e-4;
	to->warmup = j->warmup >= 0 ? j->warmup : to->sched == LR_INVSQRT ? 100 : 0;
	to->batch_tokens = j->batch_tokens;
	to->dropout = j->dropout;
	to->clip = j->clip;
	to->adam.beta1 = 0.9;
	to->adam.beta2 = 0.999;
	to->adam.eps = 1e-8;
	to->adam.weight_decay = j->weight_decay;
	to->threads = j->threads;
	to->seed = j->seed;
	if (!r->resume)
		return 0;
	saved = *to;
	if (train_state_opts(j->outdir, &saved, err) < 0)
		return lc_prefix(err, "resume");
	to->lr = j->lr >= 0 ? j->lr : saved.lr;
	to->sched = j->sched >= 0 ? (enum lr_sched)j->sched : saved.sched;
	to->warmup = j->warmup >= 0 ? j->warmup : saved.warmup;
	to->seed = j->seed_given ? j->seed : saved.seed;
	return 0;
}

/* How the pairs are read: lc streams, or JSON Lines encoded with tk. */
struct pair_src {
	int64_t max_src, max_tgt;
	int32_t eos;
	lc_tokenizer *tk;           /* non-NULL: JSON Lines */
	const jsonl_spec *js;
	jsonl_tally bad;            /* bad lines skipped */
};

static int read_pairs(const char *path, struct pair_src *ps, train_data *d, lc_err *err)
{
	jsonl *jl;
	int rc;

	if (!ps->tk)
		return train_data_read_path(path, ps->max_src, ps->max_tgt, ps->eos, d, err);
	if (!(jl = jsonl_open(path, ps->js, err)))
		return -1;
	rc = train_data_read_jsonl(jl, ps->tk, ps->max_src, ps->max_tgt, ps->eos, d, err);
	if (rc == 0)
		rc = jsonl_tally_add(&ps->bad, jl, err);
	jsonl_close(jl);
	return rc;
}

/* --holdout-out's two files are none of the inputs (it wrote the held-out
 * sources over the training stream they came from, and exited 0). */
static int holdout_out_check(const train_job *j, lc_err *err)
{
	for (int side = 0; side < 2; side++) {
		char path[4096];
		const char *in;

		snprintf(path, sizeof path, "%s.%s.lc", j->holdout_out, side ? "tgt" : "src");
		if ((in = lc_input_at(path, j->ninputs, j->inputs)))
			return lc_fail(err, "--holdout-out %s: %s is the training input %s",
			               j->holdout_out, path, strcmp(in, "-") ? in : "(standard input)");
		if (j->eval && lc_same_file(path, j->eval))
			return lc_fail(err, "--holdout-out %s: %s is the --eval input", j->holdout_out,
			               path);
	}
	return 0;
}

/* The training and evaluation pairs, checked against the model. */
static int load_data(struct run *r, lc_err *err)
{
	train_job *j = r->j;
	train_data *td = &r->td, *ed = &r->ed;
	struct pair_src ps = { j->max_src, j->max_tgt, model_config(r->m)->eos_id, NULL, &j->js,
	                       { 0, NULL } };
	char msg[LC_JSONL_MSG];
	int rc = -1;

	if (j->jsonl) {
		/* the texts are encoded with the tokenizer the checkpoints carry */
		if (!r->tk)
			return lc_fail(err, "--jsonl: no tokenizer to encode the texts with (use -t)");
		ps.tk = r->tk;
	}
	if (j->ninputs == 0 && read_pairs("-", &ps, td, err) < 0)
		goto out;
	for (int i = 0; i < j->ninputs; i++)
		if (read_pairs(j->inputs[i], &ps, td, err) < 0)
			goto out;
	/* ids of another tokenizer train without an error when they fall in
	 * the vocabulary, and mean other tokens */
	if (r->tk && td->tokfp[0]) {
		if (strcmp(td->tokfp, tok_fingerprint(r->tk)) != 0)
			say(j, TRAIN_WARN, "the pairs were tokenized with tokenizer %s, not with the "
			    "model's (%s, %s): their ids may stand for other tokens", td->tokfp,
			    r->tok, tok_fingerprint(r->tk));
		else if (td->tokfp_other)
			say(j, TRAIN_WARN, "%zu pairs were tokenized with another tokenizer than the "
			    "model's (%s)", td->tokfp_other, tok_fingerprint(r->tk));
	}
	/* the defaults fit summarization sets, not long-input pretraining:
	 * a cut made silently trains on less than the data holds */
	if (td->cut_src || td->cut_tgt)
		say(j, TRAIN_WARN, "%zu of %zu sources longer than --max-src %" PRId64 " and %zu "
		    "targets longer than --max-tgt %" PRId64 " are cut to their first tokens", td->cut_src,
		    td->n, j->max_src, td->cut_tgt, j->max_tgt);
	if (j->holdout) {
		if ((size_t)j->holdout >= td->n) {
			lc_fail(err, "--holdout %" PRId64 " leaves no training pairs (%zu in all)",
			        j->holdout, td->n);
			goto out;
		}
		if (j->holdout_out && holdout_out_check(j, err) < 0)
			goto out;
		if (train_data_split(td, (size_t)j->holdout, ed, err) < 0 ||
		    (j->holdout_out && train_data_write_pairs(ed, j->holdout_out, err) < 0))
			goto out;
	}
	if (j->eval) {
		const char *label = strcmp(j->eval, "-") == 0 ? "stdin" : j->eval;
		if (read_pairs(j->eval, &ps, ed, err) < 0)
			goto out;
		if (ed->n == 0 && ed->skipped == 0) {
			lc_fail(err, "%s: no documents, so no pairs to evaluate on (--eval)", label);
			goto out;
		}
		if (ed->n == 0) {
			lc_fail(err, "%s: no (source, target) pairs to evaluate on (--eval): %zu "
			        "document%s without both i32 \"source\" and \"target\"", label,
			        ed->skipped, ed->skipped == 1 ? "" : "s");
			goto out;
		}
	}
	if (jsonl_tally_msg(&ps.bad, msg, sizeof msg))
		say(j, TRAIN_WARN, "%s", msg);
	/* a document that is not a pair is left out, and said, not lost silently */
	if (td->skipped && td->n)
		say(j, TRAIN_WARN, "%zu of %zu documents were skipped, no (source, target) pair with "
		    "ids on both sides (the first, %s)", td->skipped, td->skipped + td->n, td->skip_why);
	if (td->n == 0 && j->jsonl)
		lc_fail(err, "no (source, target) pairs in the training input");
	else if (td->n == 0 && td->skipped == 0)
		lc_fail(err, "no documents in the training input");
	else if (td->n == 0)
		lc_fail(err, "no (source, target) pairs in the training input (%zu documents "
		        "without both i32 \"source\" and \"target\"; the first, %s)", td->skipped,
		        td->skip_why);
	else if ((rc = train_data_check_vocab(td, model_config(r->m)->vocab_size, err)) == 0 &&
	         (rc = train_data_check_len(td, model_config(r->m)->max_positions, err)) == 0)
		rc = train_data_check_len(ed, model_config(r->m)->max_positions, err);
out:
	jsonl_tally_free(&ps.bad);
	return rc;
}

/* On resume, the data and options must be the checkpoint's, or
 * force_resume says to go on with these. */
static int check_resume(struct run *r, lc_err *err)
{
	train_job *j = r->j;
	char diff[1024];
	int nd;

	if (!r->resume)
		return 0;
	if ((nd = train_state_check(j->outdir, &r->to, diff, sizeof diff, err)) < 0)
		return lc_prefix(err, "resume");
	if (nd > 0 && !j->force_resume)
		return lc_fail(err, "resume: %s was trained with other data or options: %s "
		               "(--force-resume continues with these, --restart starts over)",
		               j->outdir, diff);
	if (nd > 0)
		say(j, TRAIN_WARN, "resuming %s with other data or options (--force-resume): %s",
		    j->outdir, diff);
	return 0;
}

/* Saves a checkpoint; with an evaluation set and a tokenizer, scores
 * greedy summaries of it into rouge.tsv and a log line. */
static int checkpoint(struct run *r, int rouge, lc_err *err)
{
	const train_job *j = r->j;
	int64_t step = trainer_step_count(r->tr);
	train_rouge sc;
	char path[4096];

	if (trainer_save_files(r->tr, j->outdir, r->cfgpath, r->copy, r->ncopy, 1, err) < 0)
		return lc_prefix(err, "checkpoint");
	mark_path(path, sizeof path, j->outdir);
	unlink(path);   /* the directory holds a checkpoint now */
	if (!rouge || !r->has_tok || !r->ed.n)
		return 0;
	if (train_eval_rouge(j->outdir, r->tok, &r->ed, j->rouge_max_new, r->to.threads, &sc,
	                     err) < 0)
		return lc_prefix(err, "ROUGE evaluation");
	if (train_log_rouge(j->outdir, step == 0, step, &sc, err) < 0)
		return -1;
	if (!j->quiet) {
		/* a line of its own, not appended to the progress line */
		mark(j, TRAIN_PROGRESS_END);
		say(j, TRAIN_LINE, "step %" PRId64 "  greedy summaries of %zu evaluation pairs: "
		    "ROUGE-1 %.2f  ROUGE-2 %.2f  ROUGE-Lsum %.2f", step, sc.n, sc.r1, sc.r2, sc.rlsum);
	}
	return 0;
}

/* h:mm:ss, or m:ss under an hour */
static void fmt_time(char *buf, size_t n, double s)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

/* The steps, their logs and the checkpoints between them. */
static int train_loop(struct run *r, FILE *logf, lc_err *err)
{
	const train_job *j = r->j;
	int64_t start_step = trainer_step_count(r->tr);
	double t0, tok_done = 0;

	if (!j->quiet)
		mark(j, TRAIN_PROGRESS_START);
	t0 = clock_now();
	while (trainer_step_count(r->tr) < j->steps && !stopped(j)) {
		train_stats s;
		double el, tps, eta, eval = NAN;
		char etas[32];
		int64_t done;

		if (trainer_step(r->tr, &r->td, &s, err) < 0) {
			lc_err e = *err;
			char ts[4096];
			snprintf(ts, sizeof ts, "%s/trainer_state.json", j->outdir);
			return exists(ts)
			       ? lc_fail(err, "step %" PRId64 ": %s; the last checkpoint in %s is kept",
			                 trainer_step_count(r->tr) + 1, e.msg, j->outdir)
			       : lc_fail(err, "step %" PRId64 ": %s; no checkpoint was written (%s holds "
			                 "none)", trainer_step_count(r->tr) + 1, e.msg, j->outdir);
		}
		tok_done += (double)s.tokens;
		el = clock_now() - t0;
		done = s.step - start_step;
		tps = el > 0 ? tok_done / el : 0;
		eta = done > 0 ? el / (double)done * (double)(j->steps - s.step) : 0;
		fmt_time(etas, sizeof etas, eta);
		if (r->ed.n && (s.step % j->eval_every == 0 || s.step == j->steps)) {
			int64_t nl;
			if (trainer_eval(r->tr, &r->ed, &eval, &nl, err) < 0)
				return lc_prefix(err, "evaluation");
		}
		if (train_log_step(logf, &s, tps, eval, err) < 0)
			return -1;
		if (!j->quiet)
			say(j, TRAIN_PROGRESS, "step %" PRId64 "/%" PRId64 "  loss %.4f  lr %.2e  "
			    "%.0f tok/s  ETA %s", s.step, j->steps, s.loss, s.lr, tps, etas);
		if (!j->quiet && (s.step % j->log_every == 0 || !isnan(eval) || s.step == j->steps)) {
			char ev[64] = "";
			if (!isnan(eval))
				snprintf(ev, sizeof ev, "  eval loss %.4f", eval);
			mark(j, TRAIN_PROGRESS_END);
			say(j, TRAIN_LINE, "step %" PRId64 "/%" PRId64 "  epoch %" PRId64 "  loss %.4f  "
			    "lr %.2e  |g| %.3g  %.0f tok/s  ETA %s%s", s.step, j->steps, s.epoch, s.loss,
			    s.lr, s.gnorm, tps, etas, ev);
		}
		if (s.step % j->save_every == 0 && s.step < j->steps && !stopped(j) &&
		    checkpoint(r, j->rouge, err) < 0)
			return -1;
	}
	if (!j->quiet)
		mark(j, TRAIN_PROGRESS_END);
	return 0;
}

int train_job_run(train_job *j, lc_err *err)
{
	struct run r;
	FILE *logf = NULL;
	int64_t start_step;
	int rc = -1;

	memset(&r, 0, sizeof r);
	r.j = j;
	j->err_usage = 0;
	j->err_from = j->err_path = NULL;
	if (start(&r, err) < 0 || options(&r, err) < 0 || load_data(&r, err) < 0)
		goto out;
	r.to.data_pairs = r.td.n;
	r.to.data_crc = train_data_crc(&r.td);
	if (check_resume(&r, err) < 0 || !(r.tr = trainer_new(r.m, &r.to, err)))
		goto out;
	if (r.resume && trainer_resume(r.tr, j->outdir, err) < 0) {
		lc_prefix(err, "resume");
		goto out;
	}
	if (j->rouge && r.has_tok && r.ed.n) {
		/* the checkpoints' ROUGE decodes with the model's generation
		 * settings: settings generate() refuses fail now, not after the
		 * first steps */
		gen_settings gs;
		if (gen_settings_init(&gs, r.m, err) < 0)
			goto out;
	}
	model_free(r.m);
	r.m = NULL;
	start_step = trainer_step_count(r.tr);
	if (r.resume && start_step >= j->steps) {
		/* the same command again after it finished: no second save, no
		 * second ROUGE row */
		say(j, TRAIN_NOTE, "%s holds step %" PRId64 ", --steps %" PRId64 ": nothing to do "
		    "(a larger --steps trains on)", j->outdir, start_step, j->steps);
		rc = 0;
		goto out;
	}
	if (stopped(j)) {
		/* the signal came while it started or read its input (before the
		 * read, so no read was interrupted; a GPU's start takes a while):
		 * nothing trained, nothing to save. (One landing between here and
		 * the loop's first look, while loss.tsv opens, still saves the
		 * step it started at.) */
		lc_fail(err, "interrupted before training began");
		goto out;
	}
	if (!j->quiet)
		say(j, TRAIN_NOTE, "%llu parameters, %zu training pairs%s%zu evaluation pairs, "
		    "%s lr %g (warm-up %" PRId64 "), %d threads, %s at step %" PRId64,
		    (unsigned long long)trainer_nparams(r.tr), r.td.n,
		    r.td.skipped ? " (some skipped), " : ", ", r.ed.n, lr_sched_name(r.to.sched),
		    r.to.lr, r.to.warmup, r.to.threads, start_step ? "resuming" : "starting",
		    start_step);
	if (!(logf = train_log_open(j->outdir, start_step, err)))
		goto out;
	j->began = 1;
	if (train_loop(&r, logf, err) < 0)
		goto out;
	rc = train_log_close(logf, j->outdir, err);
	logf = NULL;
	if (rc < 0 || (rc = checkpoint(&r, j->rouge && !stopped(j), err)) < 0)
		goto out;
	{
		int stop = stopped(j);
		if (!j->quiet || stop)
			say(j, TRAIN_NOTE, "%s at step %" PRId64 "; checkpoint in %s%s",
			    stop ? "interrupted" : "done", trainer_step_count(r.tr), j->outdir,
			    stop ? " (run the same command again to resume)" : "");
	}
out:
	if (logf)
		fclose(logf);
	trainer_free(r.tr);
	model_free(r.m);
	tok_free(r.tk);
	if (rc < 0 && !j->began)
		undo_start(&r);
	train_data_free(&r.td);
	train_data_free(&r.ed);
	return rc;
}
