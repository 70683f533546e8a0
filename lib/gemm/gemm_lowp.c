/**
 * @file gemm_lowp.c
 * @brief Which path the int8 and bf16 products take: what the CPU reports,
 *        unless VIT_LOWP=portable or gemm_lowp_set_portable() said otherwise.
 *
 * The products themselves are in gemm_int8.c and gemm_bf16.c; they ask here,
 * and this file calls neither. The build targets generic x86-64, so the
 * instructions are found at run time with __builtin_cpu_supports(), as the
 * float kernel's are (gemm.c).
 */
#include "gemm/gemm_lowp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define VIT_LOWP_X86 1
#endif

bool gemm_cpu_has_vnni(void) {
#ifdef VIT_LOWP_X86
    __builtin_cpu_init(); // reads CPUID once; cheap afterwards
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#else
    return false;
#endif
}

bool gemm_cpu_has_bf16(void) {
#if defined(VIT_LOWP_X86) && (defined(__clang__) || __GNUC__ >= 10)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
#else
    return false;
#endif
}

// 0: not decided yet; 1: the CPU's instructions where it has them; 2: portable
static int lowp_mode;

bool gemm_lowp_forced_portable(void) {
    int mode = __atomic_load_n(&lowp_mode, __ATOMIC_RELAXED);
    if (mode == 0) { // first call: the environment decides
        const char *env = getenv("VIT_LOWP");
        mode = env && strcmp(env, "portable") == 0 ? 2 : 1;
        __atomic_store_n(&lowp_mode, mode, __ATOMIC_RELAXED);
    }
    return mode == 2;
}

void gemm_lowp_set_portable(bool portable) {
    __atomic_store_n(&lowp_mode, portable ? 2 : 1, __ATOMIC_RELAXED);
}

const char *gemm_s8_kernel(void) {
    return !gemm_lowp_forced_portable() && gemm_cpu_has_vnni() ? "avx512-vnni" : "portable";
}

const char *gemm_bf16_kernel(void) {
    return !gemm_lowp_forced_portable() && gemm_cpu_has_bf16() ? "avx512-bf16" : "portable";
}

// Why a path is portable: forced, or the instruction the CPU lacks.
static const char *why_portable(bool cpu_has, const char *instruction) {
    if (gemm_lowp_forced_portable()) return cpu_has ? " (forced)" : "";
    return cpu_has ? "" : instruction;
}

void gemm_lowp_describe(char *buf, size_t size) {
    const bool vnni = gemm_cpu_has_vnni(), bf16 = gemm_cpu_has_bf16();
    const char *s8 = gemm_s8_kernel(), *b16 = gemm_bf16_kernel();
    snprintf(buf, size, "int8 %s%s, bf16 %s%s", s8,
             strcmp(s8, "portable") ? " (vpdpbusd)" : why_portable(vnni, " (no avx512_vnni on this CPU)"),
             b16,
             strcmp(b16, "portable") ? " (vdpbf16ps)" : why_portable(bf16, " (no avx512_bf16 on this CPU)"));
}
