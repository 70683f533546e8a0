/**
 * @file test_cli.c
 * @brief The `vit` program, run for real: what it writes, what it says, how it exits.
 *
 * Every test runs the built program (cli_run.h) on a small model, so the
 * suite stays fast: D 64, L 2, H 4, 32×32 images in 8×8 patches, 10 classes.
 * What the program writes is checked against the library called in-process
 * (the trace contract of lib/model/trace_stages.h, vit_forward(), vit_build_random()),
 * and every failure against its exit status (1 bad input, 2 bad usage) and
 * its one-line message, which must name the file or the flag at fault.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli_run.h"
#include "io/safetensors.h"
#include "model/trace_stages.h"
#include "model/vit.h"

/* ---------------------------------------------------------------- helpers */

enum { PATH_SIZE = 256, MSG_SIZE = 4 * PATH_SIZE }; // a message names at most two paths

/** The small model every test uses, as the flags below build it. */
static const VitConfig small = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 64,
                                .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                                .ln_eps = 1e-6f};

// `vit make-weights` for the small model; non-zero bias and LayerNorm noise, so the
// trace exercises every parameter. Returns the exit status.
static int make_small(const char *out, const char *seed, const char *threads) {
    CliResult r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img",
                          "32", "--patch", "8", "--classes", "10", "--bias-std", "0.02",
                          "--norm-std", "0.1", "--seed", seed, "--threads", threads, "--out", out);
    if (r.status != 0) fprintf(stderr, "\n    make-weights failed (%d): %s", r.status, r.err);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    int status = r.status;
    cli_result_free(&r);
    return status;
}

// A safetensors file with one tensor `name` of the given shape, values in [-1, 1].
static void write_tensor_file(const char *path, const char *name, int ndim, const int *shape) {
    Tensor t = tensor_new_shape(ndim, shape);
    for (size_t i = 0; i < t.numel; i++) t.data[i] = sinf(0.37f * (float)i + 0.5f);
    StWriter w = {0};
    st_writer_add(&w, name, &t);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    tensor_free(&t);
}

// The contract's names for a configuration, in forward order, from the stage table.
static int contract_names(char (*names)[48], int max, const VitConfig *c) {
    int n = 0;
    bool blocks_listed = false;
    for (int i = 0; i < vit_stage_count() && n < max; i++) {
        const VitStage *s = vit_stage_at(i);
        if (!s->per_block) {
            snprintf(names[n++], 48, "%s", s->name);
        } else if (!blocks_listed) { // the run of block stages, once per block
            blocks_listed = true;
            for (int b = 0; b < c->depth; b++)
                for (int j = i; j < vit_stage_count() && vit_stage_at(j)->per_block && n < max; j++)
                    snprintf(names[n++], 48, "blocks.%d.%s", b, vit_stage_at(j)->name);
        }
    }
    return n;
}

// A failed run: the exit status, nothing on stdout, and on stderr exactly one line,
// `expected` in full (or beginning with it when `prefix_only`).
static void check_failure(const CliResult *r, int status, const char *expected, bool prefix_only) {
    size_t len = strlen(r->err);
    bool one_line = len > 0 && r->err[len - 1] == '\n' && strchr(r->err, '\n') == r->err + len - 1;
    bool text_ok = prefix_only ? strncmp(r->err, expected, strlen(expected)) == 0
                               : len > 0 && strlen(expected) == len - 1 &&
                                     strncmp(r->err, expected, len - 1) == 0;
    if (r->status != status || !one_line || !text_ok || r->out[0])
        fprintf(stderr, "\n    expected exit %d and \"%s%s\"\n    got exit %d, stderr \"%s\", "
                "stdout \"%s\"\n", status, expected, prefix_only ? "..." : "", r->status, r->err,
                r->out);
    CU_ASSERT_EQUAL(r->status, status);
    CU_ASSERT_TRUE(one_line);
    CU_ASSERT_TRUE(text_ok);
    CU_ASSERT_STRING_EQUAL(r->out, "");
}

static void expect_error(CliResult r, int status, const char *expected) {
    check_failure(&r, status, expected, false);
    cli_result_free(&r);
}

