// hint: softmax() is not defined in your files: did you rename it?
// build: fails
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): right, but called Softmax().
 *
 * It once scored 23/23: the runner took lib's softmax() for the one never written.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

void Softmax(float *out, const float *x, int rows, int cols); // WRONG: the name is softmax
void Softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = out + (size_t)r * cols;
        float max = -INFINITY;
        bool has_nan = false;
        for (int j = 0; j < cols; j++) {
            if (isnan(xr[j])) has_nan = true; // NaN > max is false: it must be looked for
            else if (xr[j] > max) max = xr[j];
        }
        // A NaN or +inf makes the row meaningless (+inf - +inf is NaN): all NaN, as in
        // PyTorch, so the error shows instead of passing for probabilities.
        if (has_nan || max == INFINITY) {
            for (int j = 0; j < cols; j++) yr[j] = NAN;
            continue;
        }
        if (max == -INFINITY) { // every entry masked: no probability mass anywhere
            for (int j = 0; j < cols; j++) yr[j] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - max); // exponent <= 0: cannot overflow
            sum += yr[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < cols; j++) yr[j] *= inv;
    }
}
