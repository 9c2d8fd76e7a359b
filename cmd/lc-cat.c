/* lc-cat: concatenate, validate, convert and inspect lc streams. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "stream/convert.h"
#include "stream/shard.h"
#include "stream/stream.h"
#include "stream/textin.h"
#include "text/sumjson.h"

static void usage(void)
{
	printf("usage: lc-cat [-Fq] [-j N] [-i stream|ids|text] [-o FORMAT]\n"
	       "              [-d file|line|blank|nul] [FILE...]\n"
	       "       lc-cat [-q] [-i stream|ids|text] [-d MODE] --shard N -O PREFIX [FILE...]\n"
	       "       lc-cat [-Fq] [-o FORMAT] --merge [FILE...]\n"
	       "\n"
	       "Concatenates lc streams (standard input when no FILE or -), checking every\n"
	       "record; converts token ids and text to and from streams; describes streams;\n"
	       "splits a stream into shards by document and merges their outputs back.\n"
	       "\n"
	       "  -i stream  input is lc streams (default)\n"
	       "  -i ids     input is decimal token ids, one document per line\n"
	       "  -i text    input is text documents (files, archives, directories; -d splits)\n"
	       "  -o stream  write one lc stream (default; refused on a terminal without -F)\n"
	       "  -o ids     print each document's \"tokens\" as decimal ids, one line each\n"
	       "             (a line for each of several summaries: tokens, tokens.2, ...)\n"
	       "  -o raw     write every tensor's payload as little-endian bytes, in order\n"
	       "  -o info    describe each document and record in tab-separated lines\n"
	       "  -o text    print each document's \"text\", each followed by a newline\n"
	       "             (every one of several summaries: text, text.2, ...)\n"
	       "  -o jsonl   a JSON line a document, as lc-decode -f jsonl writes:\n"
	       "             {\"id\": NAME, \"summary\": TEXT} (and \"summaries\" with several)\n"
	       "  -d MODE    with -i text: file (default), line, blank or nul documents\n"
	       "  --shard N  deal the documents round-robin into PREFIX.0.lc ... PREFIX.(N-1).lc,\n"
	       "             each tagged with its position (metadata lc.index)\n"
	       "  -O PREFIX  with --shard: where the shards go\n"
	       "  --merge    the shards' outputs (FILE...) back into one stream in the original\n"
	       "             order; a missing or duplicated document is an error\n"
	       "  -j, --threads N\n"
	       "             lc-cat runs on one thread: N (1..1024) is checked and otherwise\n"
	       "             ignored, so that scripts can pass -j to every program\n"
	       "  -F, --force\n"
	       "             write a binary stream even to a terminal\n"
	       "  -q, --quiet\n"
	       "             no progress on standard error\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

enum fmt { F_STREAM, F_IDS, F_RAW, F_INFO, F_TEXT, F_JSONL };

static int parse_fmt(const char *s, int input)
{
	static const char *names[] = {"stream", "ids", "raw", "info", "text", "jsonl"};
	for (int i = 0; i < 6; i++)
		if (strcmp(s, names[i]) == 0 && (!input || i == F_STREAM || i == F_IDS || i == F_TEXT))
			return i;
	cli_usage_error("-%c: unknown %s format '%s' (%s)", input ? 'i' : 'o',
	                input ? "input" : "output", s,
	                input ? "stream, ids, text" : "stream, ids, raw, info, text, jsonl");
}

struct out {
	enum fmt fmt;
	lc_writer *w;
	lc_shard_writer *shard;   /* --shard: documents go here instead */
};

/* Dies with the message; a split in progress leaves no shard behind. */
_Noreturn static void die(struct out *o, const char *msg)
{
	shard_writer_abort(o->shard);
	cli_die(LC_EXIT_DATA, "%s", msg);
}

/* The document's summaries ("text", "text.2", ...) as a JSON line. */
static int print_jsonl(const lc_doc *d, lc_err *err)
{
	const lc_tensor *t[CONVERT_MAX_SEQS];
	int n = convert_summaries(d, "text", LC_U8, t, err), rc = 0;
	sumjson *j;

	if (n < 0 || !(j = sumjson_new(d->name, n, err)))
		return -1;
	for (int i = 0; rc == 0 && i < n; i++)
		rc = sumjson_add(j, t[i]->data, t[i]->nbytes, err);
	if (rc == 0)
		rc = sumjson_write(j, stdout, err);
	sumjson_free(j);
	return rc;
}

/* Writes one document in the output format. */
static int emit(lc_doc *d, void *ctx, lc_err *err)
{
	struct out *o = ctx;

	if (o->shard)
		return shard_put(o->shard, d, err);
	switch (o->fmt) {
	case F_STREAM: return stream_write_doc(o->w, d, err);
	case F_IDS: return convert_print_ids(stdout, d, err);
	case F_RAW: return convert_print_raw(stdout, d, err);
	case F_INFO: return convert_print_info(stdout, d, err);
	case F_TEXT: return convert_print_text(stdout, d, err);
	case F_JSONL: return print_jsonl(d, err);
	}
	return 0;
}

