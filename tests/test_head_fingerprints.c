/**
 * @file test_head_fingerprints.c
 * @brief Head fingerprints (lib/explain/head_fingerprints.c) against
 *        PyTorch, by hand, and `vit fingerprints` printing lib's numbers.
 *
 * The golden, tests/golden/fingerprints.safetensors, comes from
 * tools/gen_golden_fingerprints.py: tools/ref_vit.py's RefViT in float64 on
 * the shipped model, data/models/vit-fashion.safetensors, for two shipped
 * pictures (an ankle boot and a shirt), whose normalised pixels the golden
 * stores; the script computes the distance, entropy and [cls] share itself
 * from RefViT's `blocks.{l}.attn.probs`.
 *
 *  - Against PyTorch: the (B, L, H, 3) table from a recorded trace.
 *  - By hand: uniform attention has entropy ln N and [cls] share 1/N, and the
 *    distance of attention_by_distance() on the same matrix; a head that
 *    attends only to itself has distance 0, entropy 0 and [cls] share 0; one
 *    that attends only to [cls] has share 1 and entropy 0.
 *  - A trace without the probabilities is refused, naming the stage.
 *  - head_fingerprints_order() on a hand-made table, ties included.
 *  - `vit fingerprints` prints lib's numbers, to the 4 decimals it shows,
 *    sorts by a column when asked, and refuses what it cannot read.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "explain/attention_distance.h"
#include "explain/head_fingerprints.h"
#include "io/image.h"
#include "io/labels.h" // vit_data_path()
#include "model/vit.h"

#define GOLDEN "fingerprints.safetensors"

// The shipped model: 6 blocks of 4 heads on a 7×7 grid plus [cls]; the golden's two pictures.
enum { L = 6, H = 4, SIDE = 7, N = 1 + SIDE * SIDE, B = 2, F = HEAD_FINGERPRINT_COLUMNS,
       PATH_SIZE = 512 };
static const char *const PICTURES[B] = {"images/fashion-mnist/0000-ankle-boot.png",
                                        "images/fashion-mnist/0004-shirt.png"};

static Vit shipped(void) {
    Vit vit = check_shipped_model();
    CU_ASSERT_EQUAL_FATAL(vit.config.depth, L);
    CU_ASSERT_EQUAL_FATAL(vit.config.heads, H);
    CU_ASSERT_EQUAL_FATAL(vit_num_tokens(&vit.config), N);
    return vit;
}

// lib's table (B, L, H, 3) for a batch, from a pass recorded whole.
static Tensor fingerprints_of(Vit *vit, const Tensor *input) {
    TraceRecorder r = {0};
    VitError err;
    Tensor out = {0};
    CU_ASSERT_FATAL(vit_forward(vit, input, trace_record, &r, &err) == VIT_OK);
    VitStatus s = head_fingerprints_from_trace(&out, &vit->config, &r, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    trace_recorder_free(&r);
    return out;
}

/* ------------------------------------------------------------ against PyTorch */

static void test_against_pytorch(void) {
    Vit vit = shipped();
    Tensor input = golden_tensor(GOLDEN, "input");
    Tensor table = fingerprints_of(&vit, &input);
    CU_ASSERT_EQUAL_FATAL(table.ndim, 4);
    CU_ASSERT(table.shape[0] == B && table.shape[1] == L && table.shape[2] == H &&
              table.shape[3] == F);
    SafeTensors st;
    VitError err;
    float atol = CHECK_ATOL, rtol = CHECK_RTOL;
    CU_ASSERT_FATAL(st_open(&st, golden_path(GOLDEN), &err) == VIT_OK);
    const char *tol = st_meta(&st, "tol.fingerprints");
    CU_ASSERT_FATAL(tol && sscanf(tol, "%f %f", &atol, &rtol) == 2);
    st_close(&st);
    Tensor expected = golden_tensor(GOLDEN, "fingerprints");
    assert_tensor_close(&table, &expected, atol, rtol, "fingerprints");
    if (golden_report_wanted() && tensor_same_shape(&table, &expected))
        fprintf(stderr, "\n    fingerprints: max |diff| %.3g (atol %.3g)",
                (double)tensor_max_abs_diff(&table, &expected), (double)atol);
    tensor_free(&expected);
    tensor_free(&table);
    tensor_free(&input);
    vit_free(&vit);
}

/* ------------------------------------------------------------------ by hand */

