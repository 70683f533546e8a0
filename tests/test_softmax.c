/**
 * @file test_softmax.c
 * @brief lib/ops/ops.h's softmax() against PyTorch goldens, plus the properties it promises.
 *
 * A suite of its own at chapter 03's stage (softmax), where the book teaches it and
 * exercise 03 hands it out: a mistake in softmax() then first shows there, not among
 * the base operations every chapter computes with (test_ops.c).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/ops.h"
#include "base/rng.h"

// One tensor of tests/golden/ops.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("ops.safetensors", name); }

static void test_softmax_matches_pytorch(void) {
    Tensor x = golden("softmax.x"), want = golden("softmax.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    softmax(got.data, x.data, x.shape[0], x.shape[1]);
    assert_tensor_close(&got, &want, 1e-7f, 1e-5f, "softmax");
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
}

static void test_softmax_rows_sum_to_one(void) {
    enum { R = 8, C = 50 };
    float x[R * C], y[R * C];
    Rng rng;
    rng_seed(&rng, 11);
    rng_fill_uniform(&rng, x, R * C, -30, 30);
    softmax(y, x, R, C);
    for (int r = 0; r < R; r++) {
        double sum = 0;
        for (int j = 0; j < C; j++) {
            CU_ASSERT(y[r * C + j] >= 0.0f && y[r * C + j] <= 1.0f);
            sum += y[r * C + j];
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
    }
}

static void test_softmax_ignores_added_constant(void) {
    enum { C = 20 };
    float x[C], shifted[C], y[C], z[C];
    Rng rng;
    rng_seed(&rng, 12);
    rng_fill_uniform(&rng, x, C, -5, 5);
    for (int j = 0; j < C; j++) shifted[j] = x[j] + 100.0f; // exactly representable shift
    softmax(y, x, 1, C);
    softmax(z, shifted, 1, C);
    for (int j = 0; j < C; j++) CU_ASSERT_DOUBLE_EQUAL(y[j], z[j], 1e-6);
}

static void test_softmax_survives_huge_inputs(void) {
    float x[4] = {1e30f, -1e30f, 1e30f, 0.0f}, y[4];
    softmax(y, x, 1, 4);
    for (int j = 0; j < 4; j++) CU_ASSERT_FALSE(isnan(y[j]));
    CU_ASSERT_DOUBLE_EQUAL(y[0], 0.5, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(y[2], 0.5, 1e-7);
    CU_ASSERT_EQUAL(y[1], 0.0f);
    float z[3] = {-1e30f, -1e30f, -1e30f}, w[3];
    softmax(w, z, 1, 3); // equal huge negatives: uniform, not NaN
    for (int j = 0; j < 3; j++) CU_ASSERT_DOUBLE_EQUAL(w[j], 1.0 / 3.0, 1e-7);
}

static void test_softmax_fully_masked_row_is_zero(void) {
    float x[6] = {-INFINITY, -INFINITY, -INFINITY, 1.0f, -INFINITY, 2.0f}, y[6];
    softmax(y, x, 2, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(y[j], 0.0f);
    CU_ASSERT_EQUAL(y[4], 0.0f); // a masked entry gets exactly zero
    CU_ASSERT_DOUBLE_EQUAL(y[3] + y[5], 1.0, 1e-7);
}

// Expected values below are PyTorch's (torch 1.13, torch.softmax(x, dim=-1)), except where
// a row is entirely -inf: there PyTorch gives NaN and we give zeros, by convention (ops.h).

// Is every one of the n values NaN? Counts them, so a failure says how many were not.
static int count_nan(const float *y, int n) {
    int c = 0;
    for (int j = 0; j < n; j++) c += isnan(y[j]) != 0;
    return c;
}

static void test_softmax_row_with_a_nan_is_nan(void) {
    float x[4] = {1.0f, NAN, 2.0f, -1.0f}, y[4];
    softmax(y, x, 1, 4);
    CU_ASSERT_EQUAL(count_nan(y, 4), 4); // PyTorch: [nan, nan, nan, nan]
    float masked[2] = {NAN, -INFINITY}; // a NaN beside masked entries is still a NaN
    softmax(y, masked, 1, 2);
    CU_ASSERT_EQUAL(count_nan(y, 2), 2); // PyTorch: [nan, nan]; not a "fully masked" row
}

static void test_softmax_row_of_nan_is_nan(void) {
    float x[3] = {NAN, NAN, NAN}, y[3] = {0, 0, 0};
    softmax(y, x, 1, 3);
    CU_ASSERT_EQUAL(count_nan(y, 3), 3); // PyTorch: [nan, nan, nan]; zeros would hide it
}

static void test_softmax_row_with_plus_inf_is_nan(void) {
    float x[2] = {1.0f, INFINITY}, y[3];
    softmax(y, x, 1, 2);
    CU_ASSERT_EQUAL(count_nan(y, 2), 2); // PyTorch: [nan, nan], not [0, 1] nor [0, nan]
    float two[3] = {INFINITY, INFINITY, 2.0f};
    softmax(y, two, 1, 3);
    CU_ASSERT_EQUAL(count_nan(y, 3), 3); // PyTorch: [nan, nan, nan]
    float with_masked[3] = {INFINITY, -INFINITY, -INFINITY};
    softmax(y, with_masked, 1, 3);
    CU_ASSERT_EQUAL(count_nan(y, 3), 3); // PyTorch: [nan, nan, nan]
}

// Each row on its own: one bad row does not touch its neighbours, in place or not.
static void test_softmax_mixed_rows_are_independent(void) {
    enum { R = 8, C = 3 };
    const float x[R * C] = {
        1.0f,      2.0f,      3.0f,      // ordinary
        NAN,       -INFINITY, -INFINITY, // a NaN
        -INFINITY, -INFINITY, -INFINITY, // fully masked
        1.0f,      INFINITY,  0.0f,      // a +inf
        -INFINITY, -INFINITY, 1.0f,      // partly masked
        0.5f,      -INFINITY, 0.5f,      // partly masked
        INFINITY,  -INFINITY, -INFINITY, // a +inf among masked entries
        NAN,       NAN,       NAN,       // all NaN
    };
    const float want[R * C] = {
        0.09003057f, 0.24472848f, 0.66524094f, // PyTorch's values
        NAN,         NAN,         NAN,
        0.0f,        0.0f,        0.0f, // PyTorch: NaN; ours: zeros (fully masked)
        NAN,         NAN,         NAN,
        0.0f,        0.0f,        1.0f,
        0.5f,        0.0f,        0.5f,
        NAN,         NAN,         NAN,
        NAN,         NAN,         NAN,
    };
    float y[R * C], inplace[R * C];
    softmax(y, x, R, C);
    for (int i = 0; i < R * C; i++) inplace[i] = x[i];
    softmax(inplace, inplace, R, C);
    for (int r = 0; r < R; r++) {
        for (int j = 0; j < C; j++) {
            const int i = r * C + j;
            if (isnan(want[i])) {
                CU_ASSERT(isnan(y[i]) && isnan(inplace[i]));
            } else {
                CU_ASSERT_DOUBLE_EQUAL(y[i], want[i], 1e-7);
                CU_ASSERT_EQUAL(inplace[i], y[i]);
                if (want[i] == 0.0f) CU_ASSERT_EQUAL(y[i], 0.0f); // masked: exactly zero
            }
            if (isnan(want[i]) != isnan(y[i]))
                fprintf(stderr, "\nsoftmax row %d col %d: got %g, want %g\n", r, j, (double)y[i],
                        (double)want[i]);
        }
    }
}

static void test_softmax_in_place(void) {
    float x[3] = {1, 2, 3}, y[3];
    softmax(y, x, 1, 3);
    softmax(x, x, 1, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(x[j], y[j]);
}

CU_TestInfo tests_softmax[] = {
    {"softmax matches PyTorch", test_softmax_matches_pytorch},
    {"softmax rows sum to 1", test_softmax_rows_sum_to_one},
    {"softmax ignores an added constant", test_softmax_ignores_added_constant},
    {"softmax survives +-1e30", test_softmax_survives_huge_inputs},
    {"softmax fully masked row is zeros", test_softmax_fully_masked_row_is_zero},
    {"softmax row with a NaN is NaN", test_softmax_row_with_a_nan_is_nan},
    {"softmax row of NaN is NaN, not zeros", test_softmax_row_of_nan_is_nan},
    {"softmax row with +inf is NaN (as PyTorch)", test_softmax_row_with_plus_inf_is_nan},
    {"softmax mixed rows are independent", test_softmax_mixed_rows_are_independent},
    {"softmax in place", test_softmax_in_place},
    CU_TEST_INFO_NULL,
};
