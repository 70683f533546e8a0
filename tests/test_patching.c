/**
 * @file test_patching.c
 * @brief Activation patching (lib/explain/patching.c) against PyTorch, its
 *        properties, and `vit patch` printing lib's numbers.
 *
 * The golden, tests/golden/patching.safetensors, comes from
 * tools/gen_golden_patching.py: tools/ref_vit.py's RefViT in float64 on the
 * shipped model, data/models/vit-fashion.safetensors, A the ankle boot and B
 * the sneaker, whose normalised pixels it stores; each cell runs RefViT's own
 * later blocks, norm and head on A's stream with one row of B's.
 *
 *  - Against PyTorch: the (L, T) grid of A's class probability (within the
 *    golden's tolerance), the patched answers (exactly), A's class, and the
 *    unpatched probabilities.
 *  - Exactly: B = A changes nothing (every cell is A's own probability, bit
 *    for bit); every row of block L − 1 patched gives B's probabilities, bit for
 *    bit; vit_forward_from() on a pass's own stream gives that pass's logits.
 *  - Refusals: a block or a token outside the model, a class outside [0, Y).
 *  - `vit patch` prints lib's numbers, to the 4 decimals it shows.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "explain/patching.h"
#include "io/image.h"
#include "io/labels.h"

#define GOLDEN "patching.safetensors"

// The shipped model: 6 blocks, 7×7 patches + [cls], width 64, 10 classes.
enum { L = 6, T = 50, Y = 10, PATH_SIZE = 512 };
static const char *const PICTURES[2] = {"images/fashion-mnist/0000-ankle-boot.png",
                                        "images/fashion-mnist/0009-sneaker.png"};

static Vit shipped(void) {
    Vit vit = check_shipped_model();
    CU_ASSERT_EQUAL_FATAL(vit.config.depth, L);
    CU_ASSERT_EQUAL_FATAL(vit_num_tokens(&vit.config), T);
    CU_ASSERT_EQUAL_FATAL(vit.config.num_classes, Y);
    return vit;
}

static Patching grid_of(Vit *vit, const Tensor *a, const Tensor *b) {
    Patching pt;
    VitError err;
    VitStatus s = patching_grid(&pt, vit, a, b, -1, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    return pt;
}

/* ------------------------------------------------------------ against PyTorch */

static void test_grid_against_pytorch(void) {
    Vit vit = shipped();
    Tensor a = golden_tensor(GOLDEN, "a"), b = golden_tensor(GOLDEN, "b");
    Patching pt = grid_of(&vit, &a, &b);
    Tensor cls = golden_tensor(GOLDEN, "class");
    CU_ASSERT_EQUAL(pt.a_class, (int)cls.data[0]);
    CU_ASSERT(pt.layers == L && pt.tokens == T && pt.classes == Y);
    Tensor prob = tensor_new(2, L, T), top = tensor_new(2, L, T);
    memcpy(prob.data, pt.prob, sizeof(float) * L * T);
    for (int i = 0; i < L * T; i++) top.data[i] = (float)pt.top[i];
    expect_golden_tensor(GOLDEN, "prob", &prob);
    expect_golden_tensor(GOLDEN, "top", &top);
    Tensor pa = golden_tensor(GOLDEN, "probs_a"), pb = golden_tensor(GOLDEN, "probs_b");
    CU_ASSERT_DOUBLE_EQUAL(pt.a_prob, pa.data[pt.a_class], 2e-5);
    CU_ASSERT_DOUBLE_EQUAL(pt.b_prob, pb.data[pt.a_class], 2e-5);
    CU_ASSERT_EQUAL(pt.b_class, 7); // the sneaker
    tensor_free(&pa), tensor_free(&pb), tensor_free(&prob), tensor_free(&top);
    tensor_free(&cls), tensor_free(&a), tensor_free(&b);
    patching_free(&pt);
    vit_free(&vit);
}

/* ------------------------------------------------------------ properties */

