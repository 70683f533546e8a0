// hint: exact erf GELU, not the tanh approximation
/**
 * @file gelu.c
 * @brief A wrong gelu.c for exercise 08 (tests/wrong/): the tanh approximation.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    const float c = 0.7978845608f; // sqrt(2/pi)
    for (size_t i = 0; i < n; i++)
        out[i] = 0.5f * x[i] * (1.0f + tanhf(c * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}
