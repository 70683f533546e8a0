// hint: the key-padding mask hid queries (rows) instead of keys (columns)
/**
 * @file scale_mask.c
 * @brief A wrong scale_mask.c for exercise 02 (tests/wrong/): key_padding_mask[b][i] added, i the query.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    const float s = attention_scale(opt, Dh);
    const float *mask = opt ? opt->mask : NULL;
    const float *pad = opt ? opt->key_padding_mask : NULL;
    const size_t nn = (size_t)N * N;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const size_t g = ((size_t)b * H + h) * nn;
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    const size_t ij = (size_t)i * N + j;
                    float v = scores[g + ij] * s;
                    if (mask) v += mask[ij];
                    if (pad) v += pad[(size_t)b * N + i]; // WRONG: + j, the key
                    scaled[g + ij] = v;
                }
        }
}
