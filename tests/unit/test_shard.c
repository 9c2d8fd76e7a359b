/* test_shard: a stream dealt round-robin into N shards and merged back
 * (stream/shard.h): the round trip byte for byte for N = 1..5 over 1..9
 * documents, what each shard holds (lc.index, lc.count on the last), the
 * refusals of the split, every error of the merge with the index it names,
 * and meta_del (stream/stream.h), which the merge uses to drop the tags. */
#include "t.h"

#include <dirent.h>
#include <inttypes.h>
#include <unistd.h>

#include "stream/shard.h"
#include "stream/stream.h"

static char dir[64];

/* The directory's path + "/" + name, in one of a few rotating buffers. */
static const char *at(const char *name)
{
	static char buf[8][256];
	static int k;
	char *p = buf[k++ % 8];

	snprintf(p, sizeof buf[0], "%s/%s", dir, name);
	return p;
}

/* The number of entries in the directory (temporaries included). */
static int nfiles(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void clean(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlink(at(e->d_name));
	if (d)
		closedir(d);
}

/* Document i, always the same: a name, 0 to 2 metadata entries, and a
 * tensor of i + 1 ids unless i % 4 == 3 (a document with no records). */
static void make_doc(lc_doc *d, int i)
{
	char name[32];
	lc_err err;

	snprintf(name, sizeof name, "doc-%d", i);
	T_OK(doc_init(d, name, &err) == 0, "%s", err.msg);
	if (i % 3 >= 1)
		meta_setf(&d->meta, "source", &err, "file%d.txt", i);
	if (i % 3 == 2)
		meta_set(&d->meta, "piece", "a\tb", &err);
	if (i % 4 != 3) {
		uint64_t n = (uint64_t)i + 1;
		lc_tensor *t = doc_add_tensor(d, "tokens", LC_I32, 1, &n, &err);
		T_OK(t != NULL, "%s", err.msg);
		for (uint64_t k = 0; t && k < n; k++)
			((int32_t *)t->data)[k] = (int32_t)(i * 100 + (int)k);
	}
}

/* The stream of documents 0..n-1, as one machine writes it: buf[*len]. */
static char *expected(int n, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	lc_err err;
	lc_writer *w = stream_writer_new(f, &err);

	for (int i = 0; i < n; i++) {
		lc_doc d = {0};
		make_doc(&d, i);
		T_OK(stream_write_doc(w, &d, &err) == 0, "%s", err.msg);
		doc_free(&d);
	}
	T_OK(stream_writer_close(w, &err) == 0, "%s", err.msg);
	fclose(f);
	return buf;
}

/* Splits documents 0..n-1 into N shards "s.k.lc": 0 or -1 (err). */
static int split(uint32_t N, int n, lc_err *err)
{
	lc_shard_writer *s = shard_writer_new(at("s"), N, err);

	if (!s)
		return -1;
	for (int i = 0; i < n; i++) {
		lc_doc d = {0};
		make_doc(&d, i);
		if (shard_put(s, &d, err) < 0) {
			doc_free(&d);
			shard_writer_abort(s);
			return -1;
		}
		T_OK(d.name == NULL && d.nrec == 0 && d.meta.n == 0, "shard_put leaves d empty");
		T_EQ_I(shard_count(s), i + 1);
	}
	return shard_writer_close(s, err);
}

/* Merges the files paths[0..n) into buf[*len] (a stream): 0, or -1 and err. */
static int merge(int n, char *const *paths, char **buf, size_t *len, lc_err *err)
{
	lc_merger *m = merge_new(n, paths, err);
	FILE *f = open_memstream(buf, len);
	lc_writer *w = stream_writer_new(f, err);
	lc_doc d = {0};
	uint64_t k = 0;
	int rc = -1;

	if (m) {
		while ((rc = merge_next(m, &d, err)) > 0) {
			T_EQ_I(d.index, k);
			T_OK(!meta_get(&d.meta, SHARD_INDEX) && !meta_get(&d.meta, SHARD_COUNT),
			     "the tags are removed");
			k++;
			if (stream_write_doc(w, &d, err) < 0) {
				rc = -1;
				break;
			}
		}
	}
	doc_free(&d);
	merge_free(m);
	stream_writer_close(w, NULL);
	fclose(f);
	return rc;
}

/* The documents of one stream file: their names and lc.index/lc.count as
 * "name:index[/count] ..." into out[n]. */
static void shard_info(const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "rb");
	lc_err err;
	lc_reader *r = f ? stream_reader_new(f, path, &err) : NULL;
	lc_doc d = {0};
	size_t used = 0;
	int rc;

	out[0] = 0;
	T_OK(r != NULL, "%s opens", path);
	while (r && (rc = stream_read_doc(r, &d, &err)) > 0) {
		const char *c = meta_get(&d.meta, SHARD_COUNT), *ix = meta_get(&d.meta, SHARD_INDEX);
		const char *sp = meta_get(&d.meta, SHARD_SPLIT);
		/* the tags come after the document's own metadata: lc.index,
		 * lc.split, then (on the last) lc.count */
		T_OK(ix && strcmp(d.meta.kv[d.meta.n - 2 - (c != NULL)].key, SHARD_INDEX) == 0 &&
		     strcmp(d.meta.kv[d.meta.n - 1 - (c != NULL)].key, SHARD_SPLIT) == 0,
		     "%s: lc.index and lc.split last", d.name);
		T_OK(sp && strlen(sp) > 17 && sp[16] == '/', "%s: lc.split \"%s\" is ID/N", d.name,
		     sp ? sp : "");
		used += (size_t)snprintf(out + used, n - used, "%s%s:%s%s%s", used ? " " : "", d.name,
		                         ix ? ix : "?", c ? "/" : "", c ? c : "");
	}
	doc_free(&d);
	stream_reader_free(r);
	if (f)
		fclose(f);
}

