/**
 * @file layout.h
 * @brief Where each pane goes for a given terminal size.
 *
 * The screen, top to bottom:
 *
 *     title   (1 row)     model, image, a message
 *     tree │ info         the pipeline │ name, formula, shape, stats, cost
 *     tree │ ─────
 *     tree │ view         a picture of the selected tensor
 *     status  (1 row)     where you are and the main keys
 *
 * The tree keeps a readable width and the rest grows with the window. Below
 * LAYOUT_MIN_COLS × LAYOUT_MIN_ROWS nothing fits legibly, so the layout says
 * so and the screen shows a note instead of garbling. One function computes
 * everything, so a resize is handled in one place.
 */
#ifndef VIEWER_LAYOUT_H
#define VIEWER_LAYOUT_H

#include <stdbool.h>

/** @defgroup viewer_layout Viewer layout
 *  @brief Pane rectangles for a terminal size.
 *  @{
 */

/** Smallest usable terminal width, in columns. */
#define LAYOUT_MIN_COLS 50
/** Smallest usable terminal height, in rows. */
#define LAYOUT_MIN_ROWS 16

/** A rectangle of cells: top-left corner (y, x), h rows, w columns. */
typedef struct {
    int y; /**< top row */
    int x; /**< left column */
    int h; /**< rows */
    int w; /**< columns */
} Rect;

/** Every pane's rectangle for one terminal size. */
typedef struct {
    int cols;       /**< terminal width this layout is for */
    int rows;       /**< terminal height */
    bool too_small; /**< below the minimum: draw a note, not the panes */
    Rect title;     /**< top row */
    Rect tree;      /**< the pipeline tree, left */
    Rect info;      /**< the selected stage's facts, right top */
    Rect view;      /**< the selected tensor's picture, right bottom */
    Rect status;    /**< bottom row */
    int sep_x;      /**< column of the vertical line between tree and the right side */
    int sep_y;      /**< row of the horizontal line between info and view */
} Layout;

/** @brief The layout for a @p cols × @p rows terminal. */
Layout layout_compute(int cols, int rows);
/** @brief layout_compute() without the tree: the facts and the view take the whole width. */
Layout layout_compute_wide(int cols, int rows);

/** @brief true when rectangles @p a and @p b share at least one cell. */
bool rect_overlap(Rect a, Rect b);

/** @} */
#endif
