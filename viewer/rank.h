/**
 * @file rank.h
 * @brief Ranking the logits: the indices of the K largest values.
 */
#ifndef VIEWER_RANK_H
#define VIEWER_RANK_H

/** @defgroup viewer_rank Viewer ranking
 *  @brief The top K of a vector, for the logits chart.
 *  @{
 */

/**
 * @brief Indices of the @p k largest of @p n values, largest first (NaN last;
 *        ties: the lower index first).
 * @param[out] idx  min(k, n) indices
 * @return min(k, n)
 */
int top_k(int *idx, int k, const float *v, int n);

/** @} */
#endif
