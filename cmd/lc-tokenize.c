/* lc-tokenize: text documents to token ids (lib/text/tokenizer.h). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "stream/convert.h"
#include "stream/idmap.h"
#include "stream/jsonl.h"
#include "stream/stream.h"
#include "stream/textin.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

static void usage(void)
{
	printf("usage: lc-tokenize [-Fq] [-m MODEL] [-j N] [-d file|line|blank|nul]\n"
	       "                   [-f stream|ids|pieces]\n"
	       "                   [--no-eos] [--no-special] [--no-extra-ids] [--prefix-space]\n"
	       "                   [--max-len N] [--jsonl [--text FIELD] [--id FIELD] [--skip-bad]]\n"
	       "                   [FILE...]\n"
	       "\n"
	       "Encodes text documents with the model's tokenizer: SentencePiece exactly as\n"
	       "spm_encode does, byte-level BPE exactly as transformers' GPT2Tokenizer and\n"
	       "BartTokenizer do. Each FILE is a document; an archive or compressed file\n"
	       "gives one document per member; standard input when no FILE or -.\n"
	       "\n"
	       "  -m, --model M  a model directory (spiece.model, or vocab.json + merges.txt\n"
	       "                 or tokenizer.json), a .model file or a tokenizer.json\n"
	       "                 (default: $LC_TOKENIZER, else the bundled spiece.model)\n"
	       "  -d MODE        documents: file (default), line, blank or nul separated\n"
	       "  -f stream      write an lc stream: a \"tokens\" i32 tensor per document (default)\n"
	       "  -f ids         print the ids of each document on one line\n"
	       "  -f pieces      print the pieces of each document on one line\n"
	       "  --no-eos       no </s> at the end of each document\n"
	       "  --no-special   no special tokens at all (BPE: no <s> ... </s>)\n"
	       "  --no-extra-ids SentencePiece: <extra_id_N> in the text is ordinary text\n"
	       "  --prefix-space BPE: a space before each document (add_prefix_space)\n"
	       "  --max-len N    keep at most N tokens per document (</s> stays last)\n"
	       "  --jsonl        inputs are JSON Lines: each line an object, one document\n"
	       "                 (blank lines skipped; a bad line is an error naming FILE:LINE)\n"
	       "  --text FIELD   with --jsonl: the string field holding the text (default text)\n"
	       "  --id FIELD     with --jsonl: the field (string or integer) naming the\n"
	       "                 document (default: none; FILE:LINE when none or absent)\n"
	       "  --skip-bad     with --jsonl: skip bad lines, and say how many at the end\n"
	       "  -j, --threads N\n"
	       "                 lc-tokenize runs on one thread: N (1..1024) is checked and\n"
	       "                 otherwise ignored, so that scripts can pass -j to every program\n"
	       "  -F, --force    write a binary stream even to a terminal\n"
	       "  -q, --quiet    no progress on standard error\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

enum fmt { F_STREAM, F_IDS, F_PIECES };

typedef struct run {
	lc_tokenizer *m;
	enum fmt fmt;
	unsigned flags;
	uint64_t max_len;       /* 0: no limit */
	lc_writer *w;
	tok_enc e;
	lc_progress prog;
	uint64_t ndocs, nbytes, ntok;
} run;

/* Cuts e to at most max_len tokens, keeping the eos last where the
 * tokenizer added one (GPT-2 adds none: a text ending in <|endoftext|>
 * is cut as any other). */
static void truncate_doc(run *r)
{
	tok_enc *e = &r->e;
	size_t keep;
	int eos = tok_adds_eos(r->m, r->flags) && e->n && e->ids[e->n - 1] == tok_eos_id(r->m);

	if (!r->max_len || e->n <= r->max_len)
		return;
	keep = (size_t)r->max_len;
	if (eos) {
		e->ids[keep - 1] = e->ids[e->n - 1];
		keep--;
	}
	if (r->fmt == F_PIECES) {
		/* pieces hold no space: cut before the keep-th separator */
		size_t k = 0, cnt = 0;
		if (keep > 0)
			for (; k < e->plen; k++)
				if (e->pieces[k] == ' ' && ++cnt == keep)
					break;
		e->plen = k;
		e->pieces[k] = 0;
		if (eos) {
			size_t n;
			const char *p = tok_piece(r->m, e->ids[keep], &n);
			if (k)
				e->pieces[e->plen++] = ' ';
			memcpy(e->pieces + e->plen, p, n);   /* fits: it was there before */
			e->plen += n;
			e->pieces[e->plen] = 0;
		}
	}
	e->n = (size_t)r->max_len;
}

