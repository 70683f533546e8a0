// hint: softmax_backward added nothing to dx: is the exercise's placeholder still there?
/**
 * @file softmax_backward.c
 * @brief A wrong softmax_backward.c for exercise 10 (tests/wrong/): not started, the skeleton's placeholder still there, so dx gets nothing.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <stddef.h>

void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols) {
    // p, dout and dx are (rows, cols)
    (void)dx, (void)dout, (void)p, (void)rows, (void)cols; // WRONG: the placeholder, not deleted
}
