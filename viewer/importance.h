/**
 * @file importance.h
 * @brief The head-importance view's data (key I): the grid of every head
 *        switched off in turn for the picture shown, and the cell cursor.
 *
 * Shape legend: L layers (blocks), H heads per layer.
 *
 * The grid is lib's head_importance() for the one picture on screen, measured
 * against the model with every head on (the what-ifs' switches are put aside
 * and back), for the class that model predicts. It is measured once per
 * picture, between passes (it runs L·H + L + 1 forward passes of its own), and
 * forgotten when the picture changes. Nothing here includes curses: the
 * drawing is tui_heads.c's.
 */
#ifndef VIEWER_IMPORTANCE_H
#define VIEWER_IMPORTANCE_H

#include <stdbool.h>
#include <stddef.h>

#include "explain/head_importance.h"

/** @defgroup viewer_importance Viewer head importance
 *  @brief The (L, H) grid of head importance for the picture shown, and its cursor.
 *  @{
 */

/** The head-importance view (I). */
typedef struct {
    bool shown;          /**< the view is open in the right pane */
    bool measured;       /**< grid holds the picture's numbers */
    HeadImportance grid; /**< lib's head_importance() of the picture, a batch of 1 */
    int layer;           /**< the cursor's row: a layer, 0 … L−1 */
    int head;            /**< its column: a head, 0 … H−1 */
} ImportanceView;

/** @brief Forget the grid (the picture changed) and close the view. */
void importance_clear(ImportanceView *v);
/** @brief Move the cursor by @p dl layers and @p dh heads, stopping at the edges. */
void importance_move(ImportanceView *v, int dl, int dh);
/** @brief Put the cursor on the most important head (head_importance_most()). */
void importance_cursor_most(ImportanceView *v);
/** @brief Δp of head @p head of layer @p layer; NAN when nothing is measured. */
float importance_at(const ImportanceView *v, int layer, int head);
/** @brief The largest |Δp| of the grid and of the layers' column: the colour scale's half-width. */
float importance_extent(const ImportanceView *v);
/** @brief A cell's number as `vit heads` prints it: "%+.4f", e.g. "-0.2620". */
void importance_cell_text(char *buf, size_t size, float delta);
/** @brief The stage a cell leads to (Enter): "blocks.L.attn.probs". */
void importance_stage_name(char *buf, size_t size, int layer);

/** @} */
#endif