static void test_a_into_a_changes_nothing(void) {
    Vit vit = shipped();
    Tensor a = golden_tensor(GOLDEN, "a");
    Patching pt = grid_of(&vit, &a, &a);
    for (int i = 0; i < L * T; i++) {
        CU_ASSERT_EQUAL(pt.prob[i], (float)pt.a_prob);
        CU_ASSERT_EQUAL(pt.top[i], pt.a_class);
    }
    CU_ASSERT_EQUAL(pt.b_prob, pt.a_prob);
    CU_ASSERT_EQUAL(pt.b_class, pt.a_class);
    tensor_free(&a);
    patching_free(&pt);
    vit_free(&vit);
}

// softmax(logits) in double; both are (Y)
static void softmax_of(double *p, const float *logits) {
    double sum = 0;
    for (int k = 0; k < Y; k++) sum += p[k] = exp((double)logits[k]);
    for (int k = 0; k < Y; k++) p[k] /= sum;
}

// Reads nothing: a pass with a listener forms attention's probabilities, as
// patching's passes do (without one, attention runs online: other rounding).
static void hear_nothing(void *user, const char *name, const Tensor *t) {
    (void)user, (void)name, (void)t;
}

// A listener that keeps the "embed" stage, (1, T, D), in user.
static void keep_embed(void *user, const char *name, const Tensor *t) {
    if (strcmp(name, "embed") == 0) memcpy(user, t->data, t->numel * sizeof(float));
}

static void test_every_row_of_the_last_block_gives_b(void) {
    Vit vit = shipped();
    Tensor a = golden_tensor(GOLDEN, "a"), b = golden_tensor(GOLDEN, "b");
    const int D = vit.config.dim;
    float *xa = malloc(sizeof(float) * L * T * D), *xb = malloc(sizeof(float) * L * T * D);
    VitError err;
    CU_ASSERT_FATAL(patching_streams(xa, &vit, &a, &err) == VIT_OK);
    CU_ASSERT_FATAL(patching_streams(xb, &vit, &b, &err) == VIT_OK);
    float b_logits[Y]; // B's own pass, the one that recorded its streams
    memcpy(b_logits, vit_logits(&vit).data, sizeof b_logits);
    int rows[T];
    for (int t = 0; t < T; t++) rows[t] = t;
    double probs[Y], expected[Y];
    const size_t last = (size_t)(L - 1) * T * D;
    CU_ASSERT_FATAL(patching_one(probs, &vit, xa + last, xb + last, L - 1, rows, T, &err) ==
                    VIT_OK);
    CU_ASSERT(memcmp(vit_logits(&vit).data, b_logits, sizeof b_logits) == 0); // bit for bit
    softmax_of(expected, b_logits);
    for (int k = 0; k < Y; k++) CU_ASSERT_DOUBLE_EQUAL(probs[k], expected[k], 1e-12);
    // the whole row set of an earlier block gives B's answer too, within rounding
    const size_t first = 0;
    CU_ASSERT_FATAL(patching_one(probs, &vit, xa + first, xb + first, 0, rows, T, &err) ==
                    VIT_OK);
    for (int k = 0; k < Y; k++) CU_ASSERT_DOUBLE_EQUAL(probs[k], expected[k], 1e-6);
    free(xa), free(xb);
    tensor_free(&a), tensor_free(&b);
    vit_free(&vit);
}

