/**
 * @file heads.c
 * @brief Exercise 05's model answer: heads_split() and heads_merge(), written from the skeleton.
 *
 * Shape legend: B sequences, N tokens, H heads, Dh = D/H the width of one head.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh): out[b][h][n][d] = x[b][n][h·Dh + d]
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++) // head h of token n: Dh contiguous values on both sides
                memcpy(out + (((size_t)b * H + h) * N + n) * Dh,
                       x + ((size_t)b * N + n) * H * Dh + (size_t)h * Dh,
                       (size_t)Dh * sizeof(float));
}

void heads_merge(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, H, N, Dh), out is (B, N, H·Dh): out[b][n][h·Dh + d] = x[b][h][n][d],
    // token n's row is [head 0 | head 1 | … | head H-1]
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                memcpy(out + ((size_t)b * N + n) * H * Dh + (size_t)h * Dh,
                       x + (((size_t)b * H + h) * N + n) * Dh,
                       (size_t)Dh * sizeof(float));
}
