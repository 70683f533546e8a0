/**
 * @file attention_distance.h
 * @brief How far attention reaches on the patch grid: each head's weight on
 *        the prefix tokens ([cls]) and on the patches at each grid distance,
 *        and its mean attention distance.
 *
 * Shape legend: H heads, N = prefix + rows·cols tokens (the prefix, [cls],
 * first, then the patches in row-major grid order), R = max(rows, cols) − 1
 * the largest grid distance.
 *
 * A query patch at (y, x) and a key patch at (y', x') are d = max(|y − y'|,
 * |x − x'|) apart on the grid (the Chebyshev distance): the keys at distance
 * at most r are the (2r + 1) × (2r + 1) window around the query, cut off at
 * the edges, that local attention keeps (attention_local()). Summing a
 * query's weights by that distance says how much of its attention any window
 * would keep. The mean attention distance (Dosovitskiy et al., 2021, figure
 * 7) is the attention-weighted Euclidean distance from the query's patch to
 * the key patches, in patch sides: small for a head that looks nearby, about
 * half the grid for one that looks everywhere.
 *
 * Only the patch queries are measured: [cls] has no place on the grid. What
 * a uniform head would give, edges included, comes from the same functions
 * called on a matrix whose every entry is 1/N.
 *
 * What it omits: distances in pixels (multiply by the patch side), the
 * queries' spread around the mean, and any test of significance.
 */
#ifndef VIT_ATTENTION_DISTANCE_H
#define VIT_ATTENTION_DISTANCE_H

/** @defgroup attention_distance Attention by distance
 *  @brief Where on the patch grid a layer's heads put their attention.
 *
 *  For patch query i at grid place \f$u_i\f$, with \f$p_{ij}\f$ its weights and
 *  \f$\mathcal P\f$ the patch keys, averaged over the \f$P\f$ patch queries:
 *  \f[ m_d = \frac1P \sum_{i} \sum_{j \in \mathcal P:\ \|u_i - u_j\|_\infty = d} p_{ij},
 *      \qquad \bar d = \frac1P \sum_i \frac{\sum_{j \in \mathcal P} p_{ij}\,\|u_i - u_j\|_2}
 *                                          {\sum_{j \in \mathcal P} p_{ij}} \f]
 *
 *  Taught in @ref chapter13 "chapter 13" (where a trained model's attention
 *  looks). Pinned by the suites @ref test_attention_distance.c "attention_distance" and
 *  @ref test_ch13_attention_at_scale.c "ch13_attention_at_scale".
 *  @{
 */

/** @brief How many bins attention_by_distance() fills per head: 1 for the prefix, then R + 1. */
int attention_distance_bins(int rows, int cols);

/**
 * @brief One layer's attention summed by grid distance, per head, averaged over the patch queries.
 *
 * Bin 0 is the weight on the prefix tokens, bin 1 + d the weight on the
 * patches exactly d rows or columns away (d = 0: the query's own patch).
 * Where every row of @p probs sums to 1, so does each head's row of @p mass.
 * The weight a local window of radius r keeps is bins 0 to 1 + r.
 * @param[out] mass      (H, attention_distance_bins(rows, cols))
 * @param[out] distance  (H) the mean attention distance in patch sides, each query's
 *                       weights on the patches renormalised to sum to 1 (a query with
 *                       no weight on any patch counts 0); NULL: not computed
 * @param[in]  probs     (H, N, N) one image's attention probabilities in one layer,
 *                       N = prefix + rows·cols
 */
void attention_by_distance(double *mass, double *distance, const float *probs, int H, int prefix,
                           int rows, int cols);

/** @} */
#endif
