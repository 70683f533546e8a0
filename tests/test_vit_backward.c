/**
 * @file test_vit_backward.c
 * @brief The whole model's backward pass against PyTorch's autograd, llm.c's
 *        test_gpt2 way, and ten AdamW steps against torch.optim.AdamW.
 *
 * One small ViT with sizes that never coincide (S 12, p 4: P 9, N 10; D 24,
 * H 3 from the file's metadata, Dh 8; L 2, M 40, Y 7) on a batch of 3, its
 * weights and images drawn in Python and committed
 * (tests/golden/train_*.safetensors, tools/gen_golden_train.py):
 *
 * 1. Step 0 against autograd. The loss, the gradient of every trace stage
 *    (`grad.logits` … `grad.input`) and of every parameter equal PyTorch's
 *    (float64, rounded once to float32), each within its golden's tolerance
 *    ("tol.NAME" = ATOL RTOL: 3e-5·rms(ref) + 1e-4·|ref| for a gradient,
 *    1e-6 relative for the loss; the script says why). Plain cross-entropy,
 *    and label smoothing 0.1. A failure names the first stage (in backward
 *    order) or parameter that differs, in full, then a line for each further one.
 * 2. The three naming conventions: the same numbers saved with Hugging Face's
 *    names (q, k and v apart, so the gradients are too) and torchvision's
 *    give the same gradients, read back under timm's names through the
 *    parameter table.
 * 3. The backward's own promises: keeping every block's activations and
 *    recomputing them from the blocks' inputs give the same gradients bit for
 *    bit, and a training forward the same logits as inference; the grad.
 *    names are the forward's reversed, with the forward's shapes; gradients
 *    accumulate; the refusals.
 * 4. Central differences of the loss (computed in double from lib's float32
 *    logits) for a few elements of a dozen parameters, an independent check
 *    that owes nothing to PyTorch.
 * 5. Ten AdamW steps (lib/train/optim.h) with warm-up, cosine and clipping: the
 *    loss before each step and after the last equals PyTorch's run within
 *    1e-4 relative.
 *
 * VIT_GOLDEN_REPORT=1 prints every comparison's largest difference.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/optim.h"
#include "model/trace_stages.h"
#include "model/vit.h"

/* ------------------------------------------------------------ the model */

// TRAIN in tools/gen_golden_train.py, whose "config" metadata must say the same.
static const VitConfig train_config = {.image_size = 12, .patch_size = 4, .channels = 3,
                                       .dim = 24, .depth = 2, .heads = 3, .mlp_dim = 40,
                                       .num_classes = 7, .ln_eps = 1e-6f};
static const char *const TRAIN_CONFIG = "img=12 patch=4 dim=24 depth=2 heads=3 mlp_dim=40 "
                                        "classes=7 batch=3 seed=61 std=0.25 bias_std=0.1 "
                                        "norm_std=0.1";
enum { BATCH = 3 };
static const char *const BATCH_FILE = "train_batch.safetensors";

static bool same_config(const VitConfig *a, const VitConfig *b) {
    return a->image_size == b->image_size && a->patch_size == b->patch_size &&
           a->channels == b->channels && a->dim == b->dim && a->depth == b->depth &&
           a->heads == b->heads && a->mlp_dim == b->mlp_dim && a->num_classes == b->num_classes &&
           a->ln_eps == b->ln_eps;
}

// The golden's metadata entry KEY equals @p want.
static void check_meta(const char *file, const char *key, const char *want) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, golden_path(file), &err), VIT_OK);
    const char *got = st_meta(&st, key);
    if (!got || strcmp(got, want) != 0)
        fprintf(stderr, "\n    %s: %s is \"%s\", the test expects \"%s\"\n", file, key,
                got ? got : "(missing)", want);
    CU_ASSERT_TRUE(got && strcmp(got, want) == 0);
    st_close(&st);
}

