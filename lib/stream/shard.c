/*
 * Splitting a stream into shards and merging the shards' outputs back;
 * the promises are in shard.h.
 *
 * The writer holds one document back: only when the next one arrives
 * (or the input ends) does it know whether the held one is the last,
 * which gets lc.count so that the merge can tell a lost last shard from
 * the end of the corpus.
 *
 * The merger keeps the next unread document of every input (its "head").
 * Inputs are ascending in lc.index and documents are returned in strict
 * order, so when no head holds the index due next, no input ever will:
 * it is missing. A head below it was returned already: a duplicate.
 */
#include "stream/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/sigclean.h"
/* ---------- splitting ---------- */

struct shard_file {
	char *path;           /* PREFIX.k.lc */
	char *tmp;            /* where it is written until complete */
	FILE *f;
	lc_writer *w;
};

struct lc_shard_writer {
	uint32_t n;
	char split[40];         /* the split's lc.split: "ID/n" */
	struct shard_file *sh;  /* [n] */
	const char **tmps;      /* [n] the temporaries' names, removed on a fatal signal */
	lc_doc held;            /* the last document taken, not yet written */
	int have_held;
	uint64_t count;         /* documents taken; held is number count - 1 */
};

/* "PREFIX.k.lc", and with tmp "PREFIX.k.lc.tmpPID": malloc'd. */
static char *shard_path(const char *prefix, uint32_t k, int tmp)
{
	long pid = tmp ? (long)getpid() : 0;
	int len = tmp ? snprintf(NULL, 0, "%s.%" PRIu32 ".lc.tmp%ld", prefix, k, pid)
	              : snprintf(NULL, 0, "%s.%" PRIu32 ".lc", prefix, k);
	char *p = len < 0 ? NULL : malloc((size_t)len + 1);

	if (p && tmp)
		snprintf(p, (size_t)len + 1, "%s.%" PRIu32 ".lc.tmp%ld", prefix, k, pid);
	else if (p)
		snprintf(p, (size_t)len + 1, "%s.%" PRIu32 ".lc", prefix, k);
	return p;
}

int shard_inputs_check(const char *prefix, uint32_t n, int ninputs, char *const *inputs,
                       lc_err *err)
{
	char dir[4096];

	/* a directory of text documents read while the shards' temporaries
	 * appear in it would read them as documents */
	lc_parent_dir(prefix, dir, sizeof dir);
	for (int i = 0; i < ninputs; i++)
		if (strcmp(inputs[i], "-") && lc_same_file(inputs[i], dir))
			return lc_fail(err, "%s: the shards would be written into this input directory",
			               inputs[i]);
	for (uint32_t k = 0; k < n; k++) {
		char *p = shard_path(prefix, k, 0);
		const char *in;

		if (!p)
			return lc_fail(err, "out of memory");
		in = lc_input_at(p, ninputs, inputs);
		free(p);
		if (in)
			return lc_fail(err, "%s: an input is shard %" PRIu32 "'s output file",
			               strcmp(in, "-") ? in : "stdin", k);
	}
	return 0;
}

void shard_writer_abort(lc_shard_writer *s)
{
	if (!s)
		return;
	if (s->tmps)   /* disarmed before the names it reads are freed */
		sigclean_end();
	for (uint32_t k = 0; s->sh && k < s->n; k++) {
		struct shard_file *f = &s->sh[k];
		stream_writer_abort(f->w);
		if (f->f) {
			fclose(f->f);
			unlink(f->tmp);
		}
		free(f->path);
		free(f->tmp);
	}
	free(s->tmps);
	free(s->sh);
	doc_free(&s->held);
	free(s);
}

/* A split's identity: 64 random bits (the clock and the pid, mixed,
 * where the kernel gives none) and the number of shards. */
static void split_id(char *buf, size_t size, uint32_t n)
{
	uint64_t x;

	if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
		    (uint64_t)getpid() << 40;
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15u;
		x ^= x >> 29;
	}
	snprintf(buf, size, "%016" PRIx64 "/%" PRIu32, x, n);
}

