/**
 * @file test_cnn.c
 * @brief Convolution, ReLU, pooling and the small CNN, forward and backward,
 *        against PyTorch; and the properties that owe nothing to it.
 *
 * 1. PyTorch. tests/golden/cnn.safetensors (tools/gen_golden_cnn.py) holds
 *    each op's inputs, an upstream gradient, F.conv2d's / F.relu's /
 *    F.max_pool2d's / mean's output and the gradients autograd computes in
 *    float64 on the same float32 inputs: a 3×3 kernel with stride 2 and
 *    padding 1 on 5×7 images of 3 channels, an even 2×2 kernel without
 *    padding, pooling that drops an odd row and column. Then the small CNN
 *    (cnn.h) on 4 random 28×28 images: its pooled features, logits, loss
 *    and every parameter's gradient. Each expected value carries its
 *    tolerance in the file's metadata ("tol.NAME" = "ATOL RTOL"), which the
 *    test requires; copies (ReLU, max pooling) are pinned exactly.
 *
 * 2. Properties: a 1×1 convolution is a linear layer applied to each pixel;
 *    col2im is im2col's adjoint, <im2col(x), y> = <x, col2im(y)>; max
 *    pooling's backward gives each gradient to its window's maximum and
 *    nothing to the rest; every backward adds; cnn_init() draws what
 *    PyTorch's default initialisation would, within its bounds.
 *
 * 3. Training: cnn_train_step()'s loss falls over 20 AdamW steps on 64
 *    Fashion-MNIST training images.
 *
 * VIT_GOLDEN_REPORT=1 prints the largest difference of every comparison.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "check.h"
#include "model/cnn.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "train/cnn_train.h"
#include "train/dataset.h"

static const char *const GOLDEN = "cnn.safetensors";

#define LOSS_AFTER_20 0.8f // the loss after 20 steps, at most this fraction of the first

/* ------------------------------------------------------------- helpers */

static float *new_floats(size_t n) { return vit_calloc(n ? n : 1, sizeof(float)); }

static float *random_floats(Rng *rng, size_t n) {
    float *x = new_floats(n);
    rng_fill_normal(rng, x, n, 0.0f, 1.0f);
    return x;
}

// The golden's tolerance for NAME ("tol.NAME"); a missing one fails the test.
static bool golden_tolerance(const char *name, float *atol, float *rtol) {
    SafeTensors st;
    VitError err;
    char key[160];
    snprintf(key, sizeof key, "tol.%s", name);
    const bool opened = st_open(&st, golden_path(GOLDEN), &err) == VIT_OK;
    const char *v = opened ? st_meta(&st, key) : NULL;
    const bool ok = v && sscanf(v, "%f %f", atol, rtol) == 2;
    if (opened) st_close(&st);
    if (!ok) fprintf(stderr, "\n    %s: no tolerance %s in its metadata\n", GOLDEN, key);
    CU_ASSERT_TRUE(ok);
    return ok;
}

// Compare @p got (read in the golden's shape) with the expected value NAME.
static void check_golden(const char *name, const float *got) {
    Tensor want = golden_tensor(GOLDEN, name);
    float atol = 0, rtol = 0;
    if (golden_tolerance(name, &atol, &rtol)) {
        Tensor view = tensor_view_shape((float *)got, want.ndim, want.shape);
        char label[160];
        snprintf(label, sizeof label, "%s %s", GOLDEN, name);
        assert_tensor_close(&view, &want, atol, rtol, label);
        if (golden_report_wanted())
            fprintf(stderr, "\n      pytorch %-26s max |diff| %.2e  (tol %g + %g·|ref|)", name,
                    (double)tensor_max_abs_diff(&view, &want), (double)atol, (double)rtol);
    }
    tensor_free(&want);
}

/// The golden's tensors a test reads, by name, freed together.
typedef struct {
    int n;
    Tensor t[24];
} GoldenSet;

static Tensor *gin(GoldenSet *g, const char *prefix, const char *name) {
    CU_ASSERT_FATAL(g->n < (int)(sizeof g->t / sizeof g->t[0]));
    char full[96];
    snprintf(full, sizeof full, "%s.%s", prefix, name);
    g->t[g->n] = golden_tensor(GOLDEN, full);
    return &g->t[g->n++];
}

