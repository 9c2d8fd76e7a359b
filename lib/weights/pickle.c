#include "weights/pickle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a global is (pk_val.i of a GLOBAL, OBJ or OPAQUE). After G_STORAGE:
 * checkpoint mode only. */
enum glob { G_ODICT = 1, G_REBUILD_V2, G_REBUILD, G_STORAGE,
            G_PARAM,         /* torch._utils._rebuild_parameter: the tensor itself */
            G_DEFAULTDICT,   /* collections.defaultdict: a dict (its factory ignored) */
            G_RECON,         /* copyreg._reconstructor(cls, base, state): an instance of cls */
            G_NAMESPACE,     /* argparse.Namespace: its state is its attributes */
            G_DICTCONFIG,    /* omegaconf: state "_content", a dict of nodes */
            G_LISTCONFIG,    /* state "_content", a list of nodes */
            G_NODE,          /* AnyNode, StringNode, ...: state "_val" */
            G_OPAQUE };      /* named, kept as an opaque value, never called */

/* The machine, and after pk_load the values it made (u below). */
typedef struct pk_pickle up;

struct pk_pickle {
	char *where;              /* "label: member", for messages */
	lc_err *err;
	const unsigned char *start, *p, *end;   /* while unpickling */
	uint64_t at;              /* afterwards: the byte where it stopped */
	pk_val *root;
	pk_val **all;             /* every value, for freeing */
	uint64_t nall, capall;
	pk_val **stack;
	uint64_t sp, capstack;
	pk_val **memo;
	uint64_t nmemo;
	int failed;
	int ckpt;                 /* checkpoint mode: the wider set of globals */
	uint64_t nodes;           /* JSON values made by pk_to_json */
};

/* ------------------------------------------------------------ unpickler */

#define UP_MAX_MEMO  (1u << 22)
#define UP_MAX_STACK (1u << 22)
/* Values made, popped ones included (all are kept to the end): a state
 * dict with its optimizer state makes some 10 a tensor, a few hundred
 * thousand for the largest checkpoints; 2^21 of about 240 bytes bound
 * a hostile pickle (one opcode byte a value) to 0.5 GB. */
#define UP_MAX_VALUES (1u << 21)

static int ufail(up *u, const char *what, const char *arg)
{
	char m[600];
	if (u->failed)
		return -1;
	u->failed = 1;
	snprintf(m, sizeof m, what, arg ? arg : "");
	return lc_fail(u->err, "%s at byte %lld: %s", u->where,
	               (long long)(u->start ? (uint64_t)(u->p - u->start) : u->at), m);
}

