#include "base/arena.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* 2 MiB pages asked for [a, a + len), a and len whole pages: a hint,
 * whose failure changes nothing. */
static void advise_huge(void *a, size_t len)
{
#ifdef MADV_HUGEPAGE
	madvise(a, len, MADV_HUGEPAGE);
#else
	(void)a, (void)len;
#endif
}

void *lc_big_alloc(size_t n)
{
	void *p = n ? mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
	            : MAP_FAILED;

	if (p == MAP_FAILED)
		return NULL;
	advise_huge(p, n);      /* without it, 4 KiB pages */
	return p;
}

void lc_huge_hint(void *p, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t m = pg > 0 ? (uintptr_t)pg - 1 : 4095;
	uintptr_t a = ((uintptr_t)p + m) & ~m, b = ((uintptr_t)p + n) & ~m;

	if (p && n >= LC_HUGE_MIN && b > a)
		advise_huge((void *)a, b - a);
}

void lc_big_free(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}

void *lc_arena_bytes(lc_arena *a, int64_t n)
{
	void *p;

	if (a->oom)
		return NULL;
	if (n < 1)
		n = 1;
	if (a->n == a->cap) {
		int nc = a->cap ? 2 * a->cap : 256;
		void **np = realloc(a->p, (size_t)nc * sizeof *np);
		if (!np) {
			a->oom = 1;
			return NULL;
		}
		a->p = np;
		a->cap = nc;
	}
	if ((uint64_t)n > SIZE_MAX || !(p = calloc(1, (size_t)n))) {
		a->oom = 1;
		return NULL;
	}
	a->p[a->n++] = p;
	return p;
}

float *lc_arena_f32(lc_arena *a, int64_t n)
{
	if (n > INT64_MAX / (int64_t)sizeof(float)) {
		a->oom = 1;
		return NULL;
	}
	return lc_arena_bytes(a, n * (int64_t)sizeof(float));
}

int lc_arena_ok(const lc_arena *a)
{
	return !a->oom;
}

void lc_arena_free(lc_arena *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
	a->p = NULL;
	a->n = a->cap = 0;
	a->oom = 0;
}

float *lc_calloc_f32(uint64_t a, uint64_t b, uint64_t c)
{
	if (a == 0 || b == 0 || c == 0)
		return calloc(1, sizeof(float));
	if (b > UINT64_MAX / a || c > UINT64_MAX / (a * b) || a * b * c > SIZE_MAX / sizeof(float))
		return NULL;
	return calloc((size_t)(a * b * c), sizeof(float));
}
