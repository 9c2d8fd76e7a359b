/* safetensors reader/writer and model directory validation. */
#include "t.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/model.h"
#include "weights/safetensors.h"

/* A file image: 8-byte length, header, data of n bytes (values i & 255). */
static unsigned char *image(const char *hdr, size_t ndata, size_t *len)
{
	size_t hl = strlen(hdr);
	unsigned char *p = malloc(8 + hl + ndata + 1);
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)((uint64_t)hl >> (8 * i));
	memcpy(p + 8, hdr, hl);
	for (size_t i = 0; i < ndata; i++)
		p[8 + hl + i] = (unsigned char)i;
	*len = 8 + hl + ndata;
	return p;
}

static void expect_bad(const char *hdr, size_t ndata, const char *why)
{
	size_t len;
	unsigned char *p = image(hdr, ndata, &len);
	lc_err err = { "" };
	st_file *f = st_parse(p, len, "x.safetensors", &err);
	T_OK(f == NULL, "accepted: %s", hdr);
	T_OK(strstr(err.msg, why) != NULL, "message \"%s\" lacks \"%s\"", err.msg, why);
	st_close(f);
	free(p);
}

static void test_header_validation(void)
{
	size_t len;
	unsigned char *p = image("{\"__metadata__\":{\"format\":\"pt\"},"
	                         "\"b\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[8,20]},"
	                         "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 20, &len);
	lc_err err;
	st_file *f = st_parse(p, len, "ok", &err);
	if (T_OK(f != NULL, "%s", err.msg)) {
		T_EQ_I(st_count(f), 2);
		T_EQ_S(st_at(f, 0)->name, "b");
		T_OK(st_find(f, "a") && st_find(f, "a")->nbytes == 8 && st_find(f, "a")->data == p + len - 20,
		     "a's data");
		T_OK(st_find(f, "b")->dtype == ST_F16 && st_find(f, "b")->dims[1] == 3, "b's shape");
		T_OK(st_find(f, "c") == NULL, "c absent");
		T_EQ_S(st_meta(f, "format"), "pt");
	}
	st_close(f);
	free(p);
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need 12");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "truncated");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap");
	expect_bad("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "bad shape");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
	           "\"data_offsets\":[0,8]}}", 8, "overflow");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "data_offsets");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	           "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "JSON");
	{
		/* a header of 19280 = 0x4b50 bytes: the file starts "PK" (its length's low
		 * bytes), which is not a zip */
		static const char head[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
		char *h = malloc(19281);
		memset(h, ' ', 19280);
		memcpy(h, head, sizeof head - 1);
		h[19280] = 0;
		p = image(h, 8, &len);
		T_OK(p[0] == 'P' && p[1] == 'K', "the fixture starts with PK");
		f = st_parse(p, len, "pk", &err);
		T_OK(f && st_count(f) == 1, "a header length of 0x4b50: %s", f ? "read" : err.msg);
		st_close(f);
		free(p);
		free(h);
	}
	expect_bad("[1,2]", 0, "its header, at byte 8, does not start with '{'");
	expect_bad(" {}", 0, "does not start with '{'");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8, "unknown field");
	expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 8, "JSON");
	/* header length beyond the file */
	p = image("{}", 0, &len);
	p[0] = 200;
	f = st_parse(p, len, "x", &err);
	T_OK(!f && strstr(err.msg, "exceeds"), "%s", err.msg);
	f = st_parse(p, 5, "x", &err);
	T_OK(!f && strstr(err.msg, "too short"), "%s", err.msg);
	free(p);
}

/* A legacy (pre-1.6, non-zip) torch.save file is named as such, with pickle
 * protocol 2 and 4 (FRAME); a safetensors header of 640 bytes, whose length
 * also begins 0x80 0x02, is not mistaken for one. */
static void test_legacy_torch(void)
{
	static const unsigned char p2[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
	                                    0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e };
	static const unsigned char p4[] = { 0x80, 0x04, 0x95, 0x0d, 0, 0, 0, 0, 0, 0, 0, 0x8a, 0x0a,
	                                    0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50,
	                                    0x19, 0x2e };
	char hdr[641];
	size_t len;
	unsigned char *p;
	lc_err err;
	st_file *f;

	f = st_parse(p2, sizeof p2, "x.bin", &err);
	T_OK(!f && strstr(err.msg, "x.bin: a legacy (non-zip) PyTorch pickle"), "%s", err.msg);
	f = st_parse(p4, sizeof p4, "x.bin", &err);
	T_OK(!f && strstr(err.msg, "legacy (non-zip) PyTorch pickle"), "%s", err.msg);
	memset(hdr, ' ', 640);
	hdr[640] = 0;
	memcpy(hdr, "{}", 2);
	p = image(hdr, 0, &len);
	T_OK(p[0] == 0x80 && p[1] == 0x02, "header length 640");
	f = st_parse(p, len, "x", &err);
	T_OK(f != NULL, "%s", err.msg);
	st_close(f);
	free(p);
}

