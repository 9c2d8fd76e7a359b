/*
 * test_bart: BART against transformers 4.36.2 (tests/data/bart, from the
 * oracle's tiny model, both weight files): the encoder's hidden states
 * after the embeddings and after every layer, its output, the
 * teacher-forced logits, and generation (greedy, beam search with
 * no-repeat n-grams and length penalty, and with forced BOS/EOS as
 * bart-large-cnn does) at L = 1, 7, 100, 1000; then the same logits and
 * searches with all four lengths in one decoder state (gen/batch.h).
 */
#include <stdint.h>

#include "arch/bart.h"
#include "arch/decoder.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "gen/batch.h"
#include "gen/search.h"
#include "t.h"
#include "t_dec.h"

/* Parity with the reference, relative to the golden's largest value:
 * measured 6e-7 (encoder states) and 1.1e-6 (logits) on the CPU; a GPU's
 * states differed from the CPU's by 3.0e-6 (make check-cuda runs these
 * too, in another summation order): 2e-5 leaves room for the order of
 * float32 sums, not for an error. */
#define TOL 2e-5

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

/* Generation as the oracle's generation_*.json ask: max_new_tokens 24. */
static void generate(lc_decoder *dec, const lc_model *m, const float *enc, int64_t L,
                     const char *dir, const char *which, int beams, int forced)
{
	const lc_config *c = model_config(m);
	search_opts o;
	size_t n, ns;
	int32_t *want = golden(dir, which, &n);
	float *ws = beams > 1 ? golden(dir, forced ? "beam_forced_scores.f32" : "beam_scores.f32",
	                               &ns) : NULL;
	char what[96];

	snprintf(what, sizeof what, "%s %s", dir, which);
	if (!T_OK(want != NULL && (beams == 1 || ws), "%s: goldens", what))
		goto out;
	t_dec_oracle_opts(&o, c, beams);
	if (forced) {
		o.forced_bos = model_generation(m)->forced_bos;
		o.forced_eos = model_generation(m)->forced_eos;
	}
	t_dec_generate(dec, enc, L, &o, want, n, ws, what);
out:
	free(want);
	free(ws);
}

#define NLEN (sizeof lens / sizeof *lens)

/* Every length's teacher-forced logits and searches in one state. */
static void batched(lc_decoder *dec, const lc_model *m, float *const *outs, const int64_t *Ls)
{
	const lc_config *c = model_config(m);
	static const char *const which[3] = { "greedy_ids.i32", "beam_ids.i32",
	                                      "beam_forced_ids.i32" };
	gen_job jobs[NLEN * 3];
	int32_t *want[NLEN * 3] = { 0 };
	float *wsc[NLEN * 3] = { 0 }, *logits = NULL, *g[NLEN] = { 0 };
	size_t nw[NLEN * 3], nt = 0, ng;
	int32_t *din = golden("", "decoder_input_ids.i32", &nt), tok[NLEN];
	dec_input in[NLEN];
	dec_state *s = NULL;
	lc_err err = { "" };
	int V = c->vocab_size, nj = 0;
	double worst = 0;

	/* teacher forcing, the four documents as four rows of one state */
	for (size_t k = 0; k < NLEN; k++) {
		in[k] = (dec_input){ outs[k], Ls[k], 1, NULL };
		g[k] = golden(lens[k], "logits.f32", &ng);
		if (!T_OK(g[k] && ng == nt * (size_t)V, "%s logits", lens[k]))
			goto out;
	}
	logits = malloc(NLEN * (size_t)V * sizeof *logits);
	if (!T_OK(din && logits && (s = decoder_batch_new(dec, in, NLEN, (int)nt, &err)),
	          "batch state: %s", err.msg))
		goto out;
	T_EQ_I(decoder_docs(s), (int)NLEN);
	T_EQ_I(decoder_rows(s), (int)NLEN);
	for (size_t t = 0; t < nt; t++) {
		for (size_t k = 0; k < NLEN; k++)
			tok[k] = din[t];
		if (!T_OK(decoder_step(s, tok, logits, &err) == 0, "%s", err.msg))
			goto out;
		for (size_t k = 0; k < NLEN; k++)
			worst = fmax(worst, t_rel_err("batched logits", logits + k * (size_t)V,
			                              g[k] + t * (size_t)V, (size_t)V, TOL));
	}
	printf("# batched teacher-forced logits: worst relative error %.3g\n", worst);

	/* greedy, beam and forced beam search of every length, together */
	for (size_t k = 0; k < NLEN; k++)
		for (int w = 0; w < 3; w++, nj++) {
			size_t ns;
			jobs[nj] = (gen_job){ .enc = outs[k], .L = Ls[k] };
			t_dec_oracle_opts(&jobs[nj].o, c, w ? 4 : 1);
			if (w == 2) {
				jobs[nj].o.forced_bos = model_generation(m)->forced_bos;
				jobs[nj].o.forced_eos = model_generation(m)->forced_eos;
			}
			want[nj] = golden(lens[k], which[w], &nw[nj]);
			if (w)
				wsc[nj] = golden(lens[k], w == 2 ? "beam_forced_scores.f32" :
				                 "beam_scores.f32", &ns);
			if (!T_OK(want[nj] && (!w || wsc[nj]), "%s %s goldens", lens[k], which[w]))
				goto out;
		}
	if (!T_OK(gen_batch_run(dec, jobs, nj, 2, NULL, NULL, &err) == 0, "%s", err.msg))
		goto out;
	for (int j = 0; j < nj; j++) {
		const search_result *r = &jobs[j].res;
		int same;
		if (!T_OK(jobs[j].rc == 0, "batched search %d: %s", j, jobs[j].err.msg))
			continue;
		same = (size_t)r->n + 1 == nw[j] && want[j][0] == jobs[j].o.start_id;
		for (int i = 0; same && i < r->n; i++)
			same = r->ids[i] == want[j][i + 1];
		T_OK(same, "batched %s %s: %d ids, want %zu", lens[j / 3], which[j % 3], r->n + 1,
		     nw[j]);
		if (wsc[j])
			/* relative to the score itself, a small number (-0.03):
			 * 1.1e-6 measured on the CPU, not yet on a GPU */
			T_OK(fabs(r->score - wsc[j][0]) <= 1e-4 * fabs(wsc[j][0]),
			     "batched %s %s: score %.7g, want %.7g", lens[j / 3], which[j % 3], r->score,
			     wsc[j][0]);
		search_result_free(&jobs[j].res);
	}
out:
	decoder_state_free(s);
	for (size_t k = 0; k < NLEN * 3; k++) {
		free(want[k]);
		free(wsc[k]);
	}
	for (size_t k = 0; k < NLEN; k++)
		free(g[k]);
	free(din);
	free(logits);
}

