/**
 * @file heatmap.c
 * @brief Pooling a matrix into cells and scaling it for a ramp (see heatmap.h).
 */
#include "heatmap.h"

#include <math.h>

// Source index range [*lo, *hi) that output index i of n covers in a size-m axis.
static void block_range(int i, int n, int m, int *lo, int *hi) {
    *lo = (int)((long long)i * m / n);
    *hi = (int)((long long)(i + 1) * m / n);
    if (*hi <= *lo) *hi = *lo + 1; // growing: each cell repeats one entry
}

// One pooled cell over rows [r0, r1) and columns [c0, c1).
static float pool_block(const float *m, int cols, int r0, int r1, int c0, int c1, Pool pool) {
    double sum = 0;
    float best = -INFINITY;
    int count = 0;
    for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++) {
            float v = m[(size_t)r * cols + c];
            if (!isfinite(v)) continue;
            sum += v;
            if (v > best) best = v;
            count++;
        }
    if (count == 0) return NAN;
    return pool == POOL_MAX ? best : (float)(sum / count);
}

void heatmap_pool(float *out, int out_rows, int out_cols, const float *m, int rows, int cols,
                  Pool pool) {
    for (int i = 0; i < out_rows; i++) {
        int r0, r1;
        block_range(i, out_rows, rows, &r0, &r1);
        for (int j = 0; j < out_cols; j++) {
            int c0, c1;
            block_range(j, out_cols, cols, &c0, &c1);
            out[(size_t)i * out_cols + j] = pool_block(m, cols, r0, r1, c0, c1, pool);
        }
    }
}

HeatScale heat_scale(const float *v, size_t n) {
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    if (lo > hi) return (HeatScale){0, 0, RAMP_SEQUENTIAL}; // nothing finite
    if (lo < 0 && hi > 0) {
        float a = fmaxf(-lo, hi);
        return (HeatScale){-a, a, RAMP_DIVERGING};
    }
    return (HeatScale){lo, hi, RAMP_SEQUENTIAL};
}

float heat_position(const HeatScale *s, float v) {
    if (isnan(v)) return NAN;
    // a constant map: the middle of the ramp, unless it is all 0 (a head switched
    // off looks nowhere): then the bottom, not a colour that reads as "uniform"
    if (!(s->hi > s->lo)) return s->lo == 0 ? 0.0f : 0.5f;
    float t = (v - s->lo) / (s->hi - s->lo);
    return t < 0 ? 0 : t > 1 ? 1 : t;
}
