// hint: accumulated in int16
/**
 * @file gemm_int8_portable.c
 * @brief A wrong gemm_int8_portable.c for exercise 15 (tests/wrong/): the products summed in an int16, which wraps around past 32,767.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "gemm/gemm_lowp.h"

#include <stddef.h>

void gemm_s8_bt_portable(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int16_t sum = 0; // WRONG: a product fits in 16 bits, the sum does not
            for (int k = 0; k < K; k++)
                sum = (int16_t)(sum + a[(size_t)m * K + k] * b[(size_t)n * K + k]);
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
            out[(size_t)m * N + n] = sum - 128 * b_sums[n]; // the shift taken back out
        }
}
