// hint: embed holds the positions alone
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): the table copied into embed,
 *        not added to the tokens.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"

#include <stddef.h>
#include <string.h>

void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D) {
    // tokens and embed are (B, N, D), pos is (N, D)
    (void)tokens;
    const size_t nd = (size_t)N * D;
    for (int n = 0; n < B; n++) memcpy(embed + n * nd, pos, nd * sizeof *pos); // WRONG: + tokens
}
