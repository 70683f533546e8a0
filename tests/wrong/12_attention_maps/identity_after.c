// hint: the identity is added after normalising
/**
 * @file rollout_layer.c
 * @brief A wrong rollout_layer.c for exercise 12 (tests/wrong/): F normalised first, the identity added after, so each row sums to 2.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    double *a = scratch, *product = scratch + (size_t)N * N;
    for (int i = 0; i < N; i++) {
        double *row = a + (size_t)i * N, sum = 0.0;
        for (int j = 0; j < N; j++) row[j] = fused[(size_t)i * N + j], sum += row[j];
        for (int j = 0; j < N; j++) row[j] = row[j] / sum + (i == j); // WRONG: + I after
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int m = 0; m < N; m++) s += a[(size_t)i * N + m] * joint[(size_t)m * N + j];
            product[(size_t)i * N + j] = s;
        }
    memcpy(joint, product, (size_t)N * N * sizeof *joint);
}
