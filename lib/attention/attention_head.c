/**
 * @file attention_head.c
 * @brief One attention head, start to finish (attention.h), alone in its file so a student's version can replace it.
 */
#include "ops/ops.h"
#include "attention/attention.h"

// [attention]
void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const AttentionOptions *opt, int N, int Dh) {
    // q, k, v are (N, Dh), probs is (N, N), out is (N, Dh): one sequence, one head
    attention_scores(probs, q, k, 1, N, Dh);
    attention_scale_mask(probs, probs, opt, 1, 1, N, Dh);
    softmax(probs, probs, N, N);
    attention_context(out, probs, v, 1, N, Dh);
}
// [attention]
