/**
 * @file attention.h
 * @brief Scaled dot-product attention and multi-head self-attention.
 *
 * Shape legend: B batch, N tokens, D width, H heads, Dh = D/H per head.
 *
 * One head (chapter 04):
 * \f[ \mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{D_h}} + M\right) V \f]
 * where M is an additive mask: 0 where a query may look, -inf where it may not.
 *
 * Many heads (chapter 05, timm's `Attention`): project x to Q, K, V (three
 * (D,D) weights — or equally one fused (3D,D) weight), split D into H heads of
 * Dh, attend in every head independently, merge the heads back to D and apply
 * the output projection. The steps are separate functions so a forward pass
 * can show (trace) every intermediate: q, k, v, scores, scaled, probs, context,
 * proj.
 *
 * Deliberately omitted: dropout (identity at inference), key/query
 * normalisation, fused "flash" kernels that never materialise the
 * probabilities (we always materialise them: learners want to see them).
 * Each classroom-swappable piece lives in its own file: heads.c (split/merge),
 * attention.c (the per-head maths).
 */
#ifndef VIT_ATTENTION_H
#define VIT_ATTENTION_H

#include "trace.h"
#include "util.h"

/** @defgroup attention Attention
 *  @brief \f$ \mathrm{softmax}(QK^\top/\sqrt{D_h} + M)\,V \f$, one head and many.
 *  @{
 */

/**
 * @brief Scores of every query against every key, \f$ S = Q K^\top \f$, for G independent heads.
 * @param[out] scores  (G, N, N)
 * @param[in]  q, k    (G, N, Dh)
 */
void attention_scores(float *scores, const float *q, const float *k, int G, int N, int Dh);

/**
 * @brief Scale by 1/√Dh and add the mask: \f$ S' = S / \sqrt{D_h} + M \f$.
 * @param[out] scaled  (G, N, N); may equal scores
 * @param[in]  scores  (G, N, N)
 * @param[in]  mask    (N, N) additive mask shared by all heads, or NULL
 */
void attention_scale_mask(float *scaled, const float *scores, const float *mask, int G, int N,
                          int Dh);

/**
 * @brief Weighted sum of values, \f$ O = P V \f$.
 * @param[out] out    (G, N, Dh)
 * @param[in]  probs  (G, N, N), rows sum to 1 (or 0 when fully masked)
 * @param[in]  v      (G, N, Dh)
 */
void attention_context(float *out, const float *probs, const float *v, int G, int N, int Dh);

/**
 * @brief One head, start to finish: out = softmax(Q·Kᵀ/√Dh + mask)·V.
 * @param[out] out    (N, Dh)
 * @param[out] probs  (N, N) attention probabilities (row i: where query i looks)
 * @param[in]  q, k, v (N, Dh)
 * @param[in]  mask   (N, N) additive, or NULL
 */
void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const float *mask, int N, int Dh);

/**
 * @brief A padding mask: keys at positions ≥ @p valid are hidden from every query.
 * @param[out] mask  (N, N) additive: mask[i][j] = 0 if j < valid, else -inf
 */
void attention_mask_padding(float *mask, int N, int valid);

/**
 * @brief A causal mask: query i sees keys 0…i only, nothing after it.
 * @param[out] mask  (N, N) additive: mask[i][j] = 0 if j ≤ i, else -inf
 */
void attention_mask_causal(float *mask, int N);

/**
 * @brief Split the width into heads: (B, N, H·Dh) → (B, H, N, Dh).
 *
 * PyTorch: `x.reshape(B, N, H, Dh).permute(0, 2, 1, 3)`.
 */
void heads_split(float *out, const float *x, int B, int N, int H, int Dh);

/**
 * @brief Merge heads back: (B, H, N, Dh) → (B, N, H·Dh), the inverse of heads_split().
 *
 * PyTorch: `x.transpose(1, 2).reshape(B, N, H * Dh)`.
 */
void heads_merge(float *out, const float *x, int B, int N, int H, int Dh);

/** Weights of one multi-head self-attention layer; borrowed pointers. */
typedef struct {
    const float *q_w;    /**< (D, D) query projection, rows 0…D-1 of timm's fused qkv.weight */
    const float *k_w;    /**< (D, D) key projection, rows D…2D-1 */
    const float *v_w;    /**< (D, D) value projection, rows 2D…3D-1 */
    const float *q_b;    /**< (D) or NULL */
    const float *k_b;    /**< (D) or NULL */
    const float *v_b;    /**< (D) or NULL */
    const float *proj_w; /**< (D, D) output projection */
    const float *proj_b; /**< (D) or NULL */
} AttentionWeights;

/** Working memory for mha_forward(); see mha_scratch_floats(). */
typedef struct {
    float *flat;    /**< (B, N, D) a projection before its heads are split */
    float *q;       /**< (B, H, N, Dh) */
    float *k;       /**< (B, H, N, Dh) */
    float *v;       /**< (B, H, N, Dh) */
    float *scores;  /**< (B, H, N, N) */
    float *scaled;  /**< (B, H, N, N) */
    float *probs;   /**< (B, H, N, N) */
    float *heads;   /**< (B, H, N, Dh) per-head context */
    float *context; /**< (B, N, D) heads merged */
} MhaScratch;

/** @brief Floats mha_scratch_carve() needs for these sizes. */
size_t mha_scratch_floats(int B, int N, int D, int H);
/** @brief Point the scratch buffers into @p mem (mha_scratch_floats() floats). */
void mha_scratch_carve(MhaScratch *s, float *mem, int B, int N, int D, int H);

/**
 * @brief Multi-head self-attention (timm `Attention.forward`).
 *
 * Emits, with the tracer's prefix: q, k, v (B,H,N,Dh); scores, scaled, probs
 * (B,H,N,N); context (B,N,D); proj (B,N,D).
 * @param[out] out  (B, N, D), the output projection
 * @param[in]  x    (B, N, D)
 * @param[in]  mask (N, N) additive, or NULL
 */
void mha_forward(float *out, const float *x, const AttentionWeights *w, const float *mask,
                 MhaScratch *s, int B, int N, int D, int H, const Tracer *tr);

/** @} */
#endif
