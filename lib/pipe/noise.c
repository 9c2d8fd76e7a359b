/* noise: lc-noise's stage (see noise.h). */
#include "pipe/noise.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/nprand.h"
#include "base/rng.h"
#include "stream/shard.h"

struct held {                   /* a document kept for concat */
	char *name;
	int32_t *tok;
	int64_t n;
	lc_meta tmeta;              /* its "tokens" metadata */
};

struct noise {
	noise_opts o;
	lc_writer *w;
	span_out sp;
	noise_stats st;
	int64_t index;              /* the next document's position */
	char settings[256];         /* the "noise" metadata */
	char *first_short;          /* name and reason of the first skipped */
	int warned_fp;
	struct held *h;
	size_t nh, caph;
};

int noise_tokenizer_defaults(lc_tokenizer *tok, noise_opts *o, lc_err *err)
{
	int32_t v = tok_vocab_size(tok);
	tok_enc e = {0};
	char want[32];
	const char *p;
	size_t len;
	int64_t k;

	if (tok_encode(tok, "", 0, TOK_ENC_SPECIAL, &e, err) < 0)
		return -1;
	/* what lc-tokenize -m puts around a document: <s> ... </s>, or </s> */
	o->head = e.n >= 2;
	o->tail = e.n >= 1;
	tok_enc_free(&e);
	for (k = 0; k < v; k++) {
		snprintf(want, sizeof want, "<extra_id_%lld>", (long long)k);
		if (!(p = tok_piece(tok, v - 1 - (int32_t)k, &len)) || len != strlen(want) ||
		    memcmp(p, want, len))
			break;
	}
	if (k > 0) {                /* T5: <extra_id_0> last, counting down */
		o->s.sentinel = v - 1;
		o->s.step = -1;
		o->s.max_spans = k;
		return 0;
	}
	/* the authors' LongDenoisingTask: add_symbol("<mask>") (a no-op when
	 * the vocabulary has it, as BART's does), then the sentinels */
	o->s.sentinel = v + 1;
	for (int32_t i = v - 1; i >= 0; i--)
		if ((p = tok_piece(tok, i, &len)) && len == 6 && !memcmp(p, "<mask>", 6)) {
			o->s.sentinel = v;
			break;
		}
	o->s.step = 1;
	o->s.max_spans = 0;
	return 0;
}

noise *noise_new(const noise_opts *o, FILE *out, lc_err *err)
{
	noise *s = calloc(1, sizeof *s);

	if (!s) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	s->o = *o;
	if (o->span_set && o->nset > 0) {
		int n = snprintf(s->settings, sizeof s->settings, "density=%g span-set=", o->s.density);
		for (int i = 0; i < o->nset && n < (int)sizeof s->settings; i++)
			n += snprintf(s->settings + n, sizeof s->settings - (size_t)n, "%s%g",
			              i ? "," : "", o->span_set[i]);
		if (n < (int)sizeof s->settings)
			snprintf(s->settings + n, sizeof s->settings - (size_t)n, " seed=%lld epoch=%lld",
			         (long long)o->seed, (long long)o->epoch);
	} else {
		snprintf(s->settings, sizeof s->settings, "density=%g mean-span=%g seed=%lld epoch=%lld",
		         o->s.density, o->s.mean_span, (long long)o->seed, (long long)o->epoch);
	}
	if (!(s->w = stream_writer_new(out, err))) {
		free(s);
		return NULL;
	}
	return s;
}

void noise_free(noise *s)
{
	if (!s)
		return;
	if (s->w)
		stream_writer_abort(s->w);
	span_out_free(&s->sp);
	for (size_t i = 0; i < s->nh; i++) {
		free(s->h[i].name);
		free(s->h[i].tok);
		meta_free(&s->h[i].tmeta);
	}
	free(s->h);
	free(s->first_short);
	free(s);
}

const noise_stats *noise_get_stats(const noise *s)
{
	return &s->st;
}

/* Noises tokens[n] as document number index and writes the pair named
 * name with metadata meta (may be NULL) and tensor metadata tmeta; extra
 * metadata for concat. 0 (also when skipped), -1 with err. */
