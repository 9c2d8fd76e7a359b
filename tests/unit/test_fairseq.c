/* fairseq checkpoints: the tiny ones written like the released ones
 * (tests/gen/make_fairseq_ckpt.py), their arguments translated into
 * config.json keys, their tensors against the safetensors export of the
 * same weights; hostile and broken ones (each refused with a message). */
#include "t.h"

#include <stdint.h>

#include <archive.h>
#include <archive_entry.h>

#include "text/bpe.h"
#include "weights/fairseq.h"
#include "weights/safetensors.h"
#include "weights/torchzip.h"

static char *path_of(const char *name)
{
	return strdup(t_data(name));
}

static tz_file *open_ckpt(const char *name, lc_err *err)
{
	char *p = path_of(name);
	tz_file *f = tz_open_ckpt(p, "model", err);
	free(p);
	return f;
}

static json_t *config_of(const char *name, const char **src, lc_err *err)
{
	tz_file *f = open_ckpt(name, err);
	json_t *c = f ? fs_config(f, name, src, err) : NULL;
	tz_close(f);
	return c;
}

static long long jint(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -999;
}

static const char *jstr(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : "(none)";
}

static void test_bart_config(void)
{
	lc_err err;
	const char *src = NULL;
	json_t *c = config_of("fairseq/bart/model.pt", &src, &err);

	if (!T_OK(c != NULL, "%s", err.msg))
		return;
	T_EQ_S(src, "cfg.model");
	T_EQ_S(jstr(c, "model_type"), "bart");
	T_EQ_I(jint(c, "d_model"), 16);
	T_EQ_I(jint(c, "encoder_layers"), 2);
	T_EQ_I(jint(c, "decoder_layers"), 2);
	T_EQ_I(jint(c, "encoder_attention_heads"), 2);
	T_EQ_I(jint(c, "decoder_attention_heads"), 2);
	T_EQ_I(jint(c, "encoder_ffn_dim"), 32);
	T_EQ_I(jint(c, "decoder_ffn_dim"), 32);
	T_EQ_I(jint(c, "vocab_size"), 1000);
	T_EQ_I(jint(c, "max_position_embeddings"), 128);
	T_EQ_I(jint(c, "max_decoder_position_embeddings"), 128);
	T_EQ_S(jstr(c, "activation_function"), "gelu");
	T_OK(json_is_false(json_object_get(c, "scale_embedding")), "no_scale_embedding true");
	T_OK(json_is_true(json_object_get(c, "tie_word_embeddings")), "tied");
	T_OK(json_is_false(json_object_get(c, "normalize_before")), "post-norm");
	T_OK(json_is_true(json_object_get(c, "layernorm_embedding")), "layernorm_embedding");
	T_EQ_I(jint(c, "pad_token_id"), 1);
	T_EQ_I(jint(c, "bos_token_id"), 0);
	T_EQ_I(jint(c, "eos_token_id"), 2);
	T_EQ_I(jint(c, "decoder_start_token_id"), 2);
	T_OK(!json_object_get(c, "pooling_layers") && !json_object_get(c, "block_size"),
	     "no BART-LS keys for BART");
	{
		/* the older layouts say the same: args (a Namespace), cfg a DictConfig */
		json_t *a = config_of("fairseq/variants/args.pt", &src, &err);
		T_OK(a && json_equal(a, c), "args.pt: %s", a ? "differs" : err.msg);
		T_EQ_S(a ? src : "", "args");
		json_decref(a);
		a = config_of("fairseq/variants/dictconfig.pt", &src, &err);
		T_OK(a && json_equal(a, c), "dictconfig.pt: %s", a ? "differs" : err.msg);
		json_decref(a);
	}
	json_decref(c);
}

