/**
 * @file test_hints.c
 * @brief The mistake signatures of hints.h recognise their mistake, and only it.
 */
#include <CUnit/CUnit.h>
#include <math.h>

#include "check.h"
#include "hints.h"

static void test_all_zero(void) {
    float z[3] = {0, 0, 0}, x[3] = {0, 1e-30f, 0};
    CU_ASSERT_TRUE(hint_all_zero(z, 3));
    CU_ASSERT_FALSE(hint_all_zero(x, 3));
    CU_ASSERT_FALSE(hint_all_zero(z, 0));
}

static void test_scaled(void) {
    float want[4] = {0.5f, -2.0f, 0.0f, 1.0f}, got[4], ratio = 0;
    for (int i = 0; i < 4; i++) got[i] = 8.0f * want[i];
    CU_ASSERT_TRUE(hint_scaled(&ratio, got, want, 4, 1e-6f, 1e-5f));
    CU_ASSERT_DOUBLE_EQUAL(ratio, 8.0, 1e-6);
    CU_ASSERT_FALSE(hint_scaled(&ratio, want, want, 4, 1e-6f, 1e-5f)); // right is no mistake
    got[3] = 0.0f;
    CU_ASSERT_FALSE(hint_scaled(&ratio, got, want, 4, 1e-6f, 1e-5f)); // not one constant
    got[3] = NAN;
    CU_ASSERT_FALSE(hint_scaled(&ratio, got, want, 4, 1e-6f, 1e-5f));
}

static void test_shifted(void) {
    float want[3] = {1.0f, 2.0f, -3.0f}, got[3] = {1.5f, 2.5f, -2.5f}, shift = 0;
    CU_ASSERT_TRUE(hint_shifted(&shift, got, want, 3, 1e-6f, 1e-5f));
    CU_ASSERT_DOUBLE_EQUAL(shift, 0.5, 1e-6);
    CU_ASSERT_FALSE(hint_shifted(&shift, want, want, 3, 1e-6f, 1e-5f));
    got[2] = 0.0f;
    CU_ASSERT_FALSE(hint_shifted(&shift, got, want, 3, 1e-6f, 1e-5f));
}

static void test_transposed(void) {
    // expected (2, 3); its transpose (3, 2)
    float want[6] = {1, 2, 3, 4, 5, 6}, t[6] = {1, 4, 2, 5, 3, 6};
    CU_ASSERT_TRUE(hint_transposed(t, want, 2, 3, 0, 0));
    CU_ASSERT_FALSE(hint_transposed(want, want, 2, 3, 0, 0));
    float sym[4] = {1, 2, 2, 1}; // its own transpose: proves nothing
    CU_ASSERT_FALSE(hint_transposed(sym, sym, 2, 2, 0, 0));
}

static void test_sums_to_one(void) {
    float rows[4] = {0.25f, 0.75f, 0.5f, 0.5f}; // (2, 2): rows sum to 1
    float cols[4] = {0.25f, 0.5f, 0.75f, 0.5f}; // columns sum to 1
    CU_ASSERT_TRUE(hint_rows_sum_to_one(rows, 2, 2, 1e-6f));
    CU_ASSERT_FALSE(hint_cols_sum_to_one(rows, 2, 2, 1e-6f));
    CU_ASSERT_TRUE(hint_cols_sum_to_one(cols, 2, 2, 1e-6f));
    CU_ASSERT_FALSE(hint_rows_sum_to_one(cols, 2, 2, 1e-6f));
}

static void test_nonfinite_where_large(void) {
    float x[4] = {1000.0f, 1.0f, 2.0f, 3.0f};
    float naive[4] = {NAN, 0.0f, 0.1f, 0.2f}; // exp(1000) overflowed, only there
    CU_ASSERT_TRUE(hint_nonfinite_where_large(naive, x, 4, 88.0f));
    naive[2] = INFINITY; // a NaN where the input is small: another mistake
    CU_ASSERT_FALSE(hint_nonfinite_where_large(naive, x, 4, 88.0f));
    float fine[4] = {1, 0, 0, 0};
    CU_ASSERT_FALSE(hint_nonfinite_where_large(fine, x, 4, 88.0f)); // nothing to explain
    // row by row: (2, 2), the first row holds the large input and is all NaN
    float rows_out[4] = {NAN, NAN, 0.5f, 0.5f};
    CU_ASSERT_TRUE(hint_nonfinite_rows_where_large(rows_out, x, 2, 2, 88.0f));
    float other[4] = {0.5f, 0.5f, NAN, NAN};
    CU_ASSERT_FALSE(hint_nonfinite_rows_where_large(other, x, 2, 2, 88.0f));
}

CU_TestInfo tests_hints[] = {
    {"all zero", test_all_zero},
    {"one constant times the expected", test_scaled},
    {"the expected plus one constant", test_shifted},
    {"transposed, and a symmetric matrix is not", test_transposed},
    {"rows or columns sum to one", test_sums_to_one},
    {"non-finite only where the inputs are large", test_nonfinite_where_large},
    CU_TEST_INFO_NULL,
};
