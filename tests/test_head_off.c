/**
 * @file test_head_off.c
 * @brief Attention heads switched off (lib/model/head_off.c, vit_set_head_off())
 *        against PyTorch's Hugging Face-style `head_mask`, forward and backward.
 *
 * The golden, tests/golden/head_off.safetensors, comes from
 * tools/gen_golden_head_off.py: a ViT of its own with `probs * head_mask`,
 * in float64, on the model vit_build_random() draws here (CONFIG, redrawn
 * there bit for bit) and a batch of two PCG32 images.
 *
 *  - Against PyTorch: one head off (layer 1, head 1), a whole layer off
 *    (layer 0) and none off: the logits, the switched layer's probabilities
 *    and context, the next layer's probabilities; with one head off, the
 *    gradients of the input and of layer 1's qkv weight for one class per image.
 *  - Exactly: the head that is off shows probabilities and a context band of
 *    0, its rows of the qkv weight's gradient are 0, and everything a
 *    switch cannot reach (the other heads of the layer, the layers before)
 *    is bit for bit the plain pass's; switched off and on again, the whole
 *    trace is the plain one, bit for bit.
 *  - Where the switch must hold: both ways of keeping activations for the
 *    backward, the replicas of vit_shards_new(), vit_resize_positions().
 *  - The API: the count, and a layer or head outside the model refused.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/rng.h"
#include "train/shards.h"
#include "model/vit.h"

#define GOLDEN "head_off.safetensors"

// The model of tools/gen_golden_head_off.py (CONFIG there; the golden's "config" says it).
enum { S = 12, P = 4, D = 24, L = 3, H = 3, M = 40, Y = 7, B = 2, DH = D / H, N = 10 };
static const char *const CONFIG = "img=12 patch=4 chans=3 dim=24 depth=3 heads=3 mlp_dim=40 "
                                  "classes=7 batch=2 seed=91 std=0.25 bias_std=0.1 "
                                  "norm_std=0.1 input_seed=92";
static const int CLASSES[B] = {3, 5}; // the class differentiated, per image

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

static Tensor images(int side) {
    Tensor x = tensor_new(4, B, 3, side, side);
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

// Compare actual with golden NAME at the tolerance the golden names for it;
// VIT_GOLDEN_REPORT=1 prints the largest difference.
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

// The recorded stage NAME, which must be there.
static const Tensor *stage(const TraceRecorder *r, const char *name) {
    const Tensor *t = trace_find(r, name);
    if (!t) fprintf(stderr, "\n    no stage %s in the trace\n", name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t;
}

// The case's stages against the golden "CASE.NAME".
static void expect_case(const char *c, const TraceRecorder *r, const char *const *names, int n) {
    for (int i = 0; i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s.%s", c, names[i]);
        expect_golden(key, stage(r, names[i]));
    }
}

static void forward(Vit *vit, const Tensor *x, TraceRecorder *r) {
    VitError err;
    trace_recorder_free(r);
    VitStatus s = vit_forward(vit, x, trace_record, r, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
}

static void set_off(Vit *vit, int layer, int head, bool off) {
    VitError err;
    VitStatus s = vit_set_head_off(vit, layer, head, off, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
}

static bool same_bits(const Tensor *a, const Tensor *b) {
    return tensor_same_shape(a, b) && !memcmp(a->data, b->data, a->numel * sizeof(float));
}

// Head h of a (B, H, N, N) probabilities tensor, image b: N·N floats.
static const float *head_of(const Tensor *probs, int b, int h) {
    return probs->data + ((size_t)b * H + h) * N * N;
}

static bool all_zero(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0.0f) return false;
    return true;
}

/* ------------------------------------------------------------ the model */

static void test_the_model_is_the_golden_one(void) {
    char config[256];
    CU_ASSERT_STRING_EQUAL(golden_meta("config", config, sizeof config), CONFIG);
    Vit vit = model();
    VitParam params[64];
    CU_ASSERT_FATAL(vit_params(&vit, NULL) <= 64);
    const int n = vit_params(&vit, params);
    const VitParam *qkv = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(params[i].name, "blocks.1.attn.qkv.weight")) qkv = &params[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(qkv);
    Tensor t = tensor_view((float *)qkv->data, 2, 3 * D, D);
    expect_golden("weights.blocks.1.attn.qkv.weight", &t); // drawn as PyTorch redrew it
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 0);
    CU_ASSERT_PTR_NULL(vit.heads_off);
    vit_free(&vit);
}

