// hint: positions are shifted by one
/**
 * @file tokens_pos.c
 * @brief A wrong tokens_pos.c for exercise 07 (tests/wrong/): the positions added as if [cls] were not there yet: token i gets row i - 1.
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
        const float *tok = tokens + (size_t)b * N * D;
        float *out = embed + (size_t)b * N * D;
        memcpy(out, tok, (size_t)D * sizeof(float)); // [cls]: no position
        ops_add(out + D, tok + D, pos, (size_t)(N - 1) * D);
    }
}
