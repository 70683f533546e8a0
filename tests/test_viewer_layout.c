/**
 * @file test_viewer_layout.c
 * @brief The viewer's pane layout for terminal sizes (viewer/layout.h).
 */
#include <CUnit/CUnit.h>

#include "check.h"
#include "../viewer/layout.h"

static bool inside(Rect r, int cols, int rows) {
    return r.x >= 0 && r.y >= 0 && r.w > 0 && r.h > 0 && r.x + r.w <= cols && r.y + r.h <= rows;
}

// What every usable layout must satisfy.
static void check_layout(int cols, int rows) {
    Layout l = layout_compute(cols, rows);
    CU_ASSERT_FALSE(l.too_small);
    const Rect panes[5] = {l.title, l.tree, l.info, l.view, l.status};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT(inside(panes[i], cols, rows));
        for (int j = i + 1; j < 5; j++) CU_ASSERT_FALSE(rect_overlap(panes[i], panes[j]));
    }
    CU_ASSERT_EQUAL(l.title.y, 0);
    CU_ASSERT_EQUAL(l.status.y, rows - 1);
    CU_ASSERT_EQUAL(l.tree.w + 1 + l.info.w, cols); // tree, separator, right side
    CU_ASSERT_EQUAL(l.sep_x, l.tree.w);
    CU_ASSERT_EQUAL(l.view.y, l.sep_y + 1);
    CU_ASSERT_EQUAL(l.view.y + l.view.h, rows - 1); // the view reaches the status row
    CU_ASSERT(l.tree.w >= 20);                      // "▸ blocks.11 15/15" fits
    CU_ASSERT(l.info.h >= 5);
    CU_ASSERT(l.view.h >= 8); // room for a picture
}

static void test_80x24(void) {
    check_layout(80, 24);
    Layout l = layout_compute(80, 24);
    CU_ASSERT_EQUAL(l.tree.w, 24);
    CU_ASSERT_EQUAL(l.info.h, 6);
    CU_ASSERT_EQUAL(l.view.h, 15);
    CU_ASSERT_EQUAL(l.view.w, 55);
}

static void test_grows_with_the_window(void) {
    Layout small = layout_compute(80, 24), big = layout_compute(200, 60);
    check_layout(200, 60);
    CU_ASSERT(big.view.w > small.view.w);
    CU_ASSERT(big.view.h > small.view.h);
    CU_ASSERT(big.tree.w <= 34); // the tree stays readable; the view takes the rest
}

static void test_every_size_from_minimum(void) {
    for (int cols = LAYOUT_MIN_COLS; cols <= 160; cols += 7)
        for (int rows = LAYOUT_MIN_ROWS; rows <= 60; rows += 5) check_layout(cols, rows);
    check_layout(60, 20); // the size the terminal test resizes to
}

static void test_too_small(void) {
    CU_ASSERT_TRUE(layout_compute(LAYOUT_MIN_COLS - 1, 40).too_small);
    CU_ASSERT_TRUE(layout_compute(120, LAYOUT_MIN_ROWS - 1).too_small);
    CU_ASSERT_TRUE(layout_compute(0, 0).too_small);
    CU_ASSERT_FALSE(layout_compute(LAYOUT_MIN_COLS, LAYOUT_MIN_ROWS).too_small);
}

static void test_overlap(void) {
    CU_ASSERT_TRUE(rect_overlap((Rect){0, 0, 2, 2}, (Rect){1, 1, 2, 2}));
    CU_ASSERT_FALSE(rect_overlap((Rect){0, 0, 2, 2}, (Rect){0, 2, 2, 2})); // touching only
}

// t hides the tree: the facts and the view start at column 0 and take every column.
static void test_without_the_tree(void) {
    const Layout with = layout_compute(100, 30), wide = layout_compute_wide(100, 30);
    CU_ASSERT_EQUAL(wide.tree.w, 0);
    CU_ASSERT_EQUAL(wide.view.x, 0);
    CU_ASSERT_EQUAL(wide.view.w, 100);
    CU_ASSERT_EQUAL(wide.info.w, 100);
    CU_ASSERT(wide.view.w > with.view.w);
    CU_ASSERT_EQUAL(wide.view.h, with.view.h);
    CU_ASSERT_FALSE(rect_overlap(wide.info, wide.view));
    CU_ASSERT_TRUE(layout_compute_wide(40, 10).too_small);
}

CU_TestInfo tests_viewer_layout[] = {
    {"80x24", test_80x24},
    {"grows with the window", test_grows_with_the_window},
    {"every size from the minimum", test_every_size_from_minimum},
    {"too small", test_too_small},
    {"rectangles overlap", test_overlap},
    {"without the tree", test_without_the_tree},
    CU_TEST_INFO_NULL,
};
