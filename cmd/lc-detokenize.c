/* lc-detokenize: token ids back to text (lib/text/tokenizer.h). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "stream/convert.h"
#include "stream/stream.h"
#include "text/tokenizer.h"

static void usage(void)
{
	printf("usage: lc-detokenize [-Fq] [-m MODEL] [-j N] [-f auto|stream|ids]\n"
	       "                     [-o text|stream] [--keep-special]\n"
	       "                     [--clean-up|--no-clean-up] [FILE...]\n"
	       "\n"
	       "Decodes token ids to text with the model's tokenizer: SentencePiece exactly as\n"
	       "spm_decode does; byte-level BPE as transformers' decode(ids,\n"
	       "skip_special_tokens=True) does. Reads lc streams (each document's \"tokens\"\n"
	       "tensor) or lines of decimal ids; standard input when no FILE or -.\n"
	       "\n"
	       "  -m, --model MODEL\n"
	       "             a model directory, a .model file or a tokenizer.json\n"
	       "             (default: $LC_TOKENIZER, else the bundled spiece.model)\n"
	       "  -f FORMAT  input: auto (default: a stream if it starts like one), stream, ids\n"
	       "  -o text    print each document's text followed by a newline (default)\n"
	       "  -o stream  write an lc stream with a \"text\" tensor per document\n"
	       "  -F, --force\n"
	       "             write a binary stream even to a terminal\n"
	       "  --keep-special   BPE: keep <s>, </s> and the other special tokens\n"
	       "  --clean-up       BPE: transformers' clean_up_tokenization (\" .\" -> \".\", ...)\n"
	       "  --no-clean-up    BPE: none (default: as tokenizer_config.json says; on)\n"
	       "  -j, --threads N\n"
	       "             lc-detokenize runs on one thread: N (1..1024) is checked and\n"
	       "             otherwise ignored, so that scripts can pass -j to every program\n"
	       "  -q, --quiet\n"
	       "             no warnings about a different tokenizer fingerprint\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

enum { IN_AUTO, IN_STREAM, IN_IDS };

typedef struct run {
	const lc_tokenizer *m;
	unsigned dflags;
	int out_stream, quiet, warned;
	lc_writer *w;
	char *text;
	size_t len, cap;
} run;

static int put_doc(run *r, const char *name, const int32_t *ids, size_t n, lc_err *err)
{
	if (tok_decode(r->m, ids, n, r->dflags, &r->text, &r->len, &r->cap, err) < 0)
		return -1;
	if (r->out_stream) {
		lc_doc d = {0};
		int rc = convert_text_doc(&d, name, r->text, r->len, err) < 0 ||
		         stream_write_doc(r->w, &d, err) < 0 ? -1 : 0;
		doc_free(&d);
		return rc;
	}
	if (fwrite(r->text, 1, r->len, stdout) != r->len || putchar('\n') == EOF)
		return lc_fail(err, "write error: %s", strerror(errno));
	return 0;
}

static int stream_doc(lc_doc *d, void *ctx, lc_err *err)
{
	run *r = ctx;
	lc_tensor *t = doc_find(d, "tokens");
	const char *fp;

	if (!t)
		return lc_fail(err, "no \"tokens\" tensor");
	if (t->dtype != LC_I32 || t->rank != 1)
		return lc_fail(err, "\"tokens\" is %s of rank %u, not a vector of i32",
		               lc_dtype_name(t->dtype), (unsigned)t->rank);
	fp = meta_get(&t->meta, "tokenizer");
	if (fp && strcmp(fp, tok_fingerprint(r->m)) != 0 && !r->quiet && !r->warned) {
		cli_warn("%s: tokens were made by tokenizer %s, decoding with %s", d->name, fp,
		         tok_fingerprint(r->m));
		r->warned = 1;
	}
	return put_doc(r, d->name, t->data, (size_t)t->dims[0], err);
}

static void from_ids(run *r, FILE *f, const char *path)
{
	char *line = NULL, name[4200];
	size_t cap = 0;
	ssize_t got;
	uint64_t no = 0;
	lc_err err;

	/* errno, not ferror alone: glibc's getline out of memory sets no
	 * error flag, and the lines after it were dropped as if at the end */
	while ((errno = 0, got = getline(&line, &cap, f)) >= 0) {
		lc_doc d = {0};
		lc_tensor *t;
		size_t n = (size_t)got;
		no++;
		if (n && line[n - 1] == '\n')
			n--;
		snprintf(name, sizeof name, "%s:%llu", cli_label(path), (unsigned long long)no);
		if (convert_ids_doc(&d, name, line, n, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		t = doc_find(&d, "tokens");
		if (put_doc(r, name, t ? t->data : NULL, t ? (size_t)t->dims[0] : 0, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		doc_free(&d);
	}
	if (ferror(f) || errno)
		cli_die(LC_EXIT_DATA, "%s: line %llu: read error: %s", cli_label(path),
		        (unsigned long long)no + 1, strerror(errno ? errno : EIO));
	free(line);
}

int main(int argc, char **argv)
{
	enum { O_KEEP = 256, O_CLEAN, O_NOCLEAN };
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"model", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 'j'},
		{"keep-special", no_argument, NULL, O_KEEP},
		{"clean-up", no_argument, NULL, O_CLEAN},
		{"no-clean-up", no_argument, NULL, O_NOCLEAN},
		{0, 0, 0, 0},
	};
	run r;
	const char *model = NULL, *from;
	int in = IN_AUTO, force = 0, c;
	lc_tokenizer *m;
	lc_err err;

	memset(&r, 0, sizeof r);
	cli_init("lc-detokenize");
	while ((c = cli_getopt(argc, argv, "Fqm:f:o:j:", opts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': r.quiet = 1; break;
		case 'm': model = optarg; break;
		case 'j': cli_threads_arg(optarg); break;
		case O_KEEP: r.dflags |= TOK_DEC_KEEP_SPECIAL; break;
		case O_CLEAN: r.dflags = (r.dflags & ~(unsigned)TOK_DEC_NO_CLEANUP) | TOK_DEC_CLEANUP; break;
		case O_NOCLEAN: r.dflags = (r.dflags & ~(unsigned)TOK_DEC_CLEANUP) | TOK_DEC_NO_CLEANUP; break;
		case 'f':
			if (strcmp(optarg, "auto") == 0)
				in = IN_AUTO;
			else if (strcmp(optarg, "stream") == 0)
				in = IN_STREAM;
			else if (strcmp(optarg, "ids") == 0)
				in = IN_IDS;
			else
				cli_usage_error("-f: unknown input format '%s' (auto, stream, ids)", optarg);
			break;
		case 'o':
			if (strcmp(optarg, "text") == 0)
				r.out_stream = 0;
			else if (strcmp(optarg, "stream") == 0)
				r.out_stream = 1;
			else
				cli_usage_error("-o: unknown output format '%s' (text, stream)", optarg);
			break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (r.out_stream)
		cli_binary_stdout(force);
	/* -m/--model, else $LC_TOKENIZER, else the bundled spiece.model */
	model = cli_source(model, "-m/--model", "$LC_TOKENIZER", &from);
	cli_check_path(from, model);
	if (!(m = tok_open(model, &err)))
		cli_die_source(from, model, err.msg);
	r.m = m;
	if (r.out_stream && !(r.w = stream_writer_new(stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	for (int i = optind; i < argc || i == optind; i++) {
		const char *path = i < argc ? argv[i] : "-";
		FILE *f = cli_open(path);
		int kind = in;

		if (kind == IN_AUTO) {
			int ch = getc(f);
			kind = ch == 'L' ? IN_STREAM : IN_IDS;   /* streams start with "LCSR" */
			if (ch != EOF && ungetc(ch, f) == EOF)
				cli_die(LC_EXIT_DATA, "%s: cannot read", cli_label(path));
		}
		if (kind == IN_STREAM) {
			if (stream_each_file(f, cli_label(path), stream_doc, &r, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
		} else
			from_ids(&r, f, path);
		if (f != stdin)
			fclose(f);
		if (i >= argc)
			break;
	}
	if (r.w && stream_writer_close(r.w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	free(r.text);
	tok_free(m);
	return cli_finish(0);
}