static void test_forward_from_a_pass_own_stream(void) {
    Vit vit = shipped();
    Tensor a = golden_tensor(GOLDEN, "a");
    const int D = vit.config.dim;
    float *xa = malloc(sizeof(float) * L * T * D);
    VitError err;
    CU_ASSERT_FATAL(patching_streams(xa, &vit, &a, &err) == VIT_OK);
    float logits[Y];
    memcpy(logits, vit_logits(&vit).data, sizeof logits);
    for (int l = 0; l < L; l++) { // from each block's output, the same logits
        CU_ASSERT_FATAL(vit_forward_from(&vit, xa + (size_t)l * T * D, l + 1, 1, hear_nothing,
                                         NULL, &err) == VIT_OK);
        CU_ASSERT(memcmp(vit_logits(&vit).data, logits, sizeof logits) == 0);
    }
    // and from block 0, on the embedding: forward_rest.c writes vit_forward()'s steps 4
    // to 7 again, and this holds the two copies to the same bits
    float embed[T * 64];
    CU_ASSERT_FATAL(D == 64);
    CU_ASSERT_FATAL(vit_forward(&vit, &a, keep_embed, embed, &err) == VIT_OK);
    memcpy(logits, vit_logits(&vit).data, sizeof logits);
    CU_ASSERT_FATAL(vit_forward_from(&vit, embed, 0, 1, hear_nothing, NULL, &err) == VIT_OK);
    CU_ASSERT(memcmp(vit_logits(&vit).data, logits, sizeof logits) == 0);
    CU_ASSERT(vit_forward_from(&vit, xa, L + 1, 1, NULL, NULL, &err) == VIT_ERR_USAGE);
    CU_ASSERT(vit_forward_from(&vit, xa, -1, 1, NULL, NULL, &err) == VIT_ERR_USAGE);
    free(xa);
    tensor_free(&a);
    vit_free(&vit);
}

static void test_refusals(void) {
    Vit vit = shipped();
    Tensor a = golden_tensor(GOLDEN, "a");
    const int D = vit.config.dim;
    float *x = calloc((size_t)T * D, sizeof(float));
    double probs[Y];
    VitError err;
    const int bad_token = T, token = 0;
    CU_ASSERT(patching_one(probs, &vit, x, x, L, &token, 1, &err) == VIT_ERR_USAGE);
    CU_ASSERT(strstr(err.msg, "block 6") != NULL);
    CU_ASSERT(patching_one(probs, &vit, x, x, 0, &bad_token, 1, &err) == VIT_ERR_USAGE);
    CU_ASSERT(strstr(err.msg, "token 50") != NULL);
    Patching pt;
    CU_ASSERT(patching_grid(&pt, &vit, &a, &a, Y, &err) == VIT_ERR_INPUT);
    patching_free(&pt);
    free(x);
    tensor_free(&a);
    vit_free(&vit);
}

static void test_layer_summary_by_hand(void) {
    float prob[2 * 3] = {0.9f, 0.5f, 0.95f, 0.1f, 0.9f, 0.85f};
    int top[2 * 3] = {9, 9, 9, 7, 9, 7};
    Patching pt = {.layers = 2, .tokens = 3, .classes = 10, .a_class = 9, .a_prob = 0.9,
                   .prob = prob, .top = top};
    int largest;
    CU_ASSERT_EQUAL(patching_layer_summary(&pt, 0, &largest), 0);
    CU_ASSERT_EQUAL(largest, 1); // |0.5 − 0.9| beats |0.95 − 0.9|
    CU_ASSERT_EQUAL(patching_layer_summary(&pt, 1, &largest), 2);
    CU_ASSERT_EQUAL(largest, 0);
}

/* ------------------------------------------------------------ vit patch */

static Tensor picture(const Vit *vit, const char *path) {
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
    return input;
}

