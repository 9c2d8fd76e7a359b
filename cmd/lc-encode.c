/* lc-encode: token stream in, LOCOST encoder states out. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "arch/encoder.h"
#include "arch/model.h"
#include "base/cli.h"
#include "base/clock.h"
#include "stream/convert.h"
#include "stream/stream.h"

static void usage(void)
{
	printf("usage: lc-encode [-Fq] [-m MODEL] [-j THREADS] [--batch N] [--dtype f32|bf16] [--truncate]\n"
	       "                 [FILE...]\n"
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
	       "  -j, --threads N    threads, 1..1024 (default $LC_THREADS, else the number\n"
	       "                     of cores); short documents are encoded several at a\n"
	       "                     time, one thread each\n"
	       "      --batch N      at most N short documents at a time (default 64;\n"
	       "                     1: one at a time on all threads)\n"
	       "      --dtype T      f32 (default) or bf16 output\n"
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

struct run {
	lc_model *m;
	lc_encoder *enc;
	lc_encoder **one;             /* [threads] one-thread encoders for short documents */
	encoder_job *jobs;            /* [batch] */
	int threads, batch;
	lc_writer *w;
	lc_progress *prog;
	int gemm, stats, bf16, truncate;
};

/* Short documents are encoded several at a time, each on one thread
 * (their layers are too small to share among threads well: 8 documents
 * of 2K tokens went at 0.74 times the tokens/s of one of 16K on 2 cores);
 * longer ones one at a time on all threads. */
#define OVERLAP_LEN 8192
#define OVERLAP_DOCS 64
/* tokens read per batch at most (int32): 64K tokens, states of 200 MB at
 * d_model 768 */
#define OVERLAP_BYTES ((uint64_t)256 << 10)

/* A document's ids, checked and cut as the model needs (*ids malloc'd). */
static int doc_ids(struct run *r, lc_doc *d, int32_t **ids, int64_t *L, lc_err *err)
{
	if (convert_token_ids(d, model_config(r->m)->vocab_size, ids, L, err) < 0)
		return -1;
	if (*L == 0) {
		free(*ids);
		*ids = NULL;
		return lc_fail(err, "no tokens (an empty document cannot be encoded)");
	}
	if (encoder_max_len(r->enc) && *L > encoder_max_len(r->enc)) {
		int64_t max = encoder_max_len(r->enc);
		if (!r->truncate) {
			free(*ids);
			*ids = NULL;
			return lc_fail(err, "%" PRId64 " tokens, more than the %" PRId64 " the model takes "
			               "(give --truncate to keep the first ones, or cut the document into "
			               "windows with lc-chunk -n %" PRId64 " --ends 1,1)", *L, max, max);
		}
		cli_warn("%s: %" PRId64 " tokens cut to the %" PRId64 " the model takes (--truncate)",
		         d->name, *L, max);
		*L = encoder_truncate(r->enc, *ids, *L);
	}
	return 0;
}

/* The document's "tokens" replaced by an empty "hidden" [Le, d_model] to
 * encode into, with the model's marks. */
static float *doc_hidden(struct run *r, lc_doc *d, int64_t L, lc_err *err)
{
	lc_tensor *t = doc_find(d, "tokens");
	int dm = model_config(r->m)->d_model;
	uint64_t dims[2] = { (uint64_t)encoder_out_len(r->enc, L), (uint64_t)dm };

	tensor_free(t);
	if (tensor_init(t, "hidden", LC_F32, 2, dims, err) < 0 ||
	    meta_set(&t->meta, "model", model_fingerprint(r->m), err) < 0 ||
	    meta_setf(&t->meta, "d_model", err, "%d", dm) < 0 ||
	    meta_set(&t->meta, "encoder", model_config(r->m)->arch->name, err) < 0 ||
	    meta_set(&d->meta, "model", model_fingerprint(r->m), err) < 0 ||
	    meta_setf(&d->meta, "d_model", err, "%d", dm) < 0)
		return NULL;
	return t->data;
}

/* The encoded document out. */
static int doc_out(struct run *r, lc_doc *d, int64_t L, double seconds, lc_err *err)
{
	if (r->stats)
		fprintf(stderr, "lc-encode: stats: %s: %" PRId64 " tokens: encode %.3f s\n", d->name, L,
		        seconds);
	if (r->bf16)
		convert_tensor_to_bf16(doc_find(d, "hidden"));
	return stream_write_doc(r->w, d, err);
}