static void golden_set_free(GoldenSet *g) {
    for (int i = 0; i < g->n; i++) tensor_free(&g->t[i]);
    g->n = 0;
}

static void check_case(const char *prefix, const char *name, const float *got) {
    char full[96];
    snprintf(full, sizeof full, "%s.%s", prefix, name);
    check_golden(full, got);
}

/* ------------------------------------------------------- 1. PyTorch goldens */

// One F.conv2d case: x (B, C, H, W), w (O, C, k, k); k, stride and padding from the golden.
static void check_conv_case(const char *name) {
    GoldenSet g = {0};
    const Tensor *x = gin(&g, name, "x"), *w = gin(&g, name, "w"), *b = gin(&g, name, "b");
    const Tensor *dout = gin(&g, name, "dout"), *geometry = gin(&g, name, "geometry");
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const int O = w->shape[0], k = (int)geometry->data[0];
    const int stride = (int)geometry->data[1], pad = (int)geometry->data[2];
    CU_ASSERT_EQUAL_FATAL(conv2d_out_size(H, k, stride, pad), (int)dout->shape[2]); // PyTorch's
    CU_ASSERT_EQUAL_FATAL(conv2d_out_size(W, k, stride, pad), (int)dout->shape[3]);
    float *out = new_floats(dout->numel), *dx = new_floats(x->numel);
    float *dw = new_floats(w->numel), *db = new_floats(O);
    conv2d_forward(out, x->data, w->data, b->data, B, C, H, W, O, k, stride, pad);
    conv2d_backward(dx, dw, db, dout->data, x->data, w->data, B, C, H, W, O, k, stride, pad);
    check_case(name, "out", out);
    check_case(name, "dx", dx);
    check_case(name, "dw", dw);
    check_case(name, "db", db);
    free(out), free(dx), free(dw), free(db), golden_set_free(&g);
}

static void test_conv_matches_pytorch(void) {
    check_conv_case("conv_a"); // 3×3, stride 2, padding 1, 5×7 images
    check_conv_case("conv_b"); // 2×2, stride 1, no padding, 6×5 images
}

static void test_relu_matches_pytorch(void) {
    GoldenSet g = {0};
    const Tensor *x = gin(&g, "relu", "x"), *dout = gin(&g, "relu", "dout");
    float *out = new_floats(x->numel), *dx = new_floats(x->numel);
    relu_forward(out, x->data, x->numel);
    relu_backward(dx, dout->data, x->data, x->numel);
    check_golden("relu.out", out);
    check_golden("relu.dx", dx);
    free(out), free(dx), golden_set_free(&g);
}

static void test_maxpool_matches_pytorch(void) {
    GoldenSet g = {0};
    const Tensor *x = gin(&g, "maxpool", "x"), *dout = gin(&g, "maxpool", "dout");
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    float *out = new_floats(dout->numel), *argmax_f = new_floats(dout->numel);
    float *dx = new_floats(x->numel);
    int *argmax = vit_calloc(dout->numel, sizeof(int));
    maxpool2d_forward(out, argmax, x->data, B, C, H, W);
    maxpool2d_backward(dx, dout->data, argmax, B, C, H, W);
    for (size_t i = 0; i < dout->numel; i++) argmax_f[i] = (float)argmax[i];
    check_golden("maxpool.out", out);
    check_golden("maxpool.argmax", argmax_f); // h·W + w in its plane, as return_indices=True
    check_golden("maxpool.dx", dx);
    free(out), free(argmax_f), free(dx), free(argmax), golden_set_free(&g);
}

static void test_avgpool_matches_pytorch(void) {
    GoldenSet g = {0};
    const Tensor *x = gin(&g, "gap", "x"), *dout = gin(&g, "gap", "dout");
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    float *out = new_floats((size_t)B * C), *dx = new_floats(x->numel);
    avgpool2d_global_forward(out, x->data, B, C, H, W);
    avgpool2d_global_backward(dx, dout->data, B, C, H, W);
    check_golden("gap.out", out);
    check_golden("gap.dx", dx);
    free(out), free(dx), golden_set_free(&g);
}

