#include "weights/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

struct st_file {
	const unsigned char *base;   /* whole file image */
	size_t len;
	int mapped;
	uint32_t n;
	st_tensor *t;                /* [n], header order */
	uint32_t *byname;            /* [n], indices sorted by name */
	uint32_t nmeta;
	char **meta;                 /* [2 * nmeta]: key, value */
};

static const struct { const char *name; size_t size; } dtypes[ST_DTYPE_END] = {
	[ST_F64] = { "F64", 8 }, [ST_F32] = { "F32", 4 }, [ST_F16] = { "F16", 2 },
	[ST_BF16] = { "BF16", 2 }, [ST_I64] = { "I64", 8 }, [ST_I32] = { "I32", 4 },
	[ST_I16] = { "I16", 2 }, [ST_I8] = { "I8", 1 }, [ST_U8] = { "U8", 1 },
	[ST_BOOL] = { "BOOL", 1 },
};

size_t st_dtype_size(enum st_dtype t)
{
	return (t > 0 && t < ST_DTYPE_END) ? dtypes[t].size : 0;
}

const char *st_dtype_name(enum st_dtype t)
{
	return (t > 0 && t < ST_DTYPE_END) ? dtypes[t].name : "?";
}

int st_dtype_parse(const char *s)
{
	for (int i = 1; i < ST_DTYPE_END; i++)
		if (strcmp(s, dtypes[i].name) == 0)
			return i;
	return -1;
}

void st_release(const st_file *f, const st_tensor *t)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a, b;

	if (!f || !t || !f->mapped || !t->nbytes || pg == 0 || pg == (uintptr_t)-1)
		return;
	a = ((uintptr_t)t->data + pg - 1) / pg * pg;
	b = ((uintptr_t)t->data + t->nbytes) / pg * pg;
	/* a private read-only mapping of a file: its pages drop, the file
	 * stays (nothing here was ever written) */
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

void st_close(st_file *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->n; i++)
		free(f->t[i].name);
	for (uint32_t i = 0; i < 2 * f->nmeta; i++)
		free(f->meta[i]);
	free(f->meta);
	free(f->t);
	free(f->byname);
	if (f->mapped && f->len)
		munmap((void *)f->base, f->len);
	free(f);
}

/* qsort has no context argument in C11: sort (name pointer, index) pairs. */
struct name_ix { const char *name; uint32_t ix; };

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name_ix *)a)->name, ((const struct name_ix *)b)->name);
}

struct span { uint64_t b, e; uint32_t ix; };

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return x->e < y->e ? -1 : x->e > y->e;
}

