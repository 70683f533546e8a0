/**
 * @file tokens_cls.c
 * @brief Prepending the [cls] token (tokens.h), alone in its file so a student's version can replace it.
 */
#include "model/tokens.h"

#include <stddef.h>
#include <string.h>

// [tokens_prepend_cls]
void tokens_prepend_cls(float *tokens, const float *patch_embed, const float *cls, int B, int P,
                        int D) {
    // patch_embed is (B, P, D), cls is (D), tokens is (B, P + 1, D)
    const size_t N = (size_t)P + 1;
    for (int b = 0; b < B; b++) {
        float *tok = tokens + (size_t)b * N * D;
        memcpy(tok, cls, (size_t)D * sizeof(float));
        memcpy(tok + D, patch_embed + (size_t)b * P * D, (size_t)P * D * sizeof(float));
    }
}
// [tokens_prepend_cls]
