#include "arch/model.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "weights/safetensors.h"
#include "weights/torchzip.h"

/* One parameter the configuration requires. */
typedef struct entry {
	char name[128];
	uint32_t rank;
	uint64_t dims[4];
	const st_tensor *src;   /* in the weight file */
	float *conv;            /* float32 copy when src is not aligned F32 */
} entry;

struct lc_model {
	char *dir;
	lc_config cfg;
	st_file *st;
	tz_file *tz;
	entry *e;               /* [n] */
	uint32_t n, cap;
	pthread_mutex_t mu;
	uint64_t nparams, nbytes;
	char fp[17];
};

static const char *aliases[] = {
	"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight",
};

/* ------------------------------------------------------------------ config */

static int cfg_int(json_t *root, const char *key, int def, int lo, int hi, int *out,
                   const char *path, lc_err *err)
{
	json_t *v = json_object_get(root, key);

	if (!v || json_is_null(v)) {
		if (def == INT_MIN)
			return lc_fail(err, "%s: \"%s\" is missing", path, key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return lc_fail(err, "%s: \"%s\" must be an integer in [%d, %d]", path, key, lo, hi);
	*out = (int)json_integer_value(v);
	return 0;
}

static int cfg_bool(json_t *root, const char *key, int def, int *out, const char *path,
                    lc_err *err)
{
	json_t *v = json_object_get(root, key);

	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return lc_fail(err, "%s: \"%s\" must be true or false", path, key);
	*out = json_is_true(v);
	return 0;
}

static int parse_config(const char *path, lc_config *c, lc_err *err)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je), *v;
	const char *ffp = "gated-gelu";
	int r = -1;

	memset(c, 0, sizeof *c);
	if (!root)
		return lc_fail(err, "%s: %s (line %d)", path, je.text, je.line);
	if (!json_is_object(root)) {
		lc_fail(err, "%s: not a JSON object", path);
		goto out;
	}
	if (cfg_int(root, "d_model", INT_MIN, 1, 1 << 16, &c->d_model, path, err) ||
	    cfg_int(root, "d_ff", INT_MIN, 1, 1 << 18, &c->d_ff, path, err) ||
	    cfg_int(root, "d_kv", 64, 1, 1 << 16, &c->d_kv, path, err) ||
	    cfg_int(root, "d_state", INT_MIN, 2, 1 << 16, &c->d_state, path, err) ||
	    cfg_int(root, "num_layers", INT_MIN, 0, 1024, &c->num_layers, path, err) ||
	    cfg_int(root, "num_decoder_layers", c->num_layers, 0, 1024, &c->num_decoder_layers, path, err) ||
	    cfg_int(root, "num_heads", 8, 1, 1024, &c->num_heads, path, err) ||
	    cfg_int(root, "num_ssm_heads", 1, 1, 1024, &c->num_ssm_heads, path, err) ||
	    cfg_int(root, "vocab_size", INT_MIN, 1, INT_MAX, &c->vocab_size, path, err) ||
	    cfg_int(root, "relative_attention_num_buckets", 32, 1, 1 << 16, &c->rel_buckets, path, err) ||
	    cfg_int(root, "relative_attention_max_distance", 128, 1, INT_MAX, &c->rel_max_distance, path, err) ||
	    cfg_int(root, "pad_token_id", 0, 0, INT_MAX, &c->pad_id, path, err) ||
	    cfg_int(root, "eos_token_id", 1, 0, INT_MAX, &c->eos_id, path, err) ||
	    cfg_int(root, "decoder_start_token_id", c->pad_id, 0, INT_MAX, &c->decoder_start_id, path, err) ||
	    cfg_bool(root, "bidirectional", 1, &c->bidirectional, path, err) ||
	    cfg_bool(root, "gating", 1, &c->gating, path, err) ||
	    cfg_bool(root, "use_fast_fft_conv", 1, &c->use_fast_fft_conv, path, err) ||
	    cfg_bool(root, "tie_word_embeddings", 1, &c->tie_word_embeddings, path, err))
		goto out;
	if (c->d_state % 2) {
		lc_fail(err, "%s: \"d_state\" must be even (2 x complex modes), not %d", path, c->d_state);
		goto out;
	}
	if (c->num_ssm_heads != 1) {
		lc_fail(err, "%s: num_ssm_heads %d is not supported (only 1, like the authors' "
		        "reference path)", path, c->num_ssm_heads);
		goto out;
	}
	v = json_object_get(root, "layer_norm_epsilon");
	c->eps = 1e-6;
	if (v && !json_is_null(v)) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1) {
			lc_fail(err, "%s: \"layer_norm_epsilon\" must be a number in [0, 1]", path);
			goto out;
		}
		c->eps = json_number_value(v);
	}
	v = json_object_get(root, "feed_forward_proj");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			lc_fail(err, "%s: \"feed_forward_proj\" must be a string", path);
			goto out;
		}
		ffp = json_string_value(v);
	}
	/* LOCOSTConfig: "gated-gelu" means the tanh GELU (gelu_new). */
	c->is_gated_act = strncmp(ffp, "gated-", 6) == 0;
	if (strcmp(ffp, "gated-gelu") == 0)
		snprintf(c->act, sizeof c->act, "gelu_new");
	else
		snprintf(c->act, sizeof c->act, "%s", c->is_gated_act ? ffp + 6 : ffp);
	if (strcmp(c->act, "gelu_new") && strcmp(c->act, "gelu") && strcmp(c->act, "relu") &&
	    strcmp(c->act, "silu") && strcmp(c->act, "swish")) {
		lc_fail(err, "%s: feed_forward_proj \"%s\": unsupported activation", path, ffp);
		goto out;
	}
	r = 0;
