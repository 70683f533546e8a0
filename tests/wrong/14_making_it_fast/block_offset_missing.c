// hint: every block of columns reads b's first columns
/**
 * @file gemm_blocked.c
 * @brief A wrong gemm_blocked.c for exercise 14 (tests/wrong/): row k of b is read from b + k*N, without the block's column offset jc.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "gemm/gemm_steps.h"

#include <string.h>

void matmul_blocked(float *out, const float *a, const float *b, int M, int K, int N) {
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC };
    memset(out, 0, (size_t)M * N * sizeof *out);
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                for (int i = ic; i < ic + mc; i++)
                    for (int k = pc; k < pc + kc; k++) {
                        const float a_ik = a[(size_t)i * K + k];
                        const float *b_row = b + (size_t)k * N; // WRONG: + jc missing
                        float *out_row = out + (size_t)i * N + jc;
                        for (int j = 0; j < nc; j++) out_row[j] += a_ik * b_row[j];
                    }
            }
        }
    }
}