// The golden's parameters in a CnnParams, by their PyTorch names.
static void cnn_params_from_golden(CnnParams *p, const char *prefix) {
    static const char *const names[6] = {"conv1.weight", "conv1.bias", "conv2.weight",
                                         "conv2.bias",   "fc.weight",  "fc.bias"};
    float *slots[6] = {p->conv1_w, p->conv1_b, p->conv2_w, p->conv2_b, p->fc_w, p->fc_b};
    size_t total = 0;
    for (int i = 0; i < 6; i++) {
        char full[96];
        snprintf(full, sizeof full, "%s.%s", prefix, names[i]);
        Tensor t = golden_tensor(GOLDEN, full);
        memcpy(slots[i], t.data, t.numel * sizeof(float));
        total += t.numel;
        tensor_free(&t);
    }
    CU_ASSERT_EQUAL(total, p->count);
}

// Compare a CnnParams of gradients with the golden's "cnn.grad.*".
static void check_cnn_grads(const CnnParams *grads) {
    check_golden("cnn.grad.conv1.weight", grads->conv1_w);
    check_golden("cnn.grad.conv1.bias", grads->conv1_b);
    check_golden("cnn.grad.conv2.weight", grads->conv2_w);
    check_golden("cnn.grad.conv2.bias", grads->conv2_b);
    check_golden("cnn.grad.fc.weight", grads->fc_w);
    check_golden("cnn.grad.fc.bias", grads->fc_b);
}

static void test_cnn_matches_pytorch(void) {
    GoldenSet g = {0};
    const Tensor *images = gin(&g, "cnn", "images"), *t = gin(&g, "cnn", "targets");
    const int B = images->shape[0];
    CnnParams p, grads;
    CnnActs a;
    const CnnConfig c = cnn_config_default();
    cnn_params_new(&p, c), cnn_params_new(&grads, c), cnn_acts_new(&a, c, B);
    cnn_params_from_golden(&p, "cnn");
    cnn_forward(&a, &p, images->data);
    check_golden("cnn.pool2", a.pool2);
    check_golden("cnn.gap", a.gap);
    check_golden("cnn.logits", a.logits);

    int targets[16];
    CU_ASSERT_FATAL(B <= 16);
    for (int b = 0; b < B; b++) targets[b] = (int)t->data[b];
    float *dlogits = new_floats((size_t)B * CNN_CLASSES);
    float loss = loss_cross_entropy(dlogits, a.logits, targets, B, CNN_CLASSES, 0.0f);
    check_golden("cnn.loss", &loss);
    cnn_backward(&grads, dlogits, &a, &p, images->data);
    check_cnn_grads(&grads);
    free(dlogits), cnn_acts_free(&a), cnn_params_free(&p), cnn_params_free(&grads);
    golden_set_free(&g);
}

// The golden's weights are drawn in Python as cnn_init(seed 7) draws them.
static void test_cnn_init_matches_golden_weights(void) {
    CnnParams mine, golden;
    cnn_params_new(&mine, cnn_config_default()), cnn_params_new(&golden, cnn_config_default());
    CU_ASSERT_EQUAL(mine.count, 5130); // as cnn.h says
    Rng rng;
    rng_seed(&rng, 7);
    cnn_init(&mine, &rng);
    cnn_params_from_golden(&golden, "cnn");
    Tensor a = tensor_view(mine.memory, 1, (int)mine.count);
    Tensor b = tensor_view(golden.memory, 1, (int)golden.count);
    assert_tensor_close(&a, &b, 0.0f, 0.0f, "cnn_init(seed 7) against the golden's weights");
    // each within PyTorch's default bound 1/√fan_in: 1/3, 1/12, 1/√32
    for (int i = 0; i < 16 * 9; i++) CU_ASSERT_TRUE(fabsf(mine.conv1_w[i]) <= 1.0f / 3.0f);
    for (int i = 0; i < 32 * 144; i++) CU_ASSERT_TRUE(fabsf(mine.conv2_w[i]) <= 1.0f / 12.0f);
    for (int i = 0; i < 10 * 32; i++) CU_ASSERT_TRUE(fabsf(mine.fc_w[i]) <= 1.0f / sqrtf(32.0f));
    cnn_params_free(&mine), cnn_params_free(&golden);
}

/* ------------------------------------------------------------ 2. properties */

