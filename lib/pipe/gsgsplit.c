/* gsgsplit: lc-gsg-split's stage (see gsgsplit.h). */
#include "pipe/gsgsplit.h"

#include <stdlib.h>
#include <string.h>

#include "stream/jsonl.h"

struct buf {
	char *p;                    /* [n] + NUL */
	size_t n, cap;
};

struct gsgsplit {
	gsgsplit_opts o;
	jsonl_spec js;
	int pairs;                  /* JSON Lines records' pairs, no GSG */
	gsg *g;
	lc_tokenizer *tok;
	tok_enc enc;
	FILE *out;
	lc_writer *w;               /* stream output */
	struct buf src, tgt;        /* the pair being written */
	struct buf first, cur;      /* text output: the first document (held), the current one */
	char *first_name;
	unsigned long long ndocs, nshort;
	jsonl_tally bad;            /* bad JSON lines skipped */
};

static int buf_add(struct buf *b, const char *s, size_t n, lc_err *err)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;
		while (cap < b->n + n + 1)
			cap *= 2;
		if (!(p = realloc(b->p, cap)))
			return lc_fail(err, "out of memory");
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

/* A sentence on one line: its inner line breaks become spaces. */
static int add_sentence(struct buf *b, const char *s, size_t n, lc_err *err)
{
	size_t from;

	if (b->n && buf_add(b, "\n", 1, err) < 0)
		return -1;
	from = b->n;
	if (buf_add(b, s, n, err) < 0)
		return -1;
	for (size_t i = from; i < b->n; i++)
		if (b->p[i] == '\n' || b->p[i] == '\r')
			b->p[i] = ' ';
	return 0;
}

gsgsplit *gsgsplit_new(const gsgsplit_opts *o, lc_tokenizer *tok, FILE *out, lc_err *err)
{
	gsgsplit *s;

	if (tok && o->text) {
		lc_fail(err, "a tokenizer writes token ids: it goes with stream output");
		return NULL;
	}
	if (!(s = calloc(1, sizeof *s))) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	s->o = *o;
	if (!s->o.mask_token)
		s->o.mask_token = "<extra_id_0>";
	s->tok = tok;
	s->out = out;
	s->pairs = o->source_field || o->target_field;
	if (s->pairs) {
		s->js.field[0] = o->source_field ? o->source_field : "article";
		s->js.field[1] = o->target_field ? o->target_field : "abstract";
		s->js.nfield = 2;
	} else {
		s->js.field[0] = o->text_field ? o->text_field : "text";
		s->js.nfield = 1;
	}
	s->js.id = o->id_field;
	s->js.skip_bad = o->skip_bad;
	if (!(s->g = gsg_new(&o->g, err)) || (!o->text && !(s->w = stream_writer_new(out, err)))) {
		gsgsplit_free(s);
		return NULL;
	}
	return s;
}

void gsgsplit_free(gsgsplit *s)
{
	if (!s)
		return;
	if (s->w)
		stream_writer_abort(s->w);
	gsg_free(s->g);
	tok_enc_free(&s->enc);
	free(s->src.p);
	free(s->tgt.p);
	free(s->first.p);
	free(s->cur.p);
	free(s->first_name);
	jsonl_tally_free(&s->bad);
	free(s);
}

/* b as tensor `name` of d: u8 text, or the tokenizer's ids. */
static int add_tensor(gsgsplit *s, lc_doc *d, const char *name, const struct buf *b, lc_err *err)
{
	lc_tensor *t;
	uint64_t n;

	if (s->tok) {
		if (tok_encode(s->tok, b->p ? b->p : "", b->n, TOK_ENC_SPECIAL | TOK_ENC_EXTRA, &s->enc,
		               err) < 0)
			return lc_prefix(err, "%s", d->name);
		n = s->enc.n;
		if (!(t = doc_add_tensor(d, name, LC_I32, 1, &n, err)) ||
		    meta_set(&t->meta, "tokenizer", tok_fingerprint(s->tok), err) < 0)
			return -1;
		memcpy(t->data, s->enc.ids, n * sizeof *s->enc.ids);
		return 0;
	}
	n = b->n;
	if (!(t = doc_add_tensor(d, name, LC_U8, 1, &n, err)))
		return -1;
	if (n)
		memcpy(t->data, b->p, n);
	return 0;
}

/* s->src and s->tgt as "== target", its lines, "== source", its lines. */
static int text_sides(gsgsplit *s, struct buf *b, lc_err *err)
{
	b->n = 0;
	if (buf_add(b, "== target\n", 10, err) < 0 ||
	    (s->tgt.n && (buf_add(b, s->tgt.p, s->tgt.n, err) < 0 || buf_add(b, "\n", 1, err) < 0)) ||
	    buf_add(b, "== source\n", 10, err) < 0 ||
	    (s->src.n && (buf_add(b, s->src.p, s->src.n, err) < 0 || buf_add(b, "\n", 1, err) < 0)))
		return -1;
	return 0;
}

/* Text output: b's bytes as they are (a document may hold NUL bytes),
 * after a "== doc NAME" header when name is not NULL. */
static void put_text(gsgsplit *s, const char *name, const struct buf *b)
{
	if (name)
		fprintf(s->out, "== doc %s\n", name);
	if (b->n)
		fwrite(b->p, 1, b->n, s->out);
}

