/*
 * grow: room in a growing array, the one way lc's arrays grow.
 */
#ifndef LC_GROW_H
#define LC_GROW_H

#include <stddef.h>

/* Makes room in the array *pp (pp: the address of a T * of *cap elements
 * of elem bytes) for at least need elements: the capacity doubles from
 * first (or from *cap) until it holds need. 0, or -1 when the memory is
 * not there or the bytes would overflow, *pp and *cap unchanged. */
int lc_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first);

#endif
