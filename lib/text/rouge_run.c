/*
 * rouge_run: lc-rouge's inputs, their pairing and the scoring loop; see
 * rouge_run.h. Both ways of pairing load a candidate and its references
 * into rouge_docs (load) and score them (score); they differ only in
 * where the texts come from (next_files, next_jsonl). In order, a
 * directory of references (one document per file) is read whole into a
 * map by file name, so that each candidate takes its file whatever the
 * order of the candidates (an archive's members, a stream's documents).
 */
#include "text/rouge_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "stream/idmap.h"
#include "stream/jsonl.h"
#include "text/rouge.h"
#include "text/rouge_jsonl.h"
#include "text/sentence.h"
#include "text/utf8.h"

struct rouge_run {
	rouge_run_opts o;
	char *const *paths;          /* [nin]: the candidates, then each reference input */
	size_t nin, nref;
	char *warned;                /* [nin] */
	rouge_doc cand, *refs;       /* refs[nref] */
	rouge_vocab *v;
	rouge_work *w;
	sentence_splitter *ss;       /* --split-sentences, else NULL */
	sentence_span *spans;
	size_t spcap;
	rouge_report *rep;
	int done;

	/* in order */
	textin **in;                 /* [nin]; NULL for a reference read by name */
	idmap **byname;        /* [nref]: a directory of references by file name, or NULL */
	int dirs;                    /* every input a directory: names must match */
	/* by id */
	rouge_jsonl *j;              /* the candidates (with one input, the references too) */
	idmap **maps;          /* [nref]: the references by id (two inputs or more) */
	idmap *seen;           /* the ids read (one input) */
	jsonl_tally bad;             /* lines skipped (skip_bad) */
};

static const char *label(const char *path)
{
	return !path || strcmp(path, "-") == 0 ? "stdin" : path;
}

