// hint: the key-padding mask was not added
/**
 * @file scale_mask.c
 * @brief A wrong scale_mask.c for exercise 02 (tests/wrong/): opt->key_padding_mask is never added.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    const float s = attention_scale(opt, Dh);
    const float *mask = opt ? opt->mask : NULL; // WRONG: opt->key_padding_mask forgotten
    const size_t nn = (size_t)N * N;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (size_t ij = 0; ij < nn; ij++) {
                const size_t g = ((size_t)b * H + h) * nn;
                float v = scores[g + ij] * s;
                if (mask) v += mask[ij];
                scaled[g + ij] = v;
            }
}
