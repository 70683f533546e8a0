/**
 * @file test_dot.c
 * @brief lib/ops/ops.h's dot() against PyTorch's golden.
 *
 * A suite of its own at chapter 01's stage (the dot product), where the book teaches it and
 * exercise 01 hands it out: a mistake in dot() then first shows there, not among
 * the base operations every chapter computes with (test_ops.c).
 */
#include <CUnit/CUnit.h>
#include <math.h>

#include "check.h"
#include "ops/ops.h"

// One tensor of tests/golden/ops.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("ops.safetensors", name); }

static void test_dot_matches_pytorch(void) {
    Tensor a = golden("dot.a"), b = golden("dot.b"), want = golden("dot.out");
    CU_ASSERT_DOUBLE_EQUAL(dot(a.data, b.data, (int)a.numel), want.data[0],
                           1e-5 * fabs(want.data[0]) + 1e-5);
    tensor_free(&a), tensor_free(&b), tensor_free(&want);
}

CU_TestInfo tests_dot[] = {
    {"dot matches PyTorch", test_dot_matches_pytorch},
    CU_TEST_INFO_NULL,
};
