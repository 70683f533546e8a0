/**
 * @file rng.h
 * @brief A small deterministic random number generator: PCG32.
 *
 * Every "random" number in the project (chapter examples, test inputs,
 * generated weights) comes from here, so runs are repeatable bit for bit on
 * any machine, and tools/vitrng.py can reproduce the same streams in Python.
 *
 * Algorithm: PCG32 "XSH RR" (M. E. O'Neill, 2014, pcg-random.org):
 *   state' = state · 6364136223846793005 + inc            (mod 2⁶⁴)
 *   out    = rotr32(((state ≫ 18) ⊕ state) ≫ 27, state ≫ 59)
 * Floats: uniform u = (out ≫ 8) · 2⁻²⁴ in [0, 1); normal by Box–Muller in
 * double precision from two uniforms, z = √(−2 ln(1−u₁)) · cos(2π u₂);
 * truncated normal by rejection (redraw until inside [lo, hi]).
 *
 * Deliberately omitted: anything cryptographic, and matching PyTorch's own
 * generator (the PyTorch goldens read our inputs instead).
 */
#ifndef VIT_RNG_H
#define VIT_RNG_H

#include <stddef.h>
#include <stdint.h>

/** @defgroup rng Random numbers
 *  @brief PCG32 with uniform, normal and truncated-normal fills.
 *
 *  Taught in @ref chapter02 "chapter 02" (random vectors), @ref chapter09 "chapter 09" (the
 *  initialisation). Pinned by the suites @ref test_rng.c "rng" (@ref answer_keys "the answer
 *  keys").
 *  @{
 */

/** PCG32 state: a 64-bit counter and an odd increment choosing the stream. */
typedef struct {
    uint64_t state; /**< advances by one LCG step per draw */
    uint64_t inc;   /**< odd; selects one of 2⁶³ streams */
} Rng;

/** @brief Seed the generator (stream fixed at 54, as in the PCG reference demo). */
void rng_seed(Rng *rng, uint64_t seed);
/** @brief Next 32 random bits. */
uint32_t rng_u32(Rng *rng);
/** @brief Uniform in [0, 1) with 24 bits of precision. */
float rng_uniform(Rng *rng);
/** @brief Standard normal, mean 0 and variance 1 (Box–Muller). */
float rng_normal(Rng *rng);

/** @brief Fill x[0..n) with uniform values in [lo, hi). */
void rng_fill_uniform(Rng *rng, float *x, size_t n, float lo, float hi);
/** @brief Fill x[0..n) with normal values of the given mean and standard deviation. */
void rng_fill_normal(Rng *rng, float *x, size_t n, float mean, float std);
/**
 * @brief Fill x[0..n) with normal values redrawn until inside [lo, hi]
 *        (timm initialises weights with trunc_normal_(std=0.02)).
 */
void rng_fill_trunc_normal(Rng *rng, float *x, size_t n, float mean, float std, float lo,
                           float hi);

/** @} */
#endif