static int is_dir(const char *p)
{
	struct stat st;

	return strcmp(p, "-") != 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether reference input path is read whole and paired by file name: a
 * directory, one document per file (the split mode file). */
static int by_name(const rouge_run_opts *o, const char *path)
{
	return !o->jsonl && o->mode == TEXTIN_FILE && is_dir(path);
}

/* The last component of a document's name: an archive member's or a
 * file's path, as a directory of references names its files. */
static const char *base_name(const char *name)
{
	const char *s = strrchr(name, '/');

	return s ? s + 1 : name;
}

/* Puts "NAME: " before err's message; -1. */
static int fail_in(lc_err *err, const char *name)
{
	char m[sizeof err->msg];

	if (!err)
		return -1;
	memcpy(m, err->msg, sizeof m);
	return lc_fail(err, "%s: %s", name, m);
}

void rouge_run_opts_init(rouge_run_opts *o)
{
	memset(o, 0, sizeof *o);
	o->r.samples = 1000;
	o->r.ci = 0.95;
	o->r.fmt = ROUGE_FMT_TABLE;
	rouge_report_types_parse(&o->r, "rouge1,rouge2,rougeLsum", NULL);
	o->mode = TEXTIN_FILE;
	o->idkey = "id";
	o->cand = o->ref = "summary";
}

int rouge_run_check(const rouge_run_opts *o, char *const *paths, size_t n, lc_err *err)
{
	if (o->subset && !o->jsonl) {
		int dir = 0;
		for (size_t i = 1; i < n; i++)
			dir |= by_name(o, paths[i]);
		if (!dir)
			return lc_fail(err, "--subset: only with --jsonl or a directory of references "
			               "(documents paired by id or by file name)");
	}
	if (o->skip_bad && !o->jsonl)
		return lc_fail(err, "--skip-bad: only with --jsonl (bad JSON lines)");
	if (o->jsonl && n == 1) {
		if (strcmp(o->cand, o->ref) == 0)
			return lc_fail(err, "one input holds both texts: --cand and --ref must name two "
			               "fields (both are '%s')", o->cand);
		if (o->subset)
			return lc_fail(err, "--subset: not with one input (each line has both texts)");
	} else if (n < 2) {
		return lc_fail(err, "%s", o->jsonl ? "need CANDIDATES and REFERENCES, or one input "
		                                     "with both"
		                                   : "need CANDIDATES and at least one REFERENCES");
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++)
			if (strcmp(paths[i], "-") == 0 && strcmp(paths[k], "-") == 0)
				return lc_fail(err, "standard input can be read only once");
	return 0;
}

/* Warns, once per input, of a document that is not text: a NUL byte or
 * bytes that are not UTF-8 (rouge-score reads UTF-8 text). */
static void check_text(rouge_run *u, size_t in, const char *name, const char *text, size_t len)
{
	char msg[1024];

	if (u->warned[in] || !u->o.warn)
		return;
	if (utf8_not_text(text, len, label(u->paths[in]), name, "scored as text anyway", msg,
	                  sizeof msg)) {
		u->warned[in] = 1;
		u->o.warn(u->o.ctx, msg);
	}
}

/* Tokenizes text[len] into d (input `in` of the run, for warnings). */
static int load(rouge_run *u, rouge_doc *d, size_t in, const char *name, const char *text,
                size_t len, lc_err *err)
{
	check_text(u, in, name, text, len);
	if (rouge_report_load(u->v, d, u->ss, &u->spans, &u->spcap, text, len, err) < 0)
		return fail_in(err, name);
	return 0;
}

/* Scores the loaded candidate against the loaded references: 1. */
static int score(rouge_run *u, const char *name, lc_err *err)
{
	rouge_score s[ROUGE_MAX_TYPES];

	if (rouge_score_multi(u->w, u->o.r.types, u->o.r.ntypes, &u->cand, u->refs, u->nref, s,
	                      err) < 0 ||
	    rouge_report_add(u->rep, name, s, err) < 0)
		return fail_in(err, name);
	return 1;
}

/* Candidate ndoc (from 0), name, takes its file from the directory of
 * references k: the file named as the name's last component, once. */
static int take_by_name(rouge_run *u, size_t k, size_t ndoc, const char *name,
                        const char **text, size_t *len, lc_err *err)
{
	const char *base = base_name(name), *cpath = label(u->paths[0]);
	char where[64];
	int rc;

	snprintf(where, sizeof where, "document %zu", ndoc + 1);
	if ((rc = idmap_take(u->byname[k], base, where, text, len, err)) > 0)
		return 0;
	if (rc == 0)
		return lc_fail(err, "%s: no file \"%s\" for document %zu \"%s\" of %s (a directory "
		               "of references is paired by file name)", u->paths[1 + k], base,
		               ndoc + 1, name, cpath);
	return lc_fail(err, "%s: document %zu \"%s\": the file \"%s\" of %s was the reference of "
	               "an earlier document of that name", cpath, ndoc + 1, name, base,
	               u->paths[1 + k]);
}

/* At the end of the candidates: every reference of maps (a directory's
 * files by name, or a JSONL input's lines by id) taken, unless subset (or
 * there were no documents at all: "no documents"). */
static int end_untaken(rouge_run *u, idmap *const *maps, int by_id, lc_err *err)
{
	for (size_t k = 0; maps && k < u->nref; k++) {
		const char *id, *where;
		size_t n = maps[k] ? idmap_untaken(maps[k], &id, &where) : 0;
		if (!n || u->o.subset || !rouge_report_count(u->rep))
			continue;
		if (by_id)
			return lc_fail(err, "%s: id \"%.100s\" has no candidate in %s (%zu reference%s "
			               "without one; --subset scores the candidates only)", where, id,
			               label(u->paths[0]), n, n == 1 ? "" : "s");
		return lc_fail(err, "%s: no document of %s is named \"%s\" (%zu file%s without "
		               "one; --subset scores the candidates only)", where,
		               label(u->paths[0]), id, n, n == 1 ? "" : "s");
	}
	return 0;
}

/* In order: the next candidate and the next document of each reference
 * input, all or none (a directory of references: by name). */
static int next_files(rouge_run *u, lc_err *err)
{
	const char *name = NULL, *text, *rname, *rtext;
	size_t len, rlen, ndoc = rouge_report_count(u->rep);
	int rc = textin_next(u->in[0], &name, &text, &len, err);

	if (rc < 0)
		return -1;
	if (rc > 0 && load(u, &u->cand, 0, name, text, len, err) < 0)
		return -1;
	for (size_t k = 0; k < u->nref; k++) {
		const char *rpath = label(u->paths[1 + k]);
		int r2;
		if (u->byname[k]) {
			if (rc > 0 && take_by_name(u, k, ndoc, name, &rtext, &rlen, err) < 0)
				return -1;
			if (rc > 0 && load(u, &u->refs[k], 1 + k, base_name(name), rtext, rlen, err) < 0)
				return -1;
			continue;
		}
		r2 = textin_next(u->in[1 + k], &rname, &rtext, &rlen, err);
		if (r2 < 0)
			return -1;
		if (r2 == 0 && rc > 0)
			return lc_fail(err, "%s: has %zu document%s, but %s has more (next: %s)", rpath,
			               ndoc, ndoc == 1 ? "" : "s", label(u->paths[0]), name);
		if (r2 > 0 && rc == 0)
			return lc_fail(err, "%s: has more than the %zu document%s of %s (next: %s)", rpath,
			               ndoc, ndoc == 1 ? "" : "s", label(u->paths[0]), rname);
		if (rc == 0)
			continue;
		if (u->dirs && strcmp(rname, name) != 0)
			return lc_fail(err, "%s: document %zu is \"%s\", but the candidate is \"%s\"",
			               rpath, ndoc + 1, rname, name);
		if (load(u, &u->refs[k], 1 + k, rname, rtext, rlen, err) < 0)
			return -1;
	}
	return rc == 0 ? end_untaken(u, u->byname, 0, err) : score(u, name, err);
}

/* By id: the next candidate and its references, from the maps or, with
 * one input, from the same line. */
static int next_jsonl(rouge_run *u, lc_err *err)
{
	const char *id, *where, *t;
	size_t l;
	int rc;

	if ((rc = rouge_jsonl_next(u->j, err)) <= 0)
		return rc < 0 ? -1 : end_untaken(u, u->maps, 1, err);
	id = rouge_jsonl_id(u->j);
	where = rouge_jsonl_where(u->j);
	if (u->seen && idmap_add(u->seen, id, where, "", 0, err) < 0)
		return -1;
	t = rouge_jsonl_text(u->j, 0, &l);
	if (load(u, &u->cand, 0, id, t, l, err) < 0)
		return -1;
	for (size_t k = 0; k < u->nref; k++) {
		size_t in = 0;
		if (u->seen) {
			t = rouge_jsonl_text(u->j, 1, &l);
		} else {
			int r2 = idmap_take(u->maps[k], id, where, &t, &l, err);
			if (r2 < 0)
				return -1;
			if (r2 == 0)
				return lc_fail(err, "%s: id \"%.100s\" has no reference in %s", where, id,
				               label(u->paths[1 + k]));
			in = 1 + k;
		}
		if (load(u, &u->refs[k], in, id, t, l, err) < 0)
			return -1;
	}
	return score(u, id, err);
}

static rouge_jsonl *open_jsonl(rouge_run *u, const char *path, const char *f1,
                               const char *f2, lc_err *err)
{
	const char *fields[2] = { f1, f2 };

	return rouge_jsonl_open(path, u->o.idkey, fields, f2 ? 2 : 1,
	                        u->o.skip_bad ? &u->bad : NULL, err);
}

/* Reads reference input k whole into a map by id. */
static int read_refs(rouge_run *u, size_t k, lc_err *err)
{
	rouge_jsonl *j;
	int rc;

	if (!(u->maps[k] = idmap_new(err)) ||
	    !(j = open_jsonl(u, u->paths[1 + k], u->o.ref, NULL, err)))
		return -1;
	while ((rc = rouge_jsonl_next(j, err)) > 0) {
		size_t l;
		const char *t = rouge_jsonl_text(j, 0, &l);
		if (idmap_add(u->maps[k], rouge_jsonl_id(j), rouge_jsonl_where(j), t, l, err) < 0) {
			rc = -1;
			break;
		}
	}
	rouge_jsonl_close(j);
	return rc;
}

/* Reads the directory of references k whole into a map by file name. */
static int read_dir(rouge_run *u, size_t k, lc_err *err)
{
	const char *path = u->paths[1 + k], *name, *text;
	textin *t;
	size_t len;
	int rc;

	if (!(u->byname[k] = idmap_new(err)) || !(t = textin_open(path, TEXTIN_FILE, err)))
		return -1;
	while ((rc = textin_next(t, &name, &text, &len, err)) > 0) {
		char *where;
		size_t pl = strlen(path);
		if (asprintf(&where, "%s%s%s", path, pl && path[pl - 1] == '/' ? "" : "/", name) < 0) {
			rc = lc_fail(err, "out of memory");
			break;
		}
		/* by the last component, as candidates are looked up (a file's
		 * name, an archive member's of an archive in the directory) */
		rc = idmap_add(u->byname[k], base_name(name), where, text, len, err);
		free(where);
		if (rc < 0)
			break;
	}
	textin_close(t);
	return rc;
}

/* The inputs opened: in order (a directory of references read whole),
 * or by id with the references read. */
static int open_inputs(rouge_run *u, lc_err *err)
{
	if (!u->o.jsonl) {
		if (!(u->in = calloc(u->nin, sizeof *u->in)) ||
		    !(u->byname = calloc(u->nref, sizeof *u->byname)))
			return lc_fail(err, "out of memory");
		u->dirs = 1;
		for (size_t i = 0; i < u->nin; i++) {
			if (i > 0 && by_name(&u->o, u->paths[i])) {
				if (read_dir(u, i - 1, err) < 0)
					return -1;
				continue;
			}
			if (!(u->in[i] = textin_open(u->paths[i], u->o.mode, err)))
				return -1;
			if (!is_dir(u->paths[i]))
				u->dirs = 0;
		}
		return 0;
	}
	if (u->nin == 1) {
		if (!(u->j = open_jsonl(u, u->paths[0], u->o.cand, u->o.ref, err)) ||
		    !(u->seen = idmap_new(err)))
			return -1;
		return 0;
	}
	if (!(u->maps = calloc(u->nref, sizeof *u->maps)))
		return lc_fail(err, "out of memory");
	for (size_t k = 0; k < u->nref; k++)
		if (read_refs(u, k, err) < 0)
			return -1;
	return (u->j = open_jsonl(u, u->paths[0], u->o.cand, NULL, err)) ? 0 : -1;
}

rouge_run *rouge_run_new(const rouge_run_opts *o, char *const *paths, size_t n, FILE *out,
                         lc_err *err)
{
	rouge_run *u;

	if (rouge_run_check(o, paths, n, err) < 0)
		return NULL;
	if (!(u = calloc(1, sizeof *u))) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	u->o = *o;
	u->paths = paths;
	u->nin = n;
	u->nref = u->o.r.nref = n > 1 ? n - 1 : 1;
	u->o.r.csv_ids = o->jsonl;
	u->warned = calloc(n, 1);
	u->refs = calloc(u->nref, sizeof *u->refs);
	u->v = rouge_vocab_new(o->r.stem, err);
	u->w = u->v ? rouge_work_new(err) : NULL;
	if (!u->warned || !u->refs || !u->v || !u->w) {
		lc_fail(err, "out of memory");
		goto fail;
	}
	if (o->r.split_sentences && !(u->ss = sentence_new(err)))
		goto fail;
	if (!(u->rep = rouge_report_new(&u->o.r, out, err)) || open_inputs(u, err) < 0)
		goto fail;
	return u;
fail:
	rouge_run_free(u);
	return NULL;
}

void rouge_run_free(rouge_run *u)
{
	if (!u)
		return;
	for (size_t i = 0; u->in && i < u->nin; i++)
		textin_close(u->in[i]);
	free(u->in);
	for (size_t k = 0; u->byname && k < u->nref; k++)
		idmap_free(u->byname[k]);
	free(u->byname);
	rouge_jsonl_close(u->j);
	for (size_t k = 0; u->maps && k < u->nref; k++)
		idmap_free(u->maps[k]);
	free(u->maps);
	idmap_free(u->seen);
	rouge_report_free(u->rep);
	rouge_doc_free(&u->cand);
	for (size_t k = 0; u->refs && k < u->nref; k++)
		rouge_doc_free(&u->refs[k]);
	free(u->refs);
	free(u->warned);
	rouge_work_free(u->w);
	rouge_vocab_free(u->v);
	sentence_free(u->ss);
	jsonl_tally_free(&u->bad);
	free(u->spans);
	free(u);
}

int rouge_run_next(rouge_run *u, lc_err *err)
{
	int rc;

	if (u->done)
		return 0;
	rc = u->in ? next_files(u, err) : next_jsonl(u, err);
	if (rc <= 0)
		u->done = 1;
	return rc;
}

size_t rouge_run_count(const rouge_run *u) { return rouge_report_count(u->rep); }

int rouge_run_finish(rouge_run *u, lc_err *err)
{
	char msg[LC_JSONL_MSG];

	if (jsonl_tally_msg(&u->bad, msg, sizeof msg) && u->o.warn)
		u->o.warn(u->o.ctx, msg);
	if (!rouge_report_count(u->rep))
		return lc_fail(err, "%s: no documents", label(u->paths[0]));
	return rouge_report_finish(u->rep, err);
}