lc_shard_writer *shard_writer_new(const char *prefix, uint32_t n, lc_err *err)
{
	lc_shard_writer *s;

	if (n < 1 || n > SHARD_MAX) {
		lc_fail(err, "%" PRIu32 " shards: the number must be 1 to %d", n, SHARD_MAX);
		return NULL;
	}
	if (!prefix || !*prefix) {
		lc_fail(err, "empty shard file prefix");
		return NULL;
	}
	if (!(s = calloc(1, sizeof *s)) || !(s->sh = calloc(n, sizeof *s->sh))) {
		free(s);
		lc_fail(err, "out of memory");
		return NULL;
	}
	s->n = n;
	split_id(s->split, sizeof s->split, n);
	for (uint32_t k = 0; k < n; k++) {
		struct shard_file *f = &s->sh[k];
		if (!(f->path = shard_path(prefix, k, 0)) || !(f->tmp = shard_path(prefix, k, 1))) {
			lc_fail(err, "out of memory");
			goto fail;
		}
	}
	/* killed by a signal while it writes, no temporary is left behind */
	if (!(s->tmps = malloc(n * sizeof *s->tmps))) {
		lc_fail(err, "out of memory");
		goto fail;
	}
	for (uint32_t k = 0; k < n; k++)
		s->tmps[k] = s->sh[k].tmp;
	sigclean_begin(s->tmps, (int)n, NULL);
	for (uint32_t k = 0; k < n; k++) {
		struct shard_file *f = &s->sh[k];
		int fd;

		/* O_EXCL: never write through a link someone left at the temporary name. */
		if ((fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666)) < 0) {
			lc_fail(err, "%s: %s", f->tmp, strerror(errno));
			goto fail;
		}
		if (!(f->f = fdopen(fd, "wb"))) {
			lc_fail(err, "%s: %s", f->tmp, strerror(errno));
			close(fd);
			unlink(f->tmp);
			goto fail;
		}
		if (!(f->w = stream_writer_new(f->f, err))) {
			lc_prefix(err, "%s", f->tmp);
			goto fail;
		}
	}
	return s;
fail:
	shard_writer_abort(s);
	return NULL;
}

uint64_t shard_count(const lc_shard_writer *s)
{
	return s->count;
}

/* Writes the held document to its shard, tagged; last: it ends the input. */
static int write_held(lc_shard_writer *s, int last, lc_err *err)
{
	uint64_t i = s->count - 1;
	struct shard_file *f = &s->sh[i % s->n];
	int rc;

	rc = meta_setf(&s->held.meta, SHARD_INDEX, err, "%" PRIu64, i);
	if (rc == 0)
		rc = meta_set(&s->held.meta, SHARD_SPLIT, s->split, err);
	if (rc == 0 && last)
		rc = meta_setf(&s->held.meta, SHARD_COUNT, err, "%" PRIu64, s->count);
	if (rc == 0)
		rc = stream_write_doc(f->w, &s->held, err);
	if (rc < 0)
		lc_prefix(err, "%s: document %" PRIu64 " \"%s\"", f->path, i, s->held.name);
	doc_free(&s->held);
	s->have_held = 0;
	return rc;
}

int shard_put(lc_shard_writer *s, lc_doc *d, lc_err *err)
{
	static const char *const keys[] = { SHARD_INDEX, SHARD_COUNT, SHARD_SPLIT };

	for (int j = 0; j < 3; j++) {
		const char *v = meta_get(&d->meta, keys[j]);
		if (v)
			return lc_fail(err, "already has %s=%s (a shard of another split: merge it "
			               "first, lc-cat --merge)", keys[j], v);
	}
	if (s->have_held && write_held(s, 0, err) < 0)
		return -1;
	s->held = *d;
	memset(d, 0, sizeof *d);
	s->have_held = 1;
	s->count++;
	return 0;
}

int shard_writer_close(lc_shard_writer *s, lc_err *err)
{
	uint32_t k;

	if (!s->have_held) {
		lc_fail(err, "no documents to split (an empty split could not be told from lost shards)");
		goto fail;
	}
	if (write_held(s, 1, err) < 0)
		goto fail;
	for (k = 0; k < s->n; k++) {
		struct shard_file *f = &s->sh[k];
		lc_writer *w = f->w;
		FILE *fp = f->f;
		int bad;

		f->w = NULL;
		bad = stream_writer_close(w, err) < 0;
		f->f = NULL;
		/* on disk before the rename names it */
		if (!bad && (fflush(fp) != 0 || fsync(fileno(fp)) < 0))
			bad = lc_fail(err, "write error: %s", strerror(errno));
		if (fclose(fp) != 0 && !bad)
			bad = lc_fail(err, "write error: %s", strerror(errno));
		if (bad) {
			lc_prefix(err, "%s", f->path);
			unlink(f->tmp);
			goto fail;
		}
	}
	for (k = 0; k < s->n; k++)
		if (rename(s->sh[k].tmp, s->sh[k].path) < 0) {
			lc_fail(err, "%s: %s", s->sh[k].path, strerror(errno));
			goto fail;
		}
	{
		/* the renames on disk too */
		char dir[4096];
		lc_parent_dir(s->sh[0].path, dir, sizeof dir);
		shard_writer_abort(s);          /* nothing left to remove: frees */
		return lc_fsync_path(dir, err);
	}
fail:
	/* Temporaries still open are removed by the abort; closed ones here. */
	for (k = 0; k < s->n; k++)
		if (!s->sh[k].f)
			unlink(s->sh[k].tmp);
	shard_writer_abort(s);
	return -1;
}

