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

/* ------------------------------------------------- parity and the loss */

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

static uint64_t rs = 12345;
static double urand(void)
{
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(rs >> 11) / 9007199254740992.0);
}

/* init_std 0.2 (not BART's 0.02): gradients well above the float32
 * rounding of the loss, for the finite differences */
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
	char dir[] = "/tmp/lc-bg-XXXXXX";
	char path[256];
	FILE *f;
	rig r;
	lc_err err;
	/* BART-like pairs; the target has one pad (1), which must be ignored */
	int32_t src[9] = { 0, 7, 11, 5, 19, 23, 8, 13, 2 };
	int32_t tgt[7] = { 0, 14, 1, 6, 21, 17, 2 };
	int64_t Ls = 9, Lt = 7;
	uint64_t P;
	float *g0, *v;
	int ntensor_ok = 0, ntensor = 0;
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
