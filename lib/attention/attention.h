/**
 * @file attention.h
 * @brief Scaled dot-product attention and multi-head self-attention.
 *
 * Shape legend: B batch, N tokens, D width, H heads, Dh = D/H per head.
 *
 * One head (chapter 04):
 * \f[ \mathrm{Attention}(Q,K,V) =
 *     \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{D_h}} + \mathrm{mask}\right) V \f]
 * where the mask is additive: 0 where a query may look, -inf where it may not
 * (PyTorch's `scores.masked_fill(mask == 0, float("-inf"))` is the same
 * thing). Q·Kᵀ is lib's matmul_bt(), timm's `q @ k.transpose(-2, -1)`,
 * MindSpore's `ops.BatchMatMul(transpose_b=True)(q, k)`.
 *
 * Many heads (chapter 05, timm's `Attention`): self-attention, Q, K and V
 * all projected from the same tokens x (three (D,D) weights, or equally one
 * fused (3D,D) weight), D split into H heads of Dh, attention in every head
 * independently, the heads merged back to D and the output projection
 * applied. The steps are separate functions so a forward pass can show
 * (trace) every intermediate: q, k, v, scores, scaled, probs, context, proj.
 *
 * The scale and the masks are options (::AttentionOptions; NULL gives ViT's
 * defaults: scale 1/√Dh, no mask): the scale is timm's `qk_scale`; a mask is
 * an (N, N) one shared by the batch (causal, a window), a key-padding mask
 * (B, N) with one row per sequence, or both.
 *
 * Backward: each piece has its `*_backward` beside it (attention_backward.c,
 * heads_backward.c; the softmax's is softmax_backward() in ops.h), which adds
 * the gradients of its inputs to their buffers; mha_backward()
 * (mha_backward.c) chains them for the whole layer.
 *
 * Deliberately omitted: dropout (identity at inference), key/query
 * normalisation, fused "flash" kernels that never materialise the
 * probabilities (we always materialise them: learners want to see them).
 * Each classroom-swappable piece lives in its own file: heads.c (split/merge),
 * attention.c (the per-head maths), mask.c (the masks), mha.c (the layer).
 */
#ifndef VIT_ATTENTION_H
#define VIT_ATTENTION_H

#include <math.h>

#include "base/trace.h"
#include "base/util.h"
#include "gemm/gemm_lowp.h"

/** @defgroup attention Attention
 *  @brief \f$ \mathrm{softmax}(QK^\top/\sqrt{D_h} + \mathrm{mask})\,V \f$, one head and many.
 *
 *  Taught in @ref chapter02 "chapter 02" (the scale), @ref chapter04 "chapter 04" (one head),
 *  @ref chapter05 "chapter 05" (many heads), @ref chapter13 "chapter 13" (without the N × N
 *  matrix, and two approximations). Pinned by the suites @ref test_attention.c "attention",
 *  @ref test_mha.c "mha", @ref test_attention_online.c "attention_online",
 *  @ref test_attention_approx.c "attention_approx",
 *  @ref test_ch04_attention.c "ch04_attention", @ref test_ch05_multi_head.c "ch05_multi_head"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * @brief How attention scales and masks its scores (timm's `qk_scale`, PyTorch's masks).
 *
 * A NULL pointer, or a
 * zero-initialised struct, means what a ViT uses: scale 1/√Dh and no mask.
 * Both masks are additive (0 keeps a score, -inf hides it) and may be given
 * together; they are added to the scaled scores (the trace's `scaled`).
 */
typedef struct {
    float scale; /**< multiplies Q·Kᵀ; 0 means 1/√Dh, as timm's `qk_scale or head_dim ** -0.5` */
    const float *mask;             /**< (N, N) shared by every sequence and head (causal, a
                                        window), or NULL (PyTorch's `attn_mask`) */
    const float *key_padding_mask; /**< (B, N): row b is added to every query row of
                                        sequence b in every head, or NULL (PyTorch's
                                        `key_padding_mask`, there True where hidden) */
} AttentionOptions;