/* ---------- merging ---------- */

enum head_state { H_EMPTY, H_FULL, H_END };

struct input {
	const char *label;    /* the path as given; "stdin" for "-" */
	FILE *f;
	lc_reader *r;
	lc_doc head;          /* H_FULL: the next document */
	enum head_state state;
	uint64_t idx;         /* H_FULL: the head's lc.index */
	uint64_t last;        /* the lc.index read before it, if any */
	int any;
};

struct lc_merger {
	int n;
	struct input *in;     /* [n] */
	uint64_t next;        /* the lc.index due next */
	uint64_t count;       /* lc.count, once seen */
	int have_count;
	int seen;             /* a document read: split and where are set */
	char *split;          /* its lc.split (NULL: none) */
	char *where;          /* "INPUT, document NAME": for messages */
	uint32_t nshards;     /* from lc.split; 0 if not known */
};

int shard_parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return 0;
	for (; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - d) / 10)
			return 0;
		x = x * 10 + d;
	}
	*v = x;
	return 1;
}

void merge_free(lc_merger *m)
{
	if (!m)
		return;
	for (int i = 0; m->in && i < m->n; i++) {
		struct input *in = &m->in[i];
		stream_reader_free(in->r);
		if (in->f && in->f != stdin)
			fclose(in->f);
		doc_free(&in->head);
	}
	free(m->in);
	free(m->split);
	free(m->where);
	free(m);
}

lc_merger *merge_new(int n, char *const *paths, lc_err *err)
{
	static char *const std[] = { "-" };
	lc_merger *m;
	int nstdin = 0;

	if (n == 0) {
		n = 1;
		paths = std;
	}
	if (!(m = calloc(1, sizeof *m)) || !(m->in = calloc((size_t)n, sizeof *m->in))) {
		free(m);
		lc_fail(err, "out of memory");
		return NULL;
	}
	m->n = n;
	for (int i = 0; i < n; i++) {
		struct input *in = &m->in[i];
		int is_stdin = strcmp(paths[i], "-") == 0;

		in->label = is_stdin ? "stdin" : paths[i];
		if (is_stdin && nstdin++) {
			lc_fail(err, "standard input given twice");
			goto fail;
		}
		if (!(in->f = is_stdin ? stdin : fopen(paths[i], "rb"))) {
			lc_fail(err, "%s: %s", paths[i], strerror(errno));
			goto fail;
		}
		if (lc_input_not_output(in->f, in->label, err) < 0 ||
		    !(in->r = stream_reader_new(in->f, in->label, err)))
			goto fail;
	}
	return m;
fail:
	merge_free(m);
	return NULL;
}

/* Every document of a merge comes from one split: the first read sets
 * it, the others must say the same (an output left from an earlier
 * split of the same corpus would otherwise fill its place silently). */
static int same_split(lc_merger *m, struct input *in, lc_err *err)
{
	const char *v = meta_get(&in->head.meta, SHARD_SPLIT), *n;
	size_t len;

	if (!m->seen) {
		len = strlen(in->label) + strlen(in->head.name) + 16;
		if ((v && !(m->split = strdup(v))) || !(m->where = malloc(len)))
			return lc_fail(err, "out of memory");
		snprintf(m->where, len, "%s, document \"%s\"", in->label, in->head.name);
		if (v && (n = strchr(v, '/'))) {
			uint64_t k;
			if (shard_parse_u64(n + 1, &k) && k >= 1 && k <= SHARD_MAX)
				m->nshards = (uint32_t)k;
		}
		m->seen = 1;
		return 0;
	}
	if (v && m->split && strcmp(v, m->split) == 0)
		return 0;
	if (!v && !m->split)
		return 0;
	return lc_fail(err, "%s: document \"%s\": from another split than %s (%s %s against %s): "
	               "an output left from an earlier split?", in->label, in->head.name, m->where,
	               SHARD_SPLIT, v ? v : "none", m->split ? m->split : "none");
}

