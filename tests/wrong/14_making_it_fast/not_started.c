// hint: matmul_blocked wrote only zeros: is the exercise's placeholder still there?
/**
 * @file gemm_blocked.c
 * @brief A wrong gemm_blocked.c for exercise 14 (tests/wrong/): not started, the skeleton as it is: out zeroed, and no block ever added.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "gemm/gemm_steps.h"

#include <string.h>

void matmul_blocked(float *out, const float *a, const float *b, int M, int K, int N) {
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC };
    memset(out, 0, (size_t)M * N * sizeof *out);
    (void)a, (void)b, (void)K, (void)MC, (void)KC, (void)NC; // WRONG: the TODO not done
}
