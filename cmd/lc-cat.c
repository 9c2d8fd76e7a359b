/* lc-cat: concatenate, validate, convert and inspect lc streams. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "stream/convert.h"
#include "stream/stream.h"
#include "stream/textin.h"

static void usage(void)
{
	printf("usage: lc-cat [-Fq] [-i stream|ids|text] [-o stream|ids|raw|info|text]\n"
	       "              [-d file|line|blank|nul] [FILE...]\n"
	       "\n"
	       "Concatenates lc streams (standard input when no FILE or -), checking every\n"
	       "record; converts token ids and text to and from streams; describes streams.\n"
	       "\n"
	       "  -i stream  input is lc streams (default)\n"
	       "  -i ids     input is decimal token ids, one document per line\n"
	       "  -i text    input is text documents (files, archives, directories; -d splits)\n"
	       "  -o stream  write one lc stream (default; refused on a terminal without -F)\n"
	       "  -o ids     print each document's \"tokens\" as decimal ids, one line each\n"
	       "  -o raw     write every tensor's payload as little-endian bytes, in order\n"
	       "  -o info    describe each document and record in tab-separated lines\n"
	       "  -o text    print each document's \"text\", each followed by a newline\n"
	       "  -d MODE    with -i text: file (default), line, blank or nul documents\n"
	       "  -F         write a binary stream even to a terminal\n"
	       "  -q         no progress on standard error\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

enum fmt { F_STREAM, F_IDS, F_RAW, F_INFO, F_TEXT };

static int parse_fmt(const char *s, int input)
{
	static const char *names[] = {"stream", "ids", "raw", "info", "text"};
	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0 && (!input || i == F_STREAM || i == F_IDS || i == F_TEXT))
			return i;
	cli_usage_error("unknown %s format '%s'", input ? "input" : "output", s);
}

struct out {
	enum fmt fmt;
	lc_writer *w;
	lc_doc ids_doc;
};

/* Writes one document in the output format. */
static int emit(lc_doc *d, void *ctx, lc_err *err)
{
	struct out *o = ctx;

	switch (o->fmt) {
	case F_STREAM: return stream_write_doc(o->w, d, err);
	case F_IDS: return convert_print_ids(stdout, d, err);
	case F_RAW: return convert_print_raw(stdout, d, err);
	case F_INFO: return convert_print_info(stdout, d, err);
	case F_TEXT: return convert_print_text(stdout, d, err);
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
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	while ((rc = textin_next(t, &name, &text, &len, &err)) > 0) {
		if (make(&d, name, text, len, &err) < 0 || emit(&d, o, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		doc_free(&d);
	}
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	textin_close(t);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	struct out o = {.fmt = F_STREAM};
	enum fmt in = F_STREAM;
	int split = TEXTIN_FILE, force = 0, c;
	lc_err err;

	cli_init("lc-cat");
	while ((c = cli_getopt(argc, argv, "Fqi:o:d:", opts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': break;
		case 'i': in = parse_fmt(optarg, 1); break;
		case 'o': o.fmt = parse_fmt(optarg, 0); break;
		case 'd':
			if ((split = textin_split_parse(optarg)) < 0)
				cli_usage_error("unknown document mode '%s'", optarg);
			break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (o.fmt == F_STREAM || o.fmt == F_RAW) {
		cli_binary_stdout(force);
	}
	if (o.fmt == F_STREAM && !(o.w = stream_writer_new(stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	/* A document is passed on only once it has been read and checked whole. */
	if (in == F_STREAM && stream_each(argc - optind, argv + optind, emit, &o, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	for (int i = optind; in != F_STREAM && (i < argc || i == optind); i++) {
		const char *path = i < argc ? argv[i] : "-";
		if (in == F_IDS)
			cat_textin(&o, path, TEXTIN_LINE, convert_ids_doc);
		else
			cat_textin(&o, path, split, convert_text_doc);
		if (i >= argc)
			break;
	}
	if (o.w && stream_writer_close(o.w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	return cli_finish(0);
}
