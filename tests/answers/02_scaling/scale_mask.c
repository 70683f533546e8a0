/**
 * @file scale_mask.c
 * @brief Exercise 02's model answer: attention_scale_mask(), written from the skeleton.
 *
 * Shape legend: B sequences, H heads, N tokens, Dh = D/H the width of one head.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "attention/attention.h"

#include <stddef.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    const float s = attention_scale(opt, Dh); // opt->scale, or 1/√Dh when it is 0 or opt NULL
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