// The model of a golden weights file, checked to be the one the goldens describe.
static bool load(Vit *vit, const char *file, const char *source) {
    VitError err;
    if (vit_build(vit, golden_path(file), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("the golden checkpoint did not load");
        return false;
    }
    CU_ASSERT_STRING_EQUAL(vit->source, source);
    CU_ASSERT_TRUE(same_config(&vit->config, &train_config));
    check_meta(file, "config", TRAIN_CONFIG);
    return true;
}

// A model that owns its parameters (AdamW writes them, finite differences move
// them), holding a golden file's values: a fresh random model of the same sizes
// whose tensors, walked with the parameter table, are overwritten.
static bool load_owned(Vit *vit, const char *file) {
    Vit from;
    if (!load(&from, file, "timm")) return false;
    const VitInit init = vit_init_timm(1);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &from.config, &init, &err), VIT_OK);
    const int n = vit_params(&from, NULL);
    CU_ASSERT_EQUAL_FATAL(vit_params(vit, NULL), n);
    VitParam *src = calloc((size_t)n, sizeof *src), *dst = calloc((size_t)n, sizeof *dst);
    vit_params(&from, src);
    vit_params(vit, dst);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(src[i].name, dst[i].name);
        memcpy((float *)dst[i].data, src[i].data, src[i].numel * sizeof(float)); // owned
    }
    free(src), free(dst);
    vit_free(&from);
    return true;
}

/** The batch: images and targets. */
typedef struct {
    Tensor input;
    int targets[BATCH];
} Batch;

static Batch batch_load(void) {
    check_meta(BATCH_FILE, "config", TRAIN_CONFIG);
    Batch b = {.input = golden_tensor(BATCH_FILE, "input")};
    Tensor t = golden_tensor(BATCH_FILE, "targets");
    CU_ASSERT_EQUAL_FATAL(t.numel, BATCH);
    for (int i = 0; i < BATCH; i++) b.targets[i] = (int)t.data[i];
    tensor_free(&t);
    return b;
}

