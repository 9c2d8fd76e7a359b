/*
 * embed: embedding lookups, forward and backward.
 */
#ifndef LC_EMBED_H
#define LC_EMBED_H

#include <stdint.h>

/* out[t] = table[ids[t]] * scale, rows of d, n ids (each in [0, V), checked
 * by the caller). */
void embed_fw(const float *table, int d, const int32_t *ids, int64_t n, float scale, float *out);

/* dtable[ids[t]] += dout[t] * scale. */
void embed_bw(float *dtable, int d, const int32_t *ids, int64_t n, float scale,
              const float *dout);

#endif