out:
	json_decref(root);
	return r;
}

/* ------------------------------------------------------------ expected set */

__attribute__((format(printf, 3, 4)))
static int expect(lc_model *m, const uint64_t *dims4, const char *fmt, ...)
{
	va_list ap;
	entry *e;
	uint32_t r = 0;

	if (m->n == m->cap) {
		uint32_t nc = m->cap ? 2 * m->cap : 64;
		entry *ne = realloc(m->e, nc * sizeof *ne);
		if (!ne)
			return -1;
		m->e = ne;
		m->cap = nc;
	}
	e = &m->e[m->n++];
	memset(e, 0, sizeof *e);
	va_start(ap, fmt);
	vsnprintf(e->name, sizeof e->name, fmt, ap);
	va_end(ap);
	while (r < 4 && dims4[r])
		r++;
	e->rank = r;
	memcpy(e->dims, dims4, sizeof e->dims);
	return 0;
}

#define D1(a) ((const uint64_t[4]){ (a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[4]){ (a), (b), 0, 0 })
#define D3(a, b, c) ((const uint64_t[4]){ (a), (b), (c), 0 })
#define D4(a, b, c, d) ((const uint64_t[4]){ (a), (b), (c), (d) })

static int build_expected(lc_model *m)
{
	const lc_config *c = &m->cfg;
	uint64_t d = (uint64_t)c->d_model, ff = (uint64_t)c->d_ff, n2 = (uint64_t)c->d_state / 2;
	uint64_t inner = (uint64_t)c->num_heads * (uint64_t)c->d_kv;
	int r = 0;

	r |= expect(m, D2((uint64_t)c->vocab_size, d), "shared.weight");
	if (!c->tie_word_embeddings)
		r |= expect(m, D2((uint64_t)c->vocab_size, d), "lm_head.weight");
	for (int i = 0; i < c->num_layers; i++) {
		const char *s = "encoder.block.%d.layer.0.ssm_layer.";
		char p[96];
		snprintf(p, sizeof p, s, i);
		r |= expect(m, D1(d), "encoder.block.%d.layer.0.layer_prenorm.weight", i);
		r |= expect(m, D1(d), "%sD", p);
		if (c->gating) {
			r |= expect(m, D2(d, d), "%sq_proj.weight", p);
			r |= expect(m, D1(d), "%sq_proj.bias", p);
		}
		r |= expect(m, D2(d, d), "%sk_proj.weight", p);
		r |= expect(m, D1(d), "%sk_proj.bias", p);
		r |= expect(m, D1(d), "%skernel.log_dt", p);
		r |= expect(m, D2(d, n2), "%skernel.inv_A_real", p);
		r |= expect(m, D2(d, n2), "%skernel.A_imag", p);
		r |= expect(m, D3(d, n2, 2), "%skernel.B", p);
		r |= expect(m, D4(c->bidirectional ? 2 : 1, d, n2, 2), "%skernel.C", p);
		r |= expect(m, D2(d, d), "%soutput_linear.weight", p);
		r |= expect(m, D1(d), "%soutput_linear.bias", p);
		r |= expect(m, D1(d), "encoder.block.%d.layer.1.layer_norm.weight", i);
		if (c->is_gated_act) {
			r |= expect(m, D2(ff, d), "encoder.block.%d.layer.1.DenseReluDense.wi_0.weight", i);
			r |= expect(m, D2(ff, d), "encoder.block.%d.layer.1.DenseReluDense.wi_1.weight", i);
		} else {
			r |= expect(m, D2(ff, d), "encoder.block.%d.layer.1.DenseReluDense.wi.weight", i);
		}
		r |= expect(m, D2(d, ff), "encoder.block.%d.layer.1.DenseReluDense.wo.weight", i);
	}
	r |= expect(m, D1(d), "encoder.final_layer_norm.weight");
	for (int i = 0; i < c->num_decoder_layers; i++) {
		const char *x = "qkv";
		for (int j = 0; j < 3; j++) {
			r |= expect(m, D2(inner, d), "decoder.block.%d.layer.0.SelfAttention.%c.weight", i, x[j]);
			r |= expect(m, D2(inner, d), "decoder.block.%d.layer.1.EncDecAttention.%c.weight", i, x[j]);
		}
		r |= expect(m, D2(d, inner), "decoder.block.%d.layer.0.SelfAttention.o.weight", i);
		r |= expect(m, D2(d, inner), "decoder.block.%d.layer.1.EncDecAttention.o.weight", i);
		if (i == 0)
			r |= expect(m, D2((uint64_t)c->rel_buckets, (uint64_t)c->num_heads),
			            "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
		for (int j = 0; j < 3; j++)
			r |= expect(m, D1(d), "decoder.block.%d.layer.%d.layer_norm.weight", i, j);
		if (c->is_gated_act) {
			r |= expect(m, D2(ff, d), "decoder.block.%d.layer.2.DenseReluDense.wi_0.weight", i);
			r |= expect(m, D2(ff, d), "decoder.block.%d.layer.2.DenseReluDense.wi_1.weight", i);
		} else {
			r |= expect(m, D2(ff, d), "decoder.block.%d.layer.2.DenseReluDense.wi.weight", i);
		}
		r |= expect(m, D2(d, ff), "decoder.block.%d.layer.2.DenseReluDense.wo.weight", i);
	}
	if (c->num_decoder_layers > 0)
		r |= expect(m, D1(d), "decoder.final_layer_norm.weight");
	return r ? -1 : 0;
}

static entry *find_entry(const lc_model *m, const char *name)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (strcmp(m->e[i].name, name) == 0)
			return &m->e[i];
	return NULL;
}

