// hint: every token got E_pos row 0
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): the table indexed by the
 *        feature alone, pos[d], so every token gets row 0.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"

#include <stddef.h>

void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D) {
    // tokens and embed are (B, N, D), pos is (N, D)
    for (int n = 0; n < B; n++)
        for (int i = 0; i < N; i++)
            for (int d = 0; d < D; d++) {
                const size_t k = ((size_t)n * N + i) * D + d;
                embed[k] = tokens[k] + pos[d]; // WRONG: pos[i*D + d], row i
            }
}
