/*
 * test_topdown_grads: the top-down transformer's training halves
 * (arch/topdown.c over barttrain's embeddings and layer stacks) through
 * the trainer, on tiny random top-down models (window 4 and 8, pooling
 * kernels 4/3 and 16/8, average and AdaPool, a source of 11 tokens: the
 * second model pads it to its kernel of 16):
 *
 *  - gradients: each parameter tensor's (the cross-attention to the
 *    segments, the segment layers and AdaPool's tagger included) against
 *    central finite differences, along the gradient, a random direction
 *    and at single entries, with dropout 0 and with fixed masks (dropout
 *    0.1); the bounds of test_bart_grads and test_bartls_grads;
 *  - the training forward against inference: the encoder states against
 *    encoder_run, the teacher-forced logits against decoder_step.
 *
 * The models set init_std 0.2 (finite differences in float32 need
 * gradients well above the loss's rounding).
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


static double wpar;

/* The training forward (no dropout) against inference on the rig's
 * model as the trainer holds it: the encoder's L states against
 * encoder_run, the teacher-forced logits against decoder_step. Before
 * the trainer's weights are touched: they are still the model's. */
static void parity(rig *r, const int32_t *src, int64_t L, const int32_t *tgt, int64_t nt)
{
	const lc_config *c = model_config(r->m);
	int V = c->vocab_size, d = c->d_model;
	float *enc = calloc((size_t)(L * d), sizeof *enc);
	float *logits = calloc((size_t)nt * (size_t)V, sizeof *logits);
	float *ienc = calloc((size_t)(L * d), sizeof *ienc);
	float *ilog = calloc((size_t)nt * (size_t)V, sizeof *ilog);
	int32_t *din = calloc((size_t)nt, sizeof *din);
	train_pair_out out = { 0 };
	lc_encoder *e = NULL;
	lc_decoder *dec = NULL;
	dec_state *st = NULL;
	lc_err err;
	double q, worst = 0;

	out.enc = enc;
	out.logits = logits;
	if (!T_OK(trainer_pair(r->tr, src, L, tgt, nt, 0, 0, 0, &out, &err) == 0, "%s", err.msg))
		goto out;
	if (!T_OK((e = encoder_new(r->m, 1, &err)) && (dec = decoder_new(r->m, &err)) &&
	          encoder_run(e, src, L, ienc, NULL, NULL, &err) == 0 &&
	          (st = decoder_state_new(dec, ienc, L, 1, (int)nt, &err)), "%s", err.msg))
		goto out;
	q = relmax(enc, ienc, (size_t)(L * d));
	wpar = fmax(wpar, q);
	T_OK(q <= 2e-5, "encoder states vs encoder_run: %.3g", q);
	din[0] = c->decoder_start_id;
	for (int64_t t = 1; t < nt; t++)
		din[t] = tgt[t - 1];
	for (int64_t t = 0; t < nt; t++) {
		if (!T_OK(decoder_step(st, &din[t], ilog + t * V, &err) == 0, "%s", err.msg))
			goto out;
		worst = fmax(worst, relmax(logits + t * V, ilog + t * V, (size_t)V));
	}
	wpar = fmax(wpar, worst);
	T_OK(worst <= 2e-5, "%lld teacher-forced steps vs decoder_step: %.3g", (long long)nt, worst);
out:
	decoder_state_free(st);
	encoder_free(e);
	decoder_free(dec);
	free(enc);
	free(logits);
	free(ienc);
	free(ilog);
	free(din);
}

/* ---------------------------------------------------------- gradients */

