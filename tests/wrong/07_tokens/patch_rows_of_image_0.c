// hint: every image gets image 0's patches
/**
 * @file tokens_cls.c
 * @brief A wrong tokens_cls.c for exercise 07 (tests/wrong/): patch t copied row by row from image 0's patch t, for every image.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"

#include <stddef.h>
#include <string.h>

void tokens_prepend_cls(float *tokens, const float *patch_embed, const float *cls, int B, int P,
                        int D) {
    // patch_embed is (B, P, D), cls is (D), tokens is (B, P + 1, D)
    const size_t N = (size_t)P + 1;
    for (int n = 0; n < B; n++) {
        float *dst = tokens + (size_t)n * N * D;                // image n: N rows of D
        memcpy(dst, cls, (size_t)D * sizeof(float));            // row 0: [cls], for every image
        for (int t = 0; t < P; t++) // rows 1 … P: patch t in row t + 1
            // WRONG: patch t of image 0; image n's patch t is at patch_embed + (n·P + t)·D
            memcpy(dst + (size_t)(t + 1) * D, patch_embed + (size_t)t * D, (size_t)D * sizeof(float));
    }
}
