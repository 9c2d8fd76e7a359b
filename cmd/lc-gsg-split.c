/* lc-gsg-split: gap-sentence generation pairs (PEGASUS / LOCOST pretraining). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "text/gsg.h"
#include "text/tokenizer.h"
#include "stream/jsonl.h"
#include "stream/stream.h"
#include "stream/textin.h"

static void usage(void)
{
	printf("usage: lc-gsg-split [-Fq] [-r RATIO] [-s ind|seq] [--uniq] [--stem]\n"
	       "                    [--mask none|sentence] [--mask-token TEXT] [-m MODEL] [-j N]\n"
	       "                    [-f stream|text] [-d file|line|blank|nul]\n"
	       "                    [--jsonl [--text FIELD | --source FIELD --target FIELD]\n"
	       "                     [--id FIELD] [--skip-bad]] [FILE...]\n"
	       "\n"
	       "Splits each document into sentences and selects floor(RATIO x M) of them,\n"
	       "by ROUGE-1 against the rest, as a pseudo-summary (target); the rest is the\n"
	       "pseudo-source. With --source and --target, writes the pairs that JSON Lines\n"
	       "records hold instead (a summarization data set), with no selection.\n"
	       "\n"
	       "  -r RATIO        share of sentences selected (default 0.2, as LOCOST)\n"
	       "  -s ind|seq      score sentences independently (default) or greedily\n"
	       "  --uniq          count each distinct word once (PEGASUS Uniq; default Orig)\n"
	       "  --stem          Porter-stem words longer than 3 letters when scoring\n"
	       "  --mask none     the source leaves selected sentences out (default)\n"
	       "  --mask sentence the source has the mask token in their place (PEGASUS)\n"
	       "  --mask-token T  the mask text (default <extra_id_0>)\n"
	       "  -m, --model MODEL\n"
	       "                  write token ids (with eos) instead of text, with this\n"
	       "                  tokenizer (as lc-tokenize -m)\n"
	       "  -f stream       a stream with \"source\" and \"target\" per document (default)\n"
	       "  -f text         '== target', its sentences, '== source', its sentences\n"
	       "  -d MODE         how inputs split into documents (as lc-tokenize)\n"
	       "  --jsonl         inputs are JSON Lines, a document per line (as lc-tokenize)\n"
	       "  --text FIELD    with --jsonl: the field GSG splits (default text)\n"
	       "  --source FIELD  with --jsonl: the pair's source text (default article)\n"
	       "  --target FIELD  with --jsonl: the pair's target text (default abstract);\n"
	       "                  either of the two writes the records' pairs, no GSG\n"
	       "  --id FIELD      with --jsonl: the field naming the document (default none:\n"
	       "                  FILE:LINE)\n"
	       "  --skip-bad      with --jsonl: skip bad lines, and say how many at the end\n"
	       "  -j, --threads N\n"
	       "                  lc-gsg-split runs on one thread: N (1..1024) is checked\n"
	       "                  and otherwise ignored, so that scripts can pass -j to every\n"
	       "                  program\n"
	       "  -F              write a binary stream even to a terminal\n"
	       "  -q              accepted; lc-gsg-split shows no progress\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

struct opts {
	gsg_opts g;
	int mask, text, split, force;
	const char *mask_token, *model;
	int jsonl, pairs;       /* JSON Lines input; pairs from its records, no GSG */
	jsonl_spec js;
};

struct buf {
	char *p;
	size_t n, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n + 1)
			cap *= 2;
		if (!(b->p = realloc(b->p, cap)))
			cli_die(LC_EXIT_DATA, "out of memory");
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

/* A sentence on one line: its inner line breaks become spaces. */
static void add_sentence(struct buf *b, const char *s, size_t n)
{
	size_t from = b->n;
	if (b->n)
		buf_add(b, "\n", 1);
	from = b->n;
	buf_add(b, s, n);
	for (size_t i = from; i < b->n; i++)
		if (b->p[i] == '\n' || b->p[i] == '\r')
			b->p[i] = ' ';
}

