/**
 * @file test_ch01_dot_product.c
 * @brief Chapter 01 against PyTorch, and the chapter's claims about dot products.
 *
 * `build/tests/run ch01_dot_product` grades a student's own dot() too: the
 * claims below call lib's dot() (or whatever replaced it at link time).
 *
 * The probes at the end are exercise 01's diagnosis: each calls dot() on an
 * input whose right answer is exact and derived by hand, built so that each
 * likely mistake (a product left out, the sum overwritten, a float
 * accumulator) gives a different number, and names the one it recognises
 * with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "base/trace.h"

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
    ops_scale(twice_b, b, 2.0f, 5);
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
            // dot() (yours, in the exercise) against the chapter's matmul_bt(), which
            // calls no dot(): the scores are the reference here
            const float got = dot(&Q->data[i * width], &K->data[j * width], width);
            CU_ASSERT_DOUBLE_EQUAL(got, scores->data[i * K->shape[0] + j], 1e-5);
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
            // dot() against the chapter's matmul(), which calls no dot()
            CU_ASSERT_EQUAL(dot(&A->data[i * inner], column, inner), C->data[i * cols + j]);
        }
    trace_recorder_free(&rec);
}

/* -------------------------------------------------------------- the probes */

// a = 1…5 against b = 1, 10, …, 10⁴: product i is (i+1)·10^i, one decimal digit each, so
// a · b = 54321 and the digits of a wrong sum say which products it kept (all exact in float).
enum { DIGITS = 5 };
static const float DIGIT_A[DIGITS] = {1, 2, 3, 4, 5};
static const float DIGIT_B[DIGITS] = {1, 10, 100, 1000, 10000};

// After a wrong a · b of the digit vectors: name the mistake @p got looks like.
static void diagnose_digits(float got) {
    double product[DIGITS];
    for (int i = 0; i < DIGITS; i++) product[i] = (double)DIGIT_A[i] * DIGIT_B[i];
    if (got == 0.0f) {
        check_hint("dot() returned 0 where a · b = 54321: nothing was added up (is it still "
                   "the exercise's placeholder `return 0`?)");
        return;
    }
    // the sum of some of the products, each once: which ones are missing?
    for (unsigned kept = 1; kept < (1u << DIGITS) - 1; kept++) {
        double sum = 0;
        for (int i = 0; i < DIGITS; i++)
            if (kept & (1u << i)) sum += product[i];
        if (got != (float)sum) continue;
        if (kept == (1u << (DIGITS - 1)) - 1)
            check_hint("the last product a[n-1]*b[n-1] is missing (54321 came out as %g): the "
                       "loop must run while i < n, not i < n - 1", (double)got);
        else if (kept == (1u << DIGITS) - 2)
            check_hint("the first product a[0]*b[0] is missing (54321 came out as %g): start "
                       "the loop at i = 0", (double)got);
        else if (kept == 1u << (DIGITS - 1))
            check_hint("only the last product survived (54321 came out as %g): `sum = a[i] * "
                       "b[i]` replaces the sum each time round the loop; add to it with "
                       "`sum += a[i] * b[i]`", (double)got);
        else {
            char missing[64] = "";
            size_t used = 0;
            for (int i = 0; i < DIGITS; i++)
                if (!(kept & (1u << i)))
                    used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                             used ? ", " : "", i);
            check_hint("the products i = %s are missing (54321 came out as %g): every i from 0 "
                       "to n-1 adds a[i]*b[i] once", missing, (double)got);
        }
        return;
    }
    if (got == 55.0f)
        check_hint("dot() multiplied a by itself (a · a = 55): each product is a[i] * b[i]");
    else if (got == 15.0f * 11111.0f)
        check_hint("(a[0] + … + a[4])·(b[0] + … + b[4]) = 166665 is the product of the two "
                   "sums; a · b multiplies entry by entry first, then adds the products");
    else
        check_hint("a · b should be 54321: product i = a[i]*b[i] = (i+1)·10^i is digit i "
                   "from the right, so compare %g with it digit by digit", (double)got);
}

static void test_probe_every_product_counted_once(void) {
    float got = dot(DIGIT_A, DIGIT_B, DIGITS);
    CU_ASSERT_EQUAL(got, 54321.0f);
    if (got != 54321.0f) diagnose_digits(got);
    float first = dot(DIGIT_A, DIGIT_B, 1), two = dot(DIGIT_A, DIGIT_B, 2); // 1, and 1 + 20
    CU_ASSERT_EQUAL(first, 1.0f);
    CU_ASSERT_EQUAL(two, 21.0f);
    if (got == 54321.0f && (first != 1.0f || two != 21.0f))
        check_hint("dot() is right for n = 5 but gave %g for n = 1 and %g for n = 2 (expected "
                   "1 and 21): use n, the length it is given, not a fixed one", (double)first,
                   (double)two);
}

// Two large products that cancel, 4096·4096 = 2^24 and 4096·(-4096), with SMALL
// products of 1 between them and TAIL more after: a · b = SMALL + TAIL exactly. A
// float holds 24 bits, so in float 2^24 + 1 rounds back to 2^24 and the SMALL ones vanish.
static void test_probe_long_sum_is_accumulated_in_double(void) {
    enum { SMALL = 1000, TAIL = 24, LEN = 1 + SMALL + 1 + TAIL };
    float a[LEN], b[LEN];
    for (int i = 0; i < LEN; i++) a[i] = b[i] = 1.0f;
    a[0] = b[0] = 4096.0f;                      // +2^24
    a[1 + SMALL] = 4096.0f, b[1 + SMALL] = -4096.0f; // -2^24
    float got = dot(a, b, LEN);
    CU_ASSERT_EQUAL(got, (float)(SMALL + TAIL));
    if (got == (float)(SMALL + TAIL)) return;
    float in_float = 0.0f; // what a float accumulator gives: 24, only the tail
    for (int i = 0; i < LEN; i++) in_float += a[i] * b[i];
    if (got == in_float)
        check_hint("the sum lost its small products (%d came out as %g): in float, 16777216 + 1 "
                   "is 16777216 again (24 bits of mantissa), so the 1000 ones vanished before "
                   "the two large products cancelled; accumulate in a double and convert once, "
                   "at the return (ops.h: accumulated in double)", SMALL + TAIL, (double)got);
}

CU_TestInfo tests_ch01_dot_product[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"dot of small vectors", test_dot_of_small_vectors},
    {"dot is symmetric and linear", test_dot_is_symmetric_and_linear},
    {"orthogonal, parallel and opposite angles", test_special_angles},
    {"every score is a dot product", test_every_score_is_a_dot_product},
    {"matmul entry is row dot column", test_matmul_entry_is_row_dot_column},
    {"probe: every product counted once", test_probe_every_product_counted_once},
    {"probe: a long sum that cancels is accumulated in double",
     test_probe_long_sum_is_accumulated_in_double},
    CU_TEST_INFO_NULL,
};
