/**
 * @file gemm_int8_portable.c
 * @brief Exercise 15: the int8 product with a 32-bit accumulator,
 *        gemm_s8_bt_portable(), b's row sums, gemm_s8_row_sums(), and
 *        vpdpbusd's arithmetic with its correction, gemm_s8_bt_shifted()
 *        (lib/gemm/gemm_lowp.h), your version.
 *
 * Shapes: a (M,K) int8, b (N,K) int8 (a Linear weight's [out, in] layout),
 * sums (N), out (M,N) int32; out = a · bᵀ.
 *
 * Fill in the TODOs. `make exercise CH=15` grades them with quantize_rows.c.
 * Until the TODOs are done the functions write zeros, so the tests fail
 * without crashing.
 */
#include "gemm/gemm_lowp.h"

#include <stddef.h>
#include <string.h>

void gemm_s8_bt_portable(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    memset(out, 0, sizeof(int32_t) * (size_t)M * N);
    // TODO: out[m][n] = Σ_k a[m][k] · b[n][k], each product and the sum in int32
    // (a product of two int8 fits in 16 bits, a sum of 3072 of them does not).
    (void)a, (void)b, (void)K;
}

void gemm_s8_row_sums(int32_t *sums, const int8_t *b, int N, int K) {
    // b is (N,K), sums is (N)
    memset(sums, 0, sizeof(int32_t) * (size_t)N);
    // TODO: sums[n] = Σ_k b[n][k]
    (void)b, (void)K;
}

void gemm_s8_bt_shifted(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                        int M, int K, int N) {
    // a is (M,K), b is (N,K), b_sums is (N), out is (M,N)
    memset(out, 0, sizeof(int32_t) * (size_t)M * N);
    // TODO: what vpdpbusd computes: each a[m][k] goes in as the unsigned byte
    // a[m][k] + 128 (0..255), so
    //   out[m][n] = Σ_k (a[m][k] + 128) · b[n][k]  −  128 · b_sums[n]
    // where the second term takes the shift back out (Σ (a+128)·b = Σ a·b + 128·Σ b).
    (void)a, (void)b, (void)b_sums, (void)K;
}
