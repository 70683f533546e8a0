// hint: opt->scale = 2 was ignored
/**
 * @file scale_mask.c
 * @brief A wrong scale_mask.c for exercise 02 (tests/wrong/): always 1/√Dh, whatever opt->scale says.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <math.h>
#include <stddef.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    const float s = 1.0f / sqrtf((float)Dh); // WRONG: attention_scale(opt, Dh)
    const float *mask = opt ? opt->mask : NULL;
    const float *pad = opt ? opt->key_padding_mask : NULL;
    const size_t nn = (size_t)N * N;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (size_t ij = 0; ij < nn; ij++) {
                const size_t g = ((size_t)b * H + h) * nn;
                float v = scores[g + ij] * s;
                if (mask) v += mask[ij];
                if (pad) v += pad[(size_t)b * N + ij % (size_t)N];
                scaled[g + ij] = v;
            }
}