static void expect_error_prefix(CliResult r, int status, const char *expected) {
    check_failure(&r, status, expected, true);
    cli_result_free(&r);
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

// The integer on `vit info`'s configuration row for `label`, whose symbol must be `symbol`.
static int info_row(const char *out, const char *label, const char *symbol) {
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", label);
    const char *line = strstr(out, key);
    CU_ASSERT_PTR_NOT_NULL(line);
    if (!line) return -1;
    char sym[8];
    int value = -1;
    CU_ASSERT_EQUAL(sscanf(line + strlen(key), " %7s %d", sym, &value), 2);
    CU_ASSERT_STRING_EQUAL(sym, symbol);
    return value;
}

/* ------------------------------------------------------------------- help */

static void test_help_for_every_command(void) {
    CliResult r = VIT_RUN("--help");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    for (const char *const *w = (const char *const[]){"make-weights", "classify", "trace",
                                                       "info", "exit status", NULL}; *w; w++)
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, *w));
    cli_result_free(&r);

    const char *commands[] = {"make-weights", "classify", "trace", "info"};
    for (int i = 0; i < 4; i++) {
        char head[64], usage[64], example[64];
        snprintf(head, sizeof head, "vit %s: ", commands[i]);
        snprintf(usage, sizeof usage, "\nusage: vit %s ", commands[i]);
        snprintf(example, sizeof example, "\nexamples:\n");
        // -h, --help and `vit help X` print the same page, and only that
        const char *const forms[3][4] = {{commands[i], "--help", NULL},
                                         {commands[i], "-h", NULL},
                                         {"help", commands[i], NULL}};
        for (int f = 0; f < 3; f++) {
            r = cli_run(forms[f]);
            CU_ASSERT_EQUAL(r.status, 0);
            CU_ASSERT_STRING_EQUAL(r.err, "");
            CU_ASSERT_EQUAL(strncmp(r.out, head, strlen(head)), 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(r.out, usage));
            CU_ASSERT_PTR_NOT_NULL(strstr(r.out, example));
            CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "exit status"));
            cli_result_free(&r);
        }
    }
    // help wins over mistakes on the same line
    r = VIT_RUN("trace", "--no-such-flag", "--help");
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    // no command at all: the usage, on stderr, as a usage error
    r = cli_run((const char *const[]){NULL});
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_STRING_EQUAL(r.out, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "usage: vit COMMAND"));
    cli_result_free(&r);
}

/* ------------------------------------------------------------ the outputs */

// trace --precision int8: the in-process int8 pass's logits, the precision in the metadata;
// classify takes it too; a precision that is none of the three is refused before any file.
static void test_trace_and_classify_take_precision(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    CU_ASSERT_EQUAL_FATAL(make_small(w, "7", "1"), 0);
    write_tensor_file(x, "input", 4, (const int[]){2, 3, 32, 32});
    CliResult r = VIT_RUN("trace", "--weights", w, "--input", x, "--out", t, "--precision", "int8");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    Vit vit;
    VitError err;
    SafeTensors in, trace;
    Tensor input, got;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, w, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_set_precision(&vit, LOWP_INT8, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&in, x, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&in, "input", &input, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &input, NULL, NULL, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&trace, t, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(st_meta(&trace, "precision"), "int8");
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&trace, "logits", &got, &err), VIT_OK);
    // independent: the command against the library pass it wraps, which the precision suite holds to PyTorch
    const Tensor want = vit_logits(&vit);
    assert_tensor_close(&got, &want, CHECK_ATOL, CHECK_RTOL, "int8 logits");
    tensor_free(&got);
    st_close(&trace);
    tensor_free(&input);
    st_close(&in);
    vit_free(&vit);
    char png[PATH_SIZE], image[PATH_SIZE];
    scratch_file(&dir, "out.safetensors", png, sizeof png);
    snprintf(image, sizeof image, "%s/data/img_square32.png", VIT_TEST_DIR);
    r = VIT_RUN("classify", "--weights", w, "--precision", "bf16", "--top", "2", image);
    if (r.status != 0) fprintf(stderr, "\n    classify failed: %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "1 "));
    cli_result_free(&r);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, "--precision", "fp16", image), 2,
                   "--precision: 'fp16' is not fp32, bf16 or int8");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, "--input", x, "--out", png, "--precision", "8"),
                   2, "--precision: '8' is not fp32, bf16 or int8");
    CU_ASSERT_EQUAL(scratch_count(&dir), 3); // the refusals wrote nothing
    scratch_remove(&dir);
}

