/*
 * traindata.c: the training pairs: read from a stream or a JSONL corpus,
 * cut to length, checked, split and written back (see train.h).
 */
#include "train/train.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "base/dtype.h"
#include "base/grow.h"
#include "stream/stream.h"

static int32_t *cut(const int32_t *p, int64_t n, int64_t max, int32_t eos, int64_t *out_n)
{
	int64_t k = n > max ? max : n;
	int32_t *q = malloc((size_t)(k > 0 ? k : 1) * sizeof *q);

	if (!q)
		return NULL;
	memcpy(q, p, (size_t)k * sizeof *q);
	if (k < n && k > 0 && p[n - 1] == eos)
		q[k - 1] = eos;
	*out_n = k;
	return q;
}

struct read_ctx {
	int64_t max_src, max_tgt;
	int32_t eos;
	train_data *d;
};

/* Counts a document skipped, and says why for the first. */
static void skip(train_data *d, const char *name, const char *why, const lc_tensor *t)
{
	char what[64] = "";

	if (t)
		snprintf(what, sizeof what, " (%s of rank %u, not i32 of rank 1)",
		         lc_dtype_name(t->dtype), t->rank);
	if (!d->skipped++)
		snprintf(d->skip_why, sizeof d->skip_why, "\"%.120s\": %s%s", name ? name : "", why,
		         what);
}

/* Appends the pair src[ns], tgt[nt] named name, cut as c says; an empty
 * side counts the pair as skipped. */
static int add_pair(struct read_ctx *c, const char *name, const int32_t *src, int64_t ns,
                    const int32_t *tgt, int64_t nt, lc_err *err)
{
	train_data *d = c->d;
	train_pair *p;

	if (ns == 0 || nt == 0) {
		skip(d, name, ns == 0 ? "an empty source" : "an empty target", NULL);
		return 0;
	}
	if (lc_grow(&d->p, &d->cap, d->n + 1, sizeof *d->p, 256) < 0)
		return lc_fail(err, "out of memory");
	p = &d->p[d->n];
	memset(p, 0, sizeof *p);
	d->cut_src += ns > c->max_src;
	d->cut_tgt += nt > c->max_tgt;
	p->src = cut(src, ns, c->max_src, c->eos, &p->ns);
	p->tgt = cut(tgt, nt, c->max_tgt, c->eos, &p->nt);
	p->name = strdup(name ? name : "");
	if (!p->src || !p->tgt || !p->name) {
		free(p->src);
		free(p->tgt);
		free(p->name);
		return lc_fail(err, "out of memory");
	}
	if (p->ns > d->max_src)
		d->max_src = p->ns;
	d->n++;
	return 0;
}

static int read_pair(lc_doc *doc, void *ctx, lc_err *err)
{
	lc_tensor *s = doc_find(doc, "source"), *t = doc_find(doc, "target");
	train_data *d = ((struct read_ctx *)ctx)->d;
	const char *fp;

	if (!s || !t) {
		skip(d, doc->name, !s ? "no \"source\"" : "no \"target\"", NULL);
		return 0;
	}
	if (s->dtype != LC_I32 || s->rank != 1 || t->dtype != LC_I32 || t->rank != 1) {
		int bad_s = s->dtype != LC_I32 || s->rank != 1;
		skip(d, doc->name, bad_s ? "\"source\" is not ids" : "\"target\" is not ids",
		     bad_s ? s : t);
		return 0;
	}
	if ((fp = meta_get(&s->meta, "tokenizer"))) {
		if (!d->tokfp[0])
			snprintf(d->tokfp, sizeof d->tokfp, "%s", fp);
		else if (strcmp(fp, d->tokfp) != 0)
			d->tokfp_other++;
	}
	return add_pair(ctx, doc->name, s->data, (int64_t)s->dims[0], t->data,
	                (int64_t)t->dims[0], err);
}

int train_data_read_jsonl(jsonl *j, lc_tokenizer *tk, int64_t max_src, int64_t max_tgt,
                          int32_t eos_id, train_data *d, lc_err *err)
{
	struct read_ctx c = { max_src, max_tgt, eos_id, d };
	const unsigned flags = TOK_ENC_SPECIAL | TOK_ENC_EXTRA;
	const jsonl_rec *r;
	tok_enc es = {0}, et = {0};
	int rc;

	while ((rc = jsonl_next(j, &r, err)) > 0) {
		if (tok_encode(tk, r->text[0], r->len[0], flags, &es, err) < 0 ||
		    tok_encode(tk, r->text[1], r->len[1], flags, &et, err) < 0) {
			lc_prefix(err, "%s", r->name);
			rc = -1;
			break;
		}
		if ((rc = add_pair(&c, r->name, es.ids, (int64_t)es.n, et.ids, (int64_t)et.n, err)) < 0)
			break;
	}
	tok_enc_free(&es);
	tok_enc_free(&et);
	return rc < 0 ? -1 : 0;
}

int train_data_read(FILE *f, const char *label, int64_t max_src, int64_t max_tgt,
                    int32_t eos_id, train_data *d, lc_err *err)
{
	struct read_ctx c = { max_src, max_tgt, eos_id, d };

	return stream_each_file(f, label, read_pair, &c, err);
}

int train_data_read_path(const char *path, int64_t max_src, int64_t max_tgt, int32_t eos_id,
                         train_data *d, lc_err *err)
{
	struct read_ctx c = { max_src, max_tgt, eos_id, d };
	char *p = (char *)path;

	return stream_each(1, &p, read_pair, &c, err);
}

