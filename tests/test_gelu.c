/**
 * @file test_gelu.c
 * @brief lib/ops/ops.h's gelu() against PyTorch goldens, plus the properties it promises.
 *
 * A suite of its own at chapter 08's stage (the encoder block), where the book teaches it and
 * exercise 08 hands it out: a mistake in gelu() then first shows there, not among
 * the base operations every chapter computes with (test_ops.c).
 */
#include <CUnit/CUnit.h>
#include <math.h>

#include "check.h"
#include "ops/ops.h"

// One tensor of tests/golden/ops.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("ops.safetensors", name); }

static void test_gelu_matches_pytorch(void) {
    Tensor x = golden("gelu.x"), want = golden("gelu.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    gelu(got.data, x.data, x.numel);
    assert_tensor_close_from(&got, &want, 1e-6f, 1e-5f, "gelu", {"x", &x});
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
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

CU_TestInfo tests_gelu[] = {
    {"gelu matches PyTorch", test_gelu_matches_pytorch},
    {"gelu known values", test_gelu_known_values},
    CU_TEST_INFO_NULL,
};
