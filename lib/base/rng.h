/*
 * rng: the one pseudo-random generator of lc, SplitMix64 (Steele, Lea and
 * Flood 2014): tiny, fast, and good enough for initial weights, dropout
 * masks and data order, where what matters is that a seed reproduces a
 * run exactly on every machine.
 *
 *   lc_mix64(z)       the SplitMix64 output for state z (a hash of z)
 *   lc_rng_next(&s)   the next output of the stream with state s
 *   lc_rng_unif(&s)   uniform in (0, 1), 53 random bits
 *   lc_rng_normal(&s) standard normal (Box-Muller, two uniforms)
 */
#ifndef LC_RNG_H
#define LC_RNG_H

#include <stdint.h>

uint64_t lc_mix64(uint64_t z);
uint64_t lc_rng_next(uint64_t *s);
double lc_rng_unif(uint64_t *s);
double lc_rng_normal(uint64_t *s);

#endif
