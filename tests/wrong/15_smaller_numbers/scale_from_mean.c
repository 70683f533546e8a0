// hint: the scale is mean|x| / 127
/**
 * @file quantize_rows.c
 * @brief A wrong quantize_rows.c for exercise 15 (tests/wrong/): the scale from the mean of |x|, not its largest, so every value above the mean is clamped to ±127.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "gemm/gemm_lowp.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

// q (n) of x (n) with scale s: round to nearest, ties to even, clamped.
static void quantize_with(int8_t *q, const float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++) {
        float v = s > 0 ? nearbyintf(x[i] / s) : 0.0f; // a row of zeros: q 0
        if (v > 127) v = 127;
        if (v < -127) v = -127;
        q[i] = (int8_t)v;
    }
}

static float largest(const float *x, size_t n) { // WRONG: the mean of |x|, not the largest
    float m = 0;
    for (size_t i = 0; i < n; i++) m += fabsf(x[i]);
    return n ? m / (float)n : 0.0f;
}

void quantize_rows_s8(int8_t *q, float *scales, const float *x, int R, int K) {
    // x is (R,K), q is (R,K), scales is (R); each row on its own
    for (int r = 0; r < R; r++) {
        const float *row = x + (size_t)r * K;
        scales[r] = largest(row, (size_t)K) / 127.0f; // the largest maps to ±127
        quantize_with(q + (size_t)r * K, row, (size_t)K, scales[r]);
    }
}

float quantize_tensor_s8(int8_t *q, const float *x, size_t n) {
    const float s = largest(x, n) / 127.0f;
    quantize_with(q, x, n, s);
    return s;
}

void dequantize_rows_s8(float *x, const int8_t *q, const float *scales, int R, int K) {
    // q is (R,K), scales is (R), x is (R,K)
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) x[(size_t)r * K + k] = q[(size_t)r * K + k] * scales[r];
}
