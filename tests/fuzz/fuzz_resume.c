/* libFuzzer target: resuming training (lc-train on an OUTDIR that holds a
 * checkpoint) from an arbitrary trainer_state.json or checkpoint.json.
 * The process makes one real checkpoint of a tiny LOCOST model once (one
 * step, with its optimizer state); each input then replaces one of the
 * two files (the first byte chooses: even, trainer_state.json with no
 * manifest, as an older set has; odd, checkpoint.json), and the resume
 * runs as lc-train runs it: checkpoint_recover, train_state_check,
 * train_state_opts, trainer_resume, then one step on the resumed state.
 * Whatever the files say, each gives its result or an error, never a
 * crash, a hang or an allocation the data does not call for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/model.h"
#include "train/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char config[] =
	"{\"architectures\": [\"LOCOSTForConditionalGeneration\"], \"d_model\": 8, \"d_ff\": 16, "
	"\"d_kv\": 4, \"d_state\": 4, \"num_layers\": 1, \"num_decoder_layers\": 1, "
	"\"num_heads\": 2, \"vocab_size\": 64, \"feed_forward_proj\": \"gated-gelu\", "
	"\"tie_word_embeddings\": true}";

static char dir[] = "/tmp/lc-fuzz-resume-XXXXXX";
static lc_model *model;
static train_opts opts;
static int32_t src[5] = { 5, 6, 7, 8, 1 }, tgt[3] = { 9, 10, 1 };
static train_pair pair = { src, tgt, 5, 3, (char *)"fuzz" };
static train_data td = { .p = &pair, .n = 1, .cap = 1, .max_src = 5 };
static char *state;             /* the checkpoint's own trainer_state.json */
static size_t state_len;

static void put(const char *name, const void *p, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		abort();
}

static char *slurp(const char *name, size_t *n)
{
	char path[128];
	FILE *f;
	char *p;
	long len;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || !(p = malloc((size_t)len + 1)) ||
	    fread(p, 1, (size_t)len, f) != (size_t)len)
		abort();
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* The checkpoint every input starts from: random weights, one step. */
static void setup(void)
{
	char cfg[128];
	lc_err err;
	train_stats st;
	trainer *t;

	if (!mkdtemp(dir))
		abort();
	put("config.json", config, sizeof config - 1);
	snprintf(cfg, sizeof cfg, "%s/config.json", dir);
	opts.lr = 1e-3;
	opts.sched = LR_CONSTANT;
	opts.batch_tokens = 1 << 10;
	opts.clip = 1.0;
	opts.adam = (adamw_opts){ 0.9, 0.999, 1e-8, 0.01 };
	opts.threads = 1;
	opts.seed = 1;
	opts.data_pairs = td.n;
	opts.data_crc = train_data_crc(&td);
	if (model_write_random(dir, 1, &err) < 0 || !(model = model_open(dir, 0, &err)) ||
	    !(t = trainer_new(model, &opts, &err)) || trainer_step(t, &td, &st, &err) < 0 ||
	    trainer_save(t, dir, cfg, NULL, 1, &err) < 0) {
		fprintf(stderr, "fuzz_resume: setup: %s\n", err.msg);
		abort();
	}
	trainer_free(t);
	state = slurp("trainer_state.json", &state_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128], diff[1024];
	lc_err err;
	train_opts o = opts;
	train_stats st;
	trainer *t;

	if (!model)
		setup();
	if (size < 1)
		return 0;
	snprintf(path, sizeof path, "%s/checkpoint.json", dir);
	if (data[0] % 2) {
		put("trainer_state.json", state, state_len);
		put("checkpoint.json", data + 1, size - 1);
	} else {
		put("trainer_state.json", data + 1, size - 1);
		unlink(path);
	}
	if (checkpoint_recover(dir, &err) == 0 &&
	    train_state_check(dir, &opts, diff, sizeof diff, &err) >= 0 &&
	    train_state_opts(dir, &o, &err) == 0 && (t = trainer_new(model, &o, &err))) {
		if (trainer_resume(t, dir, &err) == 0)
			trainer_step(t, &td, &st, &err);
		trainer_free(t);
	}
	return 0;
}
