/*
 * pickle: a restricted unpickler for what torch.save writes, and its
 * values as JSON. Nothing is ever executed: globals are looked up in
 * fixed tables and become tagged values, calls (REDUCE, NEWOBJ) build
 * values of the few known kinds or are recorded and never made.
 *
 * The opcodes: PROTO (up to 5), FRAME, GLOBAL, STACK_GLOBAL,
 * (LONG_)BINPUT/GET, MEMOIZE, MARK, the tuple, list, dict and set
 * builders, POP, POP_MARK, DUP, ints (up to 64 bits), BINFLOAT, strings,
 * bytes, booleans, None, REDUCE, BUILD, BINPERSID and STOP. Two modes:
 *   - state dict (ckpt 0): only the globals collections.OrderedDict,
 *     torch._utils._rebuild_tensor(_v2) and
 *     torch.{Float,Half,BFloat16,Double,Long,Int,Short,Char,Byte,Bool}Storage;
 *     BUILD only with an empty state.
 *   - checkpoint (ckpt 1: fairseq's .pt, a dict holding a state dict and
 *     training state beside it): also NEWOBJ(_EX), BUILD of an object's
 *     state, and these globals:
 *       - argparse.Namespace (its attributes), omegaconf's DictConfig,
 *         ListConfig and value nodes (their content, never their parents
 *         or metadata), collections.defaultdict (a dict),
 *         torch._utils._rebuild_parameter (the tensor),
 *         copyreg._reconstructor;
 *       - kept as opaque values, named but never called (items appended
 *         to them dropped): any global of the modules torch, numpy,
 *         fairseq, omegaconf, typing, datetime, pathlib, _codecs.encode,
 *         and the builtin data types (object, dict, int, ...);
 *       - every other global (os.system, builtins.eval, getattr,
 *         subprocess, ...) is refused with a message naming it.
 * Anything else (another global, an unknown opcode, a malformed tensor or
 * persistent id, absurd sizes or depths) is refused with a message
 * "LABEL: MEMBER at byte N: what". Every size is checked against the bytes
 * of the pickle before memory is allocated.
 *
 * A tensor (_rebuild_tensor) is its storage (a persistent id: a key, a
 * dtype and a count of elements, its bytes elsewhere), offset, sizes and
 * strides as written, unchecked against the storage: the reader of the
 * bytes checks them (torchzip.h).
 */
#ifndef LC_PICKLE_H
#define LC_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/err.h"
#include "weights/safetensors.h"

/* What a value is. */
enum pk_type { PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT,
               PK_GLOBAL, PK_STORAGE, PK_TENSOR, PK_MARK, PK_BYTES, PK_OBJ, PK_OPAQUE };

/* A value; a set is a PK_LIST. Values may be shared (memo, DUP): the
 * graph is a DAG owned by its pk_pickle. */
typedef struct pk_val {
	enum pk_type type;
	int64_t i;                /* INT, BOOL; GLOBAL, OBJ: what it is (pickle.c's kinds) */
	double f;                 /* FLOAT */
	char *s;                  /* STR, BYTES (n bytes, NUL-terminated; a STR may hold a
	                             NUL); STORAGE: key; GLOBAL, OBJ, OPAQUE: "module.name" */
	struct pk_val *state;     /* OBJ: what BUILD gave it; OPAQUE: its arguments */
	struct pk_val **it;       /* TUPLE/LIST/DICT items (DICT: key, value pairs) */
	uint64_t n, cap;
	int dtype;                /* GLOBAL storage type / STORAGE: an enum st_dtype */
	uint64_t numel;           /* STORAGE: elements declared */
	/* TENSOR */
	struct pk_val *storage;   /* a STORAGE */
	uint64_t off;             /* in elements */
	uint32_t rank;
	uint64_t dims[ST_MAX_RANK];
	int64_t strides[ST_MAX_RANK];
} pk_val;

typedef struct pk_pickle pk_pickle;

/* Unpickles buf[len] (kept only during the call); label and member name
 * it in messages. NULL and err on a refusal, truncation or lack of memory. */
pk_pickle *pk_load(const void *buf, size_t len, int ckpt, const char *label, const char *member,
                   lc_err *err);
/* The value STOP returned. */
const pk_val *pk_root(const pk_pickle *p);
/* Dict d's value for string key (the last of a repeated key, as Python),
 * or NULL (also when d is not a dict). */
const pk_val *pk_dict_get(const pk_val *d, const char *key);
/* v as a new JSON reference: plain data as itself; argparse.Namespace as
 * the object of its attributes; omegaconf's DictConfig / ListConfig /
 * nodes as their content; the rest as tagged objects:
 * {"__tensor__": [dims]}, {"__opaque__": "module.name"} (an instance, or a
 * call never made, with "__args__" for its arguments: an enum member's
 * value), {"__global__": "module.name"} (a class named), {"__bytes__": n}
 * (also a str that is not UTF-8), {"__float__": "nan"}. Dict keys that are
 * not strings or ints are left out. NULL and err when nested deeper than
 * 64 or when the values made by all the calls on p pass 2^20 (shared
 * values count each time), or out of memory; after a failure every call
 * on p fails. */
json_t *pk_to_json(pk_pickle *p, const pk_val *v, lc_err *err);
/* Whether a call on p has failed (and set its err). */
int pk_failed(const pk_pickle *p);
void pk_free(pk_pickle *p);

#endif