// make-weights → trace → the file holds exactly the contract, equal to an in-process forward.
static void test_trace_holds_the_contract(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    CU_ASSERT_EQUAL_FATAL(make_small(w, "7", "1"), 0);
    const int B = 2;
    write_tensor_file(x, "input", 4, (const int[]){B, 3, 32, 32});
    CliResult r = VIT_RUN("trace", "--weights", w, "--input", x, "--out", t, "--threads", "2");
    if (r.status != 0) fprintf(stderr, "\n    trace failed: %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    cli_result_free(&r);

    // the same pass, in-process
    Vit vit;
    VitError err;
    SafeTensors in;
    Tensor input;
    TraceRecorder rec = {0};
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, w, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&in, x, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&in, "input", &input, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &input, trace_record, &rec, &err), VIT_OK);

    // exactly the contract's names, in forward order, float32, the contract's shapes
    SafeTensors trace;
    CU_ASSERT_EQUAL_FATAL(st_open(&trace, t, &err), VIT_OK);
    char names[256][48];
    int n = contract_names(names, 256, &small);
    CU_ASSERT_EQUAL(n, TRACE_STAGES(small.depth));
    CU_ASSERT_EQUAL(trace.count, n);
    for (int i = 0; i < n && i < trace.count; i++) {
        const StTensor *e = &trace.tensors[i];
        CU_ASSERT_STRING_EQUAL(e->name, names[i]);
        CU_ASSERT_PTR_NOT_NULL(vit_stage_find(e->name, NULL));
        CU_ASSERT_EQUAL(e->dtype, ST_F32);
        int shape[4], ndim = vit_stage_shape(&small, B, e->name, shape);
        CU_ASSERT_EQUAL(e->ndim, ndim);
        for (int k = 0; k < ndim && k < e->ndim; k++) CU_ASSERT_EQUAL(e->shape[k], shape[k]);
        // the values of the in-process pass, the logits above all
        Tensor got;
        const Tensor *want = trace_find(&rec, e->name);
        CU_ASSERT_PTR_NOT_NULL(want);
        if (want && st_read_tensor(&trace, e->name, &got, &err) == VIT_OK) {
            assert_tensor_close(&got, want, CHECK_ATOL, CHECK_RTOL, e->name);
            tensor_free(&got);
        }
    }
    CU_ASSERT_STRING_EQUAL(trace.tensors[trace.count - 1].name, "logits");
    // the configuration travels with the trace
    const char *meta[][2] = {{"dim", "64"}, {"depth", "2"}, {"num_heads", "4"}, {"mlp_dim", "256"},
                             {"image_size", "32"}, {"patch_size", "8"}, {"num_classes", "10"},
                             {"batch", "2"}, {"weights", w}};
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        const char *v = st_meta(&trace, meta[i][0]);
        CU_ASSERT_PTR_NOT_NULL(v);
        if (v) CU_ASSERT_STRING_EQUAL(v, meta[i][1]);
    }
    st_close(&trace);
    trace_recorder_free(&rec);
    tensor_free(&input);
    st_close(&in);
    vit_free(&vit);
    // nothing but the three files
    CU_ASSERT_EQUAL(scratch_count(&dir), 3);
    scratch_remove(&dir);
}

// Same seed → the same bytes, whatever the threads; another seed → other bytes;
// and the bytes are those of vit_build_random() with timm's init and that seed.
static void test_make_weights_is_deterministic(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char a[PATH_SIZE], b[PATH_SIZE], c[PATH_SIZE], lib[PATH_SIZE];
    scratch_file(&dir, "a.safetensors", a, sizeof a);
    scratch_file(&dir, "b.safetensors", b, sizeof b);
    scratch_file(&dir, "c.safetensors", c, sizeof c);
    scratch_file(&dir, "lib.safetensors", lib, sizeof lib);
    CU_ASSERT_EQUAL_FATAL(make_small(a, "7", "1"), 0);
    CU_ASSERT_EQUAL_FATAL(make_small(b, "7", "2"), 0);
    CU_ASSERT_EQUAL_FATAL(make_small(c, "8", "1"), 0);
    CU_ASSERT_TRUE(same_bytes(a, b));
    CU_ASSERT_FALSE(same_bytes(a, c));

    Vit vit;
    VitError err;
    VitInit init = vit_init_timm(7);
    init.bias_std = 0.02f, init.norm_std = 0.1f;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &small, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit_save(&vit, lib, &err), VIT_OK);
    vit_free(&vit);
    CU_ASSERT_TRUE(same_bytes(a, lib));
    scratch_remove(&dir);
}

