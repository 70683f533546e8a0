/**
 * @file test_lens.c
 * @brief The logit lens (lib/explain/logit_lens.c) against PyTorch, its
 *        properties, and `vit lens` printing lib's numbers.
 *
 * The golden, tests/golden/lens.safetensors, comes from
 * tools/gen_golden_lens.py: tools/ref_vit.py's RefViT in float64 on the
 * shipped model, data/models/vit-fashion.safetensors, its own norm and head
 * applied to `embed` and each `blocks.{i}.out`, for two shipped pictures (an
 * ankle boot and a shirt), whose normalised pixels the golden stores.
 *
 *  - Against PyTorch: the (B, L + 1, Y) probabilities, and the model's output.
 *  - Exactly: the last depth is the model's own output (softmax of its
 *    logits), bit for bit; every row sums to 1; depth 0 is the same for every
 *    picture ([cls] + its position knows nothing of the image); reading a
 *    recorded trace gives what listening to the pass gives.
 *  - logit_lens_settles() on hand-made rows and on the golden's.
 *  - `vit lens` prints lib's numbers, to the 4 decimals it shows, and refuses
 *    what it cannot read.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "explain/logit_lens.h"
#include "io/image.h"
#include "io/labels.h"
#include "ops/ops.h"

#define GOLDEN "lens.safetensors"

// The shipped model: 6 blocks, 10 classes; the golden's batch of two pictures.
enum { L = 6, DEPTHS = L + 1, Y = 10, B = 2, PATH_SIZE = 512 };
static const char *const PICTURES[B] = {"images/fashion-mnist/0000-ankle-boot.png",
                                        "images/fashion-mnist/0004-shirt.png"};

static Vit shipped(void) {
    Vit vit = check_shipped_model();
    CU_ASSERT_EQUAL_FATAL(vit.config.depth, L);
    CU_ASSERT_EQUAL_FATAL(vit.config.num_classes, Y);
    return vit;
}

static Tensor lens_of(Vit *vit, const Tensor *input) {
    Tensor probs = {0};
    VitError err;
    VitStatus s = logit_lens_run(&probs, vit, input, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    return probs;
}

/* ------------------------------------------------------------ against PyTorch */

static void test_lens_against_pytorch(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor probs = lens_of(&vit, &input);
    CU_ASSERT_EQUAL(probs.ndim, 3);
    CU_ASSERT(probs.shape[0] == B && probs.shape[1] == DEPTHS && probs.shape[2] == Y);
    expect_golden_tensor(GOLDEN, "lens", &probs);
    Tensor out = tensor_new(2, B, Y); // and the model's own output, after the same pass
    softmax(out.data, vit_logits(&vit).data, B, Y);
    expect_golden_tensor(GOLDEN, "probs", &out);
    tensor_free(&out);
    tensor_free(&probs);
    tensor_free(&input);
    vit_free(&vit);
}

/* ------------------------------------------------------------ properties */

static void test_last_depth_is_the_output_bit_for_bit(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor probs = lens_of(&vit, &input);
    float out[B * Y];
    softmax(out, vit_logits(&vit).data, B, Y); // what `vit classify` prints
    for (int b = 0; b < B; b++) {
        const float *last = probs.data + ((size_t)b * DEPTHS + L) * Y;
        CU_ASSERT(memcmp(last, out + (size_t)b * Y, sizeof(float) * Y) == 0);
    }
    tensor_free(&probs);
    tensor_free(&input);
    vit_free(&vit);
}

