#include "base/cpu.h"

#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

enum { AVX2_FMA = 1, AVX512F = 2, AVX512_BF16 = 4, AMX_BF16 = 8, KNOWN = 16 };

/* What the processor offers, asked once: the bits above. */
static int features(void)
{
	static atomic_int have = 0;
	int h = atomic_load_explicit(&have, memory_order_relaxed);

	if (!h) {
		h = KNOWN;
#if defined(__x86_64__) || defined(__i386__)
		unsigned a, b, c, d;
		__builtin_cpu_init();   /* checks the OS's XSAVE state as well */
		if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
			h |= AVX2_FMA;
		if (__builtin_cpu_supports("avx512f"))
			h |= AVX512F;
		if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
			if (d >> 22 & 1)        /* CPUID.(7,0):EDX[22] AMX-BF16 */
				h |= AMX_BF16;
			/* CPUID.(7,1):EAX[5] AVX512-BF16 */
			if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5 & 1))
				h |= AVX512_BF16;
		}
#endif
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
}

int cpu_avx2_fma(void) { return !!(features() & AVX2_FMA); }
int cpu_avx512f(void) { return !!(features() & AVX512F); }
int cpu_avx512_bf16(void) { return !!(features() & AVX512_BF16); }
int cpu_bf16(void) { return !!(features() & (AVX512_BF16 | AMX_BF16)); }
