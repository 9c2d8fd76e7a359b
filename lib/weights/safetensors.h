/*
 * safetensors: the Hugging Face safetensors weight file, read (mapped,
 * never copied) and written.
 *
 * The reader validates the whole header before anything is used: the
 * header length fits the file, the JSON (parsed with jansson, duplicate
 * keys refused) is an object of {"dtype", "shape", "data_offsets"}
 * entries (plus an optional "__metadata__" object of strings), every
 * dtype is known, shape products do not overflow, data_offsets lie inside
 * the data area, agree with dtype x shape, and no two tensors overlap.
 * After st_open() succeeds every st_tensor.data[0 .. nbytes) is readable.
 *
 * The tensor record (st_tensor) is also what the torchzip reader
 * produces, so the model module handles both files alike.
 */
#ifndef LC_SAFETENSORS_H
#define LC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum st_dtype {
	ST_F64 = 1, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8,
	ST_U8, ST_BOOL, ST_DTYPE_END
};

#define ST_MAX_RANK   8
#define ST_MAX_HEADER (100u << 20)   /* bytes of JSON header accepted */

typedef struct st_tensor {
	char *name;                   /* NUL-terminated */
	enum st_dtype dtype;
	uint32_t rank;
	uint64_t dims[ST_MAX_RANK];   /* [rank], row-major */
	uint64_t numel;               /* prod(dims) (1 for rank 0) */
	uint64_t nbytes;              /* numel * st_dtype_size(dtype) */
	const unsigned char *data;    /* [nbytes], little-endian, not necessarily aligned */
} st_tensor;

typedef struct st_file st_file;

size_t st_dtype_size(enum st_dtype t);        /* 0 if unknown */
const char *st_dtype_name(enum st_dtype t);   /* "F32", ...; "?" */
int st_dtype_parse(const char *s);            /* -1 if unknown */

/* Maps path and validates it; err names the file. */
st_file *st_open(const char *path, lc_err *err);
/* Validates a file image held in memory (buf must outlive the result). */
st_file *st_parse(const void *buf, size_t len, const char *label, lc_err *err);
uint32_t st_count(const st_file *f);
const st_tensor *st_at(const st_file *f, uint32_t i);    /* in file (header) order */
const st_tensor *st_find(const st_file *f, const char *name);
/* A name index over t[n], shared by the weight-file readers: fills
 * byname[n] with the indices of t in name order. Returns -1 with the
 * repeated name in *dup when a name appears twice (or out of memory:
 * *dup NULL). */
int st_index_names(const st_tensor *t, uint32_t n, uint32_t *byname, const char **dup);
/* Binary search of that index. */
const st_tensor *st_index_find(const st_tensor *t, const uint32_t *byname, uint32_t n,
                               const char *name);
/* The __metadata__ value for key, or NULL. */
const char *st_meta(const st_file *f, const char *key);
/* Gives back the pages of t's bytes that this process has read from the
 * file's mapping (the whole pages inside them): they leave its resident
 * memory; reading them again reads the file again. Nothing for a file
 * image held in memory (st_parse). For loaders that copy a tensor out. */
void st_release(const st_file *f, const st_tensor *t);
void st_close(st_file *f);

/* Writes n tensors (data taken from t[i].data, nbytes each, little-endian
 * as given) to path, header padded to 8 bytes, in the given order. */
int st_write(const char *path, const st_tensor *t, uint32_t n, lc_err *err);

#endif
