/*
 * test_tokenizer: finding a model's tokenizer and the kind it is (the
 * lookup order -m, $LC_TOKENIZER, $LC_SHARE/spiece.model, SHAREDIR; a
 * directory's spiece.model before its BPE files), and one interface over
 * both kinds.
 */
#include <stdint.h>
#include <unistd.h>

#include "t.h"
#include "text/tokenizer.h"

static void test_locate(void)
{
	char dir[4096], want[4096], tj[4096];
	lc_err err;
	lc_tokenizer *t;
	const char *d = getenv("LC_TESTDATA");

	snprintf(dir, sizeof dir, "%s/spm", d ? d : "tests/data");
	snprintf(want, sizeof want, "%s/t5like.model", dir);
	unsetenv("LC_TOKENIZER");
	t = tok_open(want, &err);
	T_OK(t && tok_kind(t) == TOK_SPM, "%s", t ? "" : err.msg);
	if (t)
		T_EQ_S(tok_path(t), want);
	tok_free(t);
	T_OK(!tok_open("/nonexistent/x.model", &err) && strstr(err.msg, "/nonexistent/x.model"),
	     "%s", err.msg);
	/* a directory with neither kind's files */
	T_OK(!tok_open(dir, &err) && strstr(err.msg, "spiece.model") && strstr(err.msg, "vocab.json"),
	     "%s", err.msg);
	setenv("LC_TOKENIZER", want, 1);
	t = tok_open(NULL, &err);
	T_OK(t && !strcmp(tok_path(t), want), "$LC_TOKENIZER: %s", t ? tok_path(t) : err.msg);
	tok_free(t);
	/* -m wins */
	T_OK(!tok_open("/nonexistent/y.model", &err), "-m ignored");
	unsetenv("LC_TOKENIZER");
	setenv("LC_SHARE", "/nonexistent-share", 1);
	T_OK(!tok_open(NULL, &err) && strstr(err.msg, "/nonexistent-share/spiece.model"), "%s", err.msg);
	unsetenv("LC_SHARE");
	/* BPE: a model directory, or one of its files */
	snprintf(dir, sizeof dir, "%s/bart/tiny_bart", d ? d : "tests/data");
	t = tok_open(dir, &err);
	T_OK(t && tok_kind(t) == TOK_BPE && !strcmp(tok_kind_name(t), "bpe"), "%s", t ? "" : err.msg);
	tok_free(t);
	snprintf(tj, sizeof tj, "%s/vocab.json", dir);
	t = tok_open(tj, &err);
	T_OK(t && tok_kind(t) == TOK_BPE && !strcmp(tok_path(t), dir), "%s", t ? tok_path(t) : err.msg);
	tok_free(t);
	{
		int none;
		T_OK(!tok_open_dir("/", &none, &err) && none, "no tokenizer in /");
	}
}

/* The same text through both kinds, and what the flags do. */
static void test_interface(void)
{
	char dir[4096];
	lc_err err;
	const char *d = getenv("LC_TESTDATA");
	lc_tokenizer *t;
	tok_enc e = { 0 };
	char *out = NULL;
	size_t olen, cap = 0;
	int rc;

	snprintf(dir, sizeof dir, "%s/bart/tiny_bart", d ? d : "tests/data");
	if (!T_OK((t = tok_open(dir, &err)) != NULL, "%s", err.msg))
		return;
	rc = tok_encode(t, "Hello world", 11, TOK_ENC_SPECIAL, &e, &err);
	T_OK(rc == 0 && e.n == 7 && e.ids[0] == 0 && e.ids[6] == 2, "<s> ... </s>: %zu ids", e.n);
	rc = tok_encode(t, "Hello world", 11, TOK_ENC_SPECIAL | TOK_ENC_NO_EOS, &e, &err);
	T_OK(rc == 0 && e.n == 6 && e.ids[0] == 0, "--no-eos keeps <s>");
	rc = tok_encode(t, "Hello world", 11, 0, &e, &err);
	T_OK(rc == 0 && e.n == 5 && e.ids[0] == 43, "no special ids");
	rc = tok_encode(t, "Hello world", 11, TOK_ENC_SPECIAL, &e, &err);
	rc |= tok_decode(t, e.ids, e.n, 0, &out, &olen, &cap, &err);
	T_OK(rc == 0 && !strcmp(out, "Hello world"), "decoded: %s", out);
	rc = tok_decode(t, e.ids, e.n, TOK_DEC_KEEP_SPECIAL, &out, &olen, &cap, &err);
	T_OK(rc == 0 && !strcmp(out, "<s>Hello world</s>"), "with special tokens: %s", out);
	{
		int32_t bad = 5000;
		T_OK(tok_decode(t, &bad, 1, 0, &out, &olen, &cap, &err) < 0 &&
		     strstr(err.msg, "5000"), "an id out of range: %s", err.msg);
	}
	tok_enc_free(&e);
	tok_free(t);
	free(out);
}

/* The model's rows against the tokenizer's ids: T5's 28 rows of padding,
 * BART-LS's 343 sentinel rows for span corruption (within 1% of 50K), not
 * another model's tokenizer. */
static void test_spells_model(void)
{
	char dir[4096];
	lc_err err;
	const char *d = getenv("LC_TESTDATA");
	lc_tokenizer *t;
	int32_t n;

	snprintf(dir, sizeof dir, "%s/bart/tokenizer/gpt2", d ? d : "tests/data");
	if (!T_OK((t = tok_open(dir, &err)) != NULL, "%s", err.msg))
		return;
	n = tok_vocab_size(t);
	T_EQ_I(n, 50257);
	T_OK(tok_spells_model(t, n, &err) == 0, "its own size: %s", err.msg);
	T_OK(tok_spells_model(t, n + 128, &err) == 0, "128 rows of padding: %s", err.msg);
	T_OK(tok_spells_model(t, 50608, &err) == 0, "BART-LS's 50608 rows: %s", err.msg);
	T_OK(tok_spells_model(t, 52000, &err) < 0 && strstr(err.msg, "the model's ids go to 51999 but "
	     "the tokenizer spells 50257"), "52000 rows: %s", err.msg);
	T_OK(tok_spells_model(t, 1000, &err) < 0, "fewer rows than ids");
	tok_free(t);
	snprintf(dir, sizeof dir, "%s/bart/tiny_bart", d ? d : "tests/data");
	if (!T_OK((t = tok_open(dir, &err)) != NULL, "%s", err.msg))
		return;
	n = tok_vocab_size(t);
	T_OK(tok_spells_model(t, n + 128, &err) == 0 && tok_spells_model(t, n + 129, &err) < 0,
	     "a small vocabulary: 128 rows");
	tok_free(t);
}

int main(void)
{
	T_RUN(test_locate);
	T_RUN(test_interface);
	T_RUN(test_spells_model);
	return t_done();
}
