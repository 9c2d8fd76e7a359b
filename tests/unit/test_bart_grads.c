/*
 * test_bart_grads: BART's training halves (arch/barttrain.h) through the
 * trainer.
 *
 *  - parity: on the oracle's tiny BART (tests/data/bart), the training
 *    forward's encoder output and teacher-forced logits (decoder input
 *    [2] + target[:-1], as the trainer builds it) against transformers'
 *    goldens, and against the inference code (encoder_run, decoder_step);
 *  - loss: the trainer's summed cross-entropy against the one computed
 *    here, in double, from transformers' golden logits and the golden
 *    labels, and from the inference logits;
 *  - gradients: on tiny random BARTs (tied and scaled embeddings; untied
 *    lm_head, different head counts, gelu_new), each parameter tensor's
 *    gradient against central finite differences, along the gradient
 *    itself and a random direction and at single entries, with dropout 0
 *    and with fixed masks (dropout 0.1); final_logits_bias (a buffer)
 *    must get exactly zero while the loss moves along it, and the key
 *    biases (they cancel in the softmax) zero (the cross-attention's
 *    exactly, the self-attention's to rounding) with a flat loss.
 */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/decoder.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "t.h"
#include "t_grad.h"
#include "train/train_int.h"

#define TOL 1e-4                /* test_bart's bound against the goldens */

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


/* ------------------------------------------------- parity and the loss */

/* Summed cross-entropy of logits [T, V] against labels, in double. */
static double xent_ref(const float *logits, const int32_t *y, size_t T, int V)
{
	double s = 0;
	for (size_t t = 0; t < T; t++) {
		const float *l = logits + t * (size_t)V;
		double mx = -INFINITY, z = 0;
		for (int j = 0; j < V; j++)
			mx = fmax(mx, l[j]);
		for (int j = 0; j < V; j++)
			z += exp((double)l[j] - mx);
		s += mx + log(z) - l[y[t]];
	}
	return s;
}

static void test_parity(void)
{
	static const char *lens[] = { "len0001", "len0007", "len0100", "len1000" };
	size_t nt;
	int32_t *tgt = golden("", "target_ids.i32", &nt);
	int32_t *din = golden("", "decoder_input_ids.i32", &nt);
	rig r;
	lc_err err;
	double wenc = 0, wlog = 0, winf = 0, wloss = 0;

	if (!T_OK(tgt && din, "target and decoder input goldens") ||
	    rig_open(&r, t_data("bart/tiny_bart")) < 0)
		goto out;
	for (size_t ci = 0; ci < sizeof lens / sizeof *lens; ci++) {
		const lc_config *c = model_config(r.m);
		int V = c->vocab_size, d = c->d_model;
		size_t nids, nenc, nlog;
		int32_t *ids = golden(lens[ci], "input_ids.i32", &nids);
		float *genc = golden(lens[ci], "enc_out.f32", &nenc);
		float *glog = golden(lens[ci], "logits.f32", &nlog);
		float *enc = NULL, *logits = NULL, *ienc = NULL, *ilog = NULL;
		train_pair_out out = { 0 };
		lc_encoder *e = NULL;
		lc_decoder *dec = NULL;
		dec_state *st = NULL;
		int64_t L = (int64_t)nids;
		double ref, q, inf_loss = 0, worst = 0;

		if (!T_OK(ids && genc && glog && nlog == nt * (size_t)V, "%s goldens", lens[ci]))
			goto next;
		/* the trainer's decoder input is the oracle's */
		T_EQ_I(din[0], c->decoder_start_id);
		for (size_t t = 1; t < nt; t++)
			T_EQ_I(din[t], tgt[t - 1]);
		enc = calloc((size_t)(L * d), sizeof *enc);
		logits = calloc(nt * (size_t)V, sizeof *logits);
		out.enc = enc;
		out.logits = logits;
		if (!T_OK(trainer_pair(r.tr, ids, L, tgt, (int64_t)nt, 0, 0, 0, &out, &err) == 0,
		          "%s: %s", lens[ci], err.msg))
			goto next;
		q = relmax(enc, genc, nenc);
		wenc = fmax(wenc, q);
		T_OK(q <= TOL, "%s enc_out vs transformers: %.3g", lens[ci], q);
		q = relmax(logits, glog, nt * (size_t)V);
		wlog = fmax(wlog, q);
		T_OK(q <= TOL, "%s teacher-forced logits vs transformers: %.3g", lens[ci], q);
		/* the loss against transformers' logits and labels */
		ref = xent_ref(glog, tgt, nt, V);
		T_EQ_I(out.ntok, (int64_t)nt);
		q = fabs(out.loss - ref) / fabs(ref);
		wloss = fmax(wloss, q);
		T_OK(q <= 1e-5, "%s loss %.8g vs %.8g from transformers' logits", lens[ci], out.loss,
		     ref);
		/* the same forward as inference: encoder_run, then decoder_step per token */
		ienc = calloc((size_t)(L * d), sizeof *ienc);
		ilog = calloc(nt * (size_t)V, sizeof *ilog);
		if (!T_OK((e = encoder_new(r.m, 1, &err)) && (dec = decoder_new(r.m, &err)) &&
		          encoder_run(e, ids, L, ienc, NULL, NULL, &err) == 0 &&
		          (st = decoder_state_new(dec, ienc, L, 1, (int)nt, &err)), "%s", err.msg))
			goto next;
		q = relmax(enc, ienc, (size_t)(L * d));
		winf = fmax(winf, q);
		T_OK(q <= 2e-5, "%s enc vs encoder_run: %.3g", lens[ci], q);
		for (size_t t = 0; t < nt; t++) {
			if (!T_OK(decoder_step(st, &din[t], ilog + t * (size_t)V, &err) == 0, "%s",
			          err.msg))
				goto next;
			worst = fmax(worst, relmax(logits + t * (size_t)V, ilog + t * (size_t)V,
			                           (size_t)V));
		}
		winf = fmax(winf, worst);
		T_OK(worst <= 2e-5, "%s %zu teacher-forced steps vs decoder_step: %.3g", lens[ci], nt,
		     worst);
		inf_loss = xent_ref(ilog, tgt, nt, V);
		T_OK(fabs(out.loss - inf_loss) <= 1e-5 * fabs(inf_loss),
		     "%s loss %.8g vs %.8g from the inference logits", lens[ci], out.loss, inf_loss);
next:
		decoder_state_free(st);
		encoder_free(e);
		decoder_free(dec);
		free(ids);
		free(genc);
		free(glog);
		free(enc);
		free(logits);
		free(ienc);
		free(ilog);
	}
	printf("# tiny BART vs transformers: encoder %.3g, logits %.3g, loss %.3g (relative); "
	       "vs inference %.3g\n", wenc, wlog, wloss, winf);
	rig_close(&r);
out:
	free(tgt);
	free(din);
}

