/* lc-encode: token stream in, LOCOST encoder states out. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/cli.h"
#include "arch/locost.h"
#include "arch/model.h"
#include "stream/stream.h"

static void usage(void)
{
	printf("usage: lc-encode [-Fq] [-m MODEL] [-j THREADS] [--dtype f32|bf16] [FILE...]\n"
	       "       lc-encode -m MODEL --info\n"
	       "       lc-encode -m MODEL --gemm-only [FILE...]\n"
	       "       lc-encode -m MODEL --random-weights [--seed N]\n"
	       "\n"
	       "Encodes each document's \"tokens\" with the LOCOST encoder and writes one\n"
	       "\"hidden\" tensor [L, d_model] per document (other records pass through).\n"
	       "\n"
	       "  -m, --model DIR    model directory (config.json + model.safetensors or\n"
	       "                     pytorch_model.bin) or a weight file in one;\n"
	       "                     default $LC_MODEL, else the demo model\n"
	       "  -j, --threads N    threads (default $LC_THREADS or the number of cores)\n"
	       "      --dtype T      f32 (default) or bf16 output\n"
	       "      --info         print the configuration and parameter count, then exit\n"
	       "      --gemm-only    per document, time only the layers' GEMMs and print\n"
	       "                     \"NAME L SECONDS\" (benchmarks); writes no stream\n"
	       "      --stats        print wall time and peak memory on standard error\n"
	       "      --random-weights  write MODEL/model.safetensors with random weights for\n"
	       "                     MODEL/config.json (tests and benchmarks)\n"
	       "      --seed N       seed for --random-weights (default 1)\n"
	       "  -F, --force        write a binary stream even to a terminal\n"
	       "  -q, --quiet        no progress on standard error\n"
	       "      --help, --version\n");
	exit(cli_finish(0));
}

struct prog {
	lc_progress *p;
	const char *doc;
	int64_t L;
};

static void on_layer(void *ctx, int done, int total)
{
	struct prog *g = ctx;
	cli_progress(g->p, "%s: %" PRId64 " tokens: layer %d/%d", g->doc, g->L, done, total);
}

static void print_info(lc_model *m)
{
	const lc_config *c = model_config(m);

	printf("model\t%s\n", model_dir(m));
	printf("fingerprint\t%s\n", model_fingerprint(m));
	printf("d_model\t%d\nd_ff\t%d\nd_kv\t%d\nd_state\t%d\ncomplex_modes\t%d\n", c->d_model,
	       c->d_ff, c->d_kv, c->d_state, c->d_state / 2);
	printf("num_layers\t%d\nnum_decoder_layers\t%d\nnum_heads\t%d\nvocab_size\t%d\n",
	       c->num_layers, c->num_decoder_layers, c->num_heads, c->vocab_size);
	printf("layer_norm_epsilon\t%g\nfeed_forward\t%s%s\n", c->eps,
	       c->is_gated_act ? "gated-" : "", c->act);
	printf("bidirectional\t%d\ngating\t%d\ntie_word_embeddings\t%d\n", c->bidirectional,
	       c->gating, c->tie_word_embeddings);
	printf("use_fast_fft_conv\t%d (ignored: the reference convolution path is always used)\n",
	       c->use_fast_fft_conv);
	printf("pad_id\t%d\neos_id\t%d\ndecoder_start_id\t%d\n", c->pad_id, c->eos_id,
	       c->decoder_start_id);
	printf("parameters\t%" PRIu64 "\nweight_bytes\t%" PRIu64 "\n", model_nparams(m),
	       model_nbytes(m));
}

/* The document's token ids as int32, checked against the vocabulary. */
static int32_t *doc_ids(const lc_doc *d, const lc_tensor *t, int vocab, int64_t *L, lc_err *err)
{
	uint64_t n = tensor_numel(t);
	int32_t *ids;

	if (t->rank != 1) {
		lc_fail(err, "document \"%s\": \"tokens\" has rank %u, not 1", d->name, t->rank);
		return NULL;
	}
	if (n == 0) {
		lc_fail(err, "document \"%s\": no tokens (an empty document cannot be encoded)", d->name);
		return NULL;
	}
	if (!(ids = malloc(n * sizeof *ids))) {
		lc_fail(err, "document \"%s\": out of memory for %" PRIu64 " tokens", d->name, n);
		return NULL;
	}
	for (uint64_t i = 0; i < n; i++) {
		int64_t v;
		switch (t->dtype) {
		case LC_I32: v = ((const int32_t *)t->data)[i]; break;
		case LC_U32: v = ((const uint32_t *)t->data)[i]; break;
		case LC_I64: v = ((const int64_t *)t->data)[i]; break;
		case LC_U16: v = ((const uint16_t *)t->data)[i]; break;
		case LC_I16: v = ((const int16_t *)t->data)[i]; break;
		case LC_U8: v = ((const uint8_t *)t->data)[i]; break;
		default:
			lc_fail(err, "document \"%s\": \"tokens\" has dtype %s, not an integer type",
			        d->name, lc_dtype_name(t->dtype));
			free(ids);
			return NULL;
		}
		if (v < 0 || v >= vocab) {
			lc_fail(err, "document \"%s\": token %" PRIu64 " is %" PRId64
			        ", outside the model's vocabulary [0, %d)", d->name, i, v, vocab);
			free(ids);
			return NULL;
		}
		ids[i] = (int32_t)v;
	}
	*L = (int64_t)n;
	return ids;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);           /* round to nearest even */
	return (uint16_t)(u >> 16);
}