/* Writes the pair in s->src and s->tgt as document name; after GSG
 * (gsg set), of n sentences k selected. */
static int emit(gsgsplit *s, const char *name, const lc_meta *meta, int gsg, size_t n, size_t k,
                lc_err *err)
{
	const gsg_opts *g = &s->o.g;
	lc_doc d;
	int rc;

	if (s->o.text) {
		/* Like head(1): a header per document when there are several. */
		if (s->ndocs == 0) {
			if (text_sides(s, &s->first, err) < 0)
				return -1;
			if (!(s->first_name = strdup(name)))
				return lc_fail(err, "out of memory");
		} else {
			if (text_sides(s, &s->cur, err) < 0)
				return -1;
			if (s->ndocs == 1)
				put_text(s, s->first_name, &s->first);
			put_text(s, name, &s->cur);
		}
		s->ndocs++;
		return 0;
	}
	if (doc_init(&d, name, err) < 0)
		return -1;
	rc = 0;
	if ((meta && meta_copy(&d.meta, meta, err) < 0) ||
	    (gsg && (meta_setf(&d.meta, "sentences", err, "%zu", n) < 0 ||
	             meta_setf(&d.meta, "selected", err, "%zu", k) < 0 ||
	             meta_setf(&d.meta, "gsg", err, "%s-%s ratio=%g%s", g->seq ? "seq" : "ind",
	                       g->uniq ? "uniq" : "orig", g->ratio, g->stem ? " stem" : "") < 0)) ||
	    add_tensor(s, &d, "source", &s->src, err) < 0 ||
	    add_tensor(s, &d, "target", &s->tgt, err) < 0 || stream_write_doc(s->w, &d, err) < 0)
		rc = -1;
	doc_free(&d);
	s->ndocs += rc == 0;
	return rc;
}

int gsgsplit_doc(gsgsplit *s, const char *name, const lc_meta *meta, const char *text,
                 size_t len, lc_err *err)
{
	const sentence_span *sp;
	const unsigned char *sel;
	const double *score;
	size_t n, k = 0;

	if (gsg_select(s->g, text, len, &sp, &sel, &score, &n, err) < 0)
		return lc_prefix(err, "%s", name);
	s->src.n = s->tgt.n = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = text + sp[i].start;
		size_t l = sp[i].end - sp[i].start;

		k += sel[i];
		if (!sel[i]) {
			if (add_sentence(&s->src, p, l, err) < 0)
				return -1;
		} else if (add_sentence(&s->tgt, p, l, err) < 0 ||
		           (s->o.mask && add_sentence(&s->src, s->o.mask_token,
		                                      strlen(s->o.mask_token), err) < 0)) {
			return -1;
		}
	}
	s->nshort += k == 0;
	return emit(s, name, meta, 1, n, k, err);
}

int gsgsplit_pair(gsgsplit *s, const char *name, const lc_meta *meta, const char *src,
                  size_t slen, const char *tgt, size_t tlen, lc_err *err)
{
	s->src.n = s->tgt.n = 0;
	if (buf_add(&s->src, src, slen, err) < 0 || buf_add(&s->tgt, tgt, tlen, err) < 0)
		return -1;
	return emit(s, name, meta, 0, 0, 0, err);
}

/* The records of a JSON Lines input; bad lines skipped are counted. */
static int jsonl_input(gsgsplit *s, const char *path, lc_err *err)
{
	jsonl *j = jsonl_open(path, &s->js, err);
	const jsonl_rec *r;
	int rc;

	if (!j)
		return -1;
	while ((rc = jsonl_next(j, &r, err)) > 0)
		if ((rc = s->pairs ? gsgsplit_pair(s, r->name, NULL, r->text[0], r->len[0], r->text[1],
		                                   r->len[1], err)
		                   : gsgsplit_doc(s, r->name, NULL, r->text[0], r->len[0], err)) < 0)
			break;
	if (rc == 0)
		rc = jsonl_tally_add(&s->bad, j, err);
	jsonl_close(j);
	return rc;
}

int gsgsplit_input(gsgsplit *s, const char *path, lc_err *err)
{
	const char *name, *text;
	size_t len;
	textin *t;
	int rc;

	if (s->o.jsonl)
		return jsonl_input(s, path, err);
	if (!(t = textin_open(path, s->o.split, err)))
		return -1;
	while ((rc = textin_next(t, &name, &text, &len, err)) > 0)
		if ((rc = gsgsplit_doc(s, name, textin_meta(t), text, len, err)) < 0)
			break;
	textin_close(t);
	return rc;
}

int gsgsplit_finish(gsgsplit *s, lc_err *err)
{
	char msg[2048];
	lc_writer *w = s->w;

	if (s->o.text && s->ndocs == 1)
		put_text(s, NULL, &s->first);
	s->w = NULL;
	if (w && stream_writer_close(w, err) < 0)
		return -1;
	if (!s->o.warn)
		return 0;
	if (s->nshort) {
		snprintf(msg, sizeof msg, "%llu of %llu documents too short to split (floor(%g x "
		         "sentences) = 0): passed through with an empty target", s->nshort, s->ndocs,
		         s->o.g.ratio);
		s->o.warn(s->o.ctx, msg);
	}
	if (jsonl_tally_msg(&s->bad, msg, sizeof msg))
		s->o.warn(s->o.ctx, msg);
	return 0;
}
