/**
 * @file patch.c
 * @brief Patch embedding by unfold + linear, and the convolution it equals
 *        (alone in its file so a student's version can replace it).
 */
#include "model/patch.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

// [patch_unfold]
void patch_unfold(float *patches, const float *img, int B, int C, int S, int p) {
    // img is (B, C, S, S), patches is (B, P, C·p·p) with P = (S/p)²
    const int grid = S / p, K = C * p * p;
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < grid; gy++)
            for (int gx = 0; gx < grid; gx++) {
                float *dst = patches + ((size_t)b * grid * grid + (size_t)gy * grid + gx) * K;
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < p; i++) // one row of the patch: p contiguous pixels
                        memcpy(dst + ((size_t)c * p + i) * p,
                               img + (((size_t)b * C + c) * S + (size_t)gy * p + i) * S +
                                   (size_t)gx * p,
                               (size_t)p * sizeof(float));
            }
}
// [patch_unfold]

// [patch_embed]
void patch_embed(float *out, float *patches, const float *img, const float *w, const float *b,
                 int B, int C, int S, int p, int D) {
    // img is (B, C, S, S), w is (D, C·p·p), out is (B, P, D)
    const int P = (S / p) * (S / p);
    patch_unfold(patches, img, B, C, S, p);
    ops_linear(out, patches, w, b, B * P, C * p * p, D);
}
// [patch_embed]

