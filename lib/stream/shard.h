/*
 * shard: one stream split by document into N shard files, and the
 * outputs made from those shards merged back into one stream in the
 * original order (lc-cat --shard and --merge; lc(7), "Many machines").
 *
 * Splitting is round-robin: the i-th document given (from 0) goes to
 * shard i mod N, with its position added to the document's metadata as
 * "lc.index" (decimal) and the split's identity as "lc.split" (64
 * random bits in hex and the number of shards, "ID/N"); the last document
 * also gets "lc.count", the number of documents split. Round-robin needs nothing but the document
 * in hand, so it streams an input of unknown length (one document is
 * held back, to know the last), and it deals long and short documents
 * alike to every shard; contiguous ranges would need the whole input
 * first. Shards are written as PREFIX.k.lc under temporary names and
 * renamed into place only when all N are complete; an empty shard (N
 * above the document count) is a valid stream with no documents.
 *
 * Merging reads the outputs of the shards, made by programs that keep
 * one document per document and its metadata (every lc program that
 * writes a stream does), each in ascending lc.index, as the split wrote
 * them. It returns documents 0, 1, 2, ... with lc.index, lc.count and
 * lc.split removed (and lc_doc.index set to the position), so that split and
 * merge give back the input byte for byte. Memory: one document per
 * input. It fails, naming the index and where it is, on an index that is
 * missing (a lost or failed shard, the last document included: that is
 * what lc.count is for), duplicated, out of order or beyond lc.count, on
 * a document without lc.index, on documents of two splits (an output
 * left from an earlier split of the same corpus), and on inputs with no
 * documents at all
 * (an empty split cannot be told from lost shards, so splitting refuses
 * an empty input too).
 */
#ifndef LC_SHARD_H
#define LC_SHARD_H

#include <stdint.h>

#include "stream/stream.h"

#define SHARD_INDEX "lc.index"
#define SHARD_COUNT "lc.count"
#define SHARD_SPLIT "lc.split"
#define SHARD_MAX   4096        /* shards in one split */

/* A canonical decimal (no sign, no leading zeros), as lc.index and
 * lc.count are written, into *v; 0 if s is not one. */
int shard_parse_u64(const char *s, uint64_t *v);

/* --- splitting --- */
typedef struct lc_shard_writer lc_shard_writer;

/* Creates the N (1..SHARD_MAX) temporaries of PREFIX.0.lc ... PREFIX.(N-1).lc. */
lc_shard_writer *shard_writer_new(const char *prefix, uint32_t n, lc_err *err);
/* -1 and err when one of inputs[ninputs] is one of those N files (its
 * shard would replace it). */
int shard_inputs_check(const char *prefix, uint32_t n, int ninputs, char *const *inputs,
                       lc_err *err);
/* Takes the next document: its contents move into the writer and d is
 * left empty, ready for reuse. Refuses a document that already carries
 * lc.index, lc.count or lc.split (a shard of another split: merge it
 * first). */
int shard_put(lc_shard_writer *s, lc_doc *d, lc_err *err);
/* Writes the last document with lc.count, ends every shard and renames
 * them into place; on failure removes them. Frees s. */
int shard_writer_close(lc_shard_writer *s, lc_err *err);
/* After an error: removes the temporaries. Frees s (NULL is fine). */
void shard_writer_abort(lc_shard_writer *s);
/* The number of documents taken so far. */
uint64_t shard_count(const lc_shard_writer *s);

/* --- merging --- */
typedef struct lc_merger lc_merger;

/* Opens the n inputs (n == 0: standard input; "-" is standard input). */
lc_merger *merge_new(int n, char *const *paths, lc_err *err);
/* 1: the next document is in *d (previous contents freed); 0: the end,
 * every check passed; -1: error. */
int merge_next(lc_merger *m, lc_doc *d, lc_err *err);
void merge_free(lc_merger *m);

#endif
