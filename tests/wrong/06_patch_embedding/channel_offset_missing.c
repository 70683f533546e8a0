// hint: patch i holds the pixels of grid row i / (S/p)
// also: the linear layer is right, but the patches it multiplies are not
/**
 * @file patch.c
 * @brief A wrong patch.c for exercise 06 (tests/wrong/): every channel of a patch read from channel 0 (the offset c·S·S forgotten).
 *
 * `make test` checks that the grader fails it and prints the hint above.
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
                        // WRONG: image b's offset without its channel: every channel reads channel 0,
                        // img[((b·C + c)·S + y)·S + x] has c in it
                        const float *row = img + ((size_t)b * C * S + (size_t)gy * p + i) * S + (size_t)gx * p;
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
