/*
 * test_bart: BART against transformers 4.36.2 (tests/data/bart, from the
 * oracle's tiny model, both weight files): the encoder's hidden states
 * after the embeddings and after every layer, its output, the
 * teacher-forced logits, and generation (greedy, beam search with
 * no-repeat n-grams and length penalty, and with forced BOS/EOS as
 * bart-large-cnn does) at L = 1, 7, 100, 1000.
 */
#include <stdint.h>

#include "arch/bart.h"
#include "arch/decoder.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "gen/search.h"
#include "t.h"

#define TOL 1e-4

static const char *lens[] = { "len0001", "len0007", "len0100", "len1000" };
static double worst_enc, worst_logits;

static void *golden(const char *dir, const char *name, size_t *n)
{
	char rel[256];
	size_t len = 0;
	void *p;

	snprintf(rel, sizeof rel, "bart/goldens/%s%s%s", dir, *dir ? "/" : "", name);
	p = t_slurp(t_data(rel), &len);
	*n = len / 4;
	return p;
}

/* max |got - want| <= TOL max |want| */
static double cmp(const char *what, const float *got, const float *want, size_t n)
{
	double m = 0, e = 0;

	for (size_t i = 0; i < n; i++) {
		m = fmax(m, fabs((double)want[i]));
		e = fmax(e, fabs((double)got[i] - want[i]));
		if (got[i] != got[i])
			e = INFINITY;
	}
	T_OK(e <= TOL * m, "%s: max error %.3g, max value %.3g (relative %.3g)", what, e, m, e / m);
	return m > 0 ? e / m : e;
}

typedef struct ctx {
	dec_state *s;
} ctx;

static int cb_step(void *c, const int32_t *tok, float *logits, lc_err *err)
{
	return decoder_step(((ctx *)c)->s, tok, logits, err);
}

static int cb_reorder(void *c, const int32_t *src, lc_err *err)
{
	return decoder_reorder(((ctx *)c)->s, src, err);
}

/* Generation as the oracle's generation_*.json ask: max_new_tokens 24. */
static void generate(lc_decoder *dec, const lc_model *m, const float *enc, int64_t L,
                     const char *dir, const char *which, int beams, int forced)
{
	const lc_config *c = model_config(m);
	search_opts o;
	search_result res;
	search_model sm;
	ctx cx;
	lc_err err;
	size_t n;
	int32_t *want = golden(dir, which, &n);
	int ok;

	if (!T_OK(want != NULL, "%s/%s", dir, which))
		return;
	search_opts_default(&o);
	o.vocab = c->vocab_size;
	o.start_id = c->decoder_start_id;
	o.eos_id = c->eos_id;
	o.max_new = 24;
	o.num_beams = beams;
	if (beams > 1) {
		o.length_penalty = 2.0;
		o.no_repeat_ngram = 3;
		o.early_stopping = SEARCH_EARLY_TRUE;
	}
	if (forced) {
		o.forced_bos = model_generation(m)->forced_bos;
		o.forced_eos = model_generation(m)->forced_eos;
	}
	cx.s = decoder_state_new(dec, enc, L, beams, o.max_new, &err);
	if (!T_OK(cx.s != NULL, "%s", err.msg)) {
		free(want);
		return;
	}
	sm = (search_model){ &cx, cb_step, cb_reorder };
	ok = search_run(&o, &sm, &res, &err) == 0;
	T_OK(ok, "%s", err.msg);
	/* the goldens hold the start token first */
	if (ok) {
		int same = (size_t)res.n + 1 == n && want[0] == c->decoder_start_id;
		for (int i = 0; same && i < res.n; i++)
			same = res.ids[i] == want[i + 1];
		T_OK(same, "%s %s: %d ids, want %zu (first %d, want %d)", dir, which, res.n + 1, n,
		     res.n ? res.ids[0] : -1, n > 1 ? want[1] : -1);
		if (beams > 1) {
			size_t ns;
			float *ws = golden(dir, forced ? "beam_forced_scores.f32" : "beam_scores.f32", &ns);
			T_OK(ws && fabs(res.score - ws[0]) <= 1e-4 * fabs(ws[0]),
			     "%s %s score %.7g, want %.7g", dir, which, res.score, ws ? ws[0] : NAN);
			free(ws);
		}
		search_result_free(&res);
	}
	decoder_state_free(cx.s);
	free(want);
}