static bool grads_init(VitGrads *g, const Vit *vit) {
    VitError err;
    if (vit_grads_init(g, vit, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_grads_init failed");
        return false;
    }
    return true;
}

// Loss and gradients of the batch, the trace (if any) hearing every stage.
static float loss_and_grads(Vit *vit, VitGrads *g, const Batch *b, float smoothing, TraceFn trace,
                            void *user) {
    VitError err;
    float loss = NAN;
    const VitStatus s = vit_forward_backward(vit, g, &b->input, b->targets, smoothing, &loss, trace,
                                             user, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_EQUAL(s, VIT_OK);
    return loss;
}

/* ------------------------------------------ 1, 2. against autograd */

// The stream's gradients (grad.*) go to the golden; the forward's stages are
// pinned by suite vit, not here.
static void check_grad_stage(void *golden, const char *name, const Tensor *t) {
    if (strncmp(name, "grad.", 5) == 0) golden_check(golden, name, t);
}

// Every parameter's gradient under its timm name, whatever the layout: each row
// of the table in its fused form, its parts (q, k, v: each of the three row
// blocks) read from their fields of the gradients, which hold either one fused
// tensor or three apart.
static void check_param_grads(GoldenCheck *g, const VitGrads *grads, const VitConfig *c) {
    VitParamIter it = vit_param_iter(c->depth, VIT_ORDER_STATE_DICT, VIT_QKV_FUSED);
    for (const VitParamSpec *s; (s = vit_param_next(&it));) {
        char name[64];
        int shape[4], ndim = vit_param_shape(s, c, shape);
        const int parts = vit_param_parts(s);
        const size_t numel = (size_t)vit_param_numel(s, c), part = numel / (size_t)parts;
        Tensor t = tensor_new_shape(ndim, shape);
        for (int j = 0; j < parts; j++)
            memcpy(t.data + j * part, vit_param_grad_data(&grads->weights, s, it.block, j),
                   part * sizeof(float));
        golden_check(g, vit_param_name(name, sizeof name, s, it.block), &t);
        tensor_free(&t);
    }
}

// The model of @p weights on the batch: loss, stage and parameter gradients
// against @p golden.
static void check_against_autograd(const char *weights, const char *source, const char *golden,
                                   float smoothing) {
    Vit vit;
    if (!load(&vit, weights, source)) return;
    char want[16];
    snprintf(want, sizeof want, "%g", (double)smoothing);
    check_meta(golden, "smoothing", want);
    Batch b = batch_load();
    VitGrads grads;
    GoldenCheck g;
    if (grads_init(&grads, &vit) && golden_open(&g, golden)) {
        // the gradients are laid out as the model holds its weights
        // independent: two layouts that must agree, each named against timm's by the golden
        CU_ASSERT_EQUAL(vit_grad_weights_params(NULL, &grads.weights, &vit.config),
                        vit_params(&vit, NULL));
        float loss = loss_and_grads(&vit, &grads, &b, smoothing, check_grad_stage, &g);
        Tensor l = tensor_view(&loss, 1, 1);
        golden_check(&g, "loss", &l);
        check_param_grads(&g, &grads, &vit.config);
        golden_finish(&g);
    }
    vit_grads_free(&grads);
    tensor_free(&b.input);
    vit_free(&vit);
}

static void test_gradients_match_autograd(void) {
    check_against_autograd("train_vit_timm.safetensors", "timm", "train_grads.safetensors", 0.0f);
}

static void test_gradients_with_smoothing_match_autograd(void) {
    check_against_autograd("train_vit_timm.safetensors", "timm", "train_grads_smooth.safetensors",
                           0.1f);
}

static void test_hf_names_give_the_same_gradients(void) {
    check_against_autograd("train_vit_hf.safetensors", "hf", "train_grads.safetensors", 0.0f);
}

static void test_torchvision_names_give_the_same_gradients(void) {
    check_against_autograd("train_vit_torchvision.safetensors", "torchvision",
                           "train_grads.safetensors", 0.0f);
}

/* ------------------------------------------- 3. the backward's promises */

// Loss, gradients and the whole trace of one pass keeping @p keep.
static float run_keeping(VitKeep keep, VitGrads *grads, TraceRecorder *rec, Vit *vit,
                         const Batch *b) {
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_train_prepare(vit, keep, BATCH, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit->acts.keep, keep);
    vit_grads_zero(grads);
    return loss_and_grads(vit, grads, b, 0.1f, trace_record, rec);
}

static void test_recomputing_gives_the_same_gradients(void) {
    Vit vit;
    if (!load(&vit, "train_vit_timm.safetensors", "timm")) return;
    Batch b = batch_load();
    VitGrads all, inputs;
    TraceRecorder rec_all = {0}, rec_inputs = {0}, rec_inference = {0};
    CU_ASSERT_FATAL(grads_init(&all, &vit) && grads_init(&inputs, &vit));
    // inference first: the logits a training forward must give too
    VitError err;
    CU_ASSERT_EQUAL(vit_forward(&vit, &b.input, trace_record, &rec_inference, &err), VIT_OK);
    CU_ASSERT_PTR_NULL(vit.acts.stream);
    const float loss_all = run_keeping(VIT_KEEP_ALL, &all, &rec_all, &vit, &b);
    const float loss_inputs = run_keeping(VIT_KEEP_INPUTS, &inputs, &rec_inputs, &vit, &b);
    CU_ASSERT_EQUAL(loss_all, loss_inputs);
    CU_ASSERT_EQUAL(memcmp(all.memory, inputs.memory, all.floats * sizeof(float)), 0);
    CU_ASSERT_EQUAL_FATAL(rec_all.count, rec_inputs.count);
    for (int i = 0; i < rec_all.count; i++) { // every stage, forward and backward, bit for bit
        const Tensor *x = &rec_all.entries[i].t, *y = &rec_inputs.entries[i].t;
        CU_ASSERT_STRING_EQUAL(rec_all.entries[i].name, rec_inputs.entries[i].name);
        const bool same = tensor_same_shape(x, y) && !memcmp(x->data, y->data, x->numel * 4);
        if (!same) fprintf(stderr, "\n    %s differs when recomputed\n", rec_all.entries[i].name);
        CU_ASSERT_TRUE(same);
    }
    for (int i = 0; i < rec_inference.count; i++) { // the forward's stages as for inference
        const Tensor *x = &rec_inference.entries[i].t, *y = trace_find(&rec_all,
                                                                       rec_inference.entries[i].name);
        CU_ASSERT_TRUE(y && tensor_same_shape(x, y) && !memcmp(x->data, y->data, x->numel * 4));
    }
    // back to inference: the training buffers go
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_NONE, BATCH, &err), VIT_OK);
    CU_ASSERT_PTR_NULL(vit.acts.stream);
    CU_ASSERT_PTR_NULL(vit.acts.grad.logits);
    trace_recorder_free(&rec_all), trace_recorder_free(&rec_inputs);
    trace_recorder_free(&rec_inference);
    vit_grads_free(&all), vit_grads_free(&inputs);
    tensor_free(&b.input);
    vit_free(&vit);
}

