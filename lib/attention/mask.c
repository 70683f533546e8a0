/**
 * @file mask.c
 * @brief The additive attention masks the chapters use (see attention.h).
 *
 * A mask is added to the scaled scores before softmax: 0 leaves a score alone,
 * -inf makes its weight exactly 0 (e^-inf = 0). PyTorch code often writes the
 * same thing as `scores.masked_fill(mask == 0, float("-inf"))` with a mask of
 * 1 (keep) and 0 (hide). A Vision Transformer needs none of them; language
 * models and padded batches do.
 */
#include "attention/attention.h"

#include <math.h>
#include <stddef.h>

// [attention_mask_padding]
void attention_mask_padding(float *mask, int N, int valid) {
    // mask is (N, N): every query row hides the same padded key columns
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) mask[i * N + j] = j < valid ? 0.0f : -INFINITY;
}
// [attention_mask_padding]

// [attention_mask_key_padding]
void attention_mask_key_padding(float *mask, const int *lengths, int B, int N) {
    // mask is (B, N): row b hides the keys after sequence b's last real token;
    // attention_scale_mask() adds it to every head and every query of sequence b
    for (int b = 0; b < B; b++)
        for (int j = 0; j < N; j++) mask[(size_t)b * N + j] = j < lengths[b] ? 0.0f : -INFINITY;
}
// [attention_mask_key_padding]

// [attention_mask_causal]
void attention_mask_causal(float *mask, int N) {
    // mask is (N, N): zeros on and below the diagonal, -inf above it
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) mask[i * N + j] = j <= i ? 0.0f : -INFINITY;
}
// [attention_mask_causal]
