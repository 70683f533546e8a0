// hint: the whole matrix sums to 1, not each row
// also: each row is normalised on its own
/**
 * @file softmax.c
 * @brief A wrong softmax.c for exercise 03 (tests/wrong/): one maximum and one sum over the whole matrix, not one per row.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

void softmax(float *out, const float *x, int rows, int cols) {
    // x is (rows, cols), out is (rows, cols)
    // The rows that are not ordinary numbers are found row by row, as they should be...
    bool broken[rows], hidden[rows];
    float max = -INFINITY; // WRONG: one maximum and one sum for the matrix, not for each row
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float row_max = -INFINITY;
        broken[r] = false;
        for (int j = 0; j < cols; j++) {
            if (isnan(xr[j])) broken[r] = true;
            else if (xr[j] > row_max) row_max = xr[j];
        }
        broken[r] |= row_max == INFINITY;
        hidden[r] = !broken[r] && row_max == -INFINITY;
        if (!broken[r] && row_max > max) max = row_max;
    }
    double sum = 0.0;
    for (int r = 0; r < rows; r++)
        if (!broken[r] && !hidden[r])
            for (int j = 0; j < cols; j++) sum += expf(x[(size_t)r * cols + j] - max);
    // ...but every ordinary row is divided by the one sum of the matrix
    float inv = (float)(1.0 / sum);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = out + (size_t)r * cols;
        for (int j = 0; j < cols; j++)
            yr[j] = broken[r] ? NAN : hidden[r] ? 0.0f : expf(xr[j] - max) * inv;
    }
}