static void test_round_trip(void)
{
	for (uint32_t N = 1; N <= 5; N++)
		for (int n = 1; n <= 9; n++) {
			char *paths[5], *want, *got = NULL;
			size_t wlen, glen = 0;
			lc_err err;

			clean();
			if (!T_OK(split(N, n, &err) == 0, "N=%u n=%d: %s", N, n, err.msg))
				continue;
			T_EQ_I(nfiles(), N);   /* the shards, no temporaries */
			for (uint32_t k = 0; k < N; k++) {
				char name[16];
				snprintf(name, sizeof name, "s.%u.lc", k);
				paths[N - 1 - k] = strdup(at(name));   /* given in reverse: any order works */
			}
			want = expected(n, &wlen);
			T_OK(merge((int)N, paths, &got, &glen, &err) == 0, "N=%u n=%d: %s", N, n, err.msg);
			T_OK(glen == wlen && memcmp(got, want, wlen) == 0,
			     "N=%u n=%d: split and merge give the input byte for byte", N, n);
			for (uint32_t k = 0; k < N; k++)
				free(paths[k]);
			free(want);
			free(got);
		}
}

static void test_shards(void)
{
	char info[512];
	lc_err err;

	/* 7 into 3: shard k holds k, k + 3, ...; the last document says 7 */
	clean();
	T_OK(split(3, 7, &err) == 0, "%s", err.msg);
	shard_info(at("s.0.lc"), info, sizeof info);
	T_EQ_S(info, "doc-0:0 doc-3:3 doc-6:6/7");
	shard_info(at("s.1.lc"), info, sizeof info);
	T_EQ_S(info, "doc-1:1 doc-4:4");
	shard_info(at("s.2.lc"), info, sizeof info);
	T_EQ_S(info, "doc-2:2 doc-5:5");
	/* more shards than documents: the rest are valid empty streams */
	clean();
	T_OK(split(5, 2, &err) == 0, "%s", err.msg);
	shard_info(at("s.1.lc"), info, sizeof info);
	T_EQ_S(info, "doc-1:1/2");
	for (int k = 2; k < 5; k++) {
		char name[16];
		snprintf(name, sizeof name, "s.%d.lc", k);
		shard_info(at(name), info, sizeof info);
		T_EQ_S(info, "");
	}
}