/* ---------------------------------------------------- against PyTorch */

static void test_one_head_off(void) {
    Vit vit = model();
    Tensor x = images(S);
    TraceRecorder plain = {0}, off = {0};
    forward(&vit, &x, &plain);
    set_off(&vit, 1, 1, true);
    forward(&vit, &x, &off);
    static const char *const names[] = {"logits", "blocks.1.attn.probs",
                                        "blocks.1.attn.context", "blocks.2.attn.probs"};
    expect_case("one", &off, names, 4);

    // the head that is off looks nowhere and brings nothing; its neighbours are untouched
    const Tensor *p = stage(&off, "blocks.1.attn.probs");
    const Tensor *p0 = stage(&plain, "blocks.1.attn.probs");
    const Tensor *ctx = stage(&off, "blocks.1.attn.context");
    const Tensor *ctx0 = stage(&plain, "blocks.1.attn.context");
    for (int b = 0; b < B; b++) {
        CU_ASSERT(all_zero(head_of(p, b, 1), N * N));
        for (int h = 0; h < H; h += 2) // heads 0 and 2
            CU_ASSERT(!memcmp(head_of(p, b, h), head_of(p0, b, h), N * N * sizeof(float)));
        for (int i = 0; i < N; i++) {
            const size_t row = ((size_t)b * N + i) * D;
            // head 1's band of the context is 0, heads 0's and 2's are the plain ones
            CU_ASSERT(all_zero(ctx->data + row + DH, DH));
            CU_ASSERT(!memcmp(ctx->data + row, ctx0->data + row, DH * sizeof(float)));
            CU_ASSERT(!memcmp(ctx->data + row + 2 * DH, ctx0->data + row + 2 * DH,
                              DH * sizeof(float)));
        }
    }
    // before the switched layer nothing changes; after it, the logits do, well past rounding
    CU_ASSERT(same_bits(stage(&off, "blocks.0.out"), stage(&plain, "blocks.0.out")));
    CU_ASSERT(same_bits(stage(&off, "blocks.1.attn.scores"),
                        stage(&plain, "blocks.1.attn.scores")));
    CU_ASSERT(tensor_max_abs_diff(stage(&off, "logits"), stage(&plain, "logits")) > 1e-2f);
    trace_recorder_free(&plain);
    trace_recorder_free(&off);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_a_whole_layer_off(void) {
    Vit vit = model();
    Tensor x = images(S);
    TraceRecorder r = {0};
    set_off(&vit, 0, -1, true);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), H);
    forward(&vit, &x, &r);
    static const char *const names[] = {"logits", "blocks.0.attn.probs",
                                        "blocks.0.attn.context", "blocks.1.attn.probs"};
    expect_case("layer", &r, names, 4);
    const Tensor *probs = stage(&r, "blocks.0.attn.probs");
    CU_ASSERT(all_zero(probs->data, probs->numel));
    // with no context, the attention's output is the projection's bias in every row
    const Tensor *proj = stage(&r, "blocks.0.attn.proj");
    const float *bias = vit.weights.blocks[0].attn.proj_b;
    for (int row = 0; row < B * N; row++)
        CU_ASSERT(!memcmp(proj->data + (size_t)row * D, bias, D * sizeof(float)));
    trace_recorder_free(&r);
    tensor_free(&x);
    vit_free(&vit);
}

// Switched off and on again (one by one, and all at once), every stage is the plain one.
static void test_on_again_is_the_plain_pass(void) {
    Vit vit = model();
    Tensor x = images(S);
    TraceRecorder plain = {0}, again = {0};
    forward(&vit, &x, &plain);
    expect_golden("none.logits", stage(&plain, "logits"));
    for (int round = 0; round < 2; round++) {
        set_off(&vit, 1, 1, true);
        set_off(&vit, 2, -1, true);
        forward(&vit, &x, &again);
        if (round == 0) {
            set_off(&vit, 1, 1, false);
            set_off(&vit, 2, -1, false);
        } else {
            vit_heads_all_on(&vit);
        }
        CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 0);
        forward(&vit, &x, &again);
        CU_ASSERT_EQUAL_FATAL(again.count, plain.count);
        int differ = 0;
        for (int i = 0; i < plain.count; i++) {
            const bool same = !strcmp(again.entries[i].name, plain.entries[i].name) &&
                              same_bits(&again.entries[i].t, &plain.entries[i].t);
            if (!same && differ++ == 0)
                fprintf(stderr, "\n    round %d: %s differs from the plain pass\n", round,
                        plain.entries[i].name);
        }
        CU_ASSERT_EQUAL(differ, 0);
    }
    trace_recorder_free(&plain);
    trace_recorder_free(&again);
    tensor_free(&x);
    vit_free(&vit);
}

