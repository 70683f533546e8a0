/**
 * @file patch.h
 * @brief Patch embedding: cutting an image into patches and projecting each to D.
 *
 * Shape legend: B batch, C channels (3), S image side, p patch side,
 * P = (S/p)² patches, D width.
 *
 * timm's PatchEmbed is a Conv2d with kernel = stride = p, followed by
 * `flatten(2).transpose(1, 2)`. Because the stride equals the kernel, the
 * windows never overlap, so the convolution is exactly: cut the image into P
 * patches, flatten each to C·p·p numbers (channel-major, then rows, then
 * columns — the order of the conv weight (D, C, p, p)), and apply one linear
 * layer with the conv weight viewed as (D, C·p·p). Chapter 06 shows both.
 *
 * The backward, patch_embed_backward() (patch_backward.c), is a linear
 * layer's backward followed by a fold of the patches' gradient into the image.
 *
 * Deliberately omitted: overlapping (stride < kernel) patches, padding, images
 * whose side is not a multiple of p (callers check and refuse).
 */
#ifndef VIT_PATCH_H
#define VIT_PATCH_H

/** @defgroup patch Patch embedding
 *  @brief \f$ x_p = W\,\mathrm{vec}(\text{patch}_p) + b \f$ for each of the \f$(S/p)^2\f$ patches.
 *
 *  Taught in @ref chapter06 "chapter 06" (patches and their projection). Pinned by the suites
 *  @ref test_patch.c "patch", @ref test_ch06_patch_embedding.c "ch06_patch_embedding" (@ref
 *  answer_keys "the answer keys").
 *  @{
 */

/**
 * @brief Cut images into flattened patches (PyTorch: `F.unfold(img, p, stride=p).transpose(1, 2)`).
 * @param[out] patches  (B, P, C·p·p), patch index = row · (S/p) + column
 * @param[in]  img      (B, C, S, S)
 */
void patch_unfold(float *patches, const float *img, int B, int C, int S, int p);

/**
 * @brief The inverse of patch_unfold(): put flattened patches back into images.
 * @param[out] img      (B, C, S, S)
 * @param[in]  patches  (B, P, C·p·p)
 */
void patch_fold(float *img, const float *patches, int B, int C, int S, int p);

/**
 * @brief Patch embedding as unfold + linear.
 * @param[out] out      (B, P, D)
 * @param[out] patches  (B, P, C·p·p) scratch, left holding the unfolded patches
 * @param[in]  img      (B, C, S, S)
 * @param[in]  w        (D, C, p, p) the conv weight, read as (D, C·p·p)
 * @param[in]  b        (D) or NULL
 */
void patch_embed(float *out, float *patches, const float *img, const float *w, const float *b,
                 int B, int C, int S, int p, int D);

/**
 * @brief Backward of patch_embed(): the gradients of the conv weight, its bias and the image.
 *
 * A linear layer's backward over all B·P patches, then a fold back into the image:
 * \f[ dW \mathrel{+}= \text{dout}^\top\,\text{patches}, \qquad
 *     db \mathrel{+}= \sum_{b,P} \text{dout},
 *     \qquad d\,\text{img} \mathrel{+}= \mathrm{fold}(\text{dout}\, W) \f]
 * (unfold is a permutation when the patches do not overlap; fold is its inverse).
 * @param[in,out] dimg     (B, C, S, S), added to; or NULL (training needs no
 *                         gradient of the image; a trace's `grad.input` does)
 * @param[in,out] dw       (D, C, p, p), read as (D, C·p·p), added to; or NULL
 * @param[in,out] db       (D), added to; or NULL
 * @param[in]     dout     (B, P, D) gradient of the output
 * @param[in]     patches  (B, P, C·p·p) as patch_embed() left them (only read for dw)
 * @param[in]     w        (D, C, p, p) the conv weight (only read for dimg)
 */
void patch_embed_backward(float *dimg, float *dw, float *db, const float *dout,
                          const float *patches, const float *w, int B, int C, int S, int p,
                          int D);

/**
 * @brief Patch embedding as the textbook stride-p convolution, for comparison.
 * @param[out] out  (B, P, D)
 * @param[in]  img  (B, C, S, S)
 * @param[in]  w    (D, C, p, p)
 * @param[in]  b    (D) or NULL
 */
void patch_embed_conv_naive(float *out, const float *img, const float *w, const float *b, int B,
                            int C, int S, int p, int D);

/** @} */
#endif
