/* lc-chunk: cut long documents into pieces, and join pieces back. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "text/chunk.h"
#include "base/cli.h"
#include "text/sentence.h"
#include "stream/stream.h"
#include "stream/textin.h"

static void usage(void)
{
	printf("usage: lc-chunk [-Fq] [-j N] -n SIZE [-o OVERLAP] [--ends HEAD,TAIL] [FILE...]\n"
	       "       lc-chunk [-Fq] --sentences N [-o OVERLAP] [-d MODE] [FILE...]\n"
	       "       lc-chunk [-Fq] -p PATTERN [-d MODE] [FILE...]\n"
	       "       lc-chunk [-Fq] --join [FILE...]\n"
	       "\n"
	       "Cuts each document into pieces named NAME#k whose metadata record the\n"
	       "parent and the offsets; --join puts them back.\n"
	       "\n"
	       "  -n SIZE          windows of SIZE tokens (input: token streams)\n"
	       "  -o OVERLAP       units shared by neighbouring pieces (default 0)\n"
	       "  --ends H,T       -n: every window begins with the document's first H\n"
	       "                   and ends with its last T tokens (BART's <s> ... </s>:\n"
	       "                   1,1; T5's </s>: 0,1); SIZE counts them\n"
	       "  --sentences N    pieces of N sentences (input: text)\n"
	       "  -p PATTERN       cut text before each match of the PCRE2 PATTERN\n"
	       "                   (multiline: ^ matches at every line start)\n"
	       "  -d MODE          text documents: file (default), line, blank, nul\n"
	       "  --join           reassemble pieces into their parents\n"
	       "  -j, --threads N  lc-chunk runs on one thread: N (1..1024) is checked and\n"
	       "                   otherwise ignored, so that scripts can pass -j to every\n"
	       "                   program\n"
	       "  -F, --force      write the stream even to a terminal\n"
	       "  -q, --quiet      no progress\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

struct opts {
	long long size, overlap, sentences, head, tail;
	int ends;
	const char *pattern;
	int join, split;
};

static lc_writer *w;

static void put(lc_doc *d)
{
	lc_err err;
	if (stream_write_doc(w, d, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
}

/* Writes every piece of d under plan pl. */
static void put_pieces(const lc_doc *d, const char *tensor, const chunk_plan *pl)
{
	lc_err err;
	for (size_t k = 0; k < pl->n; k++) {
		lc_doc p;
		if (chunk_make_piece(&p, d, tensor, pl, k, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		put(&p);
		doc_free(&p);
	}
}

static int chunk_tokens(lc_doc *d, void *ctx, lc_err *err)
{
	const struct opts *o = ctx;
	const lc_tensor *t = doc_find(d, "tokens");
	chunk_plan pl = {0};
	int rc;

	if (!t || t->rank != 1)
		return lc_fail(err, "no \"tokens\" record");
	rc = chunk_plan_windows_ends(&pl, t->dims[0], (uint64_t)o->size, (uint64_t)o->overlap,
	                             (uint64_t)o->head, (uint64_t)o->tail, err);
	if (rc == 0)
		put_pieces(d, "tokens", &pl);
	chunk_plan_free(&pl);
	return rc;
}

/* --join over the inputs one at a time: an unfinished parent's message
 * names the input its last piece came from */
struct joining {
	chunk_joiner j;
	const char *label, *piece_label;
};

static int join_one(lc_doc *d, void *ctx, lc_err *err)
{
	struct joining *jn = ctx;
	lc_doc out = {0};
	int got = chunk_join_add(&jn->j, d, &out, err);

	jn->piece_label = jn->label;
	if (got > 0) {
		put(&out);
		doc_free(&out);
	}
	return got < 0 ? -1 : 0;
}

static void run_text(const struct opts *o, const char *path, const chunk_pattern *re,
                     sentence_splitter *ss)
{
	lc_err err;
	textin *t = textin_open(path, o->split, &err);
	const char *name, *text;
	size_t len;
	chunk_plan pl = {0};
	int rc;

	if (!t)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	while ((rc = textin_next(t, &name, &text, &len, &err)) > 0) {
		lc_doc d;
		uint64_t n = len;
		lc_tensor *x;

		if (doc_init(&d, name, &err) < 0 || (textin_meta(t) && meta_copy(&d.meta, textin_meta(t), &err) < 0) ||
		    !(x = doc_add_tensor(&d, "text", LC_U8, 1, &n, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		memcpy(x->data, text, len);
		if (re)
			rc = chunk_plan_pattern(&pl, re, text, len, &err);
		else
			rc = chunk_plan_sentences(&pl, ss, text, len, (uint64_t)o->sentences,
			                          (uint64_t)o->overlap, &err);
		if (rc < 0 && re)
			cli_die(LC_EXIT_DATA, "%s: -p '%s': %s", name, o->pattern, err.msg);
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		put_pieces(&d, "text", &pl);
		doc_free(&d);
	}
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	chunk_plan_free(&pl);
	textin_close(t);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"sentences", required_argument, NULL, 'S'},
		{"join", no_argument, NULL, 'J'},
		{"ends", required_argument, NULL, 'E'},
		{"threads", required_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	struct opts o = {0};
	int force = 0, c, modes, dgiven = 0;
	chunk_pattern *re = NULL;
	sentence_splitter *ss = NULL;
	struct joining jn = { 0 };
	lc_err err;

	cli_init("lc-chunk");
	while ((c = cli_getopt(argc, argv, "Fqn:o:p:d:j:", lopts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': break;
		case 'j': cli_threads_arg(optarg); break;
		case 'n': o.size = cli_int("-n", optarg, 1, 1LL << 40); break;
		case 'o': o.overlap = cli_int("-o", optarg, 0, 1LL << 40); break;
		case 'S': o.sentences = cli_int("--sentences", optarg, 1, 1LL << 40); break;
		case 'p': o.pattern = optarg; break;
		case 'd':
			if ((o.split = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown document mode '%s' (file, line, blank, nul)",
				                optarg);
			dgiven = 1;
			break;
		case 'J': o.join = 1; break;
		case 'E': {
			char *comma = strchr(optarg, ',');
			if (!comma)
				cli_usage_error("--ends takes HEAD,TAIL (say 1,1), not '%s'", optarg);
			*comma = 0;
			o.head = cli_int("--ends", optarg, 0, 1LL << 20);
			o.tail = cli_int("--ends", comma + 1, 0, 1LL << 20);
			o.ends = 1;
			break;
		}
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	modes = (o.size > 0) + (o.sentences > 0) + (o.pattern != NULL) + o.join;
	if (modes != 1)
		cli_usage_error("give exactly one of -n, --sentences, -p and --join");
	if (o.overlap && (o.pattern || o.join))
		cli_usage_error("-o goes with -n or --sentences");
	if (dgiven && (o.size || o.join))   /* token streams: no text to split */
		cli_usage_error("-d goes with -p or --sentences (text input)");
	if (o.ends && !o.size)
		cli_usage_error("--ends goes with -n");
	if (o.size && o.size <= o.head + o.tail)
		cli_usage_error("-n %lld leaves no room between the %lld + %lld tokens of --ends", o.size,
		                o.head, o.tail);
	if ((o.size && o.overlap >= o.size - o.head - o.tail) ||
	    (o.sentences && o.overlap >= o.sentences))
		cli_usage_error(o.ends ? "the overlap must be smaller than the piece size less its ends"
		                       : "the overlap must be smaller than the piece size");
	if (o.pattern && !(re = chunk_pattern_new(o.pattern, &err)))
		cli_usage_error("-p '%s': %s", o.pattern, err.msg);
	if (o.sentences && !(ss = sentence_new(&err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_binary_stdout(force);
	if (!(w = stream_writer_new(stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	chunk_joiner_init(&jn.j);
	if (o.join) {
		for (int i = optind; i < argc || i == optind; i++) {
			char *path = i < argc ? argv[i] : "-";
			jn.label = strcmp(path, "-") ? path : "stdin";
			if (stream_each(1, &path, join_one, &jn, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
		}
	} else if (o.size) {
		if (stream_each(argc - optind, argv + optind, chunk_tokens, &o, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	} else {
		for (int i = optind; i < argc || i == optind; i++) {
			run_text(&o, i < argc ? argv[i] : "-", re, ss);
		}
	}
	if (o.join && chunk_join_finish(&jn.j, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s: %s", jn.piece_label, err.msg);
	chunk_joiner_free(&jn.j);
	if (stream_writer_close(w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	chunk_pattern_free(re);
	sentence_free(ss);
	return cli_finish(0);
}
