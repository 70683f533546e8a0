/**
 * @file test_viewer_render.c
 * @brief The viewer's pure pictures and choices: the image as pixels, the patch
 *        grid (on light and dark pictures), whole-factor sizes, the attention
 *        overlay, the generated picture, tensor slices and head reductions,
 *        top-K, number formatting.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../viewer/format.h"
#include "../viewer/render_image.h"
#include "../viewer/state.h"
#include "../viewer/synth.h"

static bool rgb_eq(Rgb a, int r, int g, int b) { return a.r == r && a.g == g && a.b == b; }

static void test_image_stretch_and_grey(void) {
    // (3, 2, 2): values from -1 to 1 stretch to 0 … 255 over all channels
    const float chw[12] = {-1, 0, 0, 1, /* g */ 0, 0, 0, 0, /* b */ 1, 0, 0, -1};
    Rgb px[4];
    image_to_rgb(px, chw, 3, 2);
    CU_ASSERT(rgb_eq(px[0], 0, 128, 255));
    CU_ASSERT(rgb_eq(px[3], 255, 128, 0));
    const float grey[4] = {0, 1, 2, 3};
    image_to_rgb(px, grey, 1, 2);
    CU_ASSERT(rgb_eq(px[0], 0, 0, 0));
    CU_ASSERT(rgb_eq(px[3], 255, 255, 255));
    CU_ASSERT(px[1].r == px[1].g && px[1].g == px[1].b);
}

static void test_resample_averages(void) {
    const Rgb in[4] = {{0, 0, 0}, {100, 0, 0}, {0, 200, 0}, {100, 200, 40}};
    Rgb out[1];
    image_resample(out, 1, 1, in, 2, 2);
    CU_ASSERT(rgb_eq(out[0], 50, 100, 10));
    Rgb up[16]; // growing repeats the nearest pixel
    image_resample(up, 4, 4, in, 2, 2);
    CU_ASSERT(rgb_eq(up[0], 0, 0, 0));
    CU_ASSERT(rgb_eq(up[15], 100, 200, 40));
}

static void test_patch_grid(void) {
    CU_ASSERT_EQUAL(image_patch_at(0, 0, 28, 28, 14), 0);
    CU_ASSERT_EQUAL(image_patch_at(27, 0, 28, 28, 14), 13);
    CU_ASSERT_EQUAL(image_patch_at(2, 2, 28, 28, 14), 15);
    CU_ASSERT_EQUAL(image_patch_at(27, 27, 28, 28, 14), 195);
    // big enough (≥ IMAGE_GRID_LINE_MIN = 6 px per patch): dark lines on the
    // first pixel of each patch
    enum { W = 6 * 4 };
    Rgb px[W * W];
    for (int i = 0; i < W * W; i++) px[i] = (Rgb){200, 200, 200};
    image_patch_grid(px, W, W, 4);
    CU_ASSERT(px[6].r < 200);         // (x 6, y 0): a vertical line
    CU_ASSERT(px[6 * W + 1].r < 200); // (x 1, y 6): a horizontal line
    CU_ASSERT(rgb_eq(px[1 * W + 1], 200, 200, 200));
    // too small for lines (a 28×28 image of 7×7 patches drawn at 28 pixels):
    // alternate patches are marked, every pixel is kept visible
    Rgb small[28 * 28];
    for (int i = 0; i < 28 * 28; i++) small[i] = (Rgb){200, 200, 200};
    image_patch_grid(small, 28, 28, 7);
    CU_ASSERT(rgb_eq(small[0], 200, 200, 200));       // patch (0, 0)
    CU_ASSERT(small[4].r < 200 && small[4].r > 100);  // patch (0, 1), darker
    CU_ASSERT(small[4].r < 150); // ... by enough to see on a textured photo (a 35 % mark)
    CU_ASSERT(rgb_eq(small[4 * 28 + 4], 200, 200, 200)); // patch (1, 1)
    CU_ASSERT(rgb_eq(small[3], 200, 200, 200));       // no line at the patch's edge
}

