/**
 * @file test_attention_cli.c
 * @brief `vit attention` end to end: the numbers it writes against PyTorch's
 *        (tests/golden/rollout.safetensors), the pictures it draws, and what
 *        it refuses.
 *
 * The model and image are the shipped ones (data/models, data/images), so
 * `--raw`'s numbers are checked against tools/gen_golden_rollout.py's
 * PyTorch pass: the rollout's joint matrix, the gradient-weighted one for
 * the predicted class, and every layer's and head's [cls] row (--grid).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "image.h"
#include "labels.h"
#include "safetensors.h"

enum { PATH_SIZE = 512 };

static char model[PATH_SIZE], boot[PATH_SIZE];

static void shipped_paths(void) {
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, "images/fashion-mnist/0000-ankle-boot.png");
}

// Tensor NAME of the safetensors file at PATH (owned).
static Tensor read_named(const char *path, const char *name) {
    SafeTensors st;
    VitError err;
    Tensor t = {0};
    const bool ok = st_open(&st, path, &err) == VIT_OK && st_read_tensor(&st, name, &t, &err) == VIT_OK;
    if (!ok) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(ok);
    st_close(&st);
    return t;
}

// The PNG at PATH decodes, with the given size, and is not one colour.
static void expect_png(const char *path, int width, int height) {
    Image img;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(image_load(&img, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(img.width, width);
    CU_ASSERT_EQUAL(img.height, height);
    int colours = 0;
    for (size_t i = 3; i < (size_t)img.width * img.height * 3 && colours < 2; i += 3)
        colours += memcmp(img.pixels, img.pixels + i, 3) != 0;
    CU_ASSERT(colours >= 1);
    image_free(&img);
}

static void test_rollout_file(void) {
    shipped_paths();
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char png[PATH_SIZE], raw[PATH_SIZE];
    scratch_file(&d, "rollout.png", png, sizeof png);
    scratch_file(&d, "rollout.safetensors", raw, sizeof raw);
    CliResult r = VIT_RUN("attention", "--weights", model, boot, "--out", png, "--raw", raw);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT(strstr(r.out, "predicted: Ankle boot") != NULL);
    CU_ASSERT(strstr(r.out, "rollout, heads fused by mean, discard 0") != NULL);
    cli_result_free(&r);
    expect_png(png, 324, 266); // 28 × 8 pixels of image, two lines of title, the colour bar
    // the numbers: the joint matrix PyTorch computed, and the map is its [cls] row
    Tensor joint = read_named(raw, "joint"), map = read_named(raw, "map");
    Tensor expected = golden_tensor("rollout.safetensors", "b0.rollout.mean");
    assert_tensor_close(&joint, &expected, CHECK_ATOL, CHECK_RTOL, "joint");
    CU_ASSERT_EQUAL(map.ndim, 2);
    CU_ASSERT_EQUAL(map.shape[0], 7);
    CU_ASSERT_EQUAL(map.shape[1], 7);
    for (int p = 0; p < 49; p++) CU_ASSERT_EQUAL(map.data[p], joint.data[1 + p]);
    tensor_free(&expected);
    tensor_free(&joint);
    tensor_free(&map);
    scratch_remove(&d);
}

static void test_grad_and_grid_files(void) {
    shipped_paths();
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char png[PATH_SIZE], raw[PATH_SIZE];
    scratch_file(&d, "grad.safetensors", raw, sizeof raw);
    CliResult r = VIT_RUN("attention", "--weights", model, boot, "--grad", "--raw", raw);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT(strstr(r.out, "gradient-weighted rollout for class 9") != NULL);
    cli_result_free(&r);
    Tensor joint = read_named(raw, "joint");
    Tensor expected = golden_tensor("rollout.safetensors", "b0.grad.pred");
    assert_tensor_close(&joint, &expected, 2e-5f, 1e-4f, "gradient-weighted joint");
    tensor_free(&expected);
    tensor_free(&joint);
    // --grid: every layer's and head's [cls] row, then the heads' mean
    scratch_file(&d, "grid.png", png, sizeof png);
    scratch_file(&d, "grid.safetensors", raw, sizeof raw);
    r = VIT_RUN("attention", "--weights", model, boot, "--grid", "--out", png, "--raw", raw);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    expect_png(png, 746, 764);
    Tensor maps = read_named(raw, "maps"); // (L, H + 1, 7, 7)
    Tensor cls = golden_tensor("rollout.safetensors", "b0.cls_attention"); // (L, H, 49)
    CU_ASSERT_EQUAL_FATAL(maps.ndim, 4);
    const int L = cls.shape[0], H = cls.shape[1];
    CU_ASSERT_EQUAL_FATAL(maps.shape[0], L);
    CU_ASSERT_EQUAL_FATAL(maps.shape[1], H + 1);
    float worst = 0;
    for (int l = 0; l < L; l++)
        for (int p = 0; p < 49; p++) {
            double mean = 0;
            for (int h = 0; h < H; h++) {
                const float want = cls.data[((size_t)l * H + h) * 49 + p];
                const float got = maps.data[((size_t)l * (H + 1) + h) * 49 + p];
                worst = fmaxf(worst, fabsf(got - want));
                mean += want;
            }
            const float got_mean = maps.data[((size_t)l * (H + 1) + H) * 49 + p];
            worst = fmaxf(worst, fabsf(got_mean - (float)(mean / H)));
        }
    CU_ASSERT(worst < 1e-5f);
    tensor_free(&cls);
    tensor_free(&maps);
    // --layer with --head: that head's row; the PNG has the single map's size
    scratch_file(&d, "l5h2.png", png, sizeof png);
    r = VIT_RUN("attention", "--weights", model, boot, "--layer", "5", "--head", "2", "--out", png);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT(strstr(r.out, "layer 5, head 2") != NULL);
    cli_result_free(&r);
    expect_png(png, 324, 266);
    scratch_remove(&d);
}

static void test_refusals(void) {
    shipped_paths();
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char png[PATH_SIZE], missing[PATH_SIZE];
    scratch_file(&d, "a.png", png, sizeof png);
    scratch_file(&d, "no-such.png", missing, sizeof missing);
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot), 2, "--out", "--raw");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--head", "1"), 2,
                   "--head", "--layer");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--layer", "6"), 2,
                   "--layer 6", "layers 0 to 5");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--layer", "1",
                           "--head", "4"), 2, "--head 4", "heads 0 to 3");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--fuse", "median"),
                   2, "median", "mean, max or min");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--class", "3"), 2,
                   "--class", "--grad");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--grad",
                           "--class", "10"), 2, "--class 10", "classes 0 to 9");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--discard", "1"),
                   2, "--discard");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--grid",
                           "--layer", "1"), 2, "give one");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--rollout=1"), 2,
                   "--rollout takes no value");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, missing, "--out", png), 1,
                   "no-such.png");
    // the picture must not replace what it reads
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", boot), 1,
                   "refusing to overwrite");
    CU_ASSERT_EQUAL(scratch_count(&d), 0); // nothing half-written
    scratch_remove(&d);
}

CU_TestInfo tests_attention_cli[] = {
    {"a rollout: its numbers are PyTorch's, its picture", test_rollout_file},
    {"gradient-weighted, the grid and one head", test_grad_and_grid_files},
    {"what it refuses", test_refusals},
    CU_TEST_INFO_NULL,
};