// Sizes given on top of --arch override it; without --arch, ViT-B/16's other sizes.
static void test_make_weights_sizes_and_presets(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], out_flag[PATH_SIZE + 8];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    snprintf(out_flag, sizeof out_flag, "--out=%s", w);
    struct {
        const char *const args[20];
        VitConfig want;
    } cases[] = {
        {{"make-weights", "--arch", "vit-tiny", "--depth", "1", "--img", "32", "--classes", "3",
          "--seed", "1", "--out", w, NULL},
         {.image_size = 32, .patch_size = 16, .channels = 3, .dim = 192, .depth = 1, .heads = 3,
          .mlp_dim = 768, .num_classes = 3}},
        {{"make-weights", "--dim", "32", "--depth", "1", "--heads", "2", "--img", "16", "--patch",
          "8", "--seed", "1", "--out", w, NULL}, // --mlp-dim follows --dim, classes default 1000
         {.image_size = 16, .patch_size = 8, .channels = 3, .dim = 32, .depth = 1, .heads = 2,
          .mlp_dim = 128, .num_classes = 1000}},
        {{"make-weights", "--dim=32", "--depth=1", "--heads=2", "--img=16", "--patch=8",
          "--mlp-dim=40", "--classes=5", "--seed=1", out_flag, NULL}, // the --flag=value form
         {.image_size = 16, .patch_size = 8, .channels = 3, .dim = 32, .depth = 1, .heads = 2,
          .mlp_dim = 40, .num_classes = 5}},
        {{"make-weights", "--dim", "32", "--depth", "1", "--heads", "2", "--img", "28", "--patch",
          "4", "--channels", "1", "--classes", "10", "--seed", "1", "--out", w, NULL}, // grey
         {.image_size = 28, .patch_size = 4, .channels = 1, .dim = 32, .depth = 1, .heads = 2,
          .mlp_dim = 128, .num_classes = 10}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CliResult r = cli_run(cases[i].args);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_STRING_EQUAL(r.err, "");
        cli_result_free(&r);
        Vit vit;
        VitError err;
        CU_ASSERT_EQUAL_FATAL(vit_build(&vit, w, &err), VIT_OK);
        const VitConfig *got = &vit.config, *want = &cases[i].want;
        CU_ASSERT_EQUAL(got->image_size, want->image_size);
        CU_ASSERT_EQUAL(got->patch_size, want->patch_size);
        CU_ASSERT_EQUAL(got->dim, want->dim);
        CU_ASSERT_EQUAL(got->depth, want->depth);
        CU_ASSERT_EQUAL(got->heads, want->heads);
        CU_ASSERT_EQUAL(got->mlp_dim, want->mlp_dim);
        CU_ASSERT_EQUAL(got->num_classes, want->num_classes);
        CU_ASSERT_EQUAL(got->channels, want->channels);
        CU_ASSERT_EQUAL(got->ln_eps, 1e-6f);
        vit_free(&vit);
    }
    scratch_remove(&dir);
}

// --channels 1: the patch projection reads one channel, (D, 1, p, p); the file
// is the library's vit_save() of the same model, byte for byte; info and the
// summary line say C 1; a channel count the model cannot have is refused.
static void test_make_weights_grey(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], lib[PATH_SIZE];
    scratch_file(&dir, "grey.safetensors", w, sizeof w);
    scratch_file(&dir, "lib.safetensors", lib, sizeof lib);
    CliResult r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img",
                          "28", "--patch", "4", "--channels", "1", "--classes", "10", "--seed", "1",
                          "--out", w);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "  S 28, p 4, C 1, D 64, L 2, H 4, M 256, Y 10\n"));
    cli_result_free(&r);
    const VitConfig grey = {.image_size = 28, .patch_size = 4, .channels = 1, .dim = 64,
                            .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                            .ln_eps = 1e-6f};
    Vit vit;
    VitError err;
    VitInit init = vit_init_timm(1);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &grey, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_save(&vit, lib, &err), VIT_OK);
    vit_free(&vit);
    CU_ASSERT(same_bytes(w, lib));
    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, w, &err), VIT_OK);
    const StTensor *e = st_find(&st, "patch_embed.proj.weight");
    CU_ASSERT_TRUE(e && e->ndim == 4 && e->shape[0] == 64 && e->shape[1] == 1 &&
                   e->shape[2] == 4 && e->shape[3] == 4);
    st_close(&st);
    r = VIT_RUN("info", "--weights", w);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(info_row(r.out, "channels", "C"), 1);
    cli_result_free(&r);
    r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--channels", "17",
                "--seed", "1", "--out", w);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--channels 17"));
    cli_result_free(&r);
    EXPECT_FAILURE(VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4",
                           "--channels", "0", "--seed", "1", "--out", w), 2, "--channels");
    scratch_remove(&dir);
}