/* One document: its "tokens" become the "hidden" states, in place. */
static int encode_doc(lc_doc *d, void *ctx, lc_err *err)
{
	struct run *r = ctx;
	int32_t *ids = NULL;
	int64_t L = 0;
	struct prog g = { r->prog, d->name, 0 };
	float *out;
	double te;

	if (doc_ids(r, d, &ids, &L, err) < 0)
		return -1;
	g.L = L;
	if (r->gemm) {
		double sec;
		int rc = encoder_gemm_only(r->enc, L, &sec, err);
		if (rc == 0)
			printf("%s\t%" PRId64 "\t%.3f\n", d->name, L, sec);
		free(ids);
		return rc;
	}
	if (!(out = doc_hidden(r, d, L, err))) {
		free(ids);
		return -1;
	}
	te = clock_now();
	if (encoder_run(r->enc, ids, L, out, on_layer, &g, err) < 0) {
		free(ids);
		return -1;
	}
	free(ids);
	return doc_out(r, d, L, clock_now() - te, err);
}

/* A batch of documents: the short ones at the front of it several at a
 * time (encoder_run_many), the rest one by one; written in order. */
static int encode_batch(lc_doc *docs, int n, void *ctx, int *bad, lc_err *err)
{
	struct run *r = ctx;
	int k = 0, rc = 0;
	double te;

	/* the run of short documents the batch starts with */
	for (; k < n; k++) {
		encoder_job *j = &r->jobs[k];
		const lc_tensor *tk = doc_find(&docs[k], "tokens");
		memset(j, 0, sizeof *j);
		/* a long one ends the run before its ids are read (and cut, with
		 * a warning, which encode_doc would repeat) */
		if (tk && tk->rank == 1 && tk->dims[0] > OVERLAP_LEN)
			break;
		if (doc_ids(r, &docs[k], (int32_t **)&j->ids, &j->L, err) < 0) {
			*bad = k;
			rc = -1;
			break;
		}
		if (j->L > OVERLAP_LEN || !(j->out = doc_hidden(r, &docs[k], j->L, err))) {
			free((void *)j->ids);
			j->ids = NULL;
			if (j->L <= OVERLAP_LEN) {
				*bad = k;
				rc = -1;
			}
			break;
		}
	}
	if (k > 0) {
		cli_progress(r->prog, "%d documents from %s", k, docs[0].name);
		te = clock_now();
		encoder_run_many(r->one, r->threads, r->jobs, k);
		te = (clock_now() - te) / k;
	}
	for (int i = 0; i < k; i++) {
		if (rc == 0 || i < *bad) {
			if (r->jobs[i].rc < 0) {
				*err = r->jobs[i].err;
				*bad = i;
				rc = -1;
			} else if (doc_out(r, &docs[i], r->jobs[i].L, te, err) < 0) {
				*bad = i;
				rc = -1;
			}
		}
		free((void *)r->jobs[i].ids);
	}
	/* the rest: alone, on all threads */
	for (int i = k; rc == 0 && i < n; i++)
		if (encode_doc(&docs[i], r, err) < 0) {
			*bad = i;
			rc = -1;
		}
	return rc;
}