static pk_val *newv(up *u, enum pk_type t)
{
	pk_val *v;
	if (u->nall >= UP_MAX_VALUES) {
		ufail(u, "more than 2^21 values: not a state dict or checkpoint (a pickle bomb?)%s",
		      NULL);
		return NULL;
	}
	if (u->nall == u->capall) {
		uint64_t nc = u->capall ? 2 * u->capall : 256;
		pk_val **q = realloc(u->all, nc * sizeof *q);
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

static int push(up *u, pk_val *v)
{
	if (!v)
		return -1;
	if (u->sp == u->capstack) {
		uint64_t nc = u->capstack ? 2 * u->capstack : 256;
		pk_val **q;
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

static pk_val *pop(up *u)
{
	if (u->sp == 0 || u->stack[u->sp - 1]->type == PK_MARK) {
		ufail(u, "stack underflow%s", NULL);
		return NULL;
	}
	return u->stack[--u->sp];
}

static int additem(up *u, pk_val *c, pk_val *x)
{
	if (c->n == c->cap) {
		uint64_t nc = c->cap ? 2 * c->cap : 8;
		pk_val **q = realloc(c->it, nc * sizeof *q);
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
		if (u->stack[i - 1]->type == PK_MARK)
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
	pk_val *v;

	snprintf(what, sizeof what, "%.120s.%.120s", mod, name);
	for (size_t i = 0; i < sizeof globals / sizeof *globals; i++)
		if (!strcmp(mod, globals[i].mod) && !strcmp(name, globals[i].name)) {
			if (!(v = newv(u, PK_GLOBAL)))
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
			if (!(v = newv(u, PK_GLOBAL)))
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
	pk_val *v;

	if (need(u, n) < 0 || !(v = newv(u, PK_STR)))
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
	pk_val *v = newv(u, PK_INT);
	if (!v)
		return -1;
	v->i = x;
	return push(u, v);
}

static int tuple_from(up *u, uint64_t from)
{
	pk_val *t = newv(u, PK_TUPLE);
	if (!t)
		return -1;
	for (uint64_t i = from; i < u->sp; i++)
		if (additem(u, t, u->stack[i]) < 0)
			return -1;
	u->sp = from;
	return push(u, t);
}

static int int_tuple(up *u, const pk_val *t, uint32_t *rank, uint64_t *dims, int64_t *sdims)
{
	if (t->type != PK_TUPLE)
		return ufail(u, "tensor size/stride is not a tuple%s", NULL);
	if (t->n > ST_MAX_RANK)
		return ufail(u, "tensor rank too large%s", NULL);
	for (uint64_t i = 0; i < t->n; i++) {
		if (t->it[i]->type != PK_INT || t->it[i]->i < 0)
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
static int instance(up *u, const pk_val *cls, pk_val *args)
{
	pk_val *v;

	if (cls->type != PK_GLOBAL)
		return ufail(u, "an instance of something that is not a class%s", NULL);
	switch (cls->i) {
	case G_ODICT:
	case G_DEFAULTDICT:
		return push(u, newv(u, PK_DICT));
	case G_NAMESPACE: case G_DICTCONFIG: case G_LISTCONFIG: case G_NODE: case G_OPAQUE:
		if (!(v = newv(u, cls->i == G_OPAQUE ? PK_OPAQUE : PK_OBJ)))
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
	pk_val *args = pop(u), *fn = pop(u), *v;

	if (!args || !fn)
		return -1;
	if (fn->type != PK_GLOBAL || args->type != PK_TUPLE)
		return ufail(u, "REDUCE of something that is not an allowed global%s", NULL);
	switch (fn->i) {
	case G_ODICT:
		if (args->n != 0)
			return ufail(u, "OrderedDict with arguments%s", NULL);
		return push(u, newv(u, PK_DICT));
	case G_DEFAULTDICT:
		return push(u, newv(u, PK_DICT));
	case G_PARAM:
		if (args->n < 1 || args->it[0]->type != PK_TENSOR)
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
		if (args->n < 4 || args->it[0]->type != PK_STORAGE || args->it[1]->type != PK_INT ||
		    args->it[1]->i < 0)
			return ufail(u, "bad arguments to _rebuild_tensor%s", NULL);
		if (!(v = newv(u, PK_TENSOR)))
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
	pk_val *t = pop(u), *v;

	if (!t)
		return -1;
	if (t->type != PK_TUPLE || t->n != 5 || t->it[0]->type != PK_STR ||
	    strcmp(t->it[0]->s, "storage") || t->it[1]->type != PK_GLOBAL ||
	    t->it[1]->i != G_STORAGE || t->it[2]->type != PK_STR || t->it[4]->type != PK_INT ||
	    t->it[4]->i < 0)
		return ufail(u, "persistent id is not ('storage', torch.XStorage, key, location, "
		             "numel)%s", NULL);
	if (!(v = newv(u, PK_STORAGE)))
		return -1;
	v->dtype = t->it[1]->dtype;
	v->s = t->it[2]->s;       /* owned by the STR value */
	v->numel = (uint64_t)t->it[4]->i;
	return push(u, v);
}

static pk_val *unpickle(up *u)
{
	int64_t m;

	while (!u->failed) {
		unsigned op;
		pk_val *v, *x, *y;
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
			if (x->type != PK_STR || y->type != PK_STR) {
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
			if (u->sp == 0 || u->stack[u->sp - 1]->type == PK_MARK) {
				ufail(u, "memo of nothing%s", NULL);
				return NULL;
			}
			if (n >= UP_MAX_MEMO) {
				ufail(u, "memo index too large%s", NULL);
				return NULL;
			}
			if (n >= u->nmemo) {
				uint64_t nc = n + 1 > 2 * u->nmemo ? n + 1 : 2 * u->nmemo;
				pk_val **q = realloc(u->memo, nc * sizeof *q);
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
			push(u, newv(u, PK_MARK));
			break;
		case ')': /* EMPTY_TUPLE */
			push(u, newv(u, PK_TUPLE));
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
				if (u->stack[i]->type == PK_MARK) {
					ufail(u, "MARK inside TUPLE%s", NULL);
					return NULL;
				}
			tuple_from(u, u->sp - n);
			break;
		case ']': /* EMPTY_LIST */
			push(u, newv(u, PK_LIST));
			break;
		case '}': /* EMPTY_DICT */
			push(u, newv(u, PK_DICT));
			break;
		case 'N':
			push(u, newv(u, PK_NONE));
			break;
		case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
			if ((v = newv(u, PK_BOOL)))
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
				if ((v = newv(u, PK_FLOAT)))
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
			if (x && u->ckpt && u->sp && u->stack[u->sp - 1]->type == PK_OPAQUE)
				break;
			if (!x || u->sp == 0 || u->stack[u->sp - 1]->type != PK_LIST) {
				ufail(u, "APPEND to a non-list%s", NULL);
				return NULL;
			}
			additem(u, u->stack[u->sp - 1], x);
			break;
		case 'e': case 'u': case 's': { /* APPENDS, SETITEMS, SETITEM */
			uint64_t from;
			pk_val *c;
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
			if (u->ckpt && c->type == PK_OPAQUE) {   /* a subclass' items: not kept */
				u->sp = op == 's' ? from : from - 1;
				break;
			}
			if (c->type != (op == 'e' ? PK_LIST : PK_DICT)) {
				ufail(u, "%s on the wrong type", op == 'e' ? "APPENDS" : "SETITEM(S)");
				return NULL;
			}
			if (op != 'e' && (u->sp - from) % 2) {
				ufail(u, "odd number of items for SETITEMS%s", NULL);
				return NULL;
			}
			for (uint64_t i = from; i < u->sp; i++) {
				if (u->stack[i]->type == PK_MARK) {
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
			if (u->sp == 0 || u->stack[u->sp - 1]->type == PK_MARK) {
				ufail(u, "stack underflow%s", NULL);
				return NULL;
			}
			y = u->stack[u->sp - 1];
			if (u->ckpt && y->type == PK_OBJ) {
				y->state = x;
				break;
			}
			if (u->ckpt && y->type == PK_OPAQUE)
				break;
			if (!(x->type == PK_NONE || ((x->type == PK_DICT || x->type == PK_TUPLE) && x->n == 0))) {
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
					u->stack[u->sp - 1]->type = PK_BYTES;
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
			push(u, newv(u, PK_LIST));
			break;
		case 0x90: case 0x91: /* ADDITEMS (to a set), FROZENSET (from MARK) */
			if ((m = findmark(u)) < 0)
				return NULL;
			if (op == 0x90) {
				if (m < 1 || u->stack[m - 1]->type != PK_LIST) {
					ufail(u, "ADDITEMS to a non-set%s", NULL);
					return NULL;
				}
				v = u->stack[m - 1];
			} else if (!(v = newv(u, PK_LIST))) {
				return NULL;
			}
			for (uint64_t i = (uint64_t)m + 1; i < u->sp; i++)
				additem(u, v, u->stack[i]);
			u->sp = (uint64_t)m;
			if (op == 0x91)
				push(u, v);
			break;
		case 'd': case 'l': /* DICT, LIST from the items above MARK */
			if ((m = findmark(u)) < 0 || !(v = newv(u, op == 'd' ? PK_DICT : PK_LIST)))
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
			if (u->sp == 0 || u->stack[u->sp - 1]->type == PK_MARK) {
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

/* ------------------------------------------------------------ JSON */

#define PK_MAX_DEPTH 64           /* nesting of the metadata accepted */
#define PK_MAX_NODES (1u << 20)   /* JSON values made (shared references count each time) */

static json_t *tag(const char *key, json_t *v)
{
	json_t *o = json_object();
	if (o && v && json_object_set_new(o, key, v) == 0)
		return o;
	json_decref(o);
	return NULL;
}

const pk_val *pk_dict_get(const pk_val *st, const char *key)
{
	if (!st || st->type != PK_DICT)
		return NULL;
	for (uint64_t i = st->n / 2; i-- > 0;)   /* the last of a repeated key, as Python */
		if (st->it[2 * i]->type == PK_STR && !strcmp(st->it[2 * i]->s, key))
			return st->it[2 * i + 1];
	return NULL;
}

/* A value as JSON: plain data as itself; argparse.Namespace as the object
 * of its attributes; omegaconf's DictConfig / ListConfig / nodes as their
 * content (never their _parent or _metadata); the rest as tagged objects:
 * {"__tensor__": [dims]}, {"__opaque__": "module.name"} (an instance or a
 * call never made), {"__global__": ...} (a class named), {"__bytes__": n},
 * {"__float__": "nan"}. Dict keys that are not strings or ints are left
 * out. NULL when too deep, too large, or out of memory (u->failed);
 * pickle.h says the details. */
static json_t *to_json(up *u, const pk_val *v, int depth)
{
	json_t *j = NULL;

	if (u->failed)
		return NULL;
	if (depth > PK_MAX_DEPTH || ++u->nodes > PK_MAX_NODES) {
		ufail(u, "the checkpoint's metadata is nested too deep or too large%s", NULL);
		return NULL;
	}
	switch (v->type) {
	case PK_NONE:
		j = json_null();
		break;
	case PK_BOOL:
		j = json_boolean(v->i);
		break;
	case PK_INT:
		j = json_integer(v->i);
		break;
	case PK_FLOAT:
		j = isfinite(v->f) ? json_real(v->f)
		                   : tag("__float__", json_string(isnan(v->f) ? "nan" : v->f > 0 ? "inf"
		                                                                                  : "-inf"));
		break;
	case PK_STR:
		if (!(j = json_stringn(v->s, v->n)))   /* not UTF-8 (a Python 2 str) */
			j = tag("__bytes__", json_integer((json_int_t)v->n));
		break;
	case PK_BYTES:
		j = tag("__bytes__", json_integer((json_int_t)v->n));
		break;
	case PK_TUPLE: case PK_LIST:
		j = json_array();
		for (uint64_t i = 0; j && i < v->n; i++) {
			json_t *x = to_json(u, v->it[i], depth + 1);
			if (!x || json_array_append_new(j, x) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		break;
	case PK_DICT:
		j = json_object();
		for (uint64_t i = 0; j && i + 1 < v->n; i += 2) {
			const pk_val *k = v->it[i];
			char num[32];
			const char *key = NULL;
			json_t *x;
			if (k->type == PK_STR && strlen(k->s) == k->n)
				key = k->s;
			else if (k->type == PK_INT)
				snprintf(num, sizeof num, "%lld", (long long)k->i), key = num;
			if (!key)
				continue;
			if (!(x = to_json(u, v->it[i + 1], depth + 1)) || json_object_set_new(j, key, x) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		break;
	case PK_TENSOR:
		j = json_array();
		for (uint32_t r = 0; j && r < v->rank; r++)
			json_array_append_new(j, json_integer((json_int_t)v->dims[r]));
		j = tag("__tensor__", j);
		break;
	case PK_OBJ: {
		const pk_val *x = NULL;
		if (v->i == G_NAMESPACE) {
			x = v->state;
			/* (dict, slots) states: the dict */
			if (x && x->type == PK_TUPLE && x->n == 2)
				x = x->it[0];
			if (!x || x->type == PK_NONE)
				j = json_object();
			else if (x->type != PK_DICT)
				j = tag("__opaque__", json_string(v->s));
		} else {
			x = pk_dict_get(v->state, v->i == G_NODE ? "_val" : "_content");
			if (!x)
				j = v->i == G_NODE ? json_null() : tag("__opaque__", json_string(v->s));
		}
		if (!j)
			return to_json(u, x, depth + 1);
		break;
	}
	case PK_OPAQUE:
		j = tag("__opaque__", json_string(v->s));
		if (j && v->state && v->state->type == PK_TUPLE && v->state->n) {
			/* a call's arguments (an enum member's value) */
			json_t *x = to_json(u, v->state, depth + 1);
			if (!x || json_object_set_new(j, "__args__", x) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		break;
	case PK_GLOBAL:
		j = tag("__global__", json_string(v->s ? v->s : "torch"));
		break;
	case PK_STORAGE:
		j = tag("__opaque__", json_string("torch storage"));
		break;
	case PK_MARK:
		break;
	}
	if (!j)
		ufail(u, "out of memory%s", NULL);
	return j;
}

/* ------------------------------------------------------------ the pickle */

pk_pickle *pk_load(const void *buf, size_t len, int ckpt, const char *label, const char *member,
                   lc_err *err)
{
	up *u = calloc(1, sizeof *u);
	size_t wl = strlen(label) + strlen(member) + 3;

	if (!u || !(u->where = malloc(wl))) {
		free(u);
		lc_fail(err, "%s: out of memory", label);
		return NULL;
	}
	snprintf(u->where, wl, "%s: %s", label, member);
	u->err = err;
	u->start = u->p = buf;
	u->end = u->start + len;
	u->ckpt = ckpt;
	u->root = unpickle(u);
	/* buf may go: later messages (pk_to_json's) name the byte it stopped at */
	u->at = (uint64_t)(u->p - u->start);
	u->start = u->p = u->end = NULL;
	if (!u->root || u->failed) {
		pk_free(u);
		return NULL;
	}
	return u;
}

const pk_val *pk_root(const pk_pickle *p) { return p->root; }

json_t *pk_to_json(pk_pickle *p, const pk_val *v, lc_err *err)
{
	p->err = err;
	return to_json(p, v, 1);
}

int pk_failed(const pk_pickle *p) { return p->failed; }

void pk_free(pk_pickle *p)
{
	if (!p)
		return;
	for (uint64_t i = 0; i < p->nall; i++) {
		if (p->all[i]->type != PK_STORAGE)   /* its key is its STR's */
			free(p->all[i]->s);
		free(p->all[i]->it);
		free(p->all[i]);
	}
	free(p->all);
	free(p->stack);
	free(p->memo);
	free(p->where);
	free(p);
}
