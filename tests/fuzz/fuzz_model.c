/* libFuzzer target: a model made from an arbitrary config.json. A
 * configuration its architecture accepts, when its parameters are few
 * (at most 2^18 numbers: the target is the shapes, not the arithmetic),
 * gets random weights (model_write_random) and runs as lc-encode and
 * lc-decode run it: the encoder on a few token ids (their number from the
 * input's size), then the decoder's first steps on those states, greedy
 * or two beams, with a cross-attention cache or without, and on some
 * inputs one training step (lc-train --config) on those ids. Whatever
 * the keys say, each step gives its numbers or an error, never a crash, a
 * hang or memory the shapes do not call for. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "arch/decoder.h"
#include "arch/encoder.h"
#include "arch/model.h"
#include "train/train.h"
#include "weights/config.h"

#define MAX_PARAMS (1u << 18)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One directory for the process, rewritten by every input. */
static const char *workdir(void)
{
	static char dir[] = "/tmp/lc-fuzz-model-XXXXXX";
	static int made;

	if (!made && !mkdtemp(dir))
		abort();
	made = 1;
	return dir;
}

/* The parameters config.json declares: 0 when it is refused. */
static uint64_t nparams(const uint8_t *data, size_t size)
{
	lc_err err;
	lc_config c;
	lc_params *p = NULL;
	json_t *root = cfg_parse((const char *)data, size, "fuzz", &err);
	void *w;
	uint64_t n = 0;

	if (root && arch_config_json(root, "fuzz", &c, &err) == 0 &&
	    (w = arch_weights_new(&c, NULL, &p, &err))) {
		n = params_total(p);
		arch_weights_free(&c, w, p);
	}
	json_decref(root);
	return n;
}

/* L ids encoded, then rows decoder rows (beams: a cross-attention cache
 * when cache, rows reordered after each step). */
static void run(lc_model *m, int64_t L, int rows, int cache)
{
	const lc_config *c = model_config(m);
	lc_err err;
	lc_encoder *e = encoder_new(m, 1, &err);
	lc_decoder *d = NULL;
	dec_state *s = NULL;
	int32_t *ids = NULL, tok[2], src[2] = { 1, 0 };
	float *out = NULL, *logits = NULL;
	int64_t R;

	if (!e)
		return;
	if (encoder_max_len(e) > 0 && L > encoder_max_len(e))
		L = encoder_max_len(e);
	R = encoder_out_len(e, L);
	if (R < 0 || R > (int64_t)1 << 20)
		abort();
	ids = malloc((size_t)L * sizeof *ids);
	out = malloc(((size_t)R * (size_t)c->d_model + 1) * sizeof *out);
	if (!ids || !out)
		abort();
	for (int64_t i = 0; i < L; i++)
		ids[i] = (int32_t)((i * 7 + 3) % c->vocab_size);
	if (encoder_run(e, ids, L, out, NULL, NULL, &err) < 0 || R < 1)
		goto out;
	if (!(d = decoder_new(m, &err)) ||
	    (cache && decoder_set_cross_cache(d, (uint64_t)1 << 24, 1, &err) < 0) ||
	    !(s = decoder_state_new(d, out, R, rows, 4, &err)))
		goto out;
	if (!(logits = malloc((size_t)rows * (size_t)c->vocab_size * sizeof *logits)))
		abort();
	tok[0] = tok[1] = c->decoder_start_id >= 0 && c->decoder_start_id < c->vocab_size ?
	                  c->decoder_start_id : 0;
	for (int k = 0; k < 3 && decoder_step(s, tok, logits, &err) == 0; k++) {
		tok[0] = (tok[0] + 1) % c->vocab_size;
		tok[1] = (tok[1] + 2) % c->vocab_size;
		if (rows > 1 && decoder_reorder(s, src, &err) < 0)
			break;
	}
out:
	free(logits);
	decoder_state_free(s);
	decoder_free(d);
	free(out);
	free(ids);
	encoder_free(e);
}

/* One training step (lc-train --config) on one pair: ids[L] -> three
 * tokens, for the architectures that train. */
static void train(lc_model *m, int64_t L)
{
	const lc_config *c = model_config(m);
	lc_err err;
	train_opts o;
	train_stats st;
	trainer *t;
	int32_t src[41], tgt[3];
	train_pair pair = { src, tgt, L, 3, (char *)"fuzz" };
	train_data d = { .p = &pair, .n = 1, .cap = 1, .max_src = L };

	for (int64_t i = 0; i < L; i++)
		src[i] = (int32_t)((i * 5 + 1) % c->vocab_size);
	for (int i = 0; i < 3; i++)
		tgt[i] = (int32_t)((i + 4) % c->vocab_size);
	memset(&o, 0, sizeof o);
	o.lr = 1e-3;
	o.sched = LR_CONSTANT;
	o.batch_tokens = 1 << 10;
	o.clip = 1.0;
	o.dropout = 0.1;
	o.adam = (adamw_opts){ 0.9, 0.999, 1e-8, 0.01 };
	o.threads = 1;
	o.seed = 1;
	if ((t = trainer_new(m, &o, &err))) {
		trainer_step(t, &d, &st, &err);
		trainer_free(t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = workdir();
	char path[64];
	lc_err err;
	lc_model *m;
	FILE *f;
	uint64_t n = nparams(data, size);

	if (n == 0 || n > MAX_PARAMS)
		return 0;
	snprintf(path, sizeof path, "%s/config.json", dir);
	if (!(f = fopen(path, "wb")) || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	if (model_write_random(dir, size, &err) < 0)
		return 0;
	/* half the inputs load as lc-decode does: the weights copied out */
	if ((m = model_open(dir, size / 328 % 2 ? MODEL_COPY : 0, &err))) {
		run(m, 1 + (int64_t)(size % 41), 1 + (int)(size / 41 % 2), (int)(size / 82 % 2));
		if (size / 164 % 2)
			train(m, 1 + (int64_t)(size % 41));
		model_free(m);
	}
	return 0;
}
