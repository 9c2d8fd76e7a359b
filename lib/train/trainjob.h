/*
 * trainjob: one lc-train run, from its resolved options to the last
 * checkpoint; what the program does between parsing its options and
 * exiting, in this order:
 *
 *   OUTDIR     a save that crashed after its commit is finished and a
 *              mixed set refused (checkpoint_recover); a checkpoint in it
 *              (trainer_state.json) is resumed unless restart: the model
 *              is OUTDIR, the schedule, lr, warm-up and seed the
 *              checkpoint's unless given again. Else the run starts from
 *              init (fine-tuning) or from random weights for config (its
 *              config.json copied into OUTDIR). Every path given is
 *              checked before OUTDIR is created.
 *   tokenizer  the spiece.model checkpoints carry: the one given, else
 *              the model's, else the share directory's (base/share.h),
 *              else none (a warning); with jsonl it encodes the texts.
 *   data       the pairs of the training inputs (none: standard input)
 *              and the evaluation set (eval, or the last holdout training
 *              pairs, written out with holdout_out), from lc streams
 *              (train_data_read) or JSON Lines (train_data_read_jsonl);
 *              resuming with other data or options than the checkpoint's
 *              (train_state_check) is refused unless force_resume.
 *   training   steps until steps, or *stop at a step's end; loss.tsv
 *              (trainlog.h) with the evaluation loss every eval_every
 *              steps and at the last; a checkpoint every save_every steps
 *              and at the end, each scored with ROUGE on the evaluation
 *              set (traineval.h, rouge.tsv) unless rouge is 0 (or, at
 *              the end, the run was stopped).
 *
 * The job prints nothing: what the program shows on standard error comes
 * through report, formatted, and only when it is to be shown (with quiet:
 * the warnings about the data and the resume, and the note of a stop).
 */
#ifndef LC_TRAINJOB_H
#define LC_TRAINJOB_H

#include <signal.h>
#include <stdint.h>

#include "base/err.h"
#include "stream/jsonl.h"

enum train_report {
	TRAIN_NOTE,             /* a message of the program's (the start, the end) */
	TRAIN_WARN,             /* a warning */
	TRAIN_LINE,             /* a log line, shown as it is */
	TRAIN_PROGRESS_START,   /* the steps begin (text NULL): the progress clock starts */
	TRAIN_PROGRESS,         /* the progress line after a step, redrawn in place */
	TRAIN_PROGRESS_END,     /* clear the progress line (text NULL) */
};

typedef struct train_job {
	const char *init;           /* the model to fine-tune, or NULL */
	const char *config;         /* a config.json for random weights, or NULL */
	const char *outdir;         /* the checkpoint directory (created) */
	const char *tokenizer;      /* spiece.model, or NULL: as above */
	char *const *inputs;        /* [ninputs] training inputs, "-" standard input */
	int ninputs;
	const char *eval;           /* evaluation pairs, or NULL */
	int64_t holdout;            /* or the last holdout training pairs */
	const char *holdout_out;    /* PREFIX: those as PREFIX.src.lc, PREFIX.tgt.lc */
	int jsonl;                  /* the inputs and eval are JSON Lines read with js */
	jsonl_spec js;              /* fields: source, target; default article, abstract */
	int64_t steps;              /* train until step N (1000) */
	int64_t batch_tokens;       /* 8192 */
	int64_t max_src, max_tgt;   /* cuts (1024, 256) */
	double lr;                  /* < 0: 1e-3 with config, else 1e-4 */
	int sched;                  /* enum lr_sched; -1: invsqrt with config, else constant */
	int64_t warmup;             /* < 0: 100 for invsqrt, else 0 */
	double dropout;             /* 0 */
	double weight_decay;        /* 0.01 */
	double clip;                /* 1; 0: off */
	uint64_t seed;              /* 1 */
	int seed_given;             /* seed overrides a resumed checkpoint's */
	int64_t eval_every, save_every, log_every;   /* 100, 500, 10 */
	int rouge;                  /* ROUGE at checkpoints (1) */
	int rouge_max_new;          /* tokens per greedy summary (128) */
	int restart;                /* ignore a checkpoint in outdir */
	int force_resume;           /* resume with other data or options, with a warning */
	int threads;                /* 1 */
	int quiet;                  /* no notes, log lines or progress */
	const volatile sig_atomic_t *stop;   /* non-zero: stop, with a checkpoint; or NULL */
	void (*report)(void *ctx, enum train_report kind, const char *text);   /* or NULL */
	void *ctx;

	/* set by train_job_run when it fails: how the program reports err */
	int err_usage;              /* a usage error: no model to start from */
	const char *err_from;       /* non-NULL: err is about err_path, which the */
	const char *err_path;       /* option err_from gave ("--config") */
	int began;                  /* training had begun (a failure after a stop is its own) */
} train_job;

/* The defaults above; no paths, no report. */
void train_job_init(train_job *j);

/* Runs the job: 0 after the last checkpoint (a stop included); -1 and err
 * (and err_usage, err_from) at the first error, the checkpoint in outdir
 * kept. */
int train_job_run(train_job *j, lc_err *err);

#endif
