#include "weights/fairseq.h"

#include <stdio.h>
#include <string.h>

typedef struct tr {
	const json_t *a;          /* the arguments */
	const char *label, *src;
	lc_err *err;
} tr;

/* "what" of an opaque value, for messages */
static const char *opaque(const json_t *v)
{
	const json_t *o = json_object_get(v, "__opaque__");
	return json_is_string(o) ? json_string_value(o) : NULL;
}

static int bad(tr *t, const char *key, const json_t *v, const char *want)
{
	if (v && opaque(v))
		return lc_fail(t->err, "%s: %s.%s is a %s object, not %s", t->label, t->src, key,
		               opaque(v), want);
	return lc_fail(t->err, "%s: %s.%s: %s %s", t->label, t->src, key,
	               v ? "not" : "missing; lc needs", want);
}

/* Each: 0 and *out, else -1 and err. def < 0 (or NULL): required. */
static int get_int(tr *t, const char *key, int def, int lo, int hi, int *out)
{
	const json_t *v = json_object_get(t->a, key);

	if (!v && def >= 0) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		char want[64];
		snprintf(want, sizeof want, "an integer in [%d, %d]", lo, hi);
		return bad(t, key, v, want);
	}
	*out = (int)json_integer_value(v);
	return 0;
}

static int get_bool(tr *t, const char *key, int def, int *out)
{
	const json_t *v = json_object_get(t->a, key);

	if ((!v || json_is_null(v)) && def >= 0) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return bad(t, key, v, "true or false");
	*out = json_is_true(v);
	return 0;
}