static void test_split_refuses(void)
{
	lc_shard_writer *s;
	lc_doc d = {0};
	lc_err err;

	clean();
	T_OK(shard_writer_new(at("s"), 0, &err) == NULL, "0 shards");
	T_OK(strstr(err.msg, "must be 1 to 4096") != NULL, "%s", err.msg);
	T_OK(shard_writer_new(at("s"), SHARD_MAX + 1, &err) == NULL, "too many shards");
	T_OK(shard_writer_new("", 2, &err) == NULL, "an empty prefix");
	T_OK(shard_writer_new(at("nodir/s"), 2, &err) == NULL, "an unwritable prefix");
	T_OK(strstr(err.msg, "nodir/s.0.lc.tmp") != NULL, "names the file: %s", err.msg);
	T_EQ_I(nfiles(), 0);

	/* no documents: an error, and nothing left behind */
	T_OK((s = shard_writer_new(at("s"), 3, &err)) != NULL, "%s", err.msg);
	T_EQ_I(nfiles(), 3);   /* the temporaries */
	T_OK(access(at("s.0.lc"), F_OK) != 0, "no shard in place before the close");
	T_EQ_I(shard_count(s), 0);
	T_EQ_I(shard_writer_close(s, &err), -1);
	T_OK(strstr(err.msg, "no documents to split") != NULL, "%s", err.msg);
	T_EQ_I(nfiles(), 0);

	/* a shard of another split, by either tag; abort removes the temporaries */
	T_OK((s = shard_writer_new(at("s"), 2, &err)) != NULL, "%s", err.msg);
	make_doc(&d, 0);
	T_EQ_I(shard_put(s, &d, &err), 0);
	make_doc(&d, 1);
	meta_set(&d.meta, SHARD_INDEX, "4", &err);
	T_EQ_I(shard_put(s, &d, &err), -1);
	T_OK(strstr(err.msg, "already has lc.index=4") && strstr(err.msg, "merge it first"), "%s",
	     err.msg);
	T_OK(d.name && strcmp(d.name, "doc-1") == 0, "a refused document stays the caller's");
	meta_del(&d.meta, SHARD_INDEX);
	meta_set(&d.meta, SHARD_COUNT, "9", &err);
	T_EQ_I(shard_put(s, &d, &err), -1);
	T_OK(strstr(err.msg, "already has lc.count=9") != NULL, "%s", err.msg);
	T_EQ_I(shard_count(s), 1);
	doc_free(&d);
	shard_writer_abort(s);
	T_EQ_I(nfiles(), 0);
	shard_writer_abort(NULL);
}

/* A stream file of documents tagged as spec says: space-separated tokens
 * "I" (lc.index I), "I/C" (and lc.count C), "~" (an empty lc.index), "."
 * (no tags); each named "tK" by its place K in the file, with one more
 * entry, keep=x. spec "" makes a stream with no documents. */
static void tagged(const char *name, const char *spec)
{
	FILE *f = fopen(at(name), "wb");
	lc_err err;
	lc_writer *w = stream_writer_new(f, &err);
	char *copy = strdup(spec), *save = NULL;
	int k = 0;

	for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		lc_doc d = {0};
		char dn[16], *slash = strchr(tok, '/');

		snprintf(dn, sizeof dn, "t%d", k++);
		doc_init(&d, dn, &err);
		meta_set(&d.meta, "keep", "x", &err);
		if (slash)
			*slash = 0;
		if (strcmp(tok, ".") != 0)
			meta_set(&d.meta, SHARD_INDEX, strcmp(tok, "~") == 0 ? "" : tok, &err);
		if (slash)
			meta_set(&d.meta, SHARD_COUNT, slash + 1, &err);
		T_OK(stream_write_doc(w, &d, &err) == 0, "%s", err.msg);
		doc_free(&d);
	}
	T_OK(stream_writer_close(w, &err) == 0, "%s", err.msg);
	fclose(f);
	free(copy);
}

/* Merges the files named in names (space-separated; "-": standard
 * input): the number of documents returned before an error (message in
 * err), -1 at a clean end (err empty), -2 if merge_new failed. */
static int merge_err(const char *names, lc_err *err)
{
	char *paths[8], *copy = strdup(names), *save = NULL;
	int n = 0, rc, ndoc = 0;
	lc_merger *m;
	lc_doc d = {0};

	for (char *tok = strtok_r(copy, " ", &save); tok && n < 8; tok = strtok_r(NULL, " ", &save))
		paths[n++] = strdup(strcmp(tok, "-") == 0 ? "-" : at(tok));
	err->msg[0] = 0;
	if (!(m = merge_new(n, paths, err))) {
		rc = -2;
	} else {
		while ((rc = merge_next(m, &d, err)) > 0) {
			T_EQ_S(meta_get(&d.meta, "keep"), "x");
			T_EQ_I(d.index, ndoc);
			ndoc++;
		}
		rc = rc < 0 ? ndoc : -1;
	}
	doc_free(&d);
	merge_free(m);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(copy);
	return rc;
}

