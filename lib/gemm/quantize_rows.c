/**
 * @file quantize_rows.c
 * @brief Symmetric int8 quantization of rows: one scale per row (a weight's
 *        output channel, an activation's token) or one for a whole tensor, and
 *        the way back to float.
 *
 * Shapes: x (R,K) rows to quantize, q (R,K) int8, scales (R).
 *
 * A row x is stored as q · scale with scale = max|x| / 127: the largest value
 * maps to ±127 and every other to the nearest multiple of scale (ties to
 * even), so each element is off by at most scale / 2. Symmetric (no zero
 * point) keeps the product's correction down to one term (gemm_int8.c); −128
 * is never used, so that −q is always a valid int8. One scale per row rather
 * than per tensor: a row with small values then gets small steps, not the
 * largest row's.
 *
 * Exercise 15 hands these functions out (exercises/15_smaller_numbers/); the
 * quantized weight and the linear layer built on them are in quantize.c.
 *
 * Deliberately omitted: asymmetric (zero-point) schemes, and NaN or infinite
 * inputs (the values must be finite).
 */
#include "gemm/gemm_lowp.h"

#include <math.h>
#include <stddef.h>

/**
 * 1.5 · 2²³: v + ROUNDER lands where a float's step is 1, so the addition
 * rounds v to an integer (to nearest, ties to even, as rintf() does in the
 * default rounding mode) and subtracting ROUNDER again is exact, for any
 * |v| < 2²². Unlike a call to rintf(), the compiler turns the loop below into
 * vector instructions (it may not assume rintf() raises no exception).
 */
#define ROUNDER 12582912.0f

// q (n) of x (n) with the given scale: round to nearest, ties to even,
// clamped to −127..127 (|x / scale| is at most 127 plus a rounding here).
static void quantize_with_scale(int8_t *q, const float *x, size_t n, float scale) {
    if (!(scale > 0.0f)) { // a row of zeros
        for (size_t i = 0; i < n; i++) q[i] = 0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float r = (x[i] / scale + ROUNDER) - ROUNDER;
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        q[i] = (int8_t)r;
    }
}

// max |x[i]|, 0 for none. Eight running maxima, not one: each step of a single
// one waits for the one before, and the compiler may not reorder a float
// maximum by itself; eight independent ones it turns into vector instructions.
static float max_abs(const float *x, size_t n) {
    float m[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) m[j] = fabsf(x[i + j]) > m[j] ? fabsf(x[i + j]) : m[j];
    for (; i < n; i++) m[0] = fabsf(x[i]) > m[0] ? fabsf(x[i]) : m[0];
    for (int j = 1; j < 8; j++) m[0] = m[j] > m[0] ? m[j] : m[0];
    return m[0];
}

// [quantize_rows_s8]
void quantize_rows_s8(int8_t *q, float *scales, const float *x, int R, int K) {
    // x is (R,K), q is (R,K), scales is (R); each row on its own
#pragma omp parallel for schedule(static) if ((size_t)R * K > 65536)
    for (int r = 0; r < R; r++) {
        const float *row = x + (size_t)r * K;
        scales[r] = max_abs(row, (size_t)K) / 127.0f;
        quantize_with_scale(q + (size_t)r * K, row, (size_t)K, scales[r]);
    }
}
// [quantize_rows_s8]

float quantize_tensor_s8(int8_t *q, const float *x, size_t n) {
    const float scale = max_abs(x, n) / 127.0f;
    quantize_with_scale(q, x, n, scale);
    return scale;
}

void dequantize_rows_s8(float *x, const int8_t *q, const float *scales, int R, int K) {
    // q is (R,K), scales is (R), x is (R,K)
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) x[(size_t)r * K + k] = (float)q[(size_t)r * K + k] * scales[r];
}
