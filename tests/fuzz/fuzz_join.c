/* libFuzzer target: putting documents back together from their pieces'
 * metadata (lc-chunk --join, lc-cat --merge), which other programs and
 * other machines wrote and may have damaged.
 *
 * The input makes a parent document (its bytes as the "text", or as
 * "tokens") and a plan (windows of tokens with kept ends, windows of
 * bytes, sentences or a chapter pattern), cut by chunk_make_piece:
 * joined back untouched, the pieces must give the parent exactly, its
 * metadata included. Then the rest of the input damages them: metadata
 * (the chunk keys and the shard keys) set to values chosen from the
 * hostile ones (huge, negative, empty, not numbers; the pieces are first
 * made the one shard of a split, as lc-cat --shard 1 makes them), pieces dropped,
 * repeated or swapped, contents cut. The damaged pieces go through the
 * joiner and, written as a stream, through lc-cat --merge's reader: any
 * outcome but a crash, a hang or a huge allocation is fine, and a join
 * that succeeds gives no more units than the pieces hold (and the
 * newlines between concatenated texts). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "stream/shard.h"
#include "stream/stream.h"
#include "text/chunk.h"
#include "text/sentence.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the pieces come as one shard of a split of one (lc-cat --shard 1) */
#define SPLIT_ID "0123456789abcdef/1"

static const char *const keys[] = {
	"parent", "piece", "pieces", "offset", "length", "total", "head", "tail", "unit",
	SHARD_INDEX, SHARD_COUNT, SHARD_SPLIT,
};
static const char *const vals[] = {
	"0", "1", "2", "3", "17", "", "x", "-1", "18446744073709551615", "18446744073709551616",
	"9223372036854775807", "4294967296", "p", "q", "00", "1e3", SPLIT_ID, "0123456789abcdef/2",
};

