// hint: the unbiased variance, / (D - 1)
/**
 * @file layernorm_backward.c
 * @brief A wrong layernorm_backward.c for exercise 10 (tests/wrong/): μ and r from the unbiased variance, ÷ (dim − 1).
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>

void layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dout, const float *x,
                        const float *gamma, int rows, int dim, float eps) {
    // x, dout and dx are (rows, dim); gamma, dgamma and dbeta are (dim)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim, *gr = dout + (size_t)r * dim;
        double mu = 0.0, var = 0.0;
        for (int j = 0; j < dim; j++) mu += xr[j];
        mu /= dim;
        for (int j = 0; j < dim; j++) var += (xr[j] - mu) * (xr[j] - mu);
        var /= dim - 1; // WRONG: nn.LayerNorm divides by dim
        const double rstd = 1.0 / sqrt(var + (double)eps);
        double mean_g = 0.0, mean_gx = 0.0; // mean(ĝ) and mean(ĝ ⊙ x̂)
        for (int j = 0; j < dim; j++) {
            const double ghat = (double)gr[j] * (gamma ? gamma[j] : 1.0f);
            mean_g += ghat / dim;
            mean_gx += ghat * (xr[j] - mu) * rstd / dim;
        }
        for (int j = 0; j < dim; j++) {
            const double ghat = (double)gr[j] * (gamma ? gamma[j] : 1.0f);
            const double xhat = (xr[j] - mu) * rstd;
            if (dx) dx[(size_t)r * dim + j] += (float)(rstd * (ghat - mean_g - xhat * mean_gx));
            if (dgamma) dgamma[j] += (float)(gr[j] * xhat);
            if (dbeta) dbeta[j] += gr[j];
        }
    }
}