static void test_meta(void)
{
	lc_err err;
	tz_file *f = open_ckpt("fairseq/bart/model.pt", &err);
	const json_t *m, *x;

	if (!T_OK(f != NULL, "%s", err.msg))
		return;
	m = tz_meta(f);
	T_OK(m && json_is_null(json_object_get(m, "args")), "args None");
	T_EQ_I(jint(json_object_get(m, "model"), "__state_dict__"), 95);
	x = json_object_get(json_object_get(json_object_get(m, "cfg"), "model"), "encoder_embed_dim");
	T_EQ_I(json_is_integer(x) ? json_integer_value(x) : -1, 16);
	x = json_object_get(json_object_get(json_object_get(m, "cfg"), "optimizer"), "adam_betas");
	T_EQ_S(json_is_string(x) ? json_string_value(x) : "", "(0.9, 0.98)");
	/* numpy scalars stay opaque; the optimizer's tensors are not read */
	x = json_object_get(json_object_get(json_object_get(m, "extra_state"), "best"), "__opaque__");
	T_EQ_S(json_is_string(x) ? json_string_value(x) : "", "numpy.core.multiarray.scalar");
	x = json_object_get(json_object_get(json_object_get(m, "last_optimizer_state"), "state"), "0");
	T_OK(json_is_object(json_object_get(x, "exp_avg")) &&
	     json_object_get(json_object_get(x, "exp_avg"), "__tensor__"), "exp_avg a tensor record");
	T_EQ_I(tz_count(f), 95);
	tz_close(f);
	/* a pytorch_model.bin reader stays strict: the checkpoint is refused */
	{
		char *p = path_of("fairseq/bart/model.pt");
		f = tz_open(p, &err);
		T_OK(!f && strstr(err.msg, "refusing global"), "tz_open: %s", f ? "accepted" : err.msg);
		tz_close(f);
		free(p);
	}
}

/* The checkpoint's tensors are the safetensors export's, byte for byte. */
static void test_tensors(void)
{
	lc_err err;
	char *p = path_of("fairseq/bart_hf/model.safetensors");
	st_file *s = st_open(p, &err);
	tz_file *f = open_ckpt("fairseq/bart/model.pt", &err);
	uint32_t same = 0;

	free(p);
	if (!T_OK(s && f, "%s", err.msg)) {
		st_close(s);
		tz_close(f);
		return;
	}
	for (uint32_t i = 0; i < st_count(s); i++) {
		const st_tensor *a = st_at(s, i);
		const char *names[3] = { a->name + 6, NULL, NULL };
		if (!strcmp(a->name, "model.shared.weight")) {
			names[0] = "encoder.embed_tokens.weight";
			names[1] = "decoder.embed_tokens.weight";
			names[2] = "decoder.output_projection.weight";
		}
		for (int k = 0; k < 3 && names[k]; k++) {
			const st_tensor *b = tz_find(f, names[k]);
			int ok = b && b->dtype == a->dtype && b->rank == a->rank && b->nbytes == a->nbytes &&
			         !memcmp(a->data, b->data, a->nbytes);
			for (uint32_t r = 0; ok && r < a->rank; r++)
				ok = a->dims[r] == b->dims[r];
			same += (uint32_t)ok;
			T_OK(ok, "%s: differs from the export's %s", names[k], a->name);
		}
	}
	T_EQ_I(same, 95 - 2);   /* all but the two version buffers */
	{
		const st_tensor *v = tz_find(f, "encoder.version");
		float x = 0;
		if (T_OK(v && v->dtype == ST_F32 && v->numel == 1, "encoder.version"))
			memcpy(&x, v->data, 4);
		T_OK(x == 3.0f, "encoder.version %g", (double)x);
	}
	st_close(s);
	tz_close(f);
}