static void test_grad_names_are_the_forward_reversed(void) {
    Vit vit;
    if (!load(&vit, "train_vit_timm.safetensors", "timm")) return;
    Batch b = batch_load();
    VitGrads grads;
    TraceRecorder rec = {0};
    CU_ASSERT_FATAL(grads_init(&grads, &vit));
    loss_and_grads(&vit, &grads, &b, 0.0f, trace_record, &rec);
    const int n = vit_trace_length(&vit.config);
    CU_ASSERT_EQUAL_FATAL(rec.count, 2 * n); // the forward's stages, then as many gradients
    CU_ASSERT_STRING_EQUAL(rec.entries[n].name, "grad.logits");
    CU_ASSERT_STRING_EQUAL(rec.entries[2 * n - 1].name, "grad.input");
    for (int i = 0; i < n; i++) {
        const TraceEntry *fwd = &rec.entries[n - 1 - i], *bwd = &rec.entries[n + i];
        char want[96];
        snprintf(want, sizeof want, "grad.%s", fwd->name);
        if (strcmp(bwd->name, want) != 0)
            fprintf(stderr, "\n    gradient %d is %s, expected %s\n", i, bwd->name, want);
        CU_ASSERT_STRING_EQUAL(bwd->name, want);
        CU_ASSERT_TRUE(tensor_same_shape(&fwd->t, &bwd->t));
        // the stage table knows the gradients: the forward stage, its shape
        int block = -2, fblock = -2, shape[4];
        const VitStage *st = vit_stage_find(bwd->name, &block);
        CU_ASSERT_PTR_EQUAL(st, vit_stage_find(fwd->name, &fblock));
        CU_ASSERT_EQUAL(block, fblock);
        CU_ASSERT_TRUE(vit_stage_is_grad(bwd->name));
        CU_ASSERT_FALSE(vit_stage_is_grad(fwd->name));
        CU_ASSERT_EQUAL(vit_stage_shape(&vit.config, BATCH, bwd->name, shape), bwd->t.ndim);
        char name[96];
        CU_ASSERT_STRING_EQUAL(vit_stage_grad_name(name, sizeof name, st, block), bwd->name);
    }
    CU_ASSERT_PTR_NULL(vit_stage_find("grad.", NULL));
    CU_ASSERT_PTR_NULL(vit_stage_find("grad.grad.logits", NULL));
    CU_ASSERT_PTR_NULL(vit_stage_find("grad.blocks.2", NULL));
    trace_recorder_free(&rec);
    vit_grads_free(&grads);
    tensor_free(&b.input);
    vit_free(&vit);
}

