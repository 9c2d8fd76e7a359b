/*
 * convert: documents to and from the plain forms that scripts use (the
 * conversions lc-cat offers, shared with other programs).
 *
 *   ids   decimal token ids of the "tokens" tensor, separated by single
 *         spaces, one document per line (an empty line for no tokens);
 *         a document with several summaries (lc-decode
 *         --num-return-sequences: "tokens", "tokens.2", ...) has a line
 *         for each
 *   raw   every tensor's payload as little-endian bytes, in stream order
 *   info  tab-separated lines (see lc-cat(1)):
 *           doc    INDEX NAME [KEY=VALUE...]
 *           tensor INDEX DOCNAME NAME DTYPE SHAPE [KEY=VALUE...]
 *           record INDEX DOCNAME KIND BYTES
 *         where SHAPE is the dims joined by "x" ("-" for rank 0) and tab,
 *         newline, carriage return and backslash in names and values are
 *         written as \t \n \r \\
 *   text  the "text" tensor's bytes followed by a newline; with several
 *         summaries ("text", "text.2", ...) each one so
 */
#ifndef LC_CONVERT_H
#define LC_CONVERT_H

#include <stddef.h>
#include <stdio.h>

#include "stream/stream.h"

/* Parses whitespace-separated decimal ids in [0, 2^31) into a new document
 * `name` holding an i32 tensor "tokens" [n]. */
int convert_ids_doc(lc_doc *d, const char *name, const char *line, size_t len, lc_err *err);
/* A new document `name` holding a u8 tensor "text" [len]. */
int convert_text_doc(lc_doc *d, const char *name, const char *text, size_t len, lc_err *err);

/* Writes ids [n] as one line. */
int convert_write_ids(FILE *f, const int32_t *ids, size_t n, lc_err *err);

/* The "tokens" tensor of d (rank 1, any integer dtype) as int32 ids, each
 * in [0, vocab): *ids is malloc'd, *n its length. The messages say what is
 * wrong with the tensor, not which document it is. */
int convert_token_ids(const lc_doc *d, int64_t vocab, int32_t **ids, int64_t *n, lc_err *err);

/* The values of a float tensor as float32: an f32 tensor's own data, or
 * bf16 and f16 converted into *buf (grown as needed; *cap floats). */
const float *convert_f32_view(const lc_tensor *t, float **buf, uint64_t *cap, lc_err *err);

/* Makes an f32 tensor bf16, in place (round to nearest even). */
void convert_tensor_to_bf16(lc_tensor *t);

/* The name of the ith (from 0) of a document's records NAME, NAME.2,
 * NAME.3, ... (lc-decode's summaries, --num-return-sequences) into buf. */
void convert_nth_name(char *buf, size_t size, const char *name, int i);
/* Those records of d into t[CONVERT_MAX_SEQS], each of dtype dt and rank
 * 1: their number (>= 1), or -1 with "no \"NAME\" record" or what is
 * wrong with one. */
#define CONVERT_MAX_SEQS 1024
int convert_summaries(const lc_doc *d, const char *name, enum lc_dtype dt,
                      const lc_tensor **t, lc_err *err);

int convert_print_ids(FILE *f, const lc_doc *d, lc_err *err);
int convert_print_raw(FILE *f, const lc_doc *d, lc_err *err);
int convert_print_info(FILE *f, const lc_doc *d, lc_err *err);
int convert_print_text(FILE *f, const lc_doc *d, lc_err *err);

#endif
