#include "text/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/fileio.h"
#include "base/share.h"
#include "text/bpe.h"
#include "text/spm.h"

struct lc_tokenizer {
	enum tok_kind kind;
	spm_model *spm;
	bpe_model *bpe;
	char path[4096];
};

/* The encoder's own state behind a tok_enc. */
typedef struct enc_impl {
	spm_enc s;
	bpe_enc b;
} enc_impl;

static int is_dir(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A file is there (a device or FIFO too: its reader refuses it by name,
 * lc_file_kind). */
static int is_file(const char *p)
{
	return lc_file_kind(p) != LC_FILE_NONE;
}

static int ends(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static lc_tokenizer *load_spm(const char *file, lc_err *err)
{
	lc_tokenizer *t = calloc(1, sizeof *t);

	if (!t) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	t->kind = TOK_SPM;
	snprintf(t->path, sizeof t->path, "%s", file);
	if (!(t->spm = spm_load_file(file, err))) {
		free(t);
		return NULL;
	}
	return t;
}

static lc_tokenizer *load_bpe(const char *dir, lc_err *err)
{
	lc_tokenizer *t = calloc(1, sizeof *t);

	if (!t) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	t->kind = TOK_BPE;
	snprintf(t->path, sizeof t->path, "%s", dir);
	if (!(t->bpe = bpe_load_dir(dir, err))) {
		free(t);
		return NULL;
	}
	return t;
}

/* T5's sentinels are checked by lc-encode when used. */
int32_t tok_model_rows(const lc_tokenizer *t)
{
	int32_t n;

	if (t->spm)
		return spm_npieces(t->spm);
	n = bpe_vocab_size(t->bpe);
	while (n > 0 && bpe_is_special(t->bpe, n - 1))
		n--;
	return n;
}

int tok_fits_model(const lc_tokenizer *t, int64_t vocab_size, lc_err *err)
{
	if (tok_model_rows(t) <= vocab_size)
		return 0;
	return lc_fail(err, "the tokenizer's ids go to %ld but the model's vocab_size is %lld: they "
	               "are not one model's", (long)tok_model_rows(t) - 1, (long long)vocab_size);
}

int tok_spells_model(const lc_tokenizer *t, int64_t vocab_size, lc_err *err)
{
	if (tok_fits_model(t, vocab_size, err) < 0)
		return -1;
	if ((int64_t)tok_vocab_size(t) + TOK_ROW_PAD >= vocab_size ||
	    (int64_t)tok_vocab_size(t) + vocab_size / 100 >= vocab_size)
		return 0;
	return lc_fail(err, "the model's ids go to %lld but the tokenizer spells %ld: they are not "
	               "one model's", (long long)vocab_size - 1, (long)tok_vocab_size(t));
}

/* A model directory's tokenizer and config.json must be one model's. */
static lc_tokenizer *check_config(lc_tokenizer *t, const char *dir, lc_err *err)
{
	char p[4096];
	json_t *root, *v;
	json_error_t je;

	snprintf(p, sizeof p, "%s/config.json", dir);
	if (!t || !is_file(p))
		return t;
	if (lc_small_file(p, LC_MAX_JSON_FILE, "config file", err) < 0) {
		tok_free(t);
		return NULL;
	}
	if (!(root = json_load_file(p, JSON_REJECT_DUPLICATES, &je))) {
		lc_fail(err, "%s: %s (line %d)", p, je.text, je.line);
		tok_free(t);
		return NULL;
	}
	v = json_object_get(root, "vocab_size");
	if (json_is_integer(v) && tok_fits_model(t, json_integer_value(v), err) < 0) {
		lc_prefix(err, "%s", dir);
		tok_free(t);
		t = NULL;
	}
	json_decref(root);
	return t;
}

lc_tokenizer *tok_open_dir(const char *dir, int *none, lc_err *err)
{
	char p[4096], parent[4096];

	*none = 0;
	/* a model given as its weight file (-m model.pt): the files beside it */
	if (is_file(dir)) {
		lc_parent_dir(dir, parent, sizeof parent);
		dir = parent;
	}
	if ((size_t)snprintf(p, sizeof p, "%s/spiece.model", dir) >= sizeof p) {
		lc_fail(err, "%s: path too long", dir);
		return NULL;
	}
	if (is_file(p))
		return check_config(load_spm(p, err), dir, err);
	if (bpe_dir_has(dir))
		return check_config(load_bpe(dir, err), dir, err);
	*none = 1;
	lc_fail(err, "%s: no tokenizer (spiece.model, vocab.json + merges.txt, tokenizer.json, or "
	        "fairseq's dict.txt + encoder.json + vocab.bpe)", dir);
	return NULL;
}

/* path: a directory or a file, named `what` in messages. */
static lc_tokenizer *open_path(const char *path, const char *what, lc_err *err)
{
	int none;
	lc_tokenizer *t;
	char dir[4096];                 /* the file's directory */

	if (is_dir(path)) {
		if (!(t = tok_open_dir(path, &none, err)) && none)
			lc_prefix(err, "tokenizer (%s)", what);
		return t;
	}
	if (!is_file(path)) {
		struct stat st;
		int e = stat(path, &st) == 0 ? 0 : errno;
		lc_fail(err, "tokenizer model %s (%s): %s", path, what,
		        e ? strerror(e) : "not a file or directory");
		return NULL;
	}
	lc_parent_dir(path, dir, sizeof dir);
	if (ends(path, ".json") || ends(path, "merges.txt") || ends(path, "vocab.bpe") ||
	    ends(path, "dict.txt"))
		return load_bpe(dir, err);
	/* a model's weight file (a fairseq checkpoint given as -m FILE.pt to
	 * every program): the tokenizer files beside it */
	if (ends(path, ".pt") || ends(path, ".bin") || ends(path, ".safetensors")) {
		if (!(t = tok_open_dir(path, &none, err)) && none)
			lc_prefix(err, "tokenizer (%s)", what);
		return t;
	}
	return load_spm(path, err);
}

lc_tokenizer *tok_open_model(const char *opt, const char *flag, const char *dir, int *none,
                             lc_err *err)
{
	lc_tokenizer *t;

	*none = 0;
	if (opt)
		return tok_open_as(opt, flag, err);
	if ((t = tok_open_dir(dir, none, err)) || !*none)
		return t;
	return tok_open_as(NULL, flag, err);     /* *none stays 1: err says why there is none */
}

lc_tokenizer *tok_open_as(const char *opt, const char *flag, lc_err *err)
{
	const char *env;
	char tmp[4096], why[256], from_opt[64];
	enum share_from from;

	if (opt && *opt) {
		snprintf(from_opt, sizeof from_opt, "from %s", flag);
		return open_path(opt, from_opt, err);
	}
	if ((env = getenv("LC_TOKENIZER")) && *env)
		return open_path(env, "from $LC_TOKENIZER", err);
	share_path("spiece.model", tmp, sizeof tmp, &from);
	snprintf(why, sizeof why, "the default, %s; use %s or $LC_TOKENIZER", share_from_name(from),
	         flag);
	return open_path(tmp, why, err);
}

lc_tokenizer *tok_open(const char *opt, lc_err *err)
{
	return tok_open_as(opt, "-m", err);
}

void tok_free(lc_tokenizer *t)
{
	if (!t)
		return;
	spm_free(t->spm);
	bpe_free(t->bpe);
	free(t);
}

enum tok_kind tok_kind(const lc_tokenizer *t) { return t->kind; }
const char *tok_kind_name(const lc_tokenizer *t) { return t->kind == TOK_SPM ? "sentencepiece" : "bpe"; }
const char *tok_path(const lc_tokenizer *t) { return t->path; }

const char *tok_fingerprint(const lc_tokenizer *t)
{
	return t->spm ? spm_fingerprint(t->spm) : bpe_fingerprint(t->bpe);
}

int32_t tok_vocab_size(const lc_tokenizer *t)
{
	return t->spm ? spm_vocab_size(t->spm) : bpe_vocab_size(t->bpe);
}

int32_t tok_eos_id(const lc_tokenizer *t)
{
	if (t->spm)
		return spm_eos_id(t->spm);
	return bpe_wraps(t->bpe) ? bpe_sep_id(t->bpe) : bpe_eos_id(t->bpe);
}

int tok_adds_eos(const lc_tokenizer *t, unsigned flags)
{
	if (!(flags & TOK_ENC_SPECIAL) || (flags & TOK_ENC_NO_EOS))
		return 0;
	return t->spm ? spm_eos_id(t->spm) >= 0 : bpe_wraps(t->bpe);
}

const char *tok_piece(const lc_tokenizer *t, int32_t id, size_t *len)
{
	return t->spm ? spm_piece(t->spm, id, len) : bpe_token(t->bpe, id, len);
}

int tok_encode(lc_tokenizer *t, const char *text, size_t len, unsigned flags, tok_enc *e,
               lc_err *err)
{
	enc_impl *x = e->impl;
	int rc;

	if (!x && !(x = e->impl = calloc(1, sizeof *x)))
		return lc_fail(err, "out of memory");
	if (t->spm) {
		unsigned f = ((flags & TOK_ENC_SPECIAL) && !(flags & TOK_ENC_NO_EOS) ? SPM_ENC_EOS : 0) |
		             (flags & TOK_ENC_EXTRA ? SPM_ENC_EXTRA : 0) |
		             (flags & TOK_ENC_PIECES ? SPM_ENC_PIECES : 0);
		rc = spm_encode(t->spm, text, len, f, &x->s, err);
		e->ids = x->s.ids;
		e->n = x->s.n;
		e->pieces = x->s.pieces;
		e->plen = x->s.plen;
	} else {
		unsigned f = (flags & TOK_ENC_SPECIAL ? BPE_ENC_SPECIAL : 0) |
		             (flags & TOK_ENC_NO_EOS ? BPE_ENC_NO_EOS : 0) |
		             (flags & TOK_ENC_PIECES ? BPE_ENC_PIECES : 0) |
		             (flags & TOK_ENC_PREFIX ? BPE_ENC_PREFIX : 0);
		rc = bpe_encode(t->bpe, text, len, f, &x->b, err);
		e->ids = x->b.ids;
		e->n = x->b.n;
		e->pieces = x->b.pieces;
		e->plen = x->b.plen;
	}
	return rc;
}

void tok_enc_free(tok_enc *e)
{
	enc_impl *x = e->impl;

	if (x) {
		spm_enc_free(&x->s);
		bpe_enc_free(&x->b);
		free(x);
	}
	memset(e, 0, sizeof *e);
}

int tok_decode(const lc_tokenizer *t, const int32_t *ids, size_t n, unsigned flags, char **out,
               size_t *outlen, size_t *cap, lc_err *err)
{
	unsigned f = 0;

	if (t->spm)
		return spm_decode(t->spm, ids, n, out, outlen, cap, err);
	if (!(flags & TOK_DEC_KEEP_SPECIAL))
		f |= BPE_DEC_SKIP_SPECIAL;
	if ((flags & TOK_DEC_CLEANUP) || (bpe_cleans_up(t->bpe) && !(flags & TOK_DEC_NO_CLEANUP)))
		f |= BPE_DEC_CLEANUP;
	return bpe_decode(t->bpe, ids, n, f, out, outlen, cap, err);
}
