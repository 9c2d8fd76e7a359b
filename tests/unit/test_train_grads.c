/*
 * test_train_grads: training's forward and backward, through the trainer
 * and the architecture's halves.
 *
 *  - parity: on the oracle's tiny model (tests/data/locost), the training
 *    forward's encoder output and teacher-forced logits against the
 *    goldens (enc_out, dec_logits on the greedy ids) and against the
 *    inference code (encoder_run, decoder_step);
 *  - gradients: on a tiny random model (every option of the layout:
 *    gating, bidirectional, gated GELU), each parameter tensor's
 *    analytic gradient against central finite differences, along the
 *    gradient itself and along a random direction, plus single entries;
 *  - the gradients of the tiny oracle model against PyTorch autograd
 *    (tests/data/train/grads.safetensors, made by tests/gen/train_ref.py).
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
#include "weights/safetensors.h"

static float *load_f32(const char *rel, size_t *n)
{
	size_t len = 0;
	float *p = t_slurp(t_data(rel), &len);

	*n = p ? len / sizeof(float) : 0;
	return p;
}

/* ------------------------------------------------------------- parity */

static void test_parity(void)
{
	static const char *cases[] = { "L0007", "L0064", "L0300" };
	rig r;
	lc_err err;

	if (rig_open(&r, t_data("locost")) < 0) {
		rig_close(&r);
		return;
	}
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
		char p[128];
		size_t nids, nenc, nlog, ngr;
		int32_t *ids, *gr;
		float *enc, *logits, *genc, *glog, *ienc, *ilog;
		int64_t L, S;
		train_pair_out out = { 0 };
		lc_encoder *e;
		lc_decoder *dec;
		dec_state *st;
		int V = model_config(r.m)->vocab_size, d = model_config(r.m)->d_model;

		snprintf(p, sizeof p, "locost/cases/%s/input_ids.i32", cases[ci]);
		ids = (int32_t *)load_f32(p, &nids);
		snprintf(p, sizeof p, "locost/cases/%s/greedy_ids.i32", cases[ci]);
		gr = (int32_t *)load_f32(p, &ngr);
		snprintf(p, sizeof p, "locost/cases/%s/enc_out.f32", cases[ci]);
		genc = load_f32(p, &nenc);
		snprintf(p, sizeof p, "locost/cases/%s/dec_logits.f32", cases[ci]);
		glog = load_f32(p, &nlog);
		if (!ids || !gr || !genc || !glog) {
			T_OK(0, "%s: golden files missing", cases[ci]);
			continue;
		}
		L = (int64_t)nids;
		S = (int64_t)(nlog / (size_t)V);
		enc = calloc((size_t)(L * d), sizeof *enc);
		logits = calloc((size_t)(ngr * (size_t)V), sizeof *logits);
		out.enc = enc;
		out.logits = logits;
		T_OK(trainer_pair(r.tr, ids, L, gr, (int64_t)ngr, 0, 0, 0, &out, &err) == 0, "%s",
		     err.msg);
		T_OK(relmax(enc, genc, nenc) <= 1e-4, "%s enc_out vs golden: %.3g", cases[ci],
		     relmax(enc, genc, nenc));
		T_OK(relmax(logits, glog, (size_t)(S * V)) <= 1e-4, "%s logits vs golden: %.3g",
		     cases[ci], relmax(logits, glog, (size_t)(S * V)));
		/* against the inference code, on every teacher-forced step */
		ienc = calloc((size_t)(L * d), sizeof *ienc);
		ilog = calloc((size_t)V, sizeof *ilog);
		e = encoder_new(r.m, 1, &err);
		dec = decoder_new(r.m, &err);
		if (e && dec && encoder_run(e, ids, L, ienc, NULL, NULL, &err) == 0) {
			double worst = 0;
			T_OK(relmax(enc, ienc, (size_t)(L * d)) <= 2e-5, "%s enc vs encoder_run: %.3g",
			     cases[ci], relmax(enc, ienc, (size_t)(L * d)));
			st = decoder_state_new(dec, ienc, L, 1, (int)ngr, &err);
			for (size_t t = 0; st && t < ngr; t++) {
				int32_t tok = t ? gr[t - 1] : model_config(r.m)->decoder_start_id;
				double q;
				if (decoder_step(st, &tok, ilog, &err) < 0)
					break;
				q = relmax(logits + t * (size_t)V, ilog, (size_t)V);
				if (q > worst)
					worst = q;
			}
			T_OK(st && worst <= 2e-5, "%s %zu teacher-forced steps vs decoder_step: %.3g",
			     cases[ci], ngr, worst);
			decoder_state_free(st);
		} else {
			T_OK(0, "inference code: %s", err.msg);
		}
		encoder_free(e);
		decoder_free(dec);
		free(ienc);
		free(ilog);
		free(ids);
		free(gr);
		free(genc);
		free(glog);
		free(enc);
		free(logits);
	}
	rig_close(&r);
}

