/**
 * @file heads_qkv.c
 * @brief Splitting a fused (B, N, 3D) qkv projection into heads (attention.h).
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

// [heads_split_qkv]
void heads_split_qkv(float *out, const float *qkv, int B, int N, int H, int Dh) {
    // qkv is (B, N, 3·H·Dh), read as (B, N, 3, H, Dh); out is (3, B, H, N, Dh):
    // the Dh features of part s (q, k, v) of head h of token n of sequence b are
    // the contiguous slice qkv[b, n, s·D + h·Dh : s·D + (h+1)·Dh]
    const int D = H * Dh;
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int n = 0; n < N; n++)
                    memcpy(out + ((((size_t)s * B + b) * H + h) * N + n) * Dh,
                           qkv + ((size_t)b * N + n) * 3 * D + (size_t)s * D + (size_t)h * Dh,
                           (size_t)Dh * sizeof(float));
}
// [heads_split_qkv]
