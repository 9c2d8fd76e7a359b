/* lc-gsg-split: gap-sentence generation pairs (PEGASUS / LOCOST pretraining). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "text/gsg.h"
#include "text/tokenizer.h"
#include "stream/stream.h"
#include "stream/textin.h"

static void usage(void)
{
	printf("usage: lc-gsg-split [-Fq] [-r RATIO] [-s ind|seq] [--uniq] [--stem]\n"
	       "                    [--mask none|sentence] [--mask-token TEXT] [-m MODEL]\n"
	       "                    [-f stream|text] [-d file|line|blank|nul] [FILE...]\n"
	       "\n"
	       "Splits each document into sentences and selects floor(RATIO x M) of them,\n"
	       "by ROUGE-1 against the rest, as a pseudo-summary (target); the rest is the\n"
	       "pseudo-source.\n"
	       "\n"
	       "  -r RATIO        share of sentences selected (default 0.2, as LOCOST)\n"
	       "  -s ind|seq      score sentences independently (default) or greedily\n"
	       "  --uniq          count each distinct word once (PEGASUS Uniq; default Orig)\n"
	       "  --stem          Porter-stem words longer than 3 letters when scoring\n"
	       "  --mask none     the source leaves selected sentences out (default)\n"
	       "  --mask sentence the source has the mask token in their place (PEGASUS)\n"
	       "  --mask-token T  the mask text (default <extra_id_0>)\n"
	       "  -m MODEL        write token ids (with eos) instead of text\n"
	       "  -f stream       a stream with \"source\" and \"target\" per document (default)\n"
	       "  -f text         '== target', its sentences, '== source', its sentences\n"
	       "  -d MODE         how inputs split into documents (as lc-tokenize)\n"
	       "  --help, --version\n");
	exit(cli_finish(0));
}

struct opts {
	gsg_opts g;
	int mask, text, split, force;
	const char *mask_token, *model;
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
	memcpy(t->data, b->p, n);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"uniq", no_argument, NULL, 'U'},
		{"stem", no_argument, NULL, 'T'},
		{"mask", required_argument, NULL, 'M'},
		{"mask-token", required_argument, NULL, 'K'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	struct opts o = {.g = {.ratio = 0.2}, .mask_token = "<extra_id_0>"};
	struct buf src = {0}, tgt = {0}, pending = {0};
	unsigned long long ndocs = 0, nshort = 0;
	char *first_name = NULL;
	lc_tokenizer *m = NULL;
	tok_enc enc = {0};
	lc_writer *w = NULL;
	lc_err err;
	gsg *g;
	int c;

	cli_init("lc-gsg-split");
	while ((c = cli_getopt(argc, argv, "Fqr:s:m:f:d:", lopts)) != -1) {
		switch (c) {
		case 'F': o.force = 1; break;
		case 'q': break;
		case 'r': o.g.ratio = cli_double("-r", optarg, 0, 1); break;
		case 's':
			if (strcmp(optarg, "ind") && strcmp(optarg, "seq"))
				cli_usage_error("-s: expected ind or seq, got '%s'", optarg);
			o.g.seq = optarg[0] == 's';
			break;
		case 'U': o.g.uniq = 1; break;
		case 'T': o.g.stem = 1; break;
		case 'M':
			if (strcmp(optarg, "none") && strcmp(optarg, "sentence"))
				cli_usage_error("--mask: expected none or sentence, got '%s'", optarg);
			o.mask = optarg[0] == 's';
			break;
		case 'K': o.mask_token = optarg; break;
		case 'm': o.model = optarg; break;
		case 'f':
			if (strcmp(optarg, "stream") && strcmp(optarg, "text"))
				cli_usage_error("-f: expected stream or text, got '%s'", optarg);
			o.text = optarg[0] == 't';
			break;
		case 'd':
			if ((o.split = textin_split_parse(optarg)) < 0)
				cli_usage_error("unknown document mode '%s'", optarg);
			break;
		case 'h': usage(); break;
		case 'V': cli_version(); break;
		default: cli_usage_error("unknown option");
		}
	}
	if (o.model && o.text)
		cli_usage_error("-m writes token ids: it goes with -f stream");
	if (o.model && !(m = tok_open(o.model, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (!(g = gsg_new(&o.g, &err)))
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (!o.text) {
		cli_binary_stdout(o.force);
		if (!(w = stream_writer_new(stdout, &err)))
			cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	for (int i = optind; i < argc || i == optind; i++) {
		const char *path = i < argc ? argv[i] : "-", *name, *text;
		textin *t = textin_open(path, o.split, &err);
		size_t len;
		int rc;

		if (!t)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		while ((rc = textin_next(t, &name, &text, &len, &err)) > 0) {
			const sentence_span *sp;
			const unsigned char *sel;
			const double *score;
			size_t n, k = 0;

			if (gsg_select(g, text, len, &sp, &sel, &score, &n, &err) < 0)
				cli_die(LC_EXIT_DATA, "%s: %s", name, err.msg);
			src.n = tgt.n = 0;
			for (size_t s = 0; s < n; s++) {
				k += sel[s];
				if (sel[s])
					add_sentence(&tgt, text + sp[s].start, sp[s].end - sp[s].start);
				if (!sel[s])
					add_sentence(&src, text + sp[s].start, sp[s].end - sp[s].start);
				else if (o.mask)
					add_sentence(&src, o.mask_token, strlen(o.mask_token));
			}
			nshort += k == 0;
			if (o.text) {
				/* Like head(1): a header per document when there are several. */
				struct buf *out = ndocs == 0 ? &pending : NULL, tmp = {0};
				if (!out)
					out = &tmp;
				buf_add(out, "== target\n", 10);
				if (tgt.n) {
					buf_add(out, tgt.p, tgt.n);
					buf_add(out, "\n", 1);
				}
				buf_add(out, "== source\n", 10);
				if (src.n) {
					buf_add(out, src.p, src.n);
					buf_add(out, "\n", 1);
				}
				if (ndocs == 0) {
					first_name = strdup(name);
				} else {
					if (ndocs == 1)
						printf("== doc %s\n%s", first_name, pending.p);
					printf("== doc %s\n%s", name, tmp.p);
					free(tmp.p);
				}
			} else {
				lc_doc d;
				const lc_meta *im = textin_meta(t);
				if (doc_init(&d, name, &err) < 0 || (im && meta_copy(&d.meta, im, &err) < 0) ||
				    meta_setf(&d.meta, "sentences", &err, "%zu", n) < 0 ||
				    meta_setf(&d.meta, "selected", &err, "%zu", k) < 0 ||
				    meta_setf(&d.meta, "gsg", &err, "%s-%s ratio=%g%s", o.g.seq ? "seq" : "ind",
				              o.g.uniq ? "uniq" : "orig", o.g.ratio, o.g.stem ? " stem" : "") < 0)
					cli_die(LC_EXIT_DATA, "%s", err.msg);
				add_tensor(&d, "source", &src, m, &enc);
				add_tensor(&d, "target", &tgt, m, &enc);
				if (stream_write_doc(w, &d, &err) < 0)
					cli_die(LC_EXIT_DATA, "%s", err.msg);
				doc_free(&d);
			}
			ndocs++;
		}
		if (rc < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		textin_close(t);
		if (i >= argc)
			break;
	}
	if (o.text && ndocs == 1)
		fputs(pending.p, stdout);
	if (w && stream_writer_close(w, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	if (nshort)
		cli_warn("%llu of %llu documents too short to split (floor(%g x sentences) = 0): "
		         "passed through with an empty target", nshort, ndocs, o.g.ratio);
	free(src.p);
	free(tgt.p);
	free(pending.p);
	free(first_name);
	tok_enc_free(&enc);
	tok_free(m);
	gsg_free(g);
	return cli_finish(0);
}