// The textbook sum of conv.h, in double: the reference im2col + matmul must equal.
static float conv_at(const float *x, const float *w, const float *b, int C, int H, int W, int k,
                     int stride, int pad, int n, int o, int i, int j) {
    double sum = b[o];
    for (int c = 0; c < C; c++)
        for (int u = 0; u < k; u++)
            for (int v = 0; v < k; v++) {
                const int h = i * stride + u - pad, ww = j * stride + v - pad;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue; // zero padding
                sum += (double)w[((o * C + c) * k + u) * k + v] *
                       x[(((size_t)n * C + c) * H + h) * W + ww];
            }
    return (float)sum;
}

static void test_conv_equals_textbook_sum(void) {
    // {k, stride, pad}: overlapping, strided, padding wider than half the kernel, 1×1 strided
    static const int geometries[][3] = {{3, 1, 1}, {3, 2, 0}, {5, 3, 2}, {1, 2, 0}};
    enum { B = 2, C = 3, H = 7, W = 9, O = 4 };
    Rng rng;
    rng_seed(&rng, 11);
    float *x = random_floats(&rng, B * C * H * W), *w = random_floats(&rng, O * C * 25);
    float *b = random_floats(&rng, O), *out = new_floats(B * O * H * W);
    for (size_t g = 0; g < sizeof geometries / sizeof geometries[0]; g++) {
        const int k = geometries[g][0], s = geometries[g][1], p = geometries[g][2];
        const int Ho = conv2d_out_size(H, k, s, p), Wo = conv2d_out_size(W, k, s, p);
        conv2d_forward(out, x, w, b, B, C, H, W, O, k, s, p);
        float *want = new_floats((size_t)B * O * Ho * Wo);
        for (int n = 0; n < B; n++)
            for (int o = 0; o < O; o++)
                for (int i = 0; i < Ho; i++)
                    for (int j = 0; j < Wo; j++)
                        want[((n * O + o) * Ho + i) * Wo + j] =
                            conv_at(x, w, b, C, H, W, k, s, p, n, o, i, j);
        Tensor got_t = tensor_view(out, 4, B, O, Ho, Wo), want_t = tensor_view(want, 4, B, O, Ho, Wo);
        char label[64];
        snprintf(label, sizeof label, "conv k=%d stride=%d pad=%d", k, s, p);
        assert_tensor_close(&got_t, &want_t, 1e-5f, 1e-5f, label);
        free(want);
    }
    free(x), free(w), free(b), free(out);
}

// A 1×1 convolution is one linear layer applied to every pixel's C channels.
static void test_conv_1x1_is_a_linear_layer_per_pixel(void) {
    enum { B = 2, C = 5, H = 3, W = 4, O = 6 };
    Rng rng;
    rng_seed(&rng, 12);
    float *x = random_floats(&rng, B * C * H * W), *w = random_floats(&rng, O * C);
    float *b = random_floats(&rng, O), *out = new_floats(B * O * H * W);
    float *want = new_floats(B * O * H * W);
    conv2d_forward(out, x, w, b, B, C, H, W, O, 1, 1, 0);
    for (int n = 0; n < B; n++)
        for (int p = 0; p < H * W; p++) // pixel p's channels x[n][:][p] times Wᵀ, plus b
            for (int o = 0; o < O; o++) {
                double sum = b[o];
                for (int c = 0; c < C; c++) sum += (double)w[o * C + c] * x[(n * C + c) * H * W + p];
                want[(n * O + o) * H * W + p] = (float)sum;
            }
    Tensor got_t = tensor_view(out, 4, B, O, H, W), want_t = tensor_view(want, 4, B, O, H, W);
    assert_tensor_close(&got_t, &want_t, 1e-5f, 1e-5f, "1×1 conv against a per-pixel linear");
    free(x), free(w), free(b), free(out), free(want);
}

static double inner(const float *a, const float *b, size_t n) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += (double)a[i] * b[i];
    return sum;
}

