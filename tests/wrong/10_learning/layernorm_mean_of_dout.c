// hint: the mean term is the mean of dout, not of g_hat
/**
 * @file layernorm_backward.c
 * @brief A wrong layernorm_backward.c for exercise 10 (tests/wrong/): dx = r·(ĝ − mean(dout) − x̂·mean(ĝ ⊙ x̂)), γ left out of the mean term only.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>

void layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dout, const float *x,
                        const float *gamma, int rows, int dim, float eps) {
    // x, dout and dx are (rows, dim); gamma, dgamma and dbeta are (dim)
    for (int row = 0; row < rows; row++) {
        size_t off = (size_t)row * dim;
        const float *xr = x + off, *dy = dout + off;

        // the row's statistics, as the forward computed them: μ, the biased σ², r
        double mu = 0.0;
        for (int j = 0; j < dim; j++) mu += xr[j];
        mu /= dim;
        double var = 0.0;
        for (int j = 0; j < dim; j++) var += (xr[j] - mu) * (xr[j] - mu);
        var /= dim;
        double r = 1.0 / sqrt(var + eps);

        // dgamma and dbeta take dy itself (no γ), each row adding its share
        for (int j = 0; j < dim; j++) {
            double xhat = (xr[j] - mu) * r;
            if (dgamma) dgamma[j] += (float)(dy[j] * xhat);
            if (dbeta) dbeta[j] += dy[j];
        }
        if (!dx) continue;  // dx NULL: the parameter gradients are still done

        // ĝ = dy ⊙ γ (γ NULL = ones); the two means over the row: mean(ĝ) is the path
        // through μ, mean(ĝ ⊙ x̂) the path through σ²
        double mean_g = 0.0, mean_gx = 0.0;
        for (int j = 0; j < dim; j++) {
            double g = (double)dy[j] * (gamma ? gamma[j] : 1.0f);
            mean_g += dy[j]; // WRONG: the mean of dy, not of ĝ = dy ⊙ γ
            mean_gx += g * (xr[j] - mu) * r;
        }
        mean_g /= dim;
        mean_gx /= dim;

        // dx_j += r·(ĝ_j − mean(ĝ) − x̂_j·mean(ĝ ⊙ x̂))
        float *dxr = dx + off;
        for (int j = 0; j < dim; j++) {
            double g = (double)dy[j] * (gamma ? gamma[j] : 1.0f);
            double xhat = (xr[j] - mu) * r;
            dxr[j] += (float)(r * (g - mean_g - xhat * mean_gx));
        }
    }
}
