/*
 * stream: the lc stream format (man/man5/lc-stream.5), read and written.
 *
 * A stream is a sequence of records: START, then documents, then EOS. A
 * document is DOC_BEGIN (name, metadata), any number of TENSOR records
 * (name, dtype, shape, metadata, payload) and records of kinds this
 * version does not know, then DOC_END. Every record carries its length
 * and CRC-32C; the reader checks them and every size limit before it
 * allocates, and fails on truncation (no EOS), corruption or nonsense,
 * naming the document and the byte offset. Streams may be concatenated.
 *
 * Reading is one document at a time: memory is bounded by the largest
 * document. Records of unknown kinds inside a document are kept in order
 * (lc_rec.kind != LC_REC_TENSOR) so that writing the document back passes
 * them through; unknown records outside documents are skipped unless
 * their "critical" flag is set, which is an error.
 *
 * Payloads are little-endian on the wire and converted to host order on
 * read and write, so lc_tensor.data is always native.
 */
#ifndef LC_STREAM_H
#define LC_STREAM_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

/* dtype values only grow; a value is never reused. */
enum lc_dtype {
	LC_U8 = 1, LC_I8 = 2, LC_I16 = 3, LC_U16 = 4, LC_I32 = 5, LC_U32 = 6,
	LC_I64 = 7, LC_U64 = 8, LC_F16 = 9, LC_BF16 = 10, LC_F32 = 11, LC_F64 = 12,
	LC_DTYPE_END
};

/* Record kinds; values only grow. */
enum lc_rec_kind {
	LC_REC_START = 1, LC_REC_DOC_BEGIN = 2, LC_REC_TENSOR = 3,
	LC_REC_DOC_END = 4, LC_REC_EOS = 5
};

#define LC_MAX_RANK      8
#define LC_MAX_NAME      4096          /* bytes in a document or tensor name */
#define LC_MAX_KEY       255           /* bytes in a metadata key */
#define LC_MAX_META      (16u << 20)   /* bytes of metadata in one record */
#define LC_MAX_NMETA     65536         /* entries in one record */
#define LC_MAX_RECORD    (64ull << 30) /* bytes in one record body */
#define LC_FLAG_CRITICAL 1u            /* a reader that does not know the kind must fail */

typedef struct lc_kv {
	char *key;            /* NUL-terminated, no NUL inside */
	char *val;            /* NUL-terminated; may be empty */
} lc_kv;

typedef struct lc_meta {
	uint32_t n;
	lc_kv *kv;            /* [n], in stream order; keys unique */
} lc_meta;

typedef struct lc_tensor {
	char *name;
	enum lc_dtype dtype;
	uint32_t rank;
	uint64_t dims[LC_MAX_RANK]; /* [rank], row-major, last fastest */
	lc_meta meta;
	void *data;           /* [prod(dims)] elements of dtype, host order */
	uint64_t nbytes;      /* prod(dims) * dtype size */
} lc_tensor;

typedef struct lc_rec {
	uint16_t kind;        /* LC_REC_TENSOR, or an unknown kind kept for pass-through */
	uint16_t flags;
	lc_tensor t;          /* kind == LC_REC_TENSOR */
	void *body;           /* unknown kinds: the raw body */
	uint64_t body_len;
} lc_rec;

typedef struct lc_doc {
	char *name;
	lc_meta meta;
	uint32_t nrec;
	lc_rec *rec;          /* [nrec] in stream order */
	uint64_t index;       /* 0-based position in the input (concatenations continue counting) */
	/* private */
	uint32_t cap;
} lc_doc;

/* --- dtypes --- */
size_t lc_dtype_size(enum lc_dtype t);         /* 0 for an unknown value */
const char *lc_dtype_name(enum lc_dtype t);    /* "f32", ...; "?" if unknown */
int lc_dtype_parse(const char *s);             /* -1 if unknown */