static void test_merge_errors(void)
{
	static const struct {
		const char *files;   /* "a b ...": the inputs */
		int ndoc;            /* documents returned before the error */
		const char *msg;     /* a part of the message */
	} bad[] = {
		/* a lost shard: documents missing, the index named */
		{"a0 a2", 1, "document 1 is missing: no input holds lc.index 1 next (a lost or failed shard, or an input not in the order of the split?)"},
		{"b0 b3", 1, "documents 1 to 2 are missing: no input holds lc.index 1"},
		{"a1 a2", 0, "document 0 is missing"},
		/* the last one: only lc.count tells */
		{"first6", 6, "the last document is missing: the inputs end at lc.index 5 and none "
		              "says it is the last (lc.count)"},
		/* duplicates */
		{"a0 a1 a2 a1", 1, "lc.index 1 twice: "},
		{"b0 a1 a2 b3", 2, "lc.index 4 twice: "},
		{"dup", 1, "dup: document \"t1\": lc.index 0 twice in this input"},
		{"back", 2, "back: document \"t2\": lc.index 0 after 1 (the documents are not in the "
		            "order of the split)"},
		{"a0 a1 a2 last", 6, "lc.index 6 twice"},
		/* beyond the end, read before or after lc.count is known */
		{"c7 a0 a1 a2", 7, "c7: document \"t0\": lc.index 7 after the last document (lc.count 7)"},
		{"a0 a1 a2x", 6, "a2x: document \"t2\": lc.index 7 beyond the last document (lc.count 7)"},
		{"big", 3, "big: document \"t3\": lc.index 5 beyond the last document (lc.count 3)"},
		/* the tags themselves */
		{"plain", 0, "plain: document \"t0\": no lc.index (not a shard"},
		{"a0 late", 2, "late: document \"t1\": no lc.index"},
		{"lead0", 0, "lead0: document \"t0\": lc.index '01' is not a decimal index"},
		{"neg", 0, "neg: document \"t0\": lc.index '-1' is not a decimal index"},
		{"empty", 0, "empty: document \"t0\": lc.index '' is not a decimal index"},
		{"huge", 0, "lc.index '18446744073709551616' is not a decimal index"},
		{"badc", 2, "badc: document \"t2\": lc.count '4' on lc.index 2 (the last document of a "
		            "split carries its index + 1)"},
		{"x01 y2", 1, "x01: document \"t1\": lc.count 2, another input says 3 (shards of two "
		              "different splits?)"},
		/* nothing at all */
		{"none none", 0, "no documents in the inputs"},
	};
	lc_err err;
	int rc;

	clean();
	/* shards of 7 documents: a0 a1 a2 in 3; b0 and b3 of 4 (0 4 | 1 5 | 2 6 | 3) */
	tagged("a0", "0 3 6/7");
	tagged("a1", "1 4");
	tagged("a2", "2 5");
	tagged("b0", "0 4");
	tagged("b3", "3 5 6/7");
	tagged("first6", "0 1 2 3 4 5");
	tagged("dup", "0 0");
	tagged("back", "0 1 0");
	tagged("last", "6/7");
	tagged("c7", "7");
	tagged("a2x", "2 5 7");
	tagged("big", "0 1 2/3 5");
	tagged("plain", ".");
	tagged("late", "1 .");
	tagged("lead0", "01");
	tagged("neg", "-1");
	tagged("empty", "~");
	tagged("huge", "18446744073709551616");
	tagged("badc", "0 1 2/4");
	tagged("x01", "0 1/2");
	tagged("y2", "2/3");
	tagged("none", "");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rc = merge_err(bad[i].files, &err);
		T_OK(rc == bad[i].ndoc, "%s: %d documents before the error, want %d (%s)", bad[i].files,
		     rc, bad[i].ndoc, err.msg);
		T_OK(strstr(err.msg, bad[i].msg) != NULL, "%s: \"%s\", want \"...%s...\"", bad[i].files,
		     err.msg, bad[i].msg);
	}
	/* for contrast: complete inputs in any order end cleanly */
	T_EQ_I(merge_err("a2 a0 a1", &err), -1);
	T_EQ_S(err.msg, "");
	T_EQ_I(merge_err("b3 a1 a2 b0x", &err), -2);   /* b0x does not exist */
	T_OK(strstr(err.msg, "b0x: No such file") != NULL, "%s", err.msg);
	T_EQ_I(merge_err("- -", &err), -2);
	T_OK(strstr(err.msg, "standard input given twice") != NULL, "%s", err.msg);
}

