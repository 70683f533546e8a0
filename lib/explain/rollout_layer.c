/**
 * @file rollout_layer.c
 * @brief One layer of attention rollout (rollout.h), alone in its file so a
 *        student's version can replace it (Chapter 12's exercise).
 *
 * Shape legend: N tokens.
 *
 * A layer's output for token i is its input plus what attention brought it:
 * x_i + Σ_j F_ij·v_j. Rollout counts the residual as attention to itself,
 * F + I, and normalises each row so that it can be read as the fraction of
 * token i's new state that came from each token (the heuristic's assumption): A_ij = (F_ij + δ_ij) / Σ_k (F_ik + δ_ik).
 * Through the layers the fractions compose as a product: if the layer reads
 * token m's state, which was J_mj from token j, then
 *   J'_ij = Σ_m A_im · J_mj,   J' = A · J,
 * the new layer on the left. Each row of A sums to 1, so each row of J does.
 */
#include "explain/rollout.h"

#include <string.h>

// [rollout_layer]
void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    // joint and fused are (N, N); scratch is (2, N, N): A = rownorm(fused + I), then A · joint
    double *a = scratch, *product = scratch + (size_t)N * N;
    for (int i = 0; i < N; i++) {
        double *row = a + (size_t)i * N, sum = 0.0;
        for (int j = 0; j < N; j++) {
            row[j] = (double)fused[(size_t)i * N + j] + (i == j); // the residual: x + attn(x)
            sum += row[j];
        }
        for (int j = 0; j < N; j++) row[j] /= sum; // sum ≥ 1: the identity's 1, entries ≥ 0
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int m = 0; m < N; m++) s += a[(size_t)i * N + m] * joint[(size_t)m * N + j];
            product[(size_t)i * N + j] = s;
        }
    memcpy(joint, product, (size_t)N * N * sizeof *joint);
}
// [rollout_layer]