static void test_gradients_accumulate(void) {
    Vit vit;
    if (!load(&vit, "train_vit_timm.safetensors", "timm")) return;
    Batch b = batch_load();
    VitGrads once, twice;
    CU_ASSERT_FATAL(grads_init(&once, &vit) && grads_init(&twice, &vit));
    loss_and_grads(&vit, &once, &b, 0.0f, NULL, NULL);
    loss_and_grads(&vit, &twice, &b, 0.0f, NULL, NULL);
    VitError err;
    CU_ASSERT_EQUAL(vit_backward(&vit, &twice, vit.acts.grad.logits, NULL, NULL, &err), VIT_OK);
    // twice is 2x once up to rounding: an accumulating product adds its terms to
    // what the buffer holds (a + p₁ + p₂ …), not to their sum (a + (p₁ + p₂ …)),
    // and the tiled kernel adds one block of the sum at a time: a few ulps apart
    // (a product that overwrote instead of adding would be off by 50 %)
    size_t off = 0, nonzero = 0;
    double worst = 0, largest = 0;
    for (size_t i = 0; i < once.floats; i++) {
        const double want = 2.0 * once.memory[i], diff = fabs(twice.memory[i] - want);
        off += !(diff <= 1e-5 * fabs(want) + 1e-9);
        worst = fmax(worst, diff / fabs(want));
        largest = fmax(largest, fabs(once.memory[i]));
        nonzero += once.memory[i] != 0.0f;
    }
    if (off) fprintf(stderr, "\n    %zu gradients are not doubled (worst rel. %.2g)\n", off,
                     worst);
    CU_ASSERT_EQUAL(off, 0);
    // Every parameter matters to this loss but the keys' biases: a key's bias
    // adds the same q·b_k to every score of a query's row, which softmax takes
    // away, so its gradient is 0 and only rounding makes it anything else
    // (OpenBLAS can land on 0 exactly, the tiled kernel not).
    const int D = vit.config.dim, L = vit.config.depth;
    size_t key_bias_nonzero = 0;
    double largest_key_bias = 0;
    for (int l = 0; l < L; l++) {
        const float *k_b = once.weights.blocks[l].attn.k_b;
        CU_ASSERT_PTR_NOT_NULL_FATAL(k_b);
        for (int d = 0; d < D; d++) {
            key_bias_nonzero += k_b[d] != 0.0f;
            largest_key_bias = fmax(largest_key_bias, fabs(k_b[d]));
        }
    }
    CU_ASSERT_EQUAL(nonzero - key_bias_nonzero, once.floats - (size_t)L * D);
    CU_ASSERT(largest_key_bias <= 1e-5 * largest);
    vit_grads_zero(&twice);
    size_t left = 0;
    for (size_t i = 0; i < twice.floats; i++) left += twice.memory[i] != 0.0f;
    CU_ASSERT_EQUAL(left, 0);
    // one allocation, in timm's state_dict order, laid out like the weights
    CU_ASSERT_EQUAL(once.floats, (size_t)vit_param_count(&vit.config));
    CU_ASSERT_EQUAL(once.count, vit_param_tensor_count(&vit.config));
    VitParam p[64];
    CU_ASSERT_EQUAL_FATAL(vit_grad_weights_params(p, &once.weights, &vit.config), once.count);
    const float *at = once.memory;
    for (int i = 0; i < once.count; at += p[i].numel, i++) CU_ASSERT_PTR_EQUAL(p[i].data, at);
    CU_ASSERT_STRING_EQUAL(p[0].name, "cls_token");
    vit_grads_free(&once), vit_grads_free(&twice);
    vit_grads_free(&twice); // safe twice
    tensor_free(&b.input);
    vit_free(&vit);
}

static void test_backward_refuses_what_it_cannot_do(void) {
    Vit vit, other;
    if (!load(&vit, "train_vit_timm.safetensors", "timm")) return;
    if (!load(&other, "train_vit_hf.safetensors", "hf")) return;
    Batch b = batch_load();
    VitGrads grads, other_grads;
    CU_ASSERT_FATAL(grads_init(&grads, &vit) && grads_init(&other_grads, &other));
    VitError err;
    // a forward pass for inference kept nothing
    CU_ASSERT_EQUAL(vit_forward(&vit, &b.input, NULL, NULL, &err), VIT_OK);
    float dlogits[BATCH * 7] = {0};
    CU_ASSERT_EQUAL(vit_backward(&vit, &grads, dlogits, NULL, NULL, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "vit_train_prepare"));
    // gradients of another layout (q, k, v apart)
    float loss;
    CU_ASSERT_EQUAL(vit_forward_backward(&vit, &other_grads, &b.input, b.targets, 0, &loss, NULL,
                                         NULL, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not laid out"));
    CU_ASSERT_EQUAL(vit.keep, VIT_KEEP_DEFAULT); // prepared on the way
    // a target that is no class, a smoothing out of range, an unknown keeping
    int bad[BATCH] = {0, 7, 1};
    CU_ASSERT_EQUAL(vit_forward_backward(&vit, &grads, &b.input, bad, 0, &loss, NULL, NULL, &err),
                    VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "image 1 is class 7"));
    CU_ASSERT_EQUAL(vit_forward_backward(&vit, &grads, &b.input, b.targets, 1.5f, &loss, NULL, NULL,
                                         &err), VIT_ERR_INPUT);
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, (VitKeep)7, BATCH, &err), VIT_ERR_USAGE);
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_ALL, 0, &err), VIT_ERR_INPUT);
    vit_grads_free(&grads), vit_grads_free(&other_grads);
    tensor_free(&b.input);
    vit_free(&vit), vit_free(&other);
}

