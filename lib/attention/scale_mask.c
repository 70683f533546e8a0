/**
 * @file scale_mask.c
 * @brief Scores × the scale, plus the masks (attention.h), alone in its file so a student's version can replace it.
 */
#include "attention/attention.h"

#include <stddef.h>

// [attention_scale_mask]
void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    // The default 1/√Dh makes the spread of the scores independent of the
    // head width Dh (chapter 02); a mask adds 0 (keep) or -inf (hide).
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
                    if (pad) v += pad[(size_t)b * N + j]; // the same for every head and query
                    scaled[g + ij] = v;
                }
        }
}
// [attention_scale_mask]