// col2im is im2col's adjoint: <im2col(x), y> = <x, col2im(y)> for any x and y
static void test_col2im_is_the_adjoint_of_im2col(void) {
    static const int geometries[][3] = {{3, 2, 1}, {3, 1, 1}, {2, 1, 0}, {5, 3, 2}};
    enum { C = 2, H = 5, W = 7 };
    Rng rng;
    rng_seed(&rng, 13);
    for (size_t g = 0; g < sizeof geometries / sizeof geometries[0]; g++) {
        const int k = geometries[g][0], s = geometries[g][1], p = geometries[g][2];
        const int Ho = conv2d_out_size(H, k, s, p), Wo = conv2d_out_size(W, k, s, p);
        const size_t ncols = (size_t)C * k * k * Ho * Wo;
        float *x = random_floats(&rng, C * H * W), *y = random_floats(&rng, ncols);
        float *cols = new_floats(ncols), *back = new_floats(C * H * W);
        conv2d_im2col(cols, x, C, H, W, k, s, p);
        conv2d_col2im(back, y, C, H, W, k, s, p);
        const double left = inner(cols, y, ncols), right = inner(x, back, C * H * W);
        CU_ASSERT_DOUBLE_EQUAL(left, right, 1e-5 * (1.0 + fabs(left)));
        free(x), free(y), free(cols), free(back);
    }
}

// Each output's gradient lands on its window's maximum, the other three get 0,
// and the odd last row and column (outside every window) get 0.
static void test_maxpool_backward_routes_to_the_maximum(void) {
    enum { B = 2, C = 3, H = 5, W = 7, HO = H / 2, WO = W / 2 };
    Rng rng;
    rng_seed(&rng, 14);
    float *x = random_floats(&rng, B * C * H * W), *dout = random_floats(&rng, B * C * HO * WO);
    float *out = new_floats(B * C * HO * WO), *dx = new_floats(B * C * H * W);
    int *argmax = vit_calloc(B * C * HO * WO, sizeof(int));
    maxpool2d_forward(out, argmax, x, B, C, H, W);
    maxpool2d_backward(dx, dout, argmax, B, C, H, W);
    for (int pl = 0; pl < B * C; pl++) {
        const float *xp = x + pl * H * W, *dxp = dx + pl * H * W;
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) {
                const int i = h / 2, j = w / 2, o = (pl * HO + i) * WO + j;
                if (i >= HO || j >= WO) {
                    CU_ASSERT_EQUAL(dxp[h * W + w], 0.0f); // in no window
                    continue;
                }
                const bool is_max = xp[h * W + w] == out[o];
                CU_ASSERT_TRUE(xp[h * W + w] <= out[o]);
                CU_ASSERT_EQUAL(dxp[h * W + w], is_max ? dout[o] : 0.0f);
            }
    }
    free(x), free(dout), free(out), free(dx), free(argmax);
}

// Every backward adds to its buffers: called twice, each gradient doubles;
// a NULL output is skipped.
static void test_backward_adds(void) {
    enum { B = 2, C = 3, H = 5, W = 6, O = 4, K = 3, HO = 3, WO = 3 }; // stride 2, padding 1
    Rng rng;
    rng_seed(&rng, 15);
    float *x = random_floats(&rng, B * C * H * W), *w = random_floats(&rng, O * C * K * K);
    float *dout = random_floats(&rng, B * O * HO * WO);
    float *dx = new_floats(B * C * H * W), *dw = new_floats(O * C * K * K), *db = new_floats(O);
    conv2d_backward(dx, dw, db, dout, x, w, B, C, H, W, O, K, 2, 1);
    const size_t sizes[3] = {B * C * H * W, O * C * K * K, O};
    float *once[3], *grads[3] = {dx, dw, db};
    for (int i = 0; i < 3; i++) {
        once[i] = vit_malloc(sizes[i] * sizeof(float));
        memcpy(once[i], grads[i], sizes[i] * sizeof(float));
    }
    conv2d_backward(dx, NULL, NULL, dout, x, w, B, C, H, W, O, K, 2, 1); // dx only
    conv2d_backward(NULL, dw, db, dout, x, w, B, C, H, W, O, K, 2, 1);   // dw, db only
    for (int i = 0; i < B * C * H * W; i++) CU_ASSERT_DOUBLE_EQUAL(dx[i], 2 * once[0][i], 1e-5);
    for (int i = 0; i < O * C * K * K; i++) CU_ASSERT_DOUBLE_EQUAL(dw[i], 2 * once[1][i], 1e-5);
    for (int i = 0; i < O; i++) CU_ASSERT_DOUBLE_EQUAL(db[i], 2 * once[2][i], 1e-5);
    // the pooling backwards add too: a prefilled buffer keeps what it held
    float pre[2 * 2] = {1, 2, 3, 4}, g = 8.0f;
    avgpool2d_global_backward(pre, &g, 1, 1, 2, 2);
    CU_ASSERT_EQUAL(pre[0], 3.0f);
    CU_ASSERT_EQUAL(pre[3], 6.0f);
    float relu_x[2] = {-1.0f, 2.0f}, relu_dx[2] = {0.5f, 0.5f}, relu_dout[2] = {7.0f, 7.0f};
    relu_backward(relu_dx, relu_dout, relu_x, 2);
    CU_ASSERT_EQUAL(relu_dx[0], 0.5f); // x < 0: nothing added
    CU_ASSERT_EQUAL(relu_dx[1], 7.5f);
    for (int i = 0; i < 3; i++) free(once[i]);
    free(x), free(w), free(dout), free(dx), free(dw), free(db);
}

