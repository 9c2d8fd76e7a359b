/*
 * test_params: the parameter declaration and its bindings: the flat
 * layout, aliases, optional and ignored names, every refusal of a weight
 * file that does not match (missing, extra, repeated, mis-shaped, not a
 * float), conversion of F16/BF16/F64 to float32, initial values and
 * writing a declaration back out.
 */
#include <stdint.h>
#include <unistd.h>

#include "t.h"
#include "weights/config.h"
#include "weights/params.h"
#include "weights/safetensors.h"

#define D1(a) ((const uint64_t[PARAM_RANK]){ (a), 0, 0, 0 })
#define D2(a, b) ((const uint64_t[PARAM_RANK]){ (a), (b), 0, 0 })

typedef struct toy {
	float *emb, *w, *b, *opt;
} toy;

static lc_params *declare(toy *t)
{
	lc_params *p = params_new();

	params_add(p, &t->emb, param_init_normal, 0, D2(5, 3), "shared.weight");
	params_alias(p, "encoder.embed_tokens.weight", "shared.weight");
	params_add(p, &t->w, param_init_matrix, 0, D2(2, 3), "layer.%d.w", 0);
	params_add(p, &t->b, param_init_bias, PARAM_NO_DECAY, D1(2), "layer.%d.b", 0);
	params_add(p, &t->opt, NULL, PARAM_OPTIONAL, D1(5), "final_logits_bias");
	params_ignore(p, "encoder.version");
	params_ignore(p, "buffers.*");
	return p;
}

static void test_declare(void)
{
	toy t = { 0 };
	lc_params *p = declare(&t);
	lc_err err;
	float *never = NULL;

	T_OK(params_status(p, &err) == 0, "%s", err.msg);
	T_EQ_I(params_count(p), 4);
	T_EQ_I(params_total(p), 15 + 6 + 2 + 5);
	T_EQ_I(params_at(p, 2)->off, 21);
	T_EQ_I(params_at(p, 1)->rank, 2);
	T_EQ_S(params_at(p, 1)->name, "layer.0.w");
	T_OK(params_find(p, "encoder.embed_tokens.weight") == params_at(p, 0), "alias found");
	T_OK(params_find(p, "nope") == NULL, "unknown name");
	/* a second declaration of a name, and an alias of nothing */
	params_add(p, &never, NULL, 0, D1(1), "layer.0.w");
	T_OK(params_status(p, &err) < 0 && strstr(err.msg, "declared twice"), "twice: %s", err.msg);
	params_free(p);
	p = params_new();
	params_alias(p, "x", "y");
	T_OK(params_status(p, &err) < 0 && strstr(err.msg, "undeclared"), "alias: %s", err.msg);
	params_free(p);
}

/* A file of n tensors named names[i], each F32 with the declared shapes
 * unless overridden; returns an open st_file (the caller closes it). */
typedef struct spec {
	const char *name;
	enum st_dtype dtype;
	uint32_t rank;
	uint64_t d0, d1;
} spec;

