// hint: the factor 1/2 is missing
/**
 * @file gelu.c
 * @brief A wrong gelu.c for exercise 08 (tests/wrong/): x·(1 + erf(x/√2)).
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i] * (1.0f + erff(x[i] * 0.70710678f));
}
