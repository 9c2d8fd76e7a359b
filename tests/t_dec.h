/*
 * t_dec: what the decoder parity tests share (test_decoder, test_bart,
 * test_lsg): a search model over one decoder state, the relative error
 * against a golden, teacher-forced logits and generation compared with
 * goldens. Include after t.h.
 */
#ifndef LC_T_DEC_H
#define LC_T_DEC_H

#include <math.h>

#include "arch/decoder.h"
#include "gen/search.h"

typedef struct t_dec_ctx {
	dec_state *s;
} t_dec_ctx;

static inline int t_dec_step(void *c, const int32_t *tok, float *logits, lc_err *err)
{
	return decoder_step(((t_dec_ctx *)c)->s, tok, logits, err);
}

static inline int t_dec_reorder(void *c, const int32_t *src, lc_err *err)
{
	return decoder_reorder(((t_dec_ctx *)c)->s, src, err);
}

/* Checks max |got - want| <= tol max |want| (a NaN fails); returns the
 * error relative to max |want|. */
static inline double t_rel_err(const char *what, const float *got, const float *want, size_t n,
                               double tol)
{
	double m = 0, e = 0;

	for (size_t i = 0; i < n; i++) {
		m = fmax(m, fabs((double)want[i]));
		e = fmax(e, fabs((double)got[i] - want[i]));
		if (got[i] != got[i])
			e = INFINITY;
	}
	T_OK(e <= tol * m, "%s: max error %.3g, max value %.3g (relative %.3g)", what, e, m, e / m);
	return m > 0 ? e / m : e;
}

/* Teacher forcing: one step per decoder input din[nt], each step's logits
 * against want [nt, V]; returns the worst relative error. */
static inline double t_dec_teacher(lc_decoder *dec, const float *enc, int64_t L,
                                   const int32_t *din, size_t nt, const float *want, int V,
                                   double tol, const char *what)
{
	float *logits = malloc((size_t)V * sizeof *logits);
	double worst = 0;
	lc_err err;
	dec_state *s = logits ? decoder_state_new(dec, enc, L, 1, (int)nt, &err) : NULL;

	if (T_OK(s != NULL, "%s: %s", what, logits ? err.msg : "out of memory"))
		for (size_t t = 0; t < nt; t++) {
			if (!T_OK(decoder_step(s, &din[t], logits, &err) == 0, "%s", err.msg))
				break;
			worst = fmax(worst, t_rel_err(what, logits, want + t * (size_t)V, (size_t)V, tol));
		}
	decoder_state_free(s);
	free(logits);
	return worst;
}

/* The oracle's generation configs (bart/goldens/generation_*.json):
 * max_new_tokens 24; with beams > 1 length_penalty 2, no_repeat_ngram 3,
 * early stopping; no forced tokens. */
static inline void t_dec_oracle_opts(search_opts *o, const lc_config *c, int beams)
{
	search_opts_default(o);
	o->vocab = c->vocab_size;
	o->start_id = c->decoder_start_id;
	o->eos_id = c->eos_id;
	o->max_new = 24;
	o->num_beams = beams;
	if (beams > 1) {
		o->length_penalty = 2.0;
		o->no_repeat_ngram = 3;
		o->early_stopping = SEARCH_EARLY_TRUE;
	}
}

/* Runs search o over enc [L rows] and compares with want [nwant] (the
 * oracle's sequences: the start token first) and, if want_score, the
 * beam score within 1e-4 of it (relative to the score, a small number;
 * measured 1.1e-6 on the CPU, not yet on a GPU). */
static inline void t_dec_generate(lc_decoder *dec, const float *enc, int64_t L,
                                  const search_opts *o, const int32_t *want, size_t nwant,
                                  const float *want_score, const char *what)
{
	t_dec_ctx cx;
	search_model sm = { &cx, t_dec_step, t_dec_reorder };
	search_result res;
	lc_err err;
	int same;

	cx.s = decoder_state_new(dec, enc, L, o->num_beams, o->max_new, &err);
	if (!T_OK(cx.s != NULL, "%s: %s", what, err.msg))
		return;
	if (T_OK(search_run(o, &sm, &res, &err) == 0, "%s: %s", what, err.msg)) {
		same = (size_t)res.n + 1 == nwant && want[0] == o->start_id;
		for (int i = 0; same && i < res.n; i++)
			same = res.ids[i] == want[i + 1];
		T_OK(same, "%s: %d ids, want %zu (first %d, want %d)", what, res.n + 1, nwant,
		     res.n ? res.ids[0] : -1, nwant > 1 ? want[1] : -1);
		if (want_score)
			T_OK(fabs(res.score - want_score[0]) <= 1e-4 * fabs(want_score[0]),
			     "%s: score %.7g, want %.7g", what, res.score, want_score[0]);
		search_result_free(&res);
	}
	decoder_state_free(cx.s);
}

#endif
