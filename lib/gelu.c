/**
 * @file gelu.c
 * @brief The exact (erf) GELU (ops.h), alone in its file so a student's version can replace it.
 */
#include "ops.h"
#include "vecmath.h"

// [gelu]
void gelu(float *out, const float *x, size_t n) {
    // the exact (erf) form, as nn.GELU() with approximate='none'
    const float inv_sqrt2 = 0.70710678118654752f;
VIT_PARALLEL_FOR_SIMD(n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = 0.5f * x[i] * (1.0f + erff(x[i] * inv_sqrt2));
}
// [gelu]
