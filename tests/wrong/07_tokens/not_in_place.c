// hint: the same buffer as tokens
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): the table copied into embed first, which in place overwrites the tokens.
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
    for (int b = 0; b < B; b++) {
        float *out = embed + (size_t)b * N * D;
        memcpy(out, pos, (size_t)N * D * sizeof(float));
        ops_add(out, out, tokens + (size_t)b * N * D, (size_t)N * D);
    }
}
