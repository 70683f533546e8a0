/**
 * @file test_grad_cli.c
 * @brief `vit grad` and `vit step`, run for real: what they write and print,
 *        against the library called in-process, and how they fail.
 *
 * Every test runs the built program (cli_run.h) on the small model of
 * test_cli.c (D 64, L 2, H 4, 32×32 images in 8×8 patches, 10 classes, made
 * by `vit make-weights` with noisy biases and LayerNorms so every parameter
 * matters). What the program writes is compared with vit_forward_backward()
 * and with AdamW (optim.h) called here; the same weights under Hugging Face
 * and torchvision names must give the same gradients; and every failure must
 * be one line with its exit status (1 bad input, 2 bad usage), no output
 * written and every input as it was.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "io/image.h"
#include "train/optim.h"
#include "io/safetensors.h"
#include "model/trace_stages.h"
#include "model/vit.h"

/* ---------------------------------------------------------------- helpers */

enum { PATH_SIZE = 512, MSG_SIZE = 3 * PATH_SIZE }; // a message names at most two paths

/** The small model every test uses, as make_small() builds it. */
static const VitConfig small = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 64,
                                .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                                .ln_eps = 1e-6f};

// `vit make-weights` for the small model, seed 7, noisy biases and LayerNorms.
static void make_small(const char *out) {
    CliResult r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img",
                          "32", "--patch", "8", "--classes", "10", "--bias-std", "0.02",
                          "--norm-std", "0.1", "--seed", "7", "--out", out);
    if (r.status != 0) fprintf(stderr, "\n    make-weights failed (%d): %s", r.status, r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
}

// The same model in-process: make_small()'s bytes come from this init (test_cli.c pins it).
static void build_small(Vit *vit) {
    VitInit init = vit_init_timm(7);
    init.bias_std = 0.02f, init.norm_std = 0.1f;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &small, &init, &err), VIT_OK);
}

// A batch file: one tensor 'input' of the given shape, values in [-1, 1].
static void write_input(const char *path, int B, int C, int S) {
    Tensor t = tensor_new(4, B, C, S, S);
    for (size_t i = 0; i < t.numel; i++) t.data[i] = sinf(0.37f * (float)i + 0.5f);
    StWriter w = {0};
    st_writer_add(&w, "input", &t);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    tensor_free(&t);
}

