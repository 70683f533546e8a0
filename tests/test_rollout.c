/**
 * @file test_rollout.c
 * @brief Attention rollout (lib/explain/rollout.c) against PyTorch: on a recorded
 *        trace, through the whole forward and backward pass, and against the
 *        mistakes of a widely copied implementation.
 *
 * The golden, tests/golden/rollout.safetensors, comes from
 * tools/gen_golden_rollout.py: the shipped model (data/models) run by
 * tools/ref_vit.py in float64 on two shipped test images, the rollouts
 * computed with torch from its probabilities and autograd's gradients.
 *
 *  - On a recorded trace: PyTorch's probabilities and gradients of image 0,
 *    as float32, go into the C functions, which must give PyTorch's rollouts
 *    to rounding: every head fusion, discarding 90 %, gradient-weighted.
 *  - The mistakes: vit-explain's row normalisation (a vector that broadcasts
 *    along the wrong axis) and its gradients in reverse layer order each land
 *    far from the right answer, so these tests would catch them.
 *  - The whole pass: the C forward and backward of the same model on the same
 *    PNGs, recorded, rolled out, against PyTorch's own pass.
 *  - What the functions promise: rows that sum to 1, the (0, 0) entry never
 *    discarded, ties broken by position, bad sizes refused.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/image.h"
#include "ops/ops.h"
#include "io/labels.h"
#include "explain/occlusion.h" // mask_patches()
#include "explain/rollout.h"

#define GOLDEN "rollout.safetensors"

// Compare @p actual with golden @p name, at the tolerance the golden names for it.
static void expect_golden(const char *name, const Tensor *actual) {
    SafeTensors st;
    VitError err;
    float atol = CHECK_ATOL, rtol = CHECK_RTOL;
    if (st_open(&st, golden_path(GOLDEN), &err) == VIT_OK) {
        char key[128];
        snprintf(key, sizeof key, "tol.%s", name);
        const char *v = st_meta(&st, key);
        if (v && sscanf(v, "%f %f", &atol, &rtol) != 2) atol = CHECK_ATOL, rtol = CHECK_RTOL;
        st_close(&st);
    }
    Tensor expected = golden_tensor(GOLDEN, name);
    assert_tensor_close(actual, &expected, atol, rtol, name);
    tensor_free(&expected);
}

// The golden's metadata entry KEY as a number; NaN when it is not there.
static double golden_number(const char *key) {
    SafeTensors st;
    VitError err;
    double v = NAN;
    if (st_open(&st, golden_path(GOLDEN), &err) == VIT_OK) {
        const char *s = st_meta(&st, key);
        if (s) v = atof(s);
        st_close(&st);
    }
    return v;
}

static int golden_int(const char *key) {
    const double v = golden_number(key);
    return isnan(v) ? -1 : (int)v;
}

/* --------------------------------------------------- on a recorded trace */

/** PyTorch's recorded probabilities and gradients of image 0, (L, H, N, N) each. */
typedef struct {
    Tensor probs, grads;
    int L, H, N;
    const float *p[64], *g[64]; // per layer
} Recorded;

static Recorded recorded_open(void) {
    Recorded r = {.probs = golden_tensor(GOLDEN, "b0.probs"),
                  .grads = golden_tensor(GOLDEN, "b0.grads")};
    CU_ASSERT_EQUAL_FATAL(r.probs.ndim, 4);
    r.L = r.probs.shape[0], r.H = r.probs.shape[1], r.N = r.probs.shape[2];
    CU_ASSERT_FATAL(r.L <= 64);
    const size_t layer = (size_t)r.H * r.N * r.N;
    for (int l = 0; l < r.L; l++) {
        r.p[l] = r.probs.data + (size_t)l * layer;
        r.g[l] = r.grads.data + (size_t)l * layer;
    }
    return r;
}

static void recorded_close(Recorded *r) {
    tensor_free(&r->probs);
    tensor_free(&r->grads);
}

// The rollout of the recorded layers: head fusion, or gradients when grads.
static Tensor roll(const Recorded *r, HeadFuse fuse, double discard, const float *const *grads) {
    Tensor joint = tensor_new(2, r->N, r->N);
    RolloutOptions o = {fuse, discard};
    VitError err;
    CU_ASSERT_EQUAL(attention_rollout(joint.data, r->p, grads, r->L, r->H, r->N, &o, &err),
                    VIT_OK);
    return joint;
}

