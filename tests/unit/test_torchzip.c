/* pytorch_model.bin reading: the oracle's file, and hostile or broken ones
 * built here with libarchive (each must be refused with a message). */
#include "t.h"

#include <stdint.h>

#include <archive.h>
#include <archive_entry.h>

#include "weights/pickle.h"
#include "weights/safetensors.h"
#include "weights/torchzip.h"

struct member { const char *name; const void *data; size_t len; };

/* A zip image of the members, stored or deflated; *len gets its size. */
static void *make_zip_as(const struct member *m, int n, size_t *len, int deflate)
{
	size_t cap = 1 << 20, used = 0;
	char *buf = malloc(cap);
	struct archive *a = archive_write_new();

	archive_write_set_format_zip(a);
	archive_write_set_options(a, deflate ? "zip:compression=deflate" : "zip:compression=store");
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

static void *make_zip(const struct member *m, int n, size_t *len)
{
	return make_zip_as(m, n, len, 0);
}

/* The pickle torch.save writes for {"w": FloatTensor of shape [2, 3]}:
 * hand-assembled with protocol 2 opcodes; glob/storage/size/stride and
 * an extra opcode are parameters so each test can corrupt one thing. */
static size_t pickle(unsigned char *p, const char *glob, const char *key, int numel,
                     int d0, int d1, int s0, int s1, int off, const unsigned char *extra,
                     size_t nextra)
{
	size_t n = 0;
#define B(x) (p[n++] = (unsigned char)(x))
#define S(s) do { size_t l_ = strlen(s); B('X'); B(l_); B(0); B(0); B(0); memcpy(p + n, s, l_); n += l_; } while (0)
	B(0x80); B(2);
	n += (size_t)sprintf((char *)p + n, "ccollections\nOrderedDict\n");
	B(')'); B('R'); B('q'); B(0);
	B('(');
	S("w");
	n += (size_t)sprintf((char *)p + n, "ctorch._utils\n_rebuild_tensor_v2\n");
	B('(');
	B('(');
	S("storage");
	n += (size_t)sprintf((char *)p + n, "c%s\n", glob);
	S(key);
	S("cpu");
	B('K'); B(numel);
	B('t');
	B('Q');
	B('K'); B(off);
	B('K'); B(d0); B('K'); B(d1); B(0x86);
	B('K'); B(s0); B('K'); B(s1); B(0x86);
	B(0x89);
	n += (size_t)sprintf((char *)p + n, "ccollections\nOrderedDict\n");
	B(')'); B('R');
	B('t');
	B('R');
	B('u');
	if (nextra)
		memcpy(p + n, extra, nextra);
	n += nextra;
	B('.');
	return n;
#undef B
#undef S
}

static float stor[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

static tz_file *try(const unsigned char *pk, size_t pn, const char *key, size_t slen, lc_err *err)
{
	struct member m[3] = {
		{ "archive/data.pkl", pk, pn },
		{ "archive/data/0", stor, slen },
		{ "archive/version", "3\n", 2 },
	};
	size_t zl;
	void *z;
	tz_file *f;

	(void)key;
	z = make_zip(m, 3, &zl);
	f = tz_parse(z, zl, "t.bin", err);
	free(z);
	return f;
}

static void test_handmade(void)
{
	unsigned char pk[1024];
	size_t n;
	lc_err err;
	tz_file *f;

	n = pickle(pk, "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, NULL, 0);
	f = try(pk, n, "0", 24, &err);
	if (T_OK(f != NULL, "%s", err.msg)) {
		const st_tensor *t = tz_find(f, "w");
		T_OK(t && t->dtype == ST_F32 && t->rank == 2 && t->dims[0] == 2 && t->dims[1] == 3 &&
		     !memcmp(t->data, stor, 24), "w read back");
		tz_close(f);
	}
	/* a transposed view is made contiguous */
	n = pickle(pk, "torch\nFloatStorage", "0", 6, 3, 2, 1, 3, 0, NULL, 0);
	f = try(pk, n, "0", 24, &err);
	if (T_OK(f != NULL, "%s", err.msg)) {
		const float *x = (const float *)(const void *)tz_find(f, "w")->data;
		T_OK(x[0] == 1 && x[1] == 4 && x[2] == 2 && x[5] == 6, "transposed view copied");
		tz_close(f);
	}
	/* other storage dtypes */
	n = pickle(pk, "torch\nHalfStorage", "0", 6, 2, 3, 3, 1, 0, NULL, 0);
	f = try(pk, n, "0", 12, &err);
	T_OK(f && tz_find(f, "w")->dtype == ST_F16 && tz_find(f, "w")->nbytes == 12, "half: %s",
	     f ? "" : err.msg);
	tz_close(f);

#define BAD(why, ...) do { n = pickle(pk, __VA_ARGS__); f = try(pk, n, "0", 24, &err); \
	T_OK(f == NULL && strstr(err.msg, why), "want \"%s\", got: %s", why, f ? "accepted" : err.msg); \
	tz_close(f); } while (0)
	BAD("refusing global posix.system", "posix\nsystem", "0", 6, 2, 3, 3, 1, 0, NULL, 0);
	BAD("refusing global builtins.eval", "builtins\neval", "0", 6, 2, 3, 3, 1, 0, NULL, 0);
	BAD("storage \"7\" is missing", "torch\nFloatStorage", "7", 6, 2, 3, 3, 1, 0, NULL, 0);
	BAD("shorter than declared", "torch\nFloatStorage", "0", 60, 2, 3, 3, 1, 0, NULL, 0);
	BAD("beyond its storage", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 2, NULL, 0);
	BAD("beyond its storage", "torch\nFloatStorage", "0", 6, 2, 3, 200, 1, 0, NULL, 0);
	{
		unsigned char ex[] = { 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n' };
		BAD("refusing global os.system", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, ex, sizeof ex);
	}
	{
		unsigned char ex[] = { 'i', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n' }; /* INST */
		BAD("opcode 0x69 is not allowed", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, ex, sizeof ex);
	}
	{
		unsigned char ex[] = { 'r', 0xff, 0xff, 0xff, 0x7f };   /* LONG_BINPUT 2^31-1 */
		BAD("memo index too large", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, ex, sizeof ex);
	}
	{
		unsigned char ex[] = { 'X', 0xff, 0xff, 0xff, 0x7f };   /* string longer than the pickle */
		BAD("truncated pickle", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, ex, sizeof ex);
	}
	{
		unsigned char ex[] = { 'h', 200 };
		BAD("memo entry missing", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, ex, sizeof ex);
	}
	{
		unsigned char ex[] = { 'N' };   /* two items at STOP */
		BAD("STOP with several", "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, ex, sizeof ex);
	}
	/* a storage longer than the pickle declares: refused, and read no
	 * further than declared (a deflated member of a few KB may inflate
	 * to GBs: a zip bomb) */
	n = pickle(pk, "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, NULL, 0);
	f = try(pk, n, "0", 32, &err);
	T_OK(!f && strstr(err.msg, "member \"archive/data/0\" is larger than its storage's declared "
	                           "24 bytes"), "%s", f ? "accepted" : err.msg);
	tz_close(f);
	{
		size_t big = (size_t)16 << 20, zl;
		unsigned char *zeros = calloc(1, big);
		struct member m[2] = { { "archive/data.pkl", pk, n }, { "archive/data/0", zeros, big } };
		void *z = make_zip_as(m, 2, &zl, 1);

		T_OK(zl < 1 << 17, "16 MiB of zeros deflated to %zu bytes", zl);
		f = tz_parse(z, zl, "t.bin", &err);
		T_OK(!f && strstr(err.msg, "is larger than its storage's declared 24 bytes"), "%s",
		     f ? "accepted" : err.msg);
		tz_close(f);
		free(z);
		free(zeros);
	}
	/* a zip cut short, and zips that are not torch.save's: said so */
	n = pickle(pk, "torch\nFloatStorage", "0", 6, 2, 3, 3, 1, 0, NULL, 0);
	{
		struct member m[2] = { { "archive/data.pkl", pk, n }, { "archive/data/0", stor, 24 } };
		size_t zl;
		unsigned char *z = make_zip(m, 2, &zl), empty[22] = { 'P', 'K', 5, 6 };
		f = tz_parse(z, zl / 2, "t.bin", &err);
		T_OK(!f && strstr(err.msg, "t.bin: not a readable zip file (truncated or damaged?)"),
		     "%s", f ? "accepted" : err.msg);
		tz_close(f);
		free(z);
		st_file *sf = st_parse(empty, sizeof empty, "e.bin", &err);
		T_OK(!sf && strstr(err.msg, "e.bin: a zip file that does not start as torch.save's do"),
		     "%s", sf ? "accepted" : err.msg);
		st_close(sf);
	}
	/* not a state dict at all */
	{
		unsigned char p2[] = { 0x80, 2, 'K', 5, '.' };
		f = try(p2, sizeof p2, "0", 24, &err);
		T_OK(!f && strstr(err.msg, "not a state dict"), "%s", f ? "accepted" : err.msg);
		tz_close(f);
	}
	/* no pickle in the archive */
	{
		struct member m[1] = { { "archive/data/0", stor, 24 } };
		size_t zl;
		void *z = make_zip(m, 1, &zl);
		f = tz_parse(z, zl, "t.bin", &err);
		T_OK(!f && strstr(err.msg, "no ARCHIVE/data.pkl"), "%s", f ? "accepted" : err.msg);
		tz_close(f);
		free(z);
	}
}

/* Values pushed and popped at once (NONE, POP) are one byte each and
 * all kept to the end: a 4 MB pickle made 2^21 of them, 63 MB made GBs. */
static void test_pickle_bomb(void)
{
	size_t n = 2 + 2 * ((size_t)1 << 21) + 2, k = 0;
	unsigned char *p = malloc(n);
	lc_err err;
	pk_pickle *pk;

	p[k++] = 0x80;
	p[k++] = 2;
	while (k + 2 < n) {
		p[k++] = 'N';
		p[k++] = '0';
	}
	p[k++] = '}';
	p[k++] = '.';
	pk = pk_load(p, n, 0, "t.bin", "data.pkl", &err);
	T_OK(!pk && strstr(err.msg, "more than 2^21 values"), "%s", pk ? "accepted" : err.msg);
	pk_free(pk);
	/* the same with a thousand is an empty dict */
	memcpy(p + 2002, "}.", 2);
	pk = pk_load(p, 2004, 0, "t.bin", "data.pkl", &err);
	T_OK(pk && pk_root(pk)->type == PK_DICT && pk_root(pk)->n == 0, "1000 values: %s",
	     pk ? "a dict" : err.msg);
	pk_free(pk);
	free(p);
}

static void test_oracle_file(void)
{
	lc_err err;
	tz_file *f = tz_open(t_data("locost/pytorch_model.bin"), &err);
	size_t n;
	char *p;

	if (!T_OK(f != NULL, "%s", err.msg))
		return;
	T_EQ_I(tz_count(f), 69);
	const st_tensor *a = tz_find(f, "shared.weight"), *b = tz_find(f, "lm_head.weight"),
	                *c = tz_find(f, "encoder.block.0.layer.0.ssm_layer.kernel.C");
	T_OK(a && b && a->data == b->data, "aliases share the storage");
	T_OK(c && c->rank == 4 && c->dims[0] == 2 && c->dims[3] == 2, "C's shape");
	/* same bytes as the safetensors file */
	{
		st_file *s = st_open(t_data("locost/model.safetensors"), &err);
		int same = s != NULL;
		for (uint32_t i = 0; s && i < st_count(s); i++) {
			const st_tensor *x = st_at(s, i), *y = tz_find(f, x->name);
			same &= y && y->nbytes == x->nbytes && !memcmp(x->data, y->data, x->nbytes);
		}
		T_OK(same, "bin and safetensors agree");
		st_close(s);
	}
	tz_close(f);
	/* truncated copies: every cut is refused, none crashes */
	p = t_slurp(t_data("locost/pytorch_model.bin"), &n);
	{
		size_t cuts[] = { 10, 100, 5000, n / 3, n / 2, n - 200, n - 10 };
		for (size_t i = 0; p && i < sizeof cuts / sizeof *cuts; i++) {
			f = tz_parse(p, cuts[i], "cut.bin", &err);
			T_OK(f == NULL, "cut at %zu accepted", cuts[i]);
			tz_close(f);
		}
	}
	free(p);
}

int main(void)
{
	T_RUN(test_pickle_bomb);
	T_RUN(test_handmade);
	T_RUN(test_oracle_file);
	return t_done();
}
