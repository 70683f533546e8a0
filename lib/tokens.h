/**
 * @file tokens.h
 * @brief From patches to tokens: the [cls] token in front, then the position embeddings.
 *
 * Shape legend: B batch, P patches, N = P + 1 tokens, D width (the glossary).
 * Each function is alone in a file of its own (tokens_cls.c, tokens_pos.c), so
 * a student's version can replace it (exercise 07).
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
 * @brief Add the position embeddings: timm's `x = x + self.pos_embed`, the same
 *        (N, D) table added to every image of the batch.
 * @param[out] embed   (B, N, D); may equal @p tokens
 * @param[in]  tokens  (B, N, D), [cls] first
 * @param[in]  pos     (N, D), row 0 for the [cls] position
 */
void tokens_add_positions(float *embed, const float *tokens, const float *pos, int B, int N,
                          int D);

/** @} */
#endif
