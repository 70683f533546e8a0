/**
 * @file softmax.c
 * @brief Exercise 03's model answer: softmax(), written from the skeleton.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols); each row on its own
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols; // one query's scores over all the keys
        float *o = out + (size_t)r * cols;

        // the row's maximum, and whether it holds a NaN (which the maximum never sees)
        float m = -INFINITY;
        bool nan = false;
        for (int j = 0; j < cols; j++) {
            if (isnan(xr[j])) nan = true;
            else if (xr[j] > m) m = xr[j];
        }
        if (nan || m == INFINITY) { // NaN or +inf anywhere: the whole row is NaN (as PyTorch)
            for (int j = 0; j < cols; j++) o[j] = NAN;
            continue;
        }
        if (m == -INFINITY) { // every key hidden: nothing to look at, all zeros
            for (int j = 0; j < cols; j++) o[j] = 0.0f;
            continue;
        }

        // e^(x - m): every exponent <= 0, the largest term is 1, so the sum is >= 1
        double sum = 0.0;
        for (int j = 0; j < cols; j++) {
            o[j] = expf(xr[j] - m); // x[r][j] is read before out[r][j] is written (in place)
            sum += o[j];
        }
        for (int j = 0; j < cols; j++) o[j] = (float)(o[j] / sum);
    }
}