/* The pieces of the parent p under plan pl, into *pc[*n]. */
static int cut(const lc_doc *p, const char *tensor, const chunk_plan *pl, lc_doc **pc, size_t *n)
{
	lc_err err;

	*pc = calloc(pl->n, sizeof **pc);
	*n = 0;
	if (!*pc)
		return -1;
	for (size_t k = 0; k < pl->n; k++) {
		if (chunk_make_piece(&(*pc)[k], p, tensor, pl, k, &err) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

static void free_docs(lc_doc *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		doc_free(&d[i]);
	free(d);
}

/* Joins pieces d[n] (taken); the units of the documents it gave, or -1
 * on an error; the last document given in *last. */
static int64_t join(lc_doc *d, size_t n, lc_doc *last)
{
	chunk_joiner j;
	lc_doc out = {0};
	lc_err err;
	int64_t units = 0;
	int rc = 0;

	chunk_joiner_init(&j);
	for (size_t i = 0; i < n && rc >= 0; i++) {
		if ((rc = chunk_join_add(&j, &d[i], &out, &err)) == 1) {
			const lc_tensor *t = doc_find(&out, "tokens");

			t = t ? t : doc_find(&out, "text");
			units += t ? (int64_t)t->dims[0] : 0;
			doc_free(last);
			*last = out;
			memset(&out, 0, sizeof out);
		}
	}
	if (rc >= 0 && chunk_join_finish(&j, &err) < 0)
		rc = -1;
	chunk_joiner_free(&j);
	doc_free(&out);
	return rc < 0 ? -1 : units;
}

static int same_doc(const lc_doc *a, const lc_doc *b, const char *tensor)
{
	const lc_tensor *ta = doc_find(a, tensor), *tb = doc_find(b, tensor);

	if (strcmp(a->name, b->name) || !ta || !tb || ta->dtype != tb->dtype ||
	    ta->dims[0] != tb->dims[0] || memcmp(ta->data, tb->data, ta->nbytes))
		return 0;
	for (uint32_t i = 0; i < a->meta.n; i++) {
		const char *v = meta_get(&b->meta, a->meta.kv[i].key);

		if (!v || strcmp(v, a->meta.kv[i].val))
			return 0;
	}
	return a->meta.n == b->meta.n;
}

/* The damaged pieces through lc-cat --merge's reader. */
static void merge(const lc_doc *d, size_t n)
{
	char path[64], *paths[1] = { path };
	lc_err err;
	lc_writer *w;
	lc_merger *m;
	lc_doc out = {0};
	FILE *f;
	int fd = fuzz_file(NULL, 0, path);

	if (fd < 0)
		return;
	if (!(f = fopen(path, "wb")) || !(w = stream_writer_new(f, &err))) {
		if (f)
			fclose(f);
		close(fd);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (stream_write_doc(w, &d[i], &err) < 0)
			abort();
	if (stream_writer_close(w, &err) < 0)
		abort();
	fclose(f);
	if ((m = merge_new(1, paths, &err))) {
		int rc, k = 0;

		while ((rc = merge_next(m, &out, &err)) == 1 && ++k < 100000)
			;
		merge_free(m);
	}
	doc_free(&out);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sentence_splitter *ss;
	static chunk_pattern *chapter;
	lc_doc parent = {0}, *pc = NULL, back = {0};
	chunk_plan pl = {0};
	const char *tensor;
	uint64_t n, units = 0;
	size_t np = 0, body, at;
	lc_tensor *t;
	lc_err err;
	int mode, rc = -1;

	if (!ss && (!(ss = sentence_new(&err)) ||
	            !(chapter = chunk_pattern_new("^CHAPTER [0-9]+", &err))))
		abort();
	if (size < 4)
		return 0;
	mode = data[0] & 3;
	/* the parent: data[4 .. 4 + body), the rest damages the pieces */
	body = (size_t)data[3] * 4 < size - 4 ? (size_t)data[3] * 4 : size - 4;
	n = body;
	tensor = mode == 0 ? "tokens" : "text";
	if (doc_init(&parent, "book", &err) < 0 || meta_set(&parent.meta, "lang", "en", &err) < 0 ||
	    !(t = doc_add_tensor(&parent, tensor, mode == 0 ? LC_I32 : LC_U8, 1, &n, &err)))
		abort();
	for (size_t i = 0; i < body; i++)
		if (mode == 0)
			((int32_t *)t->data)[i] = data[4 + i];
		else
			((uint8_t *)t->data)[i] = data[4 + i];
	{
		uint64_t sz = 1 + data[1] % 16, ov = data[2] % sz, head = data[2] >> 4 & 3,
		         tail = data[2] >> 6 & 3;

		if (mode == 0 && n >= head + tail && head + tail < sz && ov < sz - head - tail)
			rc = chunk_plan_windows_ends(&pl, n, sz, ov, head, tail, &err);
		else if (mode == 0 || mode == 1)
			rc = chunk_plan_windows(&pl, n, sz, ov, &err);
		else if (mode == 2)
			rc = chunk_plan_sentences(&pl, ss, t->data, n, sz, ov % sz, &err);
		else
			rc = chunk_plan_pattern(&pl, chapter, t->data, n, &err);
	}
	if (rc < 0 || cut(&parent, tensor, &pl, &pc, &np) < 0) {
		free_docs(pc, np);
		goto done;
	}
	/* untouched: the parent exactly */
	{
		lc_doc *copy = NULL;
		size_t nc = 0;

		if (cut(&parent, tensor, &pl, &copy, &nc) < 0 || join(copy, nc, &back) < 0 ||
		    !same_doc(&parent, &back, tensor))
			abort();
		free_docs(copy, nc);
	}
	for (size_t i = 0; i < np; i++)
		if (meta_setf(&pc[i].meta, SHARD_INDEX, &err, "%zu", i) < 0 ||
		    meta_set(&pc[i].meta, SHARD_SPLIT, SPLIT_ID, &err) < 0 ||
		    (i == np - 1 && meta_setf(&pc[i].meta, SHARD_COUNT, &err, "%zu", np) < 0))
			abort();
	/* damaged: triples (what, piece, value) */
	for (at = 4 + body; at + 3 <= size; at += 3) {
		size_t i = data[at + 1] % np;
		uint8_t what = data[at], v = data[at + 2];

		if (what < 0xc0) {              /* a key */
			if (meta_set(&pc[i].meta, keys[what % (sizeof keys / sizeof *keys)],
			             vals[v % (sizeof vals / sizeof *vals)], &err) < 0)
				abort();
		} else if (what < 0xd0) {       /* drop a piece */
			doc_free(&pc[i]);
			memmove(&pc[i], &pc[i + 1], (np - i - 1) * sizeof *pc);
			if (--np == 0)
				break;
		} else if (what < 0xe0) {       /* swap two */
			lc_doc x = pc[i];

			pc[i] = pc[v % np];
			pc[v % np] = x;
		} else if (what < 0xf0) {       /* cut a piece's content short */
			lc_tensor *c = doc_find(&pc[i], tensor);

			if (c && c->dims[0] > v % 8) {
				c->dims[0] -= v % 8;
				c->nbytes = c->dims[0] * lc_dtype_size(c->dtype);
			}
		} else {                        /* repeat one */
			lc_doc *g = realloc(pc, (np + 1) * sizeof *pc);

			if (!g)
				abort();
			pc = g;
			memset(&pc[np], 0, sizeof *pc);
			if (chunk_make_piece(&pc[np], &parent, tensor, &pl, i % pl.n, &err) < 0)
				abort();
			np++;
		}
	}
	if (np == 0)
		goto done;
	merge(pc, np);
	for (size_t i = 0; i < np; i++) {
		const lc_tensor *c = doc_find(&pc[i], tensor);

		units += c ? c->dims[0] : 0;
	}
	{
		int64_t got = join(pc, np, &back);

		/* text pieces concatenated get a newline between them */
		if (got >= 0 && (uint64_t)got > units + np)
			abort();
	}
done:
	free_docs(pc, np);
	chunk_plan_free(&pl);
	doc_free(&parent);
	doc_free(&back);
	return 0;
}
