/**
 * @file attention.c
 * @brief Scaled dot-product attention, one head and many (see attention.h).
 */
#include "attention.h"
#include "gemm.h"
#include "ops.h"

#include <math.h>
#include <stddef.h>

void attention_scores(float *scores, const float *q, const float *k, int G, int N, int Dh) {
    // q, k are (G, N, Dh), scores is (G, N, N): one Q·Kᵀ per head.
    // The heads are independent: one thread per head (a product this small
    // would spend more time waking threads than computing if split itself).
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++) {
        size_t qk = (size_t)g * N * Dh;
        matmul_bt(scores + (size_t)g * N * N, q + qk, k + qk, N, Dh, N);
    }
}

void attention_scale_mask(float *scaled, const float *scores, const float *mask, int G, int N,
                          int Dh) {
    // scores is (G, N, N), mask is (N, N) or NULL, scaled is (G, N, N)
    // 1/√Dh keeps the scores' variance near 1 whatever the head size (chapter 02)
    const float s = 1.0f / sqrtf((float)Dh);
    size_t nn = (size_t)N * N;
    for (int g = 0; g < G; g++)
        for (size_t i = 0; i < nn; i++) {
            float v = scores[g * nn + i] * s;
            scaled[g * nn + i] = mask ? v + mask[i] : v;
        }
}

void attention_context(float *out, const float *probs, const float *v, int G, int N, int Dh) {
    // probs is (G, N, N), v is (G, N, Dh), out is (G, N, Dh); one thread per head
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++)
        matmul(out + (size_t)g * N * Dh, probs + (size_t)g * N * N, v + (size_t)g * N * Dh, N, N,
               Dh);
}

void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const float *mask, int N, int Dh) {
    // q, k, v are (N, Dh), probs is (N, N), out is (N, Dh)
    attention_scores(probs, q, k, 1, N, Dh);
    attention_scale_mask(probs, probs, mask, 1, N, Dh);
    softmax(probs, probs, N, N);
    attention_context(out, probs, v, 1, N, Dh);
}
