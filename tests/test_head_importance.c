/**
 * @file test_head_importance.c
 * @brief Head importance (lib/explain/head_importance.c): every head switched
 *        off in turn, the change in the class's probability, against PyTorch;
 *        and `vit heads`, which prints it.
 *
 * The golden, tests/golden/head_importance.safetensors, comes from
 * tools/gen_golden_head_off.py: its own ViT with Hugging Face's `head_mask`,
 * in float64, on the model vit_build_random() draws here (the `head_off`
 * suite's, CONFIG) and a batch of two PCG32 images. Every expected value is
 * the golden's, or the `head_off` golden's logits of the same model with layer
 * 0's heads all off.
 *
 *  - Against PyTorch: the grid and the layers' column for the predicted
 *    class, and for a class chosen per image; the most important head.
 *  - Exactly: a pass with no head off gives a change of 0, bit for bit; the
 *    caller's switches do not change the grid and are as they were after it.
 *  - `vit heads` on the shipped model and picture prints lib's numbers.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "base/rng.h"
#include "explain/head_importance.h"
#include "io/image.h"
#include "io/labels.h"
#include "model/vit.h"

#define GOLDEN "head_importance.safetensors"

// The model of tools/gen_golden_head_off.py (CONFIG there; the golden's "config" says it).
enum { S = 12, P = 4, D = 24, L = 3, H = 3, M = 40, Y = 7, B = 2 };
static const char *const CONFIG = "img=12 patch=4 chans=3 dim=24 depth=3 heads=3 mlp_dim=40 "
                                  "classes=7 batch=2 seed=91 std=0.25 bias_std=0.1 "
                                  "norm_std=0.1 input_seed=92";
static const int CHOSEN[B] = {3, 5}; // the golden's CLASSES: its chosen.* entries

static Vit model(void) {
    const VitConfig cfg = {.image_size = S, .patch_size = P, .channels = 3, .dim = D,
                           .depth = L, .heads = H, .mlp_dim = M, .num_classes = Y,
                           .ln_eps = 1e-6f};
    const VitInit init = {.seed = 91, .std = 0.25f, .bias_std = 0.1f, .norm_std = 0.1f};
    Vit vit;
    VitError err;
    VitStatus s = vit_build_random(&vit, &cfg, &init, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    return vit;
}

static Tensor images(void) {
    Tensor x = tensor_new(4, B, 3, S, S);
    Rng rng;
    rng_seed(&rng, 92);
    rng_fill_uniform(&rng, x.data, x.numel, -1.0f, 1.0f);
    return x;
}

// The golden's metadata entry KEY, copied into buf ("" when missing).
static const char *golden_meta(const char *key, char *buf, size_t size) {
    SafeTensors st;
    VitError err;
    buf[0] = '\0';
    if (st_open(&st, golden_path(GOLDEN), &err) == VIT_OK) {
        const char *v = st_meta(&st, key);
        if (v) snprintf(buf, size, "%s", v);
        st_close(&st);
    }
    return buf;
}

// Compare actual with golden NAME at the tolerance the golden names for it.
static void expect_golden(const char *name, const Tensor *actual) {
    char key[128], tol[64];
    float atol = CHECK_ATOL, rtol = CHECK_RTOL;
    snprintf(key, sizeof key, "tol.%s", name);
    if (sscanf(golden_meta(key, tol, sizeof tol), "%f %f", &atol, &rtol) != 2)
        atol = CHECK_ATOL, rtol = CHECK_RTOL;
    Tensor expected = golden_tensor(GOLDEN, name);
    assert_tensor_close(actual, &expected, atol, rtol, name);
    if (golden_report_wanted() && tensor_same_shape(actual, &expected))
        fprintf(stderr, "\n    %s: max |diff| %.3g (atol %.3g)", name,
                (double)tensor_max_abs_diff(actual, &expected), (double)atol);
    tensor_free(&expected);
}

static void measure(HeadImportance *hi, Vit *vit, const Tensor *x, const int *classes) {
    VitError err;
    VitStatus s = head_importance(hi, vit, x, classes, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
}

// The grid and the layers' column against the golden's PREFIX"grid" and PREFIX"layer".
static void expect_grid(const HeadImportance *hi, const char *prefix) {
    char name[64];
    Tensor grid = tensor_view(hi->delta, 3, B, L, H), layer = tensor_view(hi->layer_delta, 2, B, L);
    snprintf(name, sizeof name, "%sgrid", prefix);
    expect_golden(name, &grid);
    snprintf(name, sizeof name, "%slayer", prefix);
    expect_golden(name, &layer);
}

// The full model's probability of each image's class, against the golden's full.probs.
static void expect_full(const HeadImportance *hi) {
    Tensor probs = golden_tensor(GOLDEN, "full.probs"); // (B, Y)
    for (int b = 0; b < B; b++)
        CU_ASSERT_DOUBLE_EQUAL(hi->full[b], probs.data[b * Y + hi->classes[b]], 2e-6);
    tensor_free(&probs);
}

static void set_off(Vit *vit, int layer, int head) {
    VitError err;
    CU_ASSERT_FATAL(vit_set_head_off(vit, layer, head, true, &err) == VIT_OK);
}

/* ---------------------------------------------------- against PyTorch */