// One head on a rows × cols grid with [cls] first, every row the same weight (1/N).
static void test_uniform_attention(void) {
    const int rows = 3, cols = 4, n = 1 + rows * cols;
    float probs[13 * 13], out[F];
    for (int i = 0; i < n * n; i++) probs[i] = 1.0f / n;
    head_fingerprints_layer(out, probs, 1, 1, rows, cols);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_ENTROPY], log(n), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_CLS], 1.0 / n, 1e-7);
    double mass[1 + 4], distance; // the distance is attention_by_distance()'s, not another
    attention_by_distance(mass, &distance, probs, 1, 1, rows, cols);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_DISTANCE], distance, 1e-6);
    // by hand on a 1 × 2 grid: each patch sees the other at 1 and itself at 0, half and half
    float two[3 * 3];
    for (int i = 0; i < 9; i++) two[i] = 1.0f / 3;
    head_fingerprints_layer(out, two, 1, 1, 1, 2);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_DISTANCE], 0.5, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_ENTROPY], log(3.0), 1e-6);
}

// Head 0 looks only at itself, head 1 only at [cls].
static void test_self_and_cls_heads(void) {
    const int rows = 2, cols = 3, n = 1 + rows * cols;
    float probs[2 * 7 * 7] = {0}, out[2 * F];
    for (int i = 0; i < n; i++) {
        probs[(size_t)i * n + i] = 1.0f;           // head 0: the diagonal
        probs[(size_t)(n + i) * n + 0] = 1.0f;     // head 1: the first column
    }
    head_fingerprints_layer(out, probs, 2, 1, rows, cols);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_DISTANCE], 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_ENTROPY], 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_CLS], 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(out[F + HEAD_FINGERPRINT_CLS], 1.0, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(out[F + HEAD_FINGERPRINT_ENTROPY], 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(out[F + HEAD_FINGERPRINT_DISTANCE], 0.0, 1e-12); // no weight on patches
}

// Each patch puts everything on the opposite corner of a 2 × 2 grid: distance √2.
static void test_far_head(void) {
    float probs[5 * 5] = {0}, out[F];
    const int opposite[4] = {3, 2, 1, 0};
    probs[0] = 1.0f; // [cls]'s own row is not measured
    for (int q = 0; q < 4; q++) probs[(size_t)(1 + q) * 5 + 1 + opposite[q]] = 1.0f;
    head_fingerprints_layer(out, probs, 1, 1, 2, 2);
    CU_ASSERT_DOUBLE_EQUAL(out[HEAD_FINGERPRINT_DISTANCE], sqrt(2.0), 1e-6);
}

static void test_trace_without_probs(void) {
    Vit vit = shipped();
    TraceRecorder empty = {0};
    Tensor out = {0};
    VitError err;
    CU_ASSERT_EQUAL(head_fingerprints_from_trace(&out, &vit.config, &empty, &err), VIT_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "blocks.0.attn.probs") != NULL);
    CU_ASSERT_PTR_NULL(out.data);
    CU_ASSERT_STRING_EQUAL(head_fingerprint_name(HEAD_FINGERPRINT_DISTANCE), "distance");
    CU_ASSERT_STRING_EQUAL(head_fingerprint_name(HEAD_FINGERPRINT_ENTROPY), "entropy");
    CU_ASSERT_STRING_EQUAL(head_fingerprint_name(HEAD_FINGERPRINT_CLS), "cls");
    vit_free(&vit);
}

