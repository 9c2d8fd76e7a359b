#include "train/trainlog.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* path opened for appending, or truncated with header written */
static FILE *open_log(const char *path, int fresh, const char *header, lc_err *err)
{
	FILE *f;

	fresh = fresh || access(path, F_OK) != 0;
	if (!(f = fopen(path, fresh ? "w" : "a"))) {
		lc_fail(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fresh && fputs(header, f) == EOF) {
		lc_fail(err, "%s: %s", path, strerror(errno));
		fclose(f);
		return NULL;
	}
	return f;
}

/* path without the lines whose first field is a step after from (the
 * header kept): rewritten whole and renamed over, when it has any. */
static int drop_after(const char *path, int64_t from, lc_err *err)
{
	char tmp[4200], *line = NULL;
	size_t cap = 0;
	FILE *in = fopen(path, "r"), *out = NULL;
	int rc = 0, dropped = 0;
	ssize_t n;

	if (!in)
		return errno == ENOENT ? 0 : lc_fail(err, "%s: %s", path, strerror(errno));
	snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
	if (!(out = fopen(tmp, "w"))) {
		fclose(in);
		return lc_fail(err, "%s: %s", tmp, strerror(errno));
	}
	while ((errno = 0, n = getline(&line, &cap, in)) >= 0) {
		char *end;
		long long step = strtoll(line, &end, 10);
		if (end != line && *end == '\t' && step > from) {
			dropped = 1;
			continue;
		}
		if (fputs(line, out) == EOF)
			break;
	}
	if (ferror(in) || errno || ferror(out))
		rc = lc_fail(err, "%s: %s", path, strerror(errno ? errno : EIO));
	free(line);
	fclose(in);
	if (fclose(out) != 0 && rc == 0)
		rc = lc_fail(err, "%s: %s", tmp, strerror(errno));
	if (rc == 0 && dropped && rename(tmp, path) < 0)
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	if (rc < 0 || !dropped)
		unlink(tmp);
	return rc;
}

FILE *train_log_open(const char *outdir, int64_t from, lc_err *err)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/loss.tsv", outdir);
	if (from > 0 && drop_after(path, from, err) < 0)
		return NULL;
	return open_log(path, from == 0, "step\tepoch\tlr\tloss\tgrad_norm\ttokens_per_s\teval_loss\n",
	                err);
}

int train_log_step(FILE *f, const train_stats *s, double tokens_per_s, double eval_loss,
                   lc_err *err)
{
	int bad = fprintf(f, "%" PRId64 "\t%" PRId64 "\t%.6g\t%.6f\t%.4g\t%.1f\t", s->step, s->epoch,
	                  s->lr, s->loss, s->gnorm, tokens_per_s) < 0;

	bad |= (isnan(eval_loss) ? fputc('\n', f) : fprintf(f, "%.6f\n", eval_loss)) < 0;
	bad |= fflush(f) != 0;
	return bad ? lc_fail(err, "loss.tsv: %s", strerror(errno)) : 0;
}

int train_log_close(FILE *f, const char *outdir, lc_err *err)
{
	if (fclose(f) != 0)
		return lc_fail(err, "%s/loss.tsv: %s", outdir, strerror(errno));
	return 0;
}

int train_log_rouge(const char *outdir, int fresh, int64_t step, const train_rouge *r,
                    lc_err *err)
{
	char path[4096];
	FILE *f;
	int bad;

	snprintf(path, sizeof path, "%s/rouge.tsv", outdir);
	if (!(f = open_log(path, fresh, "step\tpairs\trouge1\trouge2\trougeLsum\n", err)))
		return -1;
	bad = fprintf(f, "%" PRId64 "\t%zu\t%.2f\t%.2f\t%.2f\n", step, r->n, r->r1, r->r2,
	              r->rlsum) < 0;
	bad |= fclose(f) != 0;
	return bad ? lc_fail(err, "%s: %s", path, strerror(errno)) : 0;
}
