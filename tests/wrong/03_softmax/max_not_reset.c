// hint: each row needs its own maximum
// also: each row is normalised on its own
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): the maximum carried over from row to row.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    float max = -INFINITY; // WRONG: set once for the matrix, not once per row
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = out + (size_t)r * cols;
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
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < cols; j++) yr[j] *= inv;
    }
}
