/**
 * @file layout.c
 * @brief Pane rectangles for a terminal size (see layout.h).
 */
#include "layout.h"

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

Layout layout_compute(int cols, int rows) {
    Layout l = {.cols = cols, .rows = rows};
    if (cols < LAYOUT_MIN_COLS || rows < LAYOUT_MIN_ROWS) {
        l.too_small = true;
        return l;
    }
    const int body_y = 1, body_h = rows - 2; // between the title and the status row
    // the tree needs ~20 columns for "▸ blocks.11" and "  attn.context"; more is spare
    const int tree_w = clamp(cols / 4 + 4, 20, 34);
    // six lines of facts; five when short (name and formula share a line)
    const int info_h = body_h >= 20 ? 6 : 5;
    l.title = (Rect){0, 0, 1, cols};
    l.status = (Rect){rows - 1, 0, 1, cols};
    l.tree = (Rect){body_y, 0, body_h, tree_w};
    l.sep_x = tree_w;
    const int right_x = tree_w + 1, right_w = cols - right_x;
    l.info = (Rect){body_y, right_x, info_h, right_w};
    l.sep_y = body_y + info_h;
    l.view = (Rect){l.sep_y + 1, right_x, body_y + body_h - (l.sep_y + 1), right_w};
    return l;
}

Layout layout_compute_wide(int cols, int rows) {
    Layout l = layout_compute(cols, rows);
    if (l.too_small) return l;
    const int right_w = cols; // the tree's columns and its separator go to the right panes
    l.tree = (Rect){l.tree.y, 0, l.tree.h, 0};
    l.sep_x = -1;
    l.info = (Rect){l.info.y, 0, l.info.h, right_w};
    l.view = (Rect){l.view.y, 0, l.view.h, right_w};
    return l;
}

bool rect_overlap(Rect a, Rect b) {
    if (a.w <= 0 || a.h <= 0 || b.w <= 0 || b.h <= 0) return false;
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}
