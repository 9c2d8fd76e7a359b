/*
 * decode.c: documents of hidden states in, summaries out (see decode.h).
 */
#include "pipe/decode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "compute/compute.h"
#include "gen/batch.h"
#include "stream/convert.h"
#include "text/sumjson.h"

/* The most rows of a step in a batch (summ_batch_docs). */
#define BATCH_ROWS 1024
/* bf16 -> f32 scratch kept between batches, per document slot */
#define BATCH_KEEP_SCRATCH ((uint64_t)64 << 20)

struct summarizer {
	const lc_model *model;
	const lc_decoder *dec;
	const lc_tokenizer *tok;
	summ_opts o;
	FILE *out;
	lc_writer *w;             /* stream format */
	int warned_fp;
	char *text;               /* a summary's text */
	size_t text_len, text_cap;
	float **conv;             /* [batch] each document slot's bf16 -> f32 scratch */
	uint64_t *conv_cap;
	gen_job *jobs;            /* [batch] */
	char line[LC_MAX_NAME + 128];   /* progress and warnings */
};

static void say(summarizer *s, void (*fn)(void *, const char *), const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A progress line or warning, formatted, to the caller's fn (if any). */
static void say(summarizer *s, void (*fn)(void *, const char *), const char *fmt, ...)
{
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(s->line, sizeof s->line, fmt, ap);
	va_end(ap);
	fn(s->o.ctx, s->line);
}

static void progress_done(summarizer *s)
{
	if (s->o.progress)
		s->o.progress(s->o.ctx, NULL);
}

/* The encoder states of d [L, d_model], checked: *enc16 the bf16 payload
 * as it is when the decoder reads bf16 (*enc NULL), else *enc float32,
 * converted (if bf16) into *conv. */
static int hidden_of(summarizer *s, const lc_doc *d, int64_t *L, const float **enc,
                     const uint16_t **enc16, float **conv, uint64_t *conv_cap, lc_err *err)
{
	const lc_tensor *t = doc_find(d, "hidden");
	int dm = model_config(s->model)->d_model;
	const char *fp, *ours = model_fingerprint(s->model);
	const float *h;

	*enc = NULL;
	*enc16 = NULL;
	if (!t)
		return lc_fail(err, "no \"hidden\" tensor (is this lc-encode's output?)");
	if (doc_count(d, "hidden") > 1)
		return lc_fail(err, "%u \"hidden\" tensors: which are its states?",
		               doc_count(d, "hidden"));
	if (t->rank != 2 || t->dims[1] != (uint64_t)dm) {
		char shape[LC_MAX_RANK * 21];
		tensor_shape(t, shape, sizeof shape);
		return lc_fail(err, "\"hidden\" must be [L, %d] for this model, not [%s] (rank %u)",
		               dm, shape, (unsigned)t->rank);
	}
	*L = (int64_t)t->dims[0];
	fp = meta_get(&t->meta, "model");
	if (fp && strcmp(fp, ours) && !s->warned_fp) {
		say(s, s->o.warn, "%s: hidden states made by model %s, decoded with model %s",
		    d->name, fp, ours);
		s->warned_fp = 1;
	}
	/* bf16 states for a decoder that reads bf16: as they are, no float32
	 * copy (at 600K tokens 1.8 GB) */
	if (t->dtype == LC_BF16 && decoder_reads_bf16(s->dec)) {
		if (decoder_check_states16(s->dec, t->data, *L, err) < 0)
			return -1;
		*enc16 = t->data;
		return 0;
	}
	if (!(h = convert_f32_view(t, conv, conv_cap, err)) ||
	    decoder_check_states(s->dec, h, *L, err) < 0)
		return -1;
	*enc = h;
	return 0;
}

/* --- the output --- */

/* The text of q into s->text (the eos is not text). */
static int detok(summarizer *s, const search_seq *q, lc_err *err)
{
	size_t n = (size_t)q->n;

	if (n && q->ids[n - 1] == s->o.search.eos_id)
		n--;
	if (tok_decode(s->tok, q->ids, n, 0, &s->text, &s->text_len, &s->text_cap, err) < 0)
		return lc_prefix(err, "detokenizing");
	return 0;
}

static int write_error(lc_err *err)
{
	return lc_fail(err, "write error: %s", strerror(errno));
}

/* The text, one line (or NUL-terminated record). */
static int put_text(summarizer *s, lc_err *err)
{
	if (s->o.nul)
		return fwrite(s->text, 1, s->text_len, s->out) != s->text_len ||
		       putc(0, s->out) == EOF ? write_error(err) : 0;
	for (size_t i = 0; i < s->text_len; i++) {
		char ch = s->text[i];
		if (putc(ch == '\n' || ch == '\r' ? ' ' : ch, s->out) == EOF)
			return write_error(err);
	}
	return putc('\n', s->out) == EOF ? write_error(err) : 0;
}

/* The vector v[n] as the stream's record NAME (the ith summary's: NAME,
 * NAME.2, ...), with the model's fingerprint as "model" if given. */
static int put_vec(summarizer *s, const char *name, int i, enum lc_dtype dt, const void *v,
                   uint64_t n, const char *model, lc_err *err)
{
	lc_tensor t = {0};
	char tn[32];
	int rc = -1;

	convert_nth_name(tn, sizeof tn, name, i);
	if (tensor_init(&t, tn, dt, 1, &n, err) == 0 &&
	    (!model || meta_set(&t.meta, "model", model, err) == 0)) {
		if (n)
			memcpy(t.data, v, n * lc_dtype_size(dt));
		rc = stream_write_tensor(s->w, &t, err);
	}
	tensor_free(&t);
	return rc;
}

/* Writes one document's summaries in the output format: each one's ids,
 * then its text (where the format has text and there is a tokenizer),
 * between the document's beginning and end in a stream or JSON line. */
static int emit(summarizer *s, const lc_doc *d, const search_result *res, lc_err *err)
{
	static const char *const replaced[] = { "hidden", "tokens", "text", NULL };
	enum summ_format f = s->o.format;
	sumjson *js = NULL;
	int rc = 0;

	if (f == SUMM_STREAM)
		rc = stream_write_begin(s->w, d->name, &d->meta, err) < 0 ||
		     stream_write_records(s->w, d, replaced, err) < 0 ? -1 : 0;
	if (f == SUMM_JSONL && !(js = sumjson_new(d->name, res->nseq, err)))
		rc = -1;
	for (int i = 0; rc == 0 && i < res->nseq; i++) {
		const search_seq *q = &res->seq[i];

		if (f == SUMM_IDS)
			rc = convert_write_ids(s->out, q->ids, (size_t)q->n, err);
		else if (f == SUMM_STREAM)
			rc = put_vec(s, "tokens", i, LC_I32, q->ids, (uint64_t)q->n,
			             model_fingerprint(s->model), err);
		if (rc < 0 || f == SUMM_IDS || !s->tok)
			continue;
		if ((rc = detok(s, q, err)) < 0)
			break;
		if (f == SUMM_TEXT)
			rc = put_text(s, err);
		else if (f == SUMM_JSONL)
			rc = sumjson_add(js, s->text, s->text_len, err);
		else
			rc = put_vec(s, "text", i, LC_U8, s->text, s->text_len, NULL, err);
	}
	if (rc == 0 && f == SUMM_STREAM)
		rc = stream_write_end(s->w, err);
	if (rc == 0 && f == SUMM_JSONL)
		rc = sumjson_write(js, s->out, err);
	sumjson_free(js);
	/* each document's summaries out before the next is decoded: a write
	 * error names the document it lost (not one a buffer later), and a
	 * reader sees every summary as soon as it is made */
	if (rc == 0 && fflush(s->out) != 0)
		rc = write_error(err);
	return rc;
}

/* --- decoding --- */

struct step_ctx {
	dec_state *st;
	summarizer *s;
	const char *doc;
	int64_t L;
	int steps;
	double t1;                      /* when the first step was done */
};

static int cb_step(void *c, const int32_t *tok, float *logits, lc_err *err)
{
	struct step_ctx *x = c;

	if (decoder_step(x->st, tok, logits, err) < 0)
		return -1;
	if (++x->steps == 1)
		x->t1 = clock_now();
	say(x->s, x->s->o.progress, "%s: %lld tokens in, %d generated", x->doc, (long long)x->L,
	    x->steps);
	return 0;
}

static int cb_reorder(void *c, const int32_t *src, lc_err *err)
{
	return decoder_reorder(((struct step_ctx *)c)->st, src, err);
}

/* The document's search: the settings, with its draws from the seed and
 * the document's name. */
static search_opts doc_opts(const summarizer *s, const lc_doc *d)
{
	search_opts so = s->o.search;

	so.seed = search_seed(so.seed, d->name, strlen(d->name));
	return so;
}

/* One document alone (batch 1, or a batch that could not start). */
static int decode_one(summarizer *s, const lc_doc *d, const float *enc, const uint16_t *enc16,
                      int64_t L, lc_err *err)
{
	struct step_ctx x = { NULL, s, d->name, L, 0, 0 };
	search_model m = { &x, cb_step, cb_reorder };
	search_opts so = doc_opts(s, d);
	search_result res;
	dec_input in = { enc, L, search_rows(&so), enc16 };
	double t0 = clock_now(), t2;
	int rc;

	x.st = decoder_batch_new(s->dec, &in, 1, so.max_new, err);
	if (!x.st || decoder_state_threads(x.st, s->o.threads, err) < 0 ||
	    search_run(&so, &m, &res, err) < 0) {
		decoder_state_free(x.st);
		return -1;
	}
	t2 = clock_now();
	if (s->o.stats && x.steps > 0)
		say(s, s->o.warn, "stats: %s: %lld states, %d steps: first %.3f s, then %.4f s a step; "
		    "cross cache %d of %d layers", d->name, (long long)L, x.steps, x.t1 - t0,
		    x.steps > 1 ? (t2 - x.t1) / (x.steps - 1) : 0.0, decoder_cross_cached(x.st),
		    decoder_config(s->dec)->num_decoder_layers);
	decoder_state_free(x.st);
	progress_done(s);
	rc = emit(s, d, &res, err);
	search_result_free(&res);
	return rc;
}

int summ_doc(lc_doc *d, void *ctx, lc_err *err)
{
	summarizer *s = ctx;
	int64_t L;
	const float *enc;
	const uint16_t *enc16;

	if (hidden_of(s, d, &L, &enc, &enc16, &s->conv[0], &s->conv_cap[0], err) < 0)
		return -1;
	return decode_one(s, d, enc, enc16, L, err);
}

struct batch_progress {
	summarizer *s;
	const char *first;
	int n;
};

static void on_batch_step(void *ctx, int step, int running)
{
	struct batch_progress *b = ctx;

	say(b->s, b->s->o.progress, "%d documents from %s: %d steps, %d still decoding", b->n,
	    b->first, step, running);
}

int summ_docs(lc_doc *docs, int n, void *ctx, int *bad, lc_err *err)
{
	summarizer *s = ctx;
	struct batch_progress bp = { s, docs[0].name, 0 };
	gen_job *jobs = s->jobs;
	int ok = 0, rc = 0;
	lc_err first;

	if (n > s->o.batch)
		return lc_fail(err, "%d documents in a batch of at most %d", n, s->o.batch);
	for (; ok < n; ok++) {
		gen_job *j = &jobs[ok];
		memset(j, 0, sizeof *j);
		if (hidden_of(s, &docs[ok], &j->L, &j->enc, &j->enc16, &s->conv[ok], &s->conv_cap[ok],
		              &first) < 0)
			break;
		j->o = doc_opts(s, &docs[ok]);
	}
	bp.n = ok;
	if (ok > 1 && gen_batch_run(s->dec, jobs, ok, s->o.threads, on_batch_step, &bp, err) == 0) {
		progress_done(s);
		for (int i = 0; i < ok; i++) {
			/* a search the batch could not start a thread for: alone */
			if (rc == 0 && jobs[i].rc > 0 &&
			    decode_one(s, &docs[i], jobs[i].enc, jobs[i].enc16, jobs[i].L, err) < 0) {
				*bad = i;
				rc = -1;
			}
			if (jobs[i].rc > 0)
				continue;
			if (rc == 0 && jobs[i].rc < 0) {
				*err = jobs[i].err;
				rc = -1;
			}
			if (rc == 0 && emit(s, &docs[i], &jobs[i].res, err) < 0)
				rc = -1;
			if (rc < 0 && *bad < 0)
				*bad = i;
			if (jobs[i].rc == 0)
				search_result_free(&jobs[i].res);
		}
	} else {
		/* one document, or a batch that cannot start (memory): alone */
		for (int i = 0; rc == 0 && i < ok; i++)
			if (decode_one(s, &docs[i], jobs[i].enc, jobs[i].enc16, jobs[i].L, err) < 0) {
				*bad = i;
				rc = -1;
			}
	}
	if (rc == 0 && ok < n) {
		*bad = ok;
		*err = first;
		rc = -1;
	}
	/* a large document's converted states do not stay for the next batch */
	for (int i = 0; i < n; i++)
		if (s->conv_cap[i] * sizeof(float) > BATCH_KEEP_SCRATCH) {
			free(s->conv[i]);
			s->conv[i] = NULL;
			s->conv_cap[i] = 0;
		}
	return rc;
}

int summ_batch_docs(const summarizer *s)
{
	int per = BATCH_ROWS / search_rows(&s->o.search);

	return per < 1 ? 1 : per < s->o.batch ? per : s->o.batch;
}

/* --- the summarizer --- */

static void warn(const summ_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

summarizer *summ_new(const lc_model *model, const lc_decoder *dec, const lc_tokenizer *tok,
                     const summ_opts *o, FILE *out, lc_err *err)
{
	summarizer *s;

	if (!tok && (o->format == SUMM_TEXT || o->format == SUMM_JSONL)) {
		lc_fail(err, "summaries as text need a tokenizer");
		return NULL;
	}
	if (o->batch < 1) {
		lc_fail(err, "a batch of %d documents", o->batch);
		return NULL;
	}
	/* a tokenizer of another model spells the ids as other text: said,
	 * not refused (a test model may take any tokenizer's first ids) */
	if (tok && tok_spells_model(tok, model_config(model)->vocab_size, err) < 0)
		warn(o, "tokenizer %s: %s", tok_path(tok), err->msg);
	if (!(s = calloc(1, sizeof *s))) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	s->model = model;
	s->dec = dec;
	s->tok = tok;
	s->o = *o;
	s->out = out;
	if (o->format == SUMM_STREAM && !(s->w = stream_writer_new(out, err))) {
		summ_free(s);
		return NULL;
	}
	s->conv = calloc((size_t)o->batch, sizeof *s->conv);
	s->conv_cap = calloc((size_t)o->batch, sizeof *s->conv_cap);
	s->jobs = calloc((size_t)o->batch, sizeof *s->jobs);
	if (!s->conv || !s->conv_cap || !s->jobs) {
		lc_fail(err, "out of memory for --batch %d", o->batch);
		summ_free(s);
		return NULL;
	}
	return s;
}

int summ_finish(summarizer *s, lc_err *err)
{
	lc_writer *w = s->w;

	s->w = NULL;
	return w ? stream_writer_close(w, err) : 0;
}

void summ_free(summarizer *s)
{
	if (!s)
		return;
	if (s->w)
		stream_writer_abort(s->w);
	for (int i = 0; s->conv && i < s->o.batch; i++)
		free(s->conv[i]);
	free(s->conv);
	free(s->conv_cap);
	free(s->jobs);
	free(s->text);
	free(s);
}

/* --- lc-decode's command line --- */

static const char *const format_names[] = { "text", "ids", "stream", "jsonl" };

int summ_format_parse(const char *name)
{
	for (int f = SUMM_TEXT; f <= SUMM_JSONL; f++)
		if (!strcmp(name, format_names[f]))
			return f;
	return -1;
}

const char *summ_format_name(enum summ_format f) { return format_names[f]; }

static void warn(const summ_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const summ_opts *o, const char *fmt, ...)
{
	char line[sizeof ((lc_err *)0)->msg + 128];
	va_list ap;

	if (!o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	o->warn(o->ctx, line);
}

int summ_check_options(const summ_opts *o, search_opts *cl, const int given[GEN_NKEYS],
                       int max_length, int info, int nfiles, lc_err *err)
{
	if (o->nul && o->format != SUMM_TEXT)
		return lc_fail(err, "-z applies to -f text only");
	if (given[GEN_MAX_LENGTH] && given[GEN_MAX_NEW])
		warn(o, "--max-new %d and --max-length %d: --max-new wins, as in transformers",
		     cl->max_new, max_length);
	else if (given[GEN_MAX_LENGTH])
		cl->max_new = max_length - 1;   /* transformers: max_length counts the start token */
	if (info && nfiles > 0)
		return lc_fail(err, "--info takes no input files");
	return 0;
}

int summ_settings(gen_settings *g, summ_opts *o, const lc_model *m, const search_opts *cl,
                  const int given[GEN_NKEYS], lc_err *err)
{
	const lc_gencfg *f = model_generation(m);
	search_opts own;
	lc_err e;

	if (gen_settings_init(g, m, err) < 0)
		return -1;
	/* said, not refused: the summaries are still the model's, only
	 * perhaps not transformers' to the token */
	if (f->ignored)
		warn(o, "%s/%s: \"%s\" is not applied by lc: its summaries may differ from "
		     "transformers'", model_dir(m), f->source, f->ignored);
	if (f->eos_none && f->source && !strcmp(f->source, "config.json"))
		warn(o, "%s/config.json: \"eos_token_id\" is null: as in transformers, "
		     "summaries end only at the length limit", model_dir(m));
	else if (f->eos_none)
		warn(o, "%s/generation_config.json has no \"eos_token_id\": as in transformers, "
		     "summaries end only at the length limit (config.json's is %d)", model_dir(m),
		     model_config(m)->eos_id);
	own = g->o;
	gen_settings_override(g, cl, given);
	o->search = g->o;
	/* wherever either came from: generate() warns and stops at the most */
	if (o->search.min_new > o->search.max_new)
		warn(o, "at least %d new tokens (min_new_tokens %d, min_length %d) exceeds the most, "
		     "%d: the summaries end at %d tokens, as in transformers", o->search.min_new,
		     g->min_new_tokens, g->min_length, o->search.max_new, o->search.max_new);
	if (search_opts_check(&o->search, err) == 0)
		return 0;
	/* the model's own settings at fault (a forced id outside its
	 * vocabulary): a data error naming the model, not a usage error */
	if (search_opts_check(&own, &e) < 0)
		return lc_fail(err, "%s: the model's generation settings (config.json, "
		               "generation_config.json): %s", model_dir(m), e.msg);
	return -2;
}

void summ_print_settings(const summ_opts *o, const lc_model *m, const lc_decoder *d,
                         const gen_settings *g, FILE *f)
{
	char from[160];
	uint64_t x = decoder_cross_cache(d, from, sizeof from);

	fprintf(f, "model\t%s\t%s\n", model_dir(m), model_config(m)->arch->name);
	gen_settings_print(g, f);
	cmp_info(f);
	fprintf(f, "threads\t%d\t%s\n", o->threads, o->threads_from ? o->threads_from : "lc default");
	fprintf(f, "cross_cache\t%lluM\t%s\n", (unsigned long long)(x >> 20), from);
}

int summ_tokenizer(const summ_opts *o, const char *topt, const char *mdir, lc_tokenizer **tok,
                   lc_err *err)
{
	char why[sizeof err->msg];
	int none;

	if ((*tok = tok_open_model(topt, "-t", mdir, &none, err)))
		return 0;
	if (!none)
		return -1;
	snprintf(why, sizeof why, "%s", err->msg);
	if (o->format != SUMM_STREAM) {
		lc_fail(err, "-f %s needs the model's tokenizer: %s (give -t, or use -f ids or -f stream)",
		        format_names[o->format], why);
		return -2;
	}
	warn(o, "no tokenizer (%s): the stream gets \"tokens\" but no \"text\"", why);
	return 0;
}

int summ_files(summarizer *s, int n, char *const *files, lc_err *err)
{
	int rc = s->o.batch > 1 ? stream_each_batch(n, files, summ_batch_docs(s), SUMM_BATCH_BYTES,
	                                            summ_docs, s, err)
	                        : stream_each(n, files, summ_doc, s, err);

	return rc < 0 ? -1 : summ_finish(s, err);
}