/* --------------------------------------------------------- gradients */

static const char *tiny_config =
	"{\"d_model\": 8, \"d_ff\": 12, \"d_kv\": 4, \"d_state\": 6, \"num_layers\": 2,\n"
	" \"num_decoder_layers\": 2, \"num_heads\": 2, \"vocab_size\": 24,\n"
	" \"relative_attention_num_buckets\": 8, \"relative_attention_max_distance\": 16,\n"
	" \"feed_forward_proj\": \"gated-gelu\", \"tie_word_embeddings\": true,\n"
	" \"bidirectional\": true, \"gating\": true}\n";

static void gradients(void)
{
	char dir[] = "/tmp/lc-tf-XXXXXX";
	char path[256];
	FILE *f;
	rig r;
	lc_err err;
	/* targets include one pad (0), which must be ignored */
	int32_t src[11] = { 3, 7, 11, 2, 19, 5, 23, 8, 13, 4, 1 };
	int32_t tgt[7] = { 9, 14, 0, 6, 21, 17, 1 };
	int64_t Ls = 11, Lt = 7;
	uint64_t P;
	float *g0, *v;
	int ntensor_ok = 0;
	double gworst = 0;

	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/config.json", dir);
	f = fopen(path, "w");
	fputs(tiny_config, f);
	fclose(f);
	T_OK(model_write_random(dir, 7, &err) == 0, "%s", err.msg);
	if (rig_open(&r, dir) < 0) {
		rig_close(&r);
		return;
	}
	P = r.P;
	/* a larger D and non-trivial kernels make every path matter */
	rig_loss(&r, src, Ls, tgt, Lt, 1);
	g0 = malloc(P * sizeof *g0);
	v = malloc(P * sizeof *v);
	memcpy(g0, trainer_grads(r.tr), P * sizeof *g0);
	for (uint32_t ti = 0; ti < params_count(trainer_params(r.tr)); ti++) {
		const lc_param *t = params_at(trainer_params(r.tr), ti);
		float *w = r.w + t->off, *g = g0 + t->off;
		double gn = 0, worst = 0;
		int dirs_ok = 1;
		for (uint64_t i = 0; i < t->numel; i++)
			gn += (double)g[i] * g[i];
		gn = sqrt(gn);
		/* two directions: the gradient itself, and a random one */
		for (int dd = 0; dd < 2; dd++) {
			double vn = 0, an = 0, fd, h, lp, lm;
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
			h = tg_step(gn, 1e-2);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			lp = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] -= (float)(2 * h * v[i]);
			lm = rig_loss(&r, src, Ls, tgt, Lt, 0);
			for (uint64_t i = 0; i < t->numel; i++)
				w[i] += (float)(h * v[i]);
			fd = (lp - lm) / (2 * h);
			{
				double e = fabs(fd - an) / (gn > 1e-3 ? gn : 1e-3);
				if (e > worst)
					worst = e;
				if (e > 1e-2)
					dirs_ok = 0;
			}
		}
		T_OK(dirs_ok && gn > 0, "%s: |g| %.3g, directional FD error %.3g of |g|", t->name, gn,
		     worst);
		ntensor_ok += dirs_ok && gn > 0;
		if (worst > gworst)
			gworst = worst;
	}
	printf("# finite differences (dropout %.1f): %d of %u tensors, worst error %.3g of |g|\n",
	       dropout_p, ntensor_ok, params_count(trainer_params(r.tr)), gworst);
	T_EQ_I(ntensor_ok, params_count(trainer_params(r.tr)));
	/* the pad label contributes nothing: same loss with a -1 label */
	{
		int32_t t2[7];
		double a, b;
		memcpy(t2, tgt, sizeof t2);
		t2[2] = -1;
		a = rig_loss(&r, src, Ls, tgt, Lt, 0);
		b = rig_loss(&r, src, Ls, t2, Lt, 0);
		/* the decoder input after the ignored label differs (pad vs -1 -> pad): equal */
		T_OK(a == b, "pad and -1 labels are both ignored: %.9g vs %.9g", a, b);
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
	gradients();
}

