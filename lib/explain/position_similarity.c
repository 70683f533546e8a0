/**
 * @file position_similarity.c
 * @brief Cosines of position embeddings on the patch grid (position_similarity.h).
 *
 * Shape legend: N = prefix + P positions, D width. Sums are in double: a
 * cosine of 768-wide vectors, exact to float's rounding at the end.
 */
#include "explain/position_similarity.h"

#include <math.h>
#include <stddef.h>

// [position_similarity]
void position_similarity(float *sim, const float *pos_embed, int prefix, int P, int D, int q) {
    // sim is (P), pos_embed is (prefix + P, D)
    const float *a = pos_embed + (size_t)(prefix + q) * D;
    double aa = 0;
    for (int d = 0; d < D; d++) aa += (double)a[d] * a[d];
    for (int j = 0; j < P; j++) {
        const float *b = pos_embed + (size_t)(prefix + j) * D;
        double ab = 0, bb = 0;
        for (int d = 0; d < D; d++) ab += (double)a[d] * b[d], bb += (double)b[d] * b[d];
        sim[j] = aa > 0 && bb > 0 ? (float)(ab / sqrt(aa * bb)) : 0.0f;
    }
}
// [position_similarity]
