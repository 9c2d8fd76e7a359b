/*
 * torchzip: pytorch_model.bin as written by torch.save (zip format) read
 * without Python: libarchive reads the zip, the restricted unpickler
 * (pickle.h, state dict mode) reads ARCHIVE/data.pkl, and the storages
 * ARCHIVE/data/KEY become the tensors of the state dict it returns.
 *
 * Refused with a message naming the file: an unreadable or truncated zip,
 * no data.pkl or two, a pickle the unpickler refuses or that is not a dict
 * of tensors, a tensor whose storage is missing or too small for its view,
 * a key that appears twice, a member or storages larger than the limits
 * below. Every size is checked against what the archive holds before
 * memory is allocated; declared sizes are not trusted.
 *
 * Tensors that share a storage (tied weights) point into the same bytes.
 * Non-contiguous views are made contiguous (copied).
 *
 * Checkpoint mode (tz_open_ckpt: fairseq's .pt, a dict holding a state
 * dict under a key and training state beside it; pickle.h's checkpoint
 * mode): the tensors are those of root[key]; only their storages are read
 * (the optimizer's are skipped unread). The rest of the root becomes JSON
 * (tz_meta) as pk_to_json writes it, the state dict itself as
 * {"__state_dict__": entries}.
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