// Fashion-MNIST is a white garment on black: a grid that only darkens would
// vanish on the background. Light pixels are darkened, dark ones lightened.
static void test_patch_grid_on_black(void) {
    const Rgb black = {0, 0, 0}, white = {255, 255, 255};
    CU_ASSERT(rgb_luma(image_grid_mark(black, 0.2f)) > 0.05f);
    CU_ASSERT(rgb_luma(image_grid_mark(white, 0.2f)) < rgb_luma(white));
    CU_ASSERT(rgb_eq(image_grid_mark(black, 0.0f), 0, 0, 0));
    Rgb px[28 * 28] = {{0, 0, 0}};
    image_patch_grid(px, 28, 28, 7);
    CU_ASSERT(rgb_eq(px[0], 0, 0, 0));                  // patch (0, 0) stays black
    CU_ASSERT(px[4].r + px[4].g + px[4].b > 0);         // patch (0, 1) shows
    CU_ASSERT(px[28 * 4].r + px[28 * 4].g + px[28 * 4].b > 0); // patch (1, 0) too
    enum { W = 56 }; // 8 px patches: lines, visible on black
    Rgb big[W * W] = {{0, 0, 0}};
    image_patch_grid(big, W, W, 7);
    CU_ASSERT(rgb_luma(big[8]) > 0.1f);   // (x 8, y 0): a vertical line
    CU_ASSERT(rgb_eq(big[W + 1], 0, 0, 0)); // inside a patch: untouched
}

// A small image grows by a whole factor, so its pixels stay equal blocks.
static void test_fit_side(void) {
    CU_ASSERT_EQUAL(image_fit_side(40, 28), 28);  // 100×30 terminal, Fashion-MNIST
    CU_ASSERT_EQUAL(image_fit_side(56, 28), 56);
    CU_ASSERT_EQUAL(image_fit_side(83, 28), 56);
    CU_ASSERT_EQUAL(image_fit_side(20, 28), 20);  // smaller than the image: as it is
    CU_ASSERT_EQUAL(image_fit_side(40, 224), 40); // ViT-B's 224 in 40: shrunk as before
    CU_ASSERT_EQUAL(image_fit_side(0, 28), 0);
}

static void test_overlay_follows_weights(void) {
    Rgb px[4 * 4];
    for (int i = 0; i < 16; i++) px[i] = (Rgb){255, 255, 255};
    const float t[4] = {0, 0, 0, 1}; // only patch (1, 1) is attended
    image_overlay(px, 4, 4, t, 2, RAMP_SEQUENTIAL, 0.7f, COLOUR_DIRECT);
    const Rgb top = ramp_rgb(RAMP_SEQUENTIAL, 1);
    CU_ASSERT(rgb_luma(px[3 * 4 + 3]) > rgb_luma(px[0])); // attended patch brighter
    CU_ASSERT(abs(px[15].g - top.g) < 80);                // and in the ramp's top colour
}

static void test_synth_picture(void) {
    enum { S = 224 };
    float *rgb = malloc(3 * S * S * sizeof(float)), *again = malloc(3 * S * S * sizeof(float));
    synth_image(rgb, S);
    synth_image(again, S);
    CU_ASSERT_EQUAL(memcmp(rgb, again, 3 * S * S * sizeof(float)), 0); // deterministic
    float lo = 1, hi = 0;
    for (int i = 0; i < 3 * S * S; i++) lo = fminf(lo, rgb[i]), hi = fmaxf(hi, rgb[i]);
    CU_ASSERT(lo >= 0 && hi <= 1);
#define AT(c, u, v) rgb[(c) * S * S + (int)((v) * S) * S + (int)((u) * S)]
    CU_ASSERT(AT(2, 0.05, 0.05) > AT(0, 0.05, 0.05)); // sky: blue
    CU_ASSERT(AT(1, 0.9, 0.95) > AT(0, 0.9, 0.95));   // grass: green
    CU_ASSERT(AT(0, 0.80, 0.18) > 0.9f && AT(2, 0.80, 0.18) < 0.5f); // sun: yellow
    CU_ASSERT(AT(0, 0.42, 0.70) > 2 * AT(1, 0.42, 0.70));            // wall: red
#undef AT
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-tiny", &err);
    Tensor in = synth_input(&cfg);
    CU_ASSERT(in.ndim == 4 && in.shape[0] == 1 && in.shape[1] == 3 && in.shape[2] == S);
    CU_ASSERT_DOUBLE_EQUAL(in.data[0], (rgb[0] - 0.5) / 0.5, 1e-6); // mean = std = 0.5
    tensor_free(&in);
    free(rgb);
    free(again);
}

