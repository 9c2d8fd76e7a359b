/*
 * search_int: the logits processors and warpers of search.h on their
 * own, for tests. ids [n] is the sequence so far (start token first);
 * scores [vocab] is changed in place. seen is scratch of vocab bytes, all
 * zero on entry and on return; ws is scratch of search_ws_bytes(vocab).
 */
#ifndef LC_SEARCH_INT_H
#define LC_SEARCH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gen/search.h"

void search_repetition_penalty(float *scores, const int32_t *ids, int n, double penalty,
                               unsigned char *seen);
void search_no_repeat_ngram(float *scores, int vocab, const int32_t *ids, int n, int size);

size_t search_ws_bytes(int vocab);
/* TemperatureLogitsWarper: scores / t. */
void search_temperature(float *scores, int vocab, double t);
/* TopKLogitsWarper(k, min_tokens_to_keep = keep). */
void search_top_k(float *scores, int vocab, int k, int keep, void *ws);
/* TopPLogitsWarper(p, min_tokens_to_keep = keep). */
void search_top_p(float *scores, int vocab, double p, int keep, void *ws);
/* The warpers o asks for, in HF's order (temperature, top-k, top-p). */
void search_warp(const search_opts *o, float *scores, int keep, void *ws);
/* The token of a draw u in [0, 1) from softmax(scores): the first whose
 * cumulative probability (in token order) exceeds u; -1 if no score is
 * finite or one is NaN. */
int32_t search_draw(const float *scores, int vocab, double u);

#endif