static void run_model(const char *what)
{
	lc_err err;
	lc_model *m = model_open(t_data(what), 0, &err);
	lc_encoder *e;
	lc_decoder *dec;
	const lc_config *c;
	float *outs[NLEN] = { 0 };
	int64_t Ls[NLEN] = { 0 };
	int all = 1;

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
		float *out = malloc((size_t)(L * d) * sizeof *out), *g;
		char nm[64];

		if (!T_OK(ids && din && out, "%s inputs", lens[k])) {
			all = 0;
			continue;
		}
		for (int i = 0; i <= c->num_layers; i++) {
			T_OK(bart_encode_layers(m, ids, L, out, i, &err) == 0, "%s", err.msg);
			snprintf(nm, sizeof nm, "enc_hidden_%d.f32", i);
			g = golden(lens[k], nm, &ng);
			if (T_OK(g && ng == (size_t)(L * d), "%s %s", lens[k], nm))
				worst_enc = fmax(worst_enc, t_rel_err(nm, out, g, ng, TOL));
			free(g);
		}
		T_OK(encoder_run(e, ids, L, out, NULL, NULL, &err) == 0, "%s", err.msg);
		g = golden(lens[k], "enc_out.f32", &ng);
		if (T_OK(g && ng == (size_t)(L * d), "%s enc_out", lens[k]))
			worst_enc = fmax(worst_enc, t_rel_err("enc_out", out, g, ng, TOL));
		free(g);
		/* teacher forcing: one step per decoder input */
		g = golden(lens[k], "logits.f32", &ng);
		if (T_OK(g && ng == nt * (size_t)V, "%s logits", lens[k]))
			worst_logits = fmax(worst_logits, t_dec_teacher(dec, out, L, din, nt, g, V, TOL,
			                                                 "logits"));
		free(g);
		generate(dec, m, out, L, lens[k], "greedy_ids.i32", 1, 0);
		generate(dec, m, out, L, lens[k], "beam_ids.i32", 4, 0);
		generate(dec, m, out, L, lens[k], "beam_forced_ids.i32", 4, 1);
		free(ids);
		free(din);
		outs[k] = out;
		Ls[k] = L;
	}
	if (all)
		batched(dec, m, outs, Ls);
	for (size_t k = 0; k < NLEN; k++)
		free(outs[k]);
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
	lc_model *m = model_open(t_data("bart/tiny_bart"), 0, &err);
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