static void test_training_memory_is_counted(void) {
    const VitConfig *c = &train_config;
    const double N = 10, D = 24, M = 40, H = 3, L = 2, B = 5;
    const double none = vit_training_bytes(c, 5, VIT_KEEP_NONE);
    const double inputs = vit_training_bytes(c, 5, VIT_KEEP_INPUTS);
    const double all = vit_training_bytes(c, 5, VIT_KEEP_ALL);
    // independent: two counts that must agree; the line below holds them to arithmetic
    CU_ASSERT_EQUAL(none, vit_activation_bytes(c, 5));
    // every block keeps 7·N·D + 2·N·M + H·N² floats per image besides its input
    CU_ASSERT_DOUBLE_EQUAL(all - inputs, 4 * B * L * (7 * N * D + 2 * N * M + H * N * N), 0.5);
    CU_ASSERT_TRUE(inputs > none);
    // the carving uses exactly what the count says
    Vit vit;
    if (!load(&vit, "train_vit_timm.safetensors", "timm")) return;
    VitError err;
    const VitKeep keeps[] = {VIT_KEEP_ALL, VIT_KEEP_INPUTS, VIT_KEEP_NONE};
    for (size_t k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(vit_train_prepare(&vit, keeps[k], 5, &err), VIT_OK);
        // independent: the carving against the count, held to arithmetic above
        CU_ASSERT_DOUBLE_EQUAL(vit.acts.floats * 4.0, vit_training_bytes(c, 5, keeps[k]), 0.5);
        if (keeps[k] != VIT_KEEP_NONE) // the last buffer ends where the allocation does
            CU_ASSERT_PTR_EQUAL(vit.acts.grad.input + 5 * 3 * 12 * 12,
                                vit.acts.memory + vit.acts.floats);
    }
    vit_free(&vit);
}

/* -------------------------------------------- 4. finite differences */

// The mean cross-entropy of the batch, in double, from lib's float32 logits.
static double loss_in_double(Vit *vit, const Batch *b) {
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(vit, &b->input, NULL, NULL, &err), VIT_OK);
    const int Y = vit->config.num_classes;
    double total = 0;
    for (int i = 0; i < BATCH; i++) {
        const float *z = vit->acts.logits + (size_t)i * Y;
        double m = z[0], sum = 0;
        for (int y = 1; y < Y; y++) m = fmax(m, z[y]);
        for (int y = 0; y < Y; y++) sum += exp(z[y] - m);
        total += m + log(sum) - z[b->targets[i]];
    }
    return total / BATCH;
}

// Central differences (L(θ + h) − L(θ − h)) / (θ₊ − θ₋), θ₊ and θ₋ the float32
// values actually used. Two errors compete: the float32 forward's rounding, about
// 1e-6 in the loss, divided by 2h; and the truncation, h²/6 times the third
// derivative, largest for the [cls] token, which every image reads (2.8e-4 at
// h = 5e-3, 1.1e-3 at 1e-2). h = 5e-3 balances them: measured, the worst element
// uses 0.17 of the tolerance 2e-4 + 2e-3·|fd|, while a wrong gradient (a lost
// residual, a missing scale) is off by 1e-2 or more.
#define FD_STEP 5e-3
#define FD_ATOL 2e-4
#define FD_RTOL 2e-3