enum { OPT_DTYPE = 256, OPT_INFO, OPT_GEMM, OPT_STATS, OPT_RANDOM, OPT_SEED, OPT_TRUNC, OPT_HELP,
       OPT_VERSION, OPT_BATCH };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "model", required_argument, 0, 'm' }, { "threads", required_argument, 0, 'j' },
		{ "dtype", required_argument, 0, OPT_DTYPE }, { "info", no_argument, 0, OPT_INFO },
		{ "gemm-only", no_argument, 0, OPT_GEMM }, { "stats", no_argument, 0, OPT_STATS },
		{ "random-weights", no_argument, 0, OPT_RANDOM }, { "seed", required_argument, 0, OPT_SEED },
		{ "truncate", no_argument, 0, OPT_TRUNC }, { "batch", required_argument, 0, OPT_BATCH },
		{ "force", no_argument, 0, 'F' }, { "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, OPT_HELP }, { "version", no_argument, 0, OPT_VERSION },
		{ 0, 0, 0, 0 }
	};
	const char *mopt = NULL, *mdir, *from, *jopt = NULL;
	char mdirbuf[4096];
	int force = 0, quiet = 0, info = 0, random_w = 0, threads, c;
	uint64_t seed = 1;
	lc_err err;
	struct run r = { 0 };
	lc_progress prog;
	double t0;

	cli_init("lc-encode");
	r.batch = OVERLAP_DOCS;
	while ((c = cli_getopt(argc, argv, "m:j:Fq", opts)) != -1) {
		switch (c) {
		case 'm': mopt = optarg; break;
		case 'j': jopt = optarg; cli_threads_arg(optarg); break;
		case 'F': force = 1; break;
		case 'q': quiet = 1; break;
		case OPT_DTYPE:
			if (strcmp(optarg, "f32") == 0)
				r.bf16 = 0;
			else if (strcmp(optarg, "bf16") == 0)
				r.bf16 = 1;
			else
				cli_usage_error("--dtype: '%s' is not f32 or bf16", optarg);
			break;
		case OPT_INFO: info = 1; break;
		case OPT_GEMM: r.gemm = 1; break;
		case OPT_STATS: r.stats = 1; break;
		case OPT_RANDOM: random_w = 1; break;
		case OPT_TRUNC: r.truncate = 1; break;
		case OPT_BATCH: r.batch = (int)cli_int("--batch", optarg, 1, 4096); break;
		case OPT_SEED: seed = (uint64_t)cli_int("--seed", optarg, 0, INT64_MAX); break;
		case OPT_HELP: usage(); break;
		case OPT_VERSION: cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (info + r.gemm + random_w > 1)
		cli_usage_error("--info, --gemm-only and --random-weights exclude each other");
	threads = cli_threads(jopt);
	/* -m/--model, else $LC_MODEL, else the demo model */
	mdir = model_locate(cli_source(mopt, "-m/--model", "$LC_MODEL", &from), mdirbuf,
	                    sizeof mdirbuf);
	cli_check_path(from, mdir);
	if (random_w) {
		if (optind < argc)
			cli_usage_error("--random-weights takes no input files");
		if (model_write_random(mdir, seed, &err) < 0)
			cli_die_source(from, mdir, err.msg);
		return cli_finish(0);
	}
	t0 = clock_now();
	if (!(r.m = model_open(mdir, &err))) {
		if (from)
			cli_die_source(from, mdir, err.msg);
		cli_die(LC_EXIT_DATA, "model: %s", err.msg);
	}
	if (info) {
		if (optind < argc)
			cli_usage_error("--info takes no input files");
		model_info(r.m, stdout);
		model_free(r.m);
		return cli_finish(0);
	}
	if (!(r.enc = encoder_new(r.m, threads, &err)))
		cli_die(LC_EXIT_DATA, "model: %s", err.msg);
	if (!r.gemm) {
		cli_binary_stdout(force);
		if (!(r.w = stream_writer_new(stdout, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	cli_progress_init(&prog, quiet);
	r.prog = &prog;
	r.threads = threads;
	if (threads > 1 && r.batch > 1 && !r.gemm) {
		/* several short documents at once, one thread each */
		if (!(r.one = calloc((size_t)threads, sizeof *r.one)) ||
		    !(r.jobs = calloc((size_t)r.batch, sizeof *r.jobs)))
			cli_die(LC_EXIT_DATA, "out of memory");
		for (int i = 0; i < threads; i++)
			if (!(r.one[i] = encoder_new(r.m, 1, &err)))
				cli_die(LC_EXIT_DATA, "model: %s", err.msg);
		if (stream_each_batch(argc - optind, argv + optind, r.batch, OVERLAP_BYTES,
		                      encode_batch, &r, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		for (int i = 0; i < threads; i++)
			encoder_free(r.one[i]);
		free(r.one);
		free(r.jobs);
	} else if (stream_each(argc - optind, argv + optind, encode_doc, &r, &err) < 0) {
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	cli_progress_done(&prog);
	if (r.w && stream_writer_close(r.w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (r.stats) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "lc-encode: stats: wall %.3f s, peak RSS %.1f MiB\n", clock_now() - t0,
		        (double)ru.ru_maxrss / 1024.0);
	}
	encoder_free(r.enc);
	model_free(r.m);
	return cli_finish(0);
}
