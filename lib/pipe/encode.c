#include "pipe/encode.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "stream/convert.h"
#include "text/tokenizer.h"

/* Short documents are encoded several at a time, each on one thread
 * (their layers are too small to share among threads well: 8 documents
 * of 2K tokens went at 0.74 times the tokens/s of one of 16K on 2 cores);
 * longer ones one at a time on all threads. */
#define OVERLAP_LEN 8192

struct encode_stage {
	lc_model *m;
	lc_encoder *enc;
	lc_encoder **one;           /* [none] one-thread encoders for short documents */
	int none;
	encoder_job *jobs;          /* [o.batch] when none > 0 */
	lc_writer *w;
	encode_opts o;
	char tokfp[32];             /* the model directory's tokenizer's fingerprint, or "" */
	int tok_read;               /* tokfp looked for (at the first fingerprinted tokens) */
	int warned_tok;
};

encode_stage *encode_stage_new(lc_model *m, lc_encoder *enc, int nshort, lc_writer *w,
                               const encode_opts *opts, lc_err *err)
{
	encode_stage *s = calloc(1, sizeof *s);

	if (!s || (nshort > 0 && (!(s->one = calloc((size_t)nshort, sizeof *s->one)) ||
	                          !(s->jobs = calloc((size_t)opts->batch, sizeof *s->jobs))))) {
		encode_stage_free(s);
		lc_fail(err, "out of memory");
		return NULL;
	}
	s->m = m;
	s->enc = enc;
	s->w = w;
	s->o = *opts;

	for (; s->none < nshort; s->none++)
		if (!(s->one[s->none] = encoder_new(m, 1, err))) {
			lc_prefix(err, "model");
			encode_stage_free(s);
			return NULL;
		}
	return s;
}

void encode_stage_free(encode_stage *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->none; i++)
		encoder_free(s->one[i]);
	free(s->one);
	free(s->jobs);
	free(s);
}

