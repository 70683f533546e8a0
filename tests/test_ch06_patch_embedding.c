/**
 * @file test_ch06_patch_embedding.c
 * @brief Chapter 06 against PyTorch, and the claims it makes about patch embedding.
 *
 * `build/tests/run ch06_patch_embedding` grades a student's own
 * patch_unfold(), patch_fold() and patch_embed() too: the claims below call
 * lib's versions (or whatever replaced them at link time).
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "patch.h"
#include "rng.h"

// Small sizes that still have several patches, channels and images.
enum {
    B = 2, C = 3, S = 12, PATCH = 4, D = 5,
    GRID = S / PATCH, P = GRID * GRID, PATCH_LEN = C * PATCH * PATCH, // C·p·p
};

static void random_fill(float *x, size_t n, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, x, n, 0.0f, 1.0f);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter06_run, "ch06_patch_embedding.safetensors");
}

static void test_unfold_layout_is_channel_major(void) {
    // patches[b, gy·GRID + gx, (c·p + i)·p + j] = img[b, c, gy·p + i, gx·p + j]
    float img[B * C * S * S], patches[B * P * PATCH_LEN];
    random_fill(img, sizeof img / sizeof *img, 61);
    patch_unfold(patches, img, B, C, S, PATCH);
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < GRID; gy++)
            for (int gx = 0; gx < GRID; gx++)
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < PATCH; i++)
                        for (int j = 0; j < PATCH; j++)
                            CU_ASSERT_EQUAL(patches[(b * P + gy * GRID + gx) * PATCH_LEN +
                                                    (c * PATCH + i) * PATCH + j],
                                            img[((b * C + c) * S + gy * PATCH + i) * S +
                                                gx * PATCH + j]);
}

static void test_fold_inverts_unfold(void) {
    float img[B * C * S * S], patches[B * P * PATCH_LEN], back[B * C * S * S];
    random_fill(img, sizeof img / sizeof *img, 62);
    patch_unfold(patches, img, B, C, S, PATCH);
    patch_fold(back, patches, B, C, S, PATCH);
    CU_ASSERT_EQUAL(memcmp(back, img, sizeof img), 0);
}

static void test_embed_equals_convolution(void) {
    float img[B * C * S * S], w[D * PATCH_LEN], bias[D], patches[B * P * PATCH_LEN];
    float embed[B * P * D], conv[B * P * D];
    random_fill(img, sizeof img / sizeof *img, 63);
    random_fill(w, sizeof w / sizeof *w, 64);
    random_fill(bias, D, 65);
    patch_embed(embed, patches, img, w, bias, B, C, S, PATCH, D);
    patch_embed_conv_naive(conv, img, w, bias, B, C, S, PATCH, D);
    Tensor a = tensor_view(embed, 3, B, P, D), e = tensor_view(conv, 3, B, P, D);
    assert_tensor_close(&a, &e, 1e-4f, 1e-5f, "patch_embed vs conv");
    patch_embed(embed, patches, img, w, NULL, B, C, S, PATCH, D); // no bias
    patch_embed_conv_naive(conv, img, w, NULL, B, C, S, PATCH, D);
    assert_tensor_close(&a, &e, 1e-4f, 1e-5f, "patch_embed vs conv, no bias");
}

static void test_one_patch_changes_one_token(void) {
    // the patches do not overlap: changing one pixel changes exactly one token
    float img[B * C * S * S], w[D * PATCH_LEN], patches[B * P * PATCH_LEN];
    float before[B * P * D], after[B * P * D];
    random_fill(img, sizeof img / sizeof *img, 66);
    random_fill(w, sizeof w / sizeof *w, 67);
    patch_embed(before, patches, img, w, NULL, B, C, S, PATCH, D);
    int y = PATCH + 1, x = 2 * PATCH + 3; // inside patch (1, 2) of image 1, channel 2
    img[((1 * C + 2) * S + y) * S + x] += 1.0f;
    patch_embed(after, patches, img, w, NULL, B, C, S, PATCH, D);
    int changed = 1 * P + 1 * GRID + 2;
    for (int t = 0; t < B * P; t++) {
        bool same = memcmp(&before[t * D], &after[t * D], D * sizeof(float)) == 0;
        CU_ASSERT_EQUAL(same, t != changed);
    }
}

CU_TestInfo tests_ch06_patch_embedding[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"unfold layout is channel-major", test_unfold_layout_is_channel_major},
    {"fold inverts unfold", test_fold_inverts_unfold},
    {"unfold + linear equals the convolution", test_embed_equals_convolution},
    {"one patch changes one token", test_one_patch_changes_one_token},
    CU_TEST_INFO_NULL,
};
