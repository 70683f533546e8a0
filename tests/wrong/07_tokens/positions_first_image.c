// hint: only image 0 got the positions
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): the table added to the first image only.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D) {
    // tokens and embed are (B, N, D), pos is (N, D)
    memcpy(embed, tokens, (size_t)B * N * D * sizeof(float));
    ops_add(embed, tokens, pos, (size_t)N * D);
}