static void test_order_by_hand(void) {
    const float table[4 * F] = {1, 0, 5, /**/ 3, 2, 5, /**/ 2, 1, 4, /**/ 3, 9, 6};
    int order[4];
    head_fingerprints_order(order, table, 4, -1);
    CU_ASSERT(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
    head_fingerprints_order(order, table, 4, HEAD_FINGERPRINT_DISTANCE); // a tie: row order
    CU_ASSERT(order[0] == 1 && order[1] == 3 && order[2] == 2 && order[3] == 0);
    head_fingerprints_order(order, table, 4, HEAD_FINGERPRINT_ENTROPY);
    CU_ASSERT(order[0] == 3 && order[1] == 1 && order[2] == 2 && order[3] == 0);
    head_fingerprints_order(order, table, 4, HEAD_FINGERPRINT_CLS);
    CU_ASSERT(order[0] == 3 && order[1] == 0 && order[2] == 1 && order[3] == 2);
}

/* ------------------------------------------------------------ vit fingerprints */

// lib's table (1, L, H, 3) of the picture at PATH, preprocessed as `vit classify` does.
static Tensor fingerprints_of_file(Vit *vit, const char *path) {
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
    Tensor table = fingerprints_of(vit, &input);
    tensor_free(&input);
    return table;
}

// The rows after the heading "  layer  head …": layer, head and the three numbers; how many.
static int parse_rows(const char *out, int *layer, int *head, float *f, int max) {
    const char *line = strstr(out, "\n  layer ");
    int n = 0;
    for (line = line ? strchr(line + 1, '\n') : NULL; line && n < max;
         line = strchr(line + 1, '\n'), n++)
        if (sscanf(line + 1, "%d %d %f %f %f", &layer[n], &head[n], &f[n * F], &f[n * F + 1],
                   &f[n * F + 2]) != 5)
            break;
    return n;
}

static void test_cli_prints_libs_numbers(void) {
    Vit vit = shipped();
    char model[PATH_SIZE], boot[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, PICTURES[0]);
    Tensor table = fingerprints_of_file(&vit, boot);
    CliResult r = VIT_RUN("fingerprints", "--weights", model, boot);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    int layer[L * H], head[L * H];
    float f[L * H * F];
    CU_ASSERT_EQUAL_FATAL(parse_rows(r.out, layer, head, f, L * H), L * H);
    for (int i = 0; i < L * H; i++) {
        CU_ASSERT(layer[i] == i / H && head[i] == i % H); // layer order
        for (int k = 0; k < F; k++)
            CU_ASSERT_DOUBLE_EQUAL(f[i * F + k], table.data[i * F + k], 0.5e-4 + 1e-6);
    }
    CU_ASSERT(strstr(r.out, "ln 50 = 3.9120") != NULL);
    cli_result_free(&r);
    tensor_free(&table);
    vit_free(&vit);
}

static void test_cli_sorts(void) {
    char model[PATH_SIZE], boot[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, PICTURES[0]);
    for (int k = 0; k < F; k++) {
        CliResult r = VIT_RUN("fingerprints", "--weights", model, "--sort",
                              head_fingerprint_name(k), boot);
        CU_ASSERT_EQUAL_FATAL(r.status, 0);
        int layer[L * H], head[L * H], seen[L * H] = {0};
        float f[L * H * F];
        CU_ASSERT_EQUAL_FATAL(parse_rows(r.out, layer, head, f, L * H), L * H);
        for (int i = 0; i < L * H; i++) {
            if (i) CU_ASSERT(f[i * F + k] <= f[(i - 1) * F + k]); // the largest first
            CU_ASSERT_FATAL(layer[i] >= 0 && layer[i] < L && head[i] >= 0 && head[i] < H);
            seen[layer[i] * H + head[i]]++;
        }
        for (int i = 0; i < L * H; i++) CU_ASSERT_EQUAL(seen[i], 1); // every head once
        cli_result_free(&r);
    }
}

static void test_cli_refusals(void) {
    char model[PATH_SIZE], boot[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, PICTURES[0]);
    EXPECT_FAILURE(VIT_RUN("fingerprints", "--weights", model), 2, "needs an IMAGE");
    EXPECT_FAILURE(VIT_RUN("fingerprints", "--weights", model, "--sort", "size", boot), 2,
                   "--sort size");
    EXPECT_FAILURE(VIT_RUN("fingerprints", "--weights", "no-such-model.safetensors", "x.png"), 1,
                   "no-such-model.safetensors");
    EXPECT_FAILURE(VIT_RUN("fingerprints", "--weights", model, "no-such-picture.png"), 1,
                   "no-such-picture.png");
    EXPECT_FAILURE(VIT_RUN("fingerprints", model), 2, "--weights");
}

CU_TestInfo tests_head_fingerprints[] = {
    {"the table against PyTorch (shipped model, two pictures)", test_against_pytorch},
    {"uniform attention: entropy ln N, cls share 1/N", test_uniform_attention},
    {"a head on itself: distance 0; a head on [cls]: share 1", test_self_and_cls_heads},
    {"a head on the opposite corner: distance √2", test_far_head},
    {"a trace without the probabilities is refused", test_trace_without_probs},
    {"rows in a column's order, largest first, ties in row order", test_order_by_hand},
    {"vit fingerprints prints lib's numbers", test_cli_prints_libs_numbers},
    {"vit fingerprints --sort: largest first, every head once", test_cli_sorts},
    {"vit fingerprints refuses what it cannot read", test_cli_refusals},
    CU_TEST_INFO_NULL,
};
