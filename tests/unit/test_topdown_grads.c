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
#include "train/train_int.h"

static double relmax(const float *a, const float *b, size_t n)
{
	double m = 0, g = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		if (e > m)
			m = e;
		if (fabs(b[i]) > g)
			g = fabs(b[i]);
	}
	return g > 0 ? m / g : m;
}

typedef struct rig {
	lc_model *m;
	trainer *tr;
	float *w;
	uint64_t P;
} rig;

static int rig_open(rig *r, const char *dir)
{
	lc_err err;
	train_opts o;

	memset(r, 0, sizeof *r);
	memset(&o, 0, sizeof o);
	o.threads = 1;
	o.batch_tokens = 1;
	if (!(r->m = model_open(dir, &err))) {
		T_OK(0, "%s", err.msg);
		return -1;
	}
	r->tr = trainer_new(r->m, &o, &err);
	T_OK(r->tr != NULL, "trainer_new: %s", err.msg);
	if (!r->tr)
		return -1;
	r->P = trainer_nparams(r->tr);
	T_EQ_I(r->P, model_nparams(r->m));
	r->w = trainer_weights(r->tr);
	return 0;
}

static void rig_close(rig *r)
{
	trainer_free(r->tr);
	model_free(r->m);
}

static double dropout_p;

static double rig_loss(rig *r, const int32_t *src, int64_t Ls, const int32_t *tgt, int64_t Lt,
                       int grad)
{
	train_pair_out out = { 0 };
	lc_err err;

	if (trainer_pair(r->tr, src, Ls, tgt, Lt, dropout_p, 1, grad, &out, &err) < 0) {
		T_OK(0, "trainer_pair: %s", err.msg);
		return NAN;
	}
	return out.loss;
}

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

static uint64_t rs = 12345;
static double urand(void)
{
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(rs >> 11) / 9007199254740992.0);
}

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

