/**
 * @file softmax_backward.c
 * @brief Exercise 10: the backward of the row-wise softmax (lib/ops/ops.h), your version.
 *
 * Shape legend: rows independent rows of cols values each.
 *
 * Fill in the TODO. `make exercise CH=10` grades it with layernorm_backward.c
 * (every attention layer of the whole model's backward calls your
 * softmax_backward()); README.md says what the tests check and what the hints
 * mean. Until the TODO is done the function adds nothing to dx, so the tests
 * fail without crashing.
 */
#include "ops/ops.h"

#include <stddef.h>

void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols) {
    // p, dout and dx are (rows, cols)

    // TODO: for every row r < rows, on its own (row r starts at r·cols; use size_t for
    //       the offset), p = softmax(x) of that row and dp = dout the gradient of p:
    //
    //   avg  = Σ_j p_j·dp_j                     the mean of dp under p, one per row
    //   dx_i += p_i·(dp_i − avg)                for i = 0 … cols − 1
    //
    //   - It is the Jacobian ∂p_j/∂x_i = p_j·(δ_ij − p_i) applied to dp without building
    //     it: p_i·dp_i is the diagonal, −p_i·avg the sum of every off-diagonal term.
    //   - ADD to dx (+=), never overwrite it: a tensor used twice collects both gradients,
    //     and the caller zeroes dx once per step (ops.h).
    //   - Start avg at 0 for every row, and add it up in a double.
    //   - Only p is given, not x. A masked entry (p_i = 0) then gets 0, and a fully
    //     masked row (all p = 0) a row of zeros, with no special case.
    (void)dx, (void)dout, (void)p, (void)rows, (void)cols; // placeholder: delete it
}