static Tensor read_input(const char *path) {
    SafeTensors st;
    VitError err;
    Tensor t = {0};
    CU_ASSERT_EQUAL_FATAL(st_open(&st, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(st_read_tensor(&st, "input", &t, &err), VIT_OK);
    st_close(&st);
    return t;
}

static const char *test_image(char *buf) {
    snprintf(buf, PATH_SIZE, "%s/data/img_wide.png", VIT_TEST_DIR);
    return buf;
}

// Runs a command that must succeed: exit 0, nothing on stderr. Returns its stdout (owned).
static char *run_ok(const char *const *args) {
    CliResult r = cli_run(args);
    if (r.status != 0 || r.err[0])
        fprintf(stderr, "\n    vit %s failed (%d): %s", args[0], r.status, r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    char *out = r.out;
    r.out = NULL;
    cli_result_free(&r);
    return out;
}
#define RUN_OK(...) run_ok((const char *const[]){__VA_ARGS__, NULL})

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

// The in-process gradients: vit_forward_backward() on the batch, the `grad.`
// stages recorded in order. The model must own or map its weights already.
static void library_gradients(Vit *vit, VitGrads *g, TraceRecorder *rec, float *loss,
                              const Tensor *x, const int *targets, float smoothing) {
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_train_prepare(vit, VIT_KEEP_DEFAULT, x->shape[0], &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_grads_init(g, vit, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_forward_backward(vit, g, x, targets, smoothing, loss, trace_record,
                                               rec, &err), VIT_OK);
}

// The file's tensor `name` against `want`, within the checker's float32 tolerance.
static void expect_tensor(const SafeTensors *st, const char *name, const Tensor *want) {
    Tensor got;
    VitError err;
    if (st_read_tensor(st, name, &got, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("a tensor is missing from the gradient file");
        return;
    }
    assert_tensor_close(&got, want, CHECK_ATOL, CHECK_RTOL, name);
    tensor_free(&got);
}

/* ------------------------------------------------------------------- help */

static void test_help_of_grad_and_step(void) {
    char *overview = RUN_OK("--help");
    CU_ASSERT_PTR_NOT_NULL(strstr(overview, "\n  grad "));
    CU_ASSERT_PTR_NOT_NULL(strstr(overview, "\n  step "));
    free(overview);
    const char *const commands[] = {"grad", "step"};
    const char *const needles[2][6] = {
        {"usage: vit grad --weights FILE --target Y[,Y...] --out FILE", "--label-smoothing E",
         "grad.<stage>", "F.cross_entropy", "examples:\n", "exit status:"},
        {"usage: vit step --weights FILE --target Y[,Y...] --steps N", "--warmup N",
         "--weight-decay WD", "torch.optim.AdamW", "examples:\n", "exit status:"},
    };
    for (int i = 0; i < 2; i++) {
        char head[64];
        snprintf(head, sizeof head, "vit %s: ", commands[i]);
        const char *const forms[3][3] = {{commands[i], "--help", NULL},
                                         {commands[i], "-h", NULL},
                                         {"help", commands[i], NULL}};
        for (int f = 0; f < 3; f++) {
            char *out = run_ok(forms[f]);
            CU_ASSERT_EQUAL(strncmp(out, head, strlen(head)), 0);
            for (int k = 0; k < 6; k++) {
                if (!strstr(out, needles[i][k])) fprintf(stderr, "\n    no '%s'\n", needles[i][k]);
                CU_ASSERT_PTR_NOT_NULL(strstr(out, needles[i][k]));
            }
            free(out);
        }
    }
}

/* --------------------------------------------------------------- vit grad */

// The file holds the loss, every parameter's gradient under its timm name and
// shape, and every stage's gradient in backward order: all equal to the
// library's, in-process, on the same weights, batch and targets.
static void test_grad_file_equals_the_library(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], x[PATH_SIZE], g[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "g.safetensors", g, sizeof g);
    make_small(w);
    write_input(x, 3, 3, 32);
    char *out = RUN_OK("grad", "--weights", w, "--input", x, "--target", "3,1,4",
                       "--label-smoothing", "0.1", "--out", g, "--threads", "2");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "32 parameter gradients (114,250 values)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "37 stage gradients"));
    free(out);

    // the same, in-process, from the same file
    Vit vit;
    VitError err;
    VitGrads grads;
    TraceRecorder rec = {0};
    float loss;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, w, &err), VIT_OK);
    Tensor input = read_input(x);
    library_gradients(&vit, &grads, &rec, &loss, &input, (const int[]){3, 1, 4}, 0.1f);

    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, g, &err), VIT_OK);
    // the loss first, a scalar
    CU_ASSERT_STRING_EQUAL(st.tensors[0].name, "loss");
    CU_ASSERT_EQUAL(st.tensors[0].ndim, 0);
    Tensor want_loss = tensor_view(&loss, 0);
    expect_tensor(&st, "loss", &want_loss);
    // then the parameters, in timm's state_dict order, with timm's shapes
    const int n = vit_grad_weights_params(NULL, &grads.weights, &vit.config);
    CU_ASSERT_EQUAL(n, vit_param_tensor_count(&small));
    VitParam *params = calloc((size_t)n, sizeof *params);
    vit_grad_weights_params(params, &grads.weights, &vit.config);
    for (int i = 0; i < n && 1 + i < st.count; i++) {
        CU_ASSERT_STRING_EQUAL(st.tensors[1 + i].name, params[i].name);
        CU_ASSERT_EQUAL(st.tensors[1 + i].dtype, ST_F32);
        Tensor want = tensor_view_shape((float *)params[i].data, params[i].ndim, params[i].shape);
        expect_tensor(&st, params[i].name, &want);
    }
    // then every `grad.` stage the backward emitted, in its order
    int stages = 0;
    for (int i = 0; i < rec.count; i++) {
        if (strncmp(rec.entries[i].name, "grad.", 5) != 0) continue;
        const int at = 1 + n + stages++;
        CU_ASSERT_FATAL(at < st.count);
        CU_ASSERT_STRING_EQUAL(st.tensors[at].name, rec.entries[i].name);
        expect_tensor(&st, rec.entries[i].name, &rec.entries[i].t);
    }
    CU_ASSERT_EQUAL(stages, TRACE_STAGES(small.depth)); // one gradient for every stage
    CU_ASSERT_EQUAL(st.count, 1 + n + stages);
    CU_ASSERT_STRING_EQUAL(st.tensors[1 + n].name, "grad.logits");
    CU_ASSERT_STRING_EQUAL(st.tensors[st.count - 1].name, "grad.input");
    // the metadata says what was computed
    const char *meta[][2] = {{"producer", "vit grad"}, {"weights", w}, {"weights_names", "timm"},
                             {"targets", "3,1,4"}, {"label_smoothing", "0.1"}, {"batch", "3"},
                             {"num_classes", "10"}, {"dim", "64"}};
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        const char *v = st_meta(&st, meta[i][0]);
        CU_ASSERT_PTR_NOT_NULL(v);
        if (v) CU_ASSERT_STRING_EQUAL(v, meta[i][1]);
    }
    st_close(&st);
    free(params);
    trace_recorder_free(&rec);
    vit_grads_free(&grads);
    tensor_free(&input);
    vit_free(&vit);
    CU_ASSERT_EQUAL(scratch_count(&dir), 3);
    scratch_remove(&dir);
}

