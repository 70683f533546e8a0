/**
 * @file patch.c
 * @brief Exercise 06's model answer: patch_unfold() and patch_embed(), written from the skeleton.
 *
 * Shape legend: B images, C channels, S image side, p patch side,
 * grid = S/p patches per side, P = grid² patches, D width.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "model/patch.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void patch_unfold(float *patches, const float *img, int B, int C, int S, int p) {
    // img is (B, C, S, S), patches is (B, P, C·p·p) with P = (S/p)²
    const int grid = S / p, P = grid * grid, K = C * p * p;
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < grid; gy++)         // patches row by row: t = gy·grid + gx
            for (int gx = 0; gx < grid; gx++) {
                float *patch = patches + ((size_t)b * P + (size_t)gy * grid + gx) * K;
                for (int c = 0; c < C; c++)       // channel-major, as the conv weight (D, C, p, p)
                    for (int i = 0; i < p; i++) { // row i of the patch: p contiguous pixels
                        const float *row =
                            img + (((size_t)b * C + c) * S + (size_t)gy * p + i) * S + (size_t)gx * p;
                        memcpy(patch + ((size_t)c * p + i) * p, row, (size_t)p * sizeof(float));
                    }
            }
}

void patch_embed(float *out, float *patches, const float *img, const float *w, const float *b,
                 int B, int C, int S, int p, int D) {
    // img is (B, C, S, S), w is (D, C·p·p), out is (B, P, D)
    const int P = (S / p) * (S / p), K = C * p * p;
    // the windows never overlap: the stride-p conv is unfold, then one linear layer
    patch_unfold(patches, img, B, C, S, p);        // (B, P, K), left there for the caller
    ops_linear(out, patches, w, b, B * P, K, D);       // every one of the B·P patches: x·Wᵀ + b
}
