// hint: a fully masked row (every score -inf) came out NaN
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): stable, but an all -inf row is left to 0/0.
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
        // WRONG: no `if (max == -INFINITY)` zeros; -inf - (-inf) is NaN below
        double sum = 0.0;
        for (int j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - max);
            sum += yr[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < cols; j++) yr[j] *= inv;
    }
}
