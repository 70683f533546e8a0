// hint: vit_block_forward() is not defined in your files: did you rename it?
// submitted: alone
// build: fails
/**
 * @file gelu.c
 * @brief A right gelu.c for exercise 08 (tests/wrong/), handed in alone: the
 *        exercise's layernorm.c and block.c are missing.
 *
 * It once scored 17/17: the runner took the two missing files from lib.
 */
#include "ops/ops.h"

#include <math.h>

void gelu(float *out, const float *x, size_t n) {
    // the exact (erf) form, as nn.GELU() with approximate='none'
    for (size_t i = 0; i < n; i++) out[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}