static const char *configs[] = {
	/* window 4, 2 bottom-up + 1 top-down layers, 1 segment layer, AvgPool
	 * kernel 4 stride 3 (11 tokens: 3 segments), tied and scaled, gelu */
	"{\"architectures\": [\"BartTopDownForConditionalGeneration\"], \"model_type\": \"bart_topdown\",\n"
	" \"d_model\": 16, \"encoder_layers\": 3, \"decoder_layers\": 2,\n"
	" \"bottom_up_layers\": 2, \"top_down_layers\": 1, \"segment_layers\": 1,\n"
	" \"encoder_attention_heads\": 2, \"decoder_attention_heads\": 4,\n"
	" \"encoder_ffn_dim\": 24, \"decoder_ffn_dim\": 20, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 16, \"max_decoder_position_embeddings\": 10,\n"
	" \"scale_embedding\": true, \"window_size\": 4, \"pool_kernel\": 4, \"pool_stride\": 3,\n"
	" \"pool_type\": \"avg\",\n"
	" \"activation_function\": \"gelu\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
	/* window 8, 1 bottom-up + 2 top-down layers, 2 segment layers, AdaPool
	 * kernel 6 stride 2 (4 segments), untied, unscaled, gelu_new */
	"{\"architectures\": [\"BartTopDownForConditionalGeneration\"], \"model_type\": \"bart_topdown\",\n"
	" \"d_model\": 24, \"encoder_layers\": 3, \"decoder_layers\": 2,\n"
	" \"bottom_up_layers\": 1, \"top_down_layers\": 2, \"segment_layers\": 2,\n"
	" \"encoder_attention_heads\": 4, \"decoder_attention_heads\": 2,\n"
	" \"encoder_ffn_dim\": 32, \"decoder_ffn_dim\": 32, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 20, \"max_decoder_position_embeddings\": 12,\n"
	" \"scale_embedding\": false, \"tie_word_embeddings\": false,\n"
	" \"window_size\": 8, \"pool_kernel\": 6, \"pool_stride\": 2, \"pool_type\": \"adapool\",\n"
	" \"activation_function\": \"gelu_new\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
	/* the same with kernel 16 (11 tokens padded to 16 rows, as inference
	 * pads them): one segment, so the segment attentions' queries and
	 * keys get no gradient (a softmax over one key is 1) */
	"{\"architectures\": [\"BartTopDownForConditionalGeneration\"], \"model_type\": \"bart_topdown\",\n"
	" \"d_model\": 24, \"encoder_layers\": 3, \"decoder_layers\": 2,\n"
	" \"bottom_up_layers\": 1, \"top_down_layers\": 2, \"segment_layers\": 2,\n"
	" \"encoder_attention_heads\": 4, \"decoder_attention_heads\": 2,\n"
	" \"encoder_ffn_dim\": 32, \"decoder_ffn_dim\": 32, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 20, \"max_decoder_position_embeddings\": 12,\n"
	" \"scale_embedding\": false, \"tie_word_embeddings\": false,\n"
	" \"window_size\": 8, \"pool_kernel\": 16, \"pool_stride\": 8, \"pool_type\": \"adapool\",\n"
	" \"activation_function\": \"gelu_new\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
};

static int one_segment;          /* the third model */

/* Parameters whose gradient is zero by design: the frozen buffer, every
 * key bias (q . bk is the same for all keys of a row: it cancels in the
 * softmax), and cross_attn_layer_norm, declared and unused by the
 * authors' code. */
static int zero_by_design(const char *name)
{
	int seg_qk = (strstr(name, "top_layers") || strstr(name, "cross_attn.")) &&
	             (strstr(name, "q_proj") || strstr(name, "k_proj"));

	return !strcmp(name, "final_logits_bias") || strstr(name, "k_proj.bias") != NULL ||
	       strstr(name, "cross_attn_layer_norm") != NULL || (one_segment && seg_qk);
}

static int is_new(const char *name)
{
	return strstr(name, "cross_attn.") != NULL || strstr(name, "top_layers") != NULL ||
	       strstr(name, "pool_tagger") != NULL;
}

static void gradients(const char *config)
{
	/* BART-like pairs; the source, 11 tokens, pads to 3 blocks of 4 or 2
	 * of 8; the target has one pad (1), which must be ignored */
	static const int32_t src[11] = { 0, 7, 11, 5, 19, 23, 8, 13, 26, 4, 2 };
	static const int32_t tgt[7] = { 0, 14, 1, 6, 21, 17, 2 };
	const tg_case c = { .tag = "tdg", .src = src, .tgt = tgt, .Ls = 11, .Lt = 7,
	                   .h_max = 6.4e-2, .zero_by_design = zero_by_design,
	                   .parity = parity, .is_new = is_new, .new_min = 24,
	                   .new_what = "the cross-attention's, segment layers' and tagger's tensors" };

	tg_check(config, &c);
}

static void test_gradients(void)
{
	dropout_p = 0;
	for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
		one_segment = i == 2;
		gradients(configs[i]);
	}
	printf("# training forward vs inference: worst %.3g (relative)\n", wpar);
}

/* Dropout masks are a function of the seed: the same checks hold with them. */
static void test_gradients_dropout(void)
{
	dropout_p = 0.1;
	for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
		one_segment = i == 2;
		gradients(configs[i]);
	}
	dropout_p = 0;
}

int main(void)
{
	T_RUN(test_gradients);
	T_RUN(test_gradients_dropout);
	return t_done();
}
