// hint: the bias is missing
/**
 * @file patch.c
 * @brief A wrong patch.c for exercise 06 (tests/wrong/): the bias left out.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/patch.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void patch_unfold(float *patches, const float *img, int B, int C, int S, int p) {
    // img is (B, C, S, S), patches is (B, P, C·p·p)
    const int grid = S / p, K = C * p * p;
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < grid; gy++)
            for (int gx = 0; gx < grid; gx++)
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < p; i++)
                        for (int j = 0; j < p; j++) {
                            size_t t = (size_t)gy * grid + gx, k = ((size_t)c * p + i) * p + j;
                            patches[((size_t)b * grid * grid + t) * K + k] =
                                img[(((size_t)b * C + c) * S + (size_t)gy * p + i) * S + (size_t)gx * p + j];
                        }
}

void patch_embed(float *out, float *patches, const float *img, const float *w, const float *b,
                 int B, int C, int S, int p, int D) {
    // img is (B, C, S, S), w is (D, C·p·p), out is (B, P, D)
    const int P = (S / p) * (S / p);
    patch_unfold(patches, img, B, C, S, p);
    (void)b; // forgotten
    ops_linear(out, patches, w, NULL, B * P, C * p * p, D);
}
