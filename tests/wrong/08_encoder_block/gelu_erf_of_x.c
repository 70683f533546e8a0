// hint: erf takes x/sqrt(2), not x
/**
 * @file gelu.c
 * @brief A wrong gelu.c for exercise 08 (tests/wrong/): erf(x) instead of erf(x/√2).
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = 0.5f * x[i] * (1.0f + erff(x[i]));
}