/** @brief The scale @p opt asks for: its `scale`, or 1/√Dh when that is 0 or @p opt is NULL. */
float attention_scale(const AttentionOptions *opt, int Dh);

/**
 * @brief Scores of every query against every key, \f$ S = Q K^\top \f$, for G independent heads.
 *
 * lib's matmul_bt() per head: timm's `q @ k.transpose(-2, -1)`, MindSpore's
 * `ops.BatchMatMul(transpose_b=True)(q, k)`.
 * @param[out] scores  (G, N, N)
 * @param[in]  q, k    (G, N, Dh)
 */
void attention_scores(float *scores, const float *q, const float *k, int G, int N, int Dh);

/**
 * @brief Backward of attention_scores():
 *        \f$ dQ \mathrel{+}= dS\,K,\ dK \mathrel{+}= dS^\top Q \f$ per head.
 * @param[in,out] dq       (G, N, Dh), added to; or NULL
 * @param[in,out] dk       (G, N, Dh), added to; or NULL
 * @param[in]     dscores  (G, N, N) gradient of the scores
 * @param[in]     q, k     (G, N, Dh) the forward's inputs
 */
void attention_scores_backward(float *dq, float *dk, const float *dscores, const float *q,
                               const float *k, int G, int N, int Dh);

/**
 * @brief Scale and mask the scores of B sequences × H heads:
 *        \f$ S'_{bh} = s\,S_{bh} + \mathrm{mask} + \mathrm{key\_padding\_mask}_b \f$.
 * @param[out] scaled  (B, H, N, N); may equal scores
 * @param[in]  scores  (B, H, N, N)
 * @param[in]  opt     the scale s (default 1/√Dh) and the masks, or NULL for the defaults
 */
void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh);

/**
 * @brief Backward of attention_scale_mask(): \f$ dS \mathrel{+}= s\, dS' \f$.
 *
 * The masks are constants added to the scores: they pass no gradient, and
 * every score gets s times its gradient, hidden ones included, as PyTorch's
 * autograd gives (a hidden score's probability is 0, so softmax_backward()
 * hands it a gradient of 0 anyway).
 * @param[in,out] dscores  (B, H, N, N), added to
 * @param[in]     dscaled  (B, H, N, N) gradient of the scaled scores
 * @param[in]     opt      the forward's options (only the scale is used), or NULL for 1/√Dh
 */
void attention_scale_mask_backward(float *dscores, const float *dscaled,
                                   const AttentionOptions *opt, int B, int H, int N, int Dh);

/**
 * @brief Weighted sum of values, \f$ O = P V \f$.
 * @param[out] out    (G, N, Dh)
 * @param[in]  probs  (G, N, N), rows sum to 1 (or 0 when fully masked)
 * @param[in]  v      (G, N, Dh)
 */
void attention_context(float *out, const float *probs, const float *v, int G, int N, int Dh);

/** Where the online softmax of one row stands: its running maximum and sum. */
typedef struct {
    float max; /**< the largest score seen so far; -INFINITY before any; NaN once broken */
    float sum; /**< \f$\sum_j e^{s_j - \text{max}}\f$ over the scores seen so far */
} OnlineSoftmax;

/** The state before a row's first block. */
#define ONLINE_SOFTMAX_START ((OnlineSoftmax){.max = -INFINITY, .sum = 0.0f})

