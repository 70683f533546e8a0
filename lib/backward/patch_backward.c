/**
 * @file patch_backward.c
 * @brief The backward pass of the patch embedding (patch.h): the gradients of
 *        the conv weight, its bias and, if wanted, the image.
 *
 * Shape legend: B batch, C channels, S image side, p patch side,
 * P = (S/p)² patches, K = C·p·p numbers per patch, D width.
 *
 * The forward is patch_unfold() then a linear layer, out = patches·Wᵀ + b with
 * W the conv weight read as (D, K). So the weight and bias gradients are a
 * linear layer's, over all B·P patches at once (every patch of every image
 * used the same W and b):
 *   dW += doutᵀ·patches,   db += Σ over patches of dout,
 * and the gradient of the patches, dout·W, goes back into the image by
 * folding it: the patches do not overlap (stride = kernel), so unfold is a
 * permutation and its backward is its inverse, patch_fold(), adding where
 * fold copies.
 */
#include "base/util.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "model/patch.h"

#include <stdlib.h>

void patch_embed_backward(float *dimg, float *dw, float *db, const float *dout,
                          const float *patches, const float *w, int B, int C, int S, int p,
                          int D) {
    // dout is (B, P, D), patches (B, P, C·p·p), w and dw (D, C·p·p), db (D), dimg (B, C, S, S)
    const int grid = S / p, P = grid * grid, K = C * p * p;
    ops_linear_backward(NULL, dw, db, dout, patches, w, B * P, K, D);
    if (!dimg) return;
    // one image at a time, so the scratch is one image's size whatever B is
    float *dpatches = vit_malloc((size_t)P * K * sizeof(float));
    for (int b = 0; b < B; b++) {
        matmul(dpatches, dout + (size_t)b * P * D, w, P, D, K); // (P,D)·(D,K): dpatches = dout·W
        // fold, adding: pixel (b, c, gy·p + i, gx·p + j) is element (c·p + i)·p + j
        // of patch gy·grid + gx
        for (int gy = 0; gy < grid; gy++)
            for (int gx = 0; gx < grid; gx++) {
                const float *src = dpatches + ((size_t)gy * grid + gx) * K;
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < p; i++) {
                        float *dst = dimg + (((size_t)b * C + c) * S + (size_t)gy * p + i) * S +
                                     (size_t)gx * p;
                        for (int j = 0; j < p; j++) dst[j] += src[((size_t)c * p + i) * p + j];
                    }
            }
    }
    free(dpatches);
}
