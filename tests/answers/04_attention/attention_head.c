/**
 * @file attention_head.c
 * @brief Exercise 04's model answer: attention(), one head, written from the skeleton.
 *
 * Shape legend: N tokens, Dh the width of the head (of every query, key and value).
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <stddef.h>

void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const AttentionOptions *opt, int N, int Dh) {
    // q, k, v are (N, Dh), probs is (N, N), out is (N, Dh): one sequence, one head
    //
    //   out = softmax(s · Q·Kᵀ + mask + key_padding_mask) · V
    //
    // probs holds the scores, then the scaled scores, then the probabilities.

    // 1. the scores: query i (row i of q) against key j (row j of k)
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            probs[(size_t)i * N + j] = dot(q + (size_t)i * Dh, k + (size_t)j * Dh, Dh);

    // 2. the scale and the masks, before the softmax (0 keeps a score, -inf hides it)
    const float s = attention_scale(opt, Dh); // opt->scale, or 1/√Dh
    const float *mask = opt ? opt->mask : NULL;            // (N, N)
    const float *kpm = opt ? opt->key_padding_mask : NULL; // (1, N): the same for every i
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float x = s * probs[(size_t)i * N + j];
            if (mask) x += mask[(size_t)i * N + j];
            if (kpm) x += kpm[j];
            probs[(size_t)i * N + j] = x;
        }

    // 3. the softmax of each row i over the keys j: row i sums to 1 (0 if all hidden)
    softmax(probs, probs, N, N);

    // 4. the weighted sum of the values: (N, N)·(N, Dh) → (N, Dh)
    for (int i = 0; i < N; i++)
        for (int d = 0; d < Dh; d++) {
            double acc = 0.0;
            for (int j = 0; j < N; j++)
                acc += (double)probs[(size_t)i * N + j] * v[(size_t)j * Dh + d];
            out[(size_t)i * Dh + d] = (float)acc;
        }
}