/**
 * @brief Take in one block of a row's scores: the online softmax's step.
 *
 * \f[ m' = \max(m, \max_j s_j),\quad c = e^{m - m'},\quad
 *     l' = c\,l + \sum_j e^{s_j - m'} \f]
 * On return @p s holds the block's weights \f$e^{s_j - m'}\f$ and @p st is
 * (m', l'). The caller multiplies the output it has accumulated so far by the
 * returned c, then adds \f$\sum_j e^{s_j - m'} v_j\f$; after the last block,
 * out = acc / l is softmax(s)·V. As softmax() does: hidden scores (-inf) weigh
 * 0, a row hidden so far keeps max = -inf, sum = 0 and returns c = 1, and a
 * NaN or +inf score makes the state, the weights and every c after it NaN.
 * @param[in,out] st  the row's state (ONLINE_SOFTMAX_START before its first block)
 * @param[in,out] s   (n) the block's scaled, masked scores; out: their weights
 * @param[in]     n   scores in the block
 * @return c, the factor for the output accumulated before this block
 */
float online_softmax_block(OnlineSoftmax *st, float *s, int n);

/**
 * @brief Attention without the N × N matrix: out = softmax(s·QKᵀ + masks)·V for
 *        every head, the softmax computed online over blocks of @p key_block
 *        keys (running maximum, running sum, rescaled partial outputs).
 *
 * Exact: it equals attention_scores(), attention_scale_mask(), softmax() and
 * attention_context() in a row to float rounding (tested to 1e-5 of the
 * largest output), fully hidden rows giving 0 and NaN or +inf scores NaN as
 * softmax() does, but keeps only one block of scores per head instead of the
 * (N, N) matrices; attention_online.c says how.
 * @param[out] out        (B, H, N, Dh), the heads' context before they are merged
 * @param[in]  q, k, v    (B, H, N, Dh)
 * @param[in]  opt        the scale and masks, as attention_scale_mask(); NULL: 1/√Dh, none
 * @param[in]  key_block  keys per block, ≥ 1 (N or more: the whole row at once)
 */
void attention_online(float *out, const float *q, const float *k, const float *v,
                      const AttentionOptions *opt, int B, int H, int N, int Dh, int key_block);

/**
 * @brief The window of local attention as an additive mask: which keys each
 *        query of a patch grid may see.
 *
 * The N = prefix + rows·cols tokens are @p prefix leading tokens ([cls]) and
 * then a rows × cols grid of patches, row by row. A prefix token sees every
 * key and every query sees the prefix; patch (y, x) sees patch (y', x') when
 * \f$ |y - y'| \le r \f$ and \f$ |x - x'| \le r \f$, a (2r+1) × (2r+1)
 * window cut off at the grid's edges. rows = 1 gives a band in token order.
 * @param[out] mask    (N, N): 0 where query i may see key j, -inf where not
 * @param[in]  prefix  leading tokens that see and are seen by all, ≥ 0
 * @param[in]  rows, cols  the patch grid, each ≥ 1
 * @param[in]  radius  r ≥ 0; r ≥ max(rows, cols) − 1 hides nothing
 */
void attention_mask_window(float *mask, int prefix, int rows, int cols, int radius);

/**
 * @brief Local-window (sparse) attention: each query attends only to the keys
 *        of its window (attention_mask_window()), and only those are computed.
 *
 * \f[ \mathrm{out}_i = \sum_{j \in W(i)} \mathrm{softmax}_{j \in W(i)}\big(s\,q_i\cdot k_j
 *     + \mathrm{mask}_{ij} + \mathrm{pad}_{bj}\big)\, v_j \f]
 * Equal (to float rounding) to exact attention with the window mask added,
 * but costs N·|W|·Dh instead of N²·Dh, |W| ≤ prefix + (2r+1)², and keeps one
 * window of scores per query instead of an N × N matrix. An approximation of
 * full attention: a model trained with full attention reads keys outside the
 * window too. Hidden rows give 0 and NaN or +inf scores NaN, as softmax() does.
 * @param[out] out     (B, H, N, Dh), N = prefix + rows·cols
 * @param[in]  q, k, v (B, H, N, Dh)
 * @param[in]  opt     scale and masks as attention_scale_mask() (an (N, N) mask is
 *                     added inside the window); NULL: 1/√Dh, none
 * @param[in]  prefix, rows, cols, radius  the window, as attention_mask_window()
 */