static st_file *file_of(const spec *s, int n, const char *path)
{
	st_tensor t[8];
	unsigned char *buf[8];
	lc_err err;
	st_file *f;

	memset(t, 0, sizeof t);
	for (int i = 0; i < n; i++) {
		size_t es = st_dtype_size(s[i].dtype);
		t[i].name = (char *)s[i].name;
		t[i].dtype = s[i].dtype;
		t[i].rank = s[i].rank;
		t[i].dims[0] = s[i].d0;
		t[i].dims[1] = s[i].d1;
		t[i].numel = s[i].d0 * (s[i].rank > 1 ? s[i].d1 : 1);
		t[i].nbytes = t[i].numel * es;
		buf[i] = malloc(t[i].nbytes ? t[i].nbytes : 1);
		for (uint64_t j = 0; j < t[i].numel; j++) {
			double v = (double)(i * 100 + (int)j) + 0.5;
			unsigned char *q = buf[i] + j * es;
			if (s[i].dtype == ST_F32) {
				float x = (float)v;
				memcpy(q, &x, 4);
			} else if (s[i].dtype == ST_F64) {
				memcpy(q, &v, 8);
			} else if (s[i].dtype == ST_BF16 || s[i].dtype == ST_F16) {
				/* 0.5 + small integers are exact in both */
				float x = (float)v;
				uint32_t u;
				memcpy(&u, &x, 4);
				if (s[i].dtype == ST_BF16) {
					q[0] = (unsigned char)(u >> 16);
					q[1] = (unsigned char)(u >> 24);
				} else {
					/* f16 of x: sign 0, exponent e - 127 + 15, 10 mantissa bits */
					uint32_t e = ((u >> 23) & 255) - 127 + 15, m = (u >> 13) & 1023;
					uint16_t h = (uint16_t)(e << 10 | m);
					q[0] = (unsigned char)h;
					q[1] = (unsigned char)(h >> 8);
				}
			} else {
				memset(q, 0, es);
			}
		}
		t[i].data = buf[i];
	}
	if (st_write(path, t, (uint32_t)n, &err) < 0) {
		T_OK(0, "st_write: %s", err.msg);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		free(buf[i]);
	f = st_open(path, &err);
	T_OK(f != NULL, "st_open: %s", f ? "" : err.msg);
	return f;
}

static const st_tensor *at_st(const void *f, uint32_t i) { return st_at(f, i); }
static void rel_st(const void *f, const st_tensor *t) { st_release(f, t); }
static int copying;      /* bind() binds as lc's loader does: copies, releases */

static st_file *bound;   /* the file of the last bind(), closed by done() */

/* Binds a fresh declaration to the file; returns the result and err. */
static int bind(const spec *s, int n, toy *t, lc_params **pp, lc_err *err)
{
	char path[] = "/tmp/lc-params-XXXXXX";
	int fd = mkstemp(path);
	st_file *f;
	int rc;

	close(fd);
	*pp = declare(t);
	if (!(f = file_of(s, n, path))) {
		unlink(path);
		return -2;
	}
	rc = params_bind_tensors(*pp, at_st, copying ? rel_st : NULL, f, st_count(f), path, err);
	bound = f;   /* the mapping must outlive the bound slots */
	unlink(path);
	return rc;
}

static void done(lc_params *p)
{
	params_free(p);
	st_close(bound);
	bound = NULL;
}

#define OK_FILE { "shared.weight", ST_F32, 2, 5, 3 }, { "layer.0.w", ST_F32, 2, 2, 3 }, \
	{ "layer.0.b", ST_F32, 1, 2, 0 }

static void test_bind(void)
{
	toy t;
	lc_params *p;
	lc_err err;

	{	/* the declared set, plus ignored names; the optional one absent */
		spec s[] = { OK_FILE, { "encoder.version", ST_I64, 1, 1, 0 },
		             { "buffers.x", ST_I32, 1, 3, 0 } };
		memset(&t, 0, sizeof t);
		T_OK(bind(s, 5, &t, &p, &err) == 0, "%s", err.msg);
		T_OK(t.emb && t.emb[4] == 4.5f && t.w[5] == 105.5f && t.b[1] == 201.5f, "values");
		T_OK(t.opt && t.opt[0] == 0 && t.opt[4] == 0, "absent optional parameter is zero");
		done(p);
	}
	{	/* bound as a model's file is: copies of the mapping's bytes */
		spec s[] = { OK_FILE };
		memset(&t, 0, sizeof t);
		copying = 1;
		T_OK(bind(s, 3, &t, &p, &err) == 0, "%s", err.msg);
		copying = 0;
		T_OK(t.emb && t.emb[4] == 4.5f && t.w[5] == 105.5f && t.b[1] == 201.5f,
		     "copied values");
		T_OK(t.emb != (const float *)st_find(bound, "shared.weight")->data &&
		     t.w != (const float *)st_find(bound, "layer.0.w")->data,
		     "copies, not the mapping");
		done(p);
	}
	{	/* the embeddings under their alias only; the optional one present */
		spec s[] = { { "encoder.embed_tokens.weight", ST_F32, 2, 5, 3 },
		             { "layer.0.w", ST_F32, 2, 2, 3 }, { "layer.0.b", ST_F32, 1, 2, 0 },
		             { "final_logits_bias", ST_F32, 1, 5, 0 } };
		memset(&t, 0, sizeof t);
		T_OK(bind(s, 4, &t, &p, &err) == 0, "%s", err.msg);
		T_OK(t.emb && t.emb[1] == 1.5f && t.opt[2] == 302.5f, "alias and optional bound");
		done(p);
	}
	{	/* conversions */
		spec s[] = { { "shared.weight", ST_F64, 2, 5, 3 }, { "layer.0.w", ST_BF16, 2, 2, 3 },
		             { "layer.0.b", ST_F16, 1, 2, 0 } };
		memset(&t, 0, sizeof t);
		T_OK(bind(s, 3, &t, &p, &err) == 0, "%s", err.msg);
		T_OK(t.emb[14] == 14.5f && t.w[3] == 103.5f && t.b[1] == 201.5f,
		     "F64 %g, BF16 %g, F16 %g", t.emb[14], t.w[3], t.b[1]);
		done(p);
	}
	/* refusals, each naming the tensor */
	{
		spec s[] = { { "shared.weight", ST_F32, 2, 5, 3 }, { "layer.0.w", ST_F32, 2, 2, 3 } };
		T_OK(bind(s, 2, &t, &p, &err) < 0 && strstr(err.msg, "\"layer.0.b\" is missing"),
		     "missing: %s", err.msg);
		done(p);
	}
	{
		spec s[] = { OK_FILE, { "layer.1.w", ST_F32, 2, 2, 3 } };
		T_OK(bind(s, 4, &t, &p, &err) < 0 && strstr(err.msg, "unexpected tensor \"layer.1.w\""),
		     "extra: %s", err.msg);
		done(p);
	}
	{
		spec s[] = { { "shared.weight", ST_F32, 2, 5, 4 }, { "layer.0.w", ST_F32, 2, 2, 3 },
		             { "layer.0.b", ST_F32, 1, 2, 0 } };
		T_OK(bind(s, 3, &t, &p, &err) < 0 && strstr(err.msg, "shape [5, 4]") &&
		     strstr(err.msg, "needs [5, 3]"), "shape: %s", err.msg);
		done(p);
	}
	{
		spec s[] = { OK_FILE, { "encoder.embed_tokens.weight", ST_F32, 2, 3, 5 } };
		T_OK(bind(s, 4, &t, &p, &err) < 0 && strstr(err.msg, "encoder.embed_tokens.weight"),
		     "alias with another shape: %s", err.msg);
		done(p);
	}
	{	/* two names of the tied embeddings with different values */
		spec s[] = { OK_FILE, { "encoder.embed_tokens.weight", ST_F32, 2, 5, 3 } };
		T_OK(bind(s, 4, &t, &p, &err) < 0 && strstr(err.msg, "different values"),
		     "tied names, different values: %s", err.msg);
		done(p);
	}
	{
		spec s[] = { { "shared.weight", ST_F32, 2, 5, 3 }, { "layer.0.w", ST_I32, 2, 2, 3 },
		             { "layer.0.b", ST_F32, 1, 2, 0 } };
		T_OK(bind(s, 3, &t, &p, &err) < 0 && strstr(err.msg, "dtype I32"), "dtype: %s", err.msg);
		done(p);
	}
}

/* st_release gives back a tensor's whole pages; the file's bytes read
 * the same afterwards (from the file again). */
static void test_release(void)
{
	char path[] = "/tmp/lc-params-XXXXXX";
	int fd = mkstemp(path);
	enum { N = 5000 };      /* 20,000 bytes: whole pages inside on any 4K or 16K system */
	float *v = malloc(N * sizeof *v);
	st_tensor t = { 0 };
	st_file *f;
	lc_err err;

	close(fd);
	for (int i = 0; i < N; i++)
		v[i] = (float)i * 0.25f;
	t.name = "big";
	t.dtype = ST_F32;
	t.rank = 1;
	t.dims[0] = N;
	t.numel = N;
	t.nbytes = N * sizeof *v;
	t.data = (const unsigned char *)v;
	T_OK(st_write(path, &t, 1, &err) == 0, "%s", err.msg);
	f = st_open(path, &err);
	T_OK(f != NULL, "%s", f ? "" : err.msg);
	if (f) {
		const st_tensor *b = st_find(f, "big");
		T_OK(b && memcmp(b->data, v, t.nbytes) == 0, "mapped bytes");
		st_release(f, b);
		T_OK(b && memcmp(b->data, v, t.nbytes) == 0, "the same bytes after st_release");
		st_release(f, b);
		st_release(NULL, b);
		st_close(f);
	}
	unlink(path);
	free(v);
}

static void test_flat_init_write(void)
{
	toy t, u;
	lc_params *p = declare(&t), *q = declare(&u);
	uint64_t n = params_total(p);
	float *a = malloc(n * 4), *b = malloc(n * 4), *c = calloc(n, 4);
	char path[] = "/tmp/lc-params-w-XXXXXX";
	int fd = mkstemp(path);
	lc_err err;
	st_file *f;

	close(fd);
	params_init(p, a, 7);
	params_init(p, b, 7);
	T_OK(memcmp(a, b, n * 4) == 0, "initial values are a function of the seed");
	params_init(p, b, 8);
	T_OK(memcmp(a, b, n * 4) != 0, "another seed, other values");
	T_OK(fabsf(a[21] - 0) < 1 && a[21] != 0, "bias init is small: %g", a[21]);
	params_bind_flat(p, a);
	T_OK(t.emb == a && t.w == a + 15 && t.b == a + 21 && t.opt == a + 23, "slots at offsets");
	params_bind_flat(q, c);
	params_copy_to_flat(p, c);
	T_OK(memcmp(a, c, n * 4) == 0, "copy to another flat layout");
	T_OK(params_write(p, NULL, path, &err) == 0, "%s", err.msg);
	f = st_open(path, &err);
	T_OK(f && st_count(f) == 4 && st_find(f, "encoder.embed_tokens.weight") == NULL,
	     "written in declaration order without aliases");
	if (f) {
		T_OK(params_bind_tensors(q, at_st, NULL, f, st_count(f), path, &err) == 0, "%s",
		     err.msg);
		T_OK(memcmp(u.w, a + 15, 6 * 4) == 0, "read back");
		st_close(f);
	}
	unlink(path);
	params_free(p);
	params_free(q);
	free(a);
	free(b);
	free(c);
}

/* config.json written as transformers writes it (json.dumps(indent=2,
 * sort_keys=True)): the expected texts are what Python 3 printed. */
static void test_dump_hf(void)
{
	static const char src[] = "{\"b\": [1e-05, 0.02, 100.0, 1e16, 1.5e-07, 0.1, 2.0, 123456789012345.0, 0.0001, -0.0, 3.14159, 1e+300, 5e-324, 2.5e15, 1234567890123456.0, 12345678901234567.0], \"a\": {\"z\": \"caf\xc3""\xa9"" \\u0001\\t\\\"q\\\" \\ud83d\\ude00 \\u007f\", \"e\": {}, \"l\": []}, \"n\": null, \"t\": true, \"i\": -42}";
	static const char want_ascii[] = "{\n"
		"  \"a\": {\n"
		"    \"e\": {},\n"
		"    \"l\": [],\n"
		"    \"z\": \"caf\\u00e9 \\u0001\\t\\\"q\\\" \\ud83d\\ude00 \\u007f\"\n"
		"  },\n"
		"  \"b\": [\n"
		"    1e-05,\n"
		"    0.02,\n"
		"    100.0,\n"
		"    1e+16,\n"
		"    1.5e-07,\n"
		"    0.1,\n"
		"    2.0,\n"
		"    123456789012345.0,\n"
		"    0.0001,\n"
		"    -0.0,\n"
		"    3.14159,\n"
		"    1e+300,\n"
		"    5e-324,\n"
		"    2500000000000000.0,\n"
		"    1234567890123456.0,\n"
		"    1.2345678901234568e+16\n"
		"  ],\n"
		"  \"i\": -42,\n"
		"  \"n\": null,\n"
		"  \"t\": true\n"
		"}\n"
		"";
	static const char want_utf8[] = "{\n"
		"  \"a\": {\n"
		"    \"e\": {},\n"
		"    \"l\": [],\n"
		"    \"z\": \"caf\xc3""\xa9"" \\u0001\\t\\\"q\\\" \xf0""\x9f""\x98""\x80"" \x7f""\"\n"
		"  },\n"
		"  \"b\": [\n"
		"    1e-05,\n"
		"    0.02,\n"
		"    100.0,\n"
		"    1e+16,\n"
		"    1.5e-07,\n"
		"    0.1,\n"
		"    2.0,\n"
		"    123456789012345.0,\n"
		"    0.0001,\n"
		"    -0.0,\n"
		"    3.14159,\n"
		"    1e+300,\n"
		"    5e-324,\n"
		"    2500000000000000.0,\n"
		"    1234567890123456.0,\n"
		"    1.2345678901234568e+16\n"
		"  ],\n"
		"  \"i\": -42,\n"
		"  \"n\": null,\n"
		"  \"t\": true\n"
		"}\n"
		"";
	lc_err err;
	json_t *root = cfg_parse(src, strlen(src), "src", &err);
	char *a = root ? cfg_dump_hf(root, 1) : NULL, *u = root ? cfg_dump_hf(root, 0) : NULL;

	T_OK(root != NULL, "%s", err.msg);
	T_OK(a && !strcmp(a, want_ascii), "ensure_ascii:\n%s", a ? a : "(null)");
	T_OK(u && !strcmp(u, want_utf8), "utf-8:\n%s", u ? u : "(null)");
	free(a);
	free(u);
	json_decref(root);
}

int main(void)
{
	T_RUN(test_declare);
	T_RUN(test_bind);
	T_RUN(test_release);
	T_RUN(test_flat_init_write);
	T_RUN(test_dump_hf);
	return t_done();
}