// One target for every image is that target repeated; IMAGE files work as --input does.
static void test_grad_on_images_and_one_target(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE], one[PATH_SIZE], each[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "one.safetensors", one, sizeof one);
    scratch_file(&dir, "each.safetensors", each, sizeof each);
    make_small(w);
    test_image(img);
    free(RUN_OK("grad", "--weights", w, img, img, "--target", "5", "--out", one));
    free(RUN_OK("grad", "--weights", w, img, img, "--target", "5,5", "--out", each));
    CU_ASSERT_TRUE(same_bytes(one, each));
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, one, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "targets"), "5,5");
    const StTensor *e = st_find(&st, "grad.input");
    CU_ASSERT_TRUE(e && e->ndim == 4 && e->shape[0] == 2 && e->shape[1] == 3 && e->shape[2] == 32);
    st_close(&st);
    scratch_remove(&dir);
}

/* ------------------------------------------------ three naming conventions */

// The weights of `timm` rewritten with another convention's names, from the
// parameter table; Hugging Face's q, k and v apart. Heads and eps as metadata.
static void write_convention(const char *timm, const char *out, VitNames names) {
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, timm, &err), VIT_OK);
    StWriter w = {0};
    st_writer_meta(&w, "num_heads", "4");
    st_writer_meta(&w, "layer_norm_eps", "1e-06");
    Tensor views[64];
    int n = 0;
    VitParamIter it = vit_param_iter(vit.config.depth, VIT_ORDER_STATE_DICT,
                                     names == VIT_NAMES_HF ? VIT_QKV_SPLIT : VIT_QKV_FUSED);
    for (const VitParamSpec *s; (s = vit_param_next(&it)) && n < 64; n++) {
        char name[160];
        int shape[4], ndim = vit_param_shape(s, &vit.config, shape);
        CU_ASSERT_FATAL(vit_param_file_name(name, sizeof name, s, names, it.block, 0));
        views[n] = tensor_view_shape((float *)vit_param_data(&vit.weights, s, it.block, 0), ndim,
                                     shape);
        st_writer_add(&w, name, &views[n]);
    }
    CU_ASSERT_EQUAL(st_writer_save(&w, out, &err), VIT_OK);
    st_writer_free(&w);
    vit_free(&vit);
}

