/*
 * test_pipe_decode: the summarizer (pipe/decode.h) on the oracle's tiny
 * LOCOST model (tests/data/locost): documents decoded one at a time and
 * in a batch give the same ids in the same order; in a batch with a bad
 * document, the ones before it are written and *bad names it; the stream
 * format drops "hidden", passes other records on and names the n-best
 * "tokens.2"; warnings come once; progress ends with its NULL line.
 * lc-decode's command line: -f's and --early-stopping's names, the checks
 * across options in their order, the settings in force and --info's
 * lines.
 */
#include <stdint.h>
#include <string.h>

#include "arch/decoder.h"
#include "arch/model.h"
#include "gen/settings.h"
#include "pipe/decode.h"
#include "stream/stream.h"
#include "t.h"

static const char *cases[] = { "L0007", "L0064", "L0001" };
#define NDOC 3
static lc_model *model;
static lc_decoder *dec;
static lc_doc docs[NDOC];
static search_opts so;
static int nwarn, nprog, nclear;

static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
	nwarn++;
}

static void on_progress(void *ctx, const char *line)
{
	(void)ctx;
	if (line)
		nprog++;
	else
		nclear++;
}

/* Document k: "hidden" from the case's encoder output (by model "fp"
 * when fp is given) after a "source" record. */
static int make_doc(lc_doc *d, int k, const char *fp)
{
	char rel[128], name[16];
	size_t len = 0;
	float *h;
	uint64_t dm = (uint64_t)model_config(model)->d_model, dims[2], one = 1;
	lc_tensor *t = NULL;
	lc_err err;

	snprintf(rel, sizeof rel, "locost/cases/%s/enc_out.f32", cases[k]);
	snprintf(name, sizeof name, "doc%d", k);
	if (!T_OK((h = t_slurp(t_data(rel), &len)) != NULL, "no %s", rel))
		return -1;
	dims[0] = len / sizeof(float) / dm;
	dims[1] = dm;
	memset(d, 0, sizeof *d);
	if (!T_OK(doc_init(d, name, &err) == 0 &&
	          doc_add_tensor(d, "source", LC_I32, 1, &one, &err) &&
	          (t = doc_add_tensor(d, "hidden", LC_F32, 2, dims, &err)), "%s", err.msg)) {
		free(h);
		return -1;
	}
	memcpy(t->data, h, dims[0] * dm * sizeof(float));
	free(h);
	if (fp && meta_set(&t->meta, "model", fp, &err) < 0)
		return -1;
	return 0;
}

static summarizer *open_summ(enum summ_format f, int batch, FILE *out)
{
	summ_opts o = { .format = f, .threads = 2, .batch = batch, .search = so,
	                .progress = on_progress, .warn = on_warn };
	lc_err err;
	summarizer *s = summ_new(model, dec, NULL, &o, out, &err);

	T_OK(s != NULL, "summ_new: %s", err.msg);
	return s;
}

/* The ids of docs[0..n), one at a time (batch 1) or together, into buf. */
static size_t run_ids(int batch, int n, int *bad, char *buf, size_t cap, lc_err *err)
{
	FILE *f = tmpfile();
	summarizer *s = open_summ(SUMM_IDS, batch, f);
	int rc = 0;
	size_t len;

	*bad = -1;
	if (!s)
		return 0;
	if (batch == 1)
		for (int i = 0; rc == 0 && i < n; i++)
			rc = summ_doc(&docs[i], s, err);
	else
		rc = summ_docs(docs, n, s, bad, err);
	T_EQ_I(summ_finish(s, err), 0);
	summ_free(s);
	rewind(f);
	len = fread(buf, 1, cap - 1, f);
	buf[len] = 0;
	fclose(f);
	return rc < 0 ? 0 : len;
}

static void test_alone_and_batched(void)
{
	static char one[1 << 16], all[1 << 16];
	lc_err err;
	int bad, lines = 0;

	nwarn = nprog = nclear = 0;
	T_OK(run_ids(1, NDOC, &bad, one, sizeof one, &err) > 0, "%s", err.msg);
	T_OK(nprog > 0 && nclear == NDOC, "progress %d lines, %d clears", nprog, nclear);
	T_OK(run_ids(4, NDOC, &bad, all, sizeof all, &err) > 0, "%s", err.msg);
	T_EQ_S(all, one);
	for (char *p = one; *p; p++)
		lines += *p == '\n';
	T_EQ_I(lines, NDOC);
	T_EQ_I(nwarn, 0);
}

