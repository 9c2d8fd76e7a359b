/*
 * arena: many zeroed float arrays freed at once, for the activations that
 * training keeps between an example's forward and backward. An allocation
 * that fails marks the arena, so callers check once after a batch of
 * allocations (lc_arena_ok). And the one checked allocation of a
 * three-factor float array.
 */
#ifndef LC_ARENA_H
#define LC_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct lc_arena {
	void **p;
	int n, cap;
	int oom;
} lc_arena;

/* n zeroed floats (at least one), or NULL (and the arena marked) when out of memory. */
float *lc_arena_f32(lc_arena *a, int64_t n);
/* n zeroed bytes (at least one). */
void *lc_arena_bytes(lc_arena *a, int64_t n);
int lc_arena_ok(const lc_arena *a);

/* a x b x c zeroed floats (at least one, to be freed with free), or NULL
 * when the product overflows or memory is out. */
float *lc_calloc_f32(uint64_t a, uint64_t b, uint64_t c);
void lc_arena_free(lc_arena *a);   /* frees everything; the arena can be used again */

/* n bytes (n > 0) of large data written whole soon after (a decoder's
 * cache, a model's weights), zeroed, in 2 MiB pages where the kernel
 * gives them: a 4 KiB page fault per 4 KiB written cost 13 us a page on
 * a virtual machine (copying 900 MB of weights: 2.9 s of faults). NULL
 * when out of memory; lc_big_free(p, n) gives it back. */
void *lc_big_alloc(size_t n);
void lc_big_free(void *p, size_t n);

/* Asks for 2 MiB pages for the whole pages inside [p, p + n) of a malloc'd
 * buffer of data that will be read over and over (encoder states). Only
 * pages touched after it are affected. Below LC_HUGE_MIN bytes it does
 * nothing. */
#define LC_HUGE_MIN ((size_t)8 << 20)
void lc_huge_hint(void *p, size_t n);

#endif