static void test_rollout_on_trace(void) {
    Recorded r = recorded_open();
    const double discard = golden_number("discard");
    CU_ASSERT_DOUBLE_EQUAL(discard, 0.9, 1e-12);
    char name[64];
    for (int f = FUSE_MEAN; f <= FUSE_MIN; f++) {
        Tensor j = roll(&r, (HeadFuse)f, 0, NULL);
        snprintf(name, sizeof name, "unit.rollout.%s", head_fuse_name((HeadFuse)f));
        expect_golden(name, &j);
        tensor_free(&j);
        j = roll(&r, (HeadFuse)f, discard, NULL);
        snprintf(name, sizeof name, "unit.rollout.%s.discard", head_fuse_name((HeadFuse)f));
        expect_golden(name, &j);
        tensor_free(&j);
    }
    Tensor j = roll(&r, FUSE_MEAN, 0, r.g);
    expect_golden("unit.grad", &j);
    tensor_free(&j);
    j = roll(&r, FUSE_MEAN, discard, r.g);
    expect_golden("unit.grad.discard", &j);
    tensor_free(&j);
    recorded_close(&r);
}

// max |a − b| over two tensors of the same shape
static float max_diff(const Tensor *a, const Tensor *b) {
    CU_ASSERT_FATAL(tensor_same_shape(a, b));
    return tensor_max_abs_diff(a, b);
}

static void test_vit_explain_mistakes(void) {
    Recorded r = recorded_open();
    // Rows divided along the wrong axis: after max fusion and discarding, its
    // rows no longer sum to 1 and its map is far from the right one.
    Tensor ours = roll(&r, FUSE_MAX, golden_number("discard"), NULL);
    Tensor bug = golden_tensor(GOLDEN, "unit.bug.colnorm.max.discard");
    const float d1 = max_diff(&ours, &bug);
    printf("\n      wrong-axis normalisation: max |diff| %.4f; ", (double)d1);
    CU_ASSERT(d1 > 0.05f); // measured 0.128
    double worst_bug = 0, worst_ours = 0;
    for (int i = 0; i < r.N; i++) {
        double sb = 0, so = 0;
        for (int k = 0; k < r.N; k++) sb += bug.data[i * r.N + k], so += ours.data[i * r.N + k];
        worst_bug = fmax(worst_bug, fabs(sb - 1)), worst_ours = fmax(worst_ours, fabs(so - 1));
    }
    printf("rows off 1 by up to %.3f (ours %.1e); ", worst_bug, worst_ours);
    CU_ASSERT(worst_bug > 0.1);
    CU_ASSERT(worst_ours < 1e-5);
    tensor_free(&ours);
    tensor_free(&bug);
    // Gradients in reverse layer order: a different map.
    ours = roll(&r, FUSE_MEAN, 0, r.g);
    bug = golden_tensor(GOLDEN, "unit.bug.reversed.grad");
    const float d2 = max_diff(&ours, &bug);
    printf("reversed gradients: max |diff| %.4f ", (double)d2);
    CU_ASSERT(d2 > 0.005f); // measured 0.023, about 1,100 times the tolerance
    tensor_free(&ours);
    tensor_free(&bug);
    recorded_close(&r);
}

/* ------------------------------------------------------- the whole pass */

static const char *const images[] = {"0000-ankle-boot.png", "0004-shirt.png"};

/** The shipped model and the two images as one batch. */
typedef struct {
    Vit vit;
    Tensor input;
} Pass;

