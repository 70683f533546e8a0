/**
 * @file test_tensor.c
 * @brief Tensor construction, statistics and printing.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/tensor.h"

static void test_new_is_zero_and_shaped(void) {
    Tensor t = tensor_new(3, 2, 3, 4);
    CU_ASSERT_EQUAL(t.ndim, 3);
    CU_ASSERT_EQUAL(t.numel, 24u);
    CU_ASSERT_EQUAL(t.shape[2], 4);
    for (size_t i = 0; i < t.numel; i++) CU_ASSERT_EQUAL(t.data[i], 0.0f);
    char buf[32];
    CU_ASSERT_STRING_EQUAL(tensor_shape_str(&t, buf, sizeof buf), "(2, 3, 4)");
    tensor_free(&t);
    CU_ASSERT_PTR_NULL(t.data);
}

static void test_stats_count_nan_and_inf_apart(void) {
    float v[] = {1, 2, 3, 4, NAN, INFINITY, -INFINITY};
    Tensor t = tensor_view(v, 1, 7);
    TensorStats s = tensor_stats(&t);
    CU_ASSERT_EQUAL(s.n_nan, 1u);
    CU_ASSERT_EQUAL(s.n_inf, 2u);
    CU_ASSERT_EQUAL(s.min, 1.0f);
    CU_ASSERT_EQUAL(s.max, 4.0f);
    CU_ASSERT_DOUBLE_EQUAL(s.mean, 2.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.std, sqrt(1.25), 1e-12); // population std of 1..4
    CU_ASSERT_DOUBLE_EQUAL(s.l2, sqrt(30.0), 1e-12);
}

static char *print_to_string(const char *name, const Tensor *t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tensor_print(f, name, t);
    fclose(f);
    return buf;
}

static void test_print_small_matches_pytorch_layout(void) {
    float v[] = {1, -2.5f, 3, 0.25f};
    Tensor t = tensor_view(v, 2, 2, 2);
    char *s = print_to_string("x", &t);
    CU_ASSERT_STRING_EQUAL(s, "x = [[ 1.0000, -2.5000],\n     [ 3.0000,  0.2500]]\n");
    free(s);
}

static void test_print_elides_large_tensors(void) {
    Tensor t = tensor_new(2, 40, 40); // 1600 > 1000 elements: elided like PyTorch
    for (size_t i = 0; i < t.numel; i++) t.data[i] = (float)i;
    char *s = print_to_string(NULL, &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "..."));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "1599.0000"));  // last element shown
    CU_ASSERT_PTR_NULL(strstr(s, " 20.0000"));      // a middle element hidden
    free(s);
    tensor_free(&t);
}

CU_TestInfo tests_tensor[] = {
    {"new is zero and shaped", test_new_is_zero_and_shaped},
    {"stats count NaN and Inf apart", test_stats_count_nan_and_inf_apart},
    {"print small matches PyTorch layout", test_print_small_matches_pytorch_layout},
    {"print elides large tensors", test_print_elides_large_tensors},
    CU_TEST_INFO_NULL,
};
