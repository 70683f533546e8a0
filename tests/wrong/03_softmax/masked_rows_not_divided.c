// hint: the rows with a masked (-inf) score were never divided by their sum
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): a row with a -inf in it is left as e^(x - max), never divided by its sum (meant to spare a fully masked row 0 / 0).
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
        bool has_nan = false, masked = false;
        for (int j = 0; j < cols; j++) {
            if (isnan(xr[j])) has_nan = true;
            else if (xr[j] > max) max = xr[j];
            if (xr[j] == -INFINITY) masked = true;
        }
        if (has_nan || max == INFINITY) {
            for (int j = 0; j < cols; j++) yr[j] = NAN;
            continue;
        }
        double sum = 0.0;
        for (int j = 0; j < cols; j++) {
            yr[j] = xr[j] == -INFINITY ? 0.0f : expf(xr[j] - max); // a masked entry weighs 0
            sum += yr[j];
        }
        if (masked) continue; // WRONG: only a row that is all -inf has a sum of 0
        for (int j = 0; j < cols; j++) yr[j] = (float)(yr[j] / sum);
    }
}
