/**
 * @file test_ops.c
 * @brief lib/ops.h against PyTorch goldens, plus the properties each op promises.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "ops.h"
#include "rng.h"

// One tensor of tests/golden/ops.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("ops.safetensors", name); }

static void test_softmax_matches_pytorch(void) {
    Tensor x = golden("softmax.x"), want = golden("softmax.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    softmax(got.data, x.data, x.shape[0], x.shape[1]);
    assert_tensor_close(&got, &want, 1e-7f, 1e-5f, "softmax");
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
}

static void test_layernorm_matches_pytorch(void) {
    Tensor x = golden("layernorm.x"), g = golden("layernorm.gamma"), b = golden("layernorm.beta");
    Tensor want = golden("layernorm.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    layernorm(got.data, x.data, g.data, b.data, x.shape[0], x.shape[1], 1e-6f);
    assert_tensor_close(&got, &want, 1e-5f, 1e-5f, "layernorm");
    tensor_free(&x), tensor_free(&g), tensor_free(&b), tensor_free(&want), tensor_free(&got);
}

static void test_gelu_matches_pytorch(void) {
    Tensor x = golden("gelu.x"), want = golden("gelu.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    gelu(got.data, x.data, x.numel);
    assert_tensor_close(&got, &want, 1e-6f, 1e-5f, "gelu");
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
}

static void test_linear_matches_pytorch(void) {
    Tensor x = golden("linear.x"), w = golden("linear.w"), b = golden("linear.b");
    Tensor want = golden("linear.out");
    Tensor got = tensor_new(2, x.shape[0], w.shape[0]);
    linear(got.data, x.data, w.data, b.data, x.shape[0], x.shape[1], w.shape[0]);
    assert_tensor_close(&got, &want, 1e-5f, 1e-4f, "linear");
    tensor_free(&x), tensor_free(&w), tensor_free(&b), tensor_free(&want), tensor_free(&got);
}

static void test_dot_matches_pytorch(void) {
    Tensor a = golden("dot.a"), b = golden("dot.b"), want = golden("dot.out");
    CU_ASSERT_DOUBLE_EQUAL(dot(a.data, b.data, (int)a.numel), want.data[0],
                           1e-5 * fabs(want.data[0]) + 1e-5);
    tensor_free(&a), tensor_free(&b), tensor_free(&want);
}

/* ---------------------------------------------------------- properties */

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

static void test_softmax_in_place(void) {
    float x[3] = {1, 2, 3}, y[3];
    softmax(y, x, 1, 3);
    softmax(x, x, 1, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(x[j], y[j]);
}

static void test_layernorm_normalises(void) {
    enum { R = 4, D = 768 };
    float *x = malloc(sizeof(float) * R * D), *y = malloc(sizeof(float) * R * D);
    Rng rng;
    rng_seed(&rng, 13);
    rng_fill_normal(&rng, x, R * D, 3.0f, 7.0f);
    layernorm(y, x, NULL, NULL, R, D, 1e-6f);
    for (int r = 0; r < R; r++) {
        double mean = 0, var = 0;
        for (int j = 0; j < D; j++) mean += y[r * D + j];
        mean /= D;
        for (int j = 0; j < D; j++) var += (y[r * D + j] - mean) * (y[r * D + j] - mean);
        var /= D;
        CU_ASSERT_DOUBLE_EQUAL(mean, 0.0, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(var, 1.0, 1e-5);
    }
    free(x), free(y);
}

static void test_layernorm_constant_row_uses_eps(void) {
    float x[4] = {5, 5, 5, 5}, y[4];
    layernorm(y, x, NULL, NULL, 1, 4, 1e-6f);
    for (int j = 0; j < 4; j++) CU_ASSERT_EQUAL(y[j], 0.0f); // no division by zero
}

static void test_gelu_known_values(void) {
    // GELU(x) = x·Φ(x): Φ(0) = 1/2, Φ(1) = 0.8413447461, Φ(-1) = 0.1586552539, Φ(3) = 0.9986501020
    float x[5] = {0.0f, 1.0f, -1.0f, 3.0f, -10.0f}, y[5];
    gelu(y, x, 5);
    CU_ASSERT_EQUAL(y[0], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 0.8413447461, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[2], -0.1586552539, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[3], 2.9959503060, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[4], 0.0, 1e-20); // -10·Φ(-10) ≈ -7.6e-23
}

static void test_scale_and_add(void) {
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, y[3];
    scale(y, a, 0.5f, 3);
    CU_ASSERT_EQUAL(y[2], 1.5f);
    add(y, a, b, 3);
    CU_ASSERT_EQUAL(y[0], 11.0f);
    CU_ASSERT_EQUAL(y[2], 33.0f);
}

static void test_top_k_orders_nan_last_ties_by_index(void) {
    const float v[6] = {0.5f, 2, NAN, 2, -1, 3};
    int idx[6];
    CU_ASSERT_EQUAL(top_k(idx, 3, v, 6), 3);
    CU_ASSERT_EQUAL(idx[0], 5);
    CU_ASSERT_EQUAL(idx[1], 1); // ties: the lower index first
    CU_ASSERT_EQUAL(idx[2], 3);
    CU_ASSERT_EQUAL(top_k(idx, 10, v, 6), 6);
    CU_ASSERT_EQUAL(idx[4], 4);
    CU_ASSERT_EQUAL(idx[5], 2); // NaN last
}

CU_TestInfo tests_ops[] = {
    {"softmax matches PyTorch", test_softmax_matches_pytorch},
    {"layernorm matches PyTorch", test_layernorm_matches_pytorch},
    {"gelu matches PyTorch", test_gelu_matches_pytorch},
    {"linear matches PyTorch", test_linear_matches_pytorch},
    {"dot matches PyTorch", test_dot_matches_pytorch},
    {"softmax rows sum to 1", test_softmax_rows_sum_to_one},
    {"softmax ignores an added constant", test_softmax_ignores_added_constant},
    {"softmax survives +-1e30", test_softmax_survives_huge_inputs},
    {"softmax fully masked row is zeros", test_softmax_fully_masked_row_is_zero},
    {"softmax in place", test_softmax_in_place},
    {"layernorm gives mean 0 variance 1", test_layernorm_normalises},
    {"layernorm constant row is finite", test_layernorm_constant_row_uses_eps},
    {"gelu known values", test_gelu_known_values},
    {"scale and add", test_scale_and_add},
    {"top K: largest first, ties by index, NaN last", test_top_k_orders_nan_last_ties_by_index},
    CU_TEST_INFO_NULL,
};
