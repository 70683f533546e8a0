// hint: [cls] is appended after the patches
/**
 * @file tokens_cls.c
 * @brief A wrong tokens_cls.c for exercise 07 (tests/wrong/): [cls] put after the patches, in row P.
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
        memcpy(tok, patch_embed + (size_t)b * P * D, (size_t)P * D * sizeof(float));
        memcpy(tok + (size_t)P * D, cls, (size_t)D * sizeof(float));
    }
}
