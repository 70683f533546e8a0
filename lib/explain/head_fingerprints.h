/**
 * @file head_fingerprints.h
 * @brief Each attention head's fingerprint for one picture: how far it looks
 *        on the patch grid, how spread its attention is, and how much of it
 *        goes to [cls].
 *
 * Shape legend: B batch, L layers, H heads, N = prefix + rows·cols tokens
 * (the prefix, [cls], first, then the patches in row-major grid order), P =
 * rows·cols patches, F = HEAD_FINGERPRINT_COLUMNS = 3 numbers per head.
 *
 * Three numbers tell heads apart at a glance, per layer and head, each
 * averaged over the P patch queries ([cls] has no place on the grid, so it is
 * left out of all three, as the ViT paper's figure 7 leaves it out):
 *
 *  - distance: the mean attention distance in patch sides, attention_by_distance()'s
 *    (attention_distance.h): small for a head that looks nearby, about half
 *    the grid for one that looks everywhere;
 *  - entropy: −Σ_j p_ij ln p_ij over all N keys, in nats: 0 for a head that
 *    looks at one token, ln N for one that looks at all alike;
 *  - cls share: p_i,cls, the weight on the [cls] key (with a longer prefix,
 *    on the whole prefix): near 1 for a head that parks its attention there.
 *
 * What it omits: the queries' spread around each mean, the [cls] query's own
 * row, and any clustering of heads into kinds.
 */
#ifndef VIT_HEAD_FINGERPRINTS_H
#define VIT_HEAD_FINGERPRINTS_H

#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"
#include "model/config.h"

/** @defgroup head_fingerprints Head fingerprints
 *  @brief Per head: mean attention distance, mean entropy, share on [cls].
 *
 *  For patch query i at grid place \f$u_i\f$ with weights \f$p_{ij}\f$,
 *  \f$\mathcal P\f$ the patch keys, averaged over the \f$P\f$ patch queries:
 *  \f[ \bar d = \frac1P \sum_i \frac{\sum_{j \in \mathcal P} p_{ij}\,\|u_i - u_j\|_2}
 *                                    {\sum_{j \in \mathcal P} p_{ij}}, \qquad
 *      \bar H = -\frac1P \sum_i \sum_{j=1}^{N} p_{ij} \ln p_{ij}, \qquad
 *      \bar c = \frac1P \sum_i p_{i,\mathrm{cls}} \f]
 *
 *  Beside @ref chapter13 "chapter 13" (where a trained model's attention looks), which
 *  measures the mean attention distance over many pictures but not the entropy or the
 *  [cls] share: `vit fingerprints` prints the table and the viewer shows it (key F).
 *  Pinned by the suite @ref test_head_fingerprints.c "head_fingerprints".
 *  @{
 */

/** The columns of a head's fingerprint, in the order stored. */
enum {
    HEAD_FINGERPRINT_DISTANCE, /**< mean attention distance, in patch sides */
    HEAD_FINGERPRINT_ENTROPY,  /**< mean entropy of a query's weights, in nats */
    HEAD_FINGERPRINT_CLS,      /**< mean weight on the prefix ([cls]) */
    HEAD_FINGERPRINT_COLUMNS   /**< how many: 3 */
};

/** @brief The column's name as the CLI and the viewer print it: "distance", "entropy", "cls". */
const char *head_fingerprint_name(int column);

/**
 * @brief One layer's fingerprints for one image.
 * @param[out] out    (H, 3): distance, entropy, cls share per head
 * @param[in]  probs  (H, N, N) the layer's attention probabilities, N = prefix + rows·cols
 */
void head_fingerprints_layer(float *out, const float *probs, int H, int prefix, int rows,
                             int cols);

/**
 * @brief The fingerprints of every layer and head from a recorded trace's
 *        `blocks.{l}.attn.probs`, each (B, H, N, N).
 * @param[out] out  (B, L, H, 3), allocated here; left empty on failure
 * @param[in]  cfg  the model's shape: L = depth, H = heads, the grid from image and patch size
 * @return VIT_OK, or VIT_ERR_INPUT naming the first stage missing or of another shape
 */
VitStatus head_fingerprints_from_trace(Tensor *out, const VitConfig *cfg, const TraceRecorder *r,
                                       VitError *err);

/**
 * @brief The rows of a table in the order of one column, the largest first
 *        (`vit fingerprints --sort` and the viewer's S).
 *
 * Ties keep row order (a stable insertion sort: n is L·H, at most a few hundred).
 * @param[out] order  (n) row indices
 * @param[in]  table  (n, 3) fingerprints, e.g. one image's (L·H, 3)
 * @param[in]  column HEAD_FINGERPRINT_DISTANCE … _CLS, or −1: row order (layer, then head)
 */
void head_fingerprints_order(int *order, const float *table, int n, int column);

/** @} */
#endif
