// hint: gelu wrote only zeros
/**
 * @file gelu.c
 * @brief A wrong gelu.c for exercise 08 (tests/wrong/): layernorm.c and block.c done, gelu() still the skeleton's placeholder.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <string.h>

void gelu(float *out, const float *x, size_t n) {
    // x and out are n values; out may equal x
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(out, 0, sizeof(float) * n); // placeholder: delete it
    (void)x;
}