// The elements checked in each tensor: its largest gradient and two more.
static const struct {
    const char *name;
    int at[2];
} fd_params[] = {
    {"patch_embed.proj.weight", {5, 1000}}, {"patch_embed.proj.bias", {3, 20}},
    {"cls_token", {0, 17}},                 {"pos_embed", {24, 239}},
    {"blocks.0.norm1.weight", {1, 22}},     {"blocks.0.attn.qkv.weight", {100, 1000}},
    {"blocks.0.attn.qkv.bias", {4, 60}},    {"blocks.0.attn.proj.weight", {7, 400}},
    {"blocks.1.attn.qkv.weight", {600, 1500}}, {"blocks.1.norm2.bias", {0, 13}},
    {"blocks.1.mlp.fc1.weight", {50, 900}}, {"blocks.1.mlp.fc2.bias", {2, 19}},
    {"norm.weight", {8, 23}},               {"head.weight", {0, 160}},
    {"head.bias", {1, 6}},
};

static void test_gradients_match_finite_differences(void) {
    Vit vit;
    if (!load_owned(&vit, "train_vit_timm.safetensors")) return;
    Batch b = batch_load();
    VitGrads grads;
    CU_ASSERT_FATAL(grads_init(&grads, &vit));
    loss_and_grads(&vit, &grads, &b, 0.0f, NULL, NULL);
    VitParam w[64], g[64];
    const int n = vit_params(&vit, w);
    CU_ASSERT_EQUAL_FATAL(vit_grad_weights_params(g, &grads.weights, &vit.config), n);
    int checked = 0, bad = 0;
    double worst = 0;
    for (size_t f = 0; f < sizeof fd_params / sizeof fd_params[0]; f++) {
        int i = 0;
        while (i < n && strcmp(w[i].name, fd_params[f].name) != 0) i++;
        CU_ASSERT_FATAL(i < n);
        size_t at[3] = {0, (size_t)fd_params[f].at[0], (size_t)fd_params[f].at[1]};
        for (size_t j = 0; j < g[i].numel; j++) // the largest gradient first
            if (fabsf(g[i].data[j]) > fabsf(g[i].data[at[0]])) at[0] = j;
        for (int k = 0; k < 3; k++) {
            CU_ASSERT_FATAL(at[k] < w[i].numel);
            float *x = (float *)w[i].data + at[k]; // the model owns it
            const float x0 = *x;
            *x = (float)(x0 + FD_STEP);
            const double up = *x, lp = loss_in_double(&vit, &b);
            *x = (float)(x0 - FD_STEP);
            const double down = *x, lm = loss_in_double(&vit, &b);
            *x = x0;
            const double fd = (lp - lm) / (up - down), got = g[i].data[at[k]];
            const double diff = fabs(got - fd), tol = FD_ATOL + FD_RTOL * fabs(fd);
            worst = fmax(worst, diff / tol);
            checked++;
            if (diff > tol && bad++ < 5)
                fprintf(stderr, "\n    %s[%zu]: gradient %.7g, central difference %.7g\n",
                        w[i].name, at[k], got, fd);
        }
    }
    if (golden_report_wanted())
        fprintf(stderr, "\n      fd: %d gradients, the worst uses %.2f of its tolerance", checked,
                worst);
    CU_ASSERT_EQUAL(bad, 0);
    vit_grads_free(&grads);
    tensor_free(&b.input);
    vit_free(&vit);
}

/* -------------------------------------------------- 5. AdamW, ten steps */

// The run of tools/gen_golden_train.py (STEPS, PEAK_LR … MAX_NORM there).
enum { STEPS = 10 };
static const AdamWConfig run_adamw = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                      .weight_decay = 0.05};
static const LrSchedule run_schedule = {.peak_lr = 3e-3, .min_lr = 1e-4, .warmup_start = 0.1,
                                        .warmup_steps = 3, .total_steps = STEPS};
static const double run_max_norm = 1.0;
static const float run_smoothing = 0.1f;
#define RUN_RTOL 1e-4