void attention_local(float *out, const float *q, const float *k, const float *v,
                     const AttentionOptions *opt, int B, int H, int prefix, int rows, int cols,
                     int Dh, int radius);

/**
 * @brief Linear attention (Katharopoulos et al., 2020) with the feature map
 *        \f$ \phi(x) = \mathrm{elu}(x) + 1 \f$: no softmax, no N × N matrix.
 *
 * \f[ \mathrm{out}_i = \frac{\phi(q_i)^\top \sum_j \phi(k_j)\, v_j^\top}
 *                          {\phi(q_i)^\top \sum_j \phi(k_j)}, \qquad
 *     \phi(x) = \begin{cases} x + 1 & x > 0 \\ e^{x} & x \le 0 \end{cases} \f]
 * elementwise, i.e. \f$ \phi(Q)\,(\phi(K)^\top V) \f$ normalised by
 * \f$ \phi(Q)\,(\phi(K)^\top \mathbf 1) \f$. The sums over keys are computed
 * once per head, a (Dh, Dh) matrix and a (Dh) vector, so the cost is N·Dh²
 * and the memory Dh² + Dh per head, whatever N. It is another function than
 * softmax attention, not an approximation that converges to it: the weights
 * \f$ \phi(q_i)\cdot\phi(k_j) \f$ replace \f$ e^{q_i\cdot k_j/\sqrt{D_h}} \f$.
 * No scale is applied. Sums in double. A query whose keys are all left out
 * gets 0; a NaN in q or k makes the outputs it reaches NaN.
 * @param[out] out  (B, H, N, Dh)
 * @param[in]  q, k, v (B, H, N, Dh)
 * @param[in]  key_padding_mask  (B, N): a key whose entry is -inf is left out of
 *                               its sequence (any other value keeps it), or NULL
 */
void attention_linear(float *out, const float *q, const float *k, const float *v,
                      const float *key_padding_mask, int B, int H, int N, int Dh);

/**
 * @brief Backward of attention_context():
 *        \f$ dP \mathrel{+}= dO\,V^\top,\ dV \mathrel{+}= P^\top dO \f$ per head.
 * @param[in,out] dprobs  (G, N, N), added to; or NULL
 * @param[in,out] dv      (G, N, Dh), added to; or NULL
 * @param[in]     dout    (G, N, Dh) gradient of the output
 * @param[in]     probs   (G, N, N) the forward's probabilities
 * @param[in]     v       (G, N, Dh) the forward's values
 */
void attention_context_backward(float *dprobs, float *dv, const float *dout, const float *probs,
                                const float *v, int G, int N, int Dh);

/**
 * @brief One head, start to finish: out = softmax(s·Q·Kᵀ + mask)·V.
 * @param[out] out    (N, Dh)
 * @param[out] probs  (N, N) attention probabilities (row i: where query i looks)
 * @param[in]  q, k, v (N, Dh)
 * @param[in]  opt    scale and masks (a key-padding mask is (1, N) here), or NULL: 1/√Dh, none
 */
void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const AttentionOptions *opt, int N, int Dh);

/**
 * @brief Entropy of each row of an attention matrix, \f$ -\sum_j p_j \ln p_j \f$ in nats.
 *
 * 0 when a query puts all its weight on one key, ln N when it spreads it
 * evenly; a zero weight adds nothing (p ln p → 0). Summed in double.
 * @param[out] out    (rows)
 * @param[in]  probs  (rows, N)
 */
void attention_entropy(float *out, const float *probs, int rows, int N);

/**
 * @brief A padding mask shared by every query: keys at positions ≥ @p valid are hidden.
 * @param[out] mask  (N, N) additive: mask[i][j] = 0 if j < valid, else -inf
 */
void attention_mask_padding(float *mask, int N, int valid);

