/*
 * checkpoint.c: the trainer's checkpoints: saved atomically as model
 * directories, recovered after an interrupted save, resumed, and their
 * recorded settings compared with a run's (see train.h).
 */
#include "train/train.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/crc32c.h"
#include "base/dtype.h"
#include "base/fault.h"
#include "base/fileio.h"
#include "train/train_int.h"
#include "weights/params.h"
#include "weights/safetensors.h"

static int write_weights(trainer *t, const char *path, lc_err *err)
{
	return params_write(t->P, t->w, path, err);
}

static int write_optim(trainer *t, const char *path, lc_err *err)
{
	st_tensor st[2];

	memset(st, 0, sizeof st);
	st[0].name = "adam.m";
	st[1].name = "adam.v";
	st[0].data = (const unsigned char *)t->m;
	st[1].data = (const unsigned char *)t->v;
	for (int i = 0; i < 2; i++) {
		st[i].dtype = ST_F32;
		st[i].rank = 1;
		st[i].dims[0] = st[i].numel = t->n;
		st[i].nbytes = 4 * t->n;
	}
	return st_write(path, st, 2, err);
}

static int write_state(trainer *t, const char *path, lc_err *err)
{
	json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:s, s:I, s:I}",
	                      "step", (json_int_t)t->step, "epoch", (json_int_t)t->epoch,
	                      "position", (json_int_t)t->pos, "pairs", (json_int_t)t->order_n,
	                      "seed", (json_int_t)(t->o.seed & 0x7fffffffffffffffull),
	                      "lr", t->o.lr, "schedule", lr_sched_name(t->o.sched),
	                      "warmup", (json_int_t)t->o.warmup, "parameters", (json_int_t)t->n);
	char crc[16];
	int rc = 0;

	if (!j)
		return lc_fail(err, "out of memory");
	/* what a resume must find unchanged (train_state_check) */
	snprintf(crc, sizeof crc, "%08x", (unsigned)t->o.data_crc);
	if (json_object_set_new(j, "data_pairs", json_integer((json_int_t)t->o.data_pairs)) < 0 ||
	    json_object_set_new(j, "data_crc32c", json_string(crc)) < 0 ||
	    json_object_set_new(j, "batch_tokens", json_integer((json_int_t)t->o.batch_tokens)) < 0 ||
	    json_object_set_new(j, "dropout", json_real(t->o.dropout)) < 0 ||
	    json_object_set_new(j, "clip", json_real(t->o.clip)) < 0 ||
	    json_object_set_new(j, "weight_decay", json_real(t->o.adam.weight_decay)) < 0) {
		json_decref(j);
		return lc_fail(err, "out of memory");
	}
	if (json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
		rc = lc_fail(err, "%s: cannot write", path);
	json_decref(j);
	return rc;
}

/* A checkpoint is one set of files that must agree (weights, optimizer
 * state, trainer state). It is written as a write-ahead set: every file
 * to NAME.tmp (fsynced), then checkpoint.json naming each with its size
 * and CRC-32C, renamed into place (the commit point), then each NAME.tmp
 * renamed to NAME. A crash before the commit leaves the old set and its
 * manifest; after it, checkpoint_recover finishes the renames. Fault
 * points ("ckpt") sit between the steps for the tests. */

#define MANIFEST "checkpoint.json"

/* Size and CRC-32C of a file. */
static int file_sum(const char *path, uint64_t *bytes, uint32_t *crc, lc_err *err)
{
	FILE *f = fopen(path, "rb");
	unsigned char buf[1 << 16];
	size_t n;

	*bytes = 0;
	*crc = 0;
	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		*crc = lc_crc32c(*crc, buf, n);
		*bytes += n;
	}
	if (ferror(f)) {
		fclose(f);
		return lc_fail(err, "%s: read error", path);
	}
	fclose(f);
	return 0;
}

typedef struct ckpt_file {
	const char *name;
	const char *copy_from;                         /* or the writer */
	int (*writer)(trainer *, const char *, lc_err *);
} ckpt_file;

int trainer_save(trainer *t, const char *dir, const char *config_path, const char *spiece,
                 int optimizer, lc_err *err)
{
	train_file sp = { spiece, "spiece.model" };

	return trainer_save_files(t, dir, config_path, &sp, spiece ? 1 : 0, optimizer, err);
}

