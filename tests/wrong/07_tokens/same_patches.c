// hint: image n's come from patch_embed + n*P*D
/**
 * @file tokens_cls.c
 * @brief A wrong tokens_cls.c for exercise 07 (tests/wrong/): every image given image 0's patches.
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
    for (int b = 0; b < B; b++) {
        float *tok = tokens + (size_t)b * N * D;
        memcpy(tok, cls, (size_t)D * sizeof(float));
        memcpy(tok + D, patch_embed, (size_t)P * D * sizeof(float));
    }
}
