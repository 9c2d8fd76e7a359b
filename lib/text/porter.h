/*
 * porter: the Porter stemmer exactly as NLTK 3.8's PorterStemmer() in its
 * default NLTK_EXTENSIONS mode, the stemmer Google's rouge-score uses.
 *
 * Promises: porter_stem(w) equals nltk.stem.porter.PorterStemmer().stem(w)
 * for every word of lower-case ASCII letters and digits (the only words
 * rouge-score hands it), including NLTK's irregular forms (skies -> sky,
 * dying -> die, ...), its "ies"/"ied" rules for 4-letter words, the
 * alli -> al rerun, the logi -> log rule, fulli -> ful, and the rule that
 * words of one or two letters are returned unchanged. Other bytes are
 * treated as consonants, as NLTK would treat other characters; no
 * lower-casing is done (the caller's words are already lower case).
 *
 * Pure function, no state; the result is never longer than the input.
 */
#ifndef LC_PORTER_H
#define LC_PORTER_H

#include <stddef.h>

/* Stems word[len] into out (room for len + 1 bytes; may not overlap word).
 * Returns the stem's length; out is NUL-terminated. */
size_t porter_stem(const char *word, size_t len, char *out);

#endif
