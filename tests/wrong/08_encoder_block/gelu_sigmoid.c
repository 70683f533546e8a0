// hint: sigmoid approximation
/**
 * @file gelu.c
 * @brief A wrong gelu.c for exercise 08 (tests/wrong/): x·σ(1.702x).
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i] / (1.0f + expf(-1.702f * x[i]));
}