static void test_info_reports_the_configuration(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    CU_ASSERT_EQUAL_FATAL(make_small(w, "3", "1"), 0);
    CliResult r = VIT_RUN("info", "--weights", w);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, w));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "timm"));
    CU_ASSERT_EQUAL(info_row(r.out, "image size", "S"), 32);
    CU_ASSERT_EQUAL(info_row(r.out, "patch size", "p"), 8);
    CU_ASSERT_EQUAL(info_row(r.out, "channels", "C"), 3);
    CU_ASSERT_EQUAL(info_row(r.out, "width", "D"), 64);
    CU_ASSERT_EQUAL(info_row(r.out, "heads", "H"), 4);
    CU_ASSERT_EQUAL(info_row(r.out, "head width", "Dh"), 16);
    CU_ASSERT_EQUAL(info_row(r.out, "MLP width", "M"), 256);
    CU_ASSERT_EQUAL(info_row(r.out, "classes", "Y"), 10);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "1e-06"));
    // 114,250 parameters: written out by hand from the shapes, with separators
    CU_ASSERT_EQUAL(vit_param_count(&small), 114250);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "114,250"));
    // every parameter's row, and the tally
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n  blocks.1.mlp.fc2.bias "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n  cls_token "));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.out, "32 parameters: 32 used in place, 0 converted or copied, 0 zeros"));
    cli_result_free(&r);
    scratch_remove(&dir);
}

// Idle OpenMP threads sleep in every program (lib sets OMP_WAIT_POLICY=passive
// and starts the program again before main()), unless a policy is set by hand;
// `vit info` says which.
static void test_info_says_how_threads_wait(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    CU_ASSERT_EQUAL_FATAL(make_small(w, "3", "1"), 0);
    const char *policy = getenv("OMP_WAIT_POLICY");
    char kept[64];
    snprintf(kept, sizeof kept, "%s", policy ? policy : "");
    unsetenv("OMP_WAIT_POLICY"); // the child starts as a user's shell would start it
    CliResult r = VIT_RUN("info", "--weights", w);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "waiting threads sleep (OMP_WAIT_POLICY=passive)"));
    cli_result_free(&r);
    setenv("OMP_WAIT_POLICY", "active", 1); // set by hand: kept
    r = VIT_RUN("info", "--weights", w);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "waiting threads spin (OMP_WAIT_POLICY=active)"));
    cli_result_free(&r);
    if (kept[0]) setenv("OMP_WAIT_POLICY", kept, 1);
    else unsetenv("OMP_WAIT_POLICY");
    scratch_remove(&dir);
}

// A checkpoint with one tensor in BF16 and one bias missing: info says so.
static void test_info_shows_conversions_and_zeros(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], edited[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "edited.safetensors", edited, sizeof edited);
    CU_ASSERT_EQUAL_FATAL(make_small(w, "3", "1"), 0);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, w, &err), VIT_OK);
    Tensor *copies = calloc((size_t)st.count, sizeof *copies);
    StWriter out = {0};
    for (int i = 0; i < st.count; i++) {
        const char *name = st.tensors[i].name;
        if (!strcmp(name, "head.bias")) continue;
        CU_ASSERT_EQUAL(st_read_tensor(&st, name, &copies[i], &err), VIT_OK);
        st_writer_add_as(&out, name, &copies[i], !strcmp(name, "norm.weight") ? ST_BF16 : ST_F32);
    }
    st_writer_meta(&out, "num_heads", "4");
    CU_ASSERT_EQUAL(st_writer_save(&out, edited, &err), VIT_OK);
    st_writer_free(&out);
    for (int i = 0; i < st.count; i++) tensor_free(&copies[i]);
    free(copies);
    st_close(&st);

    CliResult r = VIT_RUN("info", "--weights", edited);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "converted from BF16"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "zeros (missing bias)"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.out, "32 parameters: 30 used in place, 1 converted or copied, 1 zeros"));
    // no layer_norm_eps in the metadata this time: the convention's default, and said so
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "not in the file"));
    cli_result_free(&r);
    scratch_remove(&dir);
}

/* ----------------------------------------------------------------- errors */

