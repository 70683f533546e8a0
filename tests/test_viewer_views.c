/**
 * @file test_viewer_views.c
 * @brief What the viewer's views compute, on a real forward pass, without a
 *        terminal (viewer/state.h): the matrix a view shows and what it is
 *        called, a stage minus a reference stage, the softmax at a
 *        temperature, the cell cursor's readout.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../viewer/state.h"
#include "model/vit.h"

// A small grey model like the shipped one: 28×28, patch 4 (7×7 grid), 2 blocks of 2 heads.
static const VitConfig cfg = {.image_size = 28, .patch_size = 4, .channels = 1, .dim = 8,
                              .depth = 2, .heads = 2, .mlp_dim = 16, .num_classes = 10,
                              .ln_eps = 1e-6f};

static void record(void *user, const char *name, const Tensor *t) {
    State *s = user;
    const int node = stepper_find(&s->stepper, name);
    if (node >= 0) history_record(&s->history, node, t, 0);
}

// A state holding one whole forward pass of the model on a fixed picture.
static void state_with_pass(State *s, Vit *vit) {
    const VitInit init = {.seed = 5, .std = 0.3f, .bias_std = 0.1f, .norm_std = 0.1f};
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &cfg, &init, &err), VIT_OK);
    state_init(s, &vit->config, 1 << 22);
    Tensor x = tensor_new(4, 1, 1, 28, 28);
    for (size_t i = 0; i < x.numel; i++) x.data[i] = sinf(0.37f * (float)i);
    CU_ASSERT_EQUAL_FATAL(vit_forward(vit, &x, record, s, &err), VIT_OK);
    tensor_free(&x);
}

static void select_stage(State *s, const char *name) {
    s->stepper.selected = stepper_find(&s->stepper, name);
    s->stepper.sel_header = false;
    CU_ASSERT_FATAL(s->stepper.selected >= 0);
}

static void test_the_matrix_shown_and_its_name(void) {
    State s;
    Vit vit = {0};
    state_with_pass(&s, &vit);
    select_stage(&s, "blocks.1.attn.probs");
    const HistEntry *e = state_entry(&s);
    const int N = 50;
    float *scratch = malloc(N * N * sizeof *scratch);
    char name[48];
    s.plane = 1;
    Mat m = state_shown_matrix(&s, &e->t, scratch);
    CU_ASSERT_PTR_EQUAL(m.data, e->t.data + N * N); // head 1, no copy
    state_plane_name(&s, &e->t, name, sizeof name);
    CU_ASSERT_STRING_EQUAL(name, "head 1 of 2");
    s.heads = HEADS_MEAN; // the numbers view once showed head 0 here
    m = state_shown_matrix(&s, &e->t, scratch);
    CU_ASSERT_EQUAL(m.rows, N);
    CU_ASSERT_DOUBLE_EQUAL(m.data[7 * N + 3], 0.5 * (e->t.data[7 * N + 3] + e->t.data[N * N + 7 * N + 3]),
                           1e-7);
    state_plane_name(&s, &e->t, name, sizeof name);
    CU_ASSERT_STRING_EQUAL(name, "mean over heads");
    select_stage(&s, "blocks.1.attn.q"); // not a map: the mode does not apply
    m = state_shown_matrix(&s, &state_entry(&s)->t, scratch);
    CU_ASSERT_PTR_EQUAL(m.data, state_entry(&s)->t.data + (size_t)1 * N * 4);
    select_stage(&s, "input");
    state_plane_name(&s, &state_entry(&s)->t, name, sizeof name);
    CU_ASSERT_STRING_EQUAL(name, "channel 1 of 1 (grey)"); // plane clamped below by the view
    free(scratch);
    state_free(&s);
    vit_free(&vit);
}

// blocks.0.resid1 − embed is the attention's output, blocks.0.attn.proj.
static void test_a_stage_minus_its_reference(void) {
    State s;
    Vit vit = {0};
    state_with_pass(&s, &vit);
    select_stage(&s, "blocks.0.resid1");
    const HistEntry *e = state_entry(&s);
    float *d = malloc(e->t.numel * sizeof *d);
    CU_ASSERT_FALSE(state_compare(&s, e, d)); // no reference yet
    snprintf(s.compare, sizeof s.compare, "embed");
    CU_ASSERT_TRUE_FATAL(state_compare(&s, e, d));
    const HistEntry *proj = history_get(&s.history, stepper_find(&s.stepper, "blocks.0.attn.proj"));
    float worst = 0, scale = 0;
    for (size_t i = 0; i < e->t.numel; i++) {
        worst = fmaxf(worst, fabsf(d[i] - proj->t.data[i]));
        scale = fmaxf(scale, fabsf(proj->t.data[i]));
    }
    CU_ASSERT(worst <= 1e-6f * fmaxf(1, scale)); // (x + a) − x = a, to rounding
    snprintf(s.compare, sizeof s.compare, "blocks.0.mlp.fc1"); // another shape: nothing
    CU_ASSERT_FALSE(state_compare(&s, e, d));
    snprintf(s.compare, sizeof s.compare, "blocks.0.resid1"); // itself: nothing
    CU_ASSERT_FALSE(state_compare(&s, e, d));
    free(d);
    state_free(&s);
    vit_free(&vit);
}

static void test_softmax_at_a_temperature(void) {
    State s;
    Vit vit = {0};
    state_with_pass(&s, &vit);
    const int N = 50;
    const HistEntry *sc = history_get(&s.history, stepper_find(&s.stepper, "blocks.1.attn.scaled"));
    const HistEntry *pr = history_get(&s.history, stepper_find(&s.stepper, "blocks.1.attn.probs"));
    const size_t row = ((size_t)1 * N + 7) * N; // head 1, query token 7
    float live[50];
    softmax_at_temperature(live, sc->t.data + row, N, 1.0f);
    CU_ASSERT_EQUAL(memcmp(live, pr->t.data + row, sizeof live), 0); // the recorded row, exactly
    const double h1 = entropy_nats(live, N);
    softmax_at_temperature(live, sc->t.data + row, N, 1000.0f); // hot: nearly uniform
    CU_ASSERT(entropy_nats(live, N) > h1);
    CU_ASSERT_DOUBLE_EQUAL(entropy_nats(live, N), log(N), 0.01);
    softmax_at_temperature(live, sc->t.data + row, N, 0.001f); // cold: on the largest score
    int best = 0, second = -1;
    for (int k = 1; k < N; k++)
        if (sc->t.data[row + k] > sc->t.data[row + best]) best = k;
    for (int k = 0; k < N; k++)
        if (k != best && (second < 0 || sc->t.data[row + k] > sc->t.data[row + second])) second = k;
    const float gap = sc->t.data[row + best] - sc->t.data[row + second];
    CU_ASSERT(live[best] >= 1.0f / (1.0f + (float)(N - 1) * expf(-gap / 0.001f)) - 1e-6f);
    CU_ASSERT(live[best] > 0.5f); // the largest score takes most of it
    const float two[2] = {0.5f, 0.5f};
    CU_ASSERT_DOUBLE_EQUAL(entropy_nats(two, 2), log(2.0), 1e-7);
    state_free(&s);
    vit_free(&vit);
}

static void test_the_cursor_reads_out_one_cell(void) {
    State s;
    Vit vit = {0};
    state_with_pass(&s, &vit);
    char text[160], want[160];
    select_stage(&s, "blocks.0.norm2");
    const HistEntry *e = state_entry(&s);
    s.cursor_row = 13, s.cursor_col = 5;
    state_cursor_text(&s, tensor_slice(&e->t, 0), text, sizeof text);
    snprintf(want, sizeof want, "token 13 (1,5) · column 5 = %.9g", (double)e->t.data[13 * 8 + 5]);
    CU_ASSERT_STRING_EQUAL(text, want);
    select_stage(&s, "blocks.1.attn.k"); // a head's matrix: the readout names the head
    e = state_entry(&s);
    s.plane = 1, s.cursor_row = 0, s.cursor_col = 3;
    const Mat k = tensor_slice(&e->t, 1);
    state_cursor_text(&s, k, text, sizeof text);
    snprintf(want, sizeof want, "head 1 of 2 · cls · column 3 = %.9g", (double)k.data[3]);
    CU_ASSERT_STRING_EQUAL(text, want);
    select_stage(&s, "blocks.0.attn.probs");
    e = state_entry(&s);
    s.query = 9, s.key = 41, s.plane = 0;
    state_cursor_text(&s, tensor_slice(&e->t, 0), text, sizeof text);
    snprintf(want, sizeof want, "q token 9 (1,1) → k token 41 (5,5) = %.9g",
             (double)e->t.data[9 * 50 + 41]);
    CU_ASSERT_STRING_EQUAL(text, want);
    state_free(&s);
    vit_free(&vit);
}

static void test_stats_and_windows_of_a_matrix(void) {
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)i; // 3 × 4: 0 … 11
    const Mat m = {v, 3, 4};
    MatStats st = mat_stats(m);
    CU_ASSERT_EQUAL(st.min, 0.0f);
    CU_ASSERT_EQUAL(st.max, 11.0f);
    CU_ASSERT_DOUBLE_EQUAL(st.mean, 5.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(st.std, sqrt(143.0 / 12.0), 1e-9); // (n² − 1)/12 for 0 … n−1
    v[5] = NAN; // not finite: left out
    st = mat_stats(m);
    CU_ASSERT_DOUBLE_EQUAL(st.mean, (66.0 - 5.0) / 11.0, 1e-9);
    v[5] = 5;
    float buf[12];
    int r0, c0;
    Mat w = mat_window(m, 2, 3, 2, 2, buf, &r0, &c0); // the bottom-right corner
    CU_ASSERT_EQUAL(r0, 1);
    CU_ASSERT_EQUAL(c0, 2);
    CU_ASSERT_EQUAL(w.rows, 2);
    CU_ASSERT_EQUAL(w.cols, 2);
    CU_ASSERT_EQUAL(buf[0], 6.0f);
    CU_ASSERT_EQUAL(buf[3], 11.0f);
    w = mat_window(m, 1, 1, 10, 10, buf, &r0, &c0); // larger than the matrix: all of it
    CU_ASSERT_EQUAL(r0 + c0, 0);
    CU_ASSERT_EQUAL(w.rows * w.cols, 12);
    CU_ASSERT_EQUAL(memcmp(buf, v, sizeof v), 0);
    w = mat_window(m, 0, 2, 1, 2, buf, &r0, &c0); // centred on column 2
    CU_ASSERT_EQUAL(c0, 1);
}


// The logits' probabilities at a temperature, against softmax(z / T) by hand:
// z = (0, ln 3) gives 1/4, 3/4 at T = 1; at T = 2 the odds are √3 to 1; at
// T = 1/2, 9 to 1; and the order of the classes never changes.
static void test_logits_at_a_temperature(void) {
    float z[2] = {0.0f, (float)log(3.0)};
    const Tensor t = tensor_view_shape(z, 2, (int[]){1, 2});
    double p[2];
    logits_probs_at(p, &t, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(p[0], 0.25, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(p[1], 0.75, 1e-7);
    logits_probs_at(p, &t, 2.0);
    CU_ASSERT_DOUBLE_EQUAL(p[0], 1 / (1 + sqrt(3.0)), 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(p[1], sqrt(3.0) / (1 + sqrt(3.0)), 1e-7);
    logits_probs_at(p, &t, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(p[0], 0.1, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(p[1], 0.9, 1e-7);
    double q[2];
    logits_probs(q, &t); // T = 1 is the plain softmax, bit for bit
    logits_probs_at(p, &t, 1.0);
    CU_ASSERT_EQUAL(memcmp(p, q, sizeof p), 0);
}

CU_TestInfo tests_viewer_views[] = {
    {"the logits at a temperature", test_logits_at_a_temperature},
    {"stats and windows of a matrix", test_stats_and_windows_of_a_matrix},
    {"the matrix shown, and its name", test_the_matrix_shown_and_its_name},
    {"a stage minus its reference", test_a_stage_minus_its_reference},
    {"softmax at a temperature", test_softmax_at_a_temperature},
    {"the cursor reads out one cell", test_the_cursor_reads_out_one_cell},
    CU_TEST_INFO_NULL,
};