int trainer_save_files(trainer *t, const char *dir, const char *config_path,
                       const train_file *copy, int ncopy, int optimizer, lc_err *err)
{
	ckpt_file f[4 + TRAIN_CKPT_MAXCOPY];
	int n = 0, rc = -1, committed = 0;
	char path[4096], tmp[4200];
	json_t *man = NULL, *files;

	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return lc_fail(err, "%s: %s", dir, strerror(errno));
	f[n++] = (ckpt_file){ "model.safetensors", NULL, write_weights };
	f[n++] = (ckpt_file){ "config.json", config_path, NULL };
	if (ncopy > TRAIN_CKPT_MAXCOPY)
		return lc_fail(err, "%s: %d files to copy into a checkpoint (at most %d)", dir, ncopy,
		               TRAIN_CKPT_MAXCOPY);
	for (int i = 0; i < ncopy; i++)
		f[n++] = (ckpt_file){ copy[i].name, copy[i].from, NULL };
	if (optimizer) {
		f[n++] = (ckpt_file){ "optimizer.safetensors", NULL, write_optim };
		f[n++] = (ckpt_file){ "trainer_state.json", NULL, write_state };
	}
	if (!(man = json_pack("{s:I, s:{}}", "step", (json_int_t)t->step, "files")))
		return lc_fail(err, "out of memory");
	files = json_object_get(man, "files");
	for (int i = 0; i < n; i++) {
		uint64_t bytes;
		uint32_t crc;
		char hex[16];
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, f[i].name);
		if ((f[i].copy_from ? lc_copy_file(f[i].copy_from, tmp, err) :
		                      f[i].writer(t, tmp, err)) < 0)
			goto out;
		lc_fault_point("ckpt");
		/* the sum of the bytes on disk, read back after the sync: the
		 * manifest vouches for what a resume will read */
		if (lc_fsync_path(tmp, err) < 0 || file_sum(tmp, &bytes, &crc, err) < 0)
			goto out;
		snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
		json_object_set_new(files, f[i].name,
		                    json_pack("{s:I, s:s}", "bytes", (json_int_t)bytes, "crc32c", hex));
	}
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MANIFEST);
	snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
	if (json_dump_file(man, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0) {
		lc_fail(err, "%s: cannot write", tmp);
		goto out;
	}
	lc_fault_point("ckpt");
	if (lc_fsync_path(tmp, err) < 0)
		goto out;
	if (rename(tmp, path) < 0) {           /* the commit */
		lc_fail(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	committed = 1;
	lc_fault_point("ckpt");
	if (lc_fsync_path(dir, err) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, f[i].name);
		snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
		if (rename(tmp, path) < 0) {
			lc_fail(err, "%s: %s", path, strerror(errno));
			goto out;
		}
		lc_fault_point("ckpt");
	}
	rc = lc_fsync_path(dir, err);
out:
	/* a save that failed before its commit (a full disk) takes its
	 * .tmp files back, which would keep the disk full for the next one;
	 * after the commit they are the set checkpoint_recover finishes */
	if (rc < 0 && !committed) {
		for (int i = 0; i < n; i++) {
			snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, f[i].name);
			remove(tmp);
		}
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MANIFEST);
		remove(tmp);
	}
	json_decref(man);
	return rc;
}

int checkpoint_recover(const char *dir, lc_err *err)
{
	static const char *const known[] = { "model.safetensors", "config.json",
	                                     "optimizer.safetensors", "trainer_state.json",
	                                     TRAIN_CKPT_COPIES };
	char path[4096], tmp[4200];
	json_t *man, *files, *e;
	json_error_t je;
	json_int_t step = 0;
	const char *name;
	int rc = -1;

	snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
	if (access(path, F_OK) != 0)
		return 0;                       /* not an lc checkpoint set (or an older one) */
	if (lc_small_file(path, LC_MAX_JSON_FILE, "checkpoint file", err) < 0)
		return -1;
	if (!(man = json_load_file(path, JSON_REJECT_DUPLICATES, &je)))
		return lc_fail(err, "%s: %s", path, je.text);
	files = json_object_get(man, "files");
	if (json_unpack_ex(man, &je, 0, "{s:I}", "step", &step) < 0 || !json_is_object(files)) {
		json_decref(man);
		return lc_fail(err, "%s: not a checkpoint manifest", path);
	}
	json_object_foreach(files, name, e) {
		json_int_t want_bytes = -1;
		const char *want_crc = NULL;
		uint64_t bytes;
		uint32_t crc;
		char hex[16];
		int known_name = 0;
		for (size_t k = 0; k < sizeof known / sizeof *known; k++)
			known_name |= !strcmp(name, known[k]);
		if (!known_name || json_unpack(e, "{s:I, s:s}", "bytes", &want_bytes, "crc32c",
		                               &want_crc) < 0) {
			lc_fail(err, "%s: a bad entry \"%s\"", path, name);
			goto out;
		}
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		/* committed but not renamed: finish the save */
		if (access(tmp, F_OK) == 0 && file_sum(tmp, &bytes, &crc, err) == 0) {
			snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
			if ((json_int_t)bytes == want_bytes && !strcmp(hex, want_crc) && rename(tmp, path) < 0) {
				lc_fail(err, "%s: %s", path, strerror(errno));
				goto out;
			}
		}
		if (access(path, F_OK) != 0) {
			lc_fail(err, "%s: checkpoint step %lld lacks %s", dir, (long long)step, name);
			goto out;
		}
		if (file_sum(path, &bytes, &crc, err) < 0)
			goto out;
		snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
		if ((json_int_t)bytes != want_bytes || strcmp(hex, want_crc)) {
			lc_fail(err, "%s: %s is not the one checkpoint.json names for step %lld (%llu "
			        "bytes, CRC-32C %s; the manifest says %lld, %s): a mixed or damaged "
			        "checkpoint, not resumed", dir, name, (long long)step,
			        (unsigned long long)bytes, hex, (long long)want_bytes, want_crc);
			goto out;
		}
	}
	/* leftovers of a save that never committed */
	for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
		snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, known[k]);
		remove(tmp);
	}
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, MANIFEST);
	remove(tmp);
	rc = lc_fsync_path(dir, err);
