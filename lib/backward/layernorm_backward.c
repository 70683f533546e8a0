/**
 * @file layernorm_backward.c
 * @brief The backward pass of LayerNorm (ops.h), alone in its file so a student's version can replace it.
 *
 * Shape legend: rows independent rows of dim features (the tokens and D).
 *
 * The forward, for one row x of D = dim numbers:
 *   μ = (1/D)·Σ_j x_j,   σ² = (1/D)·Σ_j (x_j − μ)²,   r = 1/√(σ² + ε)
 *   x̂_j = (x_j − μ)·r,   y_j = γ_j·x̂_j + β_j
 * The mean and r are not kept: they are recomputed from x, as the forward
 * computed them (two passes, in double), which costs one more read of the row.
 *
 * The derivation, step by step (dout = dL/dy for one row; sums over j run over the row):
 *  1. β and γ: y_j = γ_j·x̂_j + β_j, so dβ_j = dout_j and dγ_j = dout_j·x̂_j, summed
 *     over every row, since all rows share γ and β.
 *  2. Back through the scale: dL/dx̂_j = dout_j·γ_j =: ĝ_j.
 *  3. How x̂_j moves with x_i. x̂_j = (x_j − μ)·r depends on x_i three ways:
 *     directly (δ_ij), through μ (∂μ/∂x_i = 1/D) and through r. For r:
 *     ∂σ²/∂x_i = (2/D)·(x_i − μ) (the term through μ is (2/D)·Σ_j (x_j − μ)·(−1/D) = 0),
 *     so ∂r/∂x_i = −½·(σ² + ε)^(−3/2)·(2/D)·(x_i − μ) = −r²·x̂_i / D. Together:
 *       ∂x̂_j/∂x_i = r·(δ_ij − 1/D) + (x_j − μ)·(−r²·x̂_i/D)
 *                 = (r/D)·(D·δ_ij − 1 − x̂_j·x̂_i).
 *  4. The chain rule sums over j:
 *       dx_i = Σ_j ĝ_j·∂x̂_j/∂x_i = (r/D)·(D·ĝ_i − Σ_j ĝ_j − x̂_i·Σ_j ĝ_j·x̂_j)
 *            = r·(ĝ_i − mean(ĝ) − x̂_i·mean(ĝ ⊙ x̂)).
 *     Read it as: of the gradient ĝ, LayerNorm passes on only the part that
 *     is neither a constant shift of the row (mean(ĝ), which μ removes) nor a
 *     multiple of x̂ (which the division by σ removes), scaled by r.
 *     Two sums per row, so O(D), never the D×D Jacobian.
 *
 * Every gradient is added to what its buffer holds; any of them may be NULL.
 */
#include "ops/ops.h"
#include "ops/vecmath.h"

#include <stddef.h>

// The mean and 1/√(σ² + ε) of one row, exactly as layernorm() computes them.
// [row_stats]
static void row_stats(const float *xr, int dim, float eps, float *mean, float *rstd) {
    double mu = 0.0;
    VIT_SIMD_SUM(mu)
    for (int j = 0; j < dim; j++) mu += xr[j];
    mu /= dim;
    double var = 0.0;
    VIT_SIMD_SUM(var)
    for (int j = 0; j < dim; j++) var += (xr[j] - mu) * (xr[j] - mu);
    var /= dim;
    *mean = (float)mu;
    *rstd = (float)(1.0 / sqrt(var + (double)eps));
}
// [row_stats]

// [layernorm_backward]
void layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dout, const float *x,
                        const float *gamma, int rows, int dim, float eps) {
    // x, dout and dx are (rows, dim); gamma, dgamma and dbeta are (dim)
    if (dx) { // the rows are independent: one thread per block of rows
#pragma omp parallel for schedule(static) if (rows > 16)
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * dim, *gr = dout + (size_t)r * dim;
            float mu, rstd;
            row_stats(xr, dim, eps, &mu, &rstd);
            double mean_g = 0.0, mean_gx = 0.0; // mean(ĝ) and mean(ĝ ⊙ x̂)
            VIT_SIMD_SUM(mean_g, mean_gx)
            for (int j = 0; j < dim; j++) {
                const float ghat = gr[j] * (gamma ? gamma[j] : 1.0f);
                mean_g += ghat;
                mean_gx += (double)ghat * ((xr[j] - mu) * rstd);
            }
            mean_g /= dim;
            mean_gx /= dim;
            float *dr = dx + (size_t)r * dim;
            for (int j = 0; j < dim; j++) {
                const float ghat = gr[j] * (gamma ? gamma[j] : 1.0f);
                const float xhat = (xr[j] - mu) * rstd;
                dr[j] += rstd * (ghat - (float)mean_g - xhat * (float)mean_gx);
            }
        }
    }
    if (!dgamma && !dbeta) return;
    // γ and β are shared by every row: sum over the rows, in order (the same
    // bits on any number of threads), one row at a time
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim, *gr = dout + (size_t)r * dim;
        float mu, rstd;
        row_stats(xr, dim, eps, &mu, &rstd);
        for (int j = 0; j < dim; j++) {
            if (dgamma) dgamma[j] += gr[j] * ((xr[j] - mu) * rstd);
            if (dbeta) dbeta[j] += gr[j];
        }
    }
}
// [layernorm_backward]
