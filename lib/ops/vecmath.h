/**
 * @file vecmath.h
 * @brief Loops over many floats, run 4 or 8 at a time: SIMD for the
 *        elementwise operations, with glibc's vector expf() and erff().
 *
 * A loop such as GELU's `out[i] = 0.5·x·(1 + erf(x/√2))` does the same thing
 * to every element, so the CPU could do it to several floats at once.
 * Compilers do that by themselves for +, × and /, but not for a call to
 * erff() or expf(): they do not know a vector version exists. glibc (2.35 and
 * later) ships them in libmvec, linked with -lm; they are declared below with
 * `omp declare simd`, and a loop marked VIT_SIMD or VIT_SIMD_SUM may call
 * them. On the machine this was written on, glibc's one-at-a-time erff() took
 * about 19 ns per float and the vector one 1.6 ns; GELU and its gradient had
 * been a sixth of `vit train`'s step (perf).
 *
 * How many at once depends on what the function is compiled for. The build
 * targets generic x86-64, whose SSE registers hold 4 floats, so libmvec's
 * 4-lane versions are called (`_ZGVbN4v_expf`). A function marked
 * VIT_VECTOR_CLONES is compiled a second time for AVX2, and on a CPU that has
 * it runs 8 floats at a time and calls the 8-lane versions (`_ZGVdN8v_expf`).
 * The two copies may round the last bit of a result differently; each CPU
 * always runs the same copy, so a run repeats itself bit for bit.
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

/** How many floats an elementwise loop hands each thread at a time (64 KB). */
#define VIT_SPAN ((size_t)16384)

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
#define VIT_SIMD VIT_PRAGMA(omp simd)
#define VIT_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
/** Marks a loop that adds into the sums named (it may call expf() and erff()):
 *  `omp simd reduction(+ : …)`, one partial sum per lane, where the vector
 *  functions are there; else nothing. */
#define VIT_SIMD_SUM(...)
/** Marks a loop whose iterations may run in SIMD lanes (`omp simd`), calling
 *  the vector expf() and erff(), where they are there; else nothing. */
#define VIT_SIMD
/** Compiles the function twice, for any x86-64 and for AVX2, and lets the CPU
 *  pick when the program loads (GCC's `target_clones`): in the AVX2 copy the
 *  loops run 8 floats at a time and call libmvec's 8-lane expf() and erff()
 *  instead of the 4-lane SSE ones. Else nothing. */
#define VIT_VECTOR_CLONES
#endif

#endif
