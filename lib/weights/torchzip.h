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
 */
#ifndef LC_TORCHZIP_H
#define LC_TORCHZIP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "weights/safetensors.h"

#define TZ_MAX_PICKLE  (64u << 20)   /* bytes of data.pkl accepted */
#define TZ_MAX_TOTAL   (64ull << 30) /* bytes of storage accepted */

typedef struct tz_file tz_file;

/* Reads path (a zip file). err names the file. */
tz_file *tz_open(const char *path, lc_err *err);
/* Reads a zip image held in memory (copied what it needs; buf may go). */
tz_file *tz_parse(const void *buf, size_t len, const char *label, lc_err *err);
uint32_t tz_count(const tz_file *f);
const st_tensor *tz_at(const tz_file *f, uint32_t i);    /* in state-dict order */
const st_tensor *tz_find(const tz_file *f, const char *name);
void tz_close(tz_file *f);

#endif