// Tensor `name` of an open file (owned), or a zeroed tensor and a failure.
static Tensor tensor_of(const SafeTensors *st, const char *name) {
    Tensor t = {0};
    VitError err;
    if (st_read_tensor(st, name, &t, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("a gradient is missing");
    }
    return t;
}

// Every tensor of `ref` (timm names) has its equal in `other`; a fused q, k, v
// gradient equals the three of a Hugging Face file, row block by row block.
static void expect_same_gradients(const char *ref, const char *other, const char *source) {
    SafeTensors a, b;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&a, ref, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&b, other, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(st_meta(&b, "weights_names"), source);
    for (int i = 0; i < a.count; i++) {
        const char *name = a.tensors[i].name;
        Tensor want = tensor_of(&a, name);
        int block;
        const char *suffix = trace_split_block(name, &block);
        if (!strcmp(source, "hf") && suffix && !strncmp(suffix, "attn.qkv.", 9)) {
            const int D = want.shape[0] / 3;
            const size_t part = want.numel / 3;
            for (int k = 0; k < 3; k++) {
                char split[64];
                snprintf(split, sizeof split, "blocks.%d.attn.%c.%s", block, "qkv"[k], suffix + 9);
                Tensor got = tensor_of(&b, split);
                Tensor piece = want.ndim == 2 ? tensor_view(want.data + k * part, 2, D, D)
                                              : tensor_view(want.data + k * part, 1, D);
                assert_tensor_close(&got, &piece, CHECK_ATOL, CHECK_RTOL, split);
                tensor_free(&got);
            }
        } else {
            Tensor got = tensor_of(&b, name);
            assert_tensor_close(&got, &want, CHECK_ATOL, CHECK_RTOL, name);
            tensor_free(&got);
        }
        tensor_free(&want);
    }
    // Hugging Face: 2 more tensors per block (three q, k, v weights and biases for two)
    CU_ASSERT_EQUAL(b.count, a.count + (!strcmp(source, "hf") ? 4 * small.depth : 0));
    st_close(&a);
    st_close(&b);
}

static void test_three_conventions_give_the_same_gradients(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], hf[PATH_SIZE], tv[PATH_SIZE], x[PATH_SIZE];
    char g[PATH_SIZE], g_hf[PATH_SIZE], g_tv[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "hf.safetensors", hf, sizeof hf);
    scratch_file(&dir, "tv.safetensors", tv, sizeof tv);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "g.safetensors", g, sizeof g);
    scratch_file(&dir, "g-hf.safetensors", g_hf, sizeof g_hf);
    scratch_file(&dir, "g-tv.safetensors", g_tv, sizeof g_tv);
    make_small(w);
    write_convention(w, hf, VIT_NAMES_HF);
    write_convention(w, tv, VIT_NAMES_TORCHVISION);
    write_input(x, 2, 3, 32);
    const char *const weights[3] = {w, hf, tv}, *const grads[3] = {g, g_hf, g_tv};
    for (int i = 0; i < 3; i++)
        free(RUN_OK("grad", "--weights", weights[i], "--input", x, "--target", "2,7", "--out",
                    grads[i]));
    expect_same_gradients(g, g_hf, "hf");
    expect_same_gradients(g, g_tv, "torchvision");
    // the model was only read: weights mapped from the file stay as they were
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL(vit_build(&vit, hf, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(vit.source, "hf");
    vit_free(&vit);
    scratch_remove(&dir);
}

// A model of 1 channel (the Fashion-MNIST shape) takes its batch from --input,
// or from image files seen in grey: the same gradients as --input holding
// those grey pixels.
static void test_grad_with_one_channel(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], x[PATH_SIZE], g[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "gray.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "g.safetensors", g, sizeof g);
    VitConfig c = small;
    c.channels = 1, c.image_size = 28, c.patch_size = 4;
    VitInit init = vit_init_timm(3);
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &c, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_save(&vit, w, &err), VIT_OK);
    vit_free(&vit);
    write_input(x, 2, 1, 28);
    free(RUN_OK("grad", "--weights", w, "--input", x, "--target", "0,9", "--out", g));
    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, g, &err), VIT_OK);
    const StTensor *e = st_find(&st, "patch_embed.proj.weight");
    CU_ASSERT_TRUE(e && e->ndim == 4 && e->shape[0] == 64 && e->shape[1] == 1 && e->shape[2] == 4);
    st_close(&st);
    // IMAGE: Pillow's grey, the fashion-mnist preset (a grey model's default), as --input
    Image picture;
    Preprocess pre;
    CU_ASSERT_EQUAL_FATAL(image_load(&picture, test_image(img), &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&pre, "fashion-mnist", 28, &err), VIT_OK);
    Tensor grey = tensor_new(4, 1, 1, 28, 28);
    image_preprocess(grey.data, &picture, &pre);
    image_free(&picture);
    StWriter wr = {0};
    st_writer_add(&wr, "input", &grey);
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&wr, x, &err), VIT_OK);
    st_writer_free(&wr);
    tensor_free(&grey);
    char g2[PATH_SIZE];
    scratch_file(&dir, "g2.safetensors", g2, sizeof g2);
    free(RUN_OK("grad", "--weights", w, img, "--target", "1", "--out", g));
    free(RUN_OK("grad", "--weights", w, "--input", x, "--target", "1", "--out", g2));
    SafeTensors a, b;
    CU_ASSERT_EQUAL_FATAL(st_open(&a, g, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&b, g2, &err), VIT_OK);
    const char *const names[] = {"loss", "patch_embed.proj.weight", "head.weight", "grad.input"};
    for (int i = 0; i < 4; i++) {
        Tensor ta, tb;
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&a, names[i], &ta, &err), VIT_OK);
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&b, names[i], &tb, &err), VIT_OK);
        assert_tensor_close(&ta, &tb, 0, 0, names[i]);
        tensor_free(&ta), tensor_free(&tb);
    }
    st_close(&a), st_close(&b);
    scratch_remove(&dir);
}

/* --------------------------------------------------------------- vit step */

/** One line of `vit step`'s table. */
typedef struct {
    int step;
    double lr, loss, norm;
} StepLine;

// The table `vit step` printed; returns its rows, and the "loss after" in *after.
static int step_lines(const char *out, StepLine *lines, int max, double *after) {
    int n = 0;
    *after = NAN;
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        StepLine l;
        if (n < max && sscanf(p, "%d %lf %lf %lf", &l.step, &l.lr, &l.loss, &l.norm) == 4)
            lines[n++] = l;
        int steps;
        double v;
        if (sscanf(p, "loss after %d step%*[s]: %lf", &steps, &v) == 2) *after = v;
    }
    return n;
}

