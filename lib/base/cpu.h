/*
 * cpu: what the processor offers, asked once (cpuid) and cached:
 * the vector paths' common test (AVX2 with FMA) and bf16 products
 * (AVX512-BF16 or AMX-BF16). Modules keep their own switch for tests
 * (vm_simd, cmp_xk_simd) on top of it.
 */
#ifndef LC_CPU_H
#define LC_CPU_H

/* 1 when the processor has AVX2 and FMA (x86-64 only). */
int cpu_avx2_fma(void);

/* 1 when the processor has AVX-512 F (and the OS keeps its registers). */
int cpu_avx512f(void);

/* 1 when it multiplies bf16 in hardware: AVX512-BF16 or AMX-BF16. */
int cpu_bf16(void);

/* 1 when it has AVX512-BF16 itself (its conversion instruction). */
int cpu_avx512_bf16(void);

/* Defined where the compiler has AVX512-BF16's intrinsics for functions
 * that ask for them by target attribute (x86-64: GCC, clang from 11). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) || \
	defined(__x86_64__) && defined(__clang__) && __clang_major__ >= 11
#define LC_CC_AVX512_BF16 1
#endif

#endif