static void test_roundtrip(void)
{
	float a[6] = { 1, 2, 3, 4, 5, 6 };
	uint16_t b[2] = { 0x3c00, 0xc000 };   /* F16 1, -2 */
	st_tensor t[2] = {
		{ .name = "x.weight", .dtype = ST_F32, .rank = 2, .dims = { 2, 3 }, .numel = 6,
		  .nbytes = 24, .data = (const unsigned char *)a },
		{ .name = "h", .dtype = ST_F16, .rank = 1, .dims = { 2 }, .numel = 2, .nbytes = 4,
		  .data = (const unsigned char *)b },
	};
	char path[] = "/tmp/lc-st-XXXXXX";
	int fd = mkstemp(path);
	lc_err err;
	st_file *f;

	close(fd);
	T_OK(st_write(path, t, 2, &err) == 0, "%s", err.msg);
	f = st_open(path, &err);
	if (T_OK(f != NULL, "%s", err.msg)) {
		const st_tensor *x = st_find(f, "x.weight");
		T_OK(x && x->rank == 2 && x->dims[1] == 3 && !memcmp(x->data, a, 24), "x round trip");
		T_OK(((uintptr_t)x->data % 8) == 0, "data area is 8-aligned");
		T_OK(st_find(f, "h") && !memcmp(st_find(f, "h")->data, b, 4), "h round trip");
	}
	st_close(f);
	unlink(path);
}

/* --- model directories built from the tiny model, one fault each --- */

static char tmpdir[64];

static void copy_file(const char *from, const char *to)
{
	size_t n;
	void *p = t_slurp(from, &n);
	FILE *f = fopen(to, "wb");
	if (p && f)
		fwrite(p, 1, n, f);
	if (f)
		fclose(f);
	free(p);
}

/* Rewrites the tiny model's safetensors through fn into tmpdir. */
static void rewrite(void (*fn)(st_tensor *t, uint32_t *n, void *scratch))
{
	lc_err err;
	char path[256];
	st_file *f = st_open(t_data("locost/model.safetensors"), &err);
	uint32_t n = st_count(f);
	st_tensor *t = calloc(n + 1, sizeof *t);
	static float scratch[64 * 512];

	for (uint32_t i = 0; i < n; i++)
		t[i] = *st_at(f, i);
	fn(t, &n, scratch);
	snprintf(path, sizeof path, "%s/model.safetensors", tmpdir);
	T_OK(st_write(path, t, n, &err) == 0, "%s", err.msg);
	free(t);
	st_close(f);
}

static const char *open_err(void)
{
	static lc_err err;
	lc_model *m = model_open(tmpdir, 0, &err);
	if (m) {
		model_free(m);
		return NULL;
	}
	return err.msg;
}

static void drop_D(st_tensor *t, uint32_t *n, void *s)
{
	(void)s;
	for (uint32_t i = 0; i < *n; i++)
		if (!strcmp(t[i].name, "encoder.block.1.layer.0.ssm_layer.D")) {
			t[i] = t[--*n];
			return;
		}
}

static void add_extra(st_tensor *t, uint32_t *n, void *s)
{
	t[*n] = t[0];
	t[*n].name = "encoder.block.9.layer.0.ssm_layer.D";
	(void)s;
	++*n;
}

static void misshape(st_tensor *t, uint32_t *n, void *s)
{
	(void)s;
	for (uint32_t i = 0; i < *n; i++)
		if (!strcmp(t[i].name, "encoder.block.0.layer.0.ssm_layer.kernel.B")) {
			t[i].rank = 2;
			t[i].dims[0] = 64;
			t[i].dims[1] = 32;
		}
}

static void alias_only(st_tensor *t, uint32_t *n, void *s)
{
	(void)s;
	(void)n;
	for (uint32_t i = 0; i < *n; i++)
		if (!strcmp(t[i].name, "shared.weight"))
			t[i].name = "encoder.embed_tokens.weight";
}

static void to_bf16(st_tensor *t, uint32_t *n, void *s)
{
	uint16_t *o = s;
	for (uint32_t i = 0; i < *n; i++)
		if (!strcmp(t[i].name, "encoder.final_layer_norm.weight")) {
			const float *x = (const float *)(const void *)t[i].data;
			for (int j = 0; j < 64; j++) {
				uint32_t u;
				memcpy(&u, &x[j], 4);
				o[j] = (uint16_t)(u >> 16);
			}
			t[i].dtype = ST_BF16;
			t[i].nbytes = 128;
			t[i].data = (const unsigned char *)o;
		}
}

