/**
 * @file test_layernorm.c
 * @brief lib/ops/ops.h's layernorm() against PyTorch goldens, plus the properties it promises.
 *
 * A suite of its own at chapter 08's stage (the encoder block), where the book teaches it and
 * exercise 08 hands it out: a mistake in layernorm() then first shows there, not among
 * the base operations every chapter computes with (test_ops.c).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ops/ops.h"
#include "base/rng.h"

// One tensor of tests/golden/ops.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("ops.safetensors", name); }

static void test_layernorm_matches_pytorch(void) {
    Tensor x = golden("layernorm.x"), g = golden("layernorm.gamma"), b = golden("layernorm.beta");
    Tensor want = golden("layernorm.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    layernorm(got.data, x.data, g.data, b.data, x.shape[0], x.shape[1], 1e-6f);
    Tensor eps = tensor_scalar(1e-6f);
    assert_tensor_close_from(&got, &want, 1e-5f, 1e-5f, "layernorm", {"x", &x}, {"gamma", &g},
                             {"beta", &b}, {"eps", &eps});
    tensor_free(&x), tensor_free(&g), tensor_free(&b), tensor_free(&want), tensor_free(&got);
    tensor_free(&eps);
}

// Rows whose variance is near ε, where ε is what keeps the division finite
// (tools/gen_golden_keys.py, keys_layernorm_eps): constant rows plus noise of
// variance 1e-7 to 1e-5 and one exactly constant row, with ε = 1e-6 and 1e-5,
// against F.layer_norm in float64. Near ε, float32 rounding of the mean is
// magnified by 1/sqrt(var + ε) (up to 950): lib's layernorm is off by 4.5e-6,
// PyTorch's own float32 F.layer_norm by 4.3e-5, a plain float32 two-pass one by
// 4.8e-5 (measured). Ignoring ε multiplies a row by sqrt((var + ε) / var),
// moving these outputs by 0.135 at the least (var 1e-5, ε 1e-6) and turning the
// constant row into 0/0 = NaN. 5e-4 + 1e-4·|ref| admits any float32 version
// like PyTorch's with a margin of 10 and misses ignored ε by a factor of 270.
static void test_layernorm_near_eps_matches_pytorch(void) {
    static const char *const keys[] = {"eps1e-06", "eps1e-05"};
    const char *file = "keys_layernorm_eps.safetensors";
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char name[64], label[128];
#define LN_GOLDEN(part) (snprintf(name, sizeof name, "%s.%s", keys[k], part), golden_tensor(file, name))
        Tensor x = LN_GOLDEN("x"), g = LN_GOLDEN("gamma"), b = LN_GOLDEN("beta");
        Tensor eps = LN_GOLDEN("eps"), var = LN_GOLDEN("var"), want = LN_GOLDEN("out");
#undef LN_GOLDEN
        // the fixture is what it claims: every row's variance within 10x of ε, or exactly 0
        float most = 0;
        for (size_t i = 0; i < var.numel; i++) most = fmaxf(most, var.data[i]);
        CU_ASSERT_TRUE(most <= 1.01e-5f && var.data[var.numel - 1] == 0.0f);
        Tensor got = tensor_new_shape(x.ndim, x.shape);
        layernorm(got.data, x.data, g.data, b.data, x.shape[0], x.shape[1], eps.data[0]);
        snprintf(label, sizeof label, "layernorm (eps %g, row variances 0 to 1e-05)",
                 (double)eps.data[0]);
        assert_tensor_close_from(&got, &want, 5e-4f, 1e-4f, label, {"x", &x}, {"gamma", &g},
                                 {"beta", &b}, {"eps", &eps});
        if (getenv("VIT_GOLDEN_REPORT"))
            fprintf(stderr, "\n    %s: max |diff| %.2e", label, (double)tensor_max_abs_diff(&got, &want));
        tensor_free(&x), tensor_free(&g), tensor_free(&b), tensor_free(&eps), tensor_free(&var);
        tensor_free(&want), tensor_free(&got);
    }
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

CU_TestInfo tests_layernorm[] = {
    {"layernorm matches PyTorch", test_layernorm_matches_pytorch},
    {"layernorm with variance near eps matches PyTorch", test_layernorm_near_eps_matches_pytorch},
    {"layernorm gives mean 0 variance 1", test_layernorm_normalises},
    {"layernorm constant row is finite", test_layernorm_constant_row_uses_eps},
    CU_TEST_INFO_NULL,
};