static void test_bartls(void)
{
	lc_err err;
	const char *src;
	json_t *c = config_of("fairseq/bartls/model.pt", &src, &err);
	tz_file *f;

	if (T_OK(c != NULL, "%s", err.msg)) {
		T_EQ_S(jstr(c, "model_type"), "bart_ls");
		T_EQ_I(jint(c, "block_size"), 16);
		T_EQ_I(jint(c, "pooling_layers"), 1);
		T_EQ_I(jint(c, "pool_kernel"), 18);
		T_EQ_I(jint(c, "pool_stride"), 12);
		T_EQ_I(jint(c, "pool_padding"), 9);
		T_EQ_I(jint(c, "encoder_layers"), 3);
		T_EQ_I(jint(c, "max_position_embeddings"), 256);
		T_EQ_I(jint(c, "max_decoder_position_embeddings"), 128);
	}
	json_decref(c);
	f = open_ckpt("fairseq/bartls/model.pt", &err);
	if (T_OK(f != NULL, "%s", err.msg)) {
		const st_tensor *t = tz_find(f, "encoder.layers.2.pool_attn.k_proj.weight");
		const st_tensor *e = tz_find(f, "encoder.embed_positions.weight");
		T_EQ_I(tz_count(f), 119);
		T_OK(t && t->dtype == ST_F16 && t->dims[0] == 16 && t->dims[1] == 16, "pool_attn k_proj");
		T_OK(e && e->dims[0] == 258, "positions: 256 + 2 rows");
		T_OK(!tz_find(f, "encoder.layers.1.pool_attn.k_proj.weight"), "layer 1 is a block layer");
		T_OK(tz_find(f, "decoder.output_projection.weight")->data ==
		     tz_find(f, "encoder.embed_tokens.weight")->data, "tied embeddings share bytes");
	}
	tz_close(f);
}

static void refused(const char *name, const char *want)
{
	lc_err err;
	const char *src;
	json_t *c = config_of(name, &src, &err);

	T_OK(!c && strstr(err.msg, want), "%s: wanted \"%s\", got %s", name, want,
	     c ? "accepted" : err.msg);
	json_decref(c);
}

static void test_refused_files(void)
{
	refused("fairseq/variants/evil_system.pt", "refusing global posix.system");
	refused("fairseq/variants/evil_eval.pt", "refusing global __builtin__.eval");
	refused("fairseq/variants/prenorm.pt", "encoder_normalize_before is true");
	refused("fairseq/variants/bs_local.pt", "attention_name \"bs_local\"");
}

/* ------------------------------------------------------------ handmade */

struct member { const char *name; const void *data; size_t len; };

static void *make_zip(const struct member *m, int n, size_t *len)
{
	size_t cap = 1 << 20, used = 0;
	char *buf = malloc(cap);
	struct archive *a = archive_write_new();

	archive_write_set_format_zip(a);
	archive_write_set_options(a, "zip:compression=store");
	archive_write_open_memory(a, buf, cap, &used);
	for (int i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, (la_int64_t)m[i].len);
		archive_write_header(a, e);
		archive_write_data(a, m[i].data, m[i].len);
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	*len = used;
	return buf;
}

/* A tiny pickle assembler (protocol 2 opcodes). */
typedef struct pk { unsigned char b[1 << 16]; size_t n; } pk;
static void op(pk *p, int c) { p->b[p->n++] = (unsigned char)c; }
static void str(pk *p, const char *s)
{
	size_t l = strlen(s);
	op(p, 'X'); op(p, (int)(l & 255)); op(p, (int)(l >> 8)); op(p, 0); op(p, 0);
	memcpy(p->b + p->n, s, l);
	p->n += l;
}
static void glob(pk *p, const char *mod, const char *name)
{
	p->n += (size_t)sprintf((char *)p->b + p->n, "c%s\n%s\n", mod, name);
}
static void intk(pk *p, int v) { op(p, 'K'); op(p, v); }
/* {"w": FloatTensor(storage "0" of `numel`, size [n])} */
static void state_dict(pk *p, int64_t numel, int n)
{
	glob(p, "collections", "OrderedDict");
	op(p, ')'); op(p, 'R');
	op(p, '(');
	str(p, "encoder.embed_tokens.weight");
	glob(p, "torch._utils", "_rebuild_tensor_v2");
	op(p, '(');
	op(p, '(');
	str(p, "storage");
	glob(p, "torch", "FloatStorage");
	str(p, "0");
	str(p, "cpu");
	op(p, 0x8a); op(p, 8);
	for (int i = 0; i < 8; i++)
		op(p, (int)((uint64_t)numel >> (8 * i) & 255));
	op(p, 't');
	op(p, 'Q');
	intk(p, 0);
	intk(p, 4); intk(p, n); op(p, 0x86);
	intk(p, n); intk(p, 1); op(p, 0x86);
	op(p, 0x89);
	glob(p, "collections", "OrderedDict");
	op(p, ')'); op(p, 'R');
	op(p, 't');
	op(p, 'R');
	op(p, 'u');
}
/* argparse.Namespace with the BART arguments; `extra` is one more
 * key (its value pushed by the callback) */
