/*
 * sentence: a rule-based sentence splitter for English prose (PCRE2).
 *
 * Used by lc-rouge --split-sentences (ROUGE-Lsum on text without one
 * sentence per line) and by lc-gsg-split. It is deterministic and needs
 * no model; it is not NLTK's Punkt, so its sentences can differ from
 * rouge-score's split_summaries=True.
 *
 * A sentence ends
 *   - at '.', '!', '?', '...' or U+2026, together with any closing quotes
 *     and brackets right after it ("He left." she said -> the quote stays
 *     with the first sentence), when whitespace or the end of the text
 *     follows and the next word does not start with a lower-case letter;
 *   - at a blank line; at the end of a line that is a heading (Markdown
 *     '#', a section number "2.1 Results", ALL CAPS or Title Case, short
 *     and without final punctuation); before and after list items
 *     ("- x", "* x", "1. x", "2) x", "(a) x"; a list item's indented
 *     continuation lines stay with it).
 * A sentence does not end
 *   - after an abbreviation that is followed by more of the sentence
 *     (Mr. Dr. Prof. St. e.g. i.e. cf. vs. Fig. No. Eq. Vol. pp. Jan. ...),
 *     after a single capital initial ("J. R. R. Tolkien"), after the
 *     number of a numbered list item, inside a decimal number (3.14, v1.2)
 *     or at a line break inside a paragraph of hard-wrapped prose.
 * Known limits: an abbreviation that really ends a sentence before a
 * capitalized word ("... in Washington, D.C. The next day") is split only
 * when it is not in the list above; a sentence that starts with a
 * lower-case word (e.g. "iPhone") is joined to the one before it; names
 * such as "Yahoo!" end a sentence; quotations with several sentences are
 * split inside the quotes. Input is UTF-8; invalid bytes are kept as they
 * are and never end a sentence.
 *
 * The splitter holds compiled patterns only; one splitter may be shared by
 * threads (each call makes its own match data).
 */
#ifndef LC_SENTENCE_H
#define LC_SENTENCE_H

#include <stddef.h>

#include "base/err.h"

typedef struct sentence_span {
	size_t start, end;           /* text[start..end): one sentence, no surrounding whitespace */
} sentence_span;

typedef struct sentence_splitter sentence_splitter;

sentence_splitter *sentence_new(lc_err *err);
void sentence_free(sentence_splitter *s);

/* Splits text[len] into sentences in text order. *spans is grown with
 * realloc (*cap entries); *n gets the number of sentences (0 for a text
 * of only whitespace). */
int sentence_split(const sentence_splitter *s, const char *text, size_t len,
                   sentence_span **spans, size_t *n, size_t *cap, lc_err *err);

#endif
