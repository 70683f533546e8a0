/**
 * @file test_ch03_softmax.c
 * @brief Chapter 03 against PyTorch, and the softmax claims it makes.
 *
 * `build/tests/run ch03_softmax` grades a student's own softmax() too: the
 * claims below call lib's softmax() (or whatever replaced it at link time).
 */
#include <CUnit/CUnit.h>
#include <math.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "ops.h"
#include "trace.h"

// Run the chapter silently, keeping a copy of every value it pins.
static void record_chapter(TraceRecorder *rec) {
    *rec = (TraceRecorder){0};
    Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = rec};
    chapter03_run(&ch);
}

static double row_sum(const float *p, int n) {
    double s = 0;
    for (int j = 0; j < n; j++) s += p[j];
    return s;
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter03_run, "ch03_softmax.safetensors");
}

static void test_weights_are_positive_and_sum_to_one(void) {
    float x[5] = {2.0f, 1.0f, 0.1f, -1.0f, -7.5f}, p[5];
    softmax(p, x, 1, 5);
    for (int j = 0; j < 5; j++) CU_ASSERT(p[j] > 0.0f && p[j] < 1.0f);
    for (int j = 1; j < 5; j++) CU_ASSERT(p[j] < p[j - 1]); // order kept
    CU_ASSERT_DOUBLE_EQUAL(row_sum(p, 5), 1.0, 1e-6);
}

static void test_huge_scores_do_not_overflow(void) {
    // the chapter's row moved by ±1000: finite, and equal to the unshifted answer
    float x[4] = {2.0f, 1.0f, 0.1f, -1.0f}, big[4], small[4];
    float p[4], p_big[4], p_small[4];
    for (int j = 0; j < 4; j++) {
        big[j] = x[j] + 1000.0f;
        small[j] = x[j] - 1000.0f;
    }
    softmax(p, x, 1, 4);
    softmax(p_big, big, 1, 4);
    softmax(p_small, small, 1, 4);
    for (int j = 0; j < 4; j++) {
        CU_ASSERT(isfinite(p_big[j]) && isfinite(p_small[j]));
        CU_ASSERT_DOUBLE_EQUAL(p_big[j], p[j], 1e-4); // 1000.1 is not exact in float32
        CU_ASSERT_DOUBLE_EQUAL(p_small[j], p[j], 1e-4);
    }
}

static void test_textbook_formula_overflows(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *exps = trace_find(&rec, "exp_x_big_naive");
    const Tensor *naive = trace_find(&rec, "p_big_naive");
    const Tensor *stable = trace_find(&rec, "p_big");
    CU_ASSERT_PTR_NOT_NULL_FATAL(exps);
    CU_ASSERT_PTR_NOT_NULL_FATAL(naive);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stable);
    for (size_t j = 0; j < naive->numel; j++) {
        CU_ASSERT(isinf(exps->data[j]));
        CU_ASSERT(isnan(naive->data[j]));
        CU_ASSERT(isfinite(stable->data[j]));
    }
    trace_recorder_free(&rec);
}

static void test_fully_masked_row_gives_zeros_not_nan(void) {
    float x[2 * 3] = {-INFINITY, -INFINITY, -INFINITY,  // fully masked
                      0.5f, -INFINITY, 0.5f};           // partly masked
    float p[2 * 3];
    softmax(p, x, 2, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(p[j], 0.0f); // not NaN
    CU_ASSERT_DOUBLE_EQUAL(p[3], 0.5, 1e-7);
    CU_ASSERT_EQUAL(p[4], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(p[5], 0.5, 1e-7);
}

static void test_masked_entries_are_exactly_zero(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *padded = trace_find(&rec, "p_padded");
    const Tensor *causal = trace_find(&rec, "p_causal");
    CU_ASSERT_PTR_NOT_NULL_FATAL(padded);
    CU_ASSERT_PTR_NOT_NULL_FATAL(causal);
    int n = padded->shape[0];
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(padded->data[i * n + (n - 1)], 0.0f); // the padding key
        for (int j = i + 1; j < n; j++) CU_ASSERT_EQUAL(causal->data[i * n + j], 0.0f);
        CU_ASSERT_DOUBLE_EQUAL(row_sum(&padded->data[i * n], n), 1.0, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(row_sum(&causal->data[i * n], n), 1.0, 1e-6);
    }
    CU_ASSERT_EQUAL(causal->data[0], 1.0f); // token 0 sees only itself
    trace_recorder_free(&rec);
}

static void test_query_with_nothing_to_see_takes_nothing(void) {
    // the chapter's "earlier keys only" mask hides every key from query 0
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *mask = trace_find(&rec, "earlier_mask");
    const Tensor *naive = trace_find(&rec, "p_earlier_naive");
    const Tensor *p = trace_find(&rec, "p_earlier");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mask);
    CU_ASSERT_PTR_NOT_NULL_FATAL(naive);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int n = p->shape[0];
    for (int j = 0; j < n; j++) {
        CU_ASSERT(isinf(mask->data[j]) && mask->data[j] < 0); // row 0: all -inf
        CU_ASSERT(isnan(naive->data[j]));                     // 0 / 0
        CU_ASSERT_EQUAL(p->data[j], 0.0f);                    // lib: zeros
    }
    for (int i = 1; i < n; i++) { // the other rows are ordinary distributions
        CU_ASSERT_DOUBLE_EQUAL(row_sum(&p->data[i * n], n), 1.0, 1e-6);
        for (int j = i; j < n; j++) CU_ASSERT_EQUAL(p->data[i * n + j], 0.0f);
    }
    trace_recorder_free(&rec);
}

static void test_temperature_sharpens_and_flattens(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const char *names[] = {"p_t0_1", "p_t0_5", "p_t1", "p_t2", "p_t10"}; // T ascending
    float previous_top = 2.0f;
    for (int i = 0; i < 5; i++) {
        const Tensor *p = trace_find(&rec, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT(p->data[0] < previous_top); // hotter: the top score wins less
        previous_top = p->data[0];
        CU_ASSERT_DOUBLE_EQUAL(row_sum(p->data, 4), 1.0, 1e-6);
    }
    const Tensor *cold = trace_find(&rec, "p_t0_1"), *hot = trace_find(&rec, "p_t10");
    CU_ASSERT(cold->data[0] > 0.999f);                // almost a hard max
    for (int j = 0; j < 4; j++) CU_ASSERT(fabsf(hot->data[j] - 0.25f) < 0.05f); // almost uniform
    trace_recorder_free(&rec);
}

static void test_softmax_in_place(void) {
    // ops.h allows out == x
    float x[3] = {1.0f, 2.0f, 3.0f}, expected[3];
    softmax(expected, x, 1, 3);
    softmax(x, x, 1, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(x[j], expected[j]);
}

CU_TestInfo tests_ch03_softmax[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"weights are positive and sum to one", test_weights_are_positive_and_sum_to_one},
    {"huge scores do not overflow", test_huge_scores_do_not_overflow},
    {"textbook formula overflows to NaN", test_textbook_formula_overflows},
    {"fully masked row gives zeros, not NaN", test_fully_masked_row_gives_zeros_not_nan},
    {"masked entries are exactly zero", test_masked_entries_are_exactly_zero},
    {"a query with every key masked takes nothing", test_query_with_nothing_to_see_takes_nothing},
    {"temperature sharpens and flattens", test_temperature_sharpens_and_flattens},
    {"softmax works in place", test_softmax_in_place},
    CU_TEST_INFO_NULL,
};
