// hint: each column is normalised, not each row
/**
 * @file rollout_layer.c
 * @brief A wrong rollout_layer.c for exercise 12 (tests/wrong/): each column of F + I divided by its own sum.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    // joint and fused are (N, N), row-major; scratch is (2, N, N): A, then the product
    size_t NN = (size_t)N * N;
    double *A = scratch, *prod = scratch + NN;

    for (size_t e = 0; e < NN; e++) A[e] = fused[e] + (e % ((size_t)N + 1) == 0 ? 1.0 : 0.0);
    for (int j = 0; j < N; j++) { // WRONG: each column divided by its sum, not each row
        double sum = 0.0;
        for (int i = 0; i < N; i++) sum += A[(size_t)i * N + j];
        for (int i = 0; i < N; i++) A[(size_t)i * N + j] /= sum;
    }

    // 3. J' = A · J: the new layer on the LEFT, it reads what the earlier layers made
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < N; k++) s += A[(size_t)i * N + k] * joint[(size_t)k * N + j];
            prod[(size_t)i * N + j] = s;
        }
    // joint was read until the last entry: only now overwrite it
    memcpy(joint, prod, NN * sizeof *joint);
}