/* Dropout masks are a function of the seed: the same checks hold with them. */
static void test_gradients_dropout(void)
{
	dropout_p = 0.1;
	gradients();
	dropout_p = 0;
}

/* ------------------------------------------------------ torch autograd */

static void test_autograd(void)
{
	rig r;
	lc_err err;
	st_file *sf;
	size_t n;
	int32_t *src, *tgt;
	const st_tensor *ts, *tt;
	int nok = 0;
	double worst = 0;
	const char *wname = "";

	sf = st_open(t_data("train/grads.safetensors"), &err);
	T_OK(sf != NULL, "%s", sf ? "" : err.msg);
	if (!sf)
		return;
	ts = st_find(sf, "input.source");
	tt = st_find(sf, "input.target");
	T_OK(ts && tt && ts->dtype == ST_I32 && tt->dtype == ST_I32, "inputs present");
	if (!ts || !tt) {
		st_close(sf);
		return;
	}
	src = malloc(ts->nbytes);
	tgt = malloc(tt->nbytes);
	memcpy(src, ts->data, ts->nbytes);
	memcpy(tgt, tt->data, tt->nbytes);
	if (rig_open(&r, t_data("locost")) == 0) {
		double loss = rig_loss(&r, src, (int64_t)ts->numel, tgt, (int64_t)tt->numel, 1);
		const st_tensor *tl = st_find(sf, "loss");
		if (tl) {
			double ref;
			float fl;
			memcpy(&fl, tl->data, 4);
			ref = fl;
			T_OK(fabs(loss - ref) <= 1e-5 * fabs(ref), "loss %.8g vs torch %.8g", loss, ref);
		}
		for (uint32_t i = 0; i < params_count(trainer_params(r.tr)); i++) {
			const lc_param *t = params_at(trainer_params(r.tr), i);
			char nm[160];
			const st_tensor *gt;
			float *ref;
			double q;
			snprintf(nm, sizeof nm, "grad.%s", t->name);
			gt = st_find(sf, nm);
			if (!gt || gt->numel != t->numel || gt->dtype != ST_F32) {
				T_OK(0, "%s: no torch gradient", nm);
				continue;
			}
			ref = malloc(gt->nbytes);
			memcpy(ref, gt->data, gt->nbytes);
			n = t->numel;
			q = relmax(trainer_grads(r.tr) + t->off, ref, n);
			if (q > worst) {
				worst = q;
				wname = t->name;
			}
			/* float32 against PyTorch's float64 autograd: measured 3.3e-6 */
			nok += q <= 1e-4;
			if (q > 1e-4)
				T_OK(0, "%s: max|c - torch| / max|torch| = %.3g", t->name, q);
			free(ref);
		}
		T_EQ_I(nok, params_count(trainer_params(r.tr)));
		printf("# autograd: %d tensors, worst %.3g (%s)\n", nok, worst, wname);
	}
	rig_close(&r);
	free(src);
	free(tgt);
	st_close(sf);
}

int main(void)
{
	T_RUN(test_parity);
	T_RUN(test_gradients);
	T_RUN(test_gradients_dropout);
	T_RUN(test_autograd);
	return t_done();
}