static void test_missing_weights_file(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "missing.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    write_tensor_file(x, "input", 4, (const int[]){1, 3, 32, 32});
    snprintf(msg, sizeof msg, "vit: %s: cannot open: No such file or directory", w);
    expect_error(VIT_RUN("info", "--weights", w), 1, msg);
    expect_error(VIT_RUN("trace", "--weights", w, "--input", x, "--out", t), 1, msg);
    CU_ASSERT_FALSE(file_exists(t));
    scratch_remove(&dir);
}

static void test_bad_input_files(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    CU_ASSERT_EQUAL_FATAL(make_small(w, "1", "1"), 0);

    // the batch under another name
    write_tensor_file(x, "pixels", 4, (const int[]){1, 3, 32, 32});
    snprintf(msg, sizeof msg, "vit: %s: no tensor named 'input' (the file has 'pixels'); --input "
             "needs the images as 'input', shape (B, 3, 32, 32)", x);
    expect_error(VIT_RUN("trace", "--weights", w, "--input", x, "--out", t), 1, msg);

    // images of the wrong size, and a single image without its batch axis
    write_tensor_file(x, "input", 4, (const int[]){1, 3, 16, 16});
    snprintf(msg, sizeof msg, "vit: %s: tensor 'input' has shape (1, 3, 16, 16), but the model "
             "in %s expects (B, 3, 32, 32)", x, w);
    expect_error(VIT_RUN("trace", "--weights", w, "--input", x, "--out", t), 1, msg);
    write_tensor_file(x, "input", 3, (const int[]){3, 32, 32});
    snprintf(msg, sizeof msg, "vit: %s: tensor 'input' has shape (3, 32, 32), but the model "
             "in %s expects (B, 3, 32, 32)", x, w);
    expect_error(VIT_RUN("trace", "--weights", w, "--input", x, "--out", t), 1, msg);

    // the weights given as input, and the input given as weights
    snprintf(msg, sizeof msg, "vit: %s: no tensor named 'input'", w);
    expect_error_prefix(VIT_RUN("trace", "--weights", w, "--input", w, "--out", t), 1, msg);
    snprintf(msg, sizeof msg, "vit: %s: not a ViT checkpoint I recognise", x);
    expect_error_prefix(VIT_RUN("info", "--weights", x), 1, msg);

    // no trace was written, not even in part
    CU_ASSERT_FALSE(file_exists(t));
    CU_ASSERT_EQUAL(scratch_count(&dir), 2);
    scratch_remove(&dir);
}

static void test_usage_errors(void) {
    expect_error(VIT_RUN("frobnicate"), 2, "vit: unknown command 'frobnicate' (try 'vit --help')");
    expect_error(VIT_RUN("trace", "--wieghts", "w.safetensors"), 2,
                 "vit: unknown option '--wieghts' for 'vit trace' (see 'vit trace --help')");
    expect_error(VIT_RUN("info"), 2, "vit: 'vit info' needs --weights FILE (see 'vit info --help')");
    expect_error(VIT_RUN("info", "--weights"), 2, "vit: --weights needs a value (FILE)");
    expect_error(VIT_RUN("trace", "--weights", "--input", "x"), 2,
                 "vit: --weights needs a value (FILE)");
    expect_error(VIT_RUN("info", "--weights", "a", "b"), 2,
                 "vit: unexpected argument 'b' for 'vit info' (see 'vit info --help')");
    expect_error(VIT_RUN("help", "frobnicate"), 2,
                 "vit: unknown command 'frobnicate' (try 'vit --help')");
    expect_error(VIT_RUN("make-weights", "--arch", "vit-huge", "--seed", "1", "--out", "w"), 2,
                 "vit: --arch: unknown architecture 'vit-huge' (known: vit-base, vit-small, "
                 "vit-tiny)");
    expect_error(VIT_RUN("make-weights", "--dim", "64", "--heads", "4", "--seed", "1", "--out", "w"),
                 2, "vit: 'vit make-weights' needs --arch, or --dim, --depth and --heads (--depth "
                 "is missing; see 'vit make-weights --help')");
    expect_error(VIT_RUN("make-weights", "--arch", "vit-tiny", "--out", "w"), 2,
                 "vit: 'vit make-weights' needs --seed N (see 'vit make-weights --help')");
}