// The losses `vit step` prints fall and are those of the library's own loop
// (zero, forward + backward, optim_clip_grad_norm, adamw_step at lr_at) on a model
// built here; the weights it writes are the ones that loop leaves; the input
// file is untouched.
static void test_step_losses_fall_and_equal_the_library(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], keep[PATH_SIZE], x[PATH_SIZE], w2[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "keep.safetensors", keep, sizeof keep);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "w2.safetensors", w2, sizeof w2);
    make_small(w);
    copy_file(w, keep);
    write_input(x, 4, 3, 32);
    enum { STEPS = 8 };
    char *out = RUN_OK("step", "--weights", w, "--input", x, "--target", "3,1,4,1", "--steps",
                       "8", "--warmup", "2", "--lr", "0.002", "--min-lr", "0.0001",
                       "--weight-decay", "0.05", "--clip", "1", "--label-smoothing", "0.1",
                       "--out", w2);
    StepLine got[STEPS + 1];
    double after;
    const int n = step_lines(out, got, STEPS + 1, &after);
    CU_ASSERT_EQUAL(n, STEPS);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the trained weights, timm names"));
    free(out);
    CU_ASSERT_TRUE(same_bytes(w, keep)); // --weights is only read

    // the same loop, in-process, on a model of its own
    Vit vit;
    VitError err;
    VitGrads grads;
    AdamW opt;
    build_small(&vit);
    Tensor input = read_input(x);
    const int targets[4] = {3, 1, 4, 1};
    CU_ASSERT_EQUAL_FATAL(vit_train_prepare(&vit, VIT_KEEP_DEFAULT, 4, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_grads_init(&grads, &vit, &err), VIT_OK);
    AdamWConfig cfg = adamw_defaults();
    cfg.weight_decay = 0.05f; // as the command line's float
    CU_ASSERT_EQUAL_FATAL(adamw_init_vit(&opt, &vit, &grads.weights, &cfg, &err), VIT_OK);
    const LrSchedule sched = {.peak_lr = 0.002f, .min_lr = 0.0001f, .warmup_steps = 2,
                              .total_steps = STEPS};
    double want[STEPS];
    for (int s = 0; s < STEPS; s++) {
        float loss;
        vit_grads_zero(&grads);
        CU_ASSERT_EQUAL_FATAL(vit_forward_backward(&vit, &grads, &input, targets, 0.1f, &loss,
                                                   NULL, NULL, &err), VIT_OK);
        const double norm = optim_clip_grad_norm(opt.params, opt.count, 1.0);
        const double lr = lr_at(&sched, s);
        adamw_step(&opt, lr);
        want[s] = loss;
        if (s < n) {
            CU_ASSERT_EQUAL(got[s].step, s + 1);
            CU_ASSERT_DOUBLE_EQUAL(got[s].lr, lr, 1e-5 * lr + 1e-12); // printed with 6 digits
            CU_ASSERT_DOUBLE_EQUAL(got[s].loss, loss, 2e-5);
            CU_ASSERT_DOUBLE_EQUAL(got[s].norm, norm, 1e-4 * norm);
        }
    }
    // it learns: the loss falls (steps 1 and 2 of the warm-up have lr 0 and 0.001)
    for (int s = 3; s < n; s++) CU_ASSERT_TRUE(got[s].loss < got[s - 1].loss);
    CU_ASSERT_TRUE(after < want[STEPS - 1]);
    CU_ASSERT_TRUE(want[STEPS - 1] < 0.8 * want[0]);

    // the written weights are the in-process ones, under timm's names
    Vit trained;
    CU_ASSERT_EQUAL_FATAL(vit_build(&trained, w2, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(trained.source, "timm");
    const int count = vit_params(&vit, NULL);
    VitParam *mine = calloc((size_t)count, sizeof *mine), *theirs = calloc((size_t)count, sizeof *theirs);
    CU_ASSERT_EQUAL(vit_params(&trained, NULL), count);
    vit_params(&vit, mine);
    vit_params(&trained, theirs);
    CheckReport report = {0};
    for (int i = 0; i < count; i++) {
        CU_ASSERT_STRING_EQUAL(mine[i].name, theirs[i].name);
        Tensor a = tensor_view_shape((float *)theirs[i].data, theirs[i].ndim, theirs[i].shape);
        Tensor b = tensor_view_shape((float *)mine[i].data, mine[i].ndim, mine[i].shape);
        tensor_close_in(&report, &a, &b, CHECK_ATOL, CHECK_RTOL, mine[i].name);
    }
    assert_report_clean(&report, "trained parameters");
    free(mine);
    free(theirs);
    vit_free(&trained);
    adamw_free(&opt);
    vit_grads_free(&grads);
    tensor_free(&input);
    vit_free(&vit);
    scratch_remove(&dir);
}

// A Hugging Face checkpoint (q, k, v apart, read-only map) trains like its
// timm twin, and --out writes it with timm's fused names.
static void test_step_on_hugging_face_writes_timm_names(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], hf[PATH_SIZE], x[PATH_SIZE], a[PATH_SIZE], b[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "hf.safetensors", hf, sizeof hf);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "a.safetensors", a, sizeof a);
    scratch_file(&dir, "b.safetensors", b, sizeof b);
    make_small(w);
    write_convention(w, hf, VIT_NAMES_HF);
    write_input(x, 2, 3, 32);
    char *out_timm = RUN_OK("step", "--weights", w, "--input", x, "--target", "6", "--steps", "4",
                            "--out", a);
    char *out_hf = RUN_OK("step", "--weights", hf, "--input", x, "--target", "6", "--steps", "4",
                          "--out", b);
    StepLine lt[4], lh[4];
    double after_t, after_h;
    CU_ASSERT_EQUAL(step_lines(out_timm, lt, 4, &after_t), 4);
    CU_ASSERT_EQUAL(step_lines(out_hf, lh, 4, &after_h), 4);
    for (int s = 0; s < 4; s++) CU_ASSERT_DOUBLE_EQUAL(lt[s].loss, lh[s].loss, 2e-5);
    CU_ASSERT_DOUBLE_EQUAL(after_t, after_h, 2e-5);
    free(out_timm);
    free(out_hf);
    Vit ta, tb;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&ta, a, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_build(&tb, b, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(tb.source, "timm");
    const int n = vit_params(&tb, NULL);
    CU_ASSERT_EQUAL(n, vit_param_tensor_count(&small)); // fused again
    VitParam *pa = calloc((size_t)n, sizeof *pa), *pb = calloc((size_t)n, sizeof *pb);
    CU_ASSERT_EQUAL(vit_params(&ta, NULL), n);
    vit_params(&ta, pa);
    vit_params(&tb, pb);
    CheckReport report = {0};
    for (int i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(pa[i].name, pb[i].name);
        Tensor ga = tensor_view_shape((float *)pa[i].data, pa[i].ndim, pa[i].shape);
        Tensor gb = tensor_view_shape((float *)pb[i].data, pb[i].ndim, pb[i].shape);
        tensor_close_in(&report, &gb, &ga, CHECK_ATOL, CHECK_RTOL, pa[i].name);
    }
    assert_report_clean(&report, "parameters trained from Hugging Face names");
    free(pa);
    free(pb);
    vit_free(&ta);
    vit_free(&tb);
    scratch_remove(&dir);
}

/* ----------------------------------------------------------------- errors */

// Each bad command line: one line, its exit status, no output, the inputs as they were.
static void test_bad_targets_and_batches(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], x[PATH_SIZE], g[PATH_SIZE], img[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "g.safetensors", g, sizeof g);
    make_small(w);
    write_input(x, 3, 3, 32);
    test_image(img);
    const char *const commands[2] = {"grad", "step"};
    for (int c = 0; c < 2; c++) {
        const char *cmd = commands[c];
        // what the flag is for: the last two words of each run, --out FILE or --steps N
        const char *k = c == 0 ? "--out" : "--steps", *v = c == 0 ? g : "2";
        // a class the model does not have: bad input, naming the value and Y
        snprintf(msg, sizeof msg, "vit: --target 10: the model in %s has Y = 10 classes, so a "
                 "target must lie in [0, 10)", w);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, img, "--target", "10", k, v), 1, msg);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--input", x, "--target", "1,2,99", k, v), 1,
                       "--target 99 (a target in the list): the model in", "Y = 10 classes",
                       "[0, 10)");
        // not a class number at all: bad usage
        const char *const not_numbers[] = {"-1", "abc", "3,,4", "2.5", "1,", "99999999999"};
        for (size_t i = 0; i < sizeof not_numbers / sizeof not_numbers[0]; i++)
            EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, img, "--target", not_numbers[i], k, v), 2,
                           "--target: '", "' is not a class number");
        // as many targets as images, or one
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, img, img, "--target", "1,2,3", k, v), 2,
                       "--target gives 3 classes for 2 images: give one for every image, or one "
                       "per image");
        snprintf(msg, sizeof msg, "vit: --target gives 2 classes for the 3 images in %s: give "
                 "one for every image, or one per image", x);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--input", x, "--target", "1,2", k, v), 1, msg);
        // a batch from one place
        snprintf(msg, sizeof msg, "vit: 'vit %s' needs either --input FILE or IMAGE files, not "
                 "both (see 'vit %s --help')", cmd, cmd);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--input", x, img, "--target", "1", k, v), 2,
                       msg);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--target", "1", k, v), 2, "not neither");
        // flags
        snprintf(msg, sizeof msg, "vit: 'vit %s' needs --target Y[,Y...] (see 'vit %s --help')",
                 cmd, cmd);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, img, k, v), 2, msg);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, img, "--target", "1", "--label-smoothing",
                               "1.5", k, v),
                       2, "vit: --label-smoothing: 1.5 is out of range [0, 1]");
        // the batch file: wrong shape, missing tensor, a FIFO
        char bad[PATH_SIZE];
        scratch_file(&dir, "bad.safetensors", bad, sizeof bad);
        write_input(bad, 2, 3, 16);
        snprintf(msg, sizeof msg, "vit: %s: tensor 'input' has shape (2, 3, 16, 16), but the "
                 "model in %s expects (B, 3, 32, 32)", bad, w);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--input", bad, "--target", "1", k, v), 1, msg);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--input", w, "--target", "1", k, v), 1,
                       "no tensor named 'input'");
        unlink(bad);
        CU_ASSERT_EQUAL_FATAL(mkfifo(bad, 0600), 0);
        EXPECT_FAILURE(VIT_RUN(cmd, "--weights", w, "--input", bad, "--target", "1", k, v), 1,
                       "is a FIFO (named pipe), not a safetensors file");
        unlink(bad);
    }
    // grad's --out is required; step's --steps
    EXPECT_FAILURE(VIT_RUN("grad", "--weights", w, img, "--target", "1"), 2,
                   "vit: 'vit grad' needs --out FILE (see 'vit grad --help')");
    EXPECT_FAILURE(VIT_RUN("step", "--weights", w, img, "--target", "1"), 2,
                   "vit: 'vit step' needs --steps N (see 'vit step --help')");
    CU_ASSERT_EQUAL(scratch_count(&dir), 2); // w and x: nothing written
    scratch_remove(&dir);
}

