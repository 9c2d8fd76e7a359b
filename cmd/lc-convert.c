/* lc-convert: a BART model directory into an LSG-BART one (or an LSG-BART
 * one to a longer maximum length), as the LSG authors' converter does, or
 * (--to bart_ls) into a BART-LS one, as the BART-LS authors initialise it,
 * or (--to topdown) into a top-down transformer, as Pang et al. do. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "arch/bartlsconv.h"
#include "arch/lsgconv.h"
#include "arch/topdownconv.h"
#include "base/cli.h"
#include "ops/lsgattn.h"
#include "text/bpe.h"

static void usage(void)
{
	printf("usage: lc-convert [-q] [-j N] [-n MAX_LEN] [--block-size N]\n"
	       "                  [--sparse-block-size N] [--sparsity-factor N]\n"
	       "                  [--sparsity-type TYPE] [--global-tokens N]\n"
	       "                  [--set KEY=JSON]... [--name NAME] SRC DST\n"
	       "       lc-convert --to bart_ls [-q] [-n MAX_LEN] [--block-size N]\n"
	       "                  [--pooling-layers N] [--vocab-size N] [--seed S]\n"
	       "                  [--name NAME] SRC DST\n"
	       "       lc-convert --to topdown [-q] [-n MAX_LEN] [--block-size N]\n"
	       "                  [--bottom-up-layers N] [--segment-layers N]\n"
	       "                  [--pool-type avg|adapool] [--max-segments N]\n"
	       "                  [--name NAME] SRC DST\n"
	       "       lc-convert [options] -m SRC DST\n"
	       "\n"
	       "Converts the BART model directory SRC into the LSG-BART directory DST (new),\n"
	       "as ccdv-ai/convert_checkpoint_to_lsg does: positions tiled to MAX_LEN, global\n"
	       "embeddings from the positions and the <s> and <mask> embeddings, the LSG keys\n"
	       "in config.json. An LSG-BART SRC gets longer position tables only.\n"
	       "With --to bart_ls, into a BART-LS directory as facebookresearch/bart_ls\n"
	       "initialises it: encoder positions tiled to MAX_LEN (a multiple of SRC's),\n"
	       "pooled attention in the top layers drawn from N(0, 0.02), the rest copied.\n"
	       "With --to topdown, into a top-down transformer: BART's encoder layers become\n"
	       "the bottom-up then the top-down layers, the segment layers copies of BART's\n"
	       "last ones, each top-down layer's cross-attention a copy of its self-attention.\n"
	       "\n"
	       "  -m, --model SRC         the model to convert, instead of the first operand\n"
	       "  --to TYPE               lsg (default), bart_ls or topdown\n"
	       "  -n, --max-len N         max_position_embeddings of DST (default 4096;\n"
	       "                          bart_ls, topdown: 16384; --max-length is the same)\n"
	       "  --block-size N          block_size (default 128, or SRC's; bart_ls: 1024;\n"
	       "                          topdown: window_size, 1024)\n"
	       "  --bottom-up-layers N    topdown: BART's first N encoder layers bottom-up, the\n"
	       "                          rest top-down (default two thirds: 8 of 12)\n"
	       "  --segment-layers N      topdown: segment layers (default 2)\n"
	       "  --pool-type TYPE        topdown: avg (default) or adapool\n"
	       "  --max-segments N        topdown: refuse inputs with more segments (default 0:\n"
	       "                          no limit)\n"
	       "  --pooling-layers N      bart_ls: the top N encoder layers pooled (default 4)\n"
	       "  --vocab-size N          bart_ls: a larger vocabulary, new rows copied from\n"
	       "                          the last (default SRC's)\n"
	       "  --seed S                bart_ls: the pooled attention's initial weights\n"
	       "                          (default 0)\n"
	       "  --sparse-block-size N   sparse_block_size (default 128, or SRC's)\n"
	       "  --sparsity-factor N     sparsity_factor (default 2, or SRC's)\n"
	       "  --sparsity-type TYPE    none, norm, pooling, stride, block_stride,\n"
	       "                          bos_pooling or lsh (default norm, or SRC's)\n"
	       "  --global-tokens N       num_global_tokens, 1..512 (default 1, or SRC's)\n"
	       "  --set KEY=JSON          any other config.json key (adaptive, mask_first_token,\n"
	       "                          pass_global_tokens_to_decoder, pool_with_global, ...)\n"
	       "  --name NAME             _name_or_path in config.json (default DST)\n"
	       "  -j, --threads N         lc-convert runs on one thread: N (1..1024) is checked\n"
	       "                          and otherwise ignored, so that scripts can pass -j to\n"
	       "                          every program\n"
	       "  -q, --quiet             no progress\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

static void progress(void *ctx, const char *what)
{
	lc_progress *p = ctx;

	cli_progress(p, "%s", what);
}

int main(int argc, char **argv)
{
	enum { OPT_BS = 256, OPT_SBS, OPT_SF, OPT_ST, OPT_NG, OPT_SET, OPT_NAME, OPT_HELP, OPT_VER,
	       OPT_TO, OPT_POOL, OPT_VOCAB, OPT_SEED, OPT_BU, OPT_SEGL, OPT_PTYPE, OPT_MAXSEG };
	static const struct option lo[] = {
		{ "model", required_argument, 0, 'm' }, { "threads", required_argument, 0, 'j' },
		{ "max-len", required_argument, 0, 'n' }, { "max-length", required_argument, 0, 'n' },
		{ "block-size", required_argument, 0, OPT_BS }, { "to", required_argument, 0, OPT_TO },
		{ "pooling-layers", required_argument, 0, OPT_POOL },
		{ "vocab-size", required_argument, 0, OPT_VOCAB }, { "seed", required_argument, 0, OPT_SEED },
		{ "bottom-up-layers", required_argument, 0, OPT_BU },
		{ "segment-layers", required_argument, 0, OPT_SEGL },
		{ "pool-type", required_argument, 0, OPT_PTYPE },
		{ "max-segments", required_argument, 0, OPT_MAXSEG },
		{ "sparse-block-size", required_argument, 0, OPT_SBS },
		{ "sparsity-factor", required_argument, 0, OPT_SF },
		{ "sparsity-type", required_argument, 0, OPT_ST },
		{ "global-tokens", required_argument, 0, OPT_NG }, { "set", required_argument, 0, OPT_SET },
		{ "name", required_argument, 0, OPT_NAME }, { "help", no_argument, 0, OPT_HELP },
		{ "version", no_argument, 0, OPT_VER }, { 0, 0, 0, 0 },
	};
	lsgconv_opts o;
	bartlsconv_opts ls;
	topdownconv_opts td;
	lc_progress pr;
	lc_err err;
	const char *src, *dst, *mopt = NULL, *from = NULL, *lsg_only = NULL, *ls_only = NULL;
	const char *td_only = NULL;
	int c, quiet = 0, to_ls = 0, to_td = 0, max_len = -1;

	cli_init("lc-convert");
	cli_operands_not_inputs();   /* SRC and DST: model directories */
	lsgconv_opts_default(&o);
	bartlsconv_opts_default(&ls);
	topdownconv_opts_default(&td);
	while ((c = cli_getopt(argc, argv, "m:j:n:q", lo)) != -1) {
		switch (c) {
		case 'm': mopt = optarg; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'n': max_len = (int)cli_int("-n/--max-len", optarg, 1, 1 << 24); break;
		case OPT_BS: o.block_size = (int)cli_int("--block-size", optarg, 1, 1 << 20); break;
		case OPT_TO:
			to_ls = !strcmp(optarg, "bart_ls");
			to_td = !strcmp(optarg, "topdown");
			if (!to_ls && !to_td && strcmp(optarg, "lsg"))
				cli_usage_error("--to %s: not one of lsg, bart_ls, topdown", optarg);
			break;
		case OPT_BU:
			td.bottom_up = (int)cli_int("--bottom-up-layers", optarg, 0, 1024);
			td_only = "--bottom-up-layers";
			break;
		case OPT_SEGL:
			td.segment_layers = (int)cli_int("--segment-layers", optarg, 0, 1024);
			td_only = "--segment-layers";
			break;
		case OPT_PTYPE:
			if (strcmp(optarg, "avg") && strcmp(optarg, "adapool"))
				cli_usage_error("--pool-type %s: not one of avg, adapool", optarg);
			td.adapool = !strcmp(optarg, "adapool");
			td_only = "--pool-type";
			break;
		case OPT_MAXSEG:
			td.max_segments = (int)cli_int("--max-segments", optarg, 0, 1 << 24);
			td_only = "--max-segments";
			break;
		case OPT_POOL:
			ls.pooling_layers = (int)cli_int("--pooling-layers", optarg, 0, 1024);
			ls_only = "--pooling-layers";
			break;
		case OPT_VOCAB:
			ls.vocab_size = (int)cli_int("--vocab-size", optarg, 1, 1 << 24);
			ls_only = "--vocab-size";
			break;
		case OPT_SEED:
			ls.seed = (uint64_t)cli_int("--seed", optarg, 0, INT64_MAX);
			ls_only = "--seed";
			break;
		case OPT_SBS:
			lsg_only = "--sparse-block-size";
			o.sparse_block_size = (int)cli_int("--sparse-block-size", optarg, 0, 1 << 20);
			break;
		case OPT_SF:
			lsg_only = "--sparsity-factor";
			o.sparsity_factor = (int)cli_int("--sparsity-factor", optarg, 1, 1 << 20); break;
		case OPT_ST:
			lsg_only = "--sparsity-type";
			if (lsg_sparsity_parse(optarg) < 0)
				cli_usage_error("--sparsity-type %s: not one of none, norm, pooling, stride, "
				                "block_stride, bos_pooling, lsh", optarg);
			o.sparsity_type = optarg;
			break;
		case OPT_NG:
			lsg_only = "--global-tokens";
			o.num_global_tokens = (int)cli_int("--global-tokens", optarg, 1, 512); break;
		case OPT_SET:
			lsg_only = "--set";
			if (o.nset >= (int)(sizeof o.set / sizeof *o.set))
				cli_usage_error("at most %d --set options", (int)(sizeof o.set / sizeof *o.set));
			if (lsg_set_check(optarg, &err) < 0)
				cli_usage_error("%s", err.msg);
			o.set[o.nset++] = optarg;
			break;
		case OPT_NAME: o.name = ls.name = td.name = optarg; break;
		case 'q': quiet = 1; break;
		case OPT_HELP: usage(); break;
		case OPT_VER: cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (mopt && argc - optind != 1)
		cli_usage_error("with -m SRC, expected the DST directory alone");
	if (!mopt && argc - optind != 2)
		cli_usage_error("expected SRC and DST directories");
	if (mopt) {
		if (!*mopt)
			cli_usage_error("-m/--model: empty path");
		src = mopt;
		from = "-m/--model";
		dst = argv[optind];
	} else {
		src = argv[optind];
		dst = argv[optind + 1];
	}
	if ((to_ls || to_td) && lsg_only)
		cli_usage_error("%s is an LSG option; --to %s does not take it", lsg_only,
		                to_ls ? "bart_ls" : "topdown");
	if (!to_ls && ls_only)
		cli_usage_error("%s goes with --to bart_ls", ls_only);
	if (!to_td && td_only)
		cli_usage_error("%s goes with --to topdown", td_only);
	cli_check_path(from, src);
	cli_progress_init(&pr, quiet);
	if (to_td) {
		if (max_len > 0)
			td.max_len = max_len;
		if (o.block_size > 0)
			td.window_size = o.block_size;
		td.progress = progress;
		td.ctx = &pr;
		if (topdown_convert(src, dst, &td, &err) < 0) {
			cli_progress_done(&pr);
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		}
		cli_progress_done(&pr);
		return cli_finish(0);
	}
	if (to_ls) {
		if (max_len > 0)
			ls.max_len = max_len;
		if (o.block_size > 0)
			ls.block_size = o.block_size;
		ls.progress = progress;
		ls.ctx = &pr;
		if (bartls_convert(src, dst, &ls, &err) < 0) {
			cli_progress_done(&pr);
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		}
		cli_progress_done(&pr);
		return cli_finish(0);
	}
	if (max_len > 0)
		o.max_len = max_len;
	/* the converter adds the embeddings of the tokenizer's <s> and <mask>
	 * to the global tokens; an LSG source keeps its own */
	if (bpe_dir_has(src)) {
		bpe_model *tok = bpe_load_dir(src, &err);
		if (!tok)
			cli_die_source(from, src, err.msg);
		o.bos_id = bpe_bos_id(tok) >= 0 ? bpe_bos_id(tok) : bpe_cls_id(tok);
		o.mask_id = bpe_mask_id(tok);
		bpe_free(tok);
	}
	o.progress = progress;
	o.ctx = &pr;
	if (lsg_convert(src, dst, &o, &err) < 0) {
		cli_progress_done(&pr);
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	cli_progress_done(&pr);
	return cli_finish(0);
}
