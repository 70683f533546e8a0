// hint: patch_embed wrote only zeros
/**
 * @file patch.c
 * @brief A wrong patch.c for exercise 06 (tests/wrong/): patch_unfold() done, patch_embed() still the skeleton's placeholder.
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
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(out, 0, sizeof(float) * (size_t)B * P * D); // placeholder: delete it
    (void)patches, (void)img, (void)w, (void)b, (void)K;
}
