/**
 * @file position_similarity.h
 * @brief What the position embeddings learned: the cosine similarity of one
 *        patch position's embedding with every other's, on the patch grid.
 *
 * Shape legend: N = prefix + rows·cols positions (the prefix, [cls], first,
 * then the patches in row-major grid order), D width, P = rows·cols patches.
 *
 * A ViT is told where each patch is only by the vector added to it, `pos_embed`.
 * Nothing in training says that neighbours should get alike vectors, yet
 * they do: drawn on the grid, one position's similarity with the others is
 * high along its own row and column (Dosovitskiy et al., 2021, figure 7,
 * centre), the model having found the grid's 2-D structure in the pictures.
 *
 * What it omits: the [cls] position (it has no place on the grid), and
 * position embeddings that are not learned vectors (sinusoids, relative or
 * rotary positions).
 */
#ifndef VIT_POSITION_SIMILARITY_H
#define VIT_POSITION_SIMILARITY_H

/** @defgroup position_similarity Position similarity
 *  @brief The cosine of one patch position's embedding with each patch position's.
 *
 *  With \f$e_i\f$ the position embedding of patch i:
 *  \f[ s_j = \frac{e_q \cdot e_j}{\|e_q\|\,\|e_j\|}, \qquad s_q = 1 \f]
 *
 *  Beside @ref chapter11 "chapter 11", which measures the mean similarity of neighbouring
 *  positions and of far ones, not the grid: `vit positions` prints it and the viewer
 *  draws it on the `embed` stage (key E). Pinned by the suite @ref test_position_similarity.c "position_similarity".
 *  @{
 */

/**
 * @brief Patch @p q's position embedding against every patch's, as cosines.
 * @param[out] sim        (P) in [−1, 1]; 0 against a zero vector
 * @param[in]  pos_embed  (prefix + P, D) the model's position embeddings, the prefix first
 * @param[in]  q          the patch, 0 … P − 1 in row-major grid order
 */
void position_similarity(float *sim, const float *pos_embed, int prefix, int P, int D, int q);

/** @} */
#endif
