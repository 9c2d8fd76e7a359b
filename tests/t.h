/*
 * t.h: the unit-test harness. Each tests/unit/test_*.c is one program:
 *
 *     #include "t.h"
 *     static void test_roundtrip(void) { T_OK(x == 1, "x is %d", x); }
 *     int main(void) { T_RUN(test_roundtrip); return t_done(); }
 *
 * Every check prints "ok" or "FAIL" with its location; t_done() prints
 * the closing "N passed, N failed" line that tests/run sums up, and
 * returns the exit status. Test data lives in tests/data, found through
 * t_data("name") (the directory comes from $LC_TESTDATA, set by make).
 */
#ifndef LC_T_H
#define LC_T_H

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int t_pass, t_failn;
static const char *t_current = "";

#define T_OK(cond, ...) t_check(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
/* Each argument is evaluated once. */
#define T_EQ_I(a, b) do { long long t_a_ = (long long)(a), t_b_ = (long long)(b); \
	t_check(t_a_ == t_b_, __FILE__, __LINE__, #a " == " #b, "%lld != %lld", t_a_, t_b_); } while (0)
#define T_EQ_S(a, b) do { const char *t_a_ = (a), *t_b_ = (b); \
	t_check(t_a_ && t_b_ && strcmp(t_a_, t_b_) == 0, __FILE__, __LINE__, #a " == " #b, \
	        "\"%s\" != \"%s\"", t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)"); } while (0)
#define T_RUN(fn) do { t_current = #fn; fn(); } while (0)

__attribute__((format(printf, 5, 6)))
static int t_check(int ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		t_pass++;
		return 1;
	}
	t_failn++;
	fprintf(stdout, "FAIL %s (%s:%d): %s: ", t_current, file, line, expr);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	return 0;
}

/* Limits this process's address space (RLIMIT_AS) to what it has mapped
 * now and room bytes more, for tests of running out of it (in a forked
 * child); the limit, or 0 when it could not be set. */
static inline unsigned long long t_limit_as(long long room)
{
	long long pages = 0, size = sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/statm", "r");
	struct rlimit r;
	int ok = f && fscanf(f, "%lld", &pages) == 1;

	if (f)
		fclose(f);
	if (!ok)
		return 0;
	r.rlim_cur = r.rlim_max = (rlim_t)(pages * size + room);
	return setrlimit(RLIMIT_AS, &r) == 0 ? (unsigned long long)r.rlim_cur : 0;
}

static inline const char *t_data(const char *name)
{
	static char buf[4096];
	const char *d = getenv("LC_TESTDATA");

	snprintf(buf, sizeof buf, "%s/%s", d ? d : "tests/data", name);
	return buf;
}

/* Reads a whole file; NULL if it cannot. *len gets its size. */
static inline void *t_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	for (;;) {
		if (n == cap) {
			char *q = realloc(p, cap = cap ? 2 * cap : 65536);
			if (!q) { free(p); fclose(f); return NULL; }
			p = q;
		}
		got = fread(p + n, 1, cap - n, f);
		if (!got)
			break;
		n += got;
	}
	fclose(f);
	*len = n;
	return p;
}

/* A fixed pseudo-random stream for test data (xorshift64): uniform in
 * [0, 1) and standard normal (Box-Muller). */
static uint64_t t_rs = 88172645463325252ull;
static inline double t_urand(void)
{
	t_rs ^= t_rs << 13;
	t_rs ^= t_rs >> 7;
	t_rs ^= t_rs << 17;
	return (double)(t_rs >> 11) / 9007199254740992.0;
}
static inline double t_nrand(void)
{
	double u = t_urand() + 1e-300;
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * t_urand());
}

static inline int t_done(void)
{
	printf("%d passed, %d failed\n", t_pass, t_failn);
	return t_failn ? 1 : 0;
}

#endif
