/**
 * @file test_viewer_importance.c
 * @brief The viewer's head-importance grid and cursor (viewer/importance.h):
 *        a grid of known numbers, the cursor at the edges, the most important
 *        head, the colour scale's extent, the numbers as `vit heads` prints them.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../viewer/importance.h"

enum { L = 2, H = 3 };

// A measured view of a made-up (1, 2, 3) grid: the smallest, -0.25, at layer 1, head 2.
static ImportanceView known(void) {
    static const float delta[L * H] = {0.01f, -0.02f, 0.125f, -0.003f, 0.0f, -0.25f};
    static const float layers[L] = {-0.5f, 0.75f};
    ImportanceView v = {.measured = true, .shown = true};
    v.grid = (HeadImportance){.batch = 1, .layers = L, .heads = H};
    v.grid.classes = calloc(1, sizeof *v.grid.classes);
    v.grid.full = calloc(1, sizeof *v.grid.full);
    v.grid.delta = malloc(sizeof delta);
    v.grid.layer_delta = malloc(sizeof layers);
    CU_ASSERT_FATAL(v.grid.classes && v.grid.full && v.grid.delta && v.grid.layer_delta);
    memcpy(v.grid.delta, delta, sizeof delta);
    memcpy(v.grid.layer_delta, layers, sizeof layers);
    return v;
}

static void test_the_cursor_stays_on_the_grid(void) {
    ImportanceView v = known();
    importance_move(&v, 1, 2);
    CU_ASSERT_EQUAL(v.layer, 1);
    CU_ASSERT_EQUAL(v.head, 2);
    importance_move(&v, 5, 5); // past the edges: it stops there
    CU_ASSERT_EQUAL(v.layer, 1);
    CU_ASSERT_EQUAL(v.head, 2);
    importance_move(&v, -9, -1);
    CU_ASSERT_EQUAL(v.layer, 0);
    CU_ASSERT_EQUAL(v.head, 1);
    CU_ASSERT_EQUAL(importance_at(&v, 0, 1), -0.02f);
    importance_clear(&v);
}

static void test_the_cursor_starts_on_the_most_important(void) {
    ImportanceView v = known();
    importance_cursor_most(&v);
    CU_ASSERT_EQUAL(v.layer, 1);
    CU_ASSERT_EQUAL(v.head, 2);
    importance_clear(&v);
}

// The scale spans the largest |Δp| of the heads and of the layers' column.
static void test_the_extent(void) {
    ImportanceView v = known();
    CU_ASSERT_EQUAL(importance_extent(&v), 0.75f);
    importance_clear(&v);
    CU_ASSERT_EQUAL(importance_extent(&v), 0.0f);
}

static void test_the_numbers_and_the_stage(void) {
    char buf[32];
    importance_cell_text(buf, sizeof buf, -0.262f);
    CU_ASSERT_STRING_EQUAL(buf, "-0.2620");
    importance_cell_text(buf, sizeof buf, 0.00774f);
    CU_ASSERT_STRING_EQUAL(buf, "+0.0077");
    importance_stage_name(buf, sizeof buf, 11);
    CU_ASSERT_STRING_EQUAL(buf, "blocks.11.attn.probs");
}

// Cleared (a new picture): nothing measured, the view closed, the grid freed.
static void test_cleared(void) {
    ImportanceView v = known();
    importance_clear(&v);
    CU_ASSERT_FALSE(v.measured);
    CU_ASSERT_FALSE(v.shown);
    CU_ASSERT_PTR_NULL(v.grid.delta);
    CU_ASSERT(isnan(importance_at(&v, 0, 0)));
    importance_move(&v, 1, 1); // nothing to move on
    CU_ASSERT_EQUAL(v.layer, 0);
    importance_clear(&v); // twice is safe
}

CU_TestInfo tests_viewer_importance[] = {
    {"the cursor stays on the grid", test_the_cursor_stays_on_the_grid},
    {"the cursor starts on the most important head", test_the_cursor_starts_on_the_most_important},
    {"the colour scale's extent", test_the_extent},
    {"the numbers as vit heads prints them, the stage Enter goes to", test_the_numbers_and_the_stage},
    {"cleared for a new picture", test_cleared},
    CU_TEST_INFO_NULL,
};
