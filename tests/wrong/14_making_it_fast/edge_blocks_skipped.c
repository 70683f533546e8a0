// hint: the blocks cut short by the edge are skipped
// also: blocks cut short by the edge skipped
/**
 * @file gemm_blocked.c
 * @brief A wrong gemm_blocked.c for exercise 14 (tests/wrong/): only whole blocks are computed: the loops stop before a block that the edge cuts short.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "gemm/gemm_steps.h"

#include <string.h>

void matmul_blocked(float *out, const float *a, const float *b, int M, int K, int N) {
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC };
    memset(out, 0, (size_t)M * N * sizeof *out);
    for (int jc = 0; jc + NC <= N; jc += NC) // WRONG: the last, shorter block is skipped
        for (int pc = 0; pc + KC <= K; pc += KC)
            for (int ic = 0; ic + MC <= M; ic += MC)
                for (int i = ic; i < ic + MC; i++)
                    for (int k = pc; k < pc + KC; k++) {
                        const float a_ik = a[(size_t)i * K + k];
                        for (int j = 0; j < NC; j++)
                            out[(size_t)i * N + jc + j] += a_ik * b[(size_t)k * N + jc + j];
                    }
}