static void namespace(pk *p, const char *extra, void (*val)(pk *))
{
	static const char *const k[] = { "encoder_embed_dim", "encoder_layers", "decoder_layers",
	                                 "encoder_attention_heads", "decoder_attention_heads",
	                                 "encoder_ffn_embed_dim", "decoder_ffn_embed_dim",
	                                 "max_source_positions", "max_target_positions" };
	static const int v[] = { 2, 1, 1, 1, 1, 4, 4, 8, 8 };

	glob(p, "argparse", "Namespace");
	op(p, ')');
	op(p, 0x81);
	op(p, '}');
	op(p, '(');
	str(p, "arch");
	str(p, "bart_large");
	for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
		str(p, k[i]);
		intk(p, v[i]);
	}
	str(p, "layernorm_embedding");
	op(p, 0x88);
	str(p, "share_all_embeddings");
	op(p, 0x88);
	if (extra) {
		str(p, extra);
		val(p);
	}
	op(p, 'u');
	op(p, 'b');
}

static float stor[32];

static tz_file *try(pk *p, size_t slen, lc_err *err)
{
	struct member m[2] = { { "archive/data.pkl", p->b, p->n }, { "archive/data/0", stor, slen } };
	size_t zl;
	void *z = make_zip(m, 2, &zl);
	tz_file *f = tz_parse_ckpt(z, zl, "t.pt", "model", err);
	free(z);
	return f;
}

/* {"args": Namespace(...), "model": state dict} */
static void ckpt(pk *p, const char *extra, void (*val)(pk *), int64_t numel)
{
	p->n = 0;
	op(p, 0x80); op(p, 2);
	op(p, '}');
	op(p, '(');
	str(p, "args");
	namespace(p, extra, val);
	str(p, "model");
	state_dict(p, numel, 2);
	op(p, 'u');
	op(p, '.');
}

static void v_str(pk *p) { str(p, "sixteen"); }
static void v_enum(pk *p)
{
	glob(p, "fairseq.dataclass.constants", "ChoiceEnum");
	str(p, "gelu");
	op(p, 0x85);
	op(p, 'R');
}
static void v_true(pk *p) { op(p, 0x88); }
static void v_deep(pk *p)
{
	for (int i = 0; i < 100; i++)
		op(p, ']');
	for (int i = 0; i < 99; i++)
		op(p, 'a');
}
/* 2^40 shared references: [x, x] nested 40 times through the memo */
static void v_wide(pk *p)
{
	op(p, 'N');
	for (int i = 0; i < 40; i++) {
		op(p, 'q'); op(p, i);
		op(p, 0x85);           /* (x,) */
		op(p, 'h'); op(p, i);  /* x again */
		op(p, 0x85);
		op(p, 0x86);           /* ((x,), (x,)) */
	}
}

