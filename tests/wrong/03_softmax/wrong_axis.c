// hint: softmax over the wrong axis
// also: each row is normalised on its own
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): each column normalised instead of each row.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    for (int c = 0; c < cols; c++) { // WRONG: for each row r, over its cols entries
        float max = -INFINITY;
        bool has_nan = false;
        for (int r = 0; r < rows; r++) {
            float v = x[(size_t)r * cols + c];
            if (isnan(v)) has_nan = true;
            else if (v > max) max = v;
        }
        if (has_nan || max == INFINITY || max == -INFINITY) {
            for (int r = 0; r < rows; r++) out[(size_t)r * cols + c] = has_nan || max == INFINITY ? NAN : 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int r = 0; r < rows; r++) {
            size_t at = (size_t)r * cols + c;
            out[at] = expf(x[at] - max);
            sum += out[at];
        }
        float inv = (float)(1.0 / sum);
        for (int r = 0; r < rows; r++) out[(size_t)r * cols + c] *= inv;
    }
}
