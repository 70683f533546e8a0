/**
 * @file test_patch.c
 * @brief Patch embedding: unfold against F.unfold, unfold + linear against
 *        nn.Conv2d (tests/golden/patch_pieces.safetensors, written by
 *        tools/gen_golden_vit.py), against the naive convolution, and fold as
 *        unfold's inverse.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "model/patch.h"
#include "base/rng.h"

// Float32 sums of 48 products against a float64 reference: ~1e-7; margin ~10.
#define ATOL 1e-6f
#define RTOL 1e-5f

// One tensor of patch_pieces.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("patch_pieces.safetensors", name); }

/** The golden case: images (B, C, S, S), conv weight (D, C, p, p), bias (D). */
typedef struct {
    Tensor img, w, b;
    int B, C, S, p, D, P;
} PatchCase;

static PatchCase patch_case(void) {
    PatchCase c = {golden("img"), golden("w"), golden("b"), 0, 0, 0, 0, 0, 0};
    c.B = c.img.shape[0], c.C = c.img.shape[1], c.S = c.img.shape[2];
    c.D = c.w.shape[0], c.p = c.w.shape[2];
    c.P = (c.S / c.p) * (c.S / c.p);
    return c;
}

static void patch_case_free(PatchCase *c) {
    tensor_free(&c->img), tensor_free(&c->w), tensor_free(&c->b);
}

static void test_unfold_matches_torch_unfold(void) {
    PatchCase c = patch_case();
    Tensor want = golden("patches");
    Tensor got = tensor_new(3, c.B, c.P, c.C * c.p * c.p);
    patch_unfold(got.data, c.img.data, c.B, c.C, c.S, c.p);
    assert_tensor_close(&got, &want, 0.0f, 0.0f, "patch_unfold"); // copies: exact
    tensor_free(&want), tensor_free(&got);
    patch_case_free(&c);
}

static void test_embed_matches_torch_conv2d(void) {
    PatchCase c = patch_case();
    Tensor want = golden("embed");
    Tensor got = tensor_new(3, c.B, c.P, c.D), scratch = tensor_new(3, c.B, c.P, c.C * c.p * c.p);
    patch_embed(got.data, scratch.data, c.img.data, c.w.data, c.b.data, c.B, c.C, c.S, c.p, c.D);
    assert_tensor_close(&got, &want, ATOL, RTOL, "patch_embed (unfold + linear) vs Conv2d");
    Tensor naive = tensor_new(3, c.B, c.P, c.D);
    patch_embed_conv_naive(naive.data, c.img.data, c.w.data, c.b.data, c.B, c.C, c.S, c.p, c.D);
    assert_tensor_close(&naive, &want, ATOL, RTOL, "patch_embed_conv_naive vs Conv2d");
    tensor_free(&want), tensor_free(&got), tensor_free(&scratch), tensor_free(&naive);
    patch_case_free(&c);
}

// At ViT-B's patch size (16 × 16 × 3 = 768 inputs per patch), unfold + linear
// is the convolution, with and without a bias.
static void test_embed_equals_naive_convolution(void) {
    enum { B = 2, C = 3, S = 64, p = 16, D = 24, P = (S / p) * (S / p), K = C * p * p };
    Rng rng;
    rng_seed(&rng, 41);
    float *img = malloc(sizeof(float) * B * C * S * S), *w = malloc(sizeof(float) * D * K);
    float *b = malloc(sizeof(float) * D), *scratch = malloc(sizeof(float) * B * P * K);
    rng_fill_uniform(&rng, img, (size_t)B * C * S * S, -1, 1);
    rng_fill_normal(&rng, w, (size_t)D * K, 0, 0.05f);
    rng_fill_normal(&rng, b, D, 0, 0.1f);
    Tensor fast = tensor_new(3, B, P, D), naive = tensor_new(3, B, P, D);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        const float *bias = with_bias ? b : NULL;
        // both start as NaN: the second pass must not pass on the first's numbers
        check_poison(fast.data, fast.numel), check_poison(naive.data, naive.numel);
        patch_embed(fast.data, scratch, img, w, bias, B, C, S, p, D);
        patch_embed_conv_naive(naive.data, img, w, bias, B, C, S, p, D);
        // naive sums in double, the fast path in float32 over 768 terms
        assert_tensor_close(&fast, &naive, 1e-5f, 1e-5f,
                            with_bias ? "unfold + linear vs conv" : "unfold + linear vs conv, no bias");
    }
    free(img), free(w), free(b), free(scratch);
    tensor_free(&fast), tensor_free(&naive);
}

static void test_fold_inverts_unfold(void) {
    enum { B = 2, C = 3, S = 20, p = 5, P = (S / p) * (S / p), K = C * p * p };
    Tensor img = tensor_new(4, B, C, S, S), back = tensor_new(4, B, C, S, S);
    Tensor patches = tensor_new(3, B, P, K), again = tensor_new(3, B, P, K);
    for (size_t i = 0; i < img.numel; i++) img.data[i] = (float)i; // all distinct
    patch_unfold(patches.data, img.data, B, C, S, p);
    patch_fold(back.data, patches.data, B, C, S, p);
    assert_tensor_close(&back, &img, 0.0f, 0.0f, "fold(unfold(img))");
    patch_unfold(again.data, back.data, B, C, S, p);
    assert_tensor_close(&again, &patches, 0.0f, 0.0f, "unfold(fold(patches))");
    // patch 1 (top row, second column) starts at pixel (0, p) of channel 0
    CU_ASSERT_EQUAL(patches.data[K], (float)p);
    tensor_free(&img), tensor_free(&back), tensor_free(&patches), tensor_free(&again);
}

CU_TestInfo tests_patch[] = {
    {"unfold equals torch F.unfold", test_unfold_matches_torch_unfold},
    {"unfold + linear and naive conv equal torch Conv2d", test_embed_matches_torch_conv2d},
    {"unfold + linear equals the naive convolution (p 16)", test_embed_equals_naive_convolution},
    {"fold inverts unfold", test_fold_inverts_unfold},
    CU_TEST_INFO_NULL,
};