/* meta: the input document's metadata when it came from a stream (kept). */
static void one_doc(run *r, const char *name, const lc_meta *meta, const char *text, size_t len)
{
	lc_err err;
	tok_enc *e = &r->e;

	if (tok_encode(r->m, text, len, r->flags, e, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
	truncate_doc(r);
	switch (r->fmt) {
	case F_STREAM: {
		lc_tensor t;
		memset(&t, 0, sizeof t);
		t.name = "tokens";
		t.dtype = LC_I32;
		t.rank = 1;
		t.dims[0] = e->n;
		t.data = e->ids;
		t.nbytes = (uint64_t)e->n * sizeof(int32_t);
		if (meta_set(&t.meta, "tokenizer", tok_fingerprint(r->m), &err) < 0 ||
		    stream_write_begin(r->w, name, meta, &err) < 0 ||
		    stream_write_tensor(r->w, &t, &err) < 0 ||
		    stream_write_end(r->w, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		meta_free(&t.meta);
		break;
	}
	case F_IDS:
		if (convert_write_ids(stdout, e->ids, e->n, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
		break;
	case F_PIECES:
		if (fwrite(e->pieces ? e->pieces : "", 1, e->plen, stdout) != e->plen ||
		    putchar('\n') == EOF)
			cli_die(LC_EXIT_DATA, "%s: write error: %s", name, strerror(errno));
		break;
	}
	r->ndocs++;
	r->nbytes += len;
	r->ntok += e->n;
	cli_progress(&r->prog, "%llu documents, %.1f MB, %llu tokens",
	             (unsigned long long)r->ndocs, (double)r->nbytes / 1e6,
	             (unsigned long long)r->ntok);
}

int main(int argc, char **argv)
{
	enum { O_NOEOS = 256, O_NOEXTRA, O_MAXLEN, O_NOSPECIAL, O_PREFIX, O_JSONL, O_TEXT, O_ID,
	       O_SKIPBAD };
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"model", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 'j'},
		{"no-eos", no_argument, NULL, O_NOEOS},
		{"no-special", no_argument, NULL, O_NOSPECIAL},
		{"prefix-space", no_argument, NULL, O_PREFIX},
		{"no-extra-ids", no_argument, NULL, O_NOEXTRA},
		{"max-len", required_argument, NULL, O_MAXLEN},
		{"jsonl", no_argument, NULL, O_JSONL},
		{"text", required_argument, NULL, O_TEXT},
		{"id", required_argument, NULL, O_ID},
		{"skip-bad", no_argument, NULL, O_SKIPBAD},
		{0, 0, 0, 0},
	};
	run r;
	const char *model = NULL, *from;
	int split = TEXTIN_FILE, split_given = 0, force = 0, quiet = 0, jsonl_in = 0, c;
	jsonl_spec js = {.field = {"text"}, .nfield = 1};
	const char *jsonl_opt = NULL;
	jsonl_tally bad = { 0 };
	idmap *names = NULL;
	char msg[LC_JSONL_MSG];
	lc_tokenizer *m;
	lc_err err;

	memset(&r, 0, sizeof r);
	r.fmt = F_STREAM;
	r.flags = TOK_ENC_SPECIAL | TOK_ENC_EXTRA;
	cli_init("lc-tokenize");
	while ((c = cli_getopt(argc, argv, "Fqm:d:f:j:", opts)) != -1) {
		switch (c) {
		case 'F': force = 1; break;
		case 'q': quiet = 1; break;
		case 'm': model = optarg; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'd':
			if ((split = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown document mode '%s' (file, line, blank, nul)",
				                optarg);
			split_given = 1;
			break;
		case 'f':
			if (strcmp(optarg, "stream") == 0)
				r.fmt = F_STREAM;
			else if (strcmp(optarg, "ids") == 0)
				r.fmt = F_IDS;
			else if (strcmp(optarg, "pieces") == 0)
				r.fmt = F_PIECES;
			else
				cli_usage_error("-f: unknown output format '%s' (stream, ids, pieces)", optarg);
			break;
		case O_NOEOS: r.flags |= TOK_ENC_NO_EOS; break;
		case O_NOSPECIAL: r.flags &= ~(unsigned)TOK_ENC_SPECIAL; break;
		case O_PREFIX: r.flags |= TOK_ENC_PREFIX; break;
		case O_NOEXTRA: r.flags &= ~(unsigned)TOK_ENC_EXTRA; break;
		case O_MAXLEN: r.max_len = (uint64_t)cli_int("--max-len", optarg, 1, INT32_MAX); break;
		case O_JSONL: jsonl_in = 1; break;
		case O_TEXT: js.field[0] = optarg; jsonl_opt = "--text"; break;
		case O_ID: js.id = optarg; jsonl_opt = "--id"; break;
		case O_SKIPBAD: js.skip_bad = 1; jsonl_opt = "--skip-bad"; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (jsonl_opt && !jsonl_in)
		cli_usage_error("%s goes with --jsonl", jsonl_opt);
	if (jsonl_in && split_given)
		cli_usage_error("-d and --jsonl exclude each other (JSON Lines are a document a line)");
	if (r.fmt == F_PIECES)
		r.flags |= TOK_ENC_PIECES;
	if (r.fmt == F_STREAM)
		cli_binary_stdout(force);
	/* -m/--model, else $LC_TOKENIZER, else the bundled spiece.model */
	model = cli_source(model, "-m/--model", "$LC_TOKENIZER", &from);
	cli_check_path(from, model);
	if (!(m = tok_open(model, &err)))
		cli_die_source(from, model, err.msg);
	r.m = m;
	if ((r.flags & TOK_ENC_SPECIAL) && !(r.flags & TOK_ENC_NO_EOS) && tok_kind(m) == TOK_SPM &&
	    tok_eos_id(m) < 0)
		cli_die(LC_EXIT_DATA, "the model has no </s> piece; use --no-eos");
	if (r.fmt == F_STREAM && !(r.w = stream_writer_new(stdout, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (jsonl_in && !(names = idmap_new(&err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	cli_progress_init(&r.prog, quiet);
	for (int i = optind; i < argc || i == optind; i++) {
		const char *path = i < argc ? argv[i] : "-";
		const char *name, *text;
		size_t len;
		textin *t;
		int rc, warned;

		if (jsonl_in) {
			jsonl *j = jsonl_open(path, &js, &err);
			const jsonl_rec *rec;
			if (!j)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			while ((rc = jsonl_next(j, &rec, &err)) > 0) {
				/* ids only: lines named FILE:LINE may meet across
				 * archives whose members share a path */
				if (rec->has_id &&
				    idmap_add(names, rec->name, rec->where, "", 0, &err) < 0)
					cli_die(LC_EXIT_DATA, "%s", err.msg);
				one_doc(&r, rec->name, NULL, rec->text[0], rec->len[0]);
			}
			if (rc < 0 || jsonl_tally_add(&bad, j, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
			jsonl_close(j);
			if (i >= argc)
				break;
			continue;
		}
		if (!(t = textin_open(path, split, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		warned = 0;   /* a binary file given by mistake: said once an input */
		while ((rc = textin_next(t, &name, &text, &len, &err)) > 0) {
			if (!warned && utf8_not_text(text, len, strcmp(path, "-") ? path : "stdin", name,
			                             "tokenized as text anyway", msg, sizeof msg))
				warned = 1, cli_warn("%s", msg);
			one_doc(&r, name, textin_meta(t), text, len);
		}
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		textin_close(t);
		if (i >= argc)
			break;
	}
	cli_progress_done(&r.prog);
	if (jsonl_tally_msg(&bad, msg, sizeof msg))
		cli_warn("%s", msg);
	jsonl_tally_free(&bad);
	idmap_free(names);
	if (r.w && stream_writer_close(r.w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	tok_enc_free(&r.e);
	tok_free(m);
	return cli_finish(0);
}
