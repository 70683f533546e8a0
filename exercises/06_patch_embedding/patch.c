/**
 * @file patch.c
 * @brief Exercise 06: patch embedding by unfold + linear (lib/model/patch.h), your version.
 *
 * Shape legend: B images, C channels, S image side, p patch side,
 * grid = S/p patches per side, P = grid² patches, D width.
 *
 * Fill in the two TODOs. `make exercise CH=06` grades them; README.md says
 * what the tests check and what the hints mean. Until a TODO is done its
 * function writes zeros, so the tests fail without crashing.
 */
#include "model/patch.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void patch_unfold(float *patches, const float *img, int B, int C, int S, int p) {
    // img is (B, C, S, S), patches is (B, P, C·p·p) with P = (S/p)²
    const int grid = S / p, P = grid * grid, K = C * p * p;

    // TODO: cut every image into its P patches and flatten each into K = C·p·p numbers,
    //       exactly as PyTorch's F.unfold(img, kernel_size=p, stride=p).transpose(1, 2):
    //
    //   patches[b, gy·grid + gx, (c·p + i)·p + j] = img[b, c, gy·p + i, gx·p + j]
    //
    //   for every image b < B, grid row gy and column gx < grid, channel c < C, and
    //   row i, column j < p inside the patch.
    //   - Patches are numbered row by row, like reading a page: patch 1 is the one to
    //     the right of patch 0, patch `grid` the one below it.
    //   - Inside a patch, channel-major: all p·p values of channel 0 (row by row), then
    //     channel 1, … — the order of the conv weight (D, C, p, p) that patch_embed() uses.
    //   - In memory (row-major): img[b, c, y, x] is img[((b·C + c)·S + y)·S + x] and
    //     patches[b, t, k] is patches[(b·P + t)·K + k]. Use size_t for the offsets.
    //   Hint: the p pixels of one patch row are contiguous in both, so one memcpy each.
    memset(patches, 0, sizeof(float) * (size_t)B * P * K); // placeholder: delete it
    (void)img;
}

void patch_embed(float *out, float *patches, const float *img, const float *w, const float *b,
                 int B, int C, int S, int p, int D) {
    // img is (B, C, S, S), w is (D, C·p·p), out is (B, P, D)
    const int P = (S / p) * (S / p), K = C * p * p;

    // TODO: timm's x = self.patch_embed(x), a Conv2d with kernel_size = stride = p, is
    //       unfold + one linear layer, because the windows never overlap:
    //   1. patch_unfold() the images into the scratch `patches`, (B, P, K)
    //   2. out = patches · Wᵀ + b, every one of the B·P patches through the same layer:
    //        out[n, t, o] = b[o] + Σ_k W[o, k] · patches[n, t, k]   (image n, patch t)
    //      W is the conv weight (D, C, p, p) read as (D, K), nn.Linear's layout; b is the
    //      bias (D), or NULL for none. lib's ops_linear(out, x, w, b, rows, I, O) computes
    //      x·Wᵀ + b for an (rows, I) x and an (O, I) W (ops.h).
    memset(out, 0, sizeof(float) * (size_t)B * P * D); // placeholder: delete it
    (void)patches, (void)img, (void)w, (void)b, (void)K;
}