static void test_the_model_is_the_golden_one(void) {
    char config[256];
    CU_ASSERT_STRING_EQUAL(golden_meta("config", config, sizeof config), CONFIG);
}

static void test_the_predicted_class(void) {
    Vit vit = model();
    Tensor x = images();
    HeadImportance hi;
    measure(&hi, &vit, &x, NULL);
    CU_ASSERT_EQUAL(hi.batch, B);
    CU_ASSERT_EQUAL(hi.layers, L);
    CU_ASSERT_EQUAL(hi.heads, H);
    Tensor predicted = golden_tensor(GOLDEN, "predicted");
    for (int b = 0; b < B; b++) CU_ASSERT_EQUAL(hi.classes[b], (int)predicted.data[b]);
    expect_full(&hi);
    expect_grid(&hi, "");
    tensor_free(&predicted);
    head_importance_free(&hi);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_a_chosen_class(void) {
    Vit vit = model();
    Tensor x = images();
    HeadImportance hi;
    measure(&hi, &vit, &x, CHOSEN);
    for (int b = 0; b < B; b++) CU_ASSERT_EQUAL(hi.classes[b], CHOSEN[b]);
    expect_full(&hi);
    expect_grid(&hi, "chosen.");
    head_importance_free(&hi);
    tensor_free(&x);
    vit_free(&vit);
}

// The smallest entry of each image's golden grid is the head head_importance_most() names.
static void test_the_most_important_head(void) {
    Vit vit = model();
    Tensor x = images(), grid = golden_tensor(GOLDEN, "grid"); // (B, L, H)
    HeadImportance hi;
    measure(&hi, &vit, &x, NULL);
    for (int b = 0; b < B; b++) {
        int best = 0, layer = -1, head = -1;
        for (int i = 1; i < L * H; i++)
            if (grid.data[b * L * H + i] < grid.data[b * L * H + best]) best = i;
        head_importance_most(&hi, b, &layer, &head);
        CU_ASSERT_EQUAL(layer, best / H);
        CU_ASSERT_EQUAL(head, best % H);
    }
    tensor_free(&grid);
    head_importance_free(&hi);
    tensor_free(&x);
    vit_free(&vit);
}

/* ------------------------------------------------------------ exactly */

// No head off: the same pass as the full model's, so a change of exactly 0.
static void test_no_head_off_changes_nothing(void) {
    Vit vit = model();
    Tensor x = images();
    HeadImportance hi;
    VitError err;
    measure(&hi, &vit, &x, NULL);
    double p[B];
    CU_ASSERT_FATAL(head_class_probs(p, &vit, &x, hi.classes, &err) == VIT_OK);
    for (int b = 0; b < B; b++) CU_ASSERT_EQUAL(p[b] - hi.full[b], 0.0);
    set_off(&vit, 1, 1); // off and on again: still the full model, bit for bit
    vit_heads_all_on(&vit);
    CU_ASSERT_FATAL(head_class_probs(p, &vit, &x, hi.classes, &err) == VIT_OK);
    for (int b = 0; b < B; b++) CU_ASSERT_EQUAL(p[b] - hi.full[b], 0.0);
    head_importance_free(&hi);
    tensor_free(&x);
    vit_free(&vit);
}

// Layer 0's heads all off: the head_off golden's `layer` logits, softmaxed here, and
// the head_importance golden's column for layer 0.
static void test_a_whole_layer_off_is_the_layer_case(void) {
    Vit vit = model();
    Tensor x = images();
    Tensor logits = golden_tensor("head_off.safetensors", "layer.logits"); // (B, Y)
    Tensor full = golden_tensor(GOLDEN, "full.probs"), layer = golden_tensor(GOLDEN, "layer");
    Tensor predicted = golden_tensor(GOLDEN, "predicted");
    int classes[B];
    for (int b = 0; b < B; b++) classes[b] = (int)predicted.data[b];
    set_off(&vit, 0, -1);
    double p[B];
    VitError err;
    CU_ASSERT_FATAL(head_class_probs(p, &vit, &x, classes, &err) == VIT_OK);
    for (int b = 0; b < B; b++) {
        double sum = 0;
        for (int j = 0; j < Y; j++) sum += exp((double)logits.data[b * Y + j]);
        const double expected = exp((double)logits.data[b * Y + classes[b]]) / sum;
        CU_ASSERT_DOUBLE_EQUAL(p[b], expected, 2e-6);
        CU_ASSERT_DOUBLE_EQUAL(p[b] - full.data[b * Y + classes[b]], layer.data[b * L + 0], 2e-6);
    }
    tensor_free(&logits);
    tensor_free(&full);
    tensor_free(&layer);
    tensor_free(&predicted);
    tensor_free(&x);
    vit_free(&vit);
}

// Heads the caller switched off: the grid is still against every head on, and
// the switches are as they were afterwards.
static void test_the_switches_are_put_back(void) {
    Vit vit = model();
    Tensor x = images();
    set_off(&vit, 1, 1);
    set_off(&vit, 2, -1);
    bool before[L * H];
    memcpy(before, vit.heads_off, sizeof before);
    HeadImportance hi;
    measure(&hi, &vit, &x, NULL);
    expect_grid(&hi, "");
    CU_ASSERT_EQUAL(memcmp(before, vit.heads_off, sizeof before), 0);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 1 + H);
    head_importance_free(&hi);
    tensor_free(&x);
    vit_free(&vit);
}