static int put_pair(noise *s, const char *name, const lc_meta *meta, const lc_meta *tmeta,
                    const int32_t *tokens, int64_t n, int64_t index, const char *concat,
                    const char *concat_names, lc_err *err)
{
	span_opts so = s->o.s;
	int64_t v[3] = { s->o.seed, s->o.epoch, index };
	lc_doc d;
	lc_tensor *t;
	uint64_t dim;
	int rc;

	if (s->o.span_set && s->o.nset > 0)
		so.mean_span = span_pick(s->o.span_set, s->o.nset, (uint64_t)s->o.seed,
		                         (uint64_t)index);
	rc = span_corrupt(&so, tokens, n, s->o.head, s->o.tail, nprand_fairseq_seed(v, 3), &s->sp,
	                  err);
	if (rc == SPAN_SHORT) {
		if (!s->st.skipped++) {
			size_t len = strlen(name) + strlen(err->msg) + 8;
			if ((s->first_short = malloc(len)))
				snprintf(s->first_short, len, "\"%s\": %s", name, err->msg);
		}
		return 0;
	}
	if (rc < 0)
		return -1;
	if (doc_init(&d, name, err) < 0)
		return -1;
	rc = -1;
	if ((meta && meta_copy(&d.meta, meta, err) < 0) ||
	    meta_set(&d.meta, "noise", s->settings, err) < 0 ||
	    meta_setf(&d.meta, "noise.index", err, "%lld", (long long)index) < 0 ||
	    meta_setf(&d.meta, "noise.tokens", err, "%lld", (long long)s->sp.nnoise) < 0 ||
	    meta_setf(&d.meta, "noise.spans", err, "%lld", (long long)s->sp.nspans) < 0 ||
	    meta_setf(&d.meta, "noise.span-length", err, "%g", so.mean_span) < 0 ||
	    (concat && (meta_set(&d.meta, "concat", concat, err) < 0 ||
	                meta_set(&d.meta, "concat.names", concat_names, err) < 0)))
		goto out;
	dim = (uint64_t)s->sp.nsrc;
	if (!(t = doc_add_tensor(&d, "source", LC_I32, 1, &dim, err)) ||
	    (tmeta && meta_copy(&t->meta, tmeta, err) < 0))
		goto out;
	memcpy(t->data, s->sp.src, dim * sizeof *s->sp.src);
	dim = (uint64_t)s->sp.ntgt;
	if (!(t = doc_add_tensor(&d, "target", LC_I32, 1, &dim, err)) ||
	    (tmeta && meta_copy(&t->meta, tmeta, err) < 0))
		goto out;
	memcpy(t->data, s->sp.tgt, dim * sizeof *s->sp.tgt);
	if (stream_write_doc(s->w, &d, err) < 0)
		goto out;
	s->st.docs++;
	s->st.body += s->sp.len;
	s->st.noise += s->sp.nnoise;
	s->st.spans += s->sp.nspans;
	s->st.truncated += s->sp.truncated;
	rc = 0;
out:
	doc_free(&d);
	return rc;
}

int noise_doc(lc_doc *d, void *stage, lc_err *err)
{
	noise *s = stage;
	lc_tensor *t = doc_find(d, "tokens");
	const char *fp;
	struct held *h;

	if (!t || t->dtype != LC_I32 || t->rank != 1)
		return lc_fail(err, "no \"tokens\" record of i32 ids (a token stream, as lc-tokenize "
		               "writes)");
	if (s->o.fingerprint && (fp = meta_get(&t->meta, "tokenizer")) &&
	    strcmp(fp, s->o.fingerprint) && !s->warned_fp && s->o.warn) {
		char msg[512];
		snprintf(msg, sizeof msg, "document \"%s\": tokens of tokenizer %s, the sentinels are "
		         "-m's (tokenizer %s)", d->name, fp, s->o.fingerprint);
		s->o.warn(s->o.ctx, msg);
		s->warned_fp = 1;
	}
	for (uint64_t i = 0; i < t->dims[0]; i++) {
		int32_t id = ((const int32_t *)t->data)[i];
		if (id < 0 || (s->o.vocab > 0 && id >= s->o.vocab))
			return lc_fail(err, "token %" PRIu64 " is %d, outside %s", i, id,
			               id < 0 ? "any vocabulary" : "the tokenizer's ids (-m)");
	}
	if (!s->o.concat) {
		/* a shard's document (lc-cat --shard) is noised as the one at its
		 * place in the whole input: shards noised apart and merged give
		 * one run's pairs (they drew by their place in the shard, and
		 * every shard's first document the same noise) */
		int64_t index = s->index++;
		const char *li = meta_get(&d->meta, SHARD_INDEX);
		if (li) {
			uint64_t v;
			if (!shard_parse_u64(li, &v) || v > INT64_MAX)
				return lc_fail(err, "bad %s \"%.40s\"", SHARD_INDEX, li);
			index = (int64_t)v;
		}
		return put_pair(s, d->name, &d->meta, &t->meta, t->data, (int64_t)t->dims[0], index,
		                NULL, NULL, err);
	}
	if (lc_grow(&s->h, &s->caph, s->nh + 1, sizeof *s->h, 256) < 0)
		return lc_fail(err, "out of memory");
	h = &s->h[s->nh];
	memset(h, 0, sizeof *h);
	h->n = (int64_t)t->dims[0];
	h->name = strdup(d->name);
	h->tok = malloc(h->n > 0 ? (size_t)h->n * sizeof *h->tok : 1);
	if (!h->name || !h->tok || meta_copy(&h->tmeta, &t->meta, err) < 0) {
		free(h->name);
		free(h->tok);
		meta_free(&h->tmeta);
		return lc_fail(err, "out of memory");
	}
	memcpy(h->tok, t->data, (size_t)h->n * sizeof *h->tok);
	s->nh++;
	s->st.joined++;
	return 0;
}

