#include "weights/torchzip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "weights/pickle.h"

/* ------------------------------------------------------------ archive */

typedef struct blob {
	char *key;               /* storage key ("0", "1", ...) */
	unsigned char *data;
	uint64_t len;
} blob;

struct tz_file {
	char *label;
	blob *st;                /* [nst] storages */
	uint32_t nst, capst;
	unsigned char *pkl;
	uint64_t pkllen;
	const char *path;        /* the file, or NULL: buf[len] (kept while reading) */
	const void *buf;
	size_t len;
	json_t *meta;            /* checkpoint mode: the root without the state dict */
	st_tensor *t;            /* [n] */
	unsigned char **owned;   /* [n] copies made for non-contiguous tensors (or NULL) */
	uint32_t n;
	uint32_t *byname;
};

static int fail(tz_file *f, lc_err *err, const char *fmt, const char *a, const char *b)
{
	char m[700];
	snprintf(m, sizeof m, fmt, a ? a : "", b ? b : "");
	return lc_fail(err, "%s: %s", f->label, m);
}

/* Reads the current entry into a fresh buffer, growing as data arrives
 * (the zip's sizes are not trusted: a deflated member of a few MB may
 * inflate to GBs), within limit bytes, what the limit is said in msgs. */
static int read_entry(struct archive *a, uint64_t limit, const char *what, unsigned char **out,
                      uint64_t *len, tz_file *f, const char *name, lc_err *err)
{
	unsigned char *p = NULL;
	uint64_t n = 0, cap = 0;

	for (;;) {
		la_ssize_t got;
		if (n == cap) {
			uint64_t nc = cap ? 2 * cap : 65536;
			unsigned char *q;
			if (nc > limit + 1)
				nc = limit + 1;
			if (nc <= cap) {
				free(p);
				return fail(f, err, "member \"%s\" is larger than %s", name, what);
			}
			if (!(q = realloc(p, nc))) {
				free(p);
				return fail(f, err, "out of memory reading \"%s\"%s", name, "");
			}
			p = q;
			cap = nc;
		}
		got = archive_read_data(a, p + n, (size_t)(cap - n));
		if (got < 0) {
			char m[512];
			snprintf(m, sizeof m, "%s", archive_error_string(a) ? archive_error_string(a) : "read error");
			free(p);
			return fail(f, err, "member \"%s\": %s (truncated or corrupt zip?)", name, m);
		}
		if (got == 0)
			break;
		n += (uint64_t)got;
		if (n > limit) {
			free(p);
			return fail(f, err, "member \"%s\" is larger than %s", name, what);
		}
	}
	*out = p;
	*len = n;
	return 0;
}

/* A storage the state dict needs: its key and the bytes the pickle
 * declares for it (the most, if it is declared more than once). */
typedef struct wanted_st {
	const char *key;
	uint64_t bytes;
} wanted_st;

static int cmp_want(const void *a, const void *b)
{
	return strcmp(((const wanted_st *)a)->key, ((const wanted_st *)b)->key);
}

/* One pass over the archive: with want NULL, its data.pkl; else the
 * storages whose keys are in want[nwant] (sorted by key), each read up to
 * its declared size, every other member skipped unread (a checkpoint's
 * optimizer state is never materialized). */
