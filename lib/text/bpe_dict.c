/*
 * bpe_dict: fairseq's Dictionary (dict.txt) over the GPT-2 encoder, the
 * tokenizer of fairseq's BART checkpoints (bpe.h). After it, the model's
 * ids are fairseq's: <s> 0, <pad> 1, </s> 2, <unk> 3, then dict.txt's
 * symbols in order, then <mask>; BPE tokens are looked up through their
 * GPT-2 id written in decimal, as fairseq's GPT2BPE.encode + encode_line do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe_int.h"

static int is_space(char c)
{
	/* str.rstrip()'s ASCII white space (\x1c-\x1f count in Python) */
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The GPT-2 id a symbol names: canonical decimal within the encoder, else -1. */
static int32_t gpt_id(const bpe_model *m, const char *s, size_t n)
{
	int64_t v = 0;

	if (n == 0 || n > 9 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v < m->nid && m->tok[v] ? (int32_t)v : -1;
}

typedef struct syms {
	char **s;
	size_t *len;
	int32_t n, cap;
	smap index;                 /* symbol -> its (last) id */
} syms;

static int add_symbol(syms *y, const char *s, size_t n)
{
	if (y->n == y->cap) {
		int32_t nc = y->cap ? 2 * y->cap : 1024;
		char **a = realloc(y->s, (size_t)nc * sizeof *a);
		size_t *l = a ? realloc(y->len, (size_t)nc * sizeof *l) : NULL;
		if (a)
			y->s = a;
		if (!l)
			return -1;
		y->len = l;
		y->cap = nc;
	}
	if (!(y->s[y->n] = malloc(n + 1)))
		return -1;
	memcpy(y->s[y->n], s, n);
	y->s[y->n][n] = 0;
	y->len[y->n] = n;
	if (smap_put(&y->index, s, n, y->n) < 0) {
		free(y->s[y->n]);
		return -1;
	}
	y->n++;
	return 0;
}

/* dict.txt as Dictionary.add_from_file reads it: each line rstripped and
 * split at its last space into SYMBOL and COUNT (an integer); a COUNT of
 * "#fairseq:overwrite" is a flag, and the count comes before it; a symbol
 * already present is an error unless overwritten (then it gets a new id,
 * the old one keeping its row). */
static int read_dict(bpe_model *m, syms *y, const char *p, size_t len, lc_err *err)
{
	size_t i = 0, ln = 0;

	while (i < len) {
		size_t end = i, e, sp;
		int over = 0;
		ln++;
		while (end < len && p[end] != '\n')
			end++;
		e = end;
		while (e > i && is_space(p[e - 1]))
			e--;
		for (int pass = 0; pass < 2; pass++) {
			const char *f;
			size_t fl;
			for (sp = e; sp > i && p[sp - 1] != ' '; sp--)
				;
			if (sp == i)
				return fail_label(m, err, "dict.txt: line %zu: expected '<token> <cnt> [flags]'",
				                  ln), -1;
			f = p + sp;
			fl = e - sp;
			if (pass == 0 && fl == 18 && !memcmp(f, "#fairseq:overwrite", 18)) {
				over = 1;
				e = sp - 1;
				continue;
			}
			{
				size_t k = (fl && (f[0] == '+' || f[0] == '-')) ? 1 : 0;
				if (k == fl)
					return fail_label(m, err, "dict.txt: line %zu: the count \"%.*s\" is not an "
					                  "integer", ln, (int)(fl > 30 ? 30 : fl), f), -1;
				for (; k < fl; k++)
					if (f[k] < '0' || f[k] > '9')
						return fail_label(m, err, "dict.txt: line %zu: the count \"%.*s\" is not "
						                  "an integer", ln, (int)(fl > 30 ? 30 : fl), f), -1;
			}
			e = sp - 1;
			break;
		}
		if (smap_get(&y->index, p + i, e - i) >= 0 && !over)
			return fail_label(m, err, "dict.txt: line %zu: \"%.*s\" appears twice (fairseq "
			                  "needs #fairseq:overwrite)", ln, (int)((e - i) > 40 ? 40 : e - i),
			                  p + i), -1;
		if (y->n >= MAX_ID)
			return fail_label(m, err, "dict.txt: more than %d symbols", MAX_ID), -1;
		if (add_symbol(y, p + i, e - i) < 0)
			return lc_fail(err, "out of memory"), -1;
		i = end + 1;
	}
	return 0;
}

int bpe_use_dict(bpe_model *m, const char *p, size_t len, lc_err *err)
{
	static const char *const special[4] = { "<s>", "<pad>", "</s>", "<unk>" };
	syms y;
	int32_t *of_gpt = NULL;
	int rc = -1;

	memset(&y, 0, sizeof y);
	for (int k = 0; k < 4; k++)
		if (add_symbol(&y, special[k], strlen(special[k])) < 0)
			goto oom;
	if (read_dict(m, &y, p, len, err) < 0)
		goto out;
	/* the denoising tasks' add_symbol("<mask>"): a new id unless listed */
	if (smap_get(&y.index, "<mask>", 6) < 0 && add_symbol(&y, "<mask>", 6) < 0)
		goto oom;
	/* each GPT-2 id's fairseq id (<unk> when the dictionary lacks it) */
	if (!(of_gpt = malloc((size_t)m->nid * sizeof *of_gpt)))
		goto oom;
	for (int32_t g = 0; g < m->nid; g++) {
		char num[16];
		int nl = snprintf(num, sizeof num, "%ld", (long)g);
		int64_t v = smap_get(&y.index, num, (size_t)nl);
		of_gpt[g] = v >= 0 ? (int32_t)v : 3;
	}
	for (uint64_t s = 0; s < m->nsym; s++)
		m->sym_id[s] = m->sym_id[s] >= 0 ? of_gpt[m->sym_id[s]] : 3;
	/* the table becomes fairseq's: a symbol naming a GPT-2 id has its
	 * token; the others (<s>, <unk>, madeupword0000, <mask>) their text,
	 * which decoding writes as it is (fairseq's GPT-2 decoder does) */
	{
		char **tok = calloc((size_t)y.n, sizeof *tok);
		size_t *tl = calloc((size_t)y.n, sizeof *tl);
		unsigned char *sp = calloc((size_t)y.n, 1);
		if (!tok || !tl || !sp) {
			free(tok);
			free(tl);
			free(sp);
			goto oom;
		}
		for (int32_t i = 0; i < y.n; i++) {
			int32_t g = gpt_id(m, y.s[i], y.len[i]);
			if (g >= 0) {
				tok[i] = strdup(m->tok[g]);
				tl[i] = m->toklen[g];
			} else {
				tok[i] = y.s[i];
				tl[i] = y.len[i];
				y.s[i] = NULL;
			}
			if (!tok[i]) {
				for (int32_t k = 0; k < i; k++)
					free(tok[k]);
				free(tok);
				free(tl);
				free(sp);
				goto oom;
			}
		}
		for (int32_t i = 0; i < m->nid; i++)
			free(m->tok[i]);
		free(m->tok);
		free(m->toklen);
		free(m->special);
		m->tok = tok;
		m->toklen = tl;
		m->special = sp;
		m->nid = y.n;
		m->idcap = (size_t)y.n;
	}
	/* Dictionary.string drops <s> and </s> (and lc <pad>, which fairseq's
	 * decode cannot take); <unk> and <mask> are written as their text */
	m->special[0] = m->special[1] = m->special[2] = BPE_SP_SKIP;
	m->bos = m->cls = 0;
	m->pad = 1;
	m->eos = m->sep = 2;
	m->unk = 3;
	m->mask = (int32_t)smap_get(&y.index, "<mask>", 6);
	m->wrap = 1;
	m->prefix = 0;
	m->cleanup = 0;
	rc = 0;
	goto out;
oom:
	lc_fail(err, "out of memory");
out:
	for (int32_t i = 0; i < y.n; i++)
		free(y.s[i]);
	free(y.s);
	free(y.len);
	smap_free(&y.index);
	free(of_gpt);
	return rc;
}
