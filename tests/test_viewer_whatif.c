/**
 * @file test_viewer_whatif.c
 * @brief The viewer's pictures (viewer/pictures.h: the shipped ones in order,
 *        Fashion-MNIST's test images, a masked patch) and its what-if
 *        bookkeeping (viewer/state.h: what is switched off, the first stage
 *        that moved, the summary line), and the two passes it shows, forward
 *        and backward, without a terminal.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../viewer/pictures.h"
#include "../viewer/state.h"
#include "train/dataset.h"
#include "model/vit.h"

// A small grey model like the shipped one: 28×28, patch 4, 2 blocks of 2 heads.
static const VitConfig grey_cfg = {.image_size = 28, .patch_size = 4, .channels = 1, .dim = 8,
                                   .depth = 2, .heads = 2, .mlp_dim = 16, .num_classes = 10,
                                   .ln_eps = 1e-6f};

static void build_grey(Vit *vit) {
    const VitInit init = vit_init_timm(2);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &grey_cfg, &init, &err), VIT_OK);
}

static void test_pictures_step_through_the_shipped_ones(void) {
    Vit vit = {0};
    build_grey(&vit);
    Pictures p;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(pictures_init(&p, &vit, NULL, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.count, 10); // data/images/fashion-mnist: the first of each class
    CU_ASSERT_STRING_EQUAL(p.pre.name, "fashion-mnist");
    Tensor in = {0};
    char desc[160];
    // none shown yet: } gives the first, { the last
    CU_ASSERT_EQUAL(pictures_step(&p, 1, &in, desc, sizeof desc, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.current, 0);
    CU_ASSERT_STRING_EQUAL(desc, "0000-ankle-boot.png 28×28 (fashion-mnist preprocessing)");
    CU_ASSERT_EQUAL(in.shape[1], 1);
    CU_ASSERT_EQUAL(in.shape[2], 28);
    tensor_free(&in);
    CU_ASSERT_EQUAL(pictures_step(&p, -1, &in, desc, sizeof desc, &err), VIT_OK); // wraps
    CU_ASSERT_EQUAL(p.current, 9);
    CU_ASSERT_PTR_NOT_NULL(strstr(desc, "0019-t-shirt-top.png"));
    tensor_free(&in);
    CU_ASSERT_EQUAL(pictures_step(&p, 1, &in, desc, sizeof desc, &err), VIT_OK); // and back
    CU_ASSERT_EQUAL(p.current, 0);
    tensor_free(&in);
    pictures_free(&p);
    vit_free(&vit);
}

// Test image i through the viewer = the dataset's bytes normalised by hand;
// and test image 0 is the shipped PNG 0000-ankle-boot.png, bit for bit.
static void test_pictures_test_image_is_the_dataset_s(void) {
    Vit vit = {0};
    build_grey(&vit);
    Pictures p;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(pictures_init(&p, &vit, NULL, &err), VIT_OK);
    Tensor in = {0}, png = {0};
    char desc[160];
    CU_ASSERT_EQUAL_FATAL(pictures_load_test(&p, 123, &in, desc, sizeof desc, &err), VIT_OK);
    const int label = p.test.labels[123];
    char want[96];
    snprintf(want, sizeof want, "test image 123 (label: %s)", DATASET_FASHION_MNIST_CLASSES[label]);
    CU_ASSERT_STRING_EQUAL(desc, want);
    CU_ASSERT_EQUAL(p.test_index, 123);
    CU_ASSERT_EQUAL(p.current, -1);
    const unsigned char *px = p.test.pixels + 123 * 28 * 28;
    float worst = 0;
    for (int i = 0; i < 28 * 28; i++) {
        const float expect = ((float)px[i] / 255.0f - p.pre.mean[0]) / p.pre.std[0];
        worst = fmaxf(worst, fabsf(in.data[i] - expect));
    }
    CU_ASSERT(worst < 1e-6f);
    tensor_free(&in);

    CU_ASSERT_EQUAL_FATAL(pictures_load_test(&p, 0, &in, desc, sizeof desc, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(pictures_step(&p, 1, &png, desc, sizeof desc, &err), VIT_OK);
    CU_ASSERT_EQUAL(memcmp(in.data, png.data, in.numel * sizeof(float)), 0);
    tensor_free(&in);
    tensor_free(&png);

    CU_ASSERT_EQUAL(pictures_load_test(&p, 10000, &in, desc, sizeof desc, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "test images are 0 to 9999"));
    CU_ASSERT_EQUAL(pictures_load_test(&p, -1, &in, desc, sizeof desc, &err), VIT_ERR_INPUT);
    pictures_free(&p);
    vit_free(&vit);
}

static void test_pictures_without_the_dataset_say_how_to_get_it(void) {
    Vit vit = {0};
    build_grey(&vit);
    Pictures p;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(pictures_init(&p, &vit, NULL, &err), VIT_OK);
    p.test_dir = "/nonexistent/fashion-mnist";
    Tensor in = {0};
    char desc[160];
    CU_ASSERT_EQUAL(pictures_load_test(&p, 3, &in, desc, sizeof desc, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent/fashion-mnist"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "apt-get install dataset-fashion-mnist"));
    CU_ASSERT_PTR_NULL(in.data);
    pictures_free(&p);
    CU_ASSERT_EQUAL(pictures_init(&p, &vit, "sepia", &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--preprocess: "));
    pictures_free(&p);
    vit_free(&vit);
}

// A masked patch is black after normalisation, (0 − mean)/std; nothing else changes.
static void test_masked_patch_is_black_and_alone(void) {
    Pictures p = {0};
    p.pre.mean[0] = 0.25f, p.pre.std[0] = 0.5f;
    Tensor in = tensor_new(4, 1, 1, 28, 28);
    for (size_t i = 0; i < in.numel; i++) in.data[i] = 1.0f;
    pictures_mask_patch(&p, &in, 4, 9); // row 1, column 2 of the 7×7 grid
    int black = 0, other = 0;
    for (int y = 0; y < 28; y++)
        for (int x = 0; x < 28; x++) {
            const float v = in.data[y * 28 + x];
            const bool inside = y >= 4 && y < 8 && x >= 8 && x < 12;
            if (inside && v == -0.5f) black++;
            if (!inside && v == 1.0f) other++;
        }
    CU_ASSERT_EQUAL(black, 16);
    CU_ASSERT_EQUAL(other, 28 * 28 - 16);
    tensor_free(&in);
}

// One numbering: token 0 is cls, token t the patch t − 1 at (row, column).
static void test_tokens_are_named_and_moved_on_the_grid(void) {
    char buf[32];
    token_label(buf, sizeof buf, 0, 7);
    CU_ASSERT_STRING_EQUAL(buf, "cls");
    token_label(buf, sizeof buf, 41, 7);
    CU_ASSERT_STRING_EQUAL(buf, "token 41 (5,5)");
    token_label(buf, sizeof buf, 196, 14);
    CU_ASSERT_STRING_EQUAL(buf, "token 196 (13,13)");
    CU_ASSERT_EQUAL(token_step(0, 1, 0, 14), 1);    // from cls, Down enters at token 1
    CU_ASSERT_EQUAL(token_step(0, 0, 1, 14), 1);    // ... and so does Right
    CU_ASSERT_EQUAL(token_step(0, 0, 0, 14), 0);
    CU_ASSERT_EQUAL(token_step(1, 1, 0, 14), 15);   // Down: one row, 14 tokens on
    CU_ASSERT_EQUAL(token_step(14, 0, 1, 14), 14);  // Right at the row's end stays
    CU_ASSERT_EQUAL(token_step(15, 0, -1, 14), 15); // Left at the row's start stays
    CU_ASSERT_EQUAL(token_step(5, -1, 0, 14), 5);   // Up from row 0 stays (no jump to cls)
    CU_ASSERT_EQUAL(token_step(196, 1, 0, 14), 196); // Down from the last row stays
    CU_ASSERT_EQUAL(token_step(30, -1, 0, 14), 16);
}

static void test_whatif_text_names_what_is_off(void) {
    State s;
    state_init(&s, &grey_cfg, 1 << 20);
    char buf[200];
    CU_ASSERT_FALSE(state_whatif(&s));
    state_whatif_text(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "");
    s.heads_off[1 * 2 + 0] = true; // head 0 of blocks.1
    CU_ASSERT_TRUE(state_whatif(&s));
    state_whatif_text(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "head 0 of blocks.1 off");
    s.heads_off[0] = s.heads_off[1] = true; // every head of blocks.0: its attention
    s.masked[12] = true;
    state_whatif_text(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "blocks.0's attention off, head 0 of blocks.1 off, token 13 (1,5) masked");
    s.masked[13] = s.masked[40] = true;
    state_whatif_text(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "blocks.0's attention off, head 0 of blocks.1 off, token 13 (1,5) masked"
                                " and 2 more");
    s.precision = LOWP_INT8; // Q: named first, it changes every stage from the first Linear
    state_whatif_text(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "Linear layers in int8, blocks.0's attention off, head 0 of "
                                "blocks.1 off and 3 more");
    state_whatif_clear(&s);
    CU_ASSERT_FALSE(state_whatif(&s));
    CU_ASSERT_EQUAL(s.precision, LOWP_FP32);
    s.precision = LOWP_BF16; // alone, it is a what-if too
    CU_ASSERT_TRUE(state_whatif(&s));
    state_whatif_text(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "Linear layers in bf16");
    state_whatif_clear(&s);
    state_free(&s);
}

// Record a (1, 10) logits tensor into a history at the logits node.
static void put_logits(History *h, int node, const float *z) {
    Tensor t = tensor_new(2, 1, 10);
    memcpy(t.data, z, sizeof(float) * 10);
    history_record(h, node, &t, 0);
    tensor_free(&t);
}

static void test_whatif_summary_gives_the_outcome_first(void) {
    State s;
    state_init(&s, &grey_cfg, 1 << 20);
    CU_ASSERT_EQUAL(state_first_moved(&s), -1); // nothing compared
    const int probs = stepper_find(&s.stepper, "blocks.1.attn.probs");
    const int logits = stepper_find(&s.stepper, "logits");
    s.moved[probs - 1] = 0; // compared, unchanged
    s.moved[probs] = 0.5f;
    s.moved[logits] = 0.1f;
    CU_ASSERT_EQUAL(state_first_moved(&s), probs);
    s.heads_off[1 * 2 + 1] = true;
    // before: class 9 leads with p = e^2 / (e^2 + 9); after: class 7 leads
    float was[10] = {0}, now[10] = {0};
    was[9] = 2.0f;
    now[9] = 1.0f, now[7] = 3.0f;
    put_logits(&s.baseline, logits, was);
    put_logits(&s.history, logits, now);
    const double e = exp(1.0), e2 = exp(2.0), e3 = exp(3.0);
    const double p9_was = e2 / (e2 + 9), p9_now = e / (e3 + e + 8), p7_now = e3 / (e3 + e + 8);
    char want[300], buf[300];
    snprintf(want, sizeof want, "what-if: class 9 %.4f → %.4f · now class 7 (%.4f) · head 1 of "
             "blocks.1 off · first change: blocks.1.attn.probs · u undoes", p9_was, p9_now,
             p7_now);
    state_whatif_summary(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, want);
    // with names
    s.labels.count = 10;
    s.labels.names = calloc(10, sizeof(char *));
    for (int i = 0; i < 10; i++) s.labels.names[i] = strdup(DATASET_FASHION_MNIST_CLASSES[i]);
    state_whatif_summary(&s, buf, sizeof buf);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "what-if: Ankle boot "));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, " · now Sneaker ("));
    state_free(&s);
}

// The forward and the backward pass swap places, each kept as it was.
static void test_forward_and_backward_swap_places(void) {
    State s;
    state_init(&s, &grey_cfg, 1 << 20);
    const int logits = stepper_find(&s.stepper, "logits");
    const float z[10] = {1, 2, 3};
    put_logits(&s.history, logits, z);
    s.moved[logits] = 0.5f;
    CU_ASSERT_EQUAL(state_moved(&s, logits), 0.5f);
    state_show(&s, true);
    CU_ASSERT_TRUE(s.backward);
    CU_ASSERT_STRING_EQUAL(s.stepper.nodes[0].name, "grad.logits");
    CU_ASSERT_PTR_NULL(history_get(&s.history, 0)); // nothing computed backwards yet
    CU_ASSERT_TRUE(isnan(state_moved(&s, logits)));  // what-ifs are the forward's
    const float dz[10] = {0, 0, 1};
    put_logits(&s.history, 0, dz);
    const HistEntry *f = history_get(state_forward_history(&s), logits);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->t.data[2], 3.0f);
    CU_ASSERT_EQUAL(stepper_find(state_forward_stepper(&s), "logits"), logits);
    const HistEntry *g = state_gradient_of(&s, "logits");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(g->t.data[2], 1.0f);
    state_show(&s, false);
    CU_ASSERT_FALSE(s.backward);
    CU_ASSERT_EQUAL(history_get(&s.history, logits)->t.data[2], 3.0f);
    CU_ASSERT_EQUAL(state_gradient_of(&s, "logits")->t.data[2], 1.0f); // kept while hidden
    CU_ASSERT_PTR_NULL(state_gradient_of(&s, "norm"));
    state_free(&s);
}

CU_TestInfo tests_viewer_whatif[] = {
    {"pictures step through the shipped ones", test_pictures_step_through_the_shipped_ones},
    {"a test image is the dataset's", test_pictures_test_image_is_the_dataset_s},
    {"no dataset: the message says how to get it",
     test_pictures_without_the_dataset_say_how_to_get_it},
    {"a masked patch is black, and alone", test_masked_patch_is_black_and_alone},
    {"tokens named and moved on the grid", test_tokens_are_named_and_moved_on_the_grid},
    {"what-if text names what is off", test_whatif_text_names_what_is_off},
    {"what-if summary gives the outcome first", test_whatif_summary_gives_the_outcome_first},
    {"forward and backward swap places", test_forward_and_backward_swap_places},
    CU_TEST_INFO_NULL,
};