static void test_rows_are_distributions(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor probs = lens_of(&vit, &input);
    for (int r = 0; r < B * DEPTHS; r++) {
        double sum = 0;
        for (int k = 0; k < Y; k++) {
            const float p = probs.data[(size_t)r * Y + k];
            CU_ASSERT(p >= 0.0f && p <= 1.0f);
            sum += p;
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
    }
    tensor_free(&probs);
    tensor_free(&input);
    vit_free(&vit);
}

static void test_depth_zero_knows_no_picture(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor probs = lens_of(&vit, &input);
    // embed's [cls] row is cls_token + pos_embed[0] for every image
    CU_ASSERT(memcmp(probs.data, probs.data + (size_t)DEPTHS * Y, sizeof(float) * Y) == 0);
    CU_ASSERT(memcmp(probs.data + Y, probs.data + (size_t)(DEPTHS + 1) * Y,
                     sizeof(float) * Y) != 0); // after a block it does
    tensor_free(&probs);
    tensor_free(&input);
    vit_free(&vit);
}

static void test_recorded_trace_gives_the_same(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor listened = lens_of(&vit, &input);
    TraceRecorder r = {0};
    VitError err;
    CU_ASSERT_FATAL(vit_forward(&vit, &input, trace_record, &r, &err) == VIT_OK);
    Tensor read = {0};
    CU_ASSERT_FATAL(logit_lens_from_trace(&read, &vit, &r, &err) == VIT_OK);
    CU_ASSERT_FATAL(tensor_same_shape(&read, &listened));
    CU_ASSERT(memcmp(read.data, listened.data, sizeof(float) * read.numel) == 0);
    tensor_free(&read);
    trace_recorder_free(&r);
    TraceRecorder empty = {0}; // nothing recorded: the message names the first stage missing
    CU_ASSERT_EQUAL(logit_lens_from_trace(&read, &vit, &empty, &err), VIT_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "no embed") != NULL);
    CU_ASSERT_PTR_NULL(read.data);
    tensor_free(&listened);
    tensor_free(&input);
    vit_free(&vit);
}

static void test_stage_names(void) {
    char buf[32];
    CU_ASSERT_STRING_EQUAL(logit_lens_stage(buf, sizeof buf, 0), "embed");
    CU_ASSERT_STRING_EQUAL(logit_lens_stage(buf, sizeof buf, 1), "blocks.0.out");
    CU_ASSERT_STRING_EQUAL(logit_lens_stage(buf, sizeof buf, 6), "blocks.5.out");
    CU_ASSERT_EQUAL(logit_lens_depths(6), 7);
}

/* ------------------------------------------------------- when it settles */

static void test_settles_by_hand(void) {
    // 4 depths of 3 classes; the answer is class 2
    const float late[4 * 3] = {.5f, .3f, .2f, .1f, .6f, .3f, .2f, .2f, .6f, .1f, .1f, .8f};
    CU_ASSERT_EQUAL(logit_lens_settles(late, 4, 3), 2);
    const float always[2 * 3] = {.1f, .2f, .7f, .0f, .1f, .9f};
    CU_ASSERT_EQUAL(logit_lens_settles(always, 2, 3), 0);
    // on top at depth 0, lost at 1, back from 2: it settles at 2, not 0
    const float back[3 * 3] = {.1f, .2f, .7f, .1f, .8f, .1f, .1f, .1f, .8f};
    CU_ASSERT_EQUAL(logit_lens_settles(back, 3, 3), 2);
    const float only_last[2 * 2] = {.9f, .1f, .1f, .9f};
    CU_ASSERT_EQUAL(logit_lens_settles(only_last, 2, 2), 1);
}

static void test_settles_on_the_golden(void) {
    Tensor g = golden_tensor(GOLDEN, "lens");
    // the boot: Sneaker on top after block 2, Ankle boot from block 3 (depth 4) on;
    // the shirt: Shirt until block 4, T-shirt/top only at the output (depth 6)
    CU_ASSERT_EQUAL(logit_lens_settles(g.data, DEPTHS, Y), 4);
    CU_ASSERT_EQUAL(logit_lens_settles(g.data + (size_t)DEPTHS * Y, DEPTHS, Y), 6);
    tensor_free(&g);
}

/* ------------------------------------------------------------------ vit lens */

// lib's lens of the picture at data/RELATIVE, preprocessed as `vit classify` does.
static Tensor lens_of_file(Vit *vit, const char *path) {
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
    Tensor probs = lens_of(vit, &input);
    tensor_free(&input);
    return probs;
}

// The first index of the largest of n values, counted here (not by the code under test).
static int argmax(const float *p, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[best]) best = i;
    return best;
}

