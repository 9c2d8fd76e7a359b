#include "base/cpu.h"

#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int cpu_avx2_fma(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static atomic_int have = -1;
	int h = atomic_load_explicit(&have, memory_order_relaxed);

	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
#else
	return 0;
#endif
}

int cpu_avx512f(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static atomic_int have = -1;
	int h = atomic_load_explicit(&have, memory_order_relaxed);

	if (h < 0) {
		__builtin_cpu_init();  /* checks the OS's XSAVE state as well */
		h = __builtin_cpu_supports("avx512f");
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
#else
	return 0;
#endif
}

int cpu_avx512_bf16(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static atomic_int have = -1;
	int h = atomic_load_explicit(&have, memory_order_relaxed);
	unsigned a, b, c, d;

	if (h < 0) {
		/* CPUID.(7,1):EAX[5] AVX512-BF16 */
		h = __get_cpuid_count(7, 0, &a, &b, &c, &d) && a >= 1 &&
		    __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5 & 1);
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
#else
	return 0;
#endif
}

int cpu_bf16(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	/* CPUID.(7,0):EDX[22] AMX-BF16 */
	return cpu_avx512_bf16() || (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1));
#else
	return 0;
#endif
}