static int read_zip(tz_file *f, struct archive *a, const wanted_st *want, uint32_t nwant,
                    lc_err *err)
{
	struct archive_entry *ent;
	uint64_t total = 0;
	int r;

	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(ent);
		const char *slash, *base;

		if (!name || archive_entry_filetype(ent) != AE_IFREG)
			continue;
		slash = strchr(name, '/');
		if (!slash)
			continue;
		base = slash + 1;
		const wanted_st *ws = NULL;

		if (want && strncmp(base, "data/", 5) == 0 && base[5] && !strchr(base + 5, '/'))
			ws = bsearch(&(const wanted_st){ base + 5, 0 }, want, nwant, sizeof *want,
			             cmp_want);
		if (!want && strcmp(base, "data.pkl") == 0) {
			if (f->pkl)
				return fail(f, err, "two pickles (\"%s\")%s", name, "");
			if (read_entry(a, TZ_MAX_PICKLE, "the 64 MiB accepted for a pickle", &f->pkl,
			               &f->pkllen, f, name, err) < 0)
				return -1;
		} else if (ws) {
			uint64_t limit = TZ_MAX_TOTAL - total;
			char what[96];
			blob *b;
			for (uint32_t i = 0; i < f->nst; i++)
				if (!strcmp(f->st[i].key, base + 5))
					return fail(f, err, "storage \"%s\" appears twice", base + 5, NULL);
			if (f->nst == f->capst) {
				uint32_t nc = f->capst ? 2 * f->capst : 64;
				blob *q = realloc(f->st, nc * sizeof *q);
				if (!q || nc > (1u << 24)) {
					if (q)
						f->st = q;
					return fail(f, err, "too many storages%s%s", NULL, NULL);
				}
				f->st = q;
				f->capst = nc;
			}
			b = &f->st[f->nst];
			memset(b, 0, sizeof *b);
			if (!(b->key = strdup(base + 5)))
				return fail(f, err, "out of memory%s%s", NULL, NULL);
			f->nst++;
			if (ws->bytes < limit) {
				limit = ws->bytes;
				snprintf(what, sizeof what, "its storage's declared %llu bytes",
				         (unsigned long long)ws->bytes);
			} else {
				snprintf(what, sizeof what, "the 64 GiB accepted for all storages");
			}
			if (read_entry(a, limit, what, &b->data, &b->len, f, name, err) < 0)
				return -1;
			total += b->len;
		} else {
			archive_read_data_skip(a);
		}
	}
	if (r != ARCHIVE_EOF) {
		char m[512];
		snprintf(m, sizeof m, "%s", archive_error_string(a) ? archive_error_string(a) : "bad archive");
		return fail(f, err, "not a readable zip: %s%s (truncated or corrupt?)", m, "");
	}
	if (!want && !f->pkl)
		return fail(f, err, "no ARCHIVE/data.pkl: not a torch.save zip file%s%s", NULL, NULL);
	return 0;
}

/* ------------------------------------------------------------ tensors */

static blob *find_blob(tz_file *f, const char *key)
{
	for (uint32_t i = 0; i < f->nst; i++)
		if (strcmp(f->st[i].key, key) == 0)
			return &f->st[i];
	return NULL;
}

static int make_tensors(tz_file *f, const pk_val *d, lc_err *err)
{
	const char *dup;
	uint32_t n = (uint32_t)(d->n / 2);

	if (d->type != PK_DICT)
		return fail(f, err, "the pickle is not a state dict%s%s", NULL, NULL);
	f->t = calloc(n ? n : 1, sizeof *f->t);
	f->owned = calloc(n ? n : 1, sizeof *f->owned);
	f->byname = calloc(n ? n : 1, sizeof *f->byname);
	if (!f->t || !f->owned || !f->byname)
		return fail(f, err, "out of memory%s%s", NULL, NULL);
	for (uint32_t i = 0; i < n; i++) {
		const pk_val *k = d->it[2 * i], *v = d->it[2 * i + 1], *s;
		st_tensor *t = &f->t[i];
		blob *b;
		size_t es;
		uint64_t numel = 1, ext = 0, stnumel;
		int contig = 1;
		int64_t expect = 1;

		if (k->type != PK_STR || strlen(k->s) != k->n)
			return fail(f, err, "a state dict key is not a string%s%s", NULL, NULL);
		if (v->type != PK_TENSOR)
			return fail(f, err, "\"%s\" is not a tensor%s", k->s, NULL);
		s = v->storage;
		es = st_dtype_size((enum st_dtype)s->dtype);
		if (!(b = find_blob(f, s->s)))
			return fail(f, err, "\"%s\": storage \"%s\" is missing from the archive", k->s, s->s);
		stnumel = b->len / es;
		if (s->numel > stnumel)
			return fail(f, err, "\"%s\": storage \"%s\" is shorter than declared", k->s, s->s);
		t->rank = v->rank;
		for (uint32_t r = 0; r < v->rank; r++) {
			t->dims[r] = v->dims[r];
			if (v->dims[r] && numel > UINT64_MAX / v->dims[r])
				return fail(f, err, "\"%s\": shape overflows%s", k->s, NULL);
			numel *= v->dims[r];
		}
		for (uint32_t r = v->rank; r-- > 0;) {
			if (v->dims[r] != 1 && v->strides[r] != expect)
				contig = 0;
			expect *= (int64_t)(v->dims[r] ? v->dims[r] : 1);
		}
		if (numel) {
			for (uint32_t r = 0; r < v->rank; r++) {
				uint64_t st = (uint64_t)v->strides[r], dm = v->dims[r] - 1;
				if (dm && st > (UINT64_MAX / 2) / dm)
					return fail(f, err, "\"%s\": strides overflow%s", k->s, NULL);
				ext += st * dm;
				if (ext > UINT64_MAX / 4)
					return fail(f, err, "\"%s\": strides overflow%s", k->s, NULL);
			}
			if (v->off > s->numel || ext >= s->numel - v->off)
				return fail(f, err, "\"%s\": view reaches beyond its storage \"%s\"", k->s, s->s);
		}
		if (numel > s->numel && numel)
			return fail(f, err, "\"%s\": more elements than its storage%s", k->s, NULL);
		if (!(t->name = strdup(k->s)))
			return fail(f, err, "out of memory%s%s", NULL, NULL);
		f->n = i + 1;
		t->dtype = (enum st_dtype)s->dtype;
		t->numel = numel;
		t->nbytes = numel * es;
		if (contig || numel == 0) {
			t->data = b->data + v->off * es;
		} else {
			unsigned char *c = malloc(t->nbytes);
			uint64_t idx[ST_MAX_RANK] = { 0 };
			if (!c)
				return fail(f, err, "out of memory%s%s", NULL, NULL);
			for (uint64_t e = 0; e < numel; e++) {
				uint64_t o = v->off;
				for (uint32_t r = 0; r < v->rank; r++)
					o += idx[r] * (uint64_t)v->strides[r];
				memcpy(c + e * es, b->data + o * es, es);
				for (uint32_t r = v->rank; r-- > 0;) {
					if (++idx[r] < v->dims[r])
						break;
					idx[r] = 0;
				}
			}
			f->owned[i] = c;
			t->data = c;
		}
	}
	if (st_index_names(f->t, n, f->byname, &dup) < 0)
		return dup ? fail(f, err, "key \"%s\" appears twice%s", dup, NULL)
		           : fail(f, err, "out of memory%s%s", NULL, NULL);
	return 0;
}

