// hint: gelu must work in place
/**
 * @file gelu.c
 * @brief A wrong gelu.c for exercise 08 (tests/wrong/): half of x written into out before erf reads x, which in place has just changed.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        out[i] = 0.5f * x[i];
        out[i] *= 1.0f + erff(x[i] * 0.70710678f);
    }
}
