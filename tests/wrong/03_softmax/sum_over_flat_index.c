// hint: row 0 is right but each later row sums to less than 1
// also: each row is normalised on its own
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): one flat loop over the matrix, the maximum found afresh at each row's start but the sum never reset.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    const size_t n = (size_t)rows * cols;
    float max = -INFINITY;
    bool broken = false;
    double sum = 0.0; // WRONG: set to 0 at each row's start, with the maximum
    for (size_t i = 0; i < n; i++) {
        if (i % cols == 0) { // a row starts: its maximum, and whether it is broken
            max = -INFINITY;
            broken = false;
            for (int j = 0; j < cols; j++) {
                if (isnan(x[i + j])) broken = true;
                else if (x[i + j] > max) max = x[i + j];
            }
            broken |= max == INFINITY;
        }
        if (broken) out[i] = NAN;
        else if (max == -INFINITY) out[i] = 0.0f;
        else {
            out[i] = expf(x[i] - max);
            sum += out[i];
        }
        if (i % cols == (size_t)cols - 1 && !broken && max != -INFINITY) { // a row ends
            float inv = (float)(1.0 / sum);
            for (size_t k = i + 1 - cols; k <= i; k++) out[k] *= inv;
        }
    }
}