/* ------------------------------------------------------------ reading */

static struct archive *open_archive(tz_file *f, lc_err *err)
{
	struct archive *a = archive_read_new();
	int r;

	if (!a) {
		lc_fail(err, "%s: out of memory", f->label);
		return NULL;
	}
	/* seekable: the central directory is read, so a truncated file is refused */
	archive_read_support_format_zip_seekable(a);
	r = f->path ? archive_read_open_filename(a, f->path, 1 << 16)
	            : archive_read_open_memory(a, f->buf, f->len);
	if (r != ARCHIVE_OK) {
		lc_fail(err, "%s: not a readable zip file (truncated or damaged?): %s", f->label,
		        archive_error_string(a) ? archive_error_string(a) : "cannot open");
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* The storages of the tensors of dict d, sorted by key and unique. */
static wanted_st *wanted(const pk_val *d, uint32_t *n)
{
	wanted_st *w = malloc((d->n / 2 + 1) * sizeof *w);
	uint32_t k = 0;

	if (!w)
		return NULL;
	for (uint64_t i = 0; i + 1 < d->n; i += 2)
		if (d->it[i + 1]->type == PK_TENSOR) {
			const pk_val *s = d->it[i + 1]->storage;
			uint64_t es = st_dtype_size((enum st_dtype)s->dtype);
			w[k].key = s->s;
			w[k++].bytes = es && s->numel <= UINT64_MAX / es ? s->numel * es : UINT64_MAX;
		}
	qsort(w, k, sizeof *w, cmp_want);
	*n = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (*n && !strcmp(w[*n - 1].key, w[i].key)) {
			if (w[i].bytes > w[*n - 1].bytes)
				w[*n - 1].bytes = w[i].bytes;
			continue;
		}
		w[(*n)++] = w[i];
	}
	return w;
}

/* Both passes: the pickle, then the storages the state dict needs. With
 * key non-NULL (checkpoint mode) the state dict is root[key] and the
 * rest of the root becomes f->meta. */
static tz_file *finish(tz_file *f, const char *key, lc_err *err)
{
	struct archive *a;
	pk_pickle *pk = NULL;
	const pk_val *root, *sd;
	wanted_st *want = NULL;
	uint32_t nwant = 0;
	int rc = -1;

	if (!(a = open_archive(f, err)))
		goto out;
	if (read_zip(f, a, NULL, 0, err) < 0) {
		archive_read_free(a);
		goto out;
	}
	archive_read_free(a);
	pk = pk_load(f->pkl, f->pkllen, key != NULL, f->label, "data.pkl", err);
	free(f->pkl);
	f->pkl = NULL;
	if (!pk)
		goto out;
	sd = root = pk_root(pk);
	if (key) {
		if (root->type != PK_DICT) {
			fail(f, err, "the pickle is not a checkpoint (a dict with \"%s\")%s", key, NULL);
			goto out;
		}
		if (!(sd = pk_dict_get(root, key))) {
			fail(f, err, "the checkpoint has no \"%s\" (its state dict)%s", key, NULL);
			goto out;
		}
		if (!(f->meta = json_object()))
			goto oom;
		for (uint64_t i = 0; i + 1 < root->n; i += 2) {
			const pk_val *k = root->it[i];
			json_t *x;
			if (k->type != PK_STR || strlen(k->s) != k->n)
				continue;
			x = root->it[i + 1] == sd
			        ? json_pack("{s:I}", "__state_dict__", (json_int_t)sd->n / 2)
			        : pk_to_json(pk, root->it[i + 1], err);
			if (!x || json_object_set_new(f->meta, k->s, x) < 0) {
				if (!pk_failed(pk))
					goto oom;
				goto out;
			}
		}
	}
	if (sd->type != PK_DICT) {
		fail(f, err, "the pickle is not a state dict%s%s", NULL, NULL);
		goto out;
	}
	if (!(want = wanted(sd, &nwant)))
		goto oom;
	if (nwant) {
		if (!(a = open_archive(f, err)))
			goto out;
		if (read_zip(f, a, want, nwant, err) < 0) {
			archive_read_free(a);
			goto out;
		}
		archive_read_free(a);
	}
	rc = make_tensors(f, sd, err);
	goto out;
oom:
	fail(f, err, "out of memory%s%s", NULL, NULL);
out:
	pk_free(pk);
	free(want);
	free(f->pkl);
	f->pkl = NULL;
	f->path = NULL;
	f->buf = NULL;
	if (rc < 0) {
		tz_close(f);
		return NULL;
	}
	return f;
}

static tz_file *new_file(const char *label, const char *path, const void *buf, size_t len,
                         lc_err *err)
{
	tz_file *f = calloc(1, sizeof *f);

	if (!f || !(f->label = strdup(label))) {
		free(f);
		lc_fail(err, "%s: out of memory", label);
		return NULL;
	}
	f->path = path;
	f->buf = buf;
	f->len = len;
	return f;
}

tz_file *tz_open(const char *path, lc_err *err)
{
	tz_file *f = new_file(path, path, NULL, 0, err);
	return f ? finish(f, NULL, err) : NULL;
}

tz_file *tz_parse(const void *buf, size_t len, const char *label, lc_err *err)
{
	tz_file *f = new_file(label, NULL, buf, len, err);
	return f ? finish(f, NULL, err) : NULL;
}

tz_file *tz_open_ckpt(const char *path, const char *key, lc_err *err)
{
	tz_file *f = new_file(path, path, NULL, 0, err);
	return f ? finish(f, key, err) : NULL;
}

tz_file *tz_parse_ckpt(const void *buf, size_t len, const char *label, const char *key,
                       lc_err *err)
{
	tz_file *f = new_file(label, NULL, buf, len, err);
	return f ? finish(f, key, err) : NULL;
}

const json_t *tz_meta(const tz_file *f) { return f->meta; }

uint32_t tz_count(const tz_file *f) { return f->n; }

const st_tensor *tz_at(const tz_file *f, uint32_t i) { return i < f->n ? &f->t[i] : NULL; }

const st_tensor *tz_find(const tz_file *f, const char *name)
{
	return st_index_find(f->t, f->byname, f->n, name);
}

void tz_close(tz_file *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->nst; i++) {
		free(f->st[i].key);
		free(f->st[i].data);
	}
	free(f->st);
	if (f->t)
		for (uint32_t i = 0; i < f->n; i++) {
			free(f->t[i].name);
			free(f->owned[i]);
		}
	free(f->t);
	free(f->owned);
	free(f->byname);
	free(f->pkl);
	json_decref(f->meta);
	free(f->label);
	free(f);
}
