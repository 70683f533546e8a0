/**
 * @file test_occlusion.c
 * @brief Occlusion (lib/explain/occlusion.c) against PyTorch, its properties,
 *        and `vit occlusion` printing lib's numbers.
 *
 * The golden, tests/golden/occlusion.safetensors, comes from
 * tools/gen_golden_occlusion.py: tools/ref_vit.py's RefViT in float64 on the
 * shipped model, data/models/vit-fashion.safetensors, each patch of two
 * shipped pictures (an ankle boot and a shirt) blacked out in turn, and the
 * occlusion map's deletion curve (its top 1, 5 and 10 patches black).
 *
 *  - Against PyTorch: the predicted class, its probability, the falls and the
 *    deletion curve, picture by picture.
 *  - Exactly: a patch black already falls by 0; a black picture's map is all
 *    zeros and every map's deletion curve is its unmasked probability; black
 *    is −mean/std in each channel of a 3-channel picture, by hand.
 *  - Within 1e-6: a batch's falls are each picture's alone. Every deletion
 *    probability is in [0, 1], and occlusion's falls from k = 1 to k = 10.
 *  - `vit occlusion` prints lib's numbers, to the 4 decimals it shows, and
 *    refuses what it cannot read.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "explain/occlusion.h"
#include "io/image.h"
#include "io/labels.h" // vit_data_path()

#define GOLDEN "occlusion.safetensors"

// The shipped model: 28×28 grey pictures, 4×4 patches; the golden's two pictures.
enum { S = 28, SIDE = 7, P = SIDE * SIDE, B = 2, PATH_SIZE = 512 };
static const char *const PICTURES[B] = {"images/fashion-mnist/0000-ankle-boot.png",
                                        "images/fashion-mnist/0004-shirt.png"};

static Vit shipped(void) {
    Vit vit = check_shipped_model();
    CU_ASSERT_FATAL(vit.config.image_size == S && vit.config.channels == 1);
    CU_ASSERT_FATAL(vit.config.image_size / vit.config.patch_size == SIDE);
    return vit;
}

// Picture b of the golden's input, as its own (1, 1, S, S) tensor.
static Tensor picture(const Tensor *input, int b) {
    Tensor x = tensor_new(4, 1, 1, S, S);
    memcpy(x.data, input->data + (size_t)b * S * S, sizeof(float) * S * S);
    return x;
}

static OcclusionComparison compare(Vit *vit, const Tensor *x, float black) {
    OcclusionComparison c;
    VitError err;
    VitStatus s = occlusion_compare(&c, vit, x, &black, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    CU_ASSERT_FATAL(c.P == P && c.side == SIDE);
    return c;
}

static float golden_black(void) {
    Tensor t = golden_tensor(GOLDEN, "black");
    const float black = t.data[0];
    tensor_free(&t);
    return black;
}

/* ------------------------------------------------------------ against PyTorch */

static void test_occlusion_against_pytorch(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input"), classes = golden_tensor(GOLDEN, "classes");
    Tensor full = golden_tensor(GOLDEN, "full");
    Tensor falls = tensor_new(2, B, P), deletion = tensor_new(2, B, MEASURE_KS);
    Tensor mine = tensor_new(1, B);
    for (int b = 0; b < B; b++) {
        Tensor x = picture(&input, b);
        OcclusionComparison c = compare(&vit, &x, golden_black());
        CU_ASSERT_EQUAL(c.cls, (int)classes.data[b]);
        CU_ASSERT_EQUAL(occlusion_compared[0], MAP_OCCLUSION);
        mine.data[b] = (float)c.full;
        memcpy(falls.data + (size_t)b * P, c.maps.data, sizeof(float) * P); // row 0: occlusion
        for (int k = 0; k < MEASURE_KS; k++)
            deletion.data[b * MEASURE_KS + k] = (float)c.deletion[0][k];
        occlusion_comparison_free(&c);
        tensor_free(&x);
    }
    expect_golden_tensor(GOLDEN, "full", &mine);
    expect_golden_tensor(GOLDEN, "occlusion", &falls);
    expect_golden_tensor(GOLDEN, "deletion", &deletion);
    tensor_free(&mine), tensor_free(&deletion), tensor_free(&falls);
    tensor_free(&full), tensor_free(&classes), tensor_free(&input);
    vit_free(&vit);
}

/* ------------------------------------------------------------ properties */

// Is patch q of the (S, S) picture black in every pixel?
static bool all_black(const float *x, int q, float black) {
    for (int y = q / SIDE * 4; y < (q / SIDE + 1) * 4; y++)
        for (int i = q % SIDE * 4; i < (q % SIDE + 1) * 4; i++)
            if (x[y * S + i] != black) return false;
    return true;
}

