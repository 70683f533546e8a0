/**
 * @file block.h
 * @brief One pre-norm encoder block: its weights, its working memory, its forward pass.
 *
 * Shape legend: B batch, N tokens, D width, H heads, Dh = D/H, M MLP width.
 *
 * A block is timm's `Block` (pre-norm):
 *   x = x + attn(norm1(x));  x = x + mlp(norm2(x)),  mlp = fc2(gelu(fc1(·)))
 * The model (vit.h) stacks L of them; chapter 08 builds one. This header
 * needs only the sizes (config.h) and attention (attention.h), so the block
 * can be compiled, taught and replaced without the rest of the model.
 *
 * Deliberately omitted: dropout and drop-path (identity at inference), layer
 * scale, post-norm blocks.
 */
#ifndef VIT_BLOCK_H
#define VIT_BLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/trace.h"
#include "attention/attention.h"
#include "model/config.h"

/** @addtogroup vit
 *  @{
 */

/** One encoder block's parameters; borrowed pointers. */
typedef struct {
    const float *norm1_w;  /**< (D) LayerNorm 1 scale */
    const float *norm1_b;  /**< (D) LayerNorm 1 shift */
    AttentionWeights attn; /**< q/k/v (D,D) + (D), proj (D,D) + (D) */
    const float *norm2_w;  /**< (D) LayerNorm 2 scale */
    const float *norm2_b;  /**< (D) LayerNorm 2 shift */
    const float *fc1_w;    /**< (M, D) */
    const float *fc1_b;    /**< (M) */
    const float *fc2_w;    /**< (D, M) */
    const float *fc2_b;    /**< (D) */
    const LowpWeight *fc1_lowp; /**< fc1_w in bf16 or int8 (vit_set_precision()), or NULL:
                                     fc1_w itself, in float. Not a parameter: a copy */
    const LowpWeight *fc2_lowp; /**< fc2_w's copy, or NULL */
} VitBlockWeights;

/**
 * One encoder block's gradients, d loss / d θ: VitBlockWeights' fields, same
 * names, same order, same shapes, but writable (vit_block_backward() adds to them).
 */
typedef struct {
    float *norm1_w;      /**< (D) */
    float *norm1_b;      /**< (D) */
    AttentionGrads attn; /**< q/k/v (D,D) + (D), proj (D,D) + (D) */
    float *norm2_w;      /**< (D) */
    float *norm2_b;      /**< (D) */
    float *fc1_w;        /**< (M, D) */
    float *fc1_b;        /**< (M) */
    float *fc2_w;        /**< (D, M) */
    float *fc2_b;        /**< (D) */
} VitBlockGrads;

/** Working memory of one block; every buffer is traced. */
typedef struct {
    float *norm1;   /**< (B, N, D) */
    MhaScratch mha; /**< q, k, v, scores, scaled, probs, context */
    float *attn;    /**< (B, N, D) attention output (after proj) */
    float *resid1;  /**< (B, N, D) x + attn */
    float *norm2;   /**< (B, N, D) */
    float *fc1;     /**< (B, N, M) */
    float *gelu;    /**< (B, N, M) */
    float *fc2;     /**< (B, N, D) */
    float *qkv;     /**< (B, N, 3D) or NULL: vit_block_forward_fused()'s q, k, v before their
                         split, in fc1 and gelu's memory (NULL when it has not room) */
} VitBlockActs;

/** @brief Floats vit_block_acts_carve() needs for a batch of @p B. */
size_t vit_block_acts_floats(const VitConfig *cfg, int B);
/** @brief Point a block's buffers into @p mem (vit_block_acts_floats() floats). */
void vit_block_acts_carve(VitBlockActs *a, float *mem, const VitConfig *cfg, int B);

/**
 * @brief One pre-norm encoder block (timm `Block.forward`).
 *
 * Emits with the tracer's prefix (e.g. "blocks.3."): norm1, attn.{q,k,v,scores,
 * scaled,probs,context,proj}, resid1, norm2, mlp.fc1, mlp.gelu, mlp.fc2, out.
 * @param[out] out  (B, N, D)
 * @param[in]  x    (B, N, D)
 */
void vit_block_forward(float *out, const float *x, const VitBlockWeights *w,
                       const VitConfig *cfg, VitBlockActs *a, int B, const Tracer *tr);

/**
 * @brief May this pass take vit_block_forward_fused()? Yes when nobody listens
 *        (@p tr NULL or without a function) and no backward will read the
 *        buffers (inference buffers: `a->mha.keep_matrices` false).
 */
bool vit_block_fusable(const VitBlockActs *a, const Tracer *tr);

/**
 * @brief vit_block_forward()'s sums in fewer passes over memory, for a pass
 *        nobody watches (block_fused.c says what is fused, chapter 14 why).
 *
 * Equal to the recipe to float rounding (the order of additions differs).
 * Leaves resid1 in its buffer, and nothing else a listener or the backward
 * could use: norm1, norm2 and fc1 (GELU'd in place) hold intermediate
 * values, fc1's memory holds the fused q, k, v and then the GELU.
 * @param[out] out  (B, N, D)
 * @param[in]  x    (B, N, D)
 */
void vit_block_forward_fused(float *out, const float *x, const VitBlockWeights *w,
                             const VitConfig *cfg, VitBlockActs *a, int B);

/**
 * @brief Backward of vit_block_forward(): the gradient of the block's input
 *        and of its parameters, from the gradient of its output.
 *
 * The block run backwards, each line of timm's `Block.forward` undone:
 * \f[ \text{out} = r + \mathrm{MLP}(\mathrm{LN}_2(r)),\ r = x + \mathrm{Attn}(\mathrm{LN}_1(x))
 *     \quad\Rightarrow\quad
 *     dr = d\text{out} + \mathrm{LN}_2'^{\top}\,\mathrm{MLP}'^{\top}\, d\text{out},\quad
 *     dx \mathrel{+}= dr + \mathrm{LN}_1'^{\top}\,\mathrm{Attn}'^{\top}\, dr \f]
 * Each residual add hands its gradient to both of its inputs unchanged: the
 * gradient flows down the stream untouched and through each sub-layer beside it.
 *
 * Emits with the tracer's prefix (e.g. "grad.blocks.3."), in backward order:
 * out, mlp.fc2, mlp.gelu, mlp.fc1, norm2, resid1, attn.{proj, context,
 * probs, scaled, scores, v, k, q}, norm1.
 * @param[in,out] dx    (B, N, D) d loss / d x, added to
 * @param[in,out] dw    the parameters' gradients, added to
 * @param[in]     dout  (B, N, D) d loss / d out
 * @param[in]     x     (B, N, D) the block's input
 * @param[in]     w     the block's parameters
 * @param[in]     a     what vit_block_forward() left in its buffers for this x
 *                      (norm1, mha.q/k/v/probs/context, resid1, norm2, fc1, gelu are read)
 * @param[out]    g     scratch: the gradients of the activations, under the same names
 *                      (vit_block_acts_carve()); each is traced
 */
void vit_block_backward(float *dx, const VitBlockGrads *dw, const float *dout, const float *x,
                        const VitBlockWeights *w, const VitConfig *cfg, const VitBlockActs *a,
                        VitBlockActs *g, int B, const Tracer *tr);

/** @} */
#endif
