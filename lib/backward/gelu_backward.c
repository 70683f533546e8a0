/**
 * @file gelu_backward.c
 * @brief The derivative of the exact (erf) GELU (ops.h), alone in its file so a student's version can replace it.
 *
 * GELU(x) = x·Φ(x), Φ the standard normal CDF, Φ(x) = ½(1 + erf(x/√2)).
 * Product rule, with Φ' = φ the normal density φ(x) = e^(−x²/2)/√(2π):
 *   GELU'(x) = Φ(x) + x·φ(x).
 * It is 0.5 at 0 and tends to 1 for large x; below x ≈ −0.75, where GELU
 * has its minimum and decreases, it is slightly negative (as low as −0.13
 * near x = −1.4), and it goes back to 0 as x → −∞.
 *
 * What it omits: the tanh approximation (approximate='tanh'), which a ViT does not use.
 */
#include "ops/ops.h"
#include "ops/vecmath.h"

// dx[i] += dout[i]·GELU'(x[i]) for i < n, on the calling thread; compiled for
// AVX2 too, where erff() and expf() run 8 floats at a time (vecmath.h)
VIT_VECTOR_CLONES static void gelu_backward_span(float *dx, const float *dout, const float *x,
                                                 size_t n) {
    const float inv_sqrt2 = 0.70710678118654752f, inv_sqrt_2pi = 0.39894228040143268f;
    VIT_SIMD
    for (size_t i = 0; i < n; i++) {
        const float cdf = 0.5f * (1.0f + erff(x[i] * inv_sqrt2));
        const float pdf = inv_sqrt_2pi * expf(-0.5f * x[i] * x[i]);
        dx[i] += dout[i] * (cdf + x[i] * pdf);
    }
}

void gelu_backward(float *dx, const float *dout, const float *x, size_t n) {
    // x, dout and dx are n values: dx += dout · (Φ(x) + x·φ(x)); the threads
    // share spans of VIT_SPAN values
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t begin = 0; begin < n; begin += VIT_SPAN)
        gelu_backward_span(dx + begin, dout + begin, x + begin,
                           n - begin < VIT_SPAN ? n - begin : VIT_SPAN);
}