static void test_model_dirs(void)
{
	lc_err err;
	const char *e;
	char path[256];
	lc_model *m = model_open(t_data("locost"), 0, &err), *m2;

	if (!T_OK(m != NULL, "%s", err.msg))
		return;
	const lc_config *c = model_config(m);
	T_EQ_I(c->d_model, 64);
	T_EQ_I(c->d_state, 32);
	T_EQ_I(c->num_layers, 2);
	T_EQ_I(c->vocab_size, 512);
	T_EQ_I(c->use_fast_fft_conv, 0);
	T_EQ_I(c->act, ACT_GELU_TANH);
	T_EQ_I(model_nparams(m), 239104);
	uint64_t dims[2] = { 512, 64 }, bad[2] = { 64, 512 };
	const float *sh = model_tensor(m, "shared.weight", 2, dims, &err);
	T_OK(sh != NULL, "%s", err.msg);
	T_OK(model_tensor(m, "lm_head.weight", 2, dims, &err) == sh, "lm_head is shared.weight");
	T_OK(model_tensor(m, "decoder.embed_tokens.weight", 2, dims, &err) == sh, "alias");
	T_OK(model_tensor(m, "shared.weight", 2, bad, &err) == NULL && strstr(err.msg, "shape"),
	     "%s", err.msg);
	T_OK(model_tensor(m, "nope", 2, dims, &err) == NULL, "unknown name");
	/* the .bin gives the same weights and fingerprint */
	m2 = model_open(t_data("locost/pytorch_model.bin"), 0, &err);
	if (T_OK(m2 != NULL, "%s", err.msg)) {
		const float *sh2 = model_tensor(m2, "shared.weight", 2, dims, &err);
		T_OK(sh2 && !memcmp(sh, sh2, 512 * 64 * 4), "bin shared.weight");
		T_EQ_S(model_fingerprint(m), model_fingerprint(m2));
		T_EQ_I(model_nparams(m2), 239104);
		model_free(m2);
	}

	snprintf(tmpdir, sizeof tmpdir, "/tmp/lc-model-XXXXXX");
	if (!T_OK(mkdtemp(tmpdir) != NULL, "mkdtemp"))
		return;
	snprintf(path, sizeof path, "%s/config.json", tmpdir);
	e = open_err();
	T_OK(e && strstr(e, "no config.json"), "%s", e ? e : "opened");
	copy_file(t_data("locost/config.json"), path);
	e = open_err();
	T_OK(e && strstr(e, "no model.safetensors"), "%s", e ? e : "opened");
	rewrite(drop_D);
	e = open_err();
	T_OK(e && strstr(e, "encoder.block.1.layer.0.ssm_layer.D\" is missing"), "%s", e ? e : "opened");
	rewrite(add_extra);
	e = open_err();
	T_OK(e && strstr(e, "unexpected tensor \"encoder.block.9"), "%s", e ? e : "opened");
	rewrite(misshape);
	e = open_err();
	T_OK(e && strstr(e, "kernel.B\" has shape [64, 32]"), "%s", e ? e : "opened");
	rewrite(alias_only);
	e = open_err();
	T_OK(e == NULL, "shared.weight only under its alias: %s", e ? e : "");
	rewrite(to_bf16);
	m2 = model_open(tmpdir, 0, &err);
	if (T_OK(m2 != NULL, "%s", err.msg)) {
		uint64_t d1[1] = { 64 };
		const float *a = model_tensor(m, "encoder.final_layer_norm.weight", 1, d1, &err);
		const float *b = model_tensor(m2, "encoder.final_layer_norm.weight", 1, d1, &err);
		double mx = 0;
		for (int j = 0; j < 64 && a && b; j++)
			mx = fmax(mx, fabs((double)a[j] - b[j]) / fabs((double)a[j]));
		T_OK(b && mx < 1.0 / 128, "bf16 converted, rel err %g", mx);
		model_free(m2);
	}
	/* truncated weight file */
	{
		size_t n;
		char *p = t_slurp(t_data("locost/model.safetensors"), &n);
		char wp[256];
		FILE *f;
		snprintf(wp, sizeof wp, "%s/model.safetensors", tmpdir);
		f = fopen(wp, "wb");
		fwrite(p, 1, n / 2, f);
		fclose(f);
		free(p);
		e = open_err();
		T_OK(e && strstr(e, "truncated"), "%s", e ? e : "opened");
		unlink(wp);
	}
	/* a config that is not JSON */
	{
		FILE *f = fopen(path, "w");
		fputs("{\"d_model\": 64,", f);
		fclose(f);
		e = open_err();
		T_OK(e && strstr(e, "config.json"), "%s", e ? e : "opened");
		f = fopen(path, "w");
		fputs("{\"d_model\": 64, \"d_ff\": 128, \"num_layers\": 2, \"vocab_size\": 512}", f);
		fclose(f);
		e = open_err();
		T_OK(e && strstr(e, "\"d_state\" is missing"), "%s", e ? e : "opened");
		unlink(path);
	}
	rmdir(tmpdir);
	model_free(m);
}

int main(void)
{
	T_RUN(test_header_validation);
	T_RUN(test_legacy_torch);
	T_RUN(test_roundtrip);
	T_RUN(test_model_dirs);
	return t_done();
}