out:
	json_decref(man);
	return rc;
}
/* dir's trainer_state.json (its path into path[n]), or NULL and err. */
static json_t *load_state(const char *dir, char *path, size_t n, lc_err *err)
{
	json_error_t je;
	json_t *j;

	snprintf(path, n, "%s/trainer_state.json", dir);
	if (lc_small_file(path, LC_MAX_JSON_FILE, "checkpoint file", err) < 0)
		return NULL;
	if (!(j = json_load_file(path, 0, &je)))
		lc_fail(err, "%s: %s", path, je.text);
	return j;
}


int trainer_resume(trainer *t, const char *dir, lc_err *err)
{
	char path[4096];
	st_file *f;
	const st_tensor *m, *v;
	json_t *j;
	json_error_t je;
	json_int_t step = 0, epoch = 0, pos = 0, pairs = 0;

	snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
	if (!(f = st_open(path, err)))
		return -1;
	m = st_find(f, "adam.m");
	v = st_find(f, "adam.v");
	if (!m || !v || m->dtype != ST_F32 || v->dtype != ST_F32 || m->numel != t->n ||
	    v->numel != t->n) {
		st_close(f);
		return lc_fail(err, "%s: not the optimizer state of this model (%llu parameters)",
		               path, (unsigned long long)t->n);
	}
	memcpy(t->m, m->data, 4 * t->n);
	memcpy(t->v, v->data, 4 * t->n);
	st_close(f);
	/* a NaN moment would make every weight NaN at the first update, and
	 * the next save would write them over the checkpoint; v, a mean of
	 * squares, is never negative (its square root divides the step) */
	for (int k = 0; k < 2; k++) {
		const float *x = k ? t->v : t->m;
		const char *what;
		int64_t bad = lc_first_nonfinite(x, t->n, &what);
		for (uint64_t i = 0; k && bad < 0 && i < t->n; i++)
			if (x[i] < 0) {
				bad = (int64_t)i;
				what = "negative";
			}
		if (bad >= 0)
			return lc_fail(err, "%s: tensor \"%s\": element %lld is %s", path,
			               k ? "adam.v" : "adam.m", (long long)bad, what);
	}
	if (!(j = load_state(dir, path, sizeof path, err)))
		return -1;
	if (json_unpack_ex(j, &je, 0, "{s:I, s:I, s:I, s:I}", "step", &step, "epoch", &epoch,
	                   "position", &pos, "pairs", &pairs) < 0) {
		json_decref(j);
		return lc_fail(err, "%s: %s", path, je.text);
	}
	json_decref(j);
	if (step < 0 || epoch < 0 || pos < 0 || pairs < 0 || pos > pairs || epoch > step)
		return lc_fail(err, "%s: an impossible state (step %lld, epoch %lld, position %lld of "
		               "%lld pairs)", path, (long long)step, (long long)epoch, (long long)pos,
		               (long long)pairs);
	/* The order is rebuilt from (seed, epoch) over the data trained on
	 * now, as the next step would rebuild it (a save before that step
	 * writes it back): the state's own count may be another data set's
	 * (--force-resume; a position past its end starts the next epoch) or
	 * a damaged file's, which must not size an allocation. The count is
	 * the state's only where the caller does not say (data_pairs 0). */
	if (t->o.data_pairs > 0 && (uint64_t)pairs != t->o.data_pairs) {
		pairs = (json_int_t)t->o.data_pairs;
		pos = pos < pairs ? pos : pairs;
	}
	t->step = step;
	t->epoch = epoch;
	t->pos = (size_t)pos;
	free(t->order);
	t->order = NULL;
	t->order_n = 0;
	if (pairs > 0 && trainer_order(t, (size_t)pairs, err) < 0)
		return lc_prefix(err, "%s", path);
	return 0;
}
/* Appends "; what: was -> now" to buf. */
static void note_diff(char *buf, size_t n, const char *what, const char *was, const char *now)
{
	size_t l = strlen(buf);

	snprintf(buf + l, n - l, "%s%s %s -> %s", l ? "; " : "", what, was, now);
}