static void test_adamw_steps_match_pytorch(void) {
    static const char *const golden = "train_adamw.safetensors";
    check_meta(golden, "config", TRAIN_CONFIG);
    check_meta(golden, "schedule", "peak_lr=0.003 min_lr=0.0001 warmup_start=0.1 warmup_steps=3");
    check_meta(golden, "adamw", "beta1=0.9 beta2=0.999 eps=1e-08 weight_decay=0.05 max_norm=1");
    check_meta(golden, "smoothing", "0.1");
    Vit vit;
    if (!load_owned(&vit, "train_vit_timm.safetensors")) return;
    Batch b = batch_load();
    VitGrads grads;
    AdamW opt;
    VitError err;
    CU_ASSERT_FATAL(grads_init(&grads, &vit));
    CU_ASSERT_EQUAL_FATAL(adamw_init_vit(&opt, &vit, &grads.weights, &run_adamw, &err), VIT_OK);
    Tensor want_loss = golden_tensor(golden, "loss"), want_lr = golden_tensor(golden, "lr");
    Tensor want_norm = golden_tensor(golden, "norm");
    CU_ASSERT_EQUAL_FATAL(want_loss.numel, STEPS + 1);
    double worst_loss = 0, worst_norm = 0;
    for (int step = 0; step <= STEPS; step++) {
        vit_grads_zero(&grads);
        const float loss = loss_and_grads(&vit, &grads, &b, run_smoothing, NULL, NULL);
        const double ref = want_loss.data[step], rel = fabs(loss - ref) / fabs(ref);
        worst_loss = fmax(worst_loss, rel);
        if (!(rel <= RUN_RTOL))
            fprintf(stderr, "\n    step %d: loss %.7f, PyTorch %.7f (rel. difference %.2g)\n", step,
                    (double)loss, ref, rel);
        CU_ASSERT_TRUE(rel <= RUN_RTOL);
        if (golden_report_wanted())
            fprintf(stderr, "\n      step %2d  loss %.7f  PyTorch %.7f  rel %.1e", step,
                    (double)loss, ref, rel);
        if (step == STEPS) break;
        const double norm = optim_clip_grad_norm(opt.params, opt.count, run_max_norm);
        worst_norm = fmax(worst_norm, fabs(norm - want_norm.data[step]) / want_norm.data[step]);
        const double lr = lr_at(&run_schedule, step);
        CU_ASSERT_DOUBLE_EQUAL(lr, want_lr.data[step], 1e-6 * want_lr.data[step]);
        adamw_step(&opt, lr);
    }
    CU_ASSERT_TRUE(worst_norm <= RUN_RTOL);
    CU_ASSERT_TRUE(want_loss.data[STEPS] < 0.5 * want_loss.data[0]); // it learned
    if (golden_report_wanted())
        fprintf(stderr, "\n      AdamW: losses within %.1e, gradient norms within %.1e (relative)",
                worst_loss, worst_norm);
    tensor_free(&want_loss), tensor_free(&want_lr), tensor_free(&want_norm);
    adamw_free(&opt);
    vit_grads_free(&grads);
    tensor_free(&b.input);
    vit_free(&vit);
}

CU_TestInfo tests_vit_backward[] = {
    {"every gradient equals autograd", test_gradients_match_autograd},
    {"with label smoothing too", test_gradients_with_smoothing_match_autograd},
    {"Hugging Face names give the same gradients", test_hf_names_give_the_same_gradients},
    {"torchvision names give the same gradients", test_torchvision_names_give_the_same_gradients},
    {"recomputing the blocks changes no bit", test_recomputing_gives_the_same_gradients},
    {"grad. names are the forward's, reversed", test_grad_names_are_the_forward_reversed},
    {"gradients accumulate, one allocation", test_gradients_accumulate},
    {"the backward refuses what it cannot do", test_backward_refuses_what_it_cannot_do},
    {"training memory is counted and carved", test_training_memory_is_counted},
    {"gradients equal central differences", test_gradients_match_finite_differences},
    {"ten AdamW steps equal PyTorch's", test_adamw_steps_match_pytorch},
    CU_TEST_INFO_NULL,
};
