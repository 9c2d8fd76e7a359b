/*
 * doc_int.h: what the stream's in-memory records (doc.c) share with its
 * reader and writer (stream.c), internal to the stream layer.
 */
#ifndef LC_DOC_INT_H
#define LC_DOC_INT_H

#include "stream/stream.h"

/* A metadata key of n bytes: 1 to LC_MAX_KEY printable ASCII, no space,
 * no '='. */
int meta_key_ok(const char *k, size_t n);

/* numel of dims[rank] into *numel, its bytes into *nbytes; -1 when the
 * bytes would be above LC_MAX_RECORD. */
int tensor_shape_bytes(enum lc_dtype dtype, uint32_t rank, const uint64_t *dims,
                       uint64_t *numel, uint64_t *nbytes);

/* A new zeroed record at the end of d, or NULL and err. */
lc_rec *doc_push(lc_doc *d, lc_err *err);

#endif
