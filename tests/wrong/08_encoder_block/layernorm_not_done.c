// hint: layernorm wrote only zeros
/**
 * @file layernorm.c
 * @brief A wrong layernorm.c for exercise 08 (tests/wrong/): gelu.c and block.c done, layernorm() still the skeleton's placeholder.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void layernorm(float *out, const float *x, const float *gamma, const float *beta, int rows,
               int dim, float eps) {
    // x is (rows, dim), gamma and beta are (dim), out is (rows, dim); out may equal x
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(out, 0, sizeof(float) * (size_t)rows * dim); // placeholder: delete it
    (void)x, (void)gamma, (void)beta, (void)eps;
}