static void test_bad_in_batch(void)
{
	static char one[1 << 16], got[1 << 16];
	lc_tensor *h = doc_find(&docs[1], "hidden");
	lc_err err;
	int bad;

	run_ids(1, 1, &bad, one, sizeof one, &err);
	h->name[0] = 'H';             /* "Hidden": no "hidden" tensor */
	run_ids(4, NDOC, &bad, got, sizeof got, &err);
	h->name[0] = 'h';
	T_EQ_I(bad, 1);
	T_EQ_S(err.msg, "no \"hidden\" tensor (is this lc-encode's output?)");
	T_EQ_S(got, one);             /* the first document's summary, written */
}

static void test_stream_nbest(void)
{
	FILE *f = tmpfile();
	summarizer *s;
	lc_reader *r;
	lc_doc d = { 0 };
	lc_err err;
	search_opts keep = so;

	so.num_beams = 2;
	so.num_return = 2;
	s = open_summ(SUMM_STREAM, 1, f);
	so = keep;
	if (!s)
		return;
	T_EQ_I(summ_doc(&docs[0], s, &err), 0);
	T_EQ_I(summ_finish(s, &err), 0);
	summ_free(s);
	rewind(f);
	r = stream_reader_new(f, "test", &err);
	T_OK(r && stream_read_doc(r, &d, &err) == 1, "%s", err.msg);
	T_EQ_S(d.name, "doc0");
	T_OK(doc_find(&d, "source") != NULL, "source passed on");
	T_OK(doc_find(&d, "hidden") == NULL, "hidden dropped");
	T_OK(doc_find(&d, "tokens") && doc_find(&d, "tokens.2"), "two summaries");
	T_OK(doc_find(&d, "text") == NULL, "no text without a tokenizer");
	T_EQ_S(meta_get(&doc_find(&d, "tokens")->meta, "model"), model_fingerprint(model));
	T_EQ_I(stream_read_doc(r, &d, &err), 0);
	doc_free(&d);
	stream_reader_free(r);
	fclose(f);
}

/* States made by another model: one warning per summarizer. */
static void test_warn_once(void)
{
	static char buf[1 << 16];
	lc_err err;
	int bad;

	for (int k = 0; k < NDOC; k++) {
		doc_free(&docs[k]);
		if (make_doc(&docs[k], k, "0123456789abcdef") < 0)
			return;
	}
	nwarn = 0;
	T_OK(run_ids(1, NDOC, &bad, buf, sizeof buf, &err) > 0, "%s", err.msg);
	T_EQ_I(nwarn, 1);
	T_OK(run_ids(4, NDOC, &bad, buf, sizeof buf, &err) > 0, "%s", err.msg);
	T_EQ_I(nwarn, 2);
}

static void test_needs_tokenizer(void)
{
	summ_opts o = { .format = SUMM_JSONL, .batch = 1, .search = so };
	lc_err err;

	T_OK(summ_new(model, dec, NULL, &o, stdout, &err) == NULL, "jsonl without a tokenizer");
}

static void test_names(void)
{
	static const char *const f[] = { "text", "ids", "stream", "jsonl" };

	for (int i = 0; i < 4; i++) {
		T_EQ_I(summ_format_parse(f[i]), i);
		T_EQ_S(summ_format_name((enum summ_format)i), f[i]);
	}
	T_EQ_I(summ_format_parse("json"), -1);
	T_EQ_I(search_early_parse("false"), SEARCH_EARLY_FALSE);
	T_EQ_I(search_early_parse("true"), SEARCH_EARLY_TRUE);
	T_EQ_I(search_early_parse("never"), SEARCH_EARLY_NEVER);
	T_EQ_I(search_early_parse("True"), -1);
	T_EQ_S(search_early_name(SEARCH_EARLY_NEVER), "never");
}

/* The checks across options, in lc-decode's order; --max-length's N is
 * max_new N - 1 unless --max-new is given, which wins with a warning. */
