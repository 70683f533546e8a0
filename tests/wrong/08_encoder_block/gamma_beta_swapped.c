// hint: gamma and beta are swapped
/**
 * @file layernorm.c
 * @brief A wrong layernorm.c for exercise 08 (tests/wrong/): the scale and the shift swapped.
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
        double mean = 0.0;
        for (int j = 0; j < dim; j++) mean += xr[j];
        mean /= dim;
        double var = 0.0;
        for (int j = 0; j < dim; j++) var += (xr[j] - mean) * (xr[j] - mean);
        var /= dim;
        float mu = (float)mean;
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        for (int j = 0; j < dim; j++) {
            float g = gamma ? gamma[j] : 1.0f;
            float b = beta ? beta[j] : 0.0f;
            yr[j] = (xr[j] - mu) * rstd * b + g;
        }
    }
}