// The rows of the table: after its heading line, "  BLOCK  NAME…  P  P_ANSWER" per depth.
static int parse_rows(const char *out, float *top, float *answer, char names[][32]) {
    const char *line = strstr(out, "\n  block ");
    int n = 0;
    for (line = line ? strchr(line + 1, '\n') : NULL; line && n < DEPTHS;
         line = strchr(line + 1, '\n'), n++) {
        const char *end = strchr(line + 1, '\n');
        if (!end) break;
        char row[160];
        snprintf(row, sizeof row, "%.*s", (int)(end - line - 1), line + 1);
        char *last = strrchr(row, ' ');
        if (!last) break;
        answer[n] = strtof(last + 1, NULL);
        *last = '\0';
        while (last > row && last[-1] == ' ') *--last = '\0';
        char *before = strrchr(row, ' ');
        if (!before) break;
        top[n] = strtof(before + 1, NULL);
        *before = '\0';
        char block[16];
        int used = 0;
        if (sscanf(row, " %15s %n", block, &used) != 1) break;
        snprintf(names[n], 32, "%s", row + used);
        for (char *e = names[n] + strlen(names[n]); e > names[n] && e[-1] == ' ';) *--e = '\0';
    }
    return n;
}

static void test_cli_prints_libs_numbers(void) {
    Vit vit = shipped();
    char model[PATH_SIZE], boot[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, PICTURES[0]);
    Tensor probs = lens_of_file(&vit, boot);
    CliResult r = VIT_RUN("lens", "--weights", model, boot);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    float top[DEPTHS], answer[DEPTHS];
    char names[DEPTHS][32];
    CU_ASSERT_EQUAL_FATAL(parse_rows(r.out, top, answer, names), DEPTHS);
    Labels labels = {0};
    VitError err;
    CU_ASSERT_FATAL(labels_for_weights(&labels, NULL, NULL, &vit.file, Y, &err) == VIT_OK);
    const int final = argmax(probs.data + (size_t)L * Y, Y);
    for (int d = 0; d < DEPTHS; d++) {
        const float *p = probs.data + (size_t)d * Y;
        const int k = argmax(p, Y);
        CU_ASSERT_DOUBLE_EQUAL(top[d], p[k], 0.5e-4 + 1e-7); // printed with 4 decimals
        CU_ASSERT_DOUBLE_EQUAL(answer[d], p[final], 0.5e-4 + 1e-7);
        CU_ASSERT_STRING_EQUAL(names[d], labels_name(&labels, k));
    }
    CU_ASSERT(strstr(r.out, "p(Ankle boot)") != NULL);
    CU_ASSERT(strstr(r.out, "Ankle boot is on top from block 3 on.") != NULL);
    labels_free(&labels);
    cli_result_free(&r);
    tensor_free(&probs);
    vit_free(&vit);
}

static void test_cli_refusals(void) {
    char model[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    EXPECT_FAILURE(VIT_RUN("lens", "--weights", model), 2, "needs an IMAGE");
    EXPECT_FAILURE(VIT_RUN("lens", "--weights", "no-such-model.safetensors", "x.png"), 1,
                   "no-such-model.safetensors");
    EXPECT_FAILURE(VIT_RUN("lens", "--weights", model, "no-such-picture.png"), 1,
                   "no-such-picture.png");
    EXPECT_FAILURE(VIT_RUN("lens", model), 2, "--weights");
}

CU_TestInfo tests_lens[] = {
    {"the lens against PyTorch (shipped model, two pictures)", test_lens_against_pytorch},
    {"the last depth is the model's output, bit for bit",
     test_last_depth_is_the_output_bit_for_bit},
    {"every row is a distribution", test_rows_are_distributions},
    {"depth 0 is the same for every picture", test_depth_zero_knows_no_picture},
    {"a recorded trace gives what listening gives", test_recorded_trace_gives_the_same},
    {"the stage read at each depth", test_stage_names},
    {"where the answer settles, by hand", test_settles_by_hand},
    {"where the answer settles, on the golden", test_settles_on_the_golden},
    {"vit lens prints lib's numbers", test_cli_prints_libs_numbers},
    {"vit lens refuses what it cannot read", test_cli_refusals},
    CU_TEST_INFO_NULL,
};
