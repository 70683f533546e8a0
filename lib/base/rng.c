/**
 * @file rng.c
 * @brief PCG32 and the float distributions built on it (see rng.h for the maths).
 */
#include "base/rng.h"

#include <math.h>

void rng_seed(Rng *rng, uint64_t seed) {
    // pcg32_srandom_r(seed, 54) from the PCG reference implementation
    rng->state = 0;
    rng->inc = (54u << 1) | 1u;
    rng_u32(rng);
    rng->state += seed;
    rng_u32(rng);
}

uint32_t rng_u32(Rng *rng) {
    uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

float rng_uniform(Rng *rng) {
    return (float)(rng_u32(rng) >> 8) * (1.0f / 16777216.0f);
}

float rng_normal(Rng *rng) {
    // 1 - u lies in (0, 1], so the log never sees zero
    double u1 = 1.0 - (double)rng_uniform(rng);
    double u2 = (double)rng_uniform(rng);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

void rng_fill_uniform(Rng *rng, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(rng);
}

void rng_fill_normal(Rng *rng, float *x, size_t n, float mean, float std) {
    for (size_t i = 0; i < n; i++) x[i] = mean + std * rng_normal(rng);
}

// [rng_fill_trunc_normal]
void rng_fill_trunc_normal(Rng *rng, float *x, size_t n, float mean, float std, float lo,
                           float hi) {
    for (size_t i = 0; i < n; i++) {
        float v;
        do v = mean + std * rng_normal(rng);
        while (v < lo || v > hi);
        x[i] = v;
    }
}
// [rng_fill_trunc_normal]