/** What the progress listener heard. */
typedef struct {
    int calls, last_done, total;
    bool in_order;
} Heard;

static void hear(void *user, int done, int total) {
    Heard *h = user;
    h->in_order &= done == h->last_done + 1 && (h->calls == 0 || total == h->total);
    h->calls++, h->last_done = done, h->total = total;
}

// One call per pass, in order: the full model, then L·(H + 1) switched.
static void test_progress_counts_the_passes(void) {
    Vit vit = model();
    Tensor x = images();
    HeadImportance hi;
    VitError err;
    Heard heard = {.in_order = true};
    CU_ASSERT_FATAL(head_importance_watched(&hi, &vit, &x, NULL, hear, &heard, &err) == VIT_OK);
    CU_ASSERT_EQUAL(heard.calls, L * H + L + 1);
    CU_ASSERT_EQUAL(heard.total, L * H + L + 1);
    CU_ASSERT_EQUAL(heard.last_done, heard.total);
    CU_ASSERT(heard.in_order);
    expect_grid(&hi, ""); // the same measure as head_importance()'s
    head_importance_free(&hi);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_a_class_outside_the_model(void) {
    Vit vit = model();
    Tensor x = images();
    set_off(&vit, 2, 0);
    HeadImportance hi;
    VitError err = {{0}};
    const int classes[B] = {0, Y};
    CU_ASSERT_EQUAL(head_importance(&hi, &vit, &x, classes, &err), VIT_ERR_INPUT);
    CU_ASSERT_STRING_EQUAL(err.msg, "class 7 of image 1: the model has classes 0 to 6");
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 1); // put back, failure or not
    CU_ASSERT(vit.heads_off[2 * H + 0]);
    head_importance_free(&hi);
    CU_ASSERT_PTR_NULL(hi.delta);
    tensor_free(&x);
    vit_free(&vit);
}

/* ---------------------------------------------------------- vit heads */

enum { PATH_SIZE = 512 };