/* fn(ctx, the formatted line), when there is fn. */
static void say(encode_say_fn fn, void *ctx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(encode_say_fn fn, void *ctx, const char *fmt, ...)
{
	char buf[256], *p = buf;
	va_list ap;
	int n;

	if (!fn)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof buf && (p = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	fn(ctx, p ? p : buf);
	if (p != buf)
		free(p);
}

/* A document's ids, checked and cut as the model needs (*ids malloc'd). */
static int doc_ids(encode_stage *s, lc_doc *d, int32_t **ids, int64_t *L, lc_err *err)
{
	int64_t max = encoder_max_len(s->enc);
	const lc_tensor *t = doc_find(d, "tokens");
	const char *fp = t ? meta_get(&t->meta, "tokenizer") : NULL;

	/* states already there would be a second "hidden" beside the new */
	if (doc_find(d, "hidden"))
		return lc_fail(err, "already holds \"hidden\" states (encoded before?): a document "
		               "to encode holds its tokens only");

	if (fp && !s->tok_read) {
		/* ids of another tokenizer encode into states of nothing, and
		 * two BPE vocabularies of 50K ids are both in range: the tokens'
		 * fingerprint is compared with the model's own tokenizer's, when
		 * its directory has one that loads (nothing to say otherwise);
		 * read once, at the first tokens that carry one */
		int none;
		lc_err e;
		lc_tokenizer *tk = tok_open_dir(model_dir(s->m), &none, &e);
		if (tk)
			snprintf(s->tokfp, sizeof s->tokfp, "%s", tok_fingerprint(tk));
		tok_free(tk);
		s->tok_read = 1;
	}
	if (fp && s->tokfp[0] && strcmp(fp, s->tokfp) && !s->warned_tok) {
		say(s->o.note, s->o.ctx, "%s: tokens of tokenizer %s, but the model's (%s) is %s: "
		    "another model's ids? (tokenize with -m %s)", d->name, fp, model_dir(s->m),
		    s->tokfp, model_dir(s->m));
		s->warned_tok = 1;
	}
	if (convert_token_ids(d, model_config(s->m)->vocab_size, ids, L, err) < 0)
		return -1;
	if (*L == 0) {
		lc_fail(err, "no tokens (an empty document cannot be encoded)");
	} else if (max && *L > max && !s->o.truncate) {
		lc_fail(err, "%" PRId64 " tokens, more than the %" PRId64 " the model takes "
		        "(give --truncate to keep the first ones, or cut the document into "
		        "windows with lc-chunk -n %" PRId64 " --ends 1,1)", *L, max, max);
	} else {
		if (max && *L > max) {
			say(s->o.note, s->o.ctx, "%s: %" PRId64 " tokens cut to the %" PRId64
			    " the model takes (--truncate)", d->name, *L, max);
			*L = encoder_truncate(s->enc, *ids, *L);
		}
		return 0;
	}
	free(*ids);
	*ids = NULL;
	return -1;
}

/* The document's ids, and its "tokens" replaced by an empty "hidden"
 * [encoder_out_len(L), d_model] to encode into (*out), with the model's
 * marks. On failure *ids is NULL. */
static int doc_begin(encode_stage *s, lc_doc *d, int32_t **ids, int64_t *L, float **out,
                     lc_err *err)
{
	lc_tensor *t;
	const char *fp = model_fingerprint(s->m);
	int dm = model_config(s->m)->d_model;
	uint64_t dims[2];

	if (doc_ids(s, d, ids, L, err) < 0)
		return -1;
	t = doc_find(d, "tokens");
	dims[0] = (uint64_t)encoder_out_len(s->enc, *L);
	dims[1] = (uint64_t)dm;
	tensor_free(t);
	if (tensor_init(t, "hidden", LC_F32, 2, dims, err) < 0 ||
	    meta_set(&t->meta, "model", fp, err) < 0 ||
	    meta_setf(&t->meta, "d_model", err, "%d", dm) < 0 ||
	    meta_set(&t->meta, "encoder", model_config(s->m)->arch->name, err) < 0 ||
	    meta_set(&d->meta, "model", fp, err) < 0 ||
	    meta_setf(&d->meta, "d_model", err, "%d", dm) < 0) {
		free(*ids);
		*ids = NULL;
		return -1;
	}
	*out = t->data;
	return 0;
}

/* The encoded document out: the rows its decoder reads (encoder_keep). */
static int doc_out(encode_stage *s, lc_doc *d, const int32_t *ids, int64_t L, double seconds,
                   lc_err *err)
{
	lc_tensor *t = doc_find(d, "hidden");
	int64_t rows = encoder_keep(s->enc, ids, L, t->data);

	if ((uint64_t)rows < t->dims[0]) {
		t->nbytes = t->nbytes / t->dims[0] * (uint64_t)rows;
		t->dims[0] = (uint64_t)rows;
	}
	if (s->o.stats)
		say(s->o.note, s->o.ctx, "stats: %s: %" PRId64 " tokens: encode %.3f s", d->name, L,
		    seconds);
	if (s->o.bf16)
		convert_tensor_to_bf16(doc_find(d, "hidden"));
	return stream_write_doc(s->w, d, err);
}

struct layers {
	encode_stage *s;
	const char *doc;
	int64_t L;
};

static void on_layer(void *ctx, int done, int total)
{
	struct layers *g = ctx;
	say(g->s->o.progress, g->s->o.ctx, "%s: %" PRId64 " tokens: layer %d/%d", g->doc, g->L, done,
	    total);
}

int encode_doc(lc_doc *d, void *stage, lc_err *err)
{
	encode_stage *s = stage;
	int32_t *ids;
	int64_t L;
	float *out;
	double te;
	int rc;

	if (s->o.gemm) {
		double sec;
		if (doc_ids(s, d, &ids, &L, err) < 0)
			return -1;
		rc = encoder_gemm_only(s->enc, L, &sec, err);
		if (rc == 0)
			fprintf(s->o.gemm, "%s\t%" PRId64 "\t%.3f\n", d->name, L, sec);
		free(ids);
		return rc;
	}
	if (doc_begin(s, d, &ids, &L, &out, err) < 0)
		return -1;
	te = clock_now();
	rc = encoder_run(s->enc, ids, L, out, on_layer, &(struct layers){ s, d->name, L }, err);
	if (rc == 0)
		rc = doc_out(s, d, ids, L, clock_now() - te, err);
	free(ids);
	return rc;
}

int encode_batch(lc_doc *docs, int n, void *stage, int *bad, lc_err *err)
{
	encode_stage *s = stage;
	int k, run, first = n;      /* the first document that failed; n: none */
	double te = 0;

	/* the run of short documents the batch starts with; a long one ends
	 * it before its ids are read (and cut, with a warning, which
	 * encode_doc would repeat). A run of one goes alone on all threads
	 * below, like a long one: one thread of several would leave the
	 * others idle (the states are the same bits either way). */
	for (run = 0; run < n; run++) {
		const lc_tensor *tk = doc_find(&docs[run], "tokens");

		if (tk && tk->rank == 1 && tk->dims[0] > OVERLAP_LEN)
			break;
	}
	if (run == 1)
		run = 0;
	for (k = 0; k < run; k++) {
		encoder_job *j = &s->jobs[k];
		int32_t *ids;

		memset(j, 0, sizeof *j);
		if (doc_begin(s, &docs[k], &ids, &j->L, &j->out, err) < 0) {
			first = k;
			break;
		}
		j->ids = ids;
	}
	if (k > 0) {
		say(s->o.progress, s->o.ctx, "%d documents from %s", k, docs[0].name);
		te = clock_now();
		encoder_run_many(s->one, s->none, s->jobs, k);
		te = (clock_now() - te) / k;
	}
	/* written in order up to the first failure, the one that failed in
	 * the run before the one whose ids could not be read */
	for (int i = 0; i < k; i++) {
		if (i < first) {
			if (s->jobs[i].rc < 0) {
				*err = s->jobs[i].err;
				first = i;
			} else if (doc_out(s, &docs[i], s->jobs[i].ids, s->jobs[i].L, te, err) < 0) {
				first = i;
			}
		}
		free((void *)s->jobs[i].ids);
	}
	/* the rest: alone, on all threads */
	for (int i = k; first == n && i < n; i++)
		if (encode_doc(&docs[i], s, err) < 0)
			first = i;
	if (first == n)
		return 0;
	*bad = first;
	return -1;
}