/**
 * @brief A key-padding mask, one row per sequence: sequence b has @p lengths[b]
 *        real tokens, the rest of its N are padding.
 *
 * PyTorch: `torch.zeros(B, N).masked_fill(keep == 0, float("-inf"))` with
 * `keep[b, j] = j < lengths[b]`.
 * @param[out] mask     (B, N) additive: mask[b][j] = 0 if j < lengths[b], else -inf
 * @param[in]  lengths  (B) real tokens per sequence, each 0…N
 */
void attention_mask_key_padding(float *mask, const int *lengths, int B, int N);

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
 * @brief Backward of heads_split(): a permutation, so its gradient is the
 *        inverse one, \f$ dx \mathrel{+}= \mathrm{merge}(\text{dout}) \f$.
 * @param[in,out] dx    (B, N, H·Dh), added to
 * @param[in]     dout  (B, H, N, Dh)
 */
void heads_split_backward(float *dx, const float *dout, int B, int N, int H, int Dh);

/**
 * @brief Split a fused projection into q, k and v heads: (B, N, 3·H·Dh) → (3, B, H, N, Dh).
 *
 * timm: `qkv.reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)`, then
 * `q, k, v = qkv.unbind(0)`: q is out[0 … B·H·N·Dh), k and v the next two
 * blocks of that size. For B = 1 this equals heads_split() into 3H heads;
 * for B > 1 it does not (that would give (B, 3, H, N, Dh)).
 * @param[out] out  (3, B, H, N, Dh)
 * @param[in]  qkv  (B, N, 3·H·Dh), each token's row laid out [q | k | v], each third [head 0 | …]
 */
void heads_split_qkv(float *out, const float *qkv, int B, int N, int H, int Dh);

/**
 * @brief Merge heads back: (B, H, N, Dh) → (B, N, H·Dh), the inverse of heads_split().
 *
 * PyTorch: `x.transpose(1, 2).reshape(B, N, H * Dh)`.
 */
void heads_merge(float *out, const float *x, int B, int N, int H, int Dh);

/**
 * @brief Backward of heads_merge(): \f$ dx \mathrel{+}= \mathrm{split}(\text{dout}) \f$.
 * @param[in,out] dx    (B, H, N, Dh), added to
 * @param[in]     dout  (B, N, H·Dh)
 */
void heads_merge_backward(float *dx, const float *dout, int B, int N, int H, int Dh);

/**
 * @brief Weights of one multi-head self-attention layer; borrowed pointers.
 *
 * Besides the weights, one switch that is not a parameter: `head_off`
 * turns heads off for a "what if" pass (vit_set_head_off()).
 */
typedef struct {
    const float *q_w;    /**< (D, D) query projection, rows 0…D-1 of timm's fused qkv.weight */
    const float *k_w;    /**< (D, D) key projection, rows D…2D-1 */
    const float *v_w;    /**< (D, D) value projection, rows 2D…3D-1 */
    const float *q_b;    /**< (D) or NULL */
    const float *k_b;    /**< (D) or NULL */
    const float *v_b;    /**< (D) or NULL */
    const float *proj_w; /**< (D, D) output projection */
    const float *proj_b; /**< (D) or NULL */
    const bool *head_off; /**< (H) true: that head is switched off, its probabilities
                               multiplied by 0 after the softmax (Hugging Face's
                               `head_mask` of 0), so its context is 0 and it adds
                               nothing through proj; false: untouched. NULL: all on */
    const LowpWeight *q_lowp;    /**< q_w in bf16 or int8 (vit_set_precision()), or NULL:
                                      q_w itself, in float. Not a parameter: a copy */
    const LowpWeight *k_lowp;    /**< k_w's copy, or NULL */
    const LowpWeight *v_lowp;    /**< v_w's copy, or NULL */
    const LowpWeight *proj_lowp; /**< proj_w's copy, or NULL */
} AttentionWeights;

/**
 * @brief The gradients of one attention layer's weights, d loss / d W: the
 *        parameter fields of AttentionWeights, same names, same order, same
 *        shapes, but writable (mha_backward() adds to them).
 *
 * No head_off: it is a switch, not a parameter, so it has no gradient.
 */