/* Appends to a growing string. */
static int cat(char **p, size_t *n, size_t *cap, const char *add, lc_err *err)
{
	size_t k = strlen(add);

	if (*n + k + 1 > *cap) {
		size_t nc = *cap ? *cap : 256;
		char *q;
		while (nc < *n + k + 1)
			nc *= 2;
		if (!(q = realloc(*p, nc)))
			return lc_fail(err, "out of memory");
		*p = q;
		*cap = nc;
	}
	memcpy(*p + *n, add, k + 1);
	*n += k;
	return 0;
}

/* concat: shuffle, pack, join and write every held document. */
static int put_joined(noise *s, lc_err *err)
{
	const int64_t hd = s->o.head, max = s->o.concat;
	size_t *ord = malloc((s->nh ? s->nh : 1) * sizeof *ord), i = 0, k;
	uint64_t st = lc_mix64((uint64_t)s->o.seed ^ 0x636f6e636174ull) + (uint64_t)s->o.epoch;
	int32_t *buf = NULL;
	char *idx = NULL, *names = NULL, name[64], num[32];
	size_t cap = 0, ni = 0, ci = 0, nn = 0, cn = 0;
	int64_t out = 0;
	int rc = -1;

	if (!ord)
		return lc_fail(err, "out of memory");
	for (k = 0; k < s->nh; k++)
		ord[k] = k;
	for (k = s->nh; k > 1; k--) {   /* Fisher-Yates with lc's generator */
		size_t j = (size_t)(lc_rng_next(&st) % k), t = ord[k - 1];   /* bias k / 2^64 */
		ord[k - 1] = ord[j];
		ord[j] = t;
	}
	while (i < s->nh) {
		const struct held *f = &s->h[ord[i]];
		size_t first = i, need;
		int64_t len = f->n;

		/* the first document whole, then each next one less its head */
		for (i++; i < s->nh && s->h[ord[i]].n >= hd && len + s->h[ord[i]].n - hd <= max; i++)
			len += s->h[ord[i]].n - hd;
		need = (size_t)(len > 0 ? len : 1);
		if (need > cap) {
			int32_t *nb = realloc(buf, need * sizeof *buf);
			if (!nb) {
				lc_fail(err, "out of memory");
				goto done;
			}
			buf = nb;
			cap = need;
		}
		memcpy(buf, f->tok, (size_t)f->n * sizeof *buf);
		len = f->n;
		ni = nn = 0;
		snprintf(num, sizeof num, "%zu", ord[first]);
		if (cat(&idx, &ni, &ci, num, err) < 0 || cat(&names, &nn, &cn, f->name, err) < 0)
			goto done;
		for (k = first + 1; k < i; k++) {
			const struct held *h = &s->h[ord[k]];
			memcpy(buf + len, h->tok + hd, (size_t)(h->n - hd) * sizeof *buf);
			len += h->n - hd;
			snprintf(num, sizeof num, " %zu", ord[k]);
			if (cat(&idx, &ni, &ci, num, err) < 0 || cat(&names, &nn, &cn, "\n", err) < 0 ||
			    cat(&names, &nn, &cn, h->name, err) < 0)
				goto done;
		}
		snprintf(name, sizeof name, "concat#%lld", (long long)out);
		if (put_pair(s, name, NULL, &f->tmeta, buf, len, out, idx, names, err) < 0) {
			lc_prefix(err, "document \"%s\"", name);
			goto done;
		}
		out++;
	}
	rc = 0;
done:
	free(ord);
	free(buf);
	free(idx);
	free(names);
	return rc;
}

int noise_finish(noise *s, lc_err *err)
{
	lc_writer *w = s->w;

	if (s->o.concat && put_joined(s, err) < 0)
		return -1;
	s->w = NULL;
	/* documents in, no pair out: settings that fit none of them (-r 1,
	 * --ends longer than the documents), not a corpus to train on; the
	 * stream is left without its end, so that no reader takes it whole */
	if (s->st.skipped && !s->st.docs) {
		stream_writer_abort(w);
		return lc_fail(err, "every document (%lld) too short to noise: no pairs (the first, %s)",
		               (long long)s->st.skipped, s->first_short ? s->first_short : "?");
	}
	if (stream_writer_close(w, err) < 0)
		return -1;
	if (s->st.skipped && s->o.warn) {
		char msg[2048];
		snprintf(msg, sizeof msg, "%lld of %lld documents too short to noise were skipped "
		         "(the first, %s)", (long long)s->st.skipped,
		         (long long)(s->st.skipped + s->st.docs), s->first_short ? s->first_short : "?");
		s->o.warn(s->o.ctx, msg);
	}
	return 0;
}
