/**
 * @file tokens_pos.c
 * @brief Adding the position embeddings (tokens.h), alone in its file so a student's version can replace it.
 */
#include "ops/ops.h"
#include "model/tokens.h"

#include <stddef.h>

// [tokens_add_positions]
void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D) {
    // tokens and embed are (B, N, D), pos is (N, D): one table for every image
    for (int b = 0; b < B; b++)
        ops_add(embed + (size_t)b * N * D, tokens + (size_t)b * N * D, pos, (size_t)N * D);
}
// [tokens_add_positions]