static void test_malformed_numbers(void) {
    expect_error(VIT_RUN("trace", "--weights", "w", "--input", "x", "--out", "t", "--threads", "abc"),
                 2, "vit: --threads: 'abc' is not an integer");
    expect_error(VIT_RUN("trace", "--threads", "-1", "--weights", "w", "--input", "x", "--out", "t"),
                 2, "vit: --threads: -1 is out of range [0, 4096]");
    expect_error(VIT_RUN("make-weights", "--arch", "vit-tiny", "--dim", "0", "--seed", "1",
                         "--out", "w"),
                 2, "vit: --dim: 0 is out of range [1, 1073741824]");
    expect_error(VIT_RUN("make-weights", "--arch", "vit-tiny", "--seed", "1.5", "--out", "w"), 2,
                 "vit: --seed: '1.5' is not an integer");
    // too large for any integer type: quoted as typed, not as the clamped value
    expect_error(VIT_RUN("classify", "--weights", "w", "--top", "99999999999999999999", "x.png"), 2,
                 "vit: --top: 99999999999999999999 is out of range [1, 1000000]");
    expect_error(VIT_RUN("make-weights", "--arch", "vit-tiny", "--seed", "1", "--std", "big",
                         "--out", "w"),
                 2, "vit: --std: 'big' is not a finite number");
    expect_error(VIT_RUN("make-weights", "--arch", "vit-tiny", "--seed", "1", "--bias-std=-0.1",
                         "--out", "w"),
                 2, "vit: --bias-std: -0.1 is out of range [0, 10]");
}

// BUILD/chapters/NAME, beside the vit program of this runner.
static char *chapter_program(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s", cli_program()); // BUILD/tests/../vit
    char *slash = strrchr(buf, '/');
    const size_t at = slash ? (size_t)(slash - buf) + 1 : 0;
    snprintf(buf + at, size - at, "chapters/%s", name);
    return buf;
}

// A chapter program refusing its arguments: exit 2, nothing on stdout (the
// chapter never started), one line on stderr holding `expected`.
static void expect_chapter_refuses(const char *program, const char *const *args,
                                   const char *expected) {
    CliResult r = cli_run_program(program, args);
    const size_t len = strlen(r.err);
    const bool one_line = len > 0 && strchr(r.err, '\n') == r.err + len - 1;
    if (r.status != 2 || !one_line || !strstr(r.err, expected) || r.out[0])
        fprintf(stderr, "\n    %s %s: expected exit 2 and \"%s\", got exit %d, stderr \"%s\"\n",
                program, args[0], expected, r.status, r.err);
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_TRUE(one_line);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, expected));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    cli_result_free(&r);
}

// The chapters whose experiments can be varied list their knobs in --help with
// the defaults the book prints; a bad value is named and nothing runs.
static void test_chapter_knobs(void) {
    char ch11[PATH_SIZE], ch12[PATH_SIZE], ch13[PATH_SIZE], ch14[PATH_SIZE];
    chapter_program(ch11, sizeof ch11, "11_training");
    chapter_program(ch13, sizeof ch13, "13_attention_at_scale");
    chapter_program(ch12, sizeof ch12, "12_attention_maps");
    chapter_program(ch14, sizeof ch14, "14_making_it_fast");
    const struct {
        const char *program, *knob;
    } listed[] = {{ch11, "--seed         every run's weights and shuffles (default 11;"},
                  {ch11, "(default 192; 192 to 1536, a multiple of 192)"},
                  {ch12, "--images       the first test images the maps are measured on (default 200;"},
                  {ch12, "--draws"}, {ch12, "--seed"},
                  {ch13, "(default 100; 100 to 10000, a multiple of 100)"}, {ch13, "--seed"},
                  {ch14, "--rounds       timed rounds of every comparison, interleaved (default 5;"}};
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++) {
        CliResult r = cli_run_program(listed[i].program, (const char *const[]){"--help", NULL});
        CU_ASSERT_EQUAL(r.status, 0);
        if (!strstr(r.out, listed[i].knob))
            fprintf(stderr, "\n    %s --help does not say \"%s\":\n%s\n", listed[i].program,
                    listed[i].knob, r.out);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, listed[i].knob));
        cli_result_free(&r);
    }
    expect_chapter_refuses(ch12, (const char *const[]){"--images", "0", NULL},
                           "--images: 0 is out of range [1, 10000]");
    expect_chapter_refuses(ch12, (const char *const[]){"--draws=x", NULL},
                           "--draws: 'x' is not an integer");
    expect_chapter_refuses(ch12, (const char *const[]){"--seed", NULL}, "--seed needs a value");
    expect_chapter_refuses(ch12, (const char *const[]){"--frames", "3", NULL},
                           "unknown option '--frames' (try --help)");
    expect_chapter_refuses(ch13, (const char *const[]){"--images", "150", NULL},
                           "--images takes a multiple of 100, not 150");
    expect_chapter_refuses(ch11, (const char *const[]){"--steps", "200", NULL},
                           "--steps takes a multiple of 192, not 200");
    expect_chapter_refuses(ch14, (const char *const[]){"--rounds", "2", NULL},
                           "--rounds: 2 is out of range [3, 25]");
    expect_chapter_refuses(ch14, (const char *const[]){"fast", NULL},
                           "unknown argument 'fast' (try --help)");
}

