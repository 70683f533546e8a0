// hint: compute the variance in two passes
/**
 * @file layernorm.c
 * @brief A wrong layernorm.c for exercise 08 (tests/wrong/): the variance as
 *        E[x²] − μ², summed in float in one pass.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void layernorm(float *out, const float *x, const float *gamma, const float *beta, int rows,
               int dim, float eps) {
    // x is (rows, dim), gamma and beta are (dim), out is (rows, dim)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *yr = out + (size_t)r * dim;
        float sum = 0.0f, sumsq = 0.0f;
        for (int j = 0; j < dim; j++) sum += xr[j], sumsq += xr[j] * xr[j];
        float mu = sum / dim;
        float var = sumsq / dim - mu * mu;
        float rstd = 1.0f / sqrtf(fmaxf(var, 0.0f) + eps);
        for (int j = 0; j < dim; j++) {
            float g = gamma ? gamma[j] : 1.0f;
            float b = beta ? beta[j] : 0.0f;
            yr[j] = (xr[j] - mu) * rstd * g + b;
        }
    }
}
