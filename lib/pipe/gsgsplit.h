/*
 * gsgsplit: lc-gsg-split's stage, documents to (source, target) pairs.
 *
 * A document goes through gap-sentence selection (text/gsg.h): its
 * selected sentences, in text order, are the target, the others the
 * source; with mask, the mask text stands in the source where each
 * selected sentence was. Each sentence is one line (its inner line breaks
 * become spaces), the lines of a side joined by "\n". A pair (a JSON
 * Lines record's source and target fields) is written as it is, with no
 * selection.
 *
 * Output goes to out, a document per input document, in input order:
 *
 *   stream  an lc stream: the document's name, the input's metadata when
 *           it came from an lc stream, after GSG "sentences" (M),
 *           "selected" (K) and "gsg" ("ind-orig ratio=0.2", "seq-uniq
 *           ratio=0.5 stem"); tensors "source" and "target", u8 text, or
 *           with a tokenizer i32 ids encoded as lc-tokenize encodes
 *           (special tokens, </s> last, <extra_id_N> markers) with
 *           "tokenizer" = its fingerprint;
 *   text    "== target\n", its lines, "== source\n", its lines (each
 *           line ended by "\n"); with several documents each is preceded
 *           by "== doc NAME\n", like head(1), so the first is held until
 *           a second comes or gsgsplit_finish.
 *
 * Text is written with stdio and not checked: the program checks out
 * when it closes it. Errors are "NAME: why" for a document whose
 * selection or encoding fails, else the message of the layer below.
 */
#ifndef LC_PIPE_GSGSPLIT_H
#define LC_PIPE_GSGSPLIT_H

#include <stddef.h>
#include <stdio.h>

#include "base/err.h"
#include "stream/stream.h"
#include "stream/textin.h"
#include "text/gsg.h"
#include "text/tokenizer.h"

typedef struct gsgsplit_opts {
	gsg_opts g;                 /* the selection */
	int mask;                   /* the source keeps mask_token for each selected sentence */
	const char *mask_token;     /* NULL: "<extra_id_0>" */
	int text;                   /* 0: an lc stream; 1: text (no tokenizer) */
	enum textin_split split;    /* how a text input splits into documents */
	/* JSON Lines inputs (stream/jsonl.h), a record a document: GSG of
	 * text_field, or with source_field or target_field given the records'
	 * pairs. NULL fields: "text", "article", "abstract"; id_field NULL:
	 * records named "FILE:LINE"; skip_bad: skip and count bad lines. */
	int jsonl;
	const char *text_field, *source_field, *target_field, *id_field;
	int skip_bad;
	/* Called by gsgsplit_finish with each closing warning (documents too
	 * short to split, bad lines skipped), without the program's name;
	 * NULL: no warnings. */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
} gsgsplit_opts;

typedef struct gsgsplit gsgsplit;

/* A stage writing to out (an lc stream's START is written now); tok, if
 * non-NULL, encodes both sides (stream output only) and must outlive the
 * stage. *o is copied; its strings must outlive the stage. */
gsgsplit *gsgsplit_new(const gsgsplit_opts *o, lc_tokenizer *tok, FILE *out, lc_err *err);
void gsgsplit_free(gsgsplit *s);

/* Every document of the input at path (textin_open's forms; "-":
 * standard input): text documents, or JSON Lines records as o says. */
int gsgsplit_input(gsgsplit *s, const char *path, lc_err *err);
/* One document, text[len], through GSG; meta: its input metadata or NULL. */
int gsgsplit_doc(gsgsplit *s, const char *name, const lc_meta *meta, const char *text,
                 size_t len, lc_err *err);
/* One pair as it is: src[slen] and tgt[tlen]. */
int gsgsplit_pair(gsgsplit *s, const char *name, const lc_meta *meta, const char *src,
                  size_t slen, const char *tgt, size_t tlen, lc_err *err);
/* After the last document: writes the held text document, or ends the
 * stream (EOS, flushed), then gives the warnings to o->warn. */
int gsgsplit_finish(gsgsplit *s, lc_err *err);

#endif