static void test_black_patches_fall_by_zero(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    const float black = golden_black();
    int classes[B] = {0};
    float falls[B * P];
    VitError err;
    for (int b = 0; b < B; b++) { // the class: the golden's argmax, checked above; any will do
        Tensor c = golden_tensor(GOLDEN, "classes");
        classes[b] = (int)c.data[b];
        tensor_free(&c);
    }
    CU_ASSERT_FATAL(occlusion_falls(falls, &vit, &input, classes, &black, &err) == VIT_OK);
    int black_patches = 0, moved = 0;
    for (int b = 0; b < B; b++)
        for (int q = 0; q < P; q++) {
            const float f = falls[b * P + q];
            if (all_black(input.data + (size_t)b * S * S, q, black)) {
                black_patches++;
                CU_ASSERT_EQUAL(f, 0.0f); // its input is unchanged: so is every number after it
            } else moved += f != 0.0f;
        }
    CU_ASSERT(black_patches >= 10); // the background of both pictures
    CU_ASSERT(moved >= 20);         // and the garment's patches do move it
    tensor_free(&input);
    vit_free(&vit);
}

static void test_batch_is_each_picture(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    const float black = golden_black();
    const int classes[B] = {9, 0};
    float both[B * P], one[P];
    VitError err;
    CU_ASSERT_FATAL(occlusion_falls(both, &vit, &input, classes, &black, &err) == VIT_OK);
    for (int b = 0; b < B; b++) {
        Tensor x = picture(&input, b);
        CU_ASSERT_FATAL(occlusion_falls(one, &vit, &x, &classes[b], &black, &err) == VIT_OK);
        for (int q = 0; q < P; q++) CU_ASSERT_DOUBLE_EQUAL(one[q], both[b * P + q], 1e-6);
        tensor_free(&x);
    }
    tensor_free(&input);
    vit_free(&vit);
}

