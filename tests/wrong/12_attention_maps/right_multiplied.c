// hint: the new layer is multiplied on the right
/**
 * @file rollout_layer.c
 * @brief A wrong rollout_layer.c for exercise 12 (tests/wrong/): J' = J · A instead of A · J.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    double *a = scratch, *product = scratch + (size_t)N * N;
    for (int i = 0; i < N; i++) {
        double *row = a + (size_t)i * N, sum = 0.0;
        for (int j = 0; j < N; j++) row[j] = (double)fused[(size_t)i * N + j] + (i == j), sum += row[j];
        for (int j = 0; j < N; j++) row[j] /= sum;
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0; // WRONG: J · A
            for (int m = 0; m < N; m++) s += joint[(size_t)i * N + m] * a[(size_t)m * N + j];
            product[(size_t)i * N + j] = s;
        }
    memcpy(joint, product, (size_t)N * N * sizeof *joint);
}
