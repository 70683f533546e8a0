/**
 * @file score_parts.h
 * @brief One attention score taken apart: the arithmetic from q_i and k_j to
 *        the probability, each step's number, checked against the recorded stages.
 *
 * Shape legend: B batch, H heads, N tokens ([cls] first), Dh = D/H per head.
 *
 * A cell of an attention layer is (image b, head h, query i, key j). Its
 * probability is chapters 01 to 03 in a row:
 *
 *     products_d = q_i[d] · k_j[d]                    d = 0 … Dh−1  (chapter 01)
 *     score      = Σ_d products_d                     the `scores` stage's (i, j)
 *     scaled     = score · scale + mask_ij            scale 1/√Dh   (chapter 02)
 *     row max    = max_j' scaled_ij'                  over the query's row
 *     exp        = exp(scaled − row max)                            (chapter 03)
 *     row sum    = Σ_j' exp(scaled_ij' − row max)
 *     prob       = exp / row sum                      the `probs` stage's (i, j)
 *
 * score_parts() computes them from the recorded q and k (`blocks.{l}.attn.q`,
 * `.k`, @ref contract) with the attention's options; score_parts_check() holds
 * them against the recorded `scores`, `scaled` and `probs`, within the error
 * float32 arithmetic allows, so a learner (the viewer's neuron view, key N;
 * `vit score`) sees the recorded numbers are what the formulas give.
 *
 * What it omits: heads switched off (their recorded probabilities are 0,
 * which the check then reports as a difference), and the value side (probs · V).
 */
#ifndef VIT_SCORE_PARTS_H
#define VIT_SCORE_PARTS_H

#include <stdbool.h>

#include "attention/attention.h"
#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"

/** @defgroup score_parts One score taken apart
 *  @brief The arithmetic of one attention probability, from q_i and k_j, step by step.
 *
 *  \f[ s_{ij} = \sum_{d} q_{i,d}\,k_{j,d}, \qquad
 *      \tilde s_{ij} = \frac{s_{ij}}{\sqrt{D_h}} + m_{ij}, \qquad
 *      p_{ij} = \frac{e^{\tilde s_{ij} - \max_{j'} \tilde s_{ij'}}}
 *                    {\sum_{j'} e^{\tilde s_{ij'} - \max_{j'} \tilde s_{ij'}}} \f]
 *
 *  Chapters @ref chapter01 "01" (the dot product), @ref chapter02 "02" (the
 *  scale) and @ref chapter03 "03" (the softmax) on one cell of a real pass:
 *  `vit score` prints it and the viewer shows it (key N on an attention stage).
 *  Pinned by the suite @ref test_score_parts.c "score_parts"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** Which score: an image of the batch, a head, a query token and a key token. */
typedef struct {
    int image; /**< b, 0 … B−1 */
    int head;  /**< h, 0 … H−1 */
    int query; /**< i, 0 … N−1 (0: [cls]) */
    int key;   /**< j, 0 … N−1 (0: [cls]) */
} ScoreCell;

/** The parts of one score (score_parts()); free with score_parts_free(). */
typedef struct {
    int Dh;          /**< the head's width, e.g. 16 */
    int N;           /**< the tokens, e.g. 50 */
    float *q;        /**< (Dh) q_i, a copy of the recorded row */
    float *k;        /**< (Dh) k_j, a copy of the recorded row */
    float *products; /**< (Dh) q_i ⊙ k_j */
    float *row;      /**< (N) the query's scaled scores, every key (the softmax's input) */
    float score;     /**< Σ_d products_d: the `scores` stage's (i, j) */
    float scale;     /**< what multiplies it, 1/√Dh unless the options say otherwise */
    float mask;      /**< what the masks add: 0 kept, −inf hidden */
    float scaled;    /**< score · scale + mask: the `scaled` stage's (i, j) */
    float row_max;   /**< the largest of row (−inf when every key is hidden) */
    int row_argmax;  /**< its key, the first when tied */
    float exp;       /**< exp(scaled − row_max) */
    float row_sum;   /**< Σ_j' exp(row_j' − row_max), summed in double as softmax() does */
    float prob;      /**< exp / row_sum: the `probs` stage's (i, j) (0 when every key is hidden) */
    float bound;     /**< the rounding float32 allows on score: Dh · ε · Σ_d |products_d| */
    float row_bound; /**< the largest such bound on the row's scaled scores, times the scale */
} ScoreParts;

