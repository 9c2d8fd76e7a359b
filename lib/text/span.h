/*
 * span: T5-style span corruption as the BART-LS authors' pretraining data
 * (bart_ls, fairseq LongDenoisingDataset), bit for bit.
 *
 * A document is tokens[0..n): its first `head` and last `tail` tokens (BART's
 * <s> and </s>: 1, 1; SentencePiece's </s>: 0, 1) are kept as they are, and
 * the L tokens between them, the body, are noised:
 *
 *   num_noise = min(max(round(L x density), 1), L - 1)
 *   num_spans = max(round(num_noise / mean_span), 1)      (round half to even)
 *
 * the noise and the rest are each cut into num_spans segments by
 * random_segmentation (a shuffled 0/1 array of n - 1 items, numpy's legacy
 * shuffle), drawn in that order from numpy's generator seeded with
 * fairseq's numpy_seed(seed, epoch, index) (base/nprand.h), and laid out
 * rest_0 noise_0 rest_1 noise_1 ... noise_{k-1}: the first body token is
 * never noise, the last always is. Then
 *
 *   source = head + body with noise span k replaced by sentinel k + tail
 *   target = head + sentinel_0 span_0 sentinel_1 span_1 ... + tail
 *
 * (no closing sentinel, as the authors'), the target's part between its
 * ends cut to truncate_target ids when that is not 0 (the authors: 1022).
 * Sentinel k is sentinel + k x step: step 1 is the authors' (ids after
 * <mask>, counting up), step -1 T5's (<extra_id_0> = the vocabulary's last
 * id, counting down).
 *
 * The authors fail on L = 1 and when L - num_noise < num_spans; so does
 * span_corrupt, with a message saying which (SPAN_SHORT), as it does when
 * the sentinels run out (more spans than max_spans, or an id below 0).
 */
#ifndef LC_SPAN_H
#define LC_SPAN_H

#include <stdint.h>

#include "base/err.h"

typedef struct span_opts {
	double density;            /* noise density, in (0, 1) */
	double mean_span;          /* mean noise span length, >= 1 */
	int32_t sentinel;          /* the id of sentinel 0 */
	int step;                  /* 1: counting up (the authors'); -1: down (T5) */
	int64_t max_spans;         /* sentinels available; 0: no limit but ids >= 0 */
	int64_t truncate_target;   /* 0: none */
} span_opts;

/* Outputs, reused between calls (zero-initialise; span_out_free). */
typedef struct span_out {
	int32_t *src, *tgt;
	int64_t nsrc, ntgt;
	uint8_t *mask;             /* [L]: 1 where the body token is noise */
	int64_t len;               /* L */
	int64_t nnoise, nspans;
	int truncated;             /* the target was cut */
	/* private */
	int64_t cap_src, cap_tgt, cap_mask;
} span_out;

enum { SPAN_SHORT = -2 };

/* Corrupts tokens[0..n) with numpy seed np_seed (nprand_fairseq_seed of
 * seed, epoch, index). 0; SPAN_SHORT with err when the body is too short
 * for the settings; -1 with err on other failures. */
int span_corrupt(const span_opts *o, const int32_t *tokens, int64_t n, int64_t head,
                 int64_t tail, uint32_t np_seed, span_out *out, lc_err *err);
void span_out_free(span_out *out);

/* The noise counts span_corrupt uses for a body of len tokens (len >= 1). */
void span_counts(int64_t len, double density, double mean_span, int64_t *nnoise,
                 int64_t *nspans);

/* The dynamic span length of document index: one of set[0..n), drawn
 * from lc's generator (base/rng.h) with seed, the same in every epoch.
 * (The authors draw it from Python's unseeded random: not reproducible.) */
double span_pick(const double *set, int n, uint64_t seed, uint64_t index);

/* The sentinels the authors' task adds after <mask>:
 * round(round((max_source_positions - 2) x density) / mean_span). */
int64_t span_num_sentinels(int64_t max_source_positions, double density, double mean_span);

#endif
