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
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "io/image.h"
#include "io/labels.h"
#include "io/safetensors.h"

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

// --out and --raw may not be one file, however it is spelled: the numbers,
// written second, would replace the picture. Refused before any work (exit 2,
// as vit train refuses two of its outputs that are one file), nothing written.
static void test_outputs_are_two_files(void) {
    shipped_paths();
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char png[PATH_SIZE], dotted[PATH_SIZE], sym[PATH_SIZE], hard[PATH_SIZE];
    scratch_file(&d, "x.png", png, sizeof png);
    scratch_file(&d, "./x.png", dotted, sizeof dotted);
    scratch_file(&d, "link.png", sym, sizeof sym);
    scratch_file(&d, "hard.png", hard, sizeof hard);
    // neither exists yet: the same path, and another spelling of it
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--raw", png), 2,
                   "--out", "--raw", "one file");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--raw", dotted),
                   2, "--out", "--raw", "one file");
    CU_ASSERT_EQUAL(scratch_count(&d), 0);
    // a link to --out's file, which does not exist yet: --out would make it, and
    // --raw, written next, would follow the link over it. Refused before any work.
    CU_ASSERT_EQUAL_FATAL(symlink("x.png", sym), 0);
    CliResult r = VIT_RUN("attention", "--weights", model, boot, "--out", png, "--raw", sym);
    CU_ASSERT(r.status == 1 || r.status == 2);
    CU_ASSERT_STRING_EQUAL(r.out, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "link.png"));
    cli_result_free(&r);
    CU_ASSERT_EQUAL(scratch_count(&d), 1); // the link alone: no picture made
    CU_ASSERT_EQUAL_FATAL(unlink(sym), 0);
    // it exists: a symbolic link to it, and a hard link, are the same file too
    write_text(png, "precious");
    CU_ASSERT_EQUAL_FATAL(symlink("x.png", sym), 0);
    CU_ASSERT_EQUAL_FATAL(link(png, hard), 0);
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", png, "--raw", sym), 2,
                   "--out", "--raw", "one file");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--out", hard, "--raw", png), 2,
                   "--out", "--raw", "one file");
    CU_ASSERT(has_text(png, "precious"));
    CU_ASSERT_EQUAL(scratch_count(&d), 3); // no temporary file left either
    // and each output against each input: --raw over the weights or the image (copies)
    char weights[PATH_SIZE], image[PATH_SIZE], out[PATH_SIZE];
    scratch_file(&d, "w.safetensors", weights, sizeof weights);
    scratch_file(&d, "boot.png", image, sizeof image);
    scratch_file(&d, "out.png", out, sizeof out);
    copy_file(model, weights);
    copy_file(boot, image);
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", weights, image, "--out", out, "--raw",
                           weights), 1, "--raw", "--weights", "refusing to overwrite");
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", weights, image, "--out", out, "--raw", image),
                   1, "--raw", "IMAGE", "refusing to overwrite");
    CU_ASSERT(same_bytes(weights, model));
    CU_ASSERT(same_bytes(image, boot));
    CU_ASSERT_EQUAL(scratch_count(&d), 5);
    scratch_remove(&d);
}

// Every file name it prints reaches the terminal escaped: an image, a picture and
// a numbers file whose names hold an escape sequence that would turn the text red.
static void test_names_reach_the_terminal_escaped(void) {
    shipped_paths();
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char image[PATH_SIZE], png[PATH_SIZE], raw[PATH_SIZE];
    scratch_file(&d, "boot\033[31m.png", image, sizeof image);
    scratch_file(&d, "map\033[31m.png", png, sizeof png);
    scratch_file(&d, "map\033[31m.safetensors", raw, sizeof raw);
    copy_file(boot, image);
    CliResult r = VIT_RUN("attention", "--weights", model, image, "--out", png, "--raw", raw);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_PTR_NULL(strchr(r.out, '\033')); // not one raw ESC byte
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "boot\\x1b[31m.png: predicted: Ankle boot"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "wrote "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "map\\x1b[31m.png (324×266)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "map\\x1b[31m.safetensors\n"));
    cli_result_free(&r);
    expect_png(png, 324, 266); // written under its own name, escape and all
    scratch_remove(&d);
}

// A bound a flag's help states is a value it accepts: --discard's largest, 0.999.
static void test_discard_takes_its_largest_value(void) {
    shipped_paths();
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char raw[PATH_SIZE];
    scratch_file(&d, "r.safetensors", raw, sizeof raw);
    CliResult r = VIT_RUN("attention", "--weights", model, boot, "--discard", "0.999", "--raw", raw);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "discard 0.999"));
    cli_result_free(&r);
    EXPECT_FAILURE(VIT_RUN("attention", "--weights", model, boot, "--discard", "0.9991", "--raw",
                           raw), 2, "--discard", "out of range [0, 0.999]");
    scratch_remove(&d);
}

CU_TestInfo tests_attention_cli[] = {
    {"a rollout: its numbers are PyTorch's, its picture", test_rollout_file},
    {"gradient-weighted, the grid and one head", test_grad_and_grid_files},
    {"what it refuses", test_refusals},
    {"--out and --raw are two files, neither an input", test_outputs_are_two_files},
    {"file names reach the terminal escaped", test_names_reach_the_terminal_escaped},
    {"--discard takes its largest value", test_discard_takes_its_largest_value},
    CU_TEST_INFO_NULL,
};