/* Text inputs: each document (a line of ids, or a text) made into a stream document. */
static void cat_textin(struct out *o, const char *path, enum textin_split mode,
                       int (*make)(lc_doc *, const char *, const char *, size_t, lc_err *))
{
	lc_err err;
	textin *t = textin_open(path, mode, &err);
	const char *name, *text;
	size_t len;
	lc_doc d = {0};
	int rc;

	if (!t)
		die(o, err.msg);
	while ((rc = textin_next(t, &name, &text, &len, &err)) > 0) {
		if (make(&d, name, text, len, &err) < 0 || emit(&d, o, &err) < 0)
			die(o, err.msg);
		doc_free(&d);
	}
	if (rc < 0)
		die(o, err.msg);
	textin_close(t);
}

/* --merge: the shards' outputs in the original order. */
static void merge(struct out *o, int n, char *const *paths)
{
	lc_err err;
	lc_doc d = {0};
	lc_merger *m = merge_new(n, paths, &err);
	int rc;

	if (!m)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	while ((rc = merge_next(m, &d, &err)) > 0)
		if (emit(&d, o, &err) < 0)
			cli_die(LC_EXIT_DATA, "document %" PRIu64 " \"%s\": %s", d.index, d.name, err.msg);
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	doc_free(&d);
	merge_free(m);
}

int main(int argc, char **argv)
{
	enum { O_SHARD = 256, O_MERGE };
	static const struct option opts[] = {
		{"shard", required_argument, NULL, O_SHARD},
		{"merge", no_argument, NULL, O_MERGE},
		{"threads", required_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	struct out o = {.fmt = F_STREAM};
	enum fmt in = F_STREAM;
	int split = TEXTIN_FILE, force = 0, merging = 0, set_o = 0, set_d = 0, c;
	long long shards = 0;
	const char *prefix = NULL;
	lc_err err;

	cli_init("lc-cat");
	while ((c = cli_getopt(argc, argv, "Fqi:o:d:O:j:", opts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': break;
		case 'j': cli_threads_arg(optarg); break;
		case 'i': in = parse_fmt(optarg, 1); break;
		case 'o': o.fmt = parse_fmt(optarg, 0); set_o = 1; break;
		case 'O': prefix = optarg; break;
		case O_SHARD: shards = cli_int("--shard", optarg, 1, SHARD_MAX); break;
		case O_MERGE: merging = 1; break;
		case 'd':
			set_d = 1;
			if ((split = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown document mode '%s' (file, line, blank, nul)",
				                optarg);
			break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (shards && merging)
		cli_usage_error("--shard and --merge exclude each other");
	if (shards && !prefix)
		cli_usage_error("--shard needs -O PREFIX (the shards are PREFIX.0.lc ...)");
	if (prefix && !shards)
		cli_usage_error("-O applies to --shard only");
	if (shards && set_o && o.fmt != F_STREAM)
		cli_usage_error("--shard writes streams (-o stream only)");
	if (set_d && in != F_TEXT)
		cli_usage_error("-d applies to -i text only");
	if (merging && in != F_STREAM)
		cli_usage_error("--merge reads streams (-i stream only)");
	if (shards) {
		if (!*prefix)
			cli_usage_error("-O: empty prefix");
		if (shard_inputs_check(prefix, (uint32_t)shards, argc - optind, argv + optind, &err) < 0 ||
		    !(o.shard = shard_writer_new(prefix, (uint32_t)shards, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	} else if (o.fmt == F_STREAM || o.fmt == F_RAW) {
		cli_binary_stdout(force);
	}
	if (!o.shard && o.fmt == F_STREAM && !(o.w = stream_writer_new(stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	/* A document is passed on only once it has been read and checked whole. */
	if (merging)
		merge(&o, argc - optind, argv + optind);
	else if (in == F_STREAM && stream_each(argc - optind, argv + optind, emit, &o, &err) < 0)
		die(&o, err.msg);
	for (int i = optind; in != F_STREAM && (i < argc || i == optind); i++) {
		const char *path = i < argc ? argv[i] : "-";
		if (in == F_IDS)
			cat_textin(&o, path, TEXTIN_LINE, convert_ids_doc);
		else
			cat_textin(&o, path, split, convert_text_doc);
		if (i >= argc)
			break;
	}
	if (o.shard) {
		lc_shard_writer *sh = o.shard;
		o.shard = NULL;
		if (shard_writer_close(sh, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	if (o.w && stream_writer_close(o.w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	return cli_finish(0);
}
