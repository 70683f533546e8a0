// hint: patch_unfold wrote only zeros
// also: the linear layer is right, but the patches it multiplies are not
/**
 * @file patch.c
 * @brief A wrong patch.c for exercise 06 (tests/wrong/): patch_embed() done, patch_unfold() still the skeleton's placeholder.
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
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(patches, 0, sizeof(float) * (size_t)B * P * K); // placeholder: delete it
    (void)img;
}

void patch_embed(float *out, float *patches, const float *img, const float *w, const float *b,
                 int B, int C, int S, int p, int D) {
    // img is (B, C, S, S), w is (D, C·p·p), out is (B, P, D)
    const int P = (S / p) * (S / p), K = C * p * p;
    // the windows never overlap: the stride-p conv is unfold, then one linear layer
    patch_unfold(patches, img, B, C, S, p);        // (B, P, K), left there for the caller
    ops_linear(out, patches, w, b, B * P, K, D);       // every one of the B·P patches: x·Wᵀ + b
}
