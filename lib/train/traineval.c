/*
 * traineval.c: greedy summaries of held-out pairs, scored with ROUGE.
 */
#include "train/traineval.h"

#include <stdlib.h>
#include <string.h>

#include "arch/decoder.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "gen/settings.h"
#include "text/rouge.h"
#include "text/tokenizer.h"

int train_eval_rouge(const char *model_dir, const char *spiece, const train_data *d,
                     int max_new, int threads, train_rouge *out, lc_err *err)
{
	lc_model *m = NULL;
	lc_encoder *enc = NULL;
	lc_decoder *dec = NULL;
	lc_tokenizer *sp = NULL;
	rouge_vocab *rv = NULL;
	rouge_work *rw = NULL;
	rouge_doc cd, rd;
	float *h = NULL, *logits = NULL;
	int32_t *gen = NULL;
	char *text = NULL;
	size_t tlen = 0, tcap = 0;
	rouge_type types[3] = { { ROUGE_N, 1 }, { ROUGE_N, 2 }, { ROUGE_LSUM, 0 } };
	double sum[3] = { 0, 0, 0 };
	int rc = -1, V, dm;
	gen_settings gs;

	memset(out, 0, sizeof *out);
	rouge_doc_init(&cd);
	rouge_doc_init(&rd);
	if (max_new < 1)
		max_new = 1;
	if (!(m = model_open(model_dir, 0, err)) || !(enc = encoder_new(m, threads, err)) ||
	    !(dec = decoder_new(m, err)) || !(sp = tok_open(spiece, err)) ||
	    !(rv = rouge_vocab_new(0, err)) || !(rw = rouge_work_new(err)))
		goto out;
	/* the decoder start and eos lc-decode takes (generation_config.json's
	 * own where the model has one, as transformers reads them) */
	if (gen_settings_init(&gs, m, err) < 0)
		goto out;
	V = model_config(m)->vocab_size;
	dm = model_config(m)->d_model;
	/* a model with learned positions (BART) decodes at most that many */
	if (model_config(m)->max_positions > 0 && max_new > model_config(m)->max_positions)
		max_new = model_config(m)->max_positions;
	if (!(logits = malloc((size_t)V * sizeof *logits)) ||
	    !(gen = malloc((size_t)max_new * sizeof *gen))) {
		lc_fail(err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < d->n; i++) {
		const train_pair *p = &d->p[i];
		dec_state *st;
		int32_t tok = gs.o.start_id;
		int ng = 0;
		rouge_score sc[3];
		int64_t Le = encoder_out_len(enc, p->ns);
		float *nh = realloc(h, (size_t)Le * (size_t)dm * sizeof *h);

		if (!nh) {
			lc_fail(err, "out of memory");
			goto out;
		}
		h = nh;
		if (encoder_run(enc, p->src, p->ns, h, NULL, NULL, err) < 0 ||
		    !(st = decoder_state_new(dec, h, encoder_keep(enc, p->src, p->ns, h), 1, max_new,
		                             err))) {
			lc_prefix(err, "%s", p->name);
			goto out;
		}
		while (ng < max_new) {
			int best = 0;
			if (decoder_step(st, &tok, logits, err) < 0) {
				decoder_state_free(st);
				goto out;
			}
			for (int v = 1; v < V; v++)
				if (logits[v] > logits[best])
					best = v;
			if (best == gs.o.eos_id)
				break;
			gen[ng++] = tok = best;
		}
		decoder_state_free(st);
		if (tok_decode(sp, gen, (size_t)ng, 0, &text, &tlen, &tcap, err) < 0 ||
		    rouge_doc_set_text(rv, &cd, text, tlen, err) < 0 ||
		    tok_decode(sp, p->tgt, (size_t)p->nt, 0, &text, &tlen, &tcap, err) < 0 ||
		    rouge_doc_set_text(rv, &rd, text, tlen, err) < 0)
			goto out;
		for (int k = 0; k < 3; k++) {
			if (rouge_score_type(rw, types[k], &cd, &rd, &sc[k], err) < 0)
				goto out;
			sum[k] += sc[k].f;
		}
		out->n++;
	}
	if (out->n) {
		out->r1 = 100 * sum[0] / (double)out->n;
		out->r2 = 100 * sum[1] / (double)out->n;
		out->rlsum = 100 * sum[2] / (double)out->n;
	}
	rc = 0;
out:
	rouge_doc_free(&cd);
	rouge_doc_free(&rd);
	rouge_work_free(rw);
	rouge_vocab_free(rv);
	tok_free(sp);
	decoder_free(dec);
	encoder_free(enc);
	model_free(m);
	free(h);
	free(logits);
	free(gen);
	free(text);
	return rc;
}
