// hint: the average is not reset for each row
/**
 * @file softmax_backward.c
 * @brief A wrong softmax_backward.c for exercise 10 (tests/wrong/): Σ p·dp started once, before the first row, so it runs on over every row.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <stddef.h>

void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols) {
    // p, dout and dx are (rows, cols)
    double avg = 0.0; // WRONG: once, not for each row
    for (int r = 0; r < rows; r++) {
        const float *pr = p + (size_t)r * cols, *gr = dout + (size_t)r * cols;
        float *dr = dx + (size_t)r * cols;
        for (int j = 0; j < cols; j++) avg += (double)pr[j] * gr[j];
        for (int j = 0; j < cols; j++) dr[j] += pr[j] * (gr[j] - (float)avg);
    }
}