static void test_bad_training_flags(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    make_small(w);
    test_image(img);
#define STEP(...) VIT_RUN("step", "--weights", w, img, "--target", "1", __VA_ARGS__)
    EXPECT_FAILURE(STEP("--steps", "0"), 2, "vit: --steps: 0 is out of range [1, 1000000]");
    EXPECT_FAILURE(STEP("--steps", "ten"), 2, "vit: --steps: 'ten' is not an integer");
    EXPECT_FAILURE(STEP("--steps", "5", "--warmup", "5"), 2,
                   "vit: --warmup 5: the warm-up must be shorter than the run, --steps 5");
    EXPECT_FAILURE(STEP("--steps", "5", "--lr", "1e-3", "--min-lr", "0.01"), 2,
                   "vit: --min-lr 0.01 is above --lr 0.001: the cosine falls from --lr to --min-lr");
    EXPECT_FAILURE(STEP("--steps", "5", "--lr", "-1"), 2, "vit: --lr: -1 is out of range [0, 10]");
    EXPECT_FAILURE(STEP("--steps", "5", "--weight-decay", "nan"), 2,
                   "vit: --weight-decay: 'nan' is not a finite number");
    EXPECT_FAILURE(STEP("--steps", "5", "--clip", "-0.5"), 2, "--clip: -0.5 is out of range");
#undef STEP
    CU_ASSERT_EQUAL(scratch_count(&dir), 1);
    scratch_remove(&dir);
}