static void test_handmade(void)
{
	pk *p = malloc(sizeof *p);
	lc_err err;
	tz_file *f;
	json_t *c;
	const char *src;

	ckpt(p, NULL, NULL, 8);
	f = try(p, 32, &err);
	if (T_OK(f != NULL, "%s", err.msg)) {
		c = fs_config(f, "t.pt", &src, &err);
		T_OK(c && jint(c, "vocab_size") == 4 && jint(c, "d_model") == 2, "tiny: %s",
		     c ? "wrong" : err.msg);
		T_EQ_S(src, "args");
		json_decref(c);
		tz_close(f);
	}
#define CFG_FAILS(extra, val, want) do { \
	ckpt(p, extra, val, 8); \
	f = try(p, 32, &err); \
	c = f ? fs_config(f, "t.pt", &src, &err) : NULL; \
	T_OK(!c && strstr(err.msg, want), "%s: wanted \"%s\", got %s", extra, want, \
	     c ? "accepted" : err.msg); \
	json_decref(c); \
	tz_close(f); } while (0)
	CFG_FAILS("encoder_embed_dim", v_str, "args.encoder_embed_dim: not an integer");
	CFG_FAILS("activation_fn", v_enum, "fairseq.dataclass.constants.ChoiceEnum object");
	CFG_FAILS("decoder_normalize_before", v_true, "decoder_normalize_before is true");
	CFG_FAILS("no_token_positional_embeddings", v_true, "no_token_positional_embeddings is true");
	CFG_FAILS("top_down", v_true, "top_down is true");
	CFG_FAILS("deep", v_deep, "nested too deep or too large");
	CFG_FAILS("wide", v_wide, "nested too deep or too large");
	/* absurd sizes: a storage longer than its bytes, an element count past 2^62 */
	ckpt(p, NULL, NULL, (int64_t)1 << 62);
	f = try(p, 32, &err);
	T_OK(!f && strstr(err.msg, "shorter than declared"), "huge storage: %s",
	     f ? "accepted" : err.msg);
	tz_close(f);
	ckpt(p, NULL, NULL, 8);
	f = try(p, 8, &err);
	T_OK(!f && strstr(err.msg, "shorter than declared"), "short storage: %s",
	     f ? "accepted" : err.msg);
	tz_close(f);
	/* no "model", a root that is not a dict */
	p->n = 0;
	op(p, 0x80); op(p, 2); op(p, '}'); str(p, "args"); op(p, 'N'); op(p, 's'); op(p, '.');
	f = try(p, 32, &err);
	T_OK(!f && strstr(err.msg, "has no \"model\""), "no model: %s", f ? "accepted" : err.msg);
	tz_close(f);
	p->n = 0;
	op(p, 0x80); op(p, 2); op(p, ']'); op(p, '.');
	f = try(p, 32, &err);
	T_OK(!f && strstr(err.msg, "not a checkpoint"), "a list: %s", f ? "accepted" : err.msg);
	tz_close(f);
	/* globals outside the list, even as mere values */
	p->n = 0;
	op(p, 0x80); op(p, 2); op(p, '}'); str(p, "x"); glob(p, "subprocess", "Popen"); op(p, 's');
	op(p, '.');
	f = try(p, 32, &err);
	T_OK(!f && strstr(err.msg, "refusing global subprocess.Popen"), "Popen: %s",
	     f ? "accepted" : err.msg);
	tz_close(f);
	p->n = 0;
	op(p, 0x80); op(p, 2); op(p, '}'); str(p, "x"); glob(p, "builtins", "getattr"); op(p, 's');
	op(p, '.');
	f = try(p, 32, &err);
	T_OK(!f && strstr(err.msg, "refusing global builtins.getattr"), "getattr: %s",
	     f ? "accepted" : err.msg);
	tz_close(f);
	free(p);
}

/* Every cut of a real checkpoint is refused with a message, none crashes. */
static void test_truncated(void)
{
	size_t len = 0, step;
	char *p = path_of("fairseq/bartls/model.pt");
	unsigned char *buf = t_slurp(p, &len);
	int refused = 0, cuts = 0;

	free(p);
	if (!T_OK(buf != NULL, "read bartls/model.pt"))
		return;
	step = len / 97 + 1;
	for (size_t cut = 0; cut < len; cut += step) {
		lc_err err;
		tz_file *f = tz_parse_ckpt(buf, cut, "cut.pt", "model", &err);
		cuts++;
		if (!f && err.msg[0])
			refused++;
		tz_close(f);
	}
	T_EQ_I(refused, cuts);
	free(buf);
}

/* ------------------------------------------------------------ dict.txt */

/* GPT-2-style files: bytes a b c, space; merges a b, then "ab" c */
static const char dvocab[] = "{\"a\": 0, \"b\": 1, \"c\": 2, \"\\u0120\": 3, \"ab\": 4, "
                             "\"abc\": 5, \"\\u0120a\": 6}";
static const char dmerges[] = "#version: 0.2\na b\nab c\n\xc4\xa0 a\n";

static bpe_model *dict_model(const char *dict, lc_err *err)
{
	bpe_files f;

	memset(&f, 0, sizeof f);
	f.vocab = dvocab;
	f.vocab_len = sizeof dvocab - 1;
	f.merges = dmerges;
	f.merges_len = sizeof dmerges - 1;
	f.dict = dict;
	f.dict_len = strlen(dict);
	f.label = "dict";
	return bpe_load(&f, err);
}