/* --- metadata --- */
const char *meta_get(const lc_meta *m, const char *key);          /* NULL if absent */
int meta_set(lc_meta *m, const char *key, const char *val, lc_err *err); /* replaces */
int meta_setf(lc_meta *m, const char *key, lc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int meta_copy(lc_meta *dst, const lc_meta *src, lc_err *err);
/* Removes key, keeping the order of the others: 1 if it was there, 0 if not. */
int meta_del(lc_meta *m, const char *key);
void meta_free(lc_meta *m);

/* --- tensors and documents --- */
/* Allocates t->data zeroed for dtype/dims; fills name, rank, nbytes. */
int tensor_init(lc_tensor *t, const char *name, enum lc_dtype dtype,
                uint32_t rank, const uint64_t *dims, lc_err *err);
uint64_t tensor_numel(const lc_tensor *t);
/* The shape as lc-cat -o info prints it ("3x64"; "-" for a scalar) into
 * buf[n]; returns the length. */
int tensor_shape(const lc_tensor *t, char *buf, size_t n);
void tensor_free(lc_tensor *t);

int doc_init(lc_doc *d, const char *name, lc_err *err);
/* Appends a zeroed tensor record and returns it (NULL and err on failure). */
lc_tensor *doc_add_tensor(lc_doc *d, const char *name, enum lc_dtype dtype,
                          uint32_t rank, const uint64_t *dims, lc_err *err);
/* Moves *t into the document (t is left empty). */
int doc_take_tensor(lc_doc *d, lc_tensor *t, lc_err *err);
/* The first tensor with this name, or NULL. */
lc_tensor *doc_find(const lc_doc *d, const char *name);
/* The tensors with this name: a program that reads one by name refuses a
 * document holding two (which would it mean?). */
uint32_t doc_count(const lc_doc *d, const char *name);
void doc_free(lc_doc *d);         /* frees everything; the struct can be reused */

/* --- reading --- */
typedef struct lc_reader lc_reader;

/* label names the input in messages ("-" is shown as "stdin"). */
lc_reader *stream_reader_new(FILE *f, const char *label, lc_err *err);
/* 1: a document was read into *d (previous contents freed); 0: clean end
 * of input after an EOS; -1: error (message names document and offset). */
int stream_read_doc(lc_reader *r, lc_doc *d, lc_err *err);
uint64_t stream_reader_offset(const lc_reader *r);
void stream_reader_free(lc_reader *r);

/* The one reading loop of the programs: every document of the streams
 * paths[0..n) in order (n == 0: standard input; "-" is standard input),
 * each passed to fn. It stops at the first error. A reading error names
 * the file, the document and the byte offset; a failure of fn (-1 with
 * err filled) gets the prefix 'FILE: document "NAME": ', so fn's
 * messages need not name either. */
int stream_each(int n, char *const *paths, int (*fn)(lc_doc *d, void *ctx, lc_err *err),
                void *ctx, lc_err *err);
/* The same loop over an open file (label names it in messages); f is not closed. */
int stream_each_file(FILE *f, const char *label, int (*fn)(lc_doc *d, void *ctx, lc_err *err),
                     void *ctx, lc_err *err);

/* The same loop with documents handed over in batches (programs that
 * process several documents at once): up to max_docs documents, and no
 * more than max_bytes of payload (a document over it by itself comes
 * alone), read in order, then fn(docs, ndoc, ...). When fn fails with *bad set
 * to a document's place in the batch, the message gets that document's
 * 'FILE: document "NAME": ' prefix. A reading error comes after the
 * documents read before it have been through fn. */
int stream_each_batch(int n, char *const *paths, int max_docs, uint64_t max_bytes,
                      int (*fn)(lc_doc *docs, int ndoc, void *ctx, int *bad, lc_err *err),
                      void *ctx, lc_err *err);

/* True if buf (at least 8 bytes) starts like an lc stream. */
int stream_sniff(const void *buf, size_t len);

/* --- writing --- */
typedef struct lc_writer lc_writer;

lc_writer *stream_writer_new(FILE *f, lc_err *err);   /* writes START */
int stream_write_doc(lc_writer *w, const lc_doc *d, lc_err *err);
/* Piecewise writing, for documents too large to hold whole: begin, tensors, end. */
int stream_write_begin(lc_writer *w, const char *name, const lc_meta *meta, lc_err *err);
int stream_write_tensor(lc_writer *w, const lc_tensor *t, lc_err *err);
int stream_write_end(lc_writer *w, lc_err *err);
/* Between begin and end: d's records in order (records of unknown kinds
 * included), except the tensors named in skip (NULL-ended; NULL: none);
 * a program that replaces some of a document's tensors passes the rest on. */
int stream_write_records(lc_writer *w, const lc_doc *d, const char *const *skip, lc_err *err);
/* Writes EOS and flushes (does not fclose). Frees w. */
int stream_writer_close(lc_writer *w, lc_err *err);
/* Frees w without writing EOS (after an error: the stream stays truncated, on purpose). */
void stream_writer_abort(lc_writer *w);

#endif
