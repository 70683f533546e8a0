/**
 * @file gemm_int8_portable.c
 * @brief The int8 product in plain C: out (M,N) = a (M,K) · b (N,K)ᵀ summed in
 *        int32, b's row sums, and vpdpbusd's unsigned × signed arithmetic with
 *        its correction, written out.
 *
 * Shapes: a (M,K) int8 activations, b (N,K) int8 weights (a Linear weight's
 * [out, in] layout), sums (N), out (M,N) int32, every row K-contiguous.
 *
 * Why int32: each product is at most 128 · 128 = 2¹⁴ in size, so a sum of
 * fewer than 2¹⁷ terms fits (gemm_lowp.h); int16 would overflow on the third
 * product of 127 · 127. Integer sums are exact, so any order gives the same bits.
 *
 * gemm_s8_bt_shifted() is what the VNNI path (gemm_int8.c) computes, without
 * the intrinsics: vpdpbusd multiplies an unsigned byte by a signed one, so a
 * goes in as a + 128 (0..255) and the shift comes back out with b's row sum,
 *   Σ_k (a + 128)·b = Σ_k a·b + 128 · Σ_k b.
 * Its sums stay within int32 for K up to 65,793 (255 · 128 · K < 2³¹).
 *
 * Exercise 15 hands these functions out (exercises/15_smaller_numbers/).
 */
#include "gemm/gemm_lowp.h"

#include <stddef.h>

// Σ_k a[k]·b[k] in int32: each product fits in 16 bits, the compiler widens
// and vectorises the loop (pmaddwd on SSE2).
static int32_t dot_s8(const int8_t *a, const int8_t *b, int K) {
    int32_t sum = 0;
    for (int k = 0; k < K; k++) sum += (int32_t)a[k] * (int32_t)b[k];
    return sum;
}

// [gemm_s8_bt_portable]
void gemm_s8_bt_portable(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++)
            out[(size_t)m * N + n] = dot_s8(a + (size_t)m * K, b + (size_t)n * K, K);
}
// [gemm_s8_bt_portable]

void gemm_s8_row_sums(int32_t *sums, const int8_t *b, int N, int K) {
    // b is (N,K), sums is (N)
    for (int n = 0; n < N; n++) {
        int32_t s = 0;
        for (int k = 0; k < K; k++) s += b[(size_t)n * K + k];
        sums[n] = s;
    }
}

// [gemm_s8_bt_shifted]
void gemm_s8_bt_shifted(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                        int M, int K, int N) {
    // a is (M,K), b is (N,K), b_sums is (N), out is (M,N)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const int8_t *x = a + (size_t)m * K, *w = b + (size_t)n * K;
            int32_t sum = 0;
            for (int k = 0; k < K; k++) {
                const uint8_t shifted = (uint8_t)(x[k] + 128); // 0..255, as vpdpbusd reads it
                sum += (int32_t)shifted * w[k];
            }
            out[(size_t)m * N + n] = sum - 128 * b_sums[n]; // the shift taken back out
        }
}
// [gemm_s8_bt_shifted]