/* ------------------------------------------------------------- 3. training */

// 20 AdamW steps on the first 64 training images of Fashion-MNIST, the whole
// set as one batch: the loss starts near ln 10 ≈ 2.30 (a guess among 10
// classes) and must end below 0.8 of that (at learning rate 1e-2 it ends at
// ~1.57, 0.68 of it). No golden: what is pinned is that the gradients of all
// six tensors point downhill, together, step after step.
static void test_cnn_loss_falls_in_20_steps(void) {
    enum { B = 64, STEPS = 20 };
    Dataset d;
    VitError err = {{0}};
    const VitStatus loaded = dataset_fashion_mnist_load_first(&d, NULL, "train", B, &err);
    if (loaded != VIT_OK) fprintf(stderr, "\n    %s (scripts/deps.sh installs it)\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(loaded, VIT_OK);
    float *images = new_floats((size_t)B * CNN_SIDE * CNN_SIDE);
    int labels[B], order[B];
    for (int i = 0; i < B; i++) order[i] = i;
    dataset_batch(images, labels, &d, order, B, 0.2860f, 0.3530f, NULL, NULL);
    CnnTrainer t;
    const AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL_FATAL(cnn_trainer_init(&t, cnn_config_default(), B, 1, &cfg, &err), VIT_OK);
    float first = 0, loss = 0;
    for (int step = 0; step < STEPS; step++) {
        CU_ASSERT_EQUAL_FATAL(cnn_train_step(&t, images, labels, 1e-2, &loss, &err), VIT_OK);
        if (step == 0) first = loss;
    }
    CU_ASSERT_DOUBLE_EQUAL(first, logf(10.0f), 0.2); // a fresh model guesses
    CU_ASSERT_TRUE(loss < LOSS_AFTER_20 * first);
    if (golden_report_wanted()) fprintf(stderr, "\n      loss %.4f -> %.4f", first, loss);
    cnn_trainer_free(&t), free(images), dataset_free(&d);
}

CU_TestInfo tests_cnn[] = {
    {"conv2d forward and backward match PyTorch (stride 2, padding 1; 2×2 kernel)",
     test_conv_matches_pytorch},
    {"relu forward and backward match PyTorch", test_relu_matches_pytorch},
    {"maxpool2d forward, argmax and backward match PyTorch (odd sides)",
     test_maxpool_matches_pytorch},
    {"global average pooling forward and backward match PyTorch", test_avgpool_matches_pytorch},
    {"the small CNN: pooled features, logits, loss and every gradient match PyTorch",
     test_cnn_matches_pytorch},
    {"cnn_init draws PyTorch's default bounds, as the golden's weights",
     test_cnn_init_matches_golden_weights},
    {"conv2d equals the textbook sum (four geometries)", test_conv_equals_textbook_sum},
    {"a 1×1 conv is a linear layer per pixel", test_conv_1x1_is_a_linear_layer_per_pixel},
    {"col2im is the adjoint of im2col", test_col2im_is_the_adjoint_of_im2col},
    {"maxpool2d backward routes each gradient to its maximum",
     test_maxpool_backward_routes_to_the_maximum},
    {"every backward adds; NULL outputs are skipped", test_backward_adds},
    {"cnn_train_step: the loss falls over 20 AdamW steps on 64 training images",
     test_cnn_loss_falls_in_20_steps},
    CU_TEST_INFO_NULL,
};
