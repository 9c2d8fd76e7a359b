/*
 * chunk: cutting long documents into pieces and putting them back.
 *
 * A document's content is a sequence of units: the tokens of its
 * "tokens" tensor, or the bytes of its "text" tensor. A plan cuts it
 * into pieces [offset, offset + length) that cover it in order; pieces
 * may overlap (windows over tokens), never leave gaps. Each piece becomes
 * a document "NAME#k" (k from 1) whose metadata say where it came from:
 *
 *   parent=NAME piece=k pieces=N offset=O length=LEN total=T unit=tokens|bytes
 *
 * (and head=H tail=T when windows keep the parent's ends) plus the
 * parent's own metadata. chunk_join reassembles consecutive
 * pieces of a parent: when every piece still has the length it was cut
 * with, exactly (overlaps removed); when the pieces were transformed
 * (summaries of chapters, say), by concatenation in piece order, text
 * pieces separated by a newline.
 */
#ifndef LC_CHUNK_H
#define LC_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "stream/stream.h"
#include "text/sentence.h"

typedef struct chunk_piece {
	uint64_t offset, length;     /* in units of the parent */
} chunk_piece;

typedef struct chunk_plan {
	chunk_piece *p;              /* [n] in order */
	size_t n, cap;
	/* token windows: the parent's first `head` and last `tail` tokens (its
	 * special tokens, BART's <s> and </s>) begin and end every piece */
	uint64_t head, tail;
} chunk_plan;

void chunk_plan_free(chunk_plan *pl);

/* Windows of `size` units every size - overlap units over total units;
 * the last window ends at total. An empty parent gives one empty piece.
 * Requires 0 <= overlap < size. */
int chunk_plan_windows(chunk_plan *pl, uint64_t total, uint64_t size, uint64_t overlap, lc_err *err);

/* The same over the units between the first head and the last tail, each
 * piece then made of those ends around its window, size counting them
 * (pieces' offset and length: the window's, in the parent). Requires
 * total >= head + tail and overlap < size - head - tail. */
int chunk_plan_windows_ends(chunk_plan *pl, uint64_t total, uint64_t size, uint64_t overlap,
                            uint64_t head, uint64_t tail, lc_err *err);

/* Pieces of `size` sentences every size - overlap sentences, over text of
 * total bytes whose sentences start at starts[nsent] (ascending). Pieces
 * begin at a sentence start (the first at 0) and run to the next piece's
 * start or the end, so that without overlap they tile the text exactly. */
int chunk_plan_units(chunk_plan *pl, uint64_t total, const uint64_t *starts, size_t nstarts,
                     uint64_t size, uint64_t overlap, lc_err *err);

/* chunk_plan_units over the sentences ss finds in text[len]. */
int chunk_plan_sentences(chunk_plan *pl, const sentence_splitter *ss, const char *text,
                         size_t len, uint64_t size, uint64_t overlap, lc_err *err);

/* Cut before each cut[ncut] (ascending byte offsets; 0 and total ignored). */
int chunk_plan_cuts(chunk_plan *pl, uint64_t total, const uint64_t *cut, size_t ncut, lc_err *err);

/* A PCRE2 pattern for chunk_plan_pattern: multiline (^ matches at every
 * line start), UTF-8, with invalid UTF-8 in the text matched as bytes
 * rather than refused. */
typedef struct chunk_pattern chunk_pattern;
/* NULL and err (the offset in the pattern and PCRE2's message) if it does
 * not compile; NULL and err too if it matches the empty string (with ^ and
 * $ not matching there), as it would cut before every byte. */
chunk_pattern *chunk_pattern_new(const char *pattern, lc_err *err);
void chunk_pattern_free(chunk_pattern *p);
/* Cut text[len] before each match of p (a match at 0 cuts nothing; an
 * empty match moves on by one byte). A failed match (e.g. PCRE2's match
 * limit) is an error with PCRE2's message. */
int chunk_plan_pattern(chunk_plan *pl, const chunk_pattern *p, const char *text, size_t len,
                       lc_err *err);

/* Makes piece k (0-based) of parent d as a new document: its tensor
 * `tensor` ("tokens" or "text") cut to the piece, its metadata as above.
 * Other records of the parent are not carried. */
int chunk_make_piece(lc_doc *out, const lc_doc *parent, const char *tensor,
                     const chunk_plan *pl, size_t k, lc_err *err);

/* Reassembly, one parent at a time. */
typedef struct chunk_joiner {
	lc_doc acc;                  /* the parent being rebuilt */
	int active;
	uint64_t pieces, next, total, end;
	uint64_t head, tail;         /* the parent's ends that every piece repeats */
	int exact;                   /* every piece so far has its cut length */
	/* pieces kept until the parent is complete: [npend] */
	lc_doc *pend;
	size_t npend, cap;
} chunk_joiner;

void chunk_joiner_init(chunk_joiner *j);
void chunk_joiner_free(chunk_joiner *j);
/* Feeds one document. Returns 1 when *out holds a document to write (a
 * complete parent, or d itself moved out when it is not a piece), 0 when
 * the piece was kept, -1 on error (a missing, repeated or foreign piece).
 * d is left empty when it was taken. */
int chunk_join_add(chunk_joiner *j, lc_doc *d, lc_doc *out, lc_err *err);
/* At the end of input: an error if a parent is incomplete, naming its
 * last piece read (the caller prefixes the input it came from). */
int chunk_join_finish(chunk_joiner *j, lc_err *err);

#endif
