/**
 * @file tokens_backward.c
 * @brief The backward pass of the token steps (tokens.h): the [cls] token and the position embeddings.
 *
 * Shape legend: B batch, P patches, N = P + 1 tokens, D width.
 *
 * Both forwards copy or add, so their gradients are copies and sums:
 *  - prepending [cls] copies row 0 from cls and rows 1 … P from the patches:
 *    the patches get their rows of the gradient back, and cls, which every
 *    image of the batch copied, gets the sum of the B rows 0;
 *  - adding the positions passes the gradient unchanged to the tokens
 *    (∂(t + e)/∂t = 1), and the one (N, D) table, added to every image, gets
 *    the sum over the batch.
 * Each gradient is added to what its buffer holds; either output may be NULL.
 */
#include "model/tokens.h"

#include <stddef.h>

void tokens_prepend_cls_backward(float *dpatch_embed, float *dcls, const float *dtokens, int B,
                                 int P, int D) {
    // dtokens is (B, P + 1, D), dpatch_embed (B, P, D), dcls (D)
    const size_t N = (size_t)P + 1, PD = (size_t)P * D;
    for (int b = 0; b < B; b++) {
        const float *dt = dtokens + (size_t)b * N * D;
        if (dcls)
            for (int j = 0; j < D; j++) dcls[j] += dt[j]; // row 0: the [cls] token
        if (dpatch_embed) {
            float *dp = dpatch_embed + (size_t)b * PD;
            for (size_t i = 0; i < PD; i++) dp[i] += dt[D + i]; // rows 1 … P
        }
    }
}

void tokens_add_positions_backward(float *dtokens, float *dpos, const float *dembed, int B, int N,
                                   int D) {
    // dembed and dtokens are (B, N, D), dpos is (N, D)
    const size_t ND = (size_t)N * D;
    for (int b = 0; b < B; b++) {
        const float *de = dembed + (size_t)b * ND;
        if (dtokens)
            for (size_t i = 0; i < ND; i++) dtokens[(size_t)b * ND + i] += de[i];
        if (dpos)
            for (size_t i = 0; i < ND; i++) dpos[i] += de[i];
    }
}