// The summary's row of block l, "  l  token t (r,c)  p  change  flips", against
// lib's grid: the largest change found here, and the flips counted here.
static void expect_summary_row(const char *out, int l, const Patching *pt) {
    char head[32];
    snprintf(head, sizeof head, "\n  %-5d  token ", l);
    const char *row = strstr(out, head);
    CU_ASSERT_FATAL(row != NULL);
    int t;
    double p, change;
    CU_ASSERT_FATAL(sscanf(row + strlen(head), "%d (%*[^)]) %lf %lf", &t, &p, &change) == 3);
    // the largest change, found here over lib's row (not by patching_layer_summary())
    const float *cells = pt->prob + (size_t)l * T;
    int largest = 0, flips = 0;
    for (int k = 0; k < T; k++) {
        if (fabs(cells[k] - pt->a_prob) > fabs(cells[largest] - pt->a_prob)) largest = k;
        flips += pt->top[(size_t)l * T + k] != pt->a_class;
    }
    CU_ASSERT_EQUAL(t, largest);
    CU_ASSERT_DOUBLE_EQUAL(p, cells[largest], 0.5e-4 + 1e-7); // printed with 4 decimals
    CU_ASSERT_DOUBLE_EQUAL(change, cells[largest] - pt->a_prob, 0.5e-4 + 1e-7);
    const char *end = strchr(row + 1, '\n');
    CU_ASSERT_FATAL(end != NULL);
    // each flip is "t (r,c)" or "0 ([cls])": count the items by their " (" openings
    int items = 0;
    for (const char *q = row + strlen(head); q < end; q++) items += q[0] == ' ' && q[1] == '(';
    CU_ASSERT_EQUAL(items - 1, flips); // the first " (" is the largest change's token
}

static void test_cli_prints_libs_numbers(void) {
    Vit vit = shipped();
    char model[PATH_SIZE], a_path[PATH_SIZE], b_path[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(a_path, sizeof a_path, PICTURES[0]);
    vit_data_path(b_path, sizeof b_path, PICTURES[1]);
    Tensor a = picture(&vit, a_path), b = picture(&vit, b_path);
    Patching pt = grid_of(&vit, &a, &b);
    CliResult r = VIT_RUN("patch", "--weights", model, "--grid", a_path, b_path);
    if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT(strstr(r.out, ": Ankle boot, p = ") != NULL);
    CU_ASSERT(strstr(r.out, ": Sneaker; p(Ankle boot) = ") != NULL);
    for (int l = 0; l < L; l++) expect_summary_row(r.out, l, &pt);
    for (int l = 0; l < L; l++) { // the grid: [cls], then 49 values in reading order
        char head[32];
        snprintf(head, sizeof head, "block %d  [cls] ", l);
        const char *at = strstr(r.out, head);
        CU_ASSERT_FATAL(at != NULL);
        at += strlen(head);
        for (int t = 0; t < T; t++) {
            double v;
            int used;
            CU_ASSERT_FATAL(sscanf(at, "%lf%n", &v, &used) == 1);
            CU_ASSERT_DOUBLE_EQUAL(v, pt.prob[(size_t)l * T + t], 0.5e-4 + 1e-7);
            at += used;
        }
    }
    cli_result_free(&r);
    patching_free(&pt);
    tensor_free(&a), tensor_free(&b);
    vit_free(&vit);
}

static void test_cli_refusals(void) {
    char model[PATH_SIZE], boot[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    vit_data_path(boot, sizeof boot, PICTURES[0]);
    EXPECT_FAILURE(VIT_RUN("patch", "--weights", model, boot), 2, "two pictures");
    EXPECT_FAILURE(VIT_RUN("patch", "--weights", model, boot, "no-such-picture.png"), 1,
                   "no-such-picture.png");
    EXPECT_FAILURE(VIT_RUN("patch", "--weights", model, "--class", "10", boot, boot), 2,
                   "classes 0 to 9");
    EXPECT_FAILURE(VIT_RUN("patch", boot, boot), 2, "--weights");
}

CU_TestInfo tests_patching[] = {
    {"the grid against PyTorch (ankle boot A, sneaker B)", test_grid_against_pytorch},
    {"patching A into A changes nothing, exactly", test_a_into_a_changes_nothing},
    {"every row of the last block patched gives B's probabilities",
     test_every_row_of_the_last_block_gives_b},
    {"vit_forward_from() on a pass's own stream gives its logits",
     test_forward_from_a_pass_own_stream},
    {"a block, a token or a class outside the model is refused", test_refusals},
    {"a block's flips and largest change, by hand", test_layer_summary_by_hand},
    {"vit patch prints lib's numbers", test_cli_prints_libs_numbers},
    {"vit patch refuses what it cannot read", test_cli_refusals},
    CU_TEST_INFO_NULL,
};