static void add_tensor(lc_doc *d, const char *name, const struct buf *b, lc_tokenizer *m,
                       tok_enc *enc)
{
	lc_err err;
	lc_tensor *t;
	uint64_t n;

	if (m) {
		if (tok_encode(m, b->p ? b->p : "", b->n, TOK_ENC_SPECIAL | TOK_ENC_EXTRA, enc, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s: %s", d->name, err.msg);
		n = enc->n;
		if (!(t = doc_add_tensor(d, name, LC_I32, 1, &n, &err)) ||
		    meta_set(&t->meta, "tokenizer", tok_fingerprint(m), &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		memcpy(t->data, enc->ids, n * sizeof *enc->ids);
		return;
	}
	n = b->n;
	if (!(t = doc_add_tensor(d, name, LC_U8, 1, &n, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (n)
		memcpy(t->data, b->p, n);
}

/* What every document shares on its way out. */
struct state {
	struct opts o;
	gsg *g;
	lc_tokenizer *m;
	tok_enc enc;
	lc_writer *w;
	struct buf src, tgt, pending;
	char *first_name;
	unsigned long long ndocs, nshort, nbad;
	char *first_bad;
};

/* Writes the pair in st->src and st->tgt as document name; with a GSG
 * split, n sentences of which k selected (else n = k = 0, no GSG metadata). */
static void emit(struct state *st, const char *name, const lc_meta *im, int split, size_t n,
                 size_t k)
{
	lc_err err;

	if (st->o.text) {
		/* Like head(1): a header per document when there are several. */
		struct buf *out = st->ndocs == 0 ? &st->pending : NULL, tmp = {0};
		if (!out)
			out = &tmp;
		buf_add(out, "== target\n", 10);
		if (st->tgt.n) {
			buf_add(out, st->tgt.p, st->tgt.n);
			buf_add(out, "\n", 1);
		}
		buf_add(out, "== source\n", 10);
		if (st->src.n) {
			buf_add(out, st->src.p, st->src.n);
			buf_add(out, "\n", 1);
		}
		if (st->ndocs == 0) {
			if (!(st->first_name = strdup(name)))
				cli_die(LC_EXIT_DATA, "out of memory");
		} else {
			if (st->ndocs == 1)
				printf("== doc %s\n%s", st->first_name, st->pending.p);
			printf("== doc %s\n%s", name, tmp.p);
			free(tmp.p);
		}
	} else {
		lc_doc d;
		const struct opts *o = &st->o;
		if (doc_init(&d, name, &err) < 0 || (im && meta_copy(&d.meta, im, &err) < 0) ||
		    (split && (meta_setf(&d.meta, "sentences", &err, "%zu", n) < 0 ||
		               meta_setf(&d.meta, "selected", &err, "%zu", k) < 0 ||
		               meta_setf(&d.meta, "gsg", &err, "%s-%s ratio=%g%s",
		                         o->g.seq ? "seq" : "ind", o->g.uniq ? "uniq" : "orig",
		                         o->g.ratio, o->g.stem ? " stem" : "") < 0)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		add_tensor(&d, "source", &st->src, st->m, &st->enc);
		add_tensor(&d, "target", &st->tgt, st->m, &st->enc);
		if (stream_write_doc(st->w, &d, &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		doc_free(&d);
	}
	st->ndocs++;
}

/* One document through GSG. */
static void gsg_doc(struct state *st, const char *name, const lc_meta *im, const char *text,
                    size_t len)
{
	const sentence_span *sp;
	const unsigned char *sel;
	const double *score;
	size_t n, k = 0;
	lc_err err;

	if (gsg_select(st->g, text, len, &sp, &sel, &score, &n, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
	st->src.n = st->tgt.n = 0;
	for (size_t s = 0; s < n; s++) {
		k += sel[s];
		if (sel[s])
			add_sentence(&st->tgt, text + sp[s].start, sp[s].end - sp[s].start);
		if (!sel[s])
			add_sentence(&st->src, text + sp[s].start, sp[s].end - sp[s].start);
		else if (st->o.mask)
			add_sentence(&st->src, st->o.mask_token, strlen(st->o.mask_token));
	}
	st->nshort += k == 0;
	emit(st, name, im, 1, n, k);
}

/* The documents of one input. */
static void one_input(struct state *st, const char *path)
{
	const char *name, *text;
	size_t len;
	lc_err err;
	int rc;

	if (st->o.jsonl) {
		jsonl *j = jsonl_open(path, &st->o.js, &err);
		const jsonl_rec *r;
		if (!j)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		while ((rc = jsonl_next(j, &r, &err)) > 0) {
			if (!st->o.pairs) {
				gsg_doc(st, r->name, NULL, r->text[0], r->len[0]);
				continue;
			}
			st->src.n = st->tgt.n = 0;
			buf_add(&st->src, r->text[0], r->len[0]);
			buf_add(&st->tgt, r->text[1], r->len[1]);
			emit(st, r->name, NULL, 0, 0, 0);
		}
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		if (jsonl_skipped(j) && !st->nbad && !(st->first_bad = strdup(jsonl_first_bad(j))))
			cli_die(LC_EXIT_DATA, "out of memory");
		st->nbad += jsonl_skipped(j);
		jsonl_close(j);
		return;
	}
	textin *t = textin_open(path, st->o.split, &err);
	if (!t)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	while ((rc = textin_next(t, &name, &text, &len, &err)) > 0)
		gsg_doc(st, name, textin_meta(t), text, len);
	if (rc < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	textin_close(t);
}

int main(int argc, char **argv)
{
	enum { O_JSONL = 256, O_TEXT, O_SOURCE, O_TARGET, O_ID, O_SKIPBAD };
	static const struct option lopts[] = {
		{"uniq", no_argument, NULL, 'U'},
		{"stem", no_argument, NULL, 'T'},
		{"mask", required_argument, NULL, 'M'},
		{"mask-token", required_argument, NULL, 'K'},
		{"jsonl", no_argument, NULL, O_JSONL},
		{"text", required_argument, NULL, O_TEXT},
		{"source", required_argument, NULL, O_SOURCE},
		{"target", required_argument, NULL, O_TARGET},
		{"id", required_argument, NULL, O_ID},
		{"skip-bad", no_argument, NULL, O_SKIPBAD},
		{"model", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	struct state st = {.o = {.g = {.ratio = 0.2}, .mask_token = "<extra_id_0>"}};
	struct opts *o = &st.o;
	const char *text_field = NULL, *src_field = NULL, *tgt_field = NULL, *jsonl_opt = NULL;
	int split_given = 0, c;
	lc_err err;

	cli_init("lc-gsg-split");
	while ((c = cli_getopt(argc, argv, "Fqr:s:m:f:d:j:", lopts)) != -1) {
		switch (c) {
		case 'F': o->force = 1; break;
		case 'q': break;
		case 'r': o->g.ratio = cli_double("-r", optarg, 0, 1); break;
		case 's':
			if (strcmp(optarg, "ind") && strcmp(optarg, "seq"))
				cli_usage_error("-s: expected ind or seq, got '%s'", optarg);
			o->g.seq = optarg[0] == 's';
			break;
		case 'U': o->g.uniq = 1; break;
		case 'T': o->g.stem = 1; break;
		case 'M':
			if (strcmp(optarg, "none") && strcmp(optarg, "sentence"))
				cli_usage_error("--mask: expected none or sentence, got '%s'", optarg);
			o->mask = optarg[0] == 's';
			break;
		case 'K': o->mask_token = optarg; break;
		case 'm': o->model = optarg; break;
		case 'j': cli_threads_arg(optarg); break;
		case 'f':
			if (strcmp(optarg, "stream") && strcmp(optarg, "text"))
				cli_usage_error("-f: expected stream or text, got '%s'", optarg);
			o->text = optarg[0] == 't';
			break;
		case 'd':
			if ((o->split = textin_split_parse(optarg)) < 0)
				cli_usage_error("-d: unknown document mode '%s' (file, line, blank, nul)",
				                optarg);
			split_given = 1;
			break;
		case O_JSONL: o->jsonl = 1; break;
		case O_TEXT: text_field = optarg; jsonl_opt = "--text"; break;
		case O_SOURCE: src_field = optarg; jsonl_opt = "--source"; break;
		case O_TARGET: tgt_field = optarg; jsonl_opt = "--target"; break;
		case O_ID: o->js.id = optarg; jsonl_opt = "--id"; break;
		case O_SKIPBAD: o->js.skip_bad = 1; jsonl_opt = "--skip-bad"; break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (o->model && o->text)
		cli_usage_error("-m writes token ids: it goes with -f stream");
	if (jsonl_opt && !o->jsonl)
		cli_usage_error("%s goes with --jsonl", jsonl_opt);
	if (o->jsonl && split_given)
		cli_usage_error("-d and --jsonl exclude each other (JSON Lines are a document a line)");
	if (text_field && (src_field || tgt_field))
		cli_usage_error("--text (GSG of one field) and --source/--target (the records' "
		                "pairs) exclude each other");
	o->pairs = src_field || tgt_field;
	if (o->pairs) {
		o->js.field[0] = src_field ? src_field : "article";
		o->js.field[1] = tgt_field ? tgt_field : "abstract";
		o->js.nfield = 2;
	} else {
		o->js.field[0] = text_field ? text_field : "text";
		o->js.nfield = 1;
	}
	if (o->model) {
		/* -m/--model; an empty one: $LC_TOKENIZER, else the bundled spiece.model */
		const char *from, *path = cli_source(o->model, "-m/--model", "$LC_TOKENIZER", &from);
		cli_check_path(from, path);
		if (!(st.m = tok_open(path, &err)))
			cli_die_source(from, path, err.msg);
	}
	if (!(st.g = gsg_new(&o->g, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (!o->text) {
		cli_binary_stdout(o->force);
		if (!(st.w = stream_writer_new(stdout, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	for (int i = optind; i < argc || i == optind; i++) {
		one_input(&st, i < argc ? argv[i] : "-");
		if (i >= argc)
			break;
	}
	if (o->text && st.ndocs == 1)
		fputs(st.pending.p, stdout);
	if (st.w && stream_writer_close(st.w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (st.nshort)
		cli_warn("%llu of %llu documents too short to split (floor(%g x sentences) = 0): "
		         "passed through with an empty target", st.nshort, st.ndocs, o->g.ratio);
	if (st.nbad)
		cli_warn("skipped %llu bad JSON line%s (the first: %s)", st.nbad,
		         st.nbad == 1 ? "" : "s", st.first_bad);
	free(st.src.p);
	free(st.tgt.p);
	free(st.pending.p);
	free(st.first_name);
	free(st.first_bad);
	tok_enc_free(&st.enc);
	tok_free(st.m);
	gsg_free(st.g);
	return cli_finish(0);
}