static void run_model(const char *what)
{
	lc_err err;
	lc_model *m = model_open(t_data(what), &err);
	lc_encoder *e;
	lc_decoder *dec;
	const lc_config *c;

	if (!T_OK(m != NULL, "%s: %s", what, err.msg))
		return;
	c = model_config(m);
	T_EQ_S(c->arch->name, "bart");
	T_OK(model_generation(m)->forced_bos == 0 && model_generation(m)->forced_eos == 2,
	     "forced BOS/EOS from generation_config.json");
	e = encoder_new(m, 2, &err);
	dec = decoder_new(m, &err);
	if (!T_OK(e && dec, "%s", err.msg))
		goto out;
	T_EQ_I(encoder_max_len(e), 1024);
	for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
		size_t n, ng, nt;
		int32_t *ids = golden(lens[k], "input_ids.i32", &n);
		int32_t *din = golden("", "decoder_input_ids.i32", &nt);
		int64_t L = (int64_t)n;
		int d = c->d_model, V = c->vocab_size;
		float *out = malloc((size_t)(L * d) * sizeof *out), *g, *logits;
		char nm[64];

		if (!T_OK(ids && din && out, "%s inputs", lens[k]))
			continue;
		for (int i = 0; i <= c->num_layers; i++) {
			T_OK(bart_encode_layers(m, ids, L, out, i, &err) == 0, "%s", err.msg);
			snprintf(nm, sizeof nm, "enc_hidden_%d.f32", i);
			g = golden(lens[k], nm, &ng);
			if (T_OK(g && ng == (size_t)(L * d), "%s %s", lens[k], nm))
				worst_enc = fmax(worst_enc, cmp(nm, out, g, ng));
			free(g);
		}
		T_OK(encoder_run(e, ids, L, out, NULL, NULL, &err) == 0, "%s", err.msg);
		g = golden(lens[k], "enc_out.f32", &ng);
		if (T_OK(g && ng == (size_t)(L * d), "%s enc_out", lens[k]))
			worst_enc = fmax(worst_enc, cmp("enc_out", out, g, ng));
		free(g);
		/* teacher forcing: one step per decoder input */
		g = golden(lens[k], "logits.f32", &ng);
		logits = malloc((size_t)V * sizeof *logits);
		if (T_OK(g && ng == nt * (size_t)V, "%s logits", lens[k])) {
			dec_state *s = decoder_state_new(dec, out, L, 1, (int)nt, &err);
			for (size_t t = 0; s && t < nt; t++) {
				if (decoder_step(s, &din[t], logits, &err) < 0)
					break;
				worst_logits = fmax(worst_logits, cmp("logits", logits, g + t * (size_t)V,
				                                       (size_t)V));
			}
			decoder_state_free(s);
		}
		free(g);
		free(logits);
		generate(dec, m, out, L, lens[k], "greedy_ids.i32", 1, 0);
		generate(dec, m, out, L, lens[k], "beam_ids.i32", 4, 0);
		generate(dec, m, out, L, lens[k], "beam_forced_ids.i32", 4, 1);
		free(ids);
		free(din);
		free(out);
	}
out:
	encoder_free(e);
	decoder_free(dec);
	model_free(m);
}

static void test_safetensors(void) { run_model("bart/tiny_bart"); }
static void test_bin(void) { run_model("bart/tiny_bart/pytorch_model.bin"); }

/* Inputs longer than the position table: refused, or cut as HF does. */
static void test_limits(void)
{
	lc_err err;
	lc_model *m = model_open(t_data("bart/tiny_bart"), &err);
	lc_encoder *e = m ? encoder_new(m, 1, &err) : NULL;
	lc_decoder *dec = m ? decoder_new(m, &err) : NULL;
	int32_t *ids = calloc(1030, sizeof *ids);
	float *out = malloc(1030 * 64 * sizeof *out);

	if (!T_OK(e && dec && ids && out, "%s", err.msg))
		goto out;
	for (int i = 0; i < 1030; i++)
		ids[i] = 4 + i % 900;
	ids[0] = 0;
	ids[1029] = 2;
	T_OK(encoder_run(e, ids, 1030, out, NULL, NULL, &err) < 0 &&
	     strstr(err.msg, "1030 tokens") && strstr(err.msg, "1024 positions"), "%s", err.msg);
	T_EQ_I(encoder_truncate(e, ids, 1030), 1024);
	T_OK(ids[1023] == 2 && ids[1022] == 4 + 1022 % 900, "the eos stays last");
	T_OK(encoder_run(e, ids, 1024, out, NULL, NULL, &err) == 0, "%s", err.msg);
	T_OK(!decoder_state_new(dec, out, 1024, 1, 1025, &err) && strstr(err.msg, "1024 positions"),
	     "%s", err.msg);
out:
	free(ids);
	free(out);
	encoder_free(e);
	decoder_free(dec);
	model_free(m);
}

int main(void)
{
	T_RUN(test_safetensors);
	T_RUN(test_bin);
	printf("# worst relative error: encoder %.3g, logits %.3g\n", worst_enc, worst_logits);
	T_RUN(test_limits);
	return t_done();
}
