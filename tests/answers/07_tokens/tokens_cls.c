/**
 * @file tokens_cls.c
 * @brief Exercise 07's model answer: tokens_prepend_cls(), written from the skeleton.
 *
 * make answers-check links it in place of lib's and runs every suite.
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
        const float *src = patch_embed + (size_t)n * P * D;    // its patches: P rows of D
        memcpy(dst, cls, (size_t)D * sizeof(float));            // row 0: [cls], for every image
        memcpy(dst + D, src, (size_t)P * D * sizeof(float));    // rows 1 … P: the patches, in order
    }
}
