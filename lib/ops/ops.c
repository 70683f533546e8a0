/**
 * @file ops.c
 * @brief Scale, add, LayerNorm, GELU and linear layers (see ops.h for the maths).
 */
#include "ops/ops.h"
#include "gemm/gemm.h"

#include <math.h>

// [scale]
void ops_scale(float *out, const float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = s * x[i];
}
// [scale]

// [add]
void ops_add(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
// [add]

// [linear]
void ops_linear(float *out, const float *x, const float *w, const float *b, int N, int I, int O) {
    // x is (N, I), w is (O, I), b is (O), out is (N, O)
    matmul_bt(out, x, w, N, I, O);
    if (!b) return;
#pragma omp parallel for schedule(static) if ((size_t)N * O > 65536)
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) out[(size_t)n * O + o] += b[o];
}
// [linear]

void ops_linear_lowp(float *out, const float *x, const float *w, const LowpWeight *lw,
                     const float *b, int N, int I, int O) {
    if (lw && lw->precision != LOWP_FP32) linear_lowp(out, x, lw, b, N);
    else ops_linear(out, x, w, b, N, I, O);
}
