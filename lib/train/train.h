/*
 * train: the training loop's library half: (source, target) pairs read
 * from a stream, batches by token budget, one optimizer step (forward and
 * backward of every pair, split over threads; AdamW, clipping, the
 * schedule), evaluation loss, and checkpoints that are model directories.
 *
 * A checkpoint directory holds config.json, model.safetensors (every
 * parameter under its Hugging Face name, float32, tied aliases omitted),
 * the tokenizer's files (spiece.model, or BART's vocab.json, merges.txt
 * and the like: TRAIN_CKPT_COPIES) and generation_config.json when the
 * model had them, and for resuming
 * optimizer.safetensors ("adam.m", "adam.v": the moments, flat, in the
 * order of model.safetensors) and trainer_state.json (step, data
 * position, seed). Files are written to temporary names and renamed, so
 * an interrupted save leaves the previous checkpoint whole.
 *
 * Determinism: the data order is a permutation per epoch drawn from the
 * seed, dropout masks are drawn per (seed, step, pair), and pairs are
 * assigned to threads in a fixed way (thread k takes pairs k, k + n, ...)
 * whose gradients are summed in thread order, so a run's result does not
 * depend on timing (it does on the thread count, through float summation
 * order), and a resumed run is bit-identical to an uninterrupted one.
 */
#ifndef LC_TRAIN_H
#define LC_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "train/adamw.h"
#include "base/err.h"
#include "arch/model.h"
#include "stream/jsonl.h"
#include "text/bpe.h"
#include "text/tokenizer.h"

typedef struct train_pair {
	int32_t *src, *tgt;       /* [ns], [nt] token ids */
	int64_t ns, nt;
	char *name;               /* document name */
} train_pair;

typedef struct train_data {
	train_pair *p;            /* [n] */
	size_t n, cap;
	size_t skipped;           /* documents without a usable source and target */
	char skip_why[320];       /* the first one's name and why, or "" */
	size_t cut_src, cut_tgt;  /* pairs whose source, target was cut to its maximum */
	char tokfp[64];           /* the tokenizer fingerprint of the first source that has one */
	size_t tokfp_other;       /* sources with another */
	int64_t max_src;          /* longest source kept */
} train_data;

/* Appends the pairs of a stream: documents with i32 tensors "source" and
 * "target" (lc-gsg-split -m output, or any tokenized summarization set).
 * Sources longer than max_src and targets longer than max_tgt are cut
 * (keeping eos_id as the last token when the original ended with it).
 * Documents lacking either tensor, or with an empty one, are counted in
 * skipped. */
int train_data_read(FILE *f, const char *label, int64_t max_src, int64_t max_tgt,
                    int32_t eos_id, train_data *d, lc_err *err);
/* The same from the stream at path ("-": standard input, named "stdin"
 * in messages). */
int train_data_read_path(const char *path, int64_t max_src, int64_t max_tgt, int32_t eos_id,
                         train_data *d, lc_err *err);
/* Appends the pairs of the JSON Lines records of j (field 0 the source
 * text, field 1 the target), each named as j names it, both sides encoded
 * with tk as lc-tokenize and lc-gsg-split -m encode (special tokens, </s>
 * last) and then cut as train_data_read cuts: the pairs that
 * train_data_read takes from lc-gsg-split --source --target -m output of
 * the same records. Bad lines j skips are counted by j. */
int train_data_read_jsonl(jsonl *j, lc_tokenizer *tk, int64_t max_src, int64_t max_tgt,
                          int32_t eos_id, train_data *d, lc_err *err);
/* Writes one side of the pairs (0: sources, 1: targets) to path as a
 * "tokens" stream, a document per pair (for lc-encode and lc-detokenize). */
int train_data_write(const train_data *d, int side, const char *path, lc_err *err);
/* Both sides, as PREFIX.src.lc and PREFIX.tgt.lc (a held-out split). */
int train_data_write_pairs(const train_data *d, const char *prefix, lc_err *err);
/* Every source id in [0, vocab), else an error naming the pair. */
int train_data_check_vocab(const train_data *d, int32_t vocab, lc_err *err);
/* Every source and target at most max tokens (a model's positions; 0: no
 * limit), else an error naming the pair and the options that cut. */