// --out naming an input, by any path or link: refused before any work; a link
// to a fresh file is fine; nothing changed, no temporary left behind.
static void test_no_output_over_an_input(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], keep[PATH_SIZE], x[PATH_SIZE], keep_x[PATH_SIZE], img[PATH_SIZE];
    char png[PATH_SIZE], link_w[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "keep.safetensors", keep, sizeof keep);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "keep-x.safetensors", keep_x, sizeof keep_x);
    scratch_file(&dir, "cat.png", img, sizeof img);
    scratch_file(&dir, "link.safetensors", link_w, sizeof link_w);
    make_small(w);
    copy_file(w, keep);
    write_input(x, 1, 3, 32);
    copy_file(x, keep_x);
    copy_file(test_image(png), img);
    CU_ASSERT_EQUAL_FATAL(symlink("w.safetensors", link_w), 0);
    const char *const as_weights[] = {w, link_w};
    for (int i = 0; i < 2; i++) {
        snprintf(msg, sizeof msg, "vit: %s: --out is the same file as --weights (%s): refusing "
                 "to overwrite an input", as_weights[i], w);
        EXPECT_FAILURE(VIT_RUN("grad", "--weights", w, img, "--target", "1", "--out",
                               as_weights[i]), 1, msg);
        EXPECT_FAILURE(VIT_RUN("step", "--weights", w, img, "--target", "1", "--steps", "1",
                               "--out", as_weights[i]), 1, msg);
    }
    EXPECT_FAILURE(VIT_RUN("grad", "--weights", w, "--input", x, "--target", "1", "--out", x), 1,
                   "--out is the same file as --input");
    EXPECT_FAILURE(VIT_RUN("step", "--weights", w, "--input", x, "--target", "1", "--steps", "1",
                           "--out", x), 1, "--out is the same file as --input");
    EXPECT_FAILURE(VIT_RUN("grad", "--weights", w, img, "--target", "1", "--out", img), 1,
                   "--out is the same file as IMAGE");
    EXPECT_FAILURE(VIT_RUN("grad", "--weights", w, img, "--target", "1", "--out", "/dev/null"), 1,
                   "/dev/null: is a character device, not a regular file");
    CU_ASSERT_TRUE(same_bytes(w, keep));
    CU_ASSERT_TRUE(same_bytes(x, keep_x));
    CU_ASSERT_TRUE(same_bytes(img, png));
    CU_ASSERT_EQUAL(scratch_count(&dir), 6); // no output, no temporary file
    scratch_remove(&dir);
}