int train_data_write_pairs(const train_data *d, const char *prefix, lc_err *err)
{
	/* both written whole under temporary names, then renamed: a failed
	 * write leaves the files of an earlier run as they were, a pair */
	char path[2][4096], tmp[2][4200];
	int side, rc = 0;

	for (side = 0; side < 2; side++) {
		snprintf(path[side], sizeof path[side], "%s.%s.lc", prefix, side ? "tgt" : "src");
		snprintf(tmp[side], sizeof tmp[side], "%s.tmp%ld", path[side], (long)getpid());
	}
	for (side = 0; side < 2 && rc == 0; side++)
		rc = train_data_write(d, side, tmp[side], err);
	for (side = 0; side < 2 && rc == 0; side++)
		if (rename(tmp[side], path[side]) < 0)
			rc = lc_fail(err, "%s: %s", path[side], strerror(errno));
	if (rc < 0)
		for (side = 0; side < 2; side++)
			unlink(tmp[side]);
	return rc;
}

int train_data_check_vocab(const train_data *d, int32_t vocab, lc_err *err)
{
	/* both sides: a target id past the vocabulary would index past the
	 * logits; lc-noise's sentinels are the usual cause (they follow
	 * <mask>: the model needs rows for them, lc-convert --vocab-size) */
	for (size_t i = 0; i < d->n; i++)
		for (int side = 0; side < 2; side++) {
			const int32_t *ids = side ? d->p[i].tgt : d->p[i].src;
			int64_t n = side ? d->p[i].nt : d->p[i].ns;
			for (int64_t k = 0; k < n; k++)
				if (ids[k] < 0 || ids[k] >= vocab)
					return lc_fail(err, "%s: %s token %lld (id %ld) is outside the model's "
					               "vocabulary of %d (pairs of another model's tokenizer? "
					               "span-corruption sentinels need rows of their own: "
					               "lc-convert --vocab-size)", d->p[i].name,
					               side ? "target" : "source", (long long)k, (long)ids[k],
					               vocab);
		}
	return 0;
}

int train_data_check_len(const train_data *d, int64_t max, lc_err *err)
{
	for (size_t i = 0; max > 0 && i < d->n; i++)
		if (d->p[i].ns > max || d->p[i].nt > max)
			return lc_fail(err, "%s: a %s of %lld tokens is longer than the model's %lld "
			               "positions (max_position_embeddings): cut with --max-src and "
			               "--max-tgt", d->p[i].name, d->p[i].ns > max ? "source" : "target",
			               (long long)(d->p[i].ns > max ? d->p[i].ns : d->p[i].nt),
			               (long long)max);
	return 0;
}

int train_data_split(train_data *src, size_t n, train_data *dst, lc_err *err)
{
	if (n > src->n)
		n = src->n;
	memset(dst, 0, sizeof *dst);
	if (!n)
		return 0;
	if (!(dst->p = malloc(n * sizeof *dst->p)))
		return lc_fail(err, "out of memory");
	memcpy(dst->p, src->p + (src->n - n), n * sizeof *dst->p);
	dst->n = dst->cap = n;
	src->n -= n;
	src->max_src = dst->max_src = 0;
	for (size_t i = 0; i < src->n; i++)
		if (src->p[i].ns > src->max_src)
			src->max_src = src->p[i].ns;
	for (size_t i = 0; i < dst->n; i++)
		if (dst->p[i].ns > dst->max_src)
			dst->max_src = dst->p[i].ns;
	return 0;
}

int train_data_write(const train_data *d, int side, const char *path, lc_err *err)
{
	FILE *f = fopen(path, "wb");
	lc_writer *w;
	int rc = -1;

	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (!(w = stream_writer_new(f, err)))
		goto out;
	for (size_t i = 0; i < d->n; i++) {
		const train_pair *p = &d->p[i];
		uint64_t n = (uint64_t)(side ? p->nt : p->ns);
		lc_doc doc;
		lc_tensor *t;
		memset(&doc, 0, sizeof doc);
		if (doc_init(&doc, p->name, err) < 0 ||
		    !(t = doc_add_tensor(&doc, "tokens", LC_I32, 1, &n, err))) {
			doc_free(&doc);
			stream_writer_abort(w);
			goto out;
		}
		memcpy(t->data, side ? p->tgt : p->src, n * sizeof(int32_t));
		if (stream_write_doc(w, &doc, err) < 0) {
			doc_free(&doc);
			stream_writer_abort(w);
			goto out;
		}
		doc_free(&doc);
	}
	rc = stream_writer_close(w, err);
out:
	if (fclose(f) != 0 && rc == 0)
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	if (rc < 0)
		lc_prefix(err, "%s", path);
	return rc;
}

void train_data_free(train_data *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->p[i].src);
		free(d->p[i].tgt);
		free(d->p[i].name);
	}
	free(d->p);
	memset(d, 0, sizeof *d);
}

uint32_t train_data_crc(const train_data *d)
{
	uint32_t c = 0;

	for (size_t i = 0; i < d->n; i++) {
		int64_t len[2] = { d->p[i].ns, d->p[i].nt };
		c = lc_crc32c(c, len, sizeof len);
		c = lc_crc32c(c, d->p[i].src, (size_t)d->p[i].ns * sizeof *d->p[i].src);
		c = lc_crc32c(c, d->p[i].tgt, (size_t)d->p[i].nt * sizeof *d->p[i].tgt);
	}
	return c;
}
