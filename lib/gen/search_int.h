/*
 * search_int: the logits processors of search.h on their own, for tests.
 * ids [n] is the sequence so far (start token first); scores [vocab] is
 * changed in place. seen is scratch of vocab bytes, all zero on entry and
 * on return.
 */
#ifndef LC_SEARCH_INT_H
#define LC_SEARCH_INT_H

#include <stdint.h>

void search_repetition_penalty(float *scores, const int32_t *ids, int n, double penalty,
                               unsigned char *seen);
void search_no_repeat_ngram(float *scores, int vocab, const int32_t *ids, int n, int size);

#endif
