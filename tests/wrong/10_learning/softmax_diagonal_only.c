// hint: only the diagonal of the Jacobian
/**
 * @file softmax_backward.c
 * @brief A wrong softmax_backward.c for exercise 10 (tests/wrong/): dx += p ⊙ (1 − p) ⊙ dp, the off-diagonal terms −p_i·p_j left out.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <stddef.h>

void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols) {
    // p, dout and dx are (rows, cols)
    for (int r = 0; r < rows; r++) {
        const float *pr = p + (size_t)r * cols, *gr = dout + (size_t)r * cols;
        float *dr = dx + (size_t)r * cols;
        // WRONG: ∂p_j/∂x_j only
        for (int j = 0; j < cols; j++) dr[j] += pr[j] * (1.0f - pr[j]) * gr[j];
    }
}