static const char *ids_of(bpe_model *m, const char *text, unsigned flags)
{
	static char buf[256];
	bpe_enc e = { 0 };
	lc_err err;
	size_t o = 0;

	buf[0] = 0;
	if (bpe_encode(m, text, strlen(text), flags, &e, &err) < 0)
		snprintf(buf, sizeof buf, "error: %s", err.msg);
	for (size_t i = 0; i < e.n && o < sizeof buf - 16; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%d", i ? " " : "", (int)e.ids[i]);
	bpe_enc_free(&e);
	return buf;
}

static const char *text_of(bpe_model *m, const int32_t *ids, size_t n, unsigned flags)
{
	static char *out;
	static size_t cap;
	size_t len;
	lc_err err;

	if (bpe_decode(m, ids, n, flags, &out, &len, &cap, &err) < 0)
		return "error";
	return out;
}

static void test_dict(void)
{
	lc_err err;
	bpe_model *m;

	/* ids: 4 = GPT-2 5 ("abc"), 5 = GPT-2 0 ("a"), 6 = madeupword0000, 7 = <mask> */
	m = dict_model("5 100\n0 50\nmadeupword0000 0\n", &err);
	if (T_OK(m != NULL, "%s", err.msg)) {
		static const int32_t d[] = { 0, 4, 6, 3, 7, 1, 2 };
		T_EQ_I(bpe_vocab_size(m), 8);
		T_EQ_I(bpe_mask_id(m), 7);
		T_EQ_S(ids_of(m, "abc a", BPE_ENC_SPECIAL), "0 4 3 2");      /* " a" (GPT-2 6): <unk> */
		T_EQ_S(ids_of(m, "a", BPE_ENC_SPECIAL | BPE_ENC_NO_EOS), "0 5");
		T_EQ_S(ids_of(m, "abc", 0), "4");
		T_EQ_S(text_of(m, d, 7, BPE_DEC_SKIP_SPECIAL), "abcmadeupword0000<unk><mask>");
		T_EQ_S(text_of(m, d, 7, 0), "<s>abcmadeupword0000<unk><mask><pad></s>");
		bpe_free(m);
	}
	/* #fairseq:overwrite gives the symbol a new id, the old row stays */
	m = dict_model("5 100\n0 50\n5 3 #fairseq:overwrite\n<mask> 1\n", &err);
	if (T_OK(m != NULL, "%s", err.msg)) {
		static const int32_t d[] = { 4, 6 };
		T_EQ_S(ids_of(m, "abc", 0), "6");
		T_EQ_I(bpe_mask_id(m), 7);                 /* listed: not added again */
		T_EQ_I(bpe_vocab_size(m), 8);
		T_EQ_S(text_of(m, d, 2, BPE_DEC_SKIP_SPECIAL), "abcabc");
		bpe_free(m);
	}
	/* a symbol with spaces, counts with a sign */
	m = dict_model("x y +3\n0 -1\n", &err);
	if (T_OK(m != NULL, "%s", err.msg)) {
		T_EQ_S(ids_of(m, "a", 0), "5");
		bpe_free(m);
	}
#define DICT_FAILS(d, want) do { m = dict_model(d, &err); \
	T_OK(!m && strstr(err.msg, want), "%s: got %s", want, m ? "a model" : err.msg); \
	bpe_free(m); } while (0)
	DICT_FAILS("5 100\n5 3\n", "line 2: \"5\" appears twice");
	DICT_FAILS("5 x\n", "line 1: the count \"x\" is not an integer");
	DICT_FAILS("5 100\n\n0 1\n", "line 2: expected");
	DICT_FAILS("justone\n", "line 1: expected");
	DICT_FAILS("5 #fairseq:overwrite\n", "line 1: expected");
}

int main(void)
{
	T_RUN(test_dict);
	T_RUN(test_bart_config);
	T_RUN(test_meta);
	T_RUN(test_tensors);
	T_RUN(test_bartls);
	T_RUN(test_refused_files);
	T_RUN(test_handmade);
	T_RUN(test_truncated);
	return t_done();
}
