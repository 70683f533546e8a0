/**
 * @file patching.h
 * @brief Activation patching: one token's row of picture B's residual stream
 *        put into picture A's pass, and what A's answer becomes.
 *
 * Shape legend: L blocks, T = N tokens ([cls] first, then the P patches in
 * reading order), D width, Y classes.
 *
 * Two pictures, A and B. Both run through the model. Then A's pass is run
 * again from the output of block l with one row changed: row t of
 * `blocks.{l}.out` is B's instead of A's, and the rest of the model (blocks
 * l + 1 … L − 1, the final LayerNorm, the head) runs on from there
 * (vit_forward_from()). The measure is the probability of A's class:
 * \f[ p_{lt} = \mathrm{softmax}\big(f_{>l}(x^A_l \text{ with row } t \leftarrow x^B_{l,t})\big)_c \f]
 * Over every (l, t) that is an (L, T) grid: where B's information, put into
 * A, changes A's answer ("causal tracing", K. Meng et al., "Locating and
 * Editing Factual Associations in GPT", 2022; "interchange interventions",
 * A. Geiger et al., 2021). Patching every row of a block gives B's stream,
 * hence B's answer, trivially; one token at a time says which token carries
 * what. A cell "flips" when the patched pass's top class is no longer A's.
 *
 * That is 2 + L·T passes, each of one picture and only of the blocks after
 * l: 6 · 50 = 300 part-passes for the shipped Fashion-MNIST model.
 *
 * What it omits: patching other stages than a block's output (a head's
 * context, the attention probabilities), several tokens at once in the grid
 * (patching_one() can), noising A instead of using a second picture, and
 * batches (A and B are one picture each).
 */
#ifndef VIT_PATCHING_H
#define VIT_PATCHING_H

#include "base/tensor.h"
#include "base/util.h"
#include "model/vit.h"

/** @defgroup patching Activation patching
 *  @brief One token of B's residual stream put into A's pass: A's class probability after.
 *
 *  With \f$x^A_l, x^B_l\f$ the two pictures' streams after block l (each (T, D)),
 *  \f$f_{>l}\f$ the blocks after l, the final LayerNorm and the head, and c A's class:
 *  \f[ p_{lt} = \mathrm{softmax}\big(f_{>l}(x^A_l + e_t\,(x^B_{l,t} - x^A_{l,t}))\big)_c \f]
 *
 *  Asked as in @ref chapter12 "chapter 12" (what did the model learn?), of
 *  the residual stream; shown by `vit patch`. Pinned by the suite
 *  @ref test_patching.c "patching" against PyTorch (@ref answer_keys "the answer keys").
 *  @{
 */

/** What patching_grid() measured for one pair of pictures. */
typedef struct {
    int layers;     /**< L */
    int tokens;     /**< T = N, [cls] first */
    int classes;    /**< Y */
    int a_class;    /**< c: the class measured (A's predicted one unless chosen) */
    int b_class;    /**< B's predicted class */
    double a_prob;  /**< p_c of A unpatched */
    double b_prob;  /**< p_c of B unpatched (A's class in B) */
    float *prob;    /**< (L, T) p_c after row t of block l's output is B's */
    int *top;       /**< (L, T) the patched pass's predicted class (≠ a_class: a flip) */
} Patching;

/**
 * @brief The residual stream after every block, of one picture: one forward pass.
 * @param[out] streams  (L, T, D) `blocks.{l}.out` for l = 0 … L−1
 * @param[in]  input    (1, C, S, S) normalised pixels
 * @return as vit_forward()
 */
VitStatus patching_streams(float *streams, Vit *vit, const Tensor *input, VitError *err);

/**
 * @brief One patched pass: A's stream after block @p layer with the rows
 *        @p rows replaced by B's, run on to the logits (vit_forward_from()).
 * @param[out] probs   (Y) the softmax of the patched pass's logits, in double
 * @param[in]  a_out   (T, D) A's `blocks.{layer}.out`
 * @param[in]  b_out   (T, D) B's `blocks.{layer}.out`
 * @param[in]  layer   0 … L−1
 * @param[in]  rows    (count) the tokens whose row is B's, each 0 … T−1
 * @return VIT_ERR_USAGE for a layer or a token outside the model; else as vit_forward_from()
 */
VitStatus patching_one(double *probs, Vit *vit, const float *a_out, const float *b_out, int layer,
                       const int *rows, int count, VitError *err);

/**
 * @brief Every (block, token) patched in turn, one at a time: the (L, T) grid
 *        of A's class probability and of the patched answer.
 * @param[out] out    filled (patching_free() it, also after a failure)
 * @param[in]  a      (1, C, S, S) picture A, normalised
 * @param[in]  b      (1, C, S, S) picture B, normalised
 * @param[in]  cls    the class measured, or −1: the one the model predicts for A
 * @return VIT_ERR_INPUT for a class outside [0, Y) or a batch other than 1; else as vit_forward()
 */
VitStatus patching_grid(Patching *out, Vit *vit, const Tensor *a, const Tensor *b, int cls,
                        VitError *err);

/**
 * @brief Of block @p layer's row: how many tokens flip A's answer, and the
 *        token whose patch changes p_c the most (largest |p_lt − p_A|).
 * @return the number of flips
 */
int patching_layer_summary(const Patching *pt, int layer, int *largest_token);

/** @brief Free what patching_grid() allocated and zero @p pt (safe on a zeroed one). */
void patching_free(Patching *pt);

/** @} */
#endif
