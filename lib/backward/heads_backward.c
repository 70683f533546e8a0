/**
 * @file heads_backward.c
 * @brief The backward pass of splitting into heads and merging them (attention.h).
 *
 * Shape legend: B batch, N tokens, H heads, Dh per head, D = H·Dh.
 *
 * heads_split() and heads_merge() only move numbers: each output element is
 * one input element, each input element lands in exactly one output element.
 * The gradient of a permutation is the inverse permutation, so the backward
 * of a split is a merge and the backward of a merge is a split, adding
 * (the gradient buffers accumulate) where the forward copied.
 */
#include "attention/attention.h"

#include <stddef.h>

void heads_split_backward(float *dx, const float *dout, int B, int N, int H, int Dh) {
    // dout is (B, H, N, Dh), dx is (B, N, H·Dh): dx += heads_merge(dout)
    const int D = H * Dh;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++) {
                const float *src = dout + (((size_t)b * H + h) * N + n) * Dh;
                float *dst = dx + ((size_t)b * N + n) * D + (size_t)h * Dh;
                for (int i = 0; i < Dh; i++) dst[i] += src[i];
            }
}

void heads_merge_backward(float *dx, const float *dout, int B, int N, int H, int Dh) {
    // dout is (B, N, H·Dh), dx is (B, H, N, Dh): dx += heads_split(dout)
    const int D = H * Dh;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++) {
                const float *src = dout + ((size_t)b * N + n) * D + (size_t)h * Dh;
                float *dst = dx + (((size_t)b * H + h) * N + n) * Dh;
                for (int i = 0; i < Dh; i++) dst[i] += src[i];
            }
}
