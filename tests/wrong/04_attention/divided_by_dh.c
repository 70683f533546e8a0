// hint: √Dh, not Dh
/**
 * @file attention_head.c
 * @brief A wrong attention_head.c for exercise 04 (tests/wrong/): the scores divided by Dh instead of √Dh.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>

void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const AttentionOptions *opt, int N, int Dh) {
    // q, k, v are (N, Dh), probs is (N, N), out is (N, Dh): one sequence, one head
    const float s = opt && opt->scale != 0.0f ? opt->scale : 1.0f / (float)Dh; // WRONG: 1/√Dh
    const float *mask = opt ? opt->mask : NULL;
    const float *pad = opt ? opt->key_padding_mask : NULL;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float x = s * dot(q + (size_t)i * Dh, k + (size_t)j * Dh, Dh);
            if (mask) x += mask[(size_t)i * N + j];
            if (pad) x += pad[j];
            probs[(size_t)i * N + j] = x;
        }
    softmax(probs, probs, N, N);
    for (int i = 0; i < N; i++)
        for (int d = 0; d < Dh; d++) {
            double o = 0;
            for (int j = 0; j < N; j++) o += (double)probs[(size_t)i * N + j] * v[(size_t)j * Dh + d];
            out[(size_t)i * Dh + d] = (float)o;
        }
}