// Each flag is a fine number, but together they make no ViT: bad input (1), nothing written.
static void test_configuration_that_cannot_be_built(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    CliResult r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "5", "--img",
                          "32", "--patch", "8", "--classes", "10", "--seed", "1", "--out", w);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not divisible"));
    expect_error_prefix(r, 1, "vit: cannot build a ViT with --dim 64 --depth 2 --heads 5 "
                              "--mlp-dim 256 --img 32 --patch 8 --channels 3 --classes 10: ");
    r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img", "30",
                "--patch", "8", "--seed", "1", "--out", w);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not a multiple of patch size 8"));
    expect_error_prefix(r, 1, "vit: cannot build a ViT with --dim 64 --depth 2 --heads 4 "
                              "--mlp-dim 256 --img 30 --patch 8 ");
    // terabytes of parameters: refused before anything is allocated
    r = VIT_RUN("make-weights", "--dim", "16384", "--depth", "256", "--heads", "256", "--mlp-dim",
                "65536", "--seed", "1", "--out", w);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "824,720,507,880 parameters would need 3.3 TB of memory"));
    expect_error_prefix(r, 1, "vit: a ViT with --dim 16384 --depth 256 ");
    CU_ASSERT_EQUAL(scratch_count(&dir), 0);
    scratch_remove(&dir);
}

// An output that cannot be written: bad input (1), the path named, no stray temporary file.
static void test_unwritable_output(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE], sub[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "no/such/dir/out.safetensors", t, sizeof t);
    snprintf(msg, sizeof msg, "vit: %s: cannot write: No such file or directory", t);
    expect_error(VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img",
                         "32", "--patch", "8", "--classes", "10", "--seed", "1", "--out", t),
                 1, msg);
    CU_ASSERT_EQUAL(scratch_count(&dir), 0);

    CU_ASSERT_EQUAL_FATAL(make_small(w, "1", "1"), 0);
    write_tensor_file(x, "input", 4, (const int[]){1, 3, 32, 32});
    expect_error(VIT_RUN("trace", "--weights", w, "--input", x, "--out", t), 1, msg);
    CU_ASSERT_EQUAL(scratch_count(&dir), 2);

    // the output is an existing directory: the temporary file is written, then removed
    scratch_file(&dir, "sub", sub, sizeof sub);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0755), 0);
    snprintf(msg, sizeof msg, "vit: %s: ", sub);
    expect_error_prefix(VIT_RUN("trace", "--weights", w, "--input", x, "--out", sub), 1, msg);
    expect_error_prefix(VIT_RUN("make-weights", "--arch", "vit-tiny", "--depth", "1", "--img", "32",
                                "--seed", "1", "--out", sub),
                        1, msg);
    CU_ASSERT_EQUAL(scratch_count(&dir), 3); // w, x and sub: no sub.tmpXXXXXX
    scratch_remove(&dir);
}

CU_TestInfo tests_cli[] = {
    {"help_for_every_command", test_help_for_every_command},
    {"trace_holds_the_contract", test_trace_holds_the_contract},
    {"trace and classify take --precision", test_trace_and_classify_take_precision},
    {"info_says_how_threads_wait", test_info_says_how_threads_wait},
    {"make_weights_is_deterministic", test_make_weights_is_deterministic},
    {"make_weights_sizes_and_presets", test_make_weights_sizes_and_presets},
    {"make_weights_grey", test_make_weights_grey},
    {"info_reports_the_configuration", test_info_reports_the_configuration},
    {"info_shows_conversions_and_zeros", test_info_shows_conversions_and_zeros},
    {"missing_weights_file", test_missing_weights_file},
    {"bad_input_files", test_bad_input_files},
    {"usage_errors", test_usage_errors},
    {"malformed_numbers", test_malformed_numbers},
    {"configuration_that_cannot_be_built", test_configuration_that_cannot_be_built},
    {"unwritable_output", test_unwritable_output},
    {"chapter programs take their knobs", test_chapter_knobs},
    CU_TEST_INFO_NULL,
};
