/**
 * @file patch_ref.c
 * @brief The inverse of patch_unfold() and the direct convolution that patch_embed() is tested against (patch.h).
 */
#include "model/patch.h"

#include <stddef.h>
#include <string.h>

// [patch_fold]
void patch_fold(float *img, const float *patches, int B, int C, int S, int p) {
    // patches is (B, P, C·p·p), img is (B, C, S, S)
    const int grid = S / p, K = C * p * p;
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < grid; gy++)
            for (int gx = 0; gx < grid; gx++) {
                const float *src = patches + ((size_t)b * grid * grid + (size_t)gy * grid + gx) * K;
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < p; i++)
                        memcpy(img + (((size_t)b * C + c) * S + (size_t)gy * p + i) * S +
                                   (size_t)gx * p,
                               src + ((size_t)c * p + i) * p, (size_t)p * sizeof(float));
            }
}
// [patch_fold]

// [patch_embed_conv_naive]
void patch_embed_conv_naive(float *out, const float *img, const float *w, const float *b, int B,
                            int C, int S, int p, int D) {
    // out[b, gy·grid+gx, d] = b[d] + Σ_c Σ_i Σ_j w[d, c, i, j] · img[b, c, gy·p+i, gx·p+j]
    const int grid = S / p;
    for (int bi = 0; bi < B; bi++)
        for (int gy = 0; gy < grid; gy++)
            for (int gx = 0; gx < grid; gx++)
                for (int d = 0; d < D; d++) {
                    double sum = b ? b[d] : 0.0;
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < p; i++)
                            for (int j = 0; j < p; j++)
                                sum += (double)w[(((size_t)d * C + c) * p + i) * p + j] *
                                       img[(((size_t)bi * C + c) * S + (size_t)gy * p + i) * S +
                                           (size_t)gx * p + j];
                    out[((size_t)bi * grid * grid + (size_t)gy * grid + gx) * D + d] = (float)sum;
                }
}
// [patch_embed_conv_naive]
