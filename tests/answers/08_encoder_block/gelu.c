/**
 * @file gelu.c
 * @brief Exercise 08's model answer: gelu(), the exact (erf) GELU, written from the skeleton.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    // x and out are n values; out may equal x: x[i] is read once, before out[i] is written
    for (size_t i = 0; i < n; i++) {
        const float v = x[i];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f)); // x/2 · (1 + erf(x/√2))
    }
}
