/**
 * @file gelu.c
 * @brief The exact (erf) GELU (ops.h), alone in its file so a student's version can replace it.
 */
#include "ops/ops.h"
#include "ops/vecmath.h"

// [gelu]
// out[i] = GELU(x[i]) for i < n, on the calling thread; compiled for AVX2 too,
// where erff() runs 8 floats at a time (vecmath.h)
VIT_VECTOR_CLONES static void gelu_span(float *out, const float *x, size_t n) {
    // the exact (erf) form, as nn.GELU() with approximate='none'
    const float inv_sqrt2 = 0.70710678118654752f;
    VIT_SIMD
    for (size_t i = 0; i < n; i++) out[i] = 0.5f * x[i] * (1.0f + erff(x[i] * inv_sqrt2));
}

void gelu(float *out, const float *x, size_t n) {
    // the threads share spans of VIT_SPAN floats
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t begin = 0; begin < n; begin += VIT_SPAN)
        gelu_span(out + begin, x + begin, n - begin < VIT_SPAN ? n - begin : VIT_SPAN);
}
// [gelu]