/* ---------------------------------------------------------- the backward */

// The gradients, for CLASSES, of a model with head 1 of layer 1 off; keep says how the
// forward keeps what the backward reads (VIT_KEEP_INPUTS runs each block's forward again).
static void check_gradients(VitKeep keep) {
    Vit vit = model();
    Tensor x = images(S);
    VitError err;
    set_off(&vit, 1, 1, true);
    CU_ASSERT_FATAL(vit_train_prepare(&vit, keep, B, &err) == VIT_OK);
    CU_ASSERT_FATAL(vit_forward(&vit, &x, NULL, NULL, &err) == VIT_OK);
    float dlogits[B * Y] = {0};
    for (int b = 0; b < B; b++) dlogits[b * Y + CLASSES[b]] = 1.0f; // d logit[b, c_b] / d logits
    VitGrads grads = {0};
    TraceRecorder r = {0};
    CU_ASSERT_FATAL(vit_grads_init(&grads, &vit, &err) == VIT_OK);
    VitStatus s = vit_backward(&vit, &grads, dlogits, trace_record, &r, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    expect_golden("one.grad.input", stage(&r, "grad.input"));

    VitParam params[64];
    const int n = vit_grad_weights_params(params, &grads.weights, &vit.config);
    const VitParam *qkv = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(params[i].name, "blocks.1.attn.qkv.weight")) qkv = &params[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(qkv);
    Tensor dw = tensor_view((float *)qkv->data, 2, 3 * D, D);
    expect_golden("one.grad.blocks.1.attn.qkv.weight", &dw);
    for (int third = 0; third < 3; third++) // head 1's rows of W_q, W_k and W_v: nothing
        CU_ASSERT(all_zero(dw.data + ((size_t)third * D + DH) * D, (size_t)DH * D));
    // the probabilities stored for the backward are the gated ones
    const Tensor *dscores = stage(&r, "grad.blocks.1.attn.scores");
    for (int b = 0; b < B; b++) CU_ASSERT(all_zero(head_of(dscores, b, 1), N * N));
    trace_recorder_free(&r);
    vit_grads_free(&grads);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_gradients_keeping_everything(void) { check_gradients(VIT_KEEP_ALL); }
static void test_gradients_keeping_inputs(void) { check_gradients(VIT_KEEP_INPUTS); }

/* ------------------------------------------------- where the switch holds */

// One training step's loss and layer 1's qkv weight gradient, sharded over n (0: not).
static float sharded_step(int n, bool switch_first, Tensor *dqkv) {
    Vit vit = model();
    Tensor x = images(S);
    VitError err;
    VitShards *shards = NULL;
    if (switch_first) set_off(&vit, 1, 1, true);
    if (n > 0) CU_ASSERT_FATAL(vit_shards_new(&shards, &vit, n, B, &err) == VIT_OK);
    if (!switch_first) set_off(&vit, 1, 1, true); // after the replicas were made
    VitGrads grads = {0};
    CU_ASSERT_FATAL(vit_grads_init(&grads, &vit, &err) == VIT_OK);
    float loss = NAN;
    VitStatus s =
        shards ? vit_shards_forward_backward(shards, &grads, &x, CLASSES, 0.0f, &loss, &err)
               : vit_forward_backward(&vit, &grads, &x, CLASSES, 0.0f, &loss, NULL, NULL, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    VitParam params[64];
    const int count = vit_grad_weights_params(params, &grads.weights, &vit.config);
    for (int i = 0; i < count; i++)
        if (!strcmp(params[i].name, "blocks.1.attn.qkv.weight"))
            *dqkv = tensor_from(params[i].data, 2, (int[]){3 * D, D});
    vit_grads_free(&grads);
    tensor_free(&x);
    vit_shards_free(shards);
    vit_free(&vit);
    return loss;
}

static void test_shards_see_the_switch(void) {
    Tensor alone = {0}, before = {0}, after = {0};
    const float loss = sharded_step(0, true, &alone);
    const float loss_before = sharded_step(2, true, &before);
    const float loss_after = sharded_step(2, false, &after);
    CU_ASSERT_DOUBLE_EQUAL(loss_before, loss, 1e-6 * fabs(loss));
    CU_ASSERT_DOUBLE_EQUAL(loss_after, loss, 1e-6 * fabs(loss));
    assert_tensor_close(&before, &alone, 1e-6f, 1e-4f, "sharded, switched before");
    assert_tensor_close(&after, &alone, 1e-6f, 1e-4f, "sharded, switched after");
    for (int third = 0; third < 3; third++)
        CU_ASSERT(after.data && all_zero(after.data + ((size_t)third * D + DH) * D,
                                         (size_t)DH * D));
    tensor_free(&alone);
    tensor_free(&before);
    tensor_free(&after);
}

static void test_resizing_keeps_the_switch(void) {
    Vit vit = model();
    VitError err;
    set_off(&vit, 2, 0, true);
    CU_ASSERT_FATAL(vit_resize_positions(&vit, 16, &err) == VIT_OK);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 1);
    Tensor x = images(16);
    TraceRecorder r = {0};
    forward(&vit, &x, &r);
    const Tensor *probs = stage(&r, "blocks.2.attn.probs"); // (B, H, 17, 17)
    const size_t nn = 17 * 17;
    for (int b = 0; b < B; b++) {
        CU_ASSERT(all_zero(probs->data + (size_t)b * H * nn, nn));
        CU_ASSERT(!all_zero(probs->data + ((size_t)b * H + 1) * nn, nn));
    }
    trace_recorder_free(&r);
    tensor_free(&x);
    vit_free(&vit);
}

/* ------------------------------------------------------------- the API */

static void test_the_count(void) {
    Vit vit = model();
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 0);
    vit_heads_all_on(&vit); // nothing switched yet: nothing to do
    CU_ASSERT_PTR_NULL(vit.heads_off);
    set_off(&vit, 0, 1, true);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 1);
    set_off(&vit, 0, 1, true); // twice off is off
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 1);
    set_off(&vit, 2, -1, true);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 1 + H);
    set_off(&vit, 2, 0, false);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), H);
    CU_ASSERT(vit.weights.blocks[2].attn.head_off == vit.heads_off + 2 * H);
    CU_ASSERT(vit.weights.blocks[0].attn.head_off[1] && !vit.weights.blocks[1].attn.head_off[1]);
    vit_heads_all_on(&vit);
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 0);
    vit_free(&vit);
}