enum { OPT_DTYPE = 256, OPT_INFO, OPT_GEMM, OPT_STATS, OPT_RANDOM, OPT_SEED, OPT_HELP, OPT_VERSION };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "model", required_argument, 0, 'm' }, { "threads", required_argument, 0, 'j' },
		{ "dtype", required_argument, 0, OPT_DTYPE }, { "info", no_argument, 0, OPT_INFO },
		{ "gemm-only", no_argument, 0, OPT_GEMM }, { "stats", no_argument, 0, OPT_STATS },
		{ "random-weights", no_argument, 0, OPT_RANDOM }, { "seed", required_argument, 0, OPT_SEED },
		{ "force", no_argument, 0, 'F' }, { "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, OPT_HELP }, { "version", no_argument, 0, OPT_VERSION },
		{ 0, 0, 0, 0 }
	};
	const char *mdir = NULL, *jopt = NULL;
	char mdirbuf[4096];
	int force = 0, quiet = 0, info = 0, gemm = 0, stats = 0, random_w = 0, bf16 = 0, c;
	uint64_t seed = 1;
	lc_err err;
	lc_model *m;
	locost *enc;
	lc_writer *w = NULL;
	lc_progress prog;
	double t0;

	cli_init("lc-encode");
	while ((c = getopt_long(argc, argv, "m:j:Fq", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mdir = optarg; break;
		case 'j': jopt = optarg; break;
		case 'F': force = 1; break;
		case 'q': quiet = 1; break;
		case OPT_DTYPE:
			if (strcmp(optarg, "f32") == 0)
				bf16 = 0;
			else if (strcmp(optarg, "bf16") == 0)
				bf16 = 1;
			else
				cli_usage_error("--dtype: '%s' is not f32 or bf16", optarg);
			break;
		case OPT_INFO: info = 1; break;
		case OPT_GEMM: gemm = 1; break;
		case OPT_STATS: stats = 1; break;
		case OPT_RANDOM: random_w = 1; break;
		case OPT_SEED: seed = (uint64_t)cli_int("--seed", optarg, 0, INT64_MAX); break;
		case OPT_HELP: usage(); break;
		case OPT_VERSION: cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (info + gemm + random_w > 1)
		cli_usage_error("--info, --gemm-only and --random-weights exclude each other");
	mdir = model_locate(mdir, mdirbuf, sizeof mdirbuf);
	if (random_w) {
		if (optind < argc)
			cli_usage_error("--random-weights takes no input files");
		if (model_write_random(mdir, seed, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		return cli_finish(0);
	}
	t0 = cli_now();
	if (!(m = model_open(mdir, &err)))
		cli_die(LC_EXIT_DATA, "model: %s", err.msg);
	if (info) {
		if (optind < argc)
			cli_usage_error("--info takes no input files");
		print_info(m);
		model_free(m);
		return cli_finish(0);
	}
	if (!(enc = locost_new(m, cli_threads(jopt), &err)))
		cli_die(LC_EXIT_DATA, "model: %s", err.msg);
	if (!gemm) {
		cli_binary_stdout(force);
		if (!(w = stream_writer_new(stdout, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	cli_progress_init(&prog, quiet);
	{
		int nin = optind < argc ? argc - optind : 1;
		for (int a = 0; a < nin; a++) {
			const char *path = optind < argc ? argv[optind + a] : "-";
			FILE *f = cli_open(path);
			lc_reader *r = stream_reader_new(f, path, &err);
			lc_doc d;
			int got;

			if (!r)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			memset(&d, 0, sizeof d);
			while ((got = stream_read_doc(r, &d, &err)) == 1) {
				lc_tensor *t = doc_find(&d, "tokens");
				int64_t L = 0;
				int32_t *ids;
				int dm = model_config(m)->d_model;
				uint64_t dims[2];
				struct prog g = { &prog, d.name, 0 };

				if (!t) {
					stream_writer_abort(w);
					cli_die(LC_EXIT_DATA, "%s: document \"%s\" has no \"tokens\" tensor",
					        cli_label(path), d.name);
				}
				if (!(ids = doc_ids(&d, t, model_config(m)->vocab_size, &L, &err))) {
					stream_writer_abort(w);
					cli_die(LC_EXIT_DATA, "%s: %s", cli_label(path), err.msg);
				}
				g.L = L;
				if (gemm) {
					double sec;
					if (locost_gemm_only(enc, L, &sec, &err) < 0)
						cli_die(LC_EXIT_DATA, "%s: document \"%s\": %s", cli_label(path),
						        d.name, err.msg);
					printf("%s\t%" PRId64 "\t%.3f\n", d.name, L, sec);
					free(ids);
					continue;
				}
				/* the "tokens" record becomes the "hidden" tensor, in place */
				tensor_free(t);
				dims[0] = (uint64_t)L;
				dims[1] = (uint64_t)dm;
				if (tensor_init(t, "hidden", LC_F32, 2, dims, &err) < 0 ||
				    meta_set(&t->meta, "model", model_fingerprint(m), &err) < 0 ||
				    meta_setf(&t->meta, "d_model", &err, "%d", dm) < 0 ||
				    meta_set(&t->meta, "encoder", "locost", &err) < 0 ||
				    meta_set(&d.meta, "model", model_fingerprint(m), &err) < 0 ||
				    meta_setf(&d.meta, "d_model", &err, "%d", dm) < 0) {
					stream_writer_abort(w);
					cli_die(LC_EXIT_DATA, "%s: document \"%s\": %s", cli_label(path),
					        d.name, err.msg);
				}
				double te = cli_now();
				if (locost_encode(enc, ids, L, t->data, -1, on_layer, &g, &err) < 0) {
					stream_writer_abort(w);
					cli_die(LC_EXIT_DATA, "%s: document \"%s\": %s", cli_label(path),
					        d.name, err.msg);
				}
				free(ids);
				if (stats)
					fprintf(stderr, "lc-encode: stats: %s: %" PRId64 " tokens: encode %.3f s\n",
					        d.name, L, cli_now() - te);
				if (bf16) {
					const float *src = t->data;
					uint16_t *dst = (uint16_t *)t->data;
					/* in place, front to back: dst[i] (2 bytes) never passes src[i] */
					for (uint64_t i = 0; i < (uint64_t)L * (uint64_t)dm; i++)
						dst[i] = f32_to_bf16(src[i]);
					t->dtype = LC_BF16;
					t->nbytes = (uint64_t)L * (uint64_t)dm * 2;
				}
				if (stream_write_doc(w, &d, &err) < 0) {
					stream_writer_abort(w);
					cli_die(LC_EXIT_DATA, "%s", err.msg);
				}
			}
			if (got < 0) {
				stream_writer_abort(w);
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			}
			doc_free(&d);
			stream_reader_free(r);
			if (f != stdin)
				fclose(f);
		}
	}
	cli_progress_done(&prog);
	if (w && stream_writer_close(w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (stats) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "lc-encode: stats: wall %.3f s, peak RSS %.1f MiB\n", cli_now() - t0,
		        (double)ru.ru_maxrss / 1024.0);
	}
	locost_free(enc);
	model_free(m);
	return cli_finish(0);
}