static void test_view_kinds_and_slices(void) {
    const char *names[] = {"input", "patches", "attn.probs", "attn.scores", "pre_logits",
                           "logits", "attn.q", "mlp.gelu"};
    const ViewKind kinds[] = {VIEW_IMAGE, VIEW_PATCHES, VIEW_ATTENTION, VIEW_ATTENTION,
                              VIEW_VECTOR, VIEW_LOGITS, VIEW_MATRIX, VIEW_MATRIX};
    for (int i = 0; i < 8; i++) {
        VitStage st = {.name = names[i]};
        CU_ASSERT_EQUAL(view_kind_for(&st), kinds[i]);
    }
    Tensor t4 = tensor_new(4, 1, 3, 5, 7);
    for (size_t i = 0; i < t4.numel; i++) t4.data[i] = (float)i;
    Mat m = tensor_slice(&t4, 2);
    CU_ASSERT(m.rows == 5 && m.cols == 7 && m.data[0] == 2 * 35);
    CU_ASSERT_EQUAL(tensor_planes(&t4), 3);
    Tensor t3 = tensor_new(3, 1, 4, 6), t2 = tensor_new(2, 1, 9);
    m = tensor_slice(&t3, 0);
    CU_ASSERT(m.rows == 4 && m.cols == 6);
    m = tensor_slice(&t2, 0);
    CU_ASSERT(m.rows == 1 && m.cols == 9);
    CU_ASSERT_EQUAL(tensor_planes(&t2), 1);
    tensor_free(&t4), tensor_free(&t3), tensor_free(&t2);
}