static void expect_refusal(Vit *vit, int layer, int head, const char *msg) {
    VitError err = {{0}};
    CU_ASSERT_EQUAL(vit_set_head_off(vit, layer, head, true, &err), VIT_ERR_USAGE);
    if (strcmp(err.msg, msg)) fprintf(stderr, "\n    said \"%s\"\n    not  \"%s\"\n", err.msg, msg);
    CU_ASSERT_STRING_EQUAL(err.msg, msg);
}

static void test_outside_the_model_is_refused(void) {
    Vit vit = model();
    expect_refusal(&vit, 3, 0, "layer 3: the model has layers 0 to 2");
    expect_refusal(&vit, -1, 0, "layer -1: the model has layers 0 to 2");
    expect_refusal(&vit, 1, 3,
                   "head 3 of layer 1: the model has heads 0 to 2 (or -1 for all of them)");
    expect_refusal(&vit, 1, -2,
                   "head -2 of layer 1: the model has heads 0 to 2 (or -1 for all of them)");
    CU_ASSERT_EQUAL(vit_heads_off_count(&vit), 0); // nothing changed, nothing taken
    CU_ASSERT_PTR_NULL(vit.heads_off);
    vit_free(&vit);
}

CU_TestInfo tests_head_off[] = {
    {"the model is the golden's", test_the_model_is_the_golden_one},
    {"one head off, as PyTorch's head_mask", test_one_head_off},
    {"a whole layer off, as PyTorch's head_mask", test_a_whole_layer_off},
    {"on again: the plain pass, bit for bit", test_on_again_is_the_plain_pass},
    {"gradients with a head off (every activation kept)", test_gradients_keeping_everything},
    {"gradients with a head off (inputs kept, recomputed)", test_gradients_keeping_inputs},
    {"shards see the switch, made before or after it", test_shards_see_the_switch},
    {"resizing the positions keeps the switch", test_resizing_keeps_the_switch},
    {"the count of heads off", test_the_count},
    {"a layer or head outside the model is refused", test_outside_the_model_is_refused},
    CU_TEST_INFO_NULL,
};
