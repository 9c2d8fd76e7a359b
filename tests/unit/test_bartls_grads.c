/*
 * test_bartls_grads: BART-LS's training halves (arch/bartlstrain.c)
 * through the trainer, on tiny random BART-LS models (block 4 and 8,
 * one or two pooled layers, a source of 11 tokens so that the padding
 * to a block multiple is exercised):
 *
 *  - gradients: each parameter tensor's (the pooled attention's
 *    included) against central finite differences, along the gradient,
 *    a random direction and at single entries, with dropout 0 and with
 *    fixed masks (dropout 0.1); the bounds of test_bart_grads;
 *  - the training forward against inference: the encoder states against
 *    encoder_run, the teacher-forced logits against decoder_step;
 *  - new models' initial values (lc-train --config): transformers'
 *    _init_weights with init_std, for BART and BART-LS.
 *
 * The models here set init_std 0.2: finite differences in float32 need
 * gradients well above the loss's rounding, which 0.02 does not give.
 *
 * The oracle's stack goldens through the training encoder are in
 * test_bartls (its fairseq-named model).
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
	/* block 4, 3 layers of which the top 2 pooled (kernel 3, stride 2,
	 * padding 1), tied and scaled embeddings, gelu */
	"{\"architectures\": [\"BartLSForConditionalGeneration\"], \"model_type\": \"bart_ls\",\n"
	" \"d_model\": 16, \"encoder_layers\": 3, \"decoder_layers\": 2,\n"
	" \"encoder_attention_heads\": 2, \"decoder_attention_heads\": 4,\n"
	" \"encoder_ffn_dim\": 24, \"decoder_ffn_dim\": 20, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 16, \"max_decoder_position_embeddings\": 10,\n"
	" \"scale_embedding\": true, \"block_size\": 4, \"pooling_layers\": 2,\n"
	" \"pool_kernel\": 3, \"pool_stride\": 2, \"pool_padding\": 1,\n"
	" \"activation_function\": \"gelu\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
	/* block 8, 2 layers of which the top one pooled (kernel 4, stride 3),
	 * untied lm_head, unscaled, gelu_new */
	"{\"architectures\": [\"BartLSForConditionalGeneration\"], \"model_type\": \"bart_ls\",\n"
	" \"d_model\": 24, \"encoder_layers\": 2, \"decoder_layers\": 2,\n"
	" \"encoder_attention_heads\": 4, \"decoder_attention_heads\": 2,\n"
	" \"encoder_ffn_dim\": 32, \"decoder_ffn_dim\": 32, \"vocab_size\": 30,\n"
	" \"max_position_embeddings\": 20, \"max_decoder_position_embeddings\": 12,\n"
	" \"scale_embedding\": false, \"tie_word_embeddings\": false,\n"
	" \"block_size\": 8, \"pooling_layers\": 1,\n"
	" \"pool_kernel\": 4, \"pool_stride\": 3, \"pool_padding\": 2,\n"
	" \"activation_function\": \"gelu_new\", \"pad_token_id\": 1, \"bos_token_id\": 0,\n"
	" \"eos_token_id\": 2, \"decoder_start_token_id\": 2, \"init_std\": 0.2}\n",
};

/* Parameters whose gradient is zero by design: the frozen buffer, and
 * every key bias (q . bk is the same for all keys of a row, so it cancels
 * in the softmax). */
static int zero_by_design(const char *name)
{
	/* the pooled attention's key bias does not cancel: the windows pool
	 * different numbers of real rows (pads' keys are zeroed) */
	return !strcmp(name, "final_logits_bias") ||
	       (strstr(name, "k_proj.bias") != NULL && !strstr(name, "pool_attn"));
}

static int is_pooled(const char *name)
{
	return strstr(name, "pool_attn") != NULL;
}

