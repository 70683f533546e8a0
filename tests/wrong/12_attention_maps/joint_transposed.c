// hint: J is read transposed in the product
/**
 * @file rollout_layer.c
 * @brief A wrong rollout_layer.c for exercise 12 (tests/wrong/): the product reads J transposed, A · Jᵀ.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    // joint and fused are (N, N), row-major; scratch is (2, N, N): A, then the product
    size_t NN = (size_t)N * N;
    double *A = scratch, *prod = scratch + NN;

    for (int i = 0; i < N; i++) {
        double *a = A + (size_t)i * N;
        // 1. A = F + I: the residual x + Attention(x), every token also keeps itself
        double sum = 0.0;
        for (int j = 0; j < N; j++) {
            a[j] = fused[(size_t)i * N + j] + (i == j ? 1.0 : 0.0);
            sum += a[j];
        }
        // 2. row i divided by its own sum: the fractions token i's new state takes
        //    from each token (the +1 keeps the sum ≥ 1, never 0)
        for (int j = 0; j < N; j++) a[j] /= sum;
    }

    // 3. J' = A · J: the new layer on the LEFT, it reads what the earlier layers made
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < N; k++) s += A[(size_t)i * N + k] * joint[(size_t)j * N + k]; // WRONG: Jᵀ
            prod[(size_t)i * N + j] = s;
        }
    // joint was read until the last entry: only now overwrite it
    memcpy(joint, prod, NN * sizeof *joint);
}
