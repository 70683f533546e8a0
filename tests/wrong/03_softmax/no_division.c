// hint: the weights are e^(x - max) but were never divided by their row's sum
// also: each row is normalised on its own
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): the sum is added up but the weights are never divided by it.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = out + (size_t)r * cols;
        float max = -INFINITY;
        bool has_nan = false;
        for (int j = 0; j < cols; j++) {
            if (isnan(xr[j])) has_nan = true;
            else if (xr[j] > max) max = xr[j];
        }
        if (has_nan || max == INFINITY) {
            for (int j = 0; j < cols; j++) yr[j] = NAN;
            continue;
        }
        if (max == -INFINITY) {
            for (int j = 0; j < cols; j++) yr[j] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - max);
            sum += yr[j];
        }
        (void)sum; // WRONG: for (j) yr[j] /= sum
    }
}