static void test_black_picture_is_all_zeros(void) {
    Vit vit = shipped();
    const float black = golden_black();
    Tensor x = tensor_new(4, 1, 1, S, S);
    for (int i = 0; i < S * S; i++) x.data[i] = black;
    OcclusionComparison c = compare(&vit, &x, black);
    for (int q = 0; q < P; q++) CU_ASSERT_EQUAL(c.maps.data[q], 0.0f);
    // every map's top k patches are black already: nothing changes at any k, up to
    // rounding (in the -O1 build of make sanitize the deletion passes, which come
    // after the attention maps' backward, differ from the first pass in the last bits)
    for (int m = 0; m < OCCLUSION_MAPS; m++)
        for (int k = 0; k < MEASURE_KS; k++) CU_ASSERT_DOUBLE_EQUAL(c.deletion[m][k], c.full, 1e-6);
    CU_ASSERT(c.full > 0 && c.full <= 1);
    occlusion_comparison_free(&c);
    CU_ASSERT_PTR_NULL(c.maps.data);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_deletion_curve_falls_with_the_whole_map(void) {
    // every patch of the shirt ranked by the falls: the top 10 black hurt more than the top 1
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor x = picture(&input, 1);
    OcclusionComparison c = compare(&vit, &x, golden_black());
    for (int m = 0; m < OCCLUSION_MAPS; m++)
        for (int k = 0; k < MEASURE_KS; k++)
            CU_ASSERT(c.deletion[m][k] >= 0 && c.deletion[m][k] <= 1);
    CU_ASSERT(c.deletion[0][2] < c.deletion[0][0]);
    CU_ASSERT(c.deletion[0][0] < c.full); // the top patch's own fall is positive
    // the attention maps: [cls] rows, each ≥ 0 over the patches
    for (int m = 1; m < OCCLUSION_MAPS; m++)
        for (int q = 0; q < P; q++) CU_ASSERT(c.maps.data[m * P + q] >= 0);
    occlusion_comparison_free(&c);
    tensor_free(&x);
    tensor_free(&input);
    vit_free(&vit);
}

static void test_black_per_channel_by_hand(void) {
    // torchvision's ImageNet normalisation: black is −mean/std in each channel
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    float black[3];
    occlusion_black(black, mean, std, 3);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(black[c], (0.0f - mean[c]) / std[c]);
    CU_ASSERT_DOUBLE_EQUAL(black[0], -2.1179, 1e-4);
    // a (3, 4, 4) picture of 2×2 patches: patch 3 (rows 2–3, columns 2–3) black in each channel
    const VitConfig c = {.channels = 3, .image_size = 4, .patch_size = 2};
    const float own[3] = {-1.0f, -2.0f, -3.0f};
    float image[3 * 4 * 4] = {0};
    const int order[1] = {3};
    occlusion_black_out(image, &c, order, 1, own);
    for (int ch = 0; ch < 3; ch++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                CU_ASSERT_EQUAL(image[(ch * 4 + y) * 4 + x], y >= 2 && x >= 2 ? own[ch] : 0.0f);
}

static void test_refuses_a_batch(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input"); // (2, 1, S, S): two pictures
    OcclusionComparison c;
    VitError err;
    const float black = golden_black();
    CU_ASSERT_EQUAL(occlusion_compare(&c, &vit, &input, &black, &err), VIT_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "one (1, 1, 28, 28) picture") != NULL);
    CU_ASSERT_PTR_NULL(c.maps.data);
    tensor_free(&input);
    vit_free(&vit);
}

/* ---------------------------------------------------------- vit occlusion */

// lib's comparison of the picture at PATH, preprocessed as `vit classify` does.
static OcclusionComparison compare_file(Vit *vit, const char *path) {
    Preprocess pre;
    Image img;
    VitError err;
    const VitConfig *c = &vit->config;
    CU_ASSERT_FATAL(image_preprocess_for_model(&pre, NULL, "fashion-mnist", &vit->file,
                                               c->image_size, c->channels, &err) == VIT_OK);
    CU_ASSERT_FATAL(image_load(&img, path, &err) == VIT_OK);
    Tensor input = tensor_new(4, 1, c->channels, c->image_size, c->image_size);
    image_preprocess(input.data, &img, &pre);
    image_free(&img);
    float black;
    occlusion_black(&black, pre.mean, pre.std, 1);
    CU_ASSERT_EQUAL(black, golden_black());
    OcclusionComparison cmp = compare(vit, &input, black);
    tensor_free(&input);
    return cmp;
}

// The P numbers after "row by row):" in `out`; how many were read.
static int parse_grid(const char *out, float *grid) {
    const char *at = strstr(out, "row by row):\n");
    if (!at) return 0;
    char *p = (char *)at + strlen("row by row):\n");
    int n = 0;
    for (; n < P; n++) {
        char *end;
        grid[n] = strtof(p, &end);
        if (end == p) break;
        p = end;
    }
    return n;
}

// The K numbers after "\n  NAME " in `out`; how many were read.
static int parse_deletion(const char *out, const char *name, double *probs) {
    char key[64];
    snprintf(key, sizeof key, "\n  %s  ", name);
    const char *at = strstr(out, key);
    if (!at) return 0;
    char *p = (char *)at + strlen(key);
    int n = 0;
    for (; n < MEASURE_KS; n++) {
        char *end;
        probs[n] = strtod(p, &end);
        if (end == p) break;
        p = end;
    }
    return n;
}

static void test_cli_prints_libs_numbers(void) {
    Vit vit = shipped();
    char model[PATH_SIZE], shirt[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(shirt, sizeof shirt, PICTURES[1]);
    OcclusionComparison c = compare_file(&vit, shirt);
    CliResult r = VIT_RUN("occlusion", "--weights", model, shirt);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    float grid[P];
    CU_ASSERT_EQUAL_FATAL(parse_grid(r.out, grid), P);
    for (int q = 0; q < P; q++) CU_ASSERT_DOUBLE_EQUAL(grid[q], c.maps.data[q], 0.5e-4 + 1e-7);
    for (int m = 0; m < OCCLUSION_MAPS; m++) {
        double printed[MEASURE_KS];
        const char *name = rollout_map_method_name(occlusion_compared[m]);
        CU_ASSERT_EQUAL_FATAL(parse_deletion(r.out, name, printed), MEASURE_KS);
        for (int k = 0; k < MEASURE_KS; k++)
            CU_ASSERT_DOUBLE_EQUAL(printed[k], c.deletion[m][k], 0.5e-4 + 1e-7);
    }
    char full[64];
    snprintf(full, sizeof full, "T-shirt/top, p = %.4f", c.full);
    CU_ASSERT(strstr(r.out, full) != NULL);
    cli_result_free(&r);
    occlusion_comparison_free(&c);
    vit_free(&vit);
}

static void test_cli_refusals(void) {
    char model[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    EXPECT_FAILURE(VIT_RUN("occlusion", "--weights", model), 2, "needs an IMAGE");
    EXPECT_FAILURE(VIT_RUN("occlusion", "--weights", "no-such-model.safetensors", "x.png"), 1,
                   "no-such-model.safetensors");
    EXPECT_FAILURE(VIT_RUN("occlusion", "--weights", model, "no-such-picture.png"), 1,
                   "no-such-picture.png");
    EXPECT_FAILURE(VIT_RUN("occlusion", model), 2, "--weights");
}

CU_TestInfo tests_occlusion[] = {
    {"occlusion against PyTorch (shipped model, two pictures)", test_occlusion_against_pytorch},
    {"a patch black already falls by 0", test_black_patches_fall_by_zero},
    {"a batch's falls are each picture's", test_batch_is_each_picture},
    {"a black picture's map is all zeros", test_black_picture_is_all_zeros},
    {"deletion curves are probabilities, falling", test_deletion_curve_falls_with_the_whole_map},
    {"black in each channel, by hand", test_black_per_channel_by_hand},
    {"one picture only", test_refuses_a_batch},
    {"vit occlusion prints lib's numbers", test_cli_prints_libs_numbers},
    {"vit occlusion refuses what it cannot read", test_cli_refusals},
    CU_TEST_INFO_NULL,
};