int train_data_check_len(const train_data *d, int64_t max, lc_err *err);
/* Moves the last n pairs of src into dst (a held-out split). */
int train_data_split(train_data *src, size_t n, train_data *dst, lc_err *err);
void train_data_free(train_data *d);

typedef struct train_opts {
	double lr;                /* peak learning rate */
	enum lr_sched sched;
	int64_t warmup;           /* steps */
	int64_t batch_tokens;     /* source + target tokens per step (at least one pair) */
	double dropout;
	double clip;              /* max global gradient norm, 0: none */
	adamw_opts adam;
	int threads;
	uint64_t seed;
	/* the training data, recorded in checkpoints and checked on resume */
	uint64_t data_pairs;
	uint32_t data_crc;        /* train_data_crc */
} train_opts;

typedef struct train_stats {
	int64_t step;             /* steps done, after this one */
	double loss;              /* mean token cross-entropy of the batch */
	int64_t tokens;           /* source + target tokens in the batch */
	int64_t labels;           /* target labels counted */
	int pairs;
	double lr, gnorm;         /* learning rate used, gradient norm before clipping */
	int64_t epoch;
} train_stats;

typedef struct trainer trainer;

/* Starts from the weights of m (copied; m may be freed afterwards). */
trainer *trainer_new(lc_model *m, const train_opts *o, lc_err *err);
void trainer_free(trainer *t);
/* Loads optimizer.safetensors and trainer_state.json from dir (a
 * checkpoint of the same model). */
int trainer_resume(trainer *t, const char *dir, lc_err *err);
/* Reads the options a checkpoint was trained with (lr, schedule, warmup,
 * seed) from dir/trainer_state.json into o, for resuming with the same. */
int train_state_opts(const char *dir, train_opts *o, lc_err *err);
/* CRC-32C of the pairs' lengths and ids, in order. */
uint32_t train_data_crc(const train_data *d);
/* Compares dir/trainer_state.json with the options and data of now:
 * returns how many differ (the data, --lr, --seed, --schedule, --warmup,
 * --batch-tokens, --dropout, --clip), each described in diff[n] as
 * "what was -> now"; -1 and err when the state cannot be read. */
int train_state_check(const char *dir, const train_opts *now, char *diff, size_t n, lc_err *err);
int64_t trainer_step_count(const trainer *t);
uint64_t trainer_nparams(const trainer *t);

/* One optimizer step on the next batch of d. */
int trainer_step(trainer *t, const train_data *d, train_stats *s, lc_err *err);

/* Mean token cross-entropy over all pairs of d (no dropout). */
int trainer_eval(trainer *t, const train_data *d, double *loss, int64_t *labels, lc_err *err);

/* Writes a checkpoint into dir (created if needed): config.json copied
 * from config_path, model.safetensors, spiece.model copied from spiece
 * (if non-NULL), and with optimizer non-zero the optimizer state; then
 * checkpoint.json names each file with its size and CRC-32C. The set is
 * replaced as a whole (write-ahead: NAME.tmp files, then the manifest,
 * then the renames, each fsynced), so a crash anywhere leaves the old set
 * or the new one, after checkpoint_recover. */
int trainer_save(trainer *t, const char *dir, const char *config_path, const char *spiece,
                 int optimizer, lc_err *err);
/* The same with the tokenizer's files (and generation_config.json) in
 * copy[ncopy], each copied from `from` under `name` (one of
 * TRAIN_CKPT_COPIES), after config.json; trainer_save is this with
 * spiece.model alone. */
typedef struct train_file {
	const char *from, *name;
} train_file;
#define TRAIN_CKPT_COPIES "spiece.model", BPE_HF_FILES, "generation_config.json", BPE_FAIRSEQ_FILES
/* how many TRAIN_CKPT_COPIES names */
#define TRAIN_CKPT_MAXCOPY \
	((int)(sizeof (const char *[]){ TRAIN_CKPT_COPIES } / sizeof(const char *)))
int trainer_save_files(trainer *t, const char *dir, const char *config_path,
                       const train_file *copy, int ncopy, int optimizer, lc_err *err);

/* Before dir is read: finishes a save that crashed after its commit, then
 * checks every file against checkpoint.json; a file that differs (a mixed
 * or damaged set) is an error naming it. 0 when dir has no manifest. */
int checkpoint_recover(const char *dir, lc_err *err);

#endif