static void test_attention_over_heads(void) {
    // (1, 2, 2, 2): head 0 all 1, head 1 = {0, 4, 2, 2}
    Tensor t = tensor_new(4, 1, 2, 2, 2);
    const float v[8] = {1, 1, 1, 1, 0, 4, 2, 2};
    memcpy(t.data, v, sizeof v);
    float scratch[4];
    Mat one = attention_map(&t, 1, HEADS_ONE, scratch);
    CU_ASSERT_EQUAL(one.data[1], 4);
    Mat mean = attention_map(&t, 0, HEADS_MEAN, scratch);
    CU_ASSERT(mean.data == scratch && mean.rows == 2 && mean.cols == 2);
    CU_ASSERT_DOUBLE_EQUAL(scratch[0], 0.5, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(scratch[1], 2.5, 1e-6);
    attention_map(&t, 0, HEADS_MAX, scratch);
    CU_ASSERT_EQUAL(scratch[0], 1);
    CU_ASSERT_EQUAL(scratch[1], 4);
    tensor_free(&t);
}

static void test_state_clamps_view_options(void) {
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-tiny", &err);
    State s;
    state_init(&s, &cfg, HISTORY_DEFAULT_BUDGET);
    const int node = stepper_find(&s.stepper, "blocks.0.attn.probs");
    Tensor probs = tensor_new(4, 1, 3, 197, 197);
    history_record(&s.history, node, &probs, 0);
    s.stepper.selected = node;
    s.plane = 7, s.query = 500, s.scroll_row = -3, s.scroll_col = 1000;
    state_clamp(&s);
    CU_ASSERT_EQUAL(s.plane, 2);  // 3 heads
    CU_ASSERT_EQUAL(s.query, 196); // 197 tokens
    CU_ASSERT_EQUAL(s.scroll_row, 0);
    CU_ASSERT_EQUAL(s.scroll_col, 196);
    CU_ASSERT_EQUAL(state_grid(&s), 14);
    // a vector's numbers wrap 8 to a line: the logits' 1000 values make 125 lines
    const int logits = stepper_find(&s.stepper, "logits");
    Tensor z = tensor_new(2, 1, 1000);
    history_record(&s.history, logits, &z, 0);
    s.stepper.selected = logits;
    s.scroll_row = 500, s.scroll_col = 3;
    state_clamp(&s);
    CU_ASSERT_EQUAL(s.scroll_row, 124);
    CU_ASSERT_EQUAL(s.scroll_col, 0);
    CU_ASSERT_EQUAL(numbers_rows(tensor_slice(&z, 0)), 125);
    tensor_free(&z);
    state_resize(&s, 30, 10);
    CU_ASSERT_TRUE(s.layout.too_small);
    tensor_free(&probs);
    state_free(&s);
}

static void test_formats(void) {
    char buf[64];
    CU_ASSERT_STRING_EQUAL(fmt_si(buf, sizeof buf, 950), "950");
    // a pass's progress: the bar filled in proportion, then the time it has taken
    CU_ASSERT_STRING_EQUAL(fmt_progress(buf, sizeof buf, 94, 188, 10, 1.3, false),
                           "[#####-----] 1.30 s");
    CU_ASSERT_STRING_EQUAL(fmt_progress(buf, sizeof buf, 188, 188, 4, 0.5, true), "████ 500 ms");
    CU_ASSERT_STRING_EQUAL(fmt_progress(buf, sizeof buf, 0, 188, 2, 0.5, true), "░░ 500 ms");
    char small[8]; // cut short, still a string
    CU_ASSERT(strlen(fmt_progress(small, sizeof small, 5, 10, 10, 1, true)) < sizeof small);
    CU_ASSERT_STRING_EQUAL(fmt_si(buf, sizeof buf, 1.23e9), "1.23 G");
    CU_ASSERT_STRING_EQUAL(fmt_si(buf, sizeof buf, 582e3), "582 k");
    CU_ASSERT_STRING_EQUAL(vit_bytes(buf, 465708 * 4.0), "1.9 MB"); // the one byte formatter
    CU_ASSERT_STRING_EQUAL(vit_bytes(buf, 100), "100 bytes");
    CU_ASSERT_STRING_EQUAL(fmt_seconds(buf, sizeof buf, 0.0123), "12 ms");
    CU_ASSERT_STRING_EQUAL(fmt_seconds(buf, sizeof buf, 0.0004), "400 µs");
    Tensor t = tensor_new(4, 1, 12, 197, 197);
    CU_ASSERT_STRING_EQUAL(fmt_shape_axes(buf, sizeof buf, &t, "B,H,N,N"),
                           "(B=1, H=12, N=197, N=197)");
    CU_ASSERT_STRING_EQUAL(fmt_shape_axes(buf, sizeof buf, &t, NULL), "(1, 12, 197, 197)");
    tensor_free(&t);
}

CU_TestInfo tests_viewer_render[] = {
    {"image stretch and grey", test_image_stretch_and_grey},
    {"resample averages", test_resample_averages},
    {"patch grid", test_patch_grid},
    {"patch grid on black", test_patch_grid_on_black},
    {"fit side", test_fit_side},
    {"overlay follows weights", test_overlay_follows_weights},
    {"generated picture", test_synth_picture},
    {"view kinds and slices", test_view_kinds_and_slices},
    {"attention over heads", test_attention_over_heads},
    {"state clamps view options", test_state_clamps_view_options},
    {"formats", test_formats},
    CU_TEST_INFO_NULL,
};