static int is_alias(const lc_model *m, const char *name)
{
	for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
		if (strcmp(name, aliases[i]) == 0)
			return !(i == 2 && !m->cfg.tie_word_embeddings);
	return 0;
}

static void shape_str(char *buf, size_t n, uint32_t rank, const uint64_t *dims)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, n - o, "[");
	for (uint32_t i = 0; i < rank && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
	if (o < n)
		snprintf(buf + o, n - o, "]");
}

static int same_shape(const st_tensor *t, uint32_t rank, const uint64_t *dims)
{
	if (t->rank != rank)
		return 0;
	for (uint32_t i = 0; i < rank; i++)
		if (t->dims[i] != dims[i])
			return 0;
	return 1;
}

static int float_dtype(enum st_dtype t)
{
	return t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F64;
}

/* Matches the file's tensors against the expected set. */
static int bind(lc_model *m, uint32_t count, const st_tensor *(*at)(const void *, uint32_t),
                const void *file, const char *label, lc_err *err)
{
	const st_tensor *alias_src = NULL;
	char a[96], b[96];
	uint32_t i;

	for (i = 0; i < count; i++) {
		const st_tensor *t = at(file, i);
		entry *e = find_entry(m, t->name);
		if (!e && is_alias(m, t->name)) {
			if (!same_shape(t, 2, m->e[0].dims)) {
				shape_str(a, sizeof a, t->rank, t->dims);
				shape_str(b, sizeof b, 2, m->e[0].dims);
				return lc_fail(err, "%s: tensor \"%s\" has shape %s, the configuration needs %s",
				               label, t->name, a, b);
			}
			if (!alias_src)
				alias_src = t;
			continue;
		}
		if (!e)
			return lc_fail(err, "%s: unexpected tensor \"%s\" (not a parameter of this "
			               "configuration)", label, t->name);
		if (e->src)
			return lc_fail(err, "%s: tensor \"%s\" appears twice", label, t->name);
		if (!same_shape(t, e->rank, e->dims)) {
			shape_str(a, sizeof a, t->rank, t->dims);
			shape_str(b, sizeof b, e->rank, e->dims);
			return lc_fail(err, "%s: tensor \"%s\" has shape %s, the configuration needs %s",
			               label, t->name, a, b);
		}
		e->src = t;
	}
	if (!m->e[0].src && alias_src)
		m->e[0].src = alias_src;   /* shared.weight under an alias name only */
	for (i = 0; i < m->n; i++) {
		if (!m->e[i].src)
			return lc_fail(err, "%s: tensor \"%s\" is missing", label, m->e[i].name);
		if (!float_dtype(m->e[i].src->dtype))
			return lc_fail(err, "%s: tensor \"%s\" has dtype %s (need F32, F16, BF16 or F64)",
			               label, m->e[i].name, st_dtype_name(m->e[i].src->dtype));
	}
	return 0;
}

