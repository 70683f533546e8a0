/**
 * @file attention.c
 * @brief Scaled dot-product attention, one head and many (see attention.h).
 */
#include "attention/attention.h"
#include "gemm/gemm.h"
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>

// [attention_scale]
float attention_scale(const AttentionOptions *opt, int Dh) {
    // timm: self.scale = qk_scale or head_dim ** -0.5
    if (opt && opt->scale != 0.0f) return opt->scale;
    return 1.0f / sqrtf((float)Dh);
}
// [attention_scale]

// [attention_scores]
void attention_scores(float *scores, const float *q, const float *k, int G, int N, int Dh) {
    // q, k are (G, N, Dh), scores is (G, N, N): one Q·Kᵀ per head, timm's
    // q @ k.transpose(-2, -1), MindSpore's ops.BatchMatMul(transpose_b=True)(q, k).
    // The heads are independent: one thread per head (a product this small
    // would spend more time waking threads than computing if split itself).
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++) {
        size_t qk = (size_t)g * N * Dh;
        matmul_bt(scores + (size_t)g * N * N, q + qk, k + qk, N, Dh, N);
    }
}
// [attention_scores]

// [attention_context]
void attention_context(float *out, const float *probs, const float *v, int G, int N, int Dh) {
    // probs is (G, N, N), v is (G, N, Dh), out is (G, N, Dh); one thread per head
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++)
        matmul(out + (size_t)g * N * Dh, probs + (size_t)g * N * N, v + (size_t)g * N * Dh, N, N,
               Dh);
}
// [attention_context]

// [attention_entropy]
void attention_entropy(float *out, const float *probs, int rows, int N) {
    // probs is (rows, N), out is (rows): H = -Σ p ln p, with 0 ln 0 = 0
    for (int r = 0; r < rows; r++) {
        double h = 0;
        for (int j = 0; j < N; j++) {
            double p = probs[(size_t)r * N + j];
            if (p > 0) h -= p * log(p);
        }
        out[r] = (float)h;
    }
}
// [attention_entropy]
