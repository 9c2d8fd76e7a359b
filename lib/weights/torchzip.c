#include "weights/torchzip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

/* ------------------------------------------------------------ archive */

typedef struct blob {
	char *key;               /* storage key ("0", "1", ...) */
	unsigned char *data;
	uint64_t len;
} blob;

struct tz_file {
	char *label;
	blob *st;                /* [nst] storages */
	uint32_t nst, capst;
	unsigned char *pkl;
	uint64_t pkllen;
	const char *path;        /* the file, or NULL: buf[len] (kept while reading) */
	const void *buf;
	size_t len;
	json_t *meta;            /* checkpoint mode: the root without the state dict */
	st_tensor *t;            /* [n] */
	unsigned char **owned;   /* [n] copies made for non-contiguous tensors (or NULL) */
	uint32_t n;
	uint32_t *byname;
};

static int fail(tz_file *f, lc_err *err, const char *fmt, const char *a, const char *b)
{
	char m[700];
	snprintf(m, sizeof m, fmt, a ? a : "", b ? b : "");
	return lc_fail(err, "%s: %s", f->label, m);
}

/* Reads the current entry into a fresh buffer, growing as data arrives
 * (declared sizes are not trusted), within limit bytes. */
static int read_entry(struct archive *a, uint64_t limit, unsigned char **out, uint64_t *len,
                      tz_file *f, const char *name, lc_err *err)
{
	unsigned char *p = NULL;
	uint64_t n = 0, cap = 0;

	for (;;) {
		la_ssize_t got;
		if (n == cap) {
			uint64_t nc = cap ? 2 * cap : 65536;
			unsigned char *q;
			if (nc > limit + 1)
				nc = limit + 1;
			if (nc <= cap) {
				free(p);
				return fail(f, err, "member \"%s\" is larger than %s accepted", name,
				            "the size");
			}
			if (!(q = realloc(p, nc))) {
				free(p);
				return fail(f, err, "out of memory reading \"%s\"%s", name, "");
			}
			p = q;
			cap = nc;
		}
		got = archive_read_data(a, p + n, (size_t)(cap - n));
		if (got < 0) {
			char m[512];
			snprintf(m, sizeof m, "%s", archive_error_string(a) ? archive_error_string(a) : "read error");
			free(p);
			return fail(f, err, "member \"%s\": %s (truncated or corrupt zip?)", name, m);
		}
		if (got == 0)
			break;
		n += (uint64_t)got;
		if (n > limit) {
			free(p);
			return fail(f, err, "member \"%s\" exceeds the size %s", name, "limit");
		}
	}
	*out = p;
	*len = n;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One pass over the archive: with want NULL, its data.pkl; else the
 * storages whose keys are in want[nwant] (sorted), every other member
 * skipped unread (a checkpoint's optimizer state is never materialized). */
static int read_zip(tz_file *f, struct archive *a, const char **want, uint32_t nwant, lc_err *err)
{
	struct archive_entry *ent;
	uint64_t total = 0;
	int r;

	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(ent);
		const char *slash, *base;

		if (!name || archive_entry_filetype(ent) != AE_IFREG)
			continue;
		slash = strchr(name, '/');
		if (!slash)
			continue;
		base = slash + 1;
		if (!want && strcmp(base, "data.pkl") == 0) {
			if (f->pkl)
				return fail(f, err, "two pickles (\"%s\")%s", name, "");
			if (read_entry(a, TZ_MAX_PICKLE, &f->pkl, &f->pkllen, f, name, err) < 0)
				return -1;
		} else if (want && strncmp(base, "data/", 5) == 0 && base[5] && !strchr(base + 5, '/') &&
		           bsearch(&(const char *){ base + 5 }, want, nwant, sizeof *want, cmp_str)) {
			blob *b;
			for (uint32_t i = 0; i < f->nst; i++)
				if (!strcmp(f->st[i].key, base + 5))
					return fail(f, err, "storage \"%s\" appears twice", base + 5, NULL);
			if (f->nst == f->capst) {
				uint32_t nc = f->capst ? 2 * f->capst : 64;
				blob *q = realloc(f->st, nc * sizeof *q);
				if (!q || nc > (1u << 24)) {
					if (q)
						f->st = q;
					return fail(f, err, "too many storages%s%s", NULL, NULL);
				}
				f->st = q;
				f->capst = nc;
			}
			b = &f->st[f->nst];
			memset(b, 0, sizeof *b);
			if (!(b->key = strdup(base + 5)))
				return fail(f, err, "out of memory%s%s", NULL, NULL);
			f->nst++;
			if (read_entry(a, TZ_MAX_TOTAL - total, &b->data, &b->len, f, name, err) < 0)
				return -1;
			total += b->len;
		} else {
			archive_read_data_skip(a);
		}
	}
	if (r != ARCHIVE_EOF) {
		char m[512];
		snprintf(m, sizeof m, "%s", archive_error_string(a) ? archive_error_string(a) : "bad archive");
		return fail(f, err, "not a readable zip: %s%s (truncated or corrupt?)", m, "");
	}
	if (!want && !f->pkl)
		return fail(f, err, "no ARCHIVE/data.pkl: not a torch.save zip file%s%s", NULL, NULL);
	return 0;
}

/* ------------------------------------------------------------ unpickler */

enum vt { V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_TUPLE, V_LIST, V_DICT, V_GLOBAL, V_STORAGE,
          V_TENSOR, V_MARK, V_BYTES, V_OBJ, V_OPAQUE };
/* What a global is. After G_STORAGE: checkpoint mode only (tz_open_ckpt). */
enum glob { G_ODICT = 1, G_REBUILD_V2, G_REBUILD, G_STORAGE,
            G_PARAM,         /* torch._utils._rebuild_parameter: the tensor itself */
            G_DEFAULTDICT,   /* collections.defaultdict: a dict (its factory ignored) */
            G_RECON,         /* copyreg._reconstructor(cls, base, state): an instance of cls */
            G_NAMESPACE,     /* argparse.Namespace: its state is its attributes */
            G_DICTCONFIG,    /* omegaconf: state "_content", a dict of nodes */
            G_LISTCONFIG,    /* state "_content", a list of nodes */
            G_NODE,          /* AnyNode, StringNode, ...: state "_val" */
            G_OPAQUE };      /* named, kept as an opaque value, never called */

typedef struct val {
	enum vt type;
	int64_t i;                /* INT, BOOL; GLOBAL: enum glob; STORAGE: st_dtype */
	double f;
	char *s;                  /* STR, BYTES (NUL-terminated); STORAGE: key; GLOBAL, OBJ,
	                             OPAQUE: "module.name" */
	struct val *state;        /* OBJ: what BUILD gave it; OPAQUE: its arguments */
	struct val **it;          /* TUPLE/LIST/DICT items (DICT: key, value pairs) */
	uint64_t n, cap;
	int dtype;                /* GLOBAL storage type / STORAGE dtype */
	uint64_t numel;           /* STORAGE */
	/* TENSOR */
	struct val *storage;
	uint64_t off;
	uint32_t rank;
	uint64_t dims[ST_MAX_RANK];
	int64_t strides[ST_MAX_RANK];
} val;

typedef struct up {
	tz_file *f;
	lc_err *err;
	const unsigned char *p, *end;
	val **all;                /* every value, for freeing */
	uint64_t nall, capall;
	val **stack;
	uint64_t sp, capstack;
	val **memo;
	uint64_t nmemo;
	int failed;
	int ckpt;                 /* checkpoint mode: the wider set of globals */
} up;

#define UP_MAX_MEMO  (1u << 22)
#define UP_MAX_STACK (1u << 22)

static int ufail(up *u, const char *what, const char *arg)
{
	char m[600];
	if (u->failed)
		return -1;
	u->failed = 1;
	snprintf(m, sizeof m, what, arg ? arg : "");
	return lc_fail(u->err, "%s: data.pkl at byte %lld: %s", u->f->label,
	               (long long)(u->p - u->f->pkl), m);
}

static val *newv(up *u, enum vt t)
{
	val *v;
	if (u->nall == u->capall) {
		uint64_t nc = u->capall ? 2 * u->capall : 256;
		val **q = realloc(u->all, nc * sizeof *q);
		if (!q) {
			ufail(u, "out of memory%s", NULL);
			return NULL;
		}
		u->all = q;
		u->capall = nc;
	}
	if (!(v = calloc(1, sizeof *v))) {
		ufail(u, "out of memory%s", NULL);
		return NULL;
	}
	v->type = t;
	u->all[u->nall++] = v;
	return v;
}

static int push(up *u, val *v)
{
	if (!v)
		return -1;
	if (u->sp == u->capstack) {
		uint64_t nc = u->capstack ? 2 * u->capstack : 256;
		val **q;
		if (nc > UP_MAX_STACK)
			return ufail(u, "stack too deep%s", NULL);
		if (!(q = realloc(u->stack, nc * sizeof *q)))
			return ufail(u, "out of memory%s", NULL);
		u->stack = q;
		u->capstack = nc;
	}
	u->stack[u->sp++] = v;
	return 0;
}

static val *pop(up *u)
{
	if (u->sp == 0 || u->stack[u->sp - 1]->type == V_MARK) {
		ufail(u, "stack underflow%s", NULL);
		return NULL;
	}
	return u->stack[--u->sp];
}

static int additem(up *u, val *c, val *x)
{
	if (c->n == c->cap) {
		uint64_t nc = c->cap ? 2 * c->cap : 8;
		val **q = realloc(c->it, nc * sizeof *q);
		if (!q)
			return ufail(u, "out of memory%s", NULL);
		c->it = q;
		c->cap = nc;
	}
	c->it[c->n++] = x;
	return 0;
}

/* Index of the topmost MARK, or -1. */
static int64_t findmark(up *u)
{
	for (uint64_t i = u->sp; i > 0; i--)
		if (u->stack[i - 1]->type == V_MARK)
			return (int64_t)(i - 1);
	ufail(u, "no MARK on the stack%s", NULL);
	return -1;
}

static int need(up *u, uint64_t n)
{
	if ((uint64_t)(u->end - u->p) < n)
		return ufail(u, "truncated pickle%s", NULL);
	return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static const struct { const char *mod, *name; int g, dtype; } globals[] = {
	{ "collections", "OrderedDict", G_ODICT, 0 },
	{ "torch._utils", "_rebuild_tensor_v2", G_REBUILD_V2, 0 },
	{ "torch._utils", "_rebuild_tensor", G_REBUILD, 0 },
	{ "torch", "FloatStorage", G_STORAGE, ST_F32 },
	{ "torch", "HalfStorage", G_STORAGE, ST_F16 },
	{ "torch", "BFloat16Storage", G_STORAGE, ST_BF16 },
	{ "torch", "DoubleStorage", G_STORAGE, ST_F64 },
	{ "torch", "LongStorage", G_STORAGE, ST_I64 },
	{ "torch", "IntStorage", G_STORAGE, ST_I32 },
	{ "torch", "ShortStorage", G_STORAGE, ST_I16 },
	{ "torch", "CharStorage", G_STORAGE, ST_I8 },
	{ "torch", "ByteStorage", G_STORAGE, ST_U8 },
	{ "torch", "BoolStorage", G_STORAGE, ST_BOOL },
};

/* Checkpoint mode (fairseq's .pt): the containers of its arguments, and
 * what its other parts (optimizer and meter states, config metadata)
 * hold, which are kept as named opaque values and never called. */
static const struct { const char *mod, *name; int g; } ckpt_globals[] = {
	{ "torch._utils", "_rebuild_parameter", G_PARAM },
	{ "collections", "defaultdict", G_DEFAULTDICT },
	{ "copyreg", "_reconstructor", G_RECON },
	{ "argparse", "Namespace", G_NAMESPACE },
	{ "omegaconf.dictconfig", "DictConfig", G_DICTCONFIG },
	{ "omegaconf.listconfig", "ListConfig", G_LISTCONFIG },
	{ "omegaconf.nodes", "AnyNode", G_NODE },
	{ "omegaconf.nodes", "StringNode", G_NODE },
	{ "omegaconf.nodes", "IntegerNode", G_NODE },
	{ "omegaconf.nodes", "FloatNode", G_NODE },
	{ "omegaconf.nodes", "BooleanNode", G_NODE },
	{ "omegaconf.nodes", "EnumNode", G_NODE },
	{ "omegaconf.nodes", "BytesNode", G_NODE },
	{ "omegaconf.nodes", "PathNode", G_NODE },
};

/* Modules whose globals a checkpoint may name as opaque values: data
 * types and classes of torch, numpy, fairseq and omegaconf, typing's
 * annotations, and the harmless builtin types. Anything else (os, posix,
 * subprocess, builtins.eval, getattr, ...) is refused. */
static int opaque_ok(const char *mod, const char *name)
{
	static const char *const pre[] = { "torch", "numpy", "fairseq", "omegaconf", "typing",
	                                   "datetime", "pathlib" };
	static const char *const builtin[] = { "object", "dict", "list", "tuple", "set",
	                                       "frozenset", "int", "float", "str", "bool", "bytes",
	                                       "bytearray", "complex", "slice", "range", "type",
	                                       /* protocol 2's Python 2 names of int, str, range */
	                                       "long", "unicode", "xrange" };

	if (!strcmp(mod, "builtins") || !strcmp(mod, "__builtin__")) {
		for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
			if (!strcmp(name, builtin[i]))
				return 1;
		return 0;
	}
	if (!strcmp(mod, "_codecs") && !strcmp(name, "encode"))   /* numpy scalars' bytes */
		return 1;
	for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) {
		size_t l = strlen(pre[i]);
		if (!strncmp(mod, pre[i], l) && (mod[l] == 0 || mod[l] == '.'))
			return 1;
	}
	return 0;
}

static int global(up *u, const char *mod, const char *name)
{
	char what[300];
	val *v;

	snprintf(what, sizeof what, "%.120s.%.120s", mod, name);
	for (size_t i = 0; i < sizeof globals / sizeof *globals; i++)
		if (!strcmp(mod, globals[i].mod) && !strcmp(name, globals[i].name)) {
			if (!(v = newv(u, V_GLOBAL)))
				return -1;
			v->i = globals[i].g;
			v->dtype = globals[i].dtype;
			return push(u, v);
		}
	if (u->ckpt) {
		int g = 0;
		for (size_t i = 0; i < sizeof ckpt_globals / sizeof *ckpt_globals; i++)
			if (!strcmp(mod, ckpt_globals[i].mod) && !strcmp(name, ckpt_globals[i].name))
				g = ckpt_globals[i].g;
		if (!g && opaque_ok(mod, name))
			g = G_OPAQUE;
		if (g) {
			if (!(v = newv(u, V_GLOBAL)))
				return -1;
			v->i = g;
			if (!(v->s = strdup(what)))
				return ufail(u, "out of memory%s", NULL);
			return push(u, v);
		}
		return ufail(u, "refusing global %s (a checkpoint may hold only torch tensors, "
		             "argparse/omegaconf arguments and plain data)", what);
	}
	return ufail(u, "refusing global %s (only what torch.save writes for a state dict is "
	             "allowed)", what);
}

static int str(up *u, uint64_t n)
{
	val *v;

	if (need(u, n) < 0 || !(v = newv(u, V_STR)))
		return -1;
	if (!(v->s = malloc(n + 1)))
		return ufail(u, "out of memory%s", NULL);
	memcpy(v->s, u->p, n);
	v->s[n] = 0;
	v->n = n;
	u->p += n;
	return push(u, v);
}

static int intv(up *u, int64_t x)
{
	val *v = newv(u, V_INT);
	if (!v)
		return -1;
	v->i = x;
	return push(u, v);
}

static int tuple_from(up *u, uint64_t from)
{
	val *t = newv(u, V_TUPLE);
	if (!t)
		return -1;
	for (uint64_t i = from; i < u->sp; i++)
		if (additem(u, t, u->stack[i]) < 0)
			return -1;
	u->sp = from;
	return push(u, t);
}

static int int_tuple(up *u, const val *t, uint32_t *rank, uint64_t *dims, int64_t *sdims)
{
	if (t->type != V_TUPLE)
		return ufail(u, "tensor size/stride is not a tuple%s", NULL);
	if (t->n > ST_MAX_RANK)
		return ufail(u, "tensor rank too large%s", NULL);
	for (uint64_t i = 0; i < t->n; i++) {
		if (t->it[i]->type != V_INT || t->it[i]->i < 0)
			return ufail(u, "tensor size/stride is not a non-negative int%s", NULL);
		if (dims)
			dims[i] = (uint64_t)t->it[i]->i;
		if (sdims)
			sdims[i] = t->it[i]->i;
	}
	*rank = (uint32_t)t->n;
	return 0;
}

/* An instance of class global cls (NEWOBJ, copyreg._reconstructor): the
 * argument containers become objects that BUILD fills; other classes
 * opaque values. */
static int instance(up *u, const val *cls, val *args)
{
	val *v;

	if (cls->type != V_GLOBAL)
		return ufail(u, "an instance of something that is not a class%s", NULL);
	switch (cls->i) {
	case G_ODICT:
	case G_DEFAULTDICT:
		return push(u, newv(u, V_DICT));
	case G_NAMESPACE: case G_DICTCONFIG: case G_LISTCONFIG: case G_NODE: case G_OPAQUE:
		if (!(v = newv(u, cls->i == G_OPAQUE ? V_OPAQUE : V_OBJ)))
			return -1;
		v->i = cls->i;
		if (!(v->s = strdup(cls->s)))
			return ufail(u, "out of memory%s", NULL);
		if (cls->i == G_OPAQUE)
			v->state = args;
		return push(u, v);
	default:
		return ufail(u, "an instance of a function or storage type%s", NULL);
	}
}

static int reduce(up *u)
{
	val *args = pop(u), *fn = pop(u), *v;

	if (!args || !fn)
		return -1;
	if (fn->type != V_GLOBAL || args->type != V_TUPLE)
		return ufail(u, "REDUCE of something that is not an allowed global%s", NULL);
	switch (fn->i) {
	case G_ODICT:
		if (args->n != 0)
			return ufail(u, "OrderedDict with arguments%s", NULL);
		return push(u, newv(u, V_DICT));
	case G_DEFAULTDICT:
		return push(u, newv(u, V_DICT));
	case G_PARAM:
		if (args->n < 1 || args->it[0]->type != V_TENSOR)
			return ufail(u, "bad arguments to _rebuild_parameter%s", NULL);
		return push(u, args->it[0]);
	case G_RECON:
		if (args->n < 1)
			return ufail(u, "bad arguments to copyreg._reconstructor%s", NULL);
		return instance(u, args->it[0], NULL);
	case G_NAMESPACE: case G_DICTCONFIG: case G_LISTCONFIG: case G_NODE: case G_OPAQUE:
		/* a call that is never made: an opaque value, or an empty object */
		return instance(u, fn, args);
	case G_REBUILD_V2:
	case G_REBUILD: {
		uint32_t r1, r2;
		if (args->n < 4 || args->it[0]->type != V_STORAGE || args->it[1]->type != V_INT ||
		    args->it[1]->i < 0)
			return ufail(u, "bad arguments to _rebuild_tensor%s", NULL);
		if (!(v = newv(u, V_TENSOR)))
			return -1;
		v->storage = args->it[0];
		v->off = (uint64_t)args->it[1]->i;
		if (int_tuple(u, args->it[2], &r1, v->dims, NULL) < 0 ||
		    int_tuple(u, args->it[3], &r2, NULL, v->strides) < 0)
			return -1;
		if (r1 != r2)
			return ufail(u, "tensor size and stride differ in rank%s", NULL);
		v->rank = r1;
		return push(u, v);
	}
	default:
		return ufail(u, "REDUCE of a storage type%s", NULL);
	}
}

static int persid(up *u)
{
	val *t = pop(u), *v;

	if (!t)
		return -1;
	if (t->type != V_TUPLE || t->n != 5 || t->it[0]->type != V_STR ||
	    strcmp(t->it[0]->s, "storage") || t->it[1]->type != V_GLOBAL ||
	    t->it[1]->i != G_STORAGE || t->it[2]->type != V_STR || t->it[4]->type != V_INT ||
	    t->it[4]->i < 0)
		return ufail(u, "persistent id is not ('storage', torch.XStorage, key, location, "
		             "numel)%s", NULL);
	if (!(v = newv(u, V_STORAGE)))
		return -1;
	v->dtype = t->it[1]->dtype;
	v->s = t->it[2]->s;       /* owned by the STR value */
	v->numel = (uint64_t)t->it[4]->i;
	return push(u, v);
}

static val *unpickle(up *u)
{
	int64_t m;

	while (!u->failed) {
		unsigned op;
		val *v, *x, *y;
		uint64_t n;

		if (need(u, 1) < 0)
			return NULL;
		op = *u->p++;
		switch (op) {
		case 0x80: /* PROTO */
			if (need(u, 1) < 0)
				return NULL;
			if (*u->p > 5)
				ufail(u, "pickle protocol above 5%s", NULL);
			u->p++;
			break;
		case 0x95: /* FRAME */
			if (need(u, 8) < 0)
				return NULL;
			u->p += 8;
			break;
		case 'c': { /* GLOBAL "mod\nname\n" */
			const unsigned char *a = u->p, *nl1, *nl2;
			char mod[128], name[128];
			nl1 = memchr(a, '\n', (size_t)(u->end - a));
			nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(u->end - nl1 - 1)) : NULL;
			if (!nl2) {
				ufail(u, "truncated GLOBAL%s", NULL);
				return NULL;
			}
			snprintf(mod, sizeof mod, "%.*s", (int)(nl1 - a), (const char *)a);
			snprintf(name, sizeof name, "%.*s", (int)(nl2 - nl1 - 1), (const char *)nl1 + 1);
			u->p = nl2 + 1;
			global(u, mod, name);
			break;
		}
		case 0x93: /* STACK_GLOBAL */
			y = pop(u);
			x = pop(u);
			if (!x || !y)
				return NULL;
			if (x->type != V_STR || y->type != V_STR) {
				ufail(u, "STACK_GLOBAL of non-strings%s", NULL);
				return NULL;
			}
			global(u, x->s, y->s);
			break;
		case 'q': case 'r': case 0x94: /* BINPUT, LONG_BINPUT, MEMOIZE */
			if (op == 'q') {
				if (need(u, 1) < 0)
					return NULL;
				n = *u->p++;
			} else if (op == 'r') {
				if (need(u, 4) < 0)
					return NULL;
				n = le(u->p, 4);
				u->p += 4;
			} else {
				n = u->nmemo;
			}
			if (u->sp == 0 || u->stack[u->sp - 1]->type == V_MARK) {
				ufail(u, "memo of nothing%s", NULL);
				return NULL;
			}
			if (n >= UP_MAX_MEMO) {
				ufail(u, "memo index too large%s", NULL);
				return NULL;
			}
			if (n >= u->nmemo) {
				uint64_t nc = n + 1 > 2 * u->nmemo ? n + 1 : 2 * u->nmemo;
				val **q = realloc(u->memo, nc * sizeof *q);
				if (!q) {
					ufail(u, "out of memory%s", NULL);
					return NULL;
				}
				memset(q + u->nmemo, 0, (nc - u->nmemo) * sizeof *q);
				u->memo = q;
				u->nmemo = nc;
			}
			u->memo[n] = u->stack[u->sp - 1];
			break;
		case 'h': case 'j': /* BINGET, LONG_BINGET */
			n = op == 'h' ? (need(u, 1) < 0 ? UINT64_MAX : *u->p) :
			    (need(u, 4) < 0 ? UINT64_MAX : le(u->p, 4));
			if (n == UINT64_MAX)
				return NULL;
			u->p += op == 'h' ? 1 : 4;
			if (n >= u->nmemo || !u->memo[n]) {
				ufail(u, "memo entry missing%s", NULL);
				return NULL;
			}
			push(u, u->memo[n]);
			break;
		case '(': /* MARK */
			push(u, newv(u, V_MARK));
			break;
		case ')': /* EMPTY_TUPLE */
			push(u, newv(u, V_TUPLE));
			break;
		case 't': /* TUPLE: the items above the topmost MARK replace it */
			if ((m = findmark(u)) < 0 || tuple_from(u, (uint64_t)m + 1) < 0)
				return NULL;
			u->stack[m] = u->stack[u->sp - 1];
			u->sp = (uint64_t)m + 1;
			break;
		case 0x85: case 0x86: case 0x87: /* TUPLE1..3 */
			n = op - 0x84;
			if (u->sp < n) {
				ufail(u, "stack underflow%s", NULL);
				return NULL;
			}
			for (uint64_t i = u->sp - n; i < u->sp; i++)
				if (u->stack[i]->type == V_MARK) {
					ufail(u, "MARK inside TUPLE%s", NULL);
					return NULL;
				}
			tuple_from(u, u->sp - n);
			break;
		case ']': /* EMPTY_LIST */
			push(u, newv(u, V_LIST));
			break;
		case '}': /* EMPTY_DICT */
			push(u, newv(u, V_DICT));
			break;
		case 'N':
			push(u, newv(u, V_NONE));
			break;
		case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
			if ((v = newv(u, V_BOOL)))
				v->i = op == 0x88;
			push(u, v);
			break;
		case 'K':
			if (need(u, 1) < 0)
				return NULL;
			intv(u, *u->p++);
			break;
		case 'M':
			if (need(u, 2) < 0)
				return NULL;
			intv(u, (int64_t)le(u->p, 2));
			u->p += 2;
			break;
		case 'J':
			if (need(u, 4) < 0)
				return NULL;
			intv(u, (int32_t)(uint32_t)le(u->p, 4));
			u->p += 4;
			break;
		case 0x8a: /* LONG1 */
			if (need(u, 1) < 0)
				return NULL;
			n = *u->p++;
			if (n > 8 || need(u, n) < 0) {
				ufail(u, "integer too large%s", NULL);
				return NULL;
			}
			{
				uint64_t w = le(u->p, (int)n);
				if (n && n < 8 && (u->p[n - 1] & 0x80))
					w |= ~0ull << (8 * n);
				u->p += n;
				intv(u, (int64_t)w);
			}
			break;
		case 'G': /* BINFLOAT, big-endian */
			if (need(u, 8) < 0)
				return NULL;
			{
				uint64_t w = 0;
				for (int i = 0; i < 8; i++)
					w = w << 8 | u->p[i];
				u->p += 8;
				if ((v = newv(u, V_FLOAT)))
					memcpy(&v->f, &w, 8);
				push(u, v);
			}
			break;
		case 'X': case 0x8c: case 0x8d: case 'U': case 'T': /* strings */
			n = (op == 0x8c || op == 'U') ? 1 : op == 0x8d ? 8 : 4;
			if (need(u, n) < 0)
				return NULL;
			{
				uint64_t len = le(u->p, (int)n);
				u->p += n;
				str(u, len);
			}
			break;
		case 'a': /* APPEND */
			x = pop(u);
			if (x && u->ckpt && u->sp && u->stack[u->sp - 1]->type == V_OPAQUE)
				break;
			if (!x || u->sp == 0 || u->stack[u->sp - 1]->type != V_LIST) {
				ufail(u, "APPEND to a non-list%s", NULL);
				return NULL;
			}
			additem(u, u->stack[u->sp - 1], x);
			break;
		case 'e': case 'u': case 's': { /* APPENDS, SETITEMS, SETITEM */
			uint64_t from;
			val *c;
			if (op == 's') {
				if (u->sp < 3) {
					ufail(u, "stack underflow%s", NULL);
					return NULL;
				}
				from = u->sp - 2;
				c = u->stack[from - 1];
			} else {
				if ((m = findmark(u)) < 1) {
					if (m == 0)
						ufail(u, "nothing below MARK%s", NULL);
					return NULL;
				}
				from = (uint64_t)m + 1;
				c = u->stack[m - 1];
			}
			if (u->ckpt && c->type == V_OPAQUE) {   /* a subclass' items: not kept */
				u->sp = op == 's' ? from : from - 1;
				break;
			}
			if (c->type != (op == 'e' ? V_LIST : V_DICT)) {
				ufail(u, "%s on the wrong type", op == 'e' ? "APPENDS" : "SETITEM(S)");
				return NULL;
			}
			if (op != 'e' && (u->sp - from) % 2) {
				ufail(u, "odd number of items for SETITEMS%s", NULL);
				return NULL;
			}
			for (uint64_t i = from; i < u->sp; i++) {
				if (u->stack[i]->type == V_MARK) {
					ufail(u, "MARK among items%s", NULL);
					return NULL;
				}
				additem(u, c, u->stack[i]);
			}
			u->sp = op == 's' ? from : from - 1;
			break;
		}
		case 'R':
			reduce(u);
			break;
		case 0x81: case 0x92: /* NEWOBJ cls args, NEWOBJ_EX cls args kwargs */
			if (!u->ckpt) {
				ufail(u, "opcode %s is not allowed", op == 0x81 ? "0x81" : "0x92");
				return NULL;
			}
			if (op == 0x92 && !pop(u))
				return NULL;
			y = pop(u);
			x = pop(u);
			if (!x || !y)
				return NULL;
			instance(u, x, y);
			break;
		case 'b': /* BUILD: an object's state; else only an empty one */
			x = pop(u);
			if (!x)
				return NULL;
			if (u->sp == 0 || u->stack[u->sp - 1]->type == V_MARK) {
				ufail(u, "stack underflow%s", NULL);
				return NULL;
			}
			y = u->stack[u->sp - 1];
			if (u->ckpt && y->type == V_OBJ) {
				y->state = x;
				break;
			}
			if (u->ckpt && y->type == V_OPAQUE)
				break;
			if (!(x->type == V_NONE || ((x->type == V_DICT || x->type == V_TUPLE) && x->n == 0))) {
				ufail(u, "BUILD with a state%s", NULL);
				return NULL;
			}
			break;
		case 'B': case 'C': case 0x8e: /* BINBYTES, SHORT_BINBYTES, BINBYTES8 */
			n = op == 'C' ? 1 : op == 'B' ? 4 : 8;
			if (need(u, n) < 0)
				return NULL;
			{
				uint64_t len = le(u->p, (int)n);
				u->p += n;
				if (str(u, len) == 0)
					u->stack[u->sp - 1]->type = V_BYTES;
			}
			break;
		case 0x8b: /* LONG4: only as small as LONG1's */
			if (need(u, 4) < 0)
				return NULL;
			n = le(u->p, 4);
			u->p += 4;
			if (n > 8 || need(u, n) < 0) {
				ufail(u, "integer too large%s", NULL);
				return NULL;
			}
			{
				uint64_t w = le(u->p, (int)n);
				if (n && n < 8 && (u->p[n - 1] & 0x80))
					w |= ~0ull << (8 * n);
				u->p += n;
				intv(u, (int64_t)w);
			}
			break;
		case 0x8f: /* EMPTY_SET: a list */
			push(u, newv(u, V_LIST));
			break;
		case 0x90: case 0x91: /* ADDITEMS (to a set), FROZENSET (from MARK) */
			if ((m = findmark(u)) < 0)
				return NULL;
			if (op == 0x90) {
				if (m < 1 || u->stack[m - 1]->type != V_LIST) {
					ufail(u, "ADDITEMS to a non-set%s", NULL);
					return NULL;
				}
				v = u->stack[m - 1];
			} else if (!(v = newv(u, V_LIST))) {
				return NULL;
			}
			for (uint64_t i = (uint64_t)m + 1; i < u->sp; i++)
				additem(u, v, u->stack[i]);
			u->sp = (uint64_t)m;
			if (op == 0x91)
				push(u, v);
			break;
		case 'd': case 'l': /* DICT, LIST from the items above MARK */
			if ((m = findmark(u)) < 0 || !(v = newv(u, op == 'd' ? V_DICT : V_LIST)))
				return NULL;
			if (op == 'd' && (u->sp - (uint64_t)m - 1) % 2) {
				ufail(u, "odd number of items for DICT%s", NULL);
				return NULL;
			}
			for (uint64_t i = (uint64_t)m + 1; i < u->sp; i++)
				additem(u, v, u->stack[i]);
			u->sp = (uint64_t)m;
			push(u, v);
			break;
		case '0': /* POP */
			if (u->sp == 0) {
				ufail(u, "stack underflow%s", NULL);
				return NULL;
			}
			u->sp--;
			break;
		case '1': /* POP_MARK */
			if ((m = findmark(u)) < 0)
				return NULL;
			u->sp = (uint64_t)m;
			break;
		case '2': /* DUP */
			if (u->sp == 0 || u->stack[u->sp - 1]->type == V_MARK) {
				ufail(u, "stack underflow%s", NULL);
				return NULL;
			}
			push(u, u->stack[u->sp - 1]);
			break;
		case 'Q':
			persid(u);
			break;
		case '.': /* STOP */
			if (u->sp != 1) {
				ufail(u, "STOP with %s items on the stack", u->sp ? "several" : "no");
				return NULL;
			}
			return u->stack[0];
		default: {
			char o[8];
			snprintf(o, sizeof o, "0x%02x", op);
			ufail(u, "opcode %s is not allowed", o);
			return NULL;
		}
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ tensors */

static blob *find_blob(tz_file *f, const char *key)
{
	for (uint32_t i = 0; i < f->nst; i++)
		if (strcmp(f->st[i].key, key) == 0)
			return &f->st[i];
	return NULL;
}

static int make_tensors(tz_file *f, const val *d, lc_err *err)
{
	const char *dup;
	uint32_t n = (uint32_t)(d->n / 2);

	if (d->type != V_DICT)
		return fail(f, err, "the pickle is not a state dict%s%s", NULL, NULL);
	f->t = calloc(n ? n : 1, sizeof *f->t);
	f->owned = calloc(n ? n : 1, sizeof *f->owned);
	f->byname = calloc(n ? n : 1, sizeof *f->byname);
	if (!f->t || !f->owned || !f->byname)
		return fail(f, err, "out of memory%s%s", NULL, NULL);
	for (uint32_t i = 0; i < n; i++) {
		const val *k = d->it[2 * i], *v = d->it[2 * i + 1], *s;
		st_tensor *t = &f->t[i];
		blob *b;
		size_t es;
		uint64_t numel = 1, ext = 0, stnumel;
		int contig = 1;
		int64_t expect = 1;

		if (k->type != V_STR || strlen(k->s) != k->n)
			return fail(f, err, "a state dict key is not a string%s%s", NULL, NULL);
		if (v->type != V_TENSOR)
			return fail(f, err, "\"%s\" is not a tensor%s", k->s, NULL);
		s = v->storage;
		es = st_dtype_size((enum st_dtype)s->dtype);
		if (!(b = find_blob(f, s->s)))
			return fail(f, err, "\"%s\": storage \"%s\" is missing from the archive", k->s, s->s);
		stnumel = b->len / es;
		if (s->numel > stnumel)
			return fail(f, err, "\"%s\": storage \"%s\" is shorter than declared", k->s, s->s);
		t->rank = v->rank;
		for (uint32_t r = 0; r < v->rank; r++) {
			t->dims[r] = v->dims[r];
			if (v->dims[r] && numel > UINT64_MAX / v->dims[r])
				return fail(f, err, "\"%s\": shape overflows%s", k->s, NULL);
			numel *= v->dims[r];
		}
		for (uint32_t r = v->rank; r-- > 0;) {
			if (v->dims[r] != 1 && v->strides[r] != expect)
				contig = 0;
			expect *= (int64_t)(v->dims[r] ? v->dims[r] : 1);
		}
		if (numel) {
			for (uint32_t r = 0; r < v->rank; r++) {
				uint64_t st = (uint64_t)v->strides[r], dm = v->dims[r] - 1;
				if (dm && st > (UINT64_MAX / 2) / dm)
					return fail(f, err, "\"%s\": strides overflow%s", k->s, NULL);
				ext += st * dm;
				if (ext > UINT64_MAX / 4)
					return fail(f, err, "\"%s\": strides overflow%s", k->s, NULL);
			}
			if (v->off > s->numel || ext >= s->numel - v->off)
				return fail(f, err, "\"%s\": view reaches beyond its storage \"%s\"", k->s, s->s);
		}
		if (numel > s->numel && numel)
			return fail(f, err, "\"%s\": more elements than its storage%s", k->s, NULL);
		if (!(t->name = strdup(k->s)))
			return fail(f, err, "out of memory%s%s", NULL, NULL);
		f->n = i + 1;
		t->dtype = (enum st_dtype)s->dtype;
		t->numel = numel;
		t->nbytes = numel * es;
		if (contig || numel == 0) {
			t->data = b->data + v->off * es;
		} else {
			unsigned char *c = malloc(t->nbytes);
			uint64_t idx[ST_MAX_RANK] = { 0 };
			if (!c)
				return fail(f, err, "out of memory%s%s", NULL, NULL);
			for (uint64_t e = 0; e < numel; e++) {
				uint64_t o = v->off;
				for (uint32_t r = 0; r < v->rank; r++)
					o += idx[r] * (uint64_t)v->strides[r];
				memcpy(c + e * es, b->data + o * es, es);
				for (uint32_t r = v->rank; r-- > 0;) {
					if (++idx[r] < v->dims[r])
						break;
					idx[r] = 0;
				}
			}
			f->owned[i] = c;
			t->data = c;
		}
	}
	if (st_index_names(f->t, n, f->byname, &dup) < 0)
		return dup ? fail(f, err, "key \"%s\" appears twice%s", dup, NULL)
		           : fail(f, err, "out of memory%s%s", NULL, NULL);
	return 0;
}

/* ------------------------------------------------------------ metadata */

#define TZ_MAX_DEPTH 64           /* nesting of the metadata accepted */
#define TZ_MAX_NODES (1u << 20)   /* JSON values made (shared references count each time) */

typedef struct jctx {
	up *u;
	uint64_t nodes;
} jctx;

static json_t *tag(const char *key, json_t *v)
{
	json_t *o = json_object();
	if (o && v && json_object_set_new(o, key, v) == 0)
		return o;
	json_decref(o);
	return NULL;
}

/* The state dict entry `key` of a BUILD state (a dict), or NULL. */
static const val *state_get(const val *st, const char *key)
{
	if (!st || st->type != V_DICT)
		return NULL;
	for (uint64_t i = st->n / 2; i-- > 0;)   /* the last of a repeated key, as Python */
		if (st->it[2 * i]->type == V_STR && !strcmp(st->it[2 * i]->s, key))
			return st->it[2 * i + 1];
	return NULL;
}

/* A value as JSON: plain data as itself; argparse.Namespace as the object
 * of its attributes; omegaconf's DictConfig / ListConfig / nodes as their
 * content (never their _parent or _metadata); the rest as tagged objects:
 * {"__tensor__": [dims]}, {"__opaque__": "module.name"} (an instance or a
 * call never made), {"__global__": ...} (a class named), {"__bytes__": n},
 * {"__float__": "nan"}. Dict keys that are not strings or ints are left
 * out. NULL when too deep, too large, or out of memory (u->failed). */
static json_t *to_json(jctx *c, const val *v, int depth)
{
	json_t *j = NULL;

	if (c->u->failed)
		return NULL;
	if (depth > TZ_MAX_DEPTH || ++c->nodes > TZ_MAX_NODES) {
		ufail(c->u, "the checkpoint's metadata is nested too deep or too large%s", NULL);
		return NULL;
	}
	switch (v->type) {
	case V_NONE:
		j = json_null();
		break;
	case V_BOOL:
		j = json_boolean(v->i);
		break;
	case V_INT:
		j = json_integer(v->i);
		break;
	case V_FLOAT:
		j = isfinite(v->f) ? json_real(v->f)
		                   : tag("__float__", json_string(isnan(v->f) ? "nan" : v->f > 0 ? "inf"
		                                                                                  : "-inf"));
		break;
	case V_STR:
		if (!(j = json_stringn(v->s, v->n)))   /* not UTF-8 (a Python 2 str) */
			j = tag("__bytes__", json_integer((json_int_t)v->n));
		break;
	case V_BYTES:
		j = tag("__bytes__", json_integer((json_int_t)v->n));
		break;
	case V_TUPLE: case V_LIST:
		j = json_array();
		for (uint64_t i = 0; j && i < v->n; i++) {
			json_t *x = to_json(c, v->it[i], depth + 1);
			if (!x || json_array_append_new(j, x) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		break;
	case V_DICT:
		j = json_object();
		for (uint64_t i = 0; j && i + 1 < v->n; i += 2) {
			const val *k = v->it[i];
			char num[32];
			const char *key = NULL;
			json_t *x;
			if (k->type == V_STR && strlen(k->s) == k->n)
				key = k->s;
			else if (k->type == V_INT)
				snprintf(num, sizeof num, "%lld", (long long)k->i), key = num;
			if (!key)
				continue;
			if (!(x = to_json(c, v->it[i + 1], depth + 1)) || json_object_set_new(j, key, x) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		break;
	case V_TENSOR:
		j = json_array();
		for (uint32_t r = 0; j && r < v->rank; r++)
			json_array_append_new(j, json_integer((json_int_t)v->dims[r]));
		j = tag("__tensor__", j);
		break;
	case V_OBJ: {
		const val *x = NULL;
		if (v->i == G_NAMESPACE) {
			x = v->state;
			/* (dict, slots) states: the dict */
			if (x && x->type == V_TUPLE && x->n == 2)
				x = x->it[0];
			if (!x || x->type == V_NONE)
				j = json_object();
			else if (x->type != V_DICT)
				j = tag("__opaque__", json_string(v->s));
		} else {
			x = state_get(v->state, v->i == G_NODE ? "_val" : "_content");
			if (!x)
				j = v->i == G_NODE ? json_null() : tag("__opaque__", json_string(v->s));
		}
		if (!j)
			return to_json(c, x, depth + 1);
		break;
	}
	case V_OPAQUE:
		j = tag("__opaque__", json_string(v->s));
		if (j && v->state && v->state->type == V_TUPLE && v->state->n) {
			/* a call's arguments (an enum member's value) */
			json_t *x = to_json(c, v->state, depth + 1);
			if (!x || json_object_set_new(j, "__args__", x) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		break;
	case V_GLOBAL:
		j = tag("__global__", json_string(v->s ? v->s : "torch"));
		break;
	case V_STORAGE:
		j = tag("__opaque__", json_string("torch storage"));
		break;
	case V_MARK:
		break;
	}
	if (!j)
		ufail(c->u, "out of memory%s", NULL);
	return j;
}

/* ------------------------------------------------------------ reading */

static struct archive *open_archive(tz_file *f, lc_err *err)
{
	struct archive *a = archive_read_new();
	int r;

	if (!a) {
		lc_fail(err, "%s: out of memory", f->label);
		return NULL;
	}
	/* seekable: the central directory is read, so a truncated file is refused */
	archive_read_support_format_zip_seekable(a);
	r = f->path ? archive_read_open_filename(a, f->path, 1 << 16)
	            : archive_read_open_memory(a, f->buf, f->len);
	if (r != ARCHIVE_OK) {
		lc_fail(err, "%s: %s", f->label, archive_error_string(a) ? archive_error_string(a)
		                                                        : "cannot open");
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* The storage keys of the tensors of dict d, sorted and unique. */
static const char **wanted(const val *d, uint32_t *n)
{
	const char **w = malloc((d->n / 2 + 1) * sizeof *w);
	uint32_t k = 0;

	if (!w)
		return NULL;
	for (uint64_t i = 0; i + 1 < d->n; i += 2)
		if (d->it[i + 1]->type == V_TENSOR)
			w[k++] = d->it[i + 1]->storage->s;
	qsort(w, k, sizeof *w, cmp_str);
	*n = 0;
	for (uint32_t i = 0; i < k; i++)
		if (!*n || strcmp(w[*n - 1], w[i]))
			w[(*n)++] = w[i];
	return w;
}

/* Both passes: the pickle, then the storages the state dict needs. With
 * key non-NULL (checkpoint mode) the state dict is root[key] and the
 * rest of the root becomes f->meta. */
static tz_file *finish(tz_file *f, const char *key, lc_err *err)
{
	struct archive *a;
	up u;
	val *root, *sd = NULL;
	const char **want = NULL;
	uint32_t nwant = 0;
	int rc = -1;

	memset(&u, 0, sizeof u);
	if (!(a = open_archive(f, err)))
		goto out_nou;
	if (read_zip(f, a, NULL, 0, err) < 0) {
		archive_read_free(a);
		goto out_nou;
	}
	archive_read_free(a);
	u.f = f;
	u.err = err;
	u.p = f->pkl;
	u.end = f->pkl + f->pkllen;
	u.ckpt = key != NULL;
	root = unpickle(&u);
	if (!root || u.failed)
		goto out;
	sd = root;
	if (key) {
		jctx c = { &u, 0 };
		if (root->type != V_DICT) {
			fail(f, err, "the pickle is not a checkpoint (a dict with \"%s\")%s", key, NULL);
			goto out;
		}
		sd = (val *)state_get(root, key);
		if (!sd) {
			fail(f, err, "the checkpoint has no \"%s\" (its state dict)%s", key, NULL);
			goto out;
		}
		if (!(f->meta = json_object()))
			goto oom;
		for (uint64_t i = 0; i + 1 < root->n; i += 2) {
			const val *k = root->it[i];
			json_t *x;
			if (k->type != V_STR || strlen(k->s) != k->n)
				continue;
			x = root->it[i + 1] == sd ? tag("__state_dict__", json_integer((json_int_t)sd->n / 2))
			                          : to_json(&c, root->it[i + 1], 1);
			if (!x || json_object_set_new(f->meta, k->s, x) < 0) {
				if (!u.failed)
					goto oom;
				goto out;
			}
		}
	}
	if (sd->type != V_DICT) {
		fail(f, err, "the pickle is not a state dict%s%s", NULL, NULL);
		goto out;
	}
	if (!(want = wanted(sd, &nwant)))
		goto oom;
	if (nwant) {
		if (!(a = open_archive(f, err)))
			goto out;
		if (read_zip(f, a, want, nwant, err) < 0) {
			archive_read_free(a);
			goto out;
		}
		archive_read_free(a);
	}
	rc = make_tensors(f, sd, err);
	goto out;
oom:
	fail(f, err, "out of memory%s%s", NULL, NULL);
out:
	for (uint64_t i = 0; i < u.nall; i++) {
		if (u.all[i]->type != V_STORAGE)
			free(u.all[i]->s);
		free(u.all[i]->it);
		free(u.all[i]);
	}
	free(u.all);
	free(u.stack);
	free(u.memo);
out_nou:
	free(want);
	free(f->pkl);
	f->pkl = NULL;
	f->path = NULL;
	f->buf = NULL;
	if (rc < 0) {
		tz_close(f);
		return NULL;
	}
	return f;
}

static tz_file *new_file(const char *label, const char *path, const void *buf, size_t len,
                         lc_err *err)
{
	tz_file *f = calloc(1, sizeof *f);

	if (!f || !(f->label = strdup(label))) {
		free(f);
		lc_fail(err, "%s: out of memory", label);
		return NULL;
	}
	f->path = path;
	f->buf = buf;
	f->len = len;
	return f;
}

tz_file *tz_open(const char *path, lc_err *err)
{
	tz_file *f = new_file(path, path, NULL, 0, err);
	return f ? finish(f, NULL, err) : NULL;
}

tz_file *tz_parse(const void *buf, size_t len, const char *label, lc_err *err)
{
	tz_file *f = new_file(label, NULL, buf, len, err);
	return f ? finish(f, NULL, err) : NULL;
}

tz_file *tz_open_ckpt(const char *path, const char *key, lc_err *err)
{
	tz_file *f = new_file(path, path, NULL, 0, err);
	return f ? finish(f, key, err) : NULL;
}

tz_file *tz_parse_ckpt(const void *buf, size_t len, const char *label, const char *key,
                       lc_err *err)
{
	tz_file *f = new_file(label, NULL, buf, len, err);
	return f ? finish(f, key, err) : NULL;
}

const json_t *tz_meta(const tz_file *f) { return f->meta; }

uint32_t tz_count(const tz_file *f) { return f->n; }

const st_tensor *tz_at(const tz_file *f, uint32_t i) { return i < f->n ? &f->t[i] : NULL; }

const st_tensor *tz_find(const tz_file *f, const char *name)
{
	return st_index_find(f->t, f->byname, f->n, name);
}

void tz_close(tz_file *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->nst; i++) {
		free(f->st[i].key);
		free(f->st[i].data);
	}
	free(f->st);
	if (f->t)
		for (uint32_t i = 0; i < f->n; i++) {
			free(f->t[i].name);
			free(f->owned[i]);
		}
	free(f->t);
	free(f->owned);
	free(f->byname);
	free(f->pkl);
	json_decref(f->meta);
	free(f->label);
	free(f);
}
