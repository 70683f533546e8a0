/**
 * @file tokens.h
 * @brief From patches to tokens: the [cls] token in front, then the position embeddings.
 *
 * Shape legend: B batch, P patches, N = P + 1 tokens, D width (the glossary).
 * Each function is alone in a file of its own (tokens_cls.c, tokens_pos.c), so
 * a student's version can replace it (exercise 07). Their backward passes,
 * which add the gradients of the inputs to their buffers, are in tokens_backward.c.
 */
#ifndef VIT_TOKENS_H
#define VIT_TOKENS_H

/** @addtogroup vit
 *  @{
 */

/**
 * @brief Prepend the [cls] token to each image's patches: timm's
 *        `torch.cat((cls_token.expand(B, -1, -1), x), dim=1)`.
 * @param[out] tokens       (B, N, D): row 0 of each image is @p cls, rows 1 … P its patches
 * @param[in]  patch_embed  (B, P, D)
 * @param[in]  cls          (D) the learned [cls] token, the same for every image
 */
void tokens_prepend_cls(float *tokens, const float *patch_embed, const float *cls, int B, int P,
                        int D);

/**
 * @brief Backward of tokens_prepend_cls(): each image's rows 1 … P go back to
 *        its patches, and the B rows 0 are summed into the one [cls] token.
 *
 * \f[ d\,\text{patch\_embed}_b \mathrel{+}= d\,\text{tokens}_{b,1:N}, \qquad
 *     d\,\text{cls} \mathrel{+}= \sum_b d\,\text{tokens}_{b,0} \f]
 * @param[in,out] dpatch_embed  (B, P, D), added to; or NULL
 * @param[in,out] dcls          (D), added to; or NULL
 * @param[in]     dtokens       (B, N, D) gradient of the tokens
 */
void tokens_prepend_cls_backward(float *dpatch_embed, float *dcls, const float *dtokens, int B,
                                 int P, int D);

/**
 * @brief Add the position embeddings: timm's `x = x + self.pos_embed`, the same
 *        (N, D) table added to every image of the batch.
 * @param[out] embed   (B, N, D); may equal @p tokens
 * @param[in]  tokens  (B, N, D), [cls] first
 * @param[in]  pos     (N, D), row 0 for the [cls] position
 */
void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D);

/**
 * @brief Backward of tokens_add_positions(): the gradient passes unchanged to
 *        the tokens, and the one table sums it over the batch.
 *
 * \f[ d\,\text{tokens} \mathrel{+}= d\,\text{embed}, \qquad
 *     dE_\text{pos} \mathrel{+}= \sum_b d\,\text{embed}_b \f]
 * @param[in,out] dtokens  (B, N, D), added to; or NULL
 * @param[in,out] dpos     (N, D), added to; or NULL
 * @param[in]     dembed   (B, N, D) gradient of the embedded tokens
 */
void tokens_add_positions_backward(float *dtokens, float *dpos, const float *dembed, int B, int N,
                                   int D);

/** @} */
#endif