static const st_tensor *at_st(const void *f, uint32_t i) { return st_at(f, i); }
static const st_tensor *at_tz(const void *f, uint32_t i) { return tz_at(f, i); }

/* A fast 64-bit hash (FNV-style over 8-byte words). */
static uint64_t hash_bytes(uint64_t h, const void *p, uint64_t n)
{
	const unsigned char *s = p;
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

/* A zip archive (pytorch_model.bin) starts with "PK\\3\\4". */
static int is_zip(const char *path)
{
	unsigned char b[4] = { 0 };
	FILE *f = fopen(path, "rb");
	int r = 0;

	if (f) {
		r = fread(b, 1, 4, f) == 4 && b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4;
		fclose(f);
	}
	return r;
}

static int file_exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* dir is a model directory, or one of its weight files (which is then used
 * whatever else the directory holds). */
lc_model *model_open(const char *dir, lc_err *err)
{
	lc_model *m = calloc(1, sizeof *m);
	char *path = NULL, *wfile = NULL;
	size_t plen;
	uint64_t h = 0xcbf29ce484222325ull;
	struct stat sb;

	if (!m) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->mu, NULL);
	if (stat(dir, &sb) < 0) {
		lc_fail(err, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	if (S_ISREG(sb.st_mode)) {
		const char *slash = strrchr(dir, '/');
		if (!(wfile = strdup(dir)))
			goto oom;
		m->dir = slash ? strndup(dir, (size_t)(slash - dir)) : strdup(".");
	} else if (S_ISDIR(sb.st_mode)) {
		m->dir = strdup(dir);
	} else {
		lc_fail(err, "%s: not a directory", dir);
		goto fail;
	}
	if (!m->dir)
		goto oom;
	plen = strlen(m->dir) + 64;
	if (!(path = malloc(plen)))
		goto oom;
	snprintf(path, plen, "%s/config.json", m->dir);
	if (!file_exists(path)) {
		lc_fail(err, "%s: no config.json", m->dir);
		goto fail;
	}
	if (parse_config(path, &m->cfg, err) < 0)
		goto fail;
	{
		FILE *f = fopen(path, "rb");
		char buf[4096];
		size_t got;
		while (f && (got = fread(buf, 1, sizeof buf, f)) > 0)
			h = hash_bytes(h, buf, got);
		if (f)
			fclose(f);
	}
	if (build_expected(m) < 0)
		goto oom;
	if (!wfile) {
		snprintf(path, plen, "%s/model.safetensors", m->dir);
		if (!file_exists(path)) {
			snprintf(path, plen, "%s/pytorch_model.bin", m->dir);
			if (!file_exists(path)) {
				lc_fail(err, "%s: no model.safetensors or pytorch_model.bin", m->dir);
				goto fail;
			}
		}
		if (!(wfile = strdup(path)))
			goto oom;
	}
	if (is_zip(wfile)) {
		if (!(m->tz = tz_open(wfile, err)))
			goto fail;
		if (bind(m, tz_count(m->tz), at_tz, m->tz, wfile, err) < 0)
			goto fail;
	} else {
		if (!(m->st = st_open(wfile, err)))
			goto fail;
		if (bind(m, st_count(m->st), at_st, m->st, wfile, err) < 0)
			goto fail;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		const st_tensor *t = m->e[i].src;
		m->nparams += t->numel;
		m->nbytes += t->nbytes;
		h = hash_bytes(h, m->e[i].name, strlen(m->e[i].name));
		h = hash_bytes(h, t->data, t->nbytes);
	}
	snprintf(m->fp, sizeof m->fp, "%016llx", (unsigned long long)h);
	free(path);
	free(wfile);
	return m;
oom:
	lc_fail(err, "%s: out of memory", dir);
fail:
	free(path);
	free(wfile);
	model_free(m);
	return NULL;
}

const lc_config *model_config(const lc_model *m) { return &m->cfg; }

static float bf16_to_f32(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static float f16_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, mant = h & 1023, u;
	float f;

	if (e == 0) {
		f = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24 */
		return s ? -f : f;
	}
	if (e == 31)
		u = s | 0x7f800000u | (mant << 13);
	else
		u = s | ((e + 112) << 23) | (mant << 13);
	memcpy(&f, &u, 4);
	return f;
}

const float *model_tensor(lc_model *m, const char *name, uint32_t rank,
                          const uint64_t *dims, lc_err *err)
{
	entry *e;
	const st_tensor *t;
	char a[96], b[96];
	const float *r;

	if (is_alias(m, name))
		name = "shared.weight";
	if (!(e = find_entry(m, name))) {
		lc_fail(err, "%s: no parameter \"%s\"", m->dir, name);
		return NULL;
	}
	t = e->src;
	if (!same_shape(t, rank, dims)) {
		shape_str(a, sizeof a, t->rank, t->dims);
		shape_str(b, sizeof b, rank, dims);
		lc_fail(err, "%s: parameter \"%s\" has shape %s, asked for %s", m->dir, name, a, b);
		return NULL;
	}
	if (t->dtype == ST_F32 && ((uintptr_t)t->data % sizeof(float)) == 0)
		return (const float *)(const void *)t->data;
	pthread_mutex_lock(&m->mu);
	if (!e->conv) {
		float *o = malloc((t->numel ? t->numel : 1) * sizeof *o);
		if (o) {
			for (uint64_t i = 0; i < t->numel; i++) {
				const unsigned char *p = t->data;
				switch (t->dtype) {
				case ST_F32: memcpy(&o[i], p + 4 * i, 4); break;
				case ST_F64: { double v; memcpy(&v, p + 8 * i, 8); o[i] = (float)v; } break;
				case ST_BF16: o[i] = bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8)); break;
				case ST_F16: o[i] = f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8)); break;
				default: o[i] = 0; break;
				}
			}
		}
		e->conv = o;
	}
	r = e->conv;
	pthread_mutex_unlock(&m->mu);
	if (!r)
		lc_fail(err, "%s: out of memory converting \"%s\"", m->dir, name);
	return r;
}