/* Reads the next document of in into its head, checking its tags. */
static int read_head(lc_merger *m, struct input *in, lc_err *err)
{
	const char *v, *c;
	uint64_t idx, cnt;
	int rc = stream_read_doc(in->r, &in->head, err);

	if (rc <= 0) {
		in->state = H_END;
		return rc;
	}
	if (!(v = meta_get(&in->head.meta, SHARD_INDEX)))
		return lc_fail(err, "%s: document \"%s\": no %s (not a shard of lc-cat --shard, or a "
		               "program in between dropped the document's metadata)", in->label,
		               in->head.name, SHARD_INDEX);
	if (!shard_parse_u64(v, &idx))
		return lc_fail(err, "%s: document \"%s\": %s '%s' is not a decimal index", in->label,
		               in->head.name, SHARD_INDEX, v);
	if (same_split(m, in, err) < 0)
		return -1;
	if (in->any && idx <= in->last)
		return idx == in->last
		       ? lc_fail(err, "%s: document \"%s\": %s %" PRIu64 " twice in this input (a "
		                 "duplicated document)", in->label, in->head.name, SHARD_INDEX, idx)
		       : lc_fail(err, "%s: document \"%s\": %s %" PRIu64 " after %" PRIu64 " (the "
		                 "documents are not in the order of the split)", in->label,
		                 in->head.name, SHARD_INDEX, idx, in->last);
	if ((c = meta_get(&in->head.meta, SHARD_COUNT))) {
		if (!shard_parse_u64(c, &cnt) || cnt != idx + 1)
			return lc_fail(err, "%s: document \"%s\": %s '%s' on %s %" PRIu64 " (the last "
			               "document of a split carries its index + 1)", in->label,
			               in->head.name, SHARD_COUNT, c, SHARD_INDEX, idx);
		if (m->have_count && cnt != m->count)
			return lc_fail(err, "%s: document \"%s\": %s %" PRIu64 ", another input says %"
			               PRIu64 " (shards of two different splits?)", in->label,
			               in->head.name, SHARD_COUNT, cnt, m->count);
		m->count = cnt;
		m->have_count = 1;
	}
	if (m->have_count && idx >= m->count)
		return lc_fail(err, "%s: document \"%s\": %s %" PRIu64 " beyond the last document (%s %"
		               PRIu64 ")", in->label, in->head.name, SHARD_INDEX, idx, SHARD_COUNT,
		               m->count);
	in->idx = in->last = idx;
	in->any = 1;
	in->state = H_FULL;
	return 1;
}

int merge_next(lc_merger *m, lc_doc *d, lc_err *err)
{
	struct input *best = NULL;

	for (int i = 0; i < m->n; i++)
		if (m->in[i].state == H_EMPTY && read_head(m, &m->in[i], err) < 0)
			return -1;
	if (m->have_count && m->next == m->count) {
		/* All returned: whatever is left has been returned already. */
		for (int i = 0; i < m->n; i++) {
			struct input *in = &m->in[i];
			if (in->state == H_FULL)
				return lc_fail(err, "%s: document \"%s\": %s %" PRIu64 " after the last "
				               "document (%s %" PRIu64 "): a stray or duplicated document",
				               in->label, in->head.name, SHARD_INDEX, in->idx, SHARD_COUNT,
				               m->count);
		}
		doc_free(d);
		return 0;
	}
	for (int i = 0; i < m->n; i++) {
		struct input *in = &m->in[i];
		if (in->state != H_FULL)
			continue;
		if (in->idx < m->next)
			return lc_fail(err, "%s: document \"%s\": %s %" PRIu64 " again (a duplicated "
			               "document or shard)", in->label, in->head.name, SHARD_INDEX, in->idx);
		if (best && in->idx == best->idx)
			return lc_fail(err, "%s %" PRIu64 " twice: %s, document \"%s\", and %s, document "
			               "\"%s\" (a duplicated document or shard)", SHARD_INDEX, in->idx,
			               best->label, best->head.name, in->label, in->head.name);
		if (!best || in->idx < best->idx)
			best = in;
	}
	if (!best) {
		if (m->next == 0)
			return lc_fail(err, "no documents in the inputs (an empty split cannot be told "
			               "from lost shards)");
		return lc_fail(err, "the last document is missing: the inputs end at %s %" PRIu64
		               " and none says it is the last (%s): a lost or failed shard?",
		               SHARD_INDEX, m->next - 1, SHARD_COUNT);
	}
	if (best->idx > m->next) {
		char dealt[80] = "";
		int one = best->idx == m->next + 1;
		if (m->nshards)
			snprintf(dealt, sizeof dealt, " (%s dealt to shard %" PRIu64 " of %" PRIu32 ")",
			         one ? "it was" : "the first was", m->next % m->nshards, m->nshards);
		if (one)
			return lc_fail(err, "document %" PRIu64 " is missing%s: no input holds %s %"
			               PRIu64 " next (a lost or failed shard, or an input not in the "
			               "order of the split?)", m->next, dealt, SHARD_INDEX, m->next);
		return lc_fail(err, "documents %" PRIu64 " to %" PRIu64 " are missing%s: no input "
		               "holds %s %" PRIu64 " next (a lost or failed shard, or an input not in "
		               "the order of the split?)", m->next, best->idx - 1, dealt, SHARD_INDEX,
		               m->next);
	}
	doc_free(d);
	*d = best->head;
	memset(&best->head, 0, sizeof best->head);
	best->state = H_EMPTY;
	meta_del(&d->meta, SHARD_INDEX);
	meta_del(&d->meta, SHARD_COUNT);
	meta_del(&d->meta, SHARD_SPLIT);
	d->index = m->next++;
	return 1;
}
