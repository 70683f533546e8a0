/**
 * @file heatmap.h
 * @brief Turning a big matrix into a small grid of colours: pooling and scaling.
 *
 * A (197, 768) activation or a (197, 197) attention map has far more entries
 * than a terminal pane has cells, so the viewer pools blocks of the matrix
 * into one cell each (the mean, or the max), then places every pooled value on
 * [0, 1] for a colour ramp (colour.h). Values of one sign use the sequential
 * ramp from their minimum to their maximum; values of both signs use the
 * diverging ramp with zero in the middle, so "white" always means zero.
 */
#ifndef VIEWER_HEATMAP_H
#define VIEWER_HEATMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "colour.h"

/** @defgroup viewer_heatmap Viewer heatmaps
 *  @brief Pool a matrix down to the cells of a pane and scale it for a ramp.
 *  @{
 */

/** How a block of entries becomes one cell. */
typedef enum {
    POOL_MEAN, /**< average of the block's finite entries */
    POOL_MAX,  /**< largest finite entry */
} Pool;

/** How pooled values map onto a ramp. */
typedef struct {
    float lo;      /**< value drawn at t = 0 */
    float hi;      /**< value drawn at t = 1 */
    RampKind kind; /**< diverging when the values have both signs (then lo = −hi) */
} HeatScale;

/**
 * @brief Pool a (rows, cols) matrix into (out_rows, out_cols) cells.
 *
 * Cell (i, j) covers source rows ⌊i·rows/out_rows⌋ … ⌊(i+1)·rows/out_rows⌋ − 1
 * (at least one) and likewise for columns, so every source entry lands in
 * exactly one cell when shrinking, and entries repeat when growing.
 * NaN and ±Inf are skipped; a cell with no finite entry is NaN.
 * @param[out] out       (out_rows, out_cols)
 * @param[in]  m         (rows, cols), row-major
 * @param[in]  pool      mean or max
 */
void heatmap_pool(float *out, int out_rows, int out_cols, const float *m, int rows, int cols,
                  Pool pool);

/**
 * @brief The scale for a set of values: sequential from min to max when they
 *        have one sign, diverging over [−a, a] with a = max |v| otherwise.
 * @param[in] v  n values; non-finite ones are ignored
 * @return lo = hi = 0 when no value is finite
 */
HeatScale heat_scale(const float *v, size_t n);

/** @brief Where @p v falls on the ramp, in [0, 1]; NaN stays NaN (drawn blank); a
 *         constant map sits mid-ramp, one of zeros at the bottom. */
float heat_position(const HeatScale *s, float v);

/** @} */
#endif
