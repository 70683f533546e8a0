// hint: every scaled score is 0: the scale came out 0 (an integer division?
/**
 * @file scale_mask.c
 * @brief A wrong scale_mask.c for exercise 02 (tests/wrong/): the default scale
 *        as an integer division, 1 / (int)sqrtf(Dh), which is 0.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <math.h>
#include <stddef.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    // WRONG: 1 / 4 is 0 in C: an integer division, where 1.0f / sqrtf(Dh) belongs
    const float s = opt && opt->scale != 0.0f ? opt->scale : 1 / (int)sqrtf((float)Dh);
    const float *mask = opt ? opt->mask : NULL;
    const float *kpm = opt ? opt->key_padding_mask : NULL;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                size_t row = ((size_t)b * H + h) * N + i; // row i of head h of sequence b
                for (int j = 0; j < N; j++) {
                    // read the score first: scaled may be scores (in place)
                    float x = s * scores[row * N + j];
                    if (mask) x += mask[(size_t)i * N + j]; // shared by every b and h
                    if (kpm) x += kpm[(size_t)b * N + j];   // sequence b's row, key j
                    scaled[row * N + j] = x;
                }
            }
}
