// hint: softmax() wrote only zeros
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): the skeleton as handed out, its placeholder still there.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    // WRONG: the TODO never done
    memset(out, 0, sizeof(float) * (size_t)rows * cols); // placeholder: delete it
    (void)x;
}
