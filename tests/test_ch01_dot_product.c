/**
 * @file test_ch01_dot_product.c
 * @brief Chapter 01 against PyTorch, and the chapter's claims about dot products.
 *
 * `build/tests/run ch01_dot_product` grades a student's own dot() too: the
 * claims below call lib's dot() (or whatever replaced it at link time).
 */
#include <CUnit/CUnit.h>
#include <math.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "gemm.h"
#include "ops.h"
#include "trace.h"

// Run the chapter silently, keeping a copy of every value it pins.
static void record_chapter(TraceRecorder *rec) {
    *rec = (TraceRecorder){0};
    Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = rec};
    chapter01_run(&ch);
}

// The recorded scalar called `name`; NaN (and a failed assertion) when missing.
static float recorded_scalar(const TraceRecorder *rec, const char *name) {
    const Tensor *t = trace_find(rec, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->numel, 1u);
    return t->data[0];
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter01_run, "ch01_dot_product.safetensors");
}

static void test_dot_of_small_vectors(void) {
    float a[3] = {1, 2, 3}, b[3] = {4, -5, 6};
    CU_ASSERT_EQUAL(dot(a, b, 3), 12.0f); // 4 - 10 + 18, exact in float
    CU_ASSERT_EQUAL(dot(a, a, 3), 14.0f);
    CU_ASSERT_EQUAL(dot(a, b, 0), 0.0f);  // an empty sum is zero
}

static void test_dot_is_symmetric_and_linear(void) {
    float a[5] = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f}, b[5] = {1.5f, 0.25f, -2.0f, 1.0f, 4.0f};
    float twice_b[5];
    scale(twice_b, b, 2.0f, 5);
    CU_ASSERT_EQUAL(dot(a, b, 5), dot(b, a, 5));
    CU_ASSERT_DOUBLE_EQUAL(dot(a, twice_b, 5), 2.0 * dot(a, b, 5), 1e-6);
}

static void test_special_angles(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    // orthogonal: products cancel exactly, the angle is a right angle
    CU_ASSERT_EQUAL(recorded_scalar(&rec, "dot_a_c"), 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(recorded_scalar(&rec, "angle_a_c"), 90.0, 1e-4);
    // same direction and opposite direction
    CU_ASSERT_DOUBLE_EQUAL(recorded_scalar(&rec, "cos_a_twice_a"), 1.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(recorded_scalar(&rec, "angle_a_twice_a"), 0.0, 1e-3);
    CU_ASSERT_DOUBLE_EQUAL(recorded_scalar(&rec, "cos_a_neg_a"), -1.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(recorded_scalar(&rec, "angle_a_neg_a"), 180.0, 1e-3);
    // the dot product grows with length, the cosine does not
    CU_ASSERT_EQUAL(recorded_scalar(&rec, "dot_a_twice_a"), 2.0f * 14.0f);
    trace_recorder_free(&rec);
}

static void test_every_score_is_a_dot_product(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *Q = trace_find(&rec, "Q"), *K = trace_find(&rec, "K");
    const Tensor *scores = trace_find(&rec, "scores");
    CU_ASSERT_PTR_NOT_NULL_FATAL(Q);
    CU_ASSERT_PTR_NOT_NULL_FATAL(K);
    CU_ASSERT_PTR_NOT_NULL_FATAL(scores);
    int n = Q->shape[0], width = Q->shape[1];
    CU_ASSERT_EQUAL_FATAL(scores->shape[0], n);
    CU_ASSERT_EQUAL_FATAL(scores->shape[1], K->shape[0]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < K->shape[0]; j++) {
            float expected = dot(&Q->data[i * width], &K->data[j * width], width);
            CU_ASSERT_DOUBLE_EQUAL(scores->data[i * K->shape[0] + j], expected, 1e-5);
        }
    trace_recorder_free(&rec);
}

static void test_matmul_entry_is_row_dot_column(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *A = trace_find(&rec, "A"), *B = trace_find(&rec, "B"), *C = trace_find(&rec, "C");
    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
    CU_ASSERT_PTR_NOT_NULL_FATAL(B);
    CU_ASSERT_PTR_NOT_NULL_FATAL(C);
    // A is (rows, inner), B is (inner, cols), C is (rows, cols)
    int rows = A->shape[0], inner = A->shape[1], cols = B->shape[1];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            float column[8];
            CU_ASSERT_FATAL(inner <= 8);
            for (int k = 0; k < inner; k++) column[k] = B->data[k * cols + j];
            CU_ASSERT_EQUAL(C->data[i * cols + j], dot(&A->data[i * inner], column, inner));
        }
    trace_recorder_free(&rec);
}

CU_TestInfo tests_ch01_dot_product[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"dot of small vectors", test_dot_of_small_vectors},
    {"dot is symmetric and linear", test_dot_is_symmetric_and_linear},
    {"orthogonal, parallel and opposite angles", test_special_angles},
    {"every score is a dot product", test_every_score_is_a_dot_product},
    {"matmul entry is row dot column", test_matmul_entry_is_row_dot_column},
    CU_TEST_INFO_NULL,
};