static int get_str(tr *t, const char *key, const char *def, const char **out)
{
	const json_t *v = json_object_get(t->a, key);

	if ((!v || json_is_null(v)) && def) {
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return bad(t, key, v, "a string");
	*out = json_string_value(v);
	return 0;
}

/* A boolean argument that must have one value for lc to run the model. */
static int need_bool(tr *t, const char *key, int def, int want, const char *why)
{
	int v;

	if (get_bool(t, key, def, &v) < 0)
		return -1;
	if (v != want)
		return lc_fail(t->err, "%s: %s.%s is %s: %s", t->label, t->src, key,
		               v ? "true" : "false", why);
	return 0;
}

/* The arguments: cfg.model, else args. */
static const json_t *find_args(const json_t *meta, const char **src)
{
	const json_t *cfg = json_object_get(meta, "cfg"), *m = json_object_get(cfg, "model");
	const json_t *a = json_object_get(meta, "args");

	if (json_is_object(m) && !opaque(m)) {
		*src = "cfg.model";
		return m;
	}
	if (json_is_object(a) && !opaque(a)) {
		*src = "args";
		return a;
	}
	return NULL;
}

static int set(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

json_t *fs_config(const tz_file *f, const char *label, const char **srcp, lc_err *err)
{
	const json_t *meta = tz_meta(f);
	const st_tensor *emb;
	tr t = { NULL, label, "", err };
	const char *arch, *act, *lcact = NULL;
	int d, dd, din, dout, el, dl, eh, dh, ef, df, ms, mt, noscale, tie, shareall, pool = 0,
	    xf = 0, enb, dnb, lne, block = 1024;
	json_t *c = NULL;

	if (!meta) {
		lc_fail(err, "%s: not opened as a checkpoint", label);
		return NULL;
	}
	if (!(t.a = find_args(meta, &t.src))) {
		const json_t *m = json_object_get(json_object_get(meta, "cfg"), "model");
		if (opaque(m) || opaque(json_object_get(meta, "args")))
			lc_fail(err, "%s: the model's arguments are a %s object lc cannot read", label,
			        opaque(m) ? opaque(m) : opaque(json_object_get(meta, "args")));
		else
			lc_fail(err, "%s: no model arguments (neither cfg.model nor args): not a fairseq "
			        "checkpoint lc can read", label);
		return NULL;
	}
	if (srcp)
		*srcp = t.src;
	/* legacy Namespaces say arch, hydra configs _name */
	if (get_str(&t, json_object_get(t.a, "arch") ? "arch" : "_name", NULL, &arch) < 0)
		return NULL;
	if (strncmp(arch, "bart", 4)) {
		lc_fail(err, "%s: %s.arch \"%s\" is not a BART architecture (lc reads fairseq's BART "
		        "and BART-LS checkpoints)", label, t.src, arch);
		return NULL;
	}
	if (get_int(&t, "encoder_embed_dim", -1, 1, 1 << 16, &d) < 0 ||
	    get_int(&t, "decoder_embed_dim", d, 1, 1 << 16, &dd) < 0 ||
	    get_int(&t, "decoder_input_dim", d, 1, 1 << 16, &din) < 0 ||
	    get_int(&t, "decoder_output_dim", d, 1, 1 << 16, &dout) < 0 ||
	    get_int(&t, "encoder_layers", -1, 0, 1024, &el) < 0 ||
	    get_int(&t, "decoder_layers", -1, 0, 1024, &dl) < 0 ||
	    get_int(&t, "encoder_attention_heads", -1, 1, 1024, &eh) < 0 ||
	    get_int(&t, "decoder_attention_heads", -1, 1, 1024, &dh) < 0 ||
	    get_int(&t, "encoder_ffn_embed_dim", -1, 1, 1 << 20, &ef) < 0 ||
	    get_int(&t, "decoder_ffn_embed_dim", -1, 1, 1 << 20, &df) < 0 ||
	    get_int(&t, "max_source_positions", -1, 1, 1 << 24, &ms) < 0 ||
	    get_int(&t, "max_target_positions", -1, 1, 1 << 24, &mt) < 0 ||
	    get_int(&t, "pooling_layers", 0, 0, 1024, &pool) < 0 ||
	    get_bool(&t, "use_xformers", 0, &xf) < 0 ||
	    get_bool(&t, "no_scale_embedding", 0, &noscale) < 0 ||
	    get_bool(&t, "share_all_embeddings", 0, &shareall) < 0 ||
	    get_bool(&t, "share_decoder_input_output_embed", shareall, &tie) < 0 ||
	    get_bool(&t, "encoder_normalize_before", 0, &enb) < 0 ||
	    get_bool(&t, "decoder_normalize_before", 0, &dnb) < 0 ||
	    get_bool(&t, "layernorm_embedding", 0, &lne) < 0 ||
	    get_str(&t, "activation_fn", "relu", &act) < 0)
		return NULL;
	tie = tie || shareall;   /* share_all_embeddings ties the output too */
	if (dd != d || din != d || dout != d) {
		lc_fail(err, "%s: %s: decoder_embed_dim %d, decoder_input_dim %d, decoder_output_dim %d "
		        "differ from encoder_embed_dim %d (lc's BART has one width)", label, t.src, dd,
		        din, dout, d);
		return NULL;
	}
	if (enb || dnb) {
		lc_fail(err, "%s: %s.%s_normalize_before is true: pre-norm layers (mBART-style) are "
		        "not BART's, which lc runs", label, t.src, enb ? "encoder" : "decoder");
		return NULL;
	}
	if (need_bool(&t, "layernorm_embedding", 0, 1, "lc's BART has the embedding LayerNorm") < 0 ||
	    need_bool(&t, "encoder_learned_pos", 1, 1, "sinusoidal positions are not BART's") < 0 ||
	    need_bool(&t, "decoder_learned_pos", 1, 1, "sinusoidal positions are not BART's") < 0 ||
	    need_bool(&t, "no_token_positional_embeddings", 0, 0, "BART has positions") < 0 ||
	    need_bool(&t, "share_all_embeddings", 1, 1,
	              "separate encoder and decoder embeddings; lc's BART shares one") < 0 ||
	    need_bool(&t, "alibi", 0, 0, "ALiBi positions are not BART's") < 0 ||
	    need_bool(&t, "block_attention", 0, 0, "the BlockTransformerEncoder is not BART-LS") < 0 ||
	    need_bool(&t, "top_down", 0, 0, "the top-down encoder is not BART-LS") < 0 ||
	    need_bool(&t, "no_cross_attention", 0, 0, "the decoder has cross-attention") < 0 ||
	    need_bool(&t, "cross_self_attention", 0, 0, "not BART's decoder") < 0)
		return NULL;
	{
		const json_t *v = json_object_get(t.a, "adaptive_softmax_cutoff");
		if (v && !json_is_null(v)) {
			lc_fail(err, "%s: %s.adaptive_softmax_cutoff is set: an adaptive softmax is not "
			        "BART's", label, t.src);
			return NULL;
		}
	}
	if (!strcmp(act, "gelu") || !strcmp(act, "relu"))
		lcact = act;
	else if (!strcmp(act, "gelu_accurate") || !strcmp(act, "gelu_fast"))
		lcact = "gelu_new";   /* fairseq's tanh approximation */
	else if (!strcmp(act, "swish"))
		lcact = "silu";
	if (!lcact) {
		lc_fail(err, "%s: %s.activation_fn \"%s\" is not one lc has (gelu, gelu_accurate, "
		        "gelu_fast, relu, swish)", label, t.src, act);
		return NULL;
	}
	if (pool > el) {
		lc_fail(err, "%s: %s.pooling_layers %d is more than encoder_layers %d", label, t.src,
		        pool, el);
		return NULL;
	}
	if (pool > 0 || xf) {
		const char *name, *xc;
		json_t *x;
		json_error_t je;
		if (get_str(&t, "attention_name", "block_noglobal", &name) < 0 ||
		    get_str(&t, "xformer_config", "{}", &xc) < 0)
			return NULL;
		if (strcmp(name, "block_noglobal")) {
			lc_fail(err, "%s: %s.attention_name \"%s\": lc's BART-LS runs block_noglobal only",
			        label, t.src, name);
			return NULL;
		}
		if (!(x = json_loads(xc, JSON_REJECT_DUPLICATES, &je)) || !json_is_object(x)) {
			lc_fail(err, "%s: %s.xformer_config is not a JSON object: %s", label, t.src,
			        x ? "another value" : je.text);
			json_decref(x);
			return NULL;
		}
		if (json_object_get(x, "block_size")) {
			const json_t *b = json_object_get(x, "block_size");
			if (!json_is_integer(b) || json_integer_value(b) < 1 ||
			    json_integer_value(b) > (1 << 20)) {
				lc_fail(err, "%s: %s.xformer_config: block_size is not an integer in [1, %d]",
				        label, t.src, 1 << 20);
				json_decref(x);
				return NULL;
			}
			block = (int)json_integer_value(b);
		}
		json_decref(x);
	} else if (mt != ms) {
		lc_fail(err, "%s: %s: max_source_positions %d and max_target_positions %d differ "
		        "(lc's BART has one position table size)", label, t.src, ms, mt);
		return NULL;
	}
	if (!(emb = tz_find(f, "encoder.embed_tokens.weight")) &&
	    !(emb = tz_find(f, "decoder.embed_tokens.weight"))) {
		lc_fail(err, "%s: the state dict has no encoder.embed_tokens.weight", label);
		return NULL;
	}
	if (emb->rank != 2 || emb->dims[1] != (uint64_t)d || emb->dims[0] < 4 ||
	    emb->dims[0] > (1u << 24)) {
		lc_fail(err, "%s: encoder.embed_tokens.weight is not [vocabulary >= 4, %d]", label, d);
		return NULL;
	}
	if (!(c = json_object()))
		goto oom;
	if (set(c, "model_type", json_string(pool > 0 || xf ? "bart_ls" : "bart")) ||
	    set(c, "d_model", json_integer(d)) ||
	    set(c, "encoder_layers", json_integer(el)) ||
	    set(c, "decoder_layers", json_integer(dl)) ||
	    set(c, "encoder_attention_heads", json_integer(eh)) ||
	    set(c, "decoder_attention_heads", json_integer(dh)) ||
	    set(c, "encoder_ffn_dim", json_integer(ef)) ||
	    set(c, "decoder_ffn_dim", json_integer(df)) ||
	    set(c, "vocab_size", json_integer((json_int_t)emb->dims[0])) ||
	    set(c, "max_position_embeddings", json_integer(ms)) ||
	    set(c, "max_decoder_position_embeddings", json_integer(mt)) ||
	    set(c, "activation_function", json_string(lcact)) ||
	    set(c, "scale_embedding", json_boolean(!noscale)) ||
	    set(c, "pad_token_id", json_integer(1)) ||
	    set(c, "bos_token_id", json_integer(0)) ||
	    set(c, "eos_token_id", json_integer(2)) ||
	    set(c, "decoder_start_token_id", json_integer(2)) ||
	    set(c, "tie_word_embeddings", json_boolean(tie)) ||
	    set(c, "normalize_before", json_boolean(enb)) ||
	    set(c, "layernorm_embedding", json_boolean(lne)))
		goto oom;
	if ((pool > 0 || xf) &&
	    (set(c, "block_size", json_integer(block)) ||
	     set(c, "pooling_layers", json_integer(pool)) ||
	     set(c, "pool_kernel", json_integer(18)) ||
	     set(c, "pool_stride", json_integer(12)) ||
	     set(c, "pool_padding", json_integer(9))))
		goto oom;
	return c;
oom:
	json_decref(c);
	lc_fail(err, "%s: out of memory", label);
	return NULL;
}
