// hint: a row with a NaN beside -inf entries
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): the NaN is never looked for.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = out + (size_t)r * cols;
        float max = -INFINITY;
        for (int j = 0; j < cols; j++)
            if (xr[j] > max) max = xr[j]; // WRONG: NaN > max is false, the NaN goes unseen
        if (max == INFINITY) {
            for (int j = 0; j < cols; j++) yr[j] = NAN;
            continue;
        }
        if (max == -INFINITY) { // so [NaN, -inf] looks fully masked
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
