/**
 * @file softmax_backward.c
 * @brief The backward pass of the row-wise softmax (ops.h), alone in its file so a student's version can replace it.
 *
 * Shape legend: rows independent rows of cols values each.
 *
 * One row, p = softmax(x). The Jacobian is ∂p_j/∂x_i = p_j·(δ_ij − p_i): raising
 * x_i raises p_i and takes from every other p_j in proportion to p_j. So
 *   dx_i = Σ_j dout_j·∂p_j/∂x_i = p_i·dout_i − p_i·Σ_j p_j·dout_j
 *        = p_i·(dout_i − Σ_j p_j·dout_j).
 * The cols×cols Jacobian is never built: one dot product per row, then one
 * pass, O(cols) instead of O(cols²). The dot product Σ_j p_j·dout_j is the
 * average of dout under p; a gradient that is the same for every entry
 * (dout_j = c) gives dx = 0, as it must: softmax ignores a constant added to x.
 *
 * Only p is needed, not x: the forward's output is kept for the backward.
 * A masked entry (p_j = 0) gets exactly 0, and a fully masked row (all p = 0,
 * lib's softmax convention) gets a row of zeros.
 */
#include "ops/ops.h"
#include "ops/vecmath.h"

#include <stddef.h>

// [softmax_backward]
void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols) {
    // p, dout and dx are (rows, cols): dx += p ⊙ (dout − Σ_j p_j·dout_j), row by row
    for (int r = 0; r < rows; r++) {
        const float *pr = p + (size_t)r * cols, *gr = dout + (size_t)r * cols;
        float *dr = dx + (size_t)r * cols;
        double avg = 0.0; // Σ_j p_j·dout_j: the mean of dout under p
        VIT_SIMD_SUM(avg)
        for (int j = 0; j < cols; j++) avg += (double)pr[j] * gr[j];
        for (int j = 0; j < cols; j++) dr[j] += pr[j] * (gr[j] - (float)avg);
    }
}
// [softmax_backward]
