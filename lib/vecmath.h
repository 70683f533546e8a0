/**
 * @file vecmath.h
 * @brief Loops over many floats, run four at a time: SIMD for the
 *        elementwise operations, with glibc's vector expf() and erff().
 *
 * A loop such as GELU's `out[i] = 0.5·x·(1 + erf(x/√2))` does the same thing
 * to every element, so the CPU could do it to 4 floats at once (SSE: 4 lanes,
 * all that the build's generic x86-64 target may assume; AVX2 would have 8, but
 * these loops are not compiled for it, so libmvec's SSE versions are the ones
 * called). Compilers do that by themselves for +, × and /, but not for a
 * call to erff() or expf(): they do not know a vector version exists. glibc
 * (2.35 and later) ships them in libmvec, linked with -lm; they are declared
 * below with `omp declare simd`, and a loop marked VIT_PARALLEL_FOR_SIMD or
 * VIT_SIMD_SUM may call them. On the machine this was written on, glibc's
 * one-at-a-time erff() took about 19 ns per float and the vector one 1.6 ns;
 * GELU and its gradient had been a sixth of `vit train`'s step (perf).
 *
 * A sum is different: a loop `s += x[j]` adds in order, one after the other,
 * each addition waiting for the one before. VIT_SIMD_SUM(s) lets the compiler
 * keep one partial sum per lane and add them at the end: faster, and a
 * different order of additions, so the last bits of a sum may change (the
 * sums here are kept in double, so the float results they give hardly ever do).
 *
 * Where the vector functions are not there (another compiler, another C
 * library, a build without OpenMP), the macros expand to nothing: the loops
 * are the same C, run one float at a time, with the same results to within
 * the functions' last-bit differences (glibc's vector expf and erff are
 * within 4 units in the last place).
 */
#ifndef VIT_VECMATH_H
#define VIT_VECMATH_H

#include <math.h>

/** `_Pragma` with its text in quotes: a pragma a macro can expand to. */
#define VIT_PRAGMA(text) _Pragma(#text)

// Vector expf/erff: GCC with OpenMP (the declare-simd pragmas) and glibc 2.35+
// on x86-64, where libmvec has them. (Clang 14 does not call libmvec from these
// loops and would warn that it could not vectorise them: it runs them one at a time.)
// Doxygen documents the second branch, the one it reads; the macros mean the same.
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#pragma omp declare simd notinbranch
float expf(float x);
#pragma omp declare simd notinbranch
float erff(float x);
#define VIT_SIMD_SUM(...) VIT_PRAGMA(omp simd reduction(+ : __VA_ARGS__))
#define VIT_PARALLEL_FOR_SIMD(cond) VIT_PRAGMA(omp parallel for simd schedule(static) if (cond))
#else
/** Marks a loop that adds into the sums named (it may call expf() and erff()):
 *  `omp simd reduction(+ : …)`, one partial sum per lane, where the vector
 *  functions are there; else nothing. */
#define VIT_SIMD_SUM(...)
/** A loop shared among threads when @p cond holds (`omp parallel for`), each
 *  thread's part run in SIMD lanes where the vector functions are there
 *  (`omp parallel for simd`). */
#define VIT_PARALLEL_FOR_SIMD(cond) VIT_PRAGMA(omp parallel for schedule(static) if (cond))
#endif

#endif
