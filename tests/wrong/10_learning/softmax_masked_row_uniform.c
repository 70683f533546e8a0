// hint: the fully masked row (p all 0) must get a gradient of 0
/**
 * @file softmax_backward.c
 * @brief A wrong softmax_backward.c for exercise 10 (tests/wrong/): a special case for a fully masked row (p all 0), which takes p as uniform, 1/cols each, instead of leaving it at 0.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <stddef.h>

void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols) {
    // p, dout and dx are (rows, cols)
    for (int r = 0; r < rows; r++) {
        const float *pr = p + (size_t)r * cols, *gr = dout + (size_t)r * cols;
        float *dr = dx + (size_t)r * cols;
        double total = 0.0;
        for (int j = 0; j < cols; j++) total += pr[j];
        if (total == 0.0) { // WRONG: a fully masked row taken as uniform, p_j = 1/cols
            double avg = 0.0;
            for (int j = 0; j < cols; j++) avg += gr[j] / (double)cols;
            for (int j = 0; j < cols; j++) dr[j] += (float)((gr[j] - avg) / cols);
            continue;
        }
        double avg = 0.0;
        for (int j = 0; j < cols; j++) avg += (double)pr[j] * gr[j];
        for (int j = 0; j < cols; j++) dr[j] += pr[j] * (gr[j] - (float)avg);
    }
}
