/*
 * textin: text documents from files, directories, archives, lc streams
 * and standard input. See textin.h.
 *
 * The kind of an input is decided from its first bytes, not its name:
 * an lc stream, a known compressed or archive signature (then libarchive
 * reads it), or plain text read directly. Plain text never goes through
 * libarchive, whose format guessing could mistake text for an archive.
 */
#include "stream/textin.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/grow.h"
#include "stream/stream.h"

#define PEEK 512
#define ABUF 65536

enum src_kind { SRC_NONE, SRC_PLAIN, SRC_ARCHIVE, SRC_STREAM };

struct textin {
	enum textin_split mode;
	char **paths;          /* inputs still to open, [npaths] */
	size_t npaths, pi;
	int from_dir;          /* paths came from a directory: name docs by file name */
	const char *no_stream; /* non-NULL: an lc stream is an error, not this format */

	enum src_kind kind;
	FILE *f;               /* the open input (plain, archive or stream) */
	char *label;           /* the input's name in messages and document names */
	uint8_t peek[PEEK];    /* first bytes of f, handed out before reading on */
	size_t npeek, ppeek;

	struct archive *a;
	int member;            /* an archive member is open */
	char *member_name;

	lc_reader *rd;
	FILE *cf;              /* the reader's view of f, with the peeked bytes put back */
	lc_doc doc;
	uint8_t *abuf;         /* libarchive's input buffer, [ABUF] */

	int src_done;          /* the current source (plain file or member) is exhausted */
	uint64_t n;            /* documents split from the current source */
	char *rbuf;            /* read-ahead for splitting, [rlen] valid from rpos */
	size_t rpos, rlen, rcap;

	char *text;            /* the document handed out, [len] + NUL */
	size_t len, cap;
	char *name;
};

