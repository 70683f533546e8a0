/**
 * @file ops.c
 * @brief Scale, add, LayerNorm, GELU and linear layers (see ops.h for the maths).
 */
#include "ops.h"
#include "gemm.h"

#include <math.h>

void scale(float *out, const float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = s * x[i];
}

void add(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void layernorm(float *out, const float *x, const float *gamma, const float *beta, int rows,
               int dim, float eps) {
    // x is (rows, dim), gamma and beta are (dim), out is (rows, dim)
#pragma omp parallel for schedule(static) if (rows > 16)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *yr = out + (size_t)r * dim;
        double mean = 0.0;
        for (int j = 0; j < dim; j++) mean += xr[j];
        mean /= dim;
        double var = 0.0; // two passes: mean of squares minus square of mean cancels badly
        for (int j = 0; j < dim; j++) var += (xr[j] - mean) * (xr[j] - mean);
        var /= dim; // biased, as PyTorch's LayerNorm
        float mu = (float)mean;
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        for (int j = 0; j < dim; j++) {
            float g = gamma ? gamma[j] : 1.0f;
            float b = beta ? beta[j] : 0.0f;
            yr[j] = (xr[j] - mu) * rstd * g + b;
        }
    }
}

void gelu(float *out, const float *x, size_t n) {
    // the exact (erf) form, as nn.GELU() with approximate='none'
    const float inv_sqrt2 = 0.70710678118654752f;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = 0.5f * x[i] * (1.0f + erff(x[i] * inv_sqrt2));
}

void linear(float *out, const float *x, const float *w, const float *b, int N, int I, int O) {
    // x is (N, I), w is (O, I), b is (O), out is (N, O)
    matmul_bt(out, x, w, N, I, O);
    if (!b) return;
#pragma omp parallel for schedule(static) if ((size_t)N * O > 65536)
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) out[(size_t)n * O + o] += b[o];
}
