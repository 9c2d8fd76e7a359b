/*
 * hash: the hash of byte strings for lc's hash tables (the tokenizers'
 * vocabularies): FNV-1a 64, its high half folded into the low, so that
 * masking to a power-of-two table size uses all the bits, from a basis
 * drawn once per process (crafted collisions do not carry from one run
 * to the next). Not for fingerprints of files or anything kept: it
 * differs between runs (arch/model.c has its own, stable one).
 */
#ifndef LC_HASH_H
#define LC_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t lc_hash_bytes(const void *p, size_t n);

#endif
