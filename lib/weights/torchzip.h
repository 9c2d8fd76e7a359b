/*
 * torchzip: pytorch_model.bin as written by torch.save (zip format) read
 * without Python: libarchive reads the zip, a restricted unpickler reads
 * ARCHIVE/data.pkl, and the storages ARCHIVE/data/KEY become the tensors.
 *
 * The unpickler knows only what torch.save writes for a state dict: the
 * opcodes PROTO, FRAME, GLOBAL, STACK_GLOBAL, (LONG_)BINPUT/GET, MEMOIZE,
 * MARK, the tuple/list/dict builders, ints, strings, booleans, None,
 * REDUCE, BUILD, BINPERSID and STOP; and only the globals
 * collections.OrderedDict, torch._utils._rebuild_tensor(_v2) and
 * torch.{Float,Half,BFloat16,Double,Long,Int,Short,Char,Byte,Bool}Storage.
 * Anything else (another global, an unknown opcode, a tensor whose
 * storage is missing or too small, absurd sizes) is refused with a
 * message. Nothing is ever executed; every size is checked against what
 * the archive holds before memory is allocated.
 *
 * Tensors that share a storage (tied weights) point into the same bytes.
 * Non-contiguous views are made contiguous (copied).
 *
 * Checkpoint mode (tz_open_ckpt: fairseq's .pt, a dict holding a state
 * dict under a key and training state beside it): the tensors are those
 * of root[key]; only their storages are read (the optimizer's are skipped
 * unread). The rest of the root becomes JSON (tz_meta), for which the
 * unpickler also knows NEWOBJ, the bytes, set and DICT/LIST/POP/DUP
 * opcodes and these globals:
 *   - argparse.Namespace (its attributes), omegaconf's DictConfig,
 *     ListConfig and value nodes (their content, never their parents or
 *     metadata), collections.defaultdict (a dict),
 *     torch._utils._rebuild_parameter (the tensor), copyreg._reconstructor;
 *   - skipped as opaque values, named but never called: any global of the
 *     modules torch, numpy, fairseq, omegaconf, typing, datetime, pathlib,
 *     _codecs.encode, and the builtin data types (object, dict, int, ...).
 *     They appear in the JSON as {"__opaque__": "module.name"} (with
 *     "__args__" for a call: an enum member's value); the reader of the
 *     JSON refuses one where it needs a value.
 *   - every other global (os.system, builtins.eval, getattr, subprocess,
 *     ...) is refused with a message naming it.
 * Tensors elsewhere in the checkpoint appear as {"__tensor__": [dims]},
 * bytes as {"__bytes__": n}, non-finite floats as {"__float__": "nan"};
 * the state dict itself as {"__state_dict__": entries}.
 */
#ifndef LC_TORCHZIP_H
#define LC_TORCHZIP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/err.h"
#include "weights/safetensors.h"

#define TZ_MAX_PICKLE  (64u << 20)   /* bytes of data.pkl accepted */
#define TZ_MAX_TOTAL   (64ull << 30) /* bytes of storage accepted */

typedef struct tz_file tz_file;

/* Reads path (a zip file). err names the file. */
tz_file *tz_open(const char *path, lc_err *err);
/* Reads a zip image held in memory (copied what it needs; buf may go). */
tz_file *tz_parse(const void *buf, size_t len, const char *label, lc_err *err);
/* Checkpoint mode (see above): the state dict is root[key] ("model"). */
tz_file *tz_open_ckpt(const char *path, const char *key, lc_err *err);
tz_file *tz_parse_ckpt(const void *buf, size_t len, const char *label, const char *key,
                       lc_err *err);
/* Checkpoint mode: the root without its state dict; NULL otherwise. */
const json_t *tz_meta(const tz_file *f);
uint32_t tz_count(const tz_file *f);
const st_tensor *tz_at(const tz_file *f, uint32_t i);    /* in state-dict order */
const st_tensor *tz_find(const tz_file *f, const char *name);
void tz_close(tz_file *f);

#endif
