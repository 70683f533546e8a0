// hint: (image 1 was never written)
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): the table's N·D sums only: image 0 gets them, the other images are never written.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"
#include "ops/ops.h"

#include <stddef.h>

void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D) {
    // tokens and embed are (B, N, D), pos is (N, D): one table for every image.
    // ops_add() works element by element (each tokens[k] read before embed[k] is written),
    // so embed may be tokens.
    // WRONG: N·D sums, as many as the table has: image 0 only, the other images of
    // embed never written (B is never used)
    (void)B;
    ops_add(embed, tokens, pos, (size_t)N * D);
}