/* A JSON integer that is a non-negative value. */
static int json_u64(const json_t *j, uint64_t *out)
{
	json_int_t v;

	if (!json_is_integer(j))
		return -1;
	v = json_integer_value(j);
	if (v < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int parse_entry(st_file *f, st_tensor *t, const char *key, json_t *v,
                       uint64_t datalen, const unsigned char *data, struct span *sp,
                       const char *label, lc_err *err)
{
	json_t *jd, *js, *jo;
	const char *k;
	json_t *x;
	size_t i;
	uint64_t b, e, numel = 1, esz;
	int dt;

	(void)f;
	if (!json_is_object(v))
		return lc_fail(err, "%s: tensor \"%s\": header entry is not an object", label, key);
	json_object_foreach(v, k, x) {
		if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
			return lc_fail(err, "%s: tensor \"%s\": unknown field \"%s\"", label, key, k);
	}
	jd = json_object_get(v, "dtype");
	js = json_object_get(v, "shape");
	jo = json_object_get(v, "data_offsets");
	if (!json_is_string(jd) || !json_is_array(js) || !json_is_array(jo))
		return lc_fail(err, "%s: tensor \"%s\": needs dtype, shape and data_offsets", label, key);
	dt = st_dtype_parse(json_string_value(jd));
	if (dt < 0)
		return lc_fail(err, "%s: tensor \"%s\": unknown dtype \"%s\"", label, key,
		               json_string_value(jd));
	if (json_array_size(js) > ST_MAX_RANK)
		return lc_fail(err, "%s: tensor \"%s\": rank %zu exceeds %d", label, key,
		               json_array_size(js), ST_MAX_RANK);
	t->dtype = (enum st_dtype)dt;
	t->rank = (uint32_t)json_array_size(js);
	for (i = 0; i < t->rank; i++) {
		uint64_t d;
		if (json_u64(json_array_get(js, i), &d) < 0)
			return lc_fail(err, "%s: tensor \"%s\": bad shape", label, key);
		t->dims[i] = d;
		if (d && numel > UINT64_MAX / d)
			return lc_fail(err, "%s: tensor \"%s\": shape overflows", label, key);
		numel *= d;
	}
	esz = st_dtype_size(t->dtype);
	if (numel > UINT64_MAX / esz)
		return lc_fail(err, "%s: tensor \"%s\": shape overflows", label, key);
	if (json_array_size(jo) != 2 || json_u64(json_array_get(jo, 0), &b) < 0 ||
	    json_u64(json_array_get(jo, 1), &e) < 0 || b > e)
		return lc_fail(err, "%s: tensor \"%s\": bad data_offsets", label, key);
	if (e > datalen)
		return lc_fail(err, "%s: tensor \"%s\": data_offsets [%llu, %llu] beyond the "
		               "%llu data bytes (truncated file?)", label, key,
		               (unsigned long long)b, (unsigned long long)e,
		               (unsigned long long)datalen);
	if (e - b != numel * esz)
		return lc_fail(err, "%s: tensor \"%s\": %llu bytes for %s %llu elements (need %llu)",
		               label, key, (unsigned long long)(e - b), st_dtype_name(t->dtype),
		               (unsigned long long)numel, (unsigned long long)(numel * esz));
	t->numel = numel;
	t->nbytes = e - b;
	t->data = data + b;
	sp->b = b;
	sp->e = e;
	if (!(t->name = strdup(key)))
		return lc_fail(err, "%s: out of memory", label);
	return 0;
}

/* torch.save's format before PyTorch 1.6 (and with
 * _use_new_zipfile_serialization=False): pickles, not a zip, the first of
 * them torch's magic number 0x1950a86a20f9469cfc6c, as PROTO, a FRAME from
 * protocol 4 on, and LONG1 of 10 bytes. */
static int is_legacy_torch(const unsigned char *p, size_t len)
{
	static const unsigned char magic[12] = { 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
	                                         0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19 };
	size_t at = 2;

	if (len < at || p[0] != 0x80 || p[1] < 2 || p[1] > 5)
		return 0;
	if (len > at && p[at] == 0x95)
		at += 9;
	return len >= at + sizeof magic && memcmp(p + at, magic, sizeof magic) == 0;
}

st_file *st_parse(const void *buf, size_t len, const char *label, lc_err *err)
{
	const unsigned char *p = buf;
	st_file *f = NULL;
	json_t *root = NULL, *v;
	json_error_t jerr;
	struct span *sp = NULL;
	const char *dup;
	const char *key;
	uint64_t hlen, datalen;
	size_t cap;
	uint32_t i;

	if (is_legacy_torch(p, len)) {
		lc_fail(err, "%s: a legacy (non-zip) PyTorch pickle, which lc does not read: save it "
		        "again with PyTorch 1.6 or later (torch.save(torch.load(F), F) writes the zip "
		        "format) or as safetensors (safetensors.torch.save_file)", label);
		return NULL;
	}
	if (len < 8) {
		lc_fail(err, "%s: too short for a safetensors file (%zu bytes)", label, len);
		return NULL;
	}
	/* bytes 0..7 are the header's length, any value; byte 8 opens it */
	if (len > 8 && p[8] != '{') {
		if (p[0] == 'P' && p[1] == 'K' && p[2] < 9 && p[3] < 9)   /* a zip record */
			lc_fail(err, "%s: a zip file that does not start as torch.save's do (with a "
			        "member, PK\\3\\4): damaged, or not a PyTorch checkpoint", label);
		else
			lc_fail(err, "%s: neither a safetensors file (its header, at byte 8, does not "
			        "start with '{') nor a PyTorch zip (those start with PK\\3\\4)", label);
		return NULL;
	}
	hlen = 0;
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)p[i] << (8 * i);
	if (hlen > len - 8) {
		lc_fail(err, "%s: header length %llu exceeds the file (%zu bytes; truncated?)",
		        label, (unsigned long long)hlen, len);
		return NULL;
	}
	if (hlen > ST_MAX_HEADER || hlen < 2) {
		lc_fail(err, "%s: implausible header length %llu", label, (unsigned long long)hlen);
		return NULL;
	}
	datalen = len - 8 - hlen;
	root = json_loadb((const char *)p + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		lc_fail(err, "%s: header is not valid JSON: %s (at byte %d)", label, jerr.text,
		        jerr.position);
		return NULL;
	}
	if (!json_is_object(root)) {
		lc_fail(err, "%s: header is not a JSON object", label);
		goto fail;
	}
	if (!(f = calloc(1, sizeof *f)))
		goto oom;
	f->base = p;
	f->len = len;
	cap = json_object_size(root);
	if (!(f->t = calloc(cap ? cap : 1, sizeof *f->t)) || !(sp = calloc(cap ? cap : 1, sizeof *sp)))
		goto oom;
	json_object_foreach(root, key, v) {
		if (strcmp(key, "__metadata__") == 0) {
			const char *mk;
			json_t *mv;
			if (!json_is_object(v)) {
				lc_fail(err, "%s: __metadata__ is not an object", label);
				goto fail;
			}
			if (!(f->meta = calloc(2 * json_object_size(v) + 1, sizeof *f->meta)))
				goto oom;
			json_object_foreach(v, mk, mv) {
				if (!json_is_string(mv)) {
					lc_fail(err, "%s: __metadata__ value for \"%s\" is not a string", label, mk);
					goto fail;
				}
				if (!(f->meta[2 * f->nmeta] = strdup(mk)))
					goto oom;
				f->nmeta++;
				if (!(f->meta[2 * f->nmeta - 1] = strdup(json_string_value(mv))))
					goto oom;
			}
			continue;
		}
		if (parse_entry(f, &f->t[f->n], key, v, datalen, p + 8 + hlen, &sp[f->n], label, err) < 0) {
			free(f->t[f->n].name);
			f->t[f->n].name = NULL;
			goto fail;
		}
		sp[f->n].ix = f->n;
		f->n++;
	}
	/* overlaps */
	qsort(sp, f->n, sizeof *sp, cmp_span);
	for (i = 1; i < f->n; i++) {
		if (sp[i].b < sp[i - 1].e) {
			lc_fail(err, "%s: tensors \"%s\" and \"%s\" overlap", label,
			        f->t[sp[i - 1].ix].name, f->t[sp[i].ix].name);
			goto fail;
		}
	}
	/* name index */
	if (!(f->byname = malloc((f->n ? f->n : 1) * sizeof *f->byname)))
		goto oom;
	if (st_index_names(f->t, f->n, f->byname, &dup) < 0) {
		if (!dup)
			goto oom;
		lc_fail(err, "%s: tensor \"%s\" appears twice", label, dup);
		goto fail;
	}
	free(sp);
	json_decref(root);
	return f;
oom:
	lc_fail(err, "%s: out of memory", label);
fail:
	free(sp);
	json_decref(root);
	if (f)
		f->mapped = 0;
	st_close(f);
	return NULL;
}

st_file *st_open(const char *path, lc_err *err)
{
	struct stat sb;
	void *m;
	st_file *f;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		lc_fail(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		lc_fail(err, "%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if (sb.st_size < 8) {
		lc_fail(err, "%s: too short for a safetensors file (%lld bytes)", path,
		        (long long)sb.st_size);
		close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		lc_fail(err, "%s: mmap: %s", path, strerror(errno));
		return NULL;
	}
	f = st_parse(m, (size_t)sb.st_size, path, err);
	if (!f) {
		munmap(m, (size_t)sb.st_size);
		return NULL;
	}
	f->mapped = 1;
	return f;
}

uint32_t st_count(const st_file *f) { return f->n; }

const st_tensor *st_at(const st_file *f, uint32_t i)
{
	return i < f->n ? &f->t[i] : NULL;
}

int st_index_names(const st_tensor *t, uint32_t n, uint32_t *byname, const char **dup)
{
	struct name_ix *nx = malloc((n ? n : 1) * sizeof *nx);

	*dup = NULL;
	if (!nx)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		nx[i].name = t[i].name;
		nx[i].ix = i;
	}
	qsort(nx, n, sizeof *nx, cmp_name);
	for (uint32_t i = 0; i < n; i++) {
		if (i && strcmp(nx[i].name, nx[i - 1].name) == 0) {
			*dup = nx[i].name;
			free(nx);
			return -1;
		}
		byname[i] = nx[i].ix;
	}
	free(nx);
	return 0;
}

const st_tensor *st_index_find(const st_tensor *t, const uint32_t *byname, uint32_t n,
                               const char *name)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, t[byname[mid]].name);
		if (c == 0)
			return &t[byname[mid]];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const st_tensor *st_find(const st_file *f, const char *name)
{
	return st_index_find(f->t, f->byname, f->n, name);
}