uint64_t model_nparams(const lc_model *m) { return m->nparams; }
uint64_t model_nbytes(const lc_model *m) { return m->nbytes; }
const char *model_fingerprint(const lc_model *m) { return m->fp; }
const char *model_dir(const lc_model *m) { return m->dir; }

void model_free(lc_model *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->n; i++)
		free(m->e[i].conv);
	free(m->e);
	st_close(m->st);
	tz_close(m->tz);
	pthread_mutex_destroy(&m->mu);
	free(m->dir);
	free(m);
}

/* ----------------------------------------------------------- random model */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unif(uint64_t *s) { return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0; }

static double rng_normal(uint64_t *s)
{
	return sqrt(-2.0 * log(rng_unif(s))) * cos(6.283185307179586 * rng_unif(s));
}

static int ends(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

int model_write_random(const char *dir, uint64_t seed, lc_err *err)
{
	lc_model tmp;
	st_tensor *t = NULL;
	char *path = NULL;
	size_t plen = strlen(dir) + 64;
	int rc = -1;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;

	memset(&tmp, 0, sizeof tmp);
	if (!(path = malloc(plen)))
		return lc_fail(err, "out of memory");
	snprintf(path, plen, "%s/config.json", dir);
	if (parse_config(path, &tmp.cfg, err) < 0 || build_expected(&tmp) < 0)
		goto out;
	if (!(t = calloc(tmp.n, sizeof *t))) {
		lc_fail(err, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < tmp.n; i++) {
		const entry *e = &tmp.e[i];
		float *v;
		uint64_t n = 1;
		int N2 = tmp.cfg.d_state / 2;
		t[i].name = (char *)e->name;
		t[i].dtype = ST_F32;
		t[i].rank = e->rank;
		for (uint32_t r = 0; r < e->rank; r++)
			n *= (t[i].dims[r] = e->dims[r]);
		t[i].numel = n;
		t[i].nbytes = 4 * n;
		if (!(v = malloc(4 * n))) {
			lc_fail(err, "out of memory");
			goto out;
		}
		t[i].data = (const unsigned char *)v;
		for (uint64_t j = 0; j < n; j++) {
			double g = rng_normal(&s), x;
			if (ends(e->name, "kernel.log_dt"))
				x = log(1e-3) + rng_unif(&s) * (log(1e-1) - log(1e-3));
			else if (ends(e->name, "kernel.inv_A_real"))
				x = log(0.5) + 0.2 * g;
			else if (ends(e->name, "kernel.A_imag"))
				x = 3.141592653589793 * (double)(j % (uint64_t)N2) * (1 + 0.05 * g) + 0.1 * rng_normal(&s);
			else if (ends(e->name, "kernel.B"))
				x = (j % 2 ? 0.0 : 1.0) + 0.2 * g;
			else if (ends(e->name, "kernel.C"))
				x = 0.5 * g;
			else if (ends(e->name, "ssm_layer.D"))
				x = 0.5 * g;
			else if (ends(e->name, "norm.weight"))
				x = 1 + 0.1 * g;
			else if (ends(e->name, ".bias"))
				x = 0.1 * g;
			else if (e->rank == 2 && strcmp(e->name, "shared.weight") && strcmp(e->name, "lm_head.weight"))
				x = 0.9 * g / sqrt((double)e->dims[1]);
			else
				x = g;
			v[j] = (float)x;
		}
	}
	snprintf(path, plen, "%s/model.safetensors", dir);
	rc = st_write(path, t, tmp.n, err);
out:
	if (t)
		for (uint32_t i = 0; i < tmp.n; i++)
			free((void *)t[i].data);
	free(t);
	free(tmp.e);
	free(path);
	return rc;
}

#ifndef LC_SHAREDIR
#define LC_SHAREDIR "/usr/local/share/lc"
#endif

const char *model_locate(const char *opt, char *buf, size_t n)
{
	const char *m = getenv("LC_MODEL"), *s = getenv("LC_SHARE");

	if (opt && *opt)
		snprintf(buf, n, "%s", opt);
	else if (m && *m)
		snprintf(buf, n, "%s", m);
	else
		snprintf(buf, n, "%s/models/demo", s && *s ? s : LC_SHAREDIR);
	return buf;
}