int textin_split_parse(const char *s)
{
	static const char *names[] = {"file", "line", "blank", "nul"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* Whether p[0..n) are all characters of set. */
static int digits(const uint8_t *p, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!p[i] || !strchr(set, p[i]))
			return 0;
	return 1;
}

static int is_archive(const uint8_t *p, size_t n)
{
	static const struct { size_t off, len; const char *magic; } sig[] = {
		{0, 2, "\x1f\x8b"},                   /* gzip */
		{0, 3, "BZh"},                         /* bzip2 */
		{0, 6, "\xfd" "7zXZ\0"},               /* xz */
		{0, 4, "\x28\xb5\x2f\xfd"},            /* zstd */
		{0, 4, "PK\x03\x04"},                  /* zip */
		{0, 4, "PK\x05\x06"},                  /* empty zip */
		{0, 6, "7z\xbc\xaf\x27\x1c"},          /* 7-zip */
		{0, 4, "\x04\x22\x4d\x18"},            /* lz4 */
		{0, 3, "\x5d\0\0"},                    /* lzma */
		{0, 2, "\x1f\x9d"},                    /* compress */
		{257, 5, "ustar"},                     /* tar */
	};
	for (size_t i = 0; i < sizeof sig / sizeof sig[0]; i++)
		if (n >= sig[i].off + sig[i].len && memcmp(p + sig[i].off, sig[i].magic, sig[i].len) == 0)
			return 1;
	/* cpio's and ar's signatures are text a file may start with
	 * ("070707 was the date ..."): their whole first header, then */
	if (n >= 76 && !memcmp(p, "070707", 6) && digits(p + 6, 70, "01234567"))
		return 1;               /* odc: 76 octal digits */
	if (n >= 110 && (!memcmp(p, "070701", 6) || !memcmp(p, "070702", 6)) &&
	    digits(p + 6, 104, "0123456789abcdefABCDEF"))
		return 1;               /* newc: 13 fields of 8 hex digits */
	if (n >= 68 && !memcmp(p, "!<arch>\n", 8) && p[66] == '`' && p[67] == '\n')
		return 1;               /* ar: a 60-byte member header ending in `\n */
	return 0;
}

/* libarchive's message, which it may leave unset; liblzma's for data
 * that ends early ("Lzma library error:  No progress is possible") said
 * as gzip's is. */
static const char *ar_error(struct archive *a)
{
	const char *s = archive_error_string(a);

	if (s && strstr(s, "Lzma") && strstr(s, "No progress is possible"))
		return "truncated xz or lzma input";
	return s && *s ? s : "damaged or unsupported archive";
}

/* ---------- reading the open input with its peeked prefix ---------- */

static ssize_t raw_read(textin *t, void *p, size_t n)
{
	size_t got = 0;

	if (t->ppeek < t->npeek) {
		got = t->npeek - t->ppeek < n ? t->npeek - t->ppeek : n;
		memcpy(p, t->peek + t->ppeek, got);
		t->ppeek += got;
		return (ssize_t)got;
	}
	got = fread(p, 1, n, t->f);
	if (got == 0 && ferror(t->f))
		return -1;
	return (ssize_t)got;
}

static ssize_t cookie_read(void *c, char *p, size_t n)
{
	return raw_read(c, p, n);
}

static la_ssize_t ar_read(struct archive *a, void *c, const void **buf)
{
	textin *t = c;
	ssize_t got;

	if (!t->abuf && !(t->abuf = malloc(ABUF))) {
		archive_set_error(a, ENOMEM, "out of memory");
		return -1;
	}
	*buf = t->abuf;
	got = raw_read(t, t->abuf, ABUF);
	if (got < 0)
		archive_set_error(a, errno, "read error");
	return got;
}

/* ---------- sources ---------- */

static void close_source(textin *t)
{
	if (t->a) {
		archive_read_free(t->a);
		t->a = NULL;
	}
	if (t->rd) {
		stream_reader_free(t->rd);
		t->rd = NULL;
	}
	if (t->cf) {
		fclose(t->cf);
		t->cf = NULL;
	}
	doc_free(&t->doc);
	if (t->f && t->f != stdin)
		fclose(t->f);
	t->f = NULL;
	free(t->label);
	t->label = NULL;
	free(t->member_name);
	t->member_name = NULL;
	t->kind = SRC_NONE;
	t->member = 0;
}

static void reset_split(textin *t)
{
	t->src_done = 0;
	t->n = 0;
	t->rpos = t->rlen = 0;
}

static int open_source(textin *t, const char *path, lc_err *err)
{
	const char *label = strcmp(path, "-") == 0 ? "stdin" : path;
	size_t got;

	if (t->from_dir) {
		const char *slash = strrchr(path, '/');
		label = slash ? slash + 1 : path;
	}
	t->f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!t->f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (lc_input_not_output(t->f, label, err) < 0)
		return -1;
	if (!(t->label = strdup(label)))
		return lc_fail(err, "out of memory");
	got = fread(t->peek, 1, PEEK, t->f);
	if (got < PEEK && ferror(t->f))
		return lc_fail(err, "%s: read error: %s", label, strerror(errno));
	t->npeek = got;
	t->ppeek = 0;
	reset_split(t);
	if (stream_sniff(t->peek, got)) {
		static const cookie_io_functions_t io = {.read = cookie_read};
		if (t->no_stream)
			return lc_fail(err, "%s: an lc stream, not %s", label, t->no_stream);
		t->kind = SRC_STREAM;
		if (!(t->cf = fopencookie(t, "r", io)))
			return lc_fail(err, "out of memory");
		if (!(t->rd = stream_reader_new(t->cf, label, err)))
			return -1;
		return 0;
	}
	if (is_archive(t->peek, got)) {
		t->kind = SRC_ARCHIVE;
		if (!(t->a = archive_read_new()))
			return lc_fail(err, "out of memory");
		archive_read_support_filter_all(t->a);
		archive_read_support_format_all(t->a);
		archive_read_support_format_raw(t->a);
		if (archive_read_open(t->a, t, NULL, ar_read, NULL) != ARCHIVE_OK)
			return lc_fail(err, "%s: %s", label, ar_error(t->a));
		return 0;
	}
	t->kind = SRC_PLAIN;
	return 0;
}

/* Reads up to n bytes of the current plain source or archive member. */
static ssize_t src_read(textin *t, char *p, size_t n, lc_err *err)
{
	ssize_t got;

	if (t->kind == SRC_ARCHIVE) {
		got = archive_read_data(t->a, p, n);
		if (got < 0)
			lc_fail(err, "%s: %s: %s", t->label, t->member_name ? t->member_name : "",
			        ar_error(t->a));
		return got;
	}
	got = raw_read(t, p, n);
	if (got < 0)
		lc_fail(err, "%s: read error: %s", t->label, strerror(errno));
	return got;
}

/* Opens the next regular member of the archive: 1, or 0 at the end. */
static int next_member(textin *t, lc_err *err)
{
	struct archive_entry *e;
	const char *path;
	int rc;

	for (;;) {
		rc = archive_read_next_header(t->a, &e);
		if (rc == ARCHIVE_EOF)
			return 0;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
			return lc_fail(err, "%s: %s", t->label, ar_error(t->a));
		if (archive_format(t->a) != ARCHIVE_FORMAT_RAW && archive_entry_filetype(e) != AE_IFREG)
			continue;
		/* a member without a name (a damaged or hostile archive) goes by the archive's */
		path = archive_entry_pathname(e);
		if (archive_format(t->a) == ARCHIVE_FORMAT_RAW || !path || !*path)
			path = t->label;
		free(t->member_name);
		if (!(t->member_name = strdup(path)))
			return lc_fail(err, "out of memory");
		reset_split(t);
		t->member = 1;
		return 1;
	}
}

/* ---------- documents ---------- */

static int grow(char **p, size_t *cap, size_t need, lc_err *err)
{
	char *q;
	size_t c = *cap ? *cap : 4096;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (!(q = realloc(*p, c)))
		return lc_fail(err, "out of memory for a %zu-byte document", need);
	*p = q;
	*cap = c;
	return 0;
}

static int set_name(textin *t, const char *base, uint64_t n, lc_err *err)
{
	free(t->name);
	t->name = NULL;
	if (n ? asprintf(&t->name, "%s:%llu", base, (unsigned long long)n) < 0
	      : !(t->name = strdup(base))) {
		t->name = NULL;
		return lc_fail(err, "out of memory");
	}
	return 0;
}

/* Refills the read-ahead buffer; returns bytes added, 0 at end, -1 error. */
static ssize_t refill(textin *t, lc_err *err)
{
	ssize_t got;

	if (t->rpos > 0) {
		memmove(t->rbuf, t->rbuf + t->rpos, t->rlen - t->rpos);
		t->rlen -= t->rpos;
		t->rpos = 0;
	}
	if (t->rlen + 65536 > t->rcap && grow(&t->rbuf, &t->rcap, t->rlen + 65536, err) < 0)
		return -1;
	got = src_read(t, t->rbuf + t->rlen, t->rcap - t->rlen, err);
	if (got > 0)
		t->rlen += (size_t)got;
	return got;
}

/* Takes one line (without its "\n") from the read-ahead into text; 0 at end. */
static int take_line(textin *t, char delim, lc_err *err)
{
	for (;;) {
		/* Nothing buffered (rbuf may still be NULL): no pointer arithmetic. */
		size_t have = t->rlen - t->rpos;
		char *s = have ? t->rbuf + t->rpos : NULL;
		char *e = have ? memchr(s, delim, have) : NULL;
		ssize_t got;

		if (e || t->src_done) {
			size_t n = e ? (size_t)(e - s) : have;
			if (!e && n == 0)
				return 0;
			if (grow(&t->text, &t->cap, n + 1, err) < 0)
				return -1;
			memcpy(t->text, s, n);
			t->text[n] = 0;
			t->len = n;
			t->rpos += n + (e != NULL);
			return 1;
		}
		if ((got = refill(t, err)) < 0)
			return -1;
		if (got == 0)
			t->src_done = 1;
	}
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* The next document of the current plain source or member: 1, 0 at its end. */
static int next_split(textin *t, const char *base, lc_err *err)
{
	ssize_t got;

	if (t->mode == TEXTIN_FILE) {
		if (t->src_done)
			return 0;
		t->len = 0;
		for (;;) {
			if (grow(&t->text, &t->cap, t->len + 65536 + 1, err) < 0)
				return -1;
			if ((got = src_read(t, t->text + t->len, t->cap - t->len - 1, err)) < 0)
				return -1;
			if (got == 0)
				break;
			t->len += (size_t)got;
		}
		t->text[t->len] = 0;
		t->src_done = 1;
		return set_name(t, base, 0, err) < 0 ? -1 : 1;
	}
	if (t->mode == TEXTIN_LINE || t->mode == TEXTIN_NUL) {
		int rc = take_line(t, t->mode == TEXTIN_NUL ? 0 : '\n', err);
		if (rc <= 0)
			return rc;
		return set_name(t, base, ++t->n, err) < 0 ? -1 : 1;
	}
	/* BLANK: lines up to a blank line, joined with "\n". */
	{
		char *para = NULL;
		size_t plen = 0, pcap = 0;
		int rc;

		for (;;) {
			rc = take_line(t, '\n', err);
			if (rc < 0) {
				free(para);
				return -1;
			}
			if (rc == 0 || is_blank(t->text, t->len)) {
				if (rc == 0 && plen == 0 && !para) {
					free(para);
					return 0;
				}
				if (rc == 0 || para)
					break;
				continue;   /* blank lines before a paragraph */
			}
			if (grow(&para, &pcap, plen + t->len + 2, err) < 0) {
				free(para);
				return -1;
			}
			if (para && plen)
				para[plen++] = '\n';
			memcpy(para + plen, t->text, t->len);
			plen += t->len;
			para[plen] = 0;
		}
		free(t->text);
		t->text = para;
		t->cap = pcap;
		t->len = plen;
		return set_name(t, base, ++t->n, err) < 0 ? -1 : 1;
	}
}

static int next_stream_doc(textin *t, lc_err *err)
{
	lc_tensor *x;
	int rc = stream_read_doc(t->rd, &t->doc, err);

	if (rc <= 0)
		return rc;
	x = doc_find(&t->doc, "text");
	if (!x || x->dtype != LC_U8 || x->rank != 1)
		return lc_fail(err, "%s: document \"%s\" has no \"text\" record (u8, rank 1)",
		               t->label, t->doc.name);
	if (grow(&t->text, &t->cap, x->nbytes + 1, err) < 0)
		return -1;
	memcpy(t->text, x->data, x->nbytes);
	t->text[x->nbytes] = 0;
	t->len = x->nbytes;
	return set_name(t, t->doc.name, 0, err) < 0 ? -1 : 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_dir(textin *t, const char *dir, lc_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return lc_fail(err, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		struct stat st;
		char *p;
		if (e->d_name[0] == '.')
			continue;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			goto oom;
		if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		/* a document that is the output file: refused before any of
		 * the directory's is read (they were appended to it first) */
		if (lc_path_not_output(p, err) < 0) {
			free(p);
			closedir(d);
			return -1;
		}
		if (lc_grow(&t->paths, &cap, (size_t)t->npaths + 1, sizeof *t->paths, 16) < 0) {
			free(p);
			goto oom;
		}
		t->paths[t->npaths++] = p;
	}
	closedir(d);
	if (t->npaths > 1)   /* none: paths is NULL, which qsort may not take */
		qsort(t->paths, t->npaths, sizeof *t->paths, cmp_str);
	t->from_dir = 1;
	return 0;
oom:
	closedir(d);
	return lc_fail(err, "out of memory");
}

textin *textin_open(const char *path, enum textin_split mode, lc_err *err)
{
	textin *t = calloc(1, sizeof *t);
	struct stat st;

	if (!t) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	t->mode = mode;
	if (!path)
		path = "-";
	if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (list_dir(t, path, err) < 0) {
			textin_close(t);
			return NULL;
		}
		return t;
	}
	if (!(t->paths = malloc(sizeof *t->paths)) || !(t->paths[0] = strdup(path))) {
		textin_close(t);
		lc_fail(err, "out of memory");
		return NULL;
	}
	t->npaths = 1;
	return t;
}

int textin_next(textin *t, const char **name, const char **text, size_t *len, lc_err *err)
{
	int rc;

	for (;;) {
		if (t->kind == SRC_NONE) {
			if (t->pi == t->npaths)
				return 0;
			if (open_source(t, t->paths[t->pi++], err) < 0)
				return -1;
		}
		switch (t->kind) {
		case SRC_STREAM:
			rc = next_stream_doc(t, err);
			break;
		case SRC_PLAIN:
			rc = next_split(t, t->label, err);
			break;
		case SRC_ARCHIVE:
			if (!t->member) {
				if ((rc = next_member(t, err)) <= 0)
					break;
			}
			rc = next_split(t, t->member_name, err);
			if (rc == 0) {
				t->member = 0;
				continue;
			}
			break;
		default:
			rc = -1;
		}
		if (rc < 0)
			return -1;
		if (rc > 0) {
			*name = t->name;
			*text = t->text;
			*len = t->len;
			return 1;
		}
		close_source(t);
	}
}

void textin_refuse_streams(textin *t, const char *format)
{
	t->no_stream = format;
}

const lc_meta *textin_meta(const textin *t)
{
	return t->kind == SRC_STREAM && t->doc.name ? &t->doc.meta : NULL;
}

void textin_close(textin *t)
{
	if (!t)
		return;
	close_source(t);
	for (size_t i = 0; i < t->npaths; i++)
		free(t->paths[i]);
	free(t->paths);
	free(t->rbuf);
	free(t->abuf);
	free(t->text);
	free(t->name);
	free(t);
}