static void pass_open(Pass *p) {
    char path[1024];
    VitError err;
    memset(p, 0, sizeof *p);
    vit_data_path(path, sizeof path, "models/vit-fashion.safetensors");
    if (vit_build(&p->vit, path, &err) != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(p->vit.config.image_size, 28);
    const VitConfig *c = &p->vit.config;
    Preprocess pre;
    CU_ASSERT_EQUAL_FATAL(image_preprocess_for_model(&pre, NULL, "fashion-mnist", &p->vit.file,
                                               c->image_size, c->channels, &err), VIT_OK);
    p->input = tensor_new(4, 2, c->channels, c->image_size, c->image_size);
    const size_t one = p->input.numel / 2;
    for (int b = 0; b < 2; b++) {
        char name[256];
        snprintf(name, sizeof name, "images/fashion-mnist/%s", images[b]);
        vit_data_path(path, sizeof path, name);
        Image img;
        if (image_load(&img, path, &err) != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
        CU_ASSERT_FATAL(img.pixels != NULL);
        image_preprocess(p->input.data + (size_t)b * one, &img, &pre);
        image_free(&img);
    }
}

static void pass_close(Pass *p) {
    tensor_free(&p->input);
    vit_free(&p->vit);
}

static void test_whole_pass(void) {
    Pass p;
    pass_open(&p);
    const int L = p.vit.config.depth;
    TraceRecorder fwd = {0}, bwd = {0};
    VitError err;
    int chosen[2];
    VitStatus s = rollout_record(&p.vit, &p.input, NULL, chosen, &fwd, &bwd, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(s, VIT_OK);
    CU_ASSERT_EQUAL(fwd.count, L); // only the probabilities were recorded
    CU_ASSERT_EQUAL(bwd.count, L);
    char name[64];
    for (int b = 0; b < 2; b++) {
        snprintf(name, sizeof name, "b%d.class", b);
        CU_ASSERT_EQUAL(chosen[b], golden_int(name)); // the same predicted class
        // each layer's and head's [cls] row over the patches, (L, H, N − 1)
        const Tensor *p0 = trace_find(&fwd, "blocks.0.attn.probs");
        CU_ASSERT_FATAL(p0 != NULL);
        const int H = p0->shape[1], N = p0->shape[2];
        Tensor cls = tensor_new(3, L, H, N - 1);
        float *row = malloc(sizeof(float) * (size_t)N);
        for (int l = 0; l < L; l++) {
            snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
            const Tensor *t = trace_find(&fwd, name);
            for (int h = 0; h < H; h++) {
                attention_cls_row(row, t->data + (size_t)b * H * N * N, H, N, h, FUSE_MEAN);
                memcpy(cls.data + ((size_t)l * H + h) * (N - 1), row + 1, sizeof(float) * (N - 1));
            }
        }
        free(row);
        snprintf(name, sizeof name, "b%d.cls_attention", b);
        expect_golden(name, &cls);
        tensor_free(&cls);
        for (int f = FUSE_MEAN; f <= FUSE_MIN; f++) {
            Tensor joint;
            RolloutOptions o = {(HeadFuse)f, 0};
            CU_ASSERT_EQUAL_FATAL(rollout_from_trace(&joint, &fwd, NULL, L, b, &o, &err), VIT_OK);
            snprintf(name, sizeof name, "b%d.rollout.%s", b, head_fuse_name((HeadFuse)f));
            expect_golden(name, &joint);
            tensor_free(&joint);
        }
        Tensor joint;
        RolloutOptions o = {FUSE_MEAN, 0};
        CU_ASSERT_EQUAL_FATAL(rollout_from_trace(&joint, &fwd, &bwd, L, b, &o, &err), VIT_OK);
        snprintf(name, sizeof name, "b%d.grad.pred", b);
        expect_golden(name, &joint);
        tensor_free(&joint);
    }
    // the gradient maps of another class, the same for both images
    const int other = golden_int("other_class"), classes[2] = {other, other};
    CU_ASSERT_EQUAL_FATAL(rollout_record(&p.vit, &p.input, classes, NULL, &fwd, &bwd, &err),
                          VIT_OK);
    for (int b = 0; b < 2; b++) {
        Tensor joint;
        RolloutOptions o = {FUSE_MEAN, 0};
        CU_ASSERT_EQUAL_FATAL(rollout_from_trace(&joint, &fwd, &bwd, L, b, &o, &err), VIT_OK);
        snprintf(name, sizeof name, "b%d.grad.other", b);
        expect_golden(name, &joint);
        tensor_free(&joint);
    }
    trace_recorder_free(&fwd);
    trace_recorder_free(&bwd);
    pass_close(&p);
}

// The backward pass is linear in dlogits, and ∂p_c/∂y = p_c·∂log p_c/∂y: so the
// probability's gradients are the log-probability's times p_c, layer by layer.
static void test_scores_of_a_class(void) {
    Pass p;
    pass_open(&p);
    const int L = p.vit.config.depth, Y = p.vit.config.num_classes;
    TraceRecorder fwd = {0}, bwd_log = {0}, bwd_prob = {0};
    VitError err;
    int chosen[2];
    CU_ASSERT_EQUAL_FATAL(rollout_record_score(&p.vit, &p.input, NULL, chosen, SCORE_LOG_PROB,
                                               &fwd, &bwd_log, &err), VIT_OK);
    float pc[2], q[64];
    const Tensor logits = vit_logits(&p.vit);
    for (int b = 0; b < 2; b++) {
        softmax(q, logits.data + (size_t)b * Y, 1, Y);
        pc[b] = q[chosen[b]];
    }
    CU_ASSERT_EQUAL_FATAL(rollout_record_score(&p.vit, &p.input, chosen, NULL, SCORE_PROB, &fwd,
                                               &bwd_prob, &err), VIT_OK);
    char name[64];
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "grad.blocks.%d.attn.probs", l);
        const Tensor *a = trace_find(&bwd_prob, name), *g = trace_find(&bwd_log, name);
        CU_ASSERT_FATAL(a != NULL && g != NULL);
        Tensor want = tensor_new(4, g->shape[0], g->shape[1], g->shape[2], g->shape[3]);
        const size_t image = g->numel / 2;
        for (size_t e = 0; e < g->numel; e++) want.data[e] = pc[e / image] * g->data[e];
        assert_tensor_close(a, &want, 1e-7f, 1e-3f, name);
        tensor_free(&want);
    }
    CU_ASSERT_STRING_EQUAL(rollout_score_name(SCORE_LOG_PROB), "log-probability");
    trace_recorder_free(&fwd), trace_recorder_free(&bwd_log), trace_recorder_free(&bwd_prob);
    pass_close(&p);
}

/* ------------------------------------------------------- what it promises */

static void test_rows_sum_to_one(void) {
    Recorded r = recorded_open();
    for (int f = FUSE_MEAN; f <= FUSE_MIN; f++) {
        Tensor j = roll(&r, (HeadFuse)f, 0.5, f == FUSE_MEAN ? r.g : NULL);
        double worst = 0;
        for (int i = 0; i < r.N; i++) {
            double sum = 0;
            for (int k = 0; k < r.N; k++) {
                CU_ASSERT(j.data[i * r.N + k] >= 0);
                sum += j.data[i * r.N + k];
            }
            worst = fmax(worst, fabs(sum - 1));
        }
        CU_ASSERT(worst < 1e-5);
        tensor_free(&j);
    }
    recorded_close(&r);
}

static void test_discard_rules(void) {
    // a 3×3 with (0, 0) the lowest and a tie: ⌊0.5·9⌋ = 4 lowest are
    // (0,0) 0.01 (spared), then 0.02 at (1,1), the tie 0.03 at (0,1) and (2,2)
    // in position order; so three entries go to 0 and (0, 0) stays
    float a[9] = {0.01f, 0.03f, 0.50f, 0.40f, 0.02f, 0.60f, 0.70f, 0.80f, 0.03f};
    attention_discard_lowest(a, 3, 0.5);
    const float want[9] = {0.01f, 0, 0.50f, 0.40f, 0, 0.60f, 0.70f, 0.80f, 0};
    for (int e = 0; e < 9; e++) CU_ASSERT_EQUAL(a[e], want[e]);
    // the tie at the boundary is broken by position: (0, 1) goes before (2, 2)
    float b[9] = {0.9f, 0.03f, 0.50f, 0.40f, 0.02f, 0.60f, 0.70f, 0.80f, 0.03f};
    attention_discard_lowest(b, 3, 2.0 / 9); // ⌊2⌋ = 2: 0.02 and the first 0.03
    CU_ASSERT_EQUAL(b[4], 0);
    CU_ASSERT_EQUAL(b[1], 0);
    CU_ASSERT_EQUAL(b[8], 0.03f);
    // nothing discarded at 0
    float c[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    attention_discard_lowest(c, 2, 0);
    CU_ASSERT_EQUAL(c[0], 0.1f);
    CU_ASSERT_EQUAL(c[3], 0.4f);
}

static void test_fusions_by_hand(void) {
    // two heads over two tokens
    const float probs[8] = {0.2f, 0.8f, 0.6f, 0.4f, /* head 1 */ 0.4f, 0.6f, 0.1f, 0.9f};
    const float grads[8] = {1.0f, -1.0f, 2.0f, 0.5f, /* head 1 */ -3.0f, 1.0f, 4.0f, 0.0f};
    float out[4]; // NaN before each call: each must write what it is checked on
    check_poison(out, 4);
    attention_fuse_heads(out, probs, 2, 2, FUSE_MEAN);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 0.3, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 0.65, 1e-7);
    check_poison(out, 4);
    attention_fuse_heads(out, probs, 2, 2, FUSE_MAX);
    CU_ASSERT_EQUAL(out[1], 0.8f);
    CU_ASSERT_EQUAL(out[2], 0.6f);
    check_poison(out, 4);
    attention_fuse_heads(out, probs, 2, 2, FUSE_MIN);
    CU_ASSERT_EQUAL(out[1], 0.6f);
    CU_ASSERT_EQUAL(out[2], 0.1f);
    // the [cls] row (row 0): head 1's, and the heads' max
    float row[2];
    check_poison(row, 2);
    attention_cls_row(row, probs, 2, 2, 1, FUSE_MEAN);
    CU_ASSERT(row[0] == 0.4f && row[1] == 0.6f);
    check_poison(row, 2);
    attention_cls_row(row, probs, 2, 2, -1, FUSE_MAX);
    CU_ASSERT(row[0] == 0.4f && row[1] == 0.8f);
    // mean over heads of max(0, p·g): (0.2 + 0)/2, (0 + 0.6)/2, (1.2 + 0.4)/2, (0.2 + 0)/2
    check_poison(out, 4);
    attention_grad_fuse(out, probs, grads, 2, 2);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 0.1, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 0.3, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(out[2], 0.8, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 0.1, 1e-7);
    // one layer: A = rownorm(F + I) = [[1.3, 0.7], [0.6, 1.4]] / 2; J = A
    double joint[4] = {1, 0, 0, 1}, scratch[8];
    const float fused[4] = {0.3f, 0.7f, 0.6f, 0.4f};
    rollout_layer(joint, fused, 2, scratch);
    CU_ASSERT_DOUBLE_EQUAL(joint[0], 0.65, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(joint[1], 0.35, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(joint[2], 0.3, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(joint[3], 0.7, 1e-7);
    // a second, identical layer multiplies on the left: J = A·A
    rollout_layer(joint, fused, 2, scratch);
    CU_ASSERT_DOUBLE_EQUAL(joint[0], 0.65 * 0.65 + 0.35 * 0.3, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(joint[1], 0.65 * 0.35 + 0.35 * 0.7, 1e-7);
}

static void test_refusals(void) {
    const float p[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const float *layers[1] = {p};
    float joint[4];
    VitError err;
    RolloutOptions o = {FUSE_MEAN, 1.0};
    CU_ASSERT_EQUAL(attention_rollout(joint, layers, NULL, 1, 1, 2, &o, &err), VIT_ERR_USAGE);
    CU_ASSERT(strstr(err.msg, "discard ratio 1") != NULL);
    o.discard = -0.1;
    CU_ASSERT_EQUAL(attention_rollout(joint, layers, NULL, 1, 1, 2, &o, &err), VIT_ERR_USAGE);
    o.discard = NAN;
    CU_ASSERT_EQUAL(attention_rollout(joint, layers, NULL, 1, 1, 2, &o, &err), VIT_ERR_USAGE);
    o.discard = 0;
    CU_ASSERT_EQUAL(attention_rollout(joint, layers, NULL, 0, 1, 2, &o, &err), VIT_ERR_USAGE);
    // a trace without the layers asked for
    TraceRecorder empty = {0};
    Tensor out;
    CU_ASSERT_EQUAL(rollout_from_trace(&out, &empty, NULL, 2, 0, &o, &err), VIT_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "blocks.0.attn.probs") != NULL);
    // an image beyond the batch
    Tensor t = tensor_new(4, 1, 1, 2, 2);
    trace_record(&empty, "blocks.0.attn.probs", &t);
    CU_ASSERT_EQUAL(rollout_from_trace(&out, &empty, NULL, 1, 1, &o, &err), VIT_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "image 1 of a batch of 1") != NULL);
    tensor_free(&t);
    trace_recorder_free(&empty);
    HeadFuse f;
    CU_ASSERT_TRUE(head_fuse_parse("max", &f) && f == FUSE_MAX);
    CU_ASSERT_FALSE(head_fuse_parse("median", &f));
}

/* ------------------------------------------------------- measuring maps */

static void test_measure_pieces(void) {
    // a 4×4 image of 2×2 patches: the garment (200) fills patch 0 and half of patch 3
    unsigned char px[16] = {200, 200, 0, 0, /**/ 200, 200, 0, 0, /**/ 0, 0, 200, 0, /**/ 0, 0, 200, 0};
    const float map[4] = {0.5f, 0.1f, 0.1f, 0.3f};
    // (0.5·1 + 0.1·0 + 0.1·0 + 0.3·0.5) / 1.0
    CU_ASSERT_DOUBLE_EQUAL(rollout_map_mass_on_object(map, px, 4, 2, 32), 0.65, 1e-6); // float map
    const float flat[4] = {1, 1, 1, 1}; // uniform: the garment's share of the area, 6/16
    CU_ASSERT_DOUBLE_EQUAL(rollout_map_mass_on_object(flat, px, 4, 2, 32), 0.375, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(rollout_map_mass_on_object(flat, px, 4, 2, 200), 0, 1e-9); // strictly above
    int order[4];
    rollout_map_rank(order, map, 4); // 0.5, 0.3, then the tie 0.1 in index order
    CU_ASSERT(order[0] == 0 && order[1] == 3 && order[2] == 1 && order[3] == 2);
    float input[16];
    for (int i = 0; i < 16; i++) input[i] = (float)i;
    mask_patches(input, 1, 4, 2, order, 2, -1.0f); // patches 0 and 3 black
    const float want[16] = {-1, -1, 2, 3, -1, -1, 6, 7, 8, 9, -1, -1, 12, 13, -1, -1};
    for (int i = 0; i < 16; i++) CU_ASSERT_EQUAL(input[i], want[i]);
}

static void test_paired_se_by_hand(void) {
    // three images, two rankings: p_a = 0.2, 0.4, 0.9 and p_b = 0.3, 0.3, 0.6, so
    // d = −0.1, 0.1, 0.3, mean 0.1, var (0.04 + 0 + 0.04)/2 = 0.04, SE = sqrt(0.04/3)
    const double pa[3] = {0.2, 0.4, 0.9}, pb[3] = {0.3, 0.3, 0.6};
    AttentionMeasures m = {.images = 3, .maps = MAP_BASIC_COUNT};
    const double *p[2] = {pa, pb};
    const MapMethod at[2] = {MAP_ROLLOUT, MAP_RANDOM};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            const double mi = (p[i][0] + p[i][1] + p[i][2]) / 3, mj = (p[j][0] + p[j][1] + p[j][2]) / 3;
            for (int n = 0; n < 3; n++) m.comoment[at[i]][at[j]][2] += (p[i][n] - mi) * (p[j][n] - mj);
        }
    CU_ASSERT_DOUBLE_EQUAL(attention_measure_paired_se(&m, MAP_ROLLOUT, MAP_RANDOM, 2),
                           sqrt(0.04 / 3), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(attention_measure_paired_se(&m, MAP_RANDOM, MAP_ROLLOUT, 2),
                           sqrt(0.04 / 3), 1e-12);
    CU_ASSERT_EQUAL(attention_measure_paired_se(&m, MAP_ROLLOUT, MAP_BRIGHTNESS, 2), 0); // not scored
}

CU_TestInfo tests_rollout[] = {
    {"on a recorded trace, as PyTorch computes it", test_rollout_on_trace},
    {"vit-explain's mistakes are far from it", test_vit_explain_mistakes},
    {"the whole pass, forward and backward", test_whole_pass},
    {"rows sum to 1", test_rows_sum_to_one},
    {"discarding: the lowest, (0, 0) spared, ties by position", test_discard_rules},
    {"fusions and one layer by hand", test_fusions_by_hand},
    {"what it refuses", test_refusals},
    {"measuring: mass on the garment, ranking, masking", test_measure_pieces},
    {"the gradients of a class's probability and log-probability", test_scores_of_a_class},
    {"paired standard error by hand", test_paired_se_by_hand},
    CU_TEST_INFO_NULL,
};
