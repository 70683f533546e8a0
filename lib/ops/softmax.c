/**
 * @file softmax.c
 * @brief Stable row-wise softmax, alone in its file so a student's version can replace it.
 */
#include "ops/ops.h"
#include "ops/vecmath.h"

#include <stdbool.h>

// [softmax]
// (VIT_VECTOR_CLONES: compiled for AVX2 too, where expf() runs 8 floats at a time)
VIT_VECTOR_CLONES void softmax(float *out, const float *x, int rows, int cols) {
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
        VIT_SIMD_SUM(sum) // several exponentials at once (vecmath.h)
        for (int j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - max); // exponent <= 0: cannot overflow
            sum += yr[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < cols; j++) yr[j] *= inv;
    }
}
// [softmax]
