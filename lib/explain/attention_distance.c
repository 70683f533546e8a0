/**
 * @file attention_distance.c
 * @brief Attention summed by distance on the patch grid (attention_distance.h).
 *
 * Shape legend: H heads, N = prefix + rows·cols tokens, [cls] (the prefix) first.
 *
 * One pass over each head's patch rows: every weight goes into the bin of its
 * key's grid distance from the query (or the prefix's bin), and, for the
 * patch keys, into the query's weighted sum of Euclidean distances. Sums are
 * in double: a head's 49 · 50 weights, or 4097², add up without drift.
 */
#include "explain/attention_distance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// [attention_distance_bins]
int attention_distance_bins(int rows, int cols) {
    return 1 + (rows > cols ? rows : cols); // the prefix, then distances 0 … max(rows, cols) − 1
}
// [attention_distance_bins]

// [attention_by_distance]
void attention_by_distance(double *mass, double *distance, const float *probs, int H, int prefix,
                           int rows, int cols) {
    // mass is (H, bins), distance is (H), probs is (H, N, N)
    const int N = prefix + rows * cols, P = rows * cols, bins = attention_distance_bins(rows, cols);
    memset(mass, 0, sizeof(double) * (size_t)H * bins);
    if (distance) memset(distance, 0, sizeof(double) * (size_t)H);
    if (P < 1) return;
    for (int h = 0; h < H; h++) {
        double *m = mass + (size_t)h * bins;
        for (int i = prefix; i < N; i++) { // patch queries only: [cls] has no grid place
            const float *row = probs + ((size_t)h * N + i) * N;
            const int y = (i - prefix) / cols, x = (i - prefix) % cols;
            double on_patches = 0, weighted = 0;
            for (int j = 0; j < prefix; j++) m[0] += row[j];
            for (int j = prefix; j < N; j++) {
                const int dy = abs((j - prefix) / cols - y), dx = abs((j - prefix) % cols - x);
                m[1 + (dy > dx ? dy : dx)] += row[j];
                on_patches += row[j];
                weighted += row[j] * sqrt((double)(dy * dy + dx * dx));
            }
            if (distance && on_patches > 0) distance[h] += weighted / on_patches;
        }
        for (int b = 0; b < bins; b++) m[b] /= P;
        if (distance) distance[h] /= P;
    }
}
// [attention_by_distance]
