// hint: the last block of k, cut short by the edge, is skipped
// also: blocks cut short by the edge skipped
/**
 * @file gemm_blocked.c
 * @brief A wrong gemm_blocked.c for exercise 14 (tests/wrong/): only whole blocks of k are computed: the loop over pc stops before the last block, which the edge cuts short.
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
        for (int pc = 0; pc + KC <= K; pc += KC) { // WRONG: the last, shorter block skipped
            const int kc = KC;
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                for (int i = ic; i < ic + mc; i++)
                    for (int k = pc; k < pc + kc; k++) {
                        const float a_ik = a[(size_t)i * K + k];
                        const float *b_row = b + (size_t)k * N + jc;
                        float *out_row = out + (size_t)i * N + jc;
                        for (int j = 0; j < nc; j++) out_row[j] += a_ik * b_row[j];
                    }
            }
        }
    }
}
