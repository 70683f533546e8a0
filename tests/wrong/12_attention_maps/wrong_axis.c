// hint: divided by the sum of the row with the column's index
/**
 * @file rollout_layer.c
 * @brief A wrong rollout_layer.c for exercise 12 (tests/wrong/): entry (i, j) divided by row j's sum, as a / a.sum(dim=-1) without keepdim does.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    double *a = scratch, *product = scratch + (size_t)N * N;
    double sums[1024] = {0};
    for (int i = 0; i < N && i < 1024; i++)
        for (int j = 0; j < N; j++) sums[i] += fused[(size_t)i * N + j] + (i == j);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) // WRONG: sums[j], not sums[i]
            a[(size_t)i * N + j] = (fused[(size_t)i * N + j] + (i == j)) / sums[j < 1024 ? j : 0];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int m = 0; m < N; m++) s += a[(size_t)i * N + m] * joint[(size_t)m * N + j];
            product[(size_t)i * N + j] = s;
        }
    memcpy(joint, product, (size_t)N * N * sizeof *joint);
}