// A run that would need terabytes is refused before anything is taken, the
// message saying what the backward adds; NaN in the weights stops training.
static void test_memory_and_numbers(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE], out[PATH_SIZE], bad[PATH_SIZE], x[PATH_SIZE];
    scratch_file(&dir, "big.safetensors", w, sizeof w);
    scratch_file(&dir, "out.safetensors", out, sizeof out);
    scratch_file(&dir, "bad.safetensors", bad, sizeof bad);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    test_image(img);
    // 16,130 tokens and 256 heads: 800 GB of attention scores for one image
    CliResult r = VIT_RUN("make-weights", "--dim", "256", "--heads", "256", "--mlp-dim", "4",
                          "--depth", "1", "--img", "1016", "--patch", "8", "--classes", "2",
                          "--seed", "1", "--out", w);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    const char *need = "a forward pass over 1 image of 1016×1016 pixels (16,130 tokens, 256 heads;";
    EXPECT_FAILURE(VIT_RUN("grad", "--weights", w, img, "--target", "1", "--out", out), 1, need,
                   "with the backward pass, the gradients and a copy of every stage's gradient "
                   "would need", "of memory, more than the");
    EXPECT_FAILURE(VIT_RUN("step", "--weights", w, img, "--target", "1", "--steps", "3"), 1, need,
                   "with the backward pass, the gradients, AdamW's state and a copy of the weights");
    CU_ASSERT_FALSE(file_exists(out));

    // NaN in one weight: grad still writes (it is how one finds them), with a
    // warning; step stops at once, naming where it starts, and writes nothing
    make_small(w);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, w, &err), VIT_OK);
    Tensor copies[64];
    StWriter wr = {0};
    for (int i = 0; i < st.meta_count; i++) st_writer_meta(&wr, st.meta_keys[i], st.meta_values[i]);
    for (int i = 0; i < st.count && i < 64; i++) {
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, st.tensors[i].name, &copies[i], &err), VIT_OK);
        if (!strcmp(st.tensors[i].name, "blocks.1.mlp.fc2.bias")) copies[i].data[0] = NAN;
        st_writer_add(&wr, st.tensors[i].name, &copies[i]);
    }
    CU_ASSERT_EQUAL(st_writer_save(&wr, bad, &err), VIT_OK);
    st_writer_free(&wr);
    for (int i = 0; i < st.count && i < 64; i++) tensor_free(&copies[i]);
    st_close(&st);
    write_input(x, 1, 3, 32);
    r = VIT_RUN("grad", "--weights", bad, "--input", x, "--target", "1", "--out", out);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "vit: warning: the logits are not finite"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "blocks.1.mlp.fc2"));
    cli_result_free(&r);
    CU_ASSERT_TRUE(file_exists(out));
    unlink(out);
    EXPECT_FAILURE(VIT_RUN("step", "--weights", bad, "--input", x, "--target", "1", "--steps",
                           "3", "--out", out),
                   1, "step 1: the loss is not finite (nan); stopped before updating the weights, "
                      "nothing written: ", "first in 'blocks.1.mlp.fc2.bias'");
    CU_ASSERT_FALSE(file_exists(out));
    scratch_remove(&dir);
}

CU_TestInfo tests_grad_cli[] = {
    {"help of grad and step", test_help_of_grad_and_step},
    {"grad file equals the library", test_grad_file_equals_the_library},
    {"grad on images, one target for all", test_grad_on_images_and_one_target},
    {"three conventions give the same gradients", test_three_conventions_give_the_same_gradients},
    {"grad with one channel", test_grad_with_one_channel},
    {"step losses fall and equal the library", test_step_losses_fall_and_equal_the_library},
    {"step on Hugging Face writes timm names", test_step_on_hugging_face_writes_timm_names},
    {"bad targets and batches", test_bad_targets_and_batches},
    {"bad training flags", test_bad_training_flags},
    {"no output over an input", test_no_output_over_an_input},
    {"memory and numbers", test_memory_and_numbers},
    CU_TEST_INFO_NULL,
};
