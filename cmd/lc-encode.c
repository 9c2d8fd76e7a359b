/* lc-encode: token stream in, LOCOST encoder states out. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/encoder.h"
#include "arch/model.h"
#include "base/cli.h"
#include "base/clock.h"
#include "compute/compute.h"
#include "pipe/encode.h"
#include "stream/stream.h"

static void usage(void)
{
	printf("usage: lc-encode [-Fq] [-m MODEL] [-j THREADS] [--batch N] [--dtype f32|bf16] [--truncate]\n"
	       "                 [-d cpu|cuda] [--compute f32|bf16] [--stats] [FILE...]\n"
	       "       lc-encode -m MODEL --info\n"
	       "       lc-encode -m MODEL --gemm-only [FILE...]\n"
	       "       lc-encode -m MODEL --random-weights [--seed N]\n"
	       "\n"
	       "Encodes each document's \"tokens\" with the model's encoder and writes one\n"
	       "\"hidden\" tensor [L, d_model] per document (other records pass through).\n"
	       "\n"
	       "  -m, --model DIR    model directory (config.json + model.safetensors or\n"
	       "                     pytorch_model.bin) or a weight file in one;\n"
	       "                     default $LC_MODEL, else the demo model\n"
	       "  -j, --threads N    threads, 1..1024 (default $LC_THREADS, else the\n"
	       "                     processors this process may use: taskset, cgroup\n"
	       "                     quota); short documents are encoded several at a\n"
	       "                     time, one thread each\n"
	       "      --batch N      at most N short documents at a time (default 64;\n"
	       "                     1: one at a time on all threads)\n"
	       "      --dtype T      f32 (default) or bf16 output\n"
	       "  -d, --device D     cpu, or cuda: the encoder's layers on the GPU (a build\n"
	       "                     with CUDA=1; the default there when one answers)\n"
	       "      --compute P    f32 (default) or bf16: the matrix products with bf16\n"
	       "                     operands and fp32 accumulation (AVX512-BF16 or AMX;\n"
	       "                     elsewhere says so and runs f32)\n"
	       "      --truncate     cut documents longer than the model takes (BART: its\n"
	       "                     positions) as transformers does, with a warning\n"
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

enum { OPT_DTYPE = 256, OPT_INFO, OPT_GEMM, OPT_STATS, OPT_RANDOM, OPT_SEED, OPT_TRUNC, OPT_HELP,
       OPT_VERSION, OPT_BATCH, OPT_COMPUTE };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "model", required_argument, 0, 'm' }, { "threads", required_argument, 0, 'j' },
		{ "dtype", required_argument, 0, OPT_DTYPE }, { "info", no_argument, 0, OPT_INFO },
		{ "gemm-only", no_argument, 0, OPT_GEMM }, { "stats", no_argument, 0, OPT_STATS },
		{ "random-weights", no_argument, 0, OPT_RANDOM }, { "seed", required_argument, 0, OPT_SEED },
		{ "truncate", no_argument, 0, OPT_TRUNC }, { "batch", required_argument, 0, OPT_BATCH },
		{ "compute", required_argument, 0, OPT_COMPUTE }, { "device", required_argument, 0, 'd' },
		{ "force", no_argument, 0, 'F' }, { "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, OPT_HELP }, { "version", no_argument, 0, OPT_VERSION },
		{ 0, 0, 0, 0 }
	};
	const char *mopt = NULL, *mdir, *from, *jopt = NULL, *copt = NULL, *dopt = NULL, *tfrom;
	char mdirbuf[4096], note[200];
	int force = 0, quiet = 0, info = 0, random_w = 0, threads, nshort, c;
	uint64_t seed = 1;
	lc_err err;
	lc_progress prog;
	encode_opts o = { .batch = ENCODE_BATCH_DOCS, .note = cli_warn_cb, .progress = cli_progress_cb,
	                  .ctx = &prog };
	lc_model *m;
	lc_encoder *enc;
	lc_writer *w = NULL;
	encode_stage *s;
	double t0;

	cli_init("lc-encode");
	while ((c = cli_getopt(argc, argv, "m:j:d:Fq", opts)) != -1) {
		switch (c) {
		case 'm': mopt = optarg; break;
		case 'j': jopt = optarg; cli_threads_arg(optarg); break;
		case 'd': dopt = optarg; break;
		case 'F': force = 1; break;
		case 'q': quiet = 1; break;
		case OPT_DTYPE:
			if (strcmp(optarg, "f32") == 0)
				o.bf16 = 0;
			else if (strcmp(optarg, "bf16") == 0)
				o.bf16 = 1;
			else
				cli_usage_error("--dtype: '%s' is not f32 or bf16", optarg);
			break;
		case OPT_INFO: info = 1; break;
		case OPT_COMPUTE: copt = optarg; break;
		case OPT_GEMM: o.gemm = stdout; break;
		case OPT_STATS: o.stats = 1; break;
		case OPT_RANDOM: random_w = 1; break;
		case OPT_TRUNC: o.truncate = 1; break;
		case OPT_BATCH: o.batch = (int)cli_int("--batch", optarg, 1, 4096); break;
		case OPT_SEED: seed = (uint64_t)cli_int("--seed", optarg, 0, INT64_MAX); break;
		case OPT_HELP: usage(); break;
		case OPT_VERSION: cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (info + !!o.gemm + random_w > 1)
		cli_usage_error("--info, --gemm-only and --random-weights exclude each other");
	threads = cli_threads(jopt, &tfrom);
	if (cmp_set_device(dopt, cli_warn_cb, NULL, &err) < 0 ||
	    cmp_set_compute(copt, note, sizeof note, &err) < 0)
		cli_usage_error("%s", err.msg);
	if (*note)
		cli_warn("--compute %s: %s", copt, note);
	/* -m/--model, else $LC_MODEL, else the demo model */
	mdir = model_locate(cli_source(mopt, "-m/--model", "$LC_MODEL", &from), mdirbuf,
	                    sizeof mdirbuf);
	cli_check_path(from, mdir);
	if (random_w) {
		char wpath[4200];
		if (optind < argc)
			cli_usage_error("--random-weights takes no input files");
		for (int i = 0; i < 2; i++) {   /* either is the model the directory loads */
			snprintf(wpath, sizeof wpath, "%s/%s", mdir,
			         i ? "pytorch_model.bin" : "model.safetensors");
			if (access(wpath, F_OK) == 0)
				cli_die(LC_EXIT_DATA, "%s exists: --random-weights writes a new model, never "
				        "over one (remove it first)", wpath);
		}
		if (model_write_random(mdir, seed, &err) < 0)
			cli_die_source(from, mdir, err.msg);
		return cli_finish(0);
	}
	t0 = clock_now();
	if (!(m = model_open(mdir, 0, &err))) {
		if (from)
			cli_die_source(from, mdir, err.msg);
		cli_die(LC_EXIT_DATA, "model: %s", err.msg);
	}
	if (info) {
		if (optind < argc)
			cli_usage_error("--info takes no input files");
		model_info(m, stdout);
		cmp_info(stdout);
		printf("threads\t%d (%s)\n", threads, tfrom);
		model_free(m);
		return cli_finish(0);
	}
	if (!(enc = encoder_new(m, threads, &err)))
		cli_die(LC_EXIT_DATA, "model: %s", err.msg);
	if (!o.gemm) {
		cli_binary_stdout(force);
		if (!(w = stream_writer_new(stdout, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	/* several short documents at once, one thread each */
	nshort = threads > 1 && o.batch > 1 && !o.gemm ? threads : 0;
	if (!(s = encode_stage_new(m, enc, nshort, w, &o, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_init(&prog, quiet);
	if ((nshort ? stream_each_batch(argc - optind, argv + optind, o.batch, ENCODE_BATCH_BYTES,
	                                encode_batch, s, &err)
	            : stream_each(argc - optind, argv + optind, encode_doc, s, &err)) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_done(&prog);
	if (w && stream_writer_close(w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (o.stats)
		cli_stats(t0);
	encode_stage_free(s);
	encoder_free(enc);
	model_free(m);
	return cli_finish(0);
}