const char *st_meta(const st_file *f, const char *key)
{
	for (uint32_t i = 0; i < f->nmeta; i++)
		if (strcmp(f->meta[2 * i], key) == 0)
			return f->meta[2 * i + 1];
	return NULL;
}

int st_write(const char *path, const st_tensor *t, uint32_t n, lc_err *err)
{
	json_t *root = json_object(), *e;
	char *hdr = NULL;
	size_t hl, pad;
	uint64_t off = 0;
	unsigned char len8[8];
	FILE *fp = NULL;
	uint32_t i;

	if (!root)
		return lc_fail(err, "%s: out of memory", path);
	json_object_set_new(root, "__metadata__", json_pack("{s:s}", "format", "pt"));
	for (i = 0; i < n; i++) {
		json_t *shape = json_array();
		for (uint32_t r = 0; r < t[i].rank; r++)
			json_array_append_new(shape, json_integer((json_int_t)t[i].dims[r]));
		e = json_pack("{s:s,s:o,s:[I,I]}", "dtype", st_dtype_name(t[i].dtype), "shape", shape,
		              "data_offsets", (json_int_t)off, (json_int_t)(off + t[i].nbytes));
		if (!e || json_object_set_new(root, t[i].name, e) < 0) {
			json_decref(root);
			return lc_fail(err, "%s: cannot build the header", path);
		}
		off += t[i].nbytes;
	}
	hdr = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!hdr)
		return lc_fail(err, "%s: out of memory", path);
	hl = strlen(hdr);
	pad = (8 - (8 + hl) % 8) % 8;
	for (i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)(hl + pad) >> (8 * i));
	if (!(fp = fopen(path, "wb")))
		goto ioerr;
	if (fwrite(len8, 1, 8, fp) != 8 || fwrite(hdr, 1, hl, fp) != hl)
		goto ioerr;
	for (i = 0; i < pad; i++)
		if (fputc(' ', fp) == EOF)
			goto ioerr;
	for (i = 0; i < n; i++)
		if (t[i].nbytes && fwrite(t[i].data, 1, t[i].nbytes, fp) != t[i].nbytes)
			goto ioerr;
	free(hdr);
	if (fclose(fp) != 0) {
		fp = NULL;
		return lc_fail(err, "%s: %s", path, strerror(errno));
	}
	return 0;
ioerr:
	lc_fail(err, "%s: %s", path, strerror(errno));
	free(hdr);
	if (fp)
		fclose(fp);
	return -1;
}
