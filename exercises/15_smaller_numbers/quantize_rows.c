/**
 * @file quantize_rows.c
 * @brief Exercise 15: symmetric int8 quantization of rows, quantize_rows_s8(),
 *        quantize_tensor_s8() and dequantize_rows_s8() (lib/gemm/gemm_lowp.h), your version.
 *
 * Shapes: x (R,K) float rows, q (R,K) int8, scales (R).
 *
 * Fill in the TODOs. `make exercise CH=15` grades them with
 * gemm_int8_portable.c: Chapter 15 (which quantizes the shipped model's
 * weights and activations with your functions), the comparison with PyTorch
 * and the probes all call them. README.md says what the tests check and what
 * the hints mean. Until the TODOs are done the functions write zeros, so the
 * tests fail without crashing.
 */
#include "gemm/gemm_lowp.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void quantize_rows_s8(int8_t *q, float *scales, const float *x, int R, int K) {
    // x is (R,K), q is (R,K), scales is (R); each row on its own
    memset(q, 0, (size_t)R * K);
    for (int r = 0; r < R; r++) scales[r] = 0;
    // TODO: for each row r of x:
    //   scales[r] = max over k of |x[r][k]| / 127      (the largest value maps to ±127)
    //   q[r][k]   = x[r][k] / scales[r], rounded to the nearest integer, ties to even
    //               (nearbyintf()), clamped to -127..127
    // A row of zeros has scale 0: then every q is 0 (no division by zero).
    (void)x;
}

float quantize_tensor_s8(int8_t *q, const float *x, size_t n) {
    // x is (n), q is (n): the same rule with one scale for all n values
    memset(q, 0, n);
    // TODO: scale = max |x| / 127 over all n values, q as above; return the scale.
    (void)x;
    return 0;
}

void dequantize_rows_s8(float *x, const int8_t *q, const float *scales, int R, int K) {
    // q is (R,K), scales is (R), x is (R,K)
    memset(x, 0, sizeof(float) * (size_t)R * K);
    // TODO: x[r][k] = q[r][k] * scales[r]
    (void)q, (void)scales;
}
