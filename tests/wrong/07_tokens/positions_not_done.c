// hint: tokens_add_positions wrote only zeros
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): tokens_prepend_cls() done, tokens_add_positions() still the skeleton's placeholder.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D) {
    // tokens and embed are (B, N, D), pos is (N, D): one table for every image.
    // ops_add() works element by element (each tokens[k] read before embed[k] is written),
    // so embed may be tokens.
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(embed, 0, sizeof(float) * (size_t)B * N * D); // placeholder: delete it
    (void)tokens, (void)pos;
}
