/**
 * @file mask.c
 * @brief The two additive attention masks the chapters use (see attention.h).
 *
 * A mask is added to the scaled scores before softmax: 0 leaves a score alone,
 * -inf makes its weight exactly 0 (e^-inf = 0). A Vision Transformer needs
 * neither; language models and padded batches do.
 */
#include "attention.h"

#include <math.h>

void attention_mask_padding(float *mask, int N, int valid) {
    // mask is (N, N): every query row hides the same padded key columns
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) mask[i * N + j] = j < valid ? 0.0f : -INFINITY;
}

void attention_mask_causal(float *mask, int N) {
    // mask is (N, N): zeros on and below the diagonal, -inf above it
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) mask[i * N + j] = j <= i ? 0.0f : -INFINITY;
}