static void gradients(const char *config)
{
	/* BART-like pairs; the source, 11 tokens, pads to 3 blocks of 4 or 2
	 * of 8; the target has one pad (1), which must be ignored */
	static const int32_t src[11] = { 0, 7, 11, 5, 19, 23, 8, 13, 26, 4, 2 };
	static const int32_t tgt[7] = { 0, 14, 1, 6, 21, 17, 2 };
	const tg_case c = { .tag = "blsg", .src = src, .tgt = tgt, .Ls = 11, .Lt = 7,
	                   .h_max = 6.4e-2, .zero_by_design = zero_by_design,
	                   .parity = parity, .is_new = is_pooled, .new_min = 8,
	                   .new_what = "the pooled attention's tensors" };

	tg_check(config, &c);
}

static void test_gradients(void)
{
	dropout_p = 0;
	for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
		gradients(configs[i]);
	printf("# training forward vs inference: worst %.3g (relative)\n", wpar);
}

/* Dropout masks are a function of the seed: the same checks hold with them. */
static void test_gradients_dropout(void)
{
	dropout_p = 0.1;
	for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
		gradients(configs[i]);
	dropout_p = 0;
}

/* lc-train --config's initial values (model_write_random): transformers'
 * _init_weights with init_std (default 0.02): every matrix N(0, std), the
 * shared embedding's padding row 0, biases 0, LayerNorm weights 1,
 * final_logits_bias 0; the pooled attention's the same (lc-convert's). */
static void init_case(const char *config, double std)
{
	char dir[] = "/tmp/lc-blsi-XXXXXX", path[256];
	FILE *f;
	lc_model *m = NULL;
	lc_err err;
	int bad = 0, nmat = 0;

	if (!T_OK(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	snprintf(path, sizeof path, "%s/config.json", dir);
	f = fopen(path, "w");
	fputs(config, f);
	fclose(f);
	if (!T_OK(model_write_random(dir, 7, &err) == 0 && (m = model_open(dir, 0, &err)), "%s",
	          err.msg))
		goto out;
	for (uint32_t k = 0; k < params_count(model_params(m)); k++) {
		const lc_param *e = params_at(model_params(m), k);
		const float *v = *e->slot;
		size_t n = strlen(e->name);
		int weight = n > 7 && !strcmp(e->name + n - 7, ".weight");
		int norm = strstr(e->name, "layer_norm") || strstr(e->name, "layernorm");
		double s2 = 0, want;
		uint64_t cnt = 0;

		if (!weight || norm || !strcmp(e->name, "final_logits_bias")) {
			want = weight && norm ? 1 : 0;
			for (uint64_t j = 0; j < e->numel; j++)
				bad += v[j] != want;
			continue;
		}
		nmat++;
		for (uint64_t j = 0; j < e->numel; j++) {
			if (!strcmp(e->name, "model.shared.weight") && j / e->dims[1] == 1) {
				bad += v[j] != 0;   /* the padding row */
				continue;
			}
			s2 += (double)v[j] * v[j];
			cnt++;
		}
		/* the sample std within 5 standard errors of std */
		if (fabs(sqrt(s2 / (double)cnt) - std) > 5 * std / sqrt(2.0 * (double)cnt)) {
			bad++;
			printf("# %s: std %.4g, want %.4g\n", e->name, sqrt(s2 / (double)cnt), std);
		}
	}
	T_OK(bad == 0 && nmat > 0, "init_std %.3g: %d matrices N(0, std), the rest 0 or 1 (%d off)",
	     std, nmat, bad);
	model_free(m);
out:
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/config.json", dir);
	unlink(path);
	rmdir(dir);
}

static void test_init(void)
{
	static const char *bart =
		"{\"architectures\": [\"BartForConditionalGeneration\"], \"model_type\": \"bart\",\n"
		" \"d_model\": 32, \"encoder_layers\": 1, \"decoder_layers\": 1,\n"
		" \"encoder_attention_heads\": 2, \"decoder_attention_heads\": 2,\n"
		" \"encoder_ffn_dim\": 64, \"decoder_ffn_dim\": 64, \"vocab_size\": 100,\n"
		" \"max_position_embeddings\": 64, \"tie_word_embeddings\": false}\n";

	init_case(configs[0], 0.2);          /* init_std given */
	init_case(bart, 0.02);               /* the default */
}

int main(void)
{
	T_RUN(test_init);
	T_RUN(test_gradients);
	T_RUN(test_gradients_dropout);
	return t_done();
}
