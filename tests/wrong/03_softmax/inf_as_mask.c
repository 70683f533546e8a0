// hint: a row containing +inf must be all NaN
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): every infinite score skipped as if masked, +inf too.
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
            else if (isfinite(xr[j]) && xr[j] > max) max = xr[j]; // WRONG: +inf is no mask
        }
        if (has_nan) {
            for (int j = 0; j < cols; j++) yr[j] = NAN;
            continue;
        }
        if (max == -INFINITY) { // no finite score: taken for a fully masked row
            for (int j = 0; j < cols; j++) yr[j] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int j = 0; j < cols; j++) {
            yr[j] = isinf(xr[j]) ? 0.0f : expf(xr[j] - max); // WRONG: +inf weighs 0, like -inf
            sum += yr[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < cols; j++) yr[j] *= inv;
    }
}