/**
 * @brief Take one score apart from the recorded q and k.
 *
 * The dot products are summed in double and rounded once, so the parts are
 * as exact as float32 can hold them; the recorded stages (a matrix product
 * in float32) differ from them by rounding only, which ScoreParts::bound and
 * ScoreParts::row_bound bound.
 * @param[out] parts  filled; its arrays are new (score_parts_free())
 * @param[in]  q, k   (B, H, N, Dh) the layer's `attn.q` and `attn.k`
 * @param[in]  opt    the scale and masks the layer ran with, or NULL (a ViT's: 1/√Dh, none)
 * @param[in]  at     the cell
 * @param[out] err    the message on failure
 * @return VIT_ERR_INPUT when q and k are not (B, H, N, Dh) alike or the cell is outside them
 */
VitStatus score_parts(ScoreParts *parts, const Tensor *q, const Tensor *k,
                      const AttentionOptions *opt, ScoreCell at, VitError *err);

/** @brief Free the arrays and zero @p parts. */
void score_parts_free(ScoreParts *parts);

/** One part held against its recorded stage. */
typedef struct {
    float recorded; /**< the stage's value at the cell */
    float diff;     /**< part − recorded */
    float tol;      /**< how far rounding may take them apart */
    bool matches;   /**< |diff| <= tol */
} PartCheck;

/** The three parts a pass records: Q·Kᵀ, the scaled scores, the probabilities. */
typedef struct {
    PartCheck score;  /**< against `attn.scores` */
    PartCheck scaled; /**< against `attn.scaled` */
    PartCheck prob;   /**< against `attn.probs` */
} ScoreChecks;

/**
 * @brief Hold the parts against a pass's recorded values at the cell.
 *
 * Tolerances, from float32's rounding (ε = FLT_EPSILON): the score within
 * ScoreParts::bound; the scaled score within bound · scale + ε |scaled|; the
 * probability within p · (2 · row_bound + 8ε) + 1e-12 (each scaled score's
 * error moves p by at most p times twice the largest, and exp and the
 * division round a few times).
 * @param[out] checks   the three comparisons
 * @param[in]  parts    from score_parts()
 * @param[in]  scores, scaled, probs  (B, H, N, N) the recorded stages (any may be NULL:
 *                      its check says it matches nothing, recorded NaN)
 * @param[in]  at       the cell parts was made for
 * @return true when every stage given matches
 */
bool score_parts_check(ScoreChecks *checks, const ScoreParts *parts, const Tensor *scores,
                       const Tensor *scaled, const Tensor *probs, ScoreCell at);

/**
 * @brief The recorded stage of layer @p layer an explanation of its scores reads:
 *        "blocks.{layer}.attn.{what}", what one of q, k, scores, scaled, probs.
 * @return @p buf
 */
char *score_parts_stage(char *buf, size_t size, int layer, const char *what);

/**
 * @brief score_parts() and score_parts_check() on a recorded pass's layer @p layer
 *        (a ViT's options: scale 1/√Dh, no mask).
 * @param[out] parts   filled (score_parts_free())
 * @param[out] checks  against the layer's recorded scores, scaled and probs
 * @return VIT_ERR_INPUT when a stage is missing (the message names it) or the cell is outside
 */
VitStatus score_parts_from_trace(ScoreParts *parts, ScoreChecks *checks, const TraceRecorder *r,
                                 int layer, ScoreCell at, VitError *err);

/** @} */
#endif
