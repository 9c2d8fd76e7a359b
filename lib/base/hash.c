#include "base/hash.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The process's own start: ids and vocabularies crafted to collide in
 * one run's tables (lookups quadratic, a hostile file's cheap stall)
 * collide in no other. Nothing lc writes depends on it: tables are
 * looked up, or walked in the order their entries were added. Seeded
 * before main (a constructor: hash.o is linked only where lc_hash_bytes
 * is used), not on each lookup, which every token of a tokenizer makes. */
static uint64_t basis = 0xcbf29ce484222325ull;

__attribute__((constructor)) static void seed(void)
{
	uint64_t r;

	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	basis ^= r;
}

uint64_t lc_hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h;

	h = basis;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h ^ (h >> 32);
}
