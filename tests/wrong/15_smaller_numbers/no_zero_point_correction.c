// hint: the zero-point correction is missing
/**
 * @file gemm_int8_portable.c
 * @brief A wrong gemm_int8_portable.c for exercise 15 (tests/wrong/): a + 128 fed in, and the shift never taken back out (no − 128 · Σ b).
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "gemm/gemm_lowp.h"

#include <stddef.h>

void gemm_s8_bt_portable(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t sum = 0; // 32 bits: 3072 products of 127 · 127 need 26
            for (int k = 0; k < K; k++) sum += a[(size_t)m * K + k] * b[(size_t)n * K + k];
            out[(size_t)m * N + n] = sum;
        }
}

void gemm_s8_row_sums(int32_t *sums, const int8_t *b, int N, int K) {
    // b is (N,K), sums is (N)
    for (int n = 0; n < N; n++) {
        int32_t sum = 0;
        for (int k = 0; k < K; k++) sum += b[(size_t)n * K + k];
        sums[n] = sum;
    }
}

void gemm_s8_bt_shifted(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                        int M, int K, int N) {
    // a is (M,K), b is (N,K), b_sums is (N), out is (M,N)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t sum = 0;
            for (int k = 0; k < K; k++)
                sum += (a[(size_t)m * K + k] + 128) * b[(size_t)n * K + k]; // a + 128: 0..255
            out[(size_t)m * N + n] = sum; // WRONG: 128 · b_sums[n] not subtracted
            (void)b_sums;
        }
}