// The shipped model's grid for the shipped ankle boot, by lib, preprocessed as the CLI does.
static void shipped_grid(HeadImportance *hi, char *model, char *boot) {
    vit_data_path(model, PATH_SIZE, "models/vit-fashion.safetensors");
    vit_data_path(boot, PATH_SIZE, "images/fashion-mnist/0000-ankle-boot.png");
    Vit vit;
    VitError err;
    Preprocess pre;
    Image img;
    CU_ASSERT_FATAL(vit_build(&vit, model, &err) == VIT_OK);
    const VitConfig *c = &vit.config;
    CU_ASSERT_FATAL(image_preprocess_for_model(&pre, NULL, "fashion-mnist", &vit.file,
                                               c->image_size, c->channels, &err) == VIT_OK);
    CU_ASSERT_FATAL(image_load(&img, boot, &err) == VIT_OK);
    Tensor x = tensor_new(4, 1, c->channels, c->image_size, c->image_size);
    image_preprocess(x.data, &img, &pre);
    measure(hi, &vit, &x, NULL);
    image_free(&img);
    tensor_free(&x);
    vit_free(&vit);
}

// `vit heads` prints lib's grid: each layer's row, "%+.4f" per head and for the
// layer's heads all off, and the most important head.
static void test_vit_heads_prints_lib_s_grid(void) {
    char model[PATH_SIZE], boot[PATH_SIZE];
    HeadImportance hi;
    shipped_grid(&hi, model, boot);
    CliResult r = VIT_RUN("heads", "--weights", model, boot);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    const int L2 = hi.layers, H2 = hi.heads;
    int rows = 0;
    for (const char *line = strstr(r.out, "\n  layer "); line; line = strstr(line + 1, "\n  layer ")) {
        int l, used;
        CU_ASSERT_FATAL(sscanf(line, " layer %d%n", &l, &used) == 1 && l == rows);
        const char *at = line + used;
        for (int h = 0; h <= H2; h++) { // the heads, then the layer's heads all off
            char printed[32], expected[32];
            CU_ASSERT_FATAL(sscanf(at, " %31s%n", printed, &used) == 1);
            at += used;
            const float v = h < H2 ? hi.delta[l * H2 + h] : hi.layer_delta[l];
            snprintf(expected, sizeof expected, "%+.4f", (double)v);
            if (strcmp(printed, expected))
                fprintf(stderr, "\n    layer %d column %d: printed %s, lib %s", l, h, printed,
                        expected);
            CU_ASSERT_STRING_EQUAL(printed, expected);
        }
        rows++;
    }
    CU_ASSERT_EQUAL(rows, L2);
    int layer, head;
    head_importance_most(&hi, 0, &layer, &head);
    char most[96];
    snprintf(most, sizeof most, "most important: layer %d, head %d: %.4f → ", layer, head,
             hi.full[0]);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, most));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Ankle boot (class 9): probability"));
    cli_result_free(&r);
    head_importance_free(&hi);
}

static void test_vit_heads_refuses(void) {
    char model[PATH_SIZE], boot[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, "images/fashion-mnist/0000-ankle-boot.png");
    EXPECT_FAILURE(VIT_RUN("heads", "--weights", model), 2, "needs at least one IMAGE");
    EXPECT_FAILURE(VIT_RUN("heads", "--weights", model, "--class", "10", boot), 2, "--class 10",
                   "classes 0 to 9");
    EXPECT_FAILURE(VIT_RUN("heads", "--weights", "/nonexistent/w.safetensors", boot), 1,
                   "/nonexistent/w.safetensors");
    EXPECT_FAILURE(VIT_RUN("heads", "--weights", model, "/nonexistent/boot.png"), 1,
                   "/nonexistent/boot.png");
    CliResult r = VIT_RUN("heads", "--help");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "head_mask"));
    cli_result_free(&r);
}

CU_TestInfo tests_head_importance[] = {
    {"the model is the golden's", test_the_model_is_the_golden_one},
    {"the predicted class's grid, as PyTorch's", test_the_predicted_class},
    {"a chosen class's grid, as PyTorch's", test_a_chosen_class},
    {"the most important head", test_the_most_important_head},
    {"no head off: a change of exactly 0", test_no_head_off_changes_nothing},
    {"a whole layer off: the head_off golden's layer case", test_a_whole_layer_off_is_the_layer_case},
    {"the caller's switches: not in the grid, put back", test_the_switches_are_put_back},
    {"progress: one call per pass, in order", test_progress_counts_the_passes},
    {"a class outside the model is refused", test_a_class_outside_the_model},
    {"vit heads prints lib's grid", test_vit_heads_prints_lib_s_grid},
    {"vit heads refuses what it cannot measure", test_vit_heads_refuses},
    CU_TEST_INFO_NULL,
};
