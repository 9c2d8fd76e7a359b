/*
 * each.c: calling a function on every document of stream files, one at a
 * time or in batches (stream.h).
 */
#include "stream/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"

int stream_each_file(FILE *f, const char *label, int (*fn)(lc_doc *d, void *ctx, lc_err *err),
                     void *ctx, lc_err *err)
{
	lc_reader *r;
	lc_doc d = {0};
	int rc;

	if (lc_input_not_output(f, label, err) < 0 || !(r = stream_reader_new(f, label, err)))
		return -1;
	while ((rc = stream_read_doc(r, &d, err)) > 0)
		if (fn(&d, ctx, err) < 0) {
			lc_prefix(err, "%s: document \"%s\"", label, d.name ? d.name : "");
			rc = -1;
			break;
		}
	doc_free(&d);
	stream_reader_free(r);
	return rc < 0 ? -1 : 0;
}

static int each_file(const char *path, int (*fn)(lc_doc *d, void *ctx, lc_err *err),
                     void *ctx, lc_err *err)
{
	int is_stdin = !path || strcmp(path, "-") == 0, rc;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");

	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	rc = stream_each_file(f, is_stdin ? "stdin" : path, fn, ctx, err);
	if (!is_stdin)
		fclose(f);
	return rc;
}

int stream_each(int n, char *const *paths, int (*fn)(lc_doc *d, void *ctx, lc_err *err),
                void *ctx, lc_err *err)
{
	if (n == 0)
		return each_file("-", fn, ctx, err);
	for (int i = 0; i < n; i++)
		if (each_file(paths[i], fn, ctx, err) < 0)
			return -1;
	return 0;
}

/* ------------------------------------------------------------- batches */

typedef struct batcher {
	lc_doc *docs;
	const char **labels;
	int n, max;
	uint64_t bytes, max_bytes;
	int (*fn)(lc_doc *docs, int ndoc, void *ctx, int *bad, lc_err *err);
	void *ctx;
} batcher;

static uint64_t doc_bytes(const lc_doc *d)
{
	uint64_t b = 0;

	for (uint32_t i = 0; i < d->nrec; i++)
		b += d->rec[i].kind == LC_REC_TENSOR ? d->rec[i].t.nbytes : d->rec[i].body_len;
	return b;
}

static int batch_flush(batcher *b, lc_err *err)
{
	int bad = -1, rc = 0;

	if (b->n && b->fn(b->docs, b->n, b->ctx, &bad, err) < 0) {
		if (bad >= 0 && bad < b->n)
			lc_prefix(err, "%s: document \"%s\"", b->labels[bad],
			          b->docs[bad].name ? b->docs[bad].name : "");
		rc = -1;
	}
	for (int i = 0; i < b->n; i++)
		doc_free(&b->docs[i]);
	b->n = 0;
	b->bytes = 0;
	return rc;
}

static int batch_file(batcher *b, const char *path, lc_err *err)
{
	int is_stdin = !path || strcmp(path, "-") == 0, rc = 0;
	const char *label = is_stdin ? "stdin" : path;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	lc_reader *r;

	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (lc_input_not_output(f, label, err) < 0 || !(r = stream_reader_new(f, label, err))) {
		rc = -1;
		goto out;
	}
	for (;;) {
		int got = stream_read_doc(r, &b->docs[b->n], err);
		if (got <= 0) {
			doc_free(&b->docs[b->n]);
			rc = got < 0 ? -1 : 0;
			break;
		}
		uint64_t db = doc_bytes(&b->docs[b->n]);
		if (b->n > 0 && b->bytes + db > b->max_bytes) {
			/* it would go over: the batch so far first, then it starts
			 * the next one (alone, if it is over the limit by itself) */
			lc_doc d = b->docs[b->n];
			memset(&b->docs[b->n], 0, sizeof d);
			if (batch_flush(b, err) < 0) {
				doc_free(&d);
				rc = -1;
				break;
			}
			b->docs[0] = d;
		}
		b->labels[b->n] = label;
		b->bytes += db;
		if ((++b->n == b->max || b->bytes >= b->max_bytes) && batch_flush(b, err) < 0) {
			rc = -1;
			break;
		}
	}
	stream_reader_free(r);
out:
	if (!is_stdin)
		fclose(f);
	return rc;
}

int stream_each_batch(int n, char *const *paths, int max_docs, uint64_t max_bytes,
                      int (*fn)(lc_doc *docs, int ndoc, void *ctx, int *bad, lc_err *err),
                      void *ctx, lc_err *err)
{
	batcher b = { 0 };
	int rc = 0;

	if (max_docs < 1 || max_docs > (1 << 20))
		return lc_fail(err, "a batch of %d documents", max_docs);
	b.docs = calloc((size_t)max_docs, sizeof *b.docs);
	b.labels = calloc((size_t)max_docs, sizeof *b.labels);
	if (!b.docs || !b.labels) {
		free(b.docs);
		free(b.labels);
		return lc_fail(err, "out of memory for a batch of %d documents", max_docs);
	}
	b.max = max_docs;
	b.max_bytes = max_bytes;
	b.fn = fn;
	b.ctx = ctx;
	/* a batch may span files: the labels are the paths, which outlive it */
	for (int i = 0; i < (n ? n : 1) && rc == 0; i++)
		rc = batch_file(&b, n ? paths[i] : "-", err);
	if (rc == 0) {
		rc = batch_flush(&b, err);
	} else {
		/* a reading error: the documents before it are not lost, and
		 * their own failure, if any, comes first */
		lc_err first;
		if (batch_flush(&b, &first) < 0)
			*err = first;
	}
	free(b.docs);
	free(b.labels);
	return rc;
}