typedef struct {
    float *q_w;    /**< (D, D) */
    float *k_w;    /**< (D, D) */
    float *v_w;    /**< (D, D) */
    float *q_b;    /**< (D) or NULL: no gradient wanted */
    float *k_b;    /**< (D) or NULL */
    float *v_b;    /**< (D) or NULL */
    float *proj_w; /**< (D, D) */
    float *proj_b; /**< (D) or NULL */
} AttentionGrads;

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
    bool keep_matrices; /**< true (mha_scratch_carve()'s default): scores, scaled and probs
                             are computed and kept, as the trace and the backward read
                             them; false: an untraced pass runs attention_online() and
                             never writes them (a model's inference buffers, vit_memory.c) */
} MhaScratch;

/** Keys per block when mha_forward() runs attention_online(). */
#define MHA_KEY_BLOCK 128

/** @brief Floats mha_scratch_carve() needs for these sizes. */
size_t mha_scratch_floats(int B, int N, int D, int H);
/** @brief Point the scratch buffers into @p mem (mha_scratch_floats() floats). */
void mha_scratch_carve(MhaScratch *s, float *mem, int B, int N, int D, int H);

/**
 * @brief Multi-head self-attention (timm `Attention.forward`).
 *
 * Emits, with the tracer's prefix: q, k, v (B,H,N,Dh); scores, scaled, probs
 * (B,H,N,N); context (B,N,D); proj (B,N,D). A head that w->head_off switches
 * off shows probs of 0 (its rows sum to 0, not 1) and a context band of 0;
 * the other heads are computed exactly as with every head on.
 *
 * When nobody listens (@p tr NULL or without a function) and s->keep_matrices
 * is false, the softmax and the product with V are attention_online()'s, over
 * blocks of MHA_KEY_BLOCK keys: equal to float rounding, and the (N, N)
 * buffers are never written (so their pages are never touched).
 * @param[out] out  (B, N, D), the output projection
 * @param[in]  x    (B, N, D)
 * @param[in]  opt  scale and masks: an (N, N) mask, a (B, N) key-padding mask;
 *                  NULL for a ViT's attention (1/√Dh, no mask)
 */
void mha_forward(float *out, const float *x, const AttentionWeights *w,
                 const AttentionOptions *opt, MhaScratch *s, int B, int N, int D, int H,
                 const Tracer *tr);

/**
 * @brief Backward of mha_forward(): the gradient of the tokens and of the
 *        four projections, from the gradient of the output.
 *
 * timm's `Attention.forward` undone line by line: the output projection,
 * the heads' merge, \f$O = PV\f$, the softmax, the scale (and masks), \f$S =
 * QK^\top\f$, the split into heads, and the q, k and v projections, whose
 * three input gradients all add up in @p dx (the same tokens fed all three).
 * Emits with the tracer's prefix (e.g. "grad.blocks.3.attn."), in backward
 * order: proj, context, probs, scaled, scores, v, k, q.
 * @param[in,out] dx    (B, N, D) d loss / d x, added to
 * @param[in,out] dw    the gradients, added to (a NULL bias gradient is skipped)
 * @param[in]     dout  (B, N, D) d loss / d out
 * @param[in]     x     (B, N, D) the forward's input
 * @param[in]     w     the weights
 * @param[in]     opt   the forward's scale and masks, or NULL
 * @param[in]     s     the forward's buffers for this x (q, k, v, probs, context are read)
 * @param[out]    g     scratch: the gradients, each under its activation's name
 */
void mha_backward(float *dx, const AttentionGrads *dw, const float *dout, const float *x,
                  const AttentionWeights *w, const AttentionOptions *opt, const MhaScratch *s,
                  MhaScratch *g, int B, int N, int D, int H, const Tracer *tr);

/** @} */
#endif