/* ---------------------------------------------------------- gradients */

static const char *configs[] = {
	/* tied, scaled embeddings, gelu; encoder and decoder heads differ */
	"{\"architectures\": [\"BartForConditionalGeneration\"], \"model_type\": \"bart\",\n"
	" \"d_model\": 16, \"encoder_layers\": 2, \"decoder_layers\": 2,\n"
	" \"encoder_attention_heads\": 2, \"decoder_attention_heads\": 4,\n"
	" \"encoder_ffn_dim\": 24, \"decoder_ffn_dim\": 20, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 16, \"scale_embedding\": true,\n"
	" \"activation_function\": \"gelu\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
	/* untied lm_head, unscaled, gelu_new */
	"{\"architectures\": [\"BartForConditionalGeneration\"], \"model_type\": \"bart\",\n"
	" \"d_model\": 24, \"encoder_layers\": 2, \"decoder_layers\": 2,\n"
	" \"encoder_attention_heads\": 4, \"decoder_attention_heads\": 2,\n"
	" \"encoder_ffn_dim\": 32, \"decoder_ffn_dim\": 32, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 12, \"scale_embedding\": false,\n"
	" \"tie_word_embeddings\": false,\n"
	" \"activation_function\": \"gelu_new\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
};

/* Parameters whose gradient is zero by design: the frozen buffer, and
 * every key bias (q . bk is the same for all keys of a row, so it cancels
 * in the softmax). */
static int zero_by_design(const char *name)
{
	return !strcmp(name, "final_logits_bias") || strstr(name, "k_proj.bias") != NULL;
}

static void gradients(const char *config)
{
	/* BART-like pairs; the target has one pad (1), which must be ignored */
	static const int32_t src[9] = { 0, 7, 11, 5, 19, 23, 8, 13, 2 };
	static const int32_t tgt[7] = { 0, 14, 1, 6, 21, 17, 2 };
	const tg_case c = { .tag = "bg", .src = src, .tgt = tgt, .Ls = 9, .Lt = 7,
	                   .h_max = 2e-3, .zero_by_design = zero_by_design };

	tg_check(config, &c);
}

static void test_gradients(void)
{
	dropout_p = 0;
	for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
		gradients(configs[i]);
}

/* Dropout masks are a function of the seed: the same checks hold with them. */
static void test_gradients_dropout(void)
{
	dropout_p = 0.1;
	for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
		gradients(configs[i]);
	dropout_p = 0;
}

int main(void)
{
	T_RUN(test_parity);
	T_RUN(test_gradients);
	T_RUN(test_gradients_dropout);
	return t_done();
}