static void test_check_options(void)
{
	summ_opts o = { .format = SUMM_IDS, .nul = 1, .warn = on_warn };
	search_opts cl;
	int given[GEN_NKEYS] = { 0 };
	lc_err err;

	search_opts_default(&cl);
	T_OK(summ_check_options(&o, &cl, given, 0, 1, 1, &err) < 0 &&
	     !strcmp(err.msg, "-z applies to -f text only"), "%s", err.msg);
	o.format = SUMM_TEXT;
	T_OK(summ_check_options(&o, &cl, given, 0, 0, 3, &err) == 0, "%s", err.msg);
	given[GEN_MAX_LENGTH] = 1;
	T_OK(summ_check_options(&o, &cl, given, 9, 0, 0, &err) == 0, "%s", err.msg);
	T_EQ_I(cl.max_new, 8);
	nwarn = 0;
	given[GEN_MAX_NEW] = 1;
	cl.max_new = 5;
	T_OK(summ_check_options(&o, &cl, given, 9, 0, 0, &err) == 0, "%s", err.msg);
	T_EQ_I(cl.max_new, 5);
	T_EQ_I(nwarn, 1);
	/* more than the most: generate() warns and ends at the most; so does
	 * lc (it refused; the warning comes with the settings, t7000) */
	given[GEN_MIN_NEW] = 1;
	given[GEN_MAX_LENGTH] = 0;
	cl.min_new = 6;
	T_OK(summ_check_options(&o, &cl, given, 9, 0, 0, &err) == 0, "%s", err.msg);
	cl.max_new = 5;
	cl.min_new = 5;
	T_OK(summ_check_options(&o, &cl, given, 9, 1, 1, &err) < 0 &&
	     !strcmp(err.msg, "--info takes no input files"), "%s", err.msg);
	T_OK(summ_check_options(&o, &cl, given, 9, 1, 0, &err) == 0, "%s", err.msg);
}

/* The command line's values over the model's; a setting that does not
 * go with the others is -2 (a usage error). */
static void test_settings(void)
{
	summ_opts o = { .format = SUMM_IDS };
	search_opts cl;
	int given[GEN_NKEYS] = { 0 };
	gen_settings g;
	lc_err err;
	char buf[4096] = "";
	FILE *f;

	search_opts_default(&cl);
	cl.num_beams = 3;
	given[GEN_BEAMS] = 1;
	T_OK(summ_settings(&g, &o, model, &cl, given, &err) == 0, "%s", err.msg);
	T_EQ_I(o.search.num_beams, 3);
	T_EQ_S(g.src[GEN_BEAMS], "command line");
	if ((f = fmemopen(buf, sizeof buf - 1, "w"))) {
		summ_print_settings(&o, model, dec, &g, f);
		fclose(f);
	}
	T_OK(!strncmp(buf, "model\t", 6) && strstr(buf, "\nnum_beams\t3\tcommand line\n"), "%s",
	     buf);
	cl.num_return = 4;
	given[GEN_NUM_RETURN] = 1;
	T_EQ_I(summ_settings(&g, &o, model, &cl, given, &err), -2);
}

int main(void)
{
	lc_err err = { "" };
	gen_settings gs;

	model = model_open(t_data("locost"), MODEL_COPY, &err);
	if (!T_OK(model != NULL, "model_open: %s", err.msg))
		return t_done();
	dec = decoder_new(model, &err);
	if (!T_OK(dec != NULL, "decoder_new: %s", err.msg) ||
	    !T_OK(gen_settings_init(&gs, model, &err) == 0, "%s", err.msg))
		return t_done();
	so = gs.o;
	so.max_new = 12;
	for (int k = 0; k < NDOC; k++)
		if (make_doc(&docs[k], k, NULL) < 0)
			return t_done();
	T_RUN(test_alone_and_batched);
	T_RUN(test_bad_in_batch);
	T_RUN(test_stream_nbest);
	T_RUN(test_warn_once);
	T_RUN(test_needs_tokenizer);
	T_RUN(test_names);
	T_RUN(test_check_options);
	T_RUN(test_settings);
	for (int k = 0; k < NDOC; k++)
		doc_free(&docs[k]);
	decoder_free(dec);
	model_free(model);
	return t_done();
}