static void gradients(const char *config)
{
	char dir[] = "/tmp/lc-tdg-XXXXXX";
	char path[256];
	FILE *f;
	rig r;
	lc_err err;
	/* BART-like pairs; the source, 11 tokens, pads to 3 blocks of 4 or 2
	 * of 8; the target has one pad (1), which must be ignored */
	int32_t src[11] = { 0, 7, 11, 5, 19, 23, 8, 13, 26, 4, 2 };
	int32_t tgt[7] = { 0, 14, 1, 6, 21, 17, 2 };
	int64_t Ls = 11, Lt = 7;
	uint64_t P;
	float *g0, *v;
	int ntensor_ok = 0, ntensor = 0, npool = 0;
	double gworst = 0, eworst = 0;

	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/config.json", dir);
	f = fopen(path, "w");
	fputs(config, f);
	fclose(f);
	T_OK(model_write_random(dir, 7, &err) == 0, "%s", err.msg);
	if (rig_open(&r, dir) < 0) {
		rig_close(&r);
		return;
	}
	P = r.P;
	if (dropout_p == 0)
		parity(&r, src, Ls, tgt, Lt);
	/* a non-zero final_logits_bias: it must be used, yet not trained */
	{
		const lc_param *b = params_find(trainer_params(r.tr), "final_logits_bias");
		T_OK(b != NULL, "final_logits_bias declared");
		for (uint64_t i = 0; b && i < b->numel; i++)
			r.w[b->off + i] = (float)(urand() - 0.5);
	}
	rig_loss(&r, src, Ls, tgt, Lt, 1);
	g0 = malloc(P * sizeof *g0);
	v = malloc(P * sizeof *v);
	memcpy(g0, trainer_grads(r.tr), P * sizeof *g0);
	for (uint32_t ti = 0; ti < params_count(trainer_params(r.tr)); ti++) {
		const lc_param *t = params_at(trainer_params(r.tr), ti);
		float *w = r.w + t->off, *g = g0 + t->off;
		double gn = 0, worst = 0, h = 2e-3, lp, lm;
		int zero = zero_by_design(t->name), ok = 1;

		ntensor++;
		npool += strstr(t->name, "cross_attn.") != NULL || strstr(t->name, "top_layers") != NULL ||
		         strstr(t->name, "pool_tagger") != NULL;
		for (uint64_t i = 0; i < t->numel; i++)
			gn += (double)g[i] * g[i];
		gn = sqrt(gn);
		if (zero) {
			/* exactly zero, and the loss does not move along a random direction
			 * (a longer step: nothing to truncate, less rounding in the slope) */
			double fd;
			h = 5e-2;
			for (uint64_t i = 0; i < t->numel; i++)
				v[i] = (float)(urand() - 0.5);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] -= (float)(2 * h * v[i]);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			fd = (lp - lm) / (2 * h);
			if (!strcmp(t->name, "final_logits_bias")) {
				/* it does move the loss: used in the forward, frozen in training */
				ok = gn == 0 && fabs(fd) > 1e-3;
				T_OK(ok, "%s: gradient %.3g (a buffer: 0), loss slope %.3g (used: not 0)",
				     t->name, gn, fd);
			} else {
				/* the cross-attention never computes it (exactly 0); the self-
				 * attention's is rounding of a sum that is 0 */
				int cross = strstr(t->name, "encoder_attn") != NULL;
				ok = (cross ? gn == 0 : gn <= 1e-5) && fabs(fd) <= 1e-3;
				T_OK(ok, "%s: gradient %.3g, loss slope %.3g (it cancels: both 0)", t->name,
				     gn, fd);
			}
			ntensor_ok += ok;
			continue;
		}
		/* The step: float32 rounds a loss near 50 to some 5e-6, which a
		 * central difference divides by 2h; a tensor with a small gradient
		 * (the pooled attention's biases: |g| near 0.02) needs a longer
		 * step for that noise to stay under the bound (the loss is smooth:
		 * the truncation error of such steps is far below it). */
		h = fmin(6.4e-2, fmax(2e-3, 2.5e-3 / (gn > 0 ? gn : 1)));
		/* two directions: the gradient itself, and a random one */
		for (int dd = 0; dd < 2; dd++) {
			double vn = 0, an = 0, fd, e;
			for (uint64_t i = 0; i < t->numel; i++) {
				v[i] = dd == 0 ? g[i] : (float)(urand() - 0.5);
				vn += (double)v[i] * v[i];
			}
			vn = sqrt(vn);
			if (vn == 0)
				continue;
			for (uint64_t i = 0; i < t->numel; i++) {
				v[i] = (float)(v[i] / vn);
				an += (double)v[i] * g[i];
			}
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] -= (float)(2 * h * v[i]);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			fd = (lp - lm) / (2 * h);
			e = fabs(fd - an) / (gn > 1e-3 ? gn : 1e-3);
			worst = fmax(worst, e);
			ok &= e <= 1e-2;
		}
		/* three single entries: the largest, and two at random */
		for (int k = 0; k < 3; k++) {
			uint64_t i = 0;
			float w0;
			double fd, e;
			if (k == 0) {
				for (uint64_t j = 1; j < t->numel; j++)
					if (fabs(g[j]) > fabs(g[i]))
						i = j;
			} else {
				i = (uint64_t)(urand() * (double)t->numel) % t->numel;
			}
			w0 = w[i];
			w[i] = (float)(w0 + h);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			w[i] = (float)(w0 - h);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			w[i] = w0;
			fd = (lp - lm) / (2 * h);
			e = fabs(fd - g[i]) / (gn > 1e-3 ? gn : 1e-3);
			eworst = fmax(eworst, e);
			ok &= e <= 1e-2;
		}
		T_OK(ok && gn > 0, "%s: |g| %.3g, directional FD error %.3g of |g|", t->name, gn, worst);
		ntensor_ok += ok && gn > 0;
		gworst = fmax(gworst, worst);
	}
	printf("# finite differences (dropout %.1f): %d of %d tensors, worst error %.3g of |g| "
	       "(directions), %.3g (entries)\n", dropout_p, ntensor_ok, ntensor, gworst, eworst);
	T_EQ_I(ntensor_ok, ntensor);
	T_OK(npool >= 24, "the cross-attention's, segment layers' and tagger's tensors are among "
	     "them (%d)", npool);
	/* the pad label contributes nothing: same loss with a -1 label */
	{
		int32_t t2[7];
		double a, b;
		memcpy(t2, tgt, sizeof t2);
		t2[2] = -1;
		a = rig_loss(&r, src, Ls, tgt, Lt, 0);
		b = rig_loss(&r, src, Ls, t2, Lt, 0);
		T_OK(a == b, "pad and -1 labels are both ignored: %.9g vs %.9g", a, b);
	}
	/* too long for the positions: an error, not a crash */
	{
		int32_t longs[40] = { 0 };
		train_pair_out out = { 0 };
		T_OK(trainer_pair(r.tr, longs, 40, tgt, Lt, 0, 1, 1, &out, &err) < 0 &&
		     strstr(err.msg, "max_position_embeddings"), "a source longer than the "
		     "positions is refused: %s", err.msg);
	}
	free(g0);
	free(v);
	rig_close(&r);
	snprintf(path, sizeof path, "%s/config.json", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	unlink(path);
	rmdir(dir);
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
