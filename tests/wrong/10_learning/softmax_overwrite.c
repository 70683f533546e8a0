// hint: softmax_backward must ADD to dx
/**
 * @file softmax_backward.c
 * @brief A wrong softmax_backward.c for exercise 10 (tests/wrong/): right, but dx = instead of dx +=.
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
        double avg = 0.0;
        for (int j = 0; j < cols; j++) avg += (double)pr[j] * gr[j];
        for (int j = 0; j < cols; j++) dr[j] = pr[j] * (gr[j] - (float)avg); // WRONG: = not +=
    }
}
