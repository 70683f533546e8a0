/**
 * @file gemm_blocked.c
 * @brief Exercise 14's model answer: matmul_blocked(), written from the skeleton.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "gemm/gemm_steps.h"

#include <string.h>

void matmul_blocked(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N)
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC }; // 64, 128, 512
    memset(out, 0, (size_t)M * N * sizeof *out); // every block adds its part of the sums

    for (int jc = 0; jc < N; jc += NC) {
        int nc = N - jc < NC ? N - jc : NC; // the last block of columns cut short
        for (int pc = 0; pc < K; pc += KC) {
            int kc = K - pc < KC ? K - pc : KC; // … of k
            for (int ic = 0; ic < M; ic += MC) {
                int mc = M - ic < MC ? M - ic : MC; // … of rows
                // out[ic:+mc, jc:+nc] += a[ic:+mc, pc:+kc] · b[pc:+kc, jc:+nc],
                // matmul_ikj's loops: the kc×nc block of b stays in cache for every row
                for (int i = ic; i < ic + mc; i++) {
                    float *out_row = out + (size_t)i * N + jc;
                    for (int k = pc; k < pc + kc; k++) {
                        const float a_ik = a[(size_t)i * K + k];
                        const float *b_row = b + (size_t)k * N + jc;
                        for (int j = 0; j < nc; j++) out_row[j] += a_ik * b_row[j]; // stride 1
                    }
                }
            }
        }
    }
}