/* "-" and no inputs at all are standard input. */
static void test_stdin(void)
{
	char *paths[3] = { NULL, NULL, NULL }, *want, *got = NULL;
	size_t wlen, glen = 0;
	lc_err err;

	clean();
	T_OK(split(3, 8, &err) == 0, "%s", err.msg);
	want = expected(8, &wlen);
	paths[0] = strdup(at("s.2.lc"));
	paths[1] = strdup("-");
	paths[2] = strdup(at("s.0.lc"));
	T_OK(freopen(at("s.1.lc"), "rb", stdin) != NULL, "stdin");
	T_OK(merge(3, paths, &got, &glen, &err) == 0, "%s", err.msg);
	T_OK(glen == wlen && memcmp(got, want, wlen) == 0, "with \"-\": the input byte for byte");
	free(got);
	got = NULL;
	clean();
	T_OK(split(1, 8, &err) == 0, "%s", err.msg);
	T_OK(freopen(at("s.0.lc"), "rb", stdin) != NULL, "stdin");
	T_OK(merge(0, NULL, &got, &glen, &err) == 0, "%s", err.msg);
	T_OK(glen == wlen && memcmp(got, want, wlen) == 0, "no inputs: standard input");
	for (int k = 0; k < 3; k++)
		free(paths[k]);
	free(want);
	free(got);
}

static void test_meta_del(void)
{
	lc_meta m = {0};
	lc_err err;

	T_EQ_I(meta_del(&m, "a"), 0);   /* empty */
	meta_set(&m, "a", "1", &err);
	meta_set(&m, "b", "2", &err);
	meta_set(&m, "c", "3", &err);
	meta_set(&m, "d", "", &err);
	T_EQ_I(meta_del(&m, "b"), 1);
	T_EQ_I(m.n, 3);
	T_EQ_S(m.kv[0].key, "a");
	T_EQ_S(m.kv[1].key, "c");   /* the others keep their order */
	T_EQ_S(m.kv[2].key, "d");
	T_OK(meta_get(&m, "b") == NULL, "gone");
	T_EQ_I(meta_del(&m, "b"), 0);   /* not twice */
	T_EQ_I(meta_del(&m, "B"), 0);   /* keys are exact */
	T_EQ_I(meta_del(&m, ""), 0);
	T_EQ_I(meta_del(&m, "d"), 1);   /* the last, with an empty value */
	T_EQ_I(meta_del(&m, "a"), 1);   /* the first */
	T_EQ_I(m.n, 1);
	T_EQ_S(m.kv[0].key, "c");
	T_EQ_S(meta_get(&m, "c"), "3");
	T_EQ_I(meta_del(&m, "c"), 1);
	T_EQ_I(m.n, 0);
	T_EQ_I(meta_del(&m, "c"), 0);
	/* usable after being emptied; a key set again goes to the end */
	T_EQ_I(meta_set(&m, "b", "4", &err), 0);
	T_EQ_I(meta_set(&m, "a", "5", &err), 0);
	T_EQ_I(meta_del(&m, "b"), 1);
	meta_set(&m, "b", "6", &err);
	T_EQ_S(m.kv[0].key, "a");
	T_EQ_S(m.kv[1].key, "b");
	T_EQ_S(meta_get(&m, "b"), "6");
	meta_free(&m);
	T_EQ_I(meta_del(&m, "a"), 0);   /* freed */
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_shard.XXXXXX");
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	T_RUN(test_round_trip);
	T_RUN(test_shards);
	T_RUN(test_split_refuses);
	T_RUN(test_merge_errors);
	T_RUN(test_stdin);
	T_RUN(test_meta_del);
	clean();
	rmdir(dir);
	return t_done();
}