/* 1 (and a note) when the state's integer key is not now */
static int diff_int(const json_t *j, const char *key, long long now, const char *flag, char *diff,
                    size_t n)
{
	const json_t *v = json_object_get(j, key);
	char a[32], b[32];

	if (!v || !json_is_integer(v) || json_integer_value(v) == now)
		return 0;
	snprintf(a, sizeof a, "%lld", (long long)json_integer_value(v));
	snprintf(b, sizeof b, "%lld", now);
	note_diff(diff, n, flag, a, b);
	return 1;
}

int train_state_check(const char *dir, const train_opts *now, char *diff, size_t n, lc_err *err)
{
	char path[4096], a[64], b[64];
	json_t *j, *v;
	int count = 0;
	static const char *const reals[] = { "lr", "dropout", "clip", "weight_decay" };
	static const char *const flags[] = { "--lr", "--dropout", "--clip", "--weight-decay" };

	diff[0] = 0;
	if (!(j = load_state(dir, path, sizeof path, err)))
		return -1;
	/* states written before these keys existed are not checked on them */
	if ((v = json_object_get(j, "data_pairs")) && json_is_integer(v) &&
	    (uint64_t)json_integer_value(v) != now->data_pairs) {
		snprintf(a, sizeof a, "%lld pairs", (long long)json_integer_value(v));
		snprintf(b, sizeof b, "%llu pairs", (unsigned long long)now->data_pairs);
		note_diff(diff, n, "the training data", a, b);
		count++;
	} else if ((v = json_object_get(j, "data_crc32c")) && json_is_string(v)) {
		snprintf(b, sizeof b, "%08x", (unsigned)now->data_crc);
		if (strcmp(json_string_value(v), b)) {
			snprintf(a, sizeof a, "CRC-32C %s", json_string_value(v));
			snprintf(b, sizeof b, "CRC-32C %08x", (unsigned)now->data_crc);
			note_diff(diff, n, "the training data (same number of pairs)", a, b);
			count++;
		}
	}
	count += diff_int(j, "batch_tokens", now->batch_tokens, "--batch-tokens", diff, n);
	for (size_t k = 0; k < sizeof reals / sizeof *reals; k++) {
		double x = k == 0 ? now->lr : k == 1 ? now->dropout : k == 2 ? now->clip
		         : now->adam.weight_decay;
		if ((v = json_object_get(j, reals[k])) && json_is_number(v) &&
		    json_number_value(v) != x) {
			snprintf(a, sizeof a, "%g", json_number_value(v));
			snprintf(b, sizeof b, "%g", x);
			note_diff(diff, n, flags[k], a, b);
			count++;
		}
	}
	count += diff_int(j, "seed", (long long)(now->seed & 0x7fffffffffffffffull), "--seed", diff, n);
	count += diff_int(j, "warmup", now->warmup, "--warmup", diff, n);
	if ((v = json_object_get(j, "schedule")) && json_is_string(v) &&
	    strcmp(json_string_value(v), lr_sched_name(now->sched))) {
		note_diff(diff, n, "--schedule", json_string_value(v), lr_sched_name(now->sched));
		count++;
	}
	json_decref(j);
	return count;
}

int train_state_opts(const char *dir, train_opts *o, lc_err *err)
{
	char path[4096];
	json_t *j;
	json_error_t je;
	json_int_t warmup = 0, seed = 0;
	double lr = 0;
	const char *sched = NULL;
	enum lr_sched ls;

	if (!(j = load_state(dir, path, sizeof path, err)))
		return -1;
	if (json_unpack_ex(j, &je, 0, "{s:F, s:s, s:I, s:I}", "lr", &lr, "schedule", &sched,
	                   "warmup", &warmup, "seed", &seed) < 0 || lr_sched_parse(sched, &ls) < 0 ||
	    lr < 0 || warmup < 0 || seed < 0) {
		json_decref(j);
		return lc_fail(err, "%s: bad training state", path);
	}
	o->lr = lr;
	o->sched = ls;
	o->warmup = warmup;
	o->seed = (uint64_t)seed;
	json_decref(j);
	return 0;
}
