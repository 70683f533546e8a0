/**
 * @file test_diff.c
 * @brief Trace comparison (lib/explain/tracediff.h) and `vit diff`, run for real.
 *
 * The library is tested on hand-made traces, whose every value is known: a
 * difference planted at a chosen stage and index must be found there, with
 * both values; NaN, infinities and the edges of the tolerance behave as the
 * formula says; traces that cannot be compared are refused with the reason.
 * Then on a real forward pass, in-process, with one weight changed. The
 * program is tested as test_cli.c tests the others: `vit trace` on a small
 * model (D 64, L 2, H 4, 32×32 images in 8×8 patches, 10 classes, so N = 17),
 * then `vit diff` on what it wrote, its output, its one-line messages and
 * its exit status.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli_run.h"
#include "base/rng.h"
#include "io/safetensors.h"
#include "model/trace_stages.h"
#include "explain/tracediff.h"
#include "model/vit.h"

enum { PATH_SIZE = 256, MSG_SIZE = 8 * PATH_SIZE }; // a message names up to six paths

/* -------------------------------------------------------- hand-made traces */

/** A small trace of made-up values under contract names: B images, H heads, N = 5, D = 8. */
static void make_trace(TraceRecorder *r, int B, int H) {
    const struct {
        const char *name;
        int ndim, shape[4];
    } stages[] = {
        {"input", 4, {B, 3, 4, 4}},        {"patch_embed", 3, {B, 4, 8}},
        {"tokens", 3, {B, 5, 8}},          {"embed", 3, {B, 5, 8}},
        {"blocks.0.attn.probs", 4, {B, H, 5, 5}}, {"logits", 2, {B, 3}},
    };
    memset(r, 0, sizeof *r);
    for (size_t s = 0; s < sizeof stages / sizeof stages[0]; s++) {
        Tensor t = tensor_new_shape(stages[s].ndim, stages[s].shape);
        for (size_t i = 0; i < t.numel; i++) t.data[i] = sinf(0.37f * (float)i + 0.11f * (float)s);
        trace_record(r, stages[s].name, &t);
        tensor_free(&t);
    }
}

// The recorded tensor called `name`, to plant a difference in it.
static float *stage_data(TraceRecorder *r, const char *name) {
    const Tensor *t = trace_find(r, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t->data;
}

// A recorder holding one stage `name` of shape (n) with the given values.
static void one_stage(TraceRecorder *r, const char *name, const float *values, int n) {
    memset(r, 0, sizeof *r);
    Tensor t = tensor_from(values, 1, (const int[]){n});
    trace_record(r, name, &t);
    tensor_free(&t);
}

// Compare two recorders as "mine" against "ref"; the status, and the message in `err`.
static VitStatus compare(TraceDiff *d, const TraceRecorder *mine, const TraceRecorder *ref,
                         float atol, float rtol, VitError *err) {
    TraceView a = trace_view(mine, "mine"), b = trace_view(ref, "ref");
    err->msg[0] = '\0';
    return tracediff_compare(d, &a, &b, atol, rtol, err);
}

// The message of a comparison that must be refused, checked in full.
static void expect_refused(const TraceRecorder *mine, const TraceRecorder *ref, const char *want) {
    TraceDiff d;
    VitError err;
    CU_ASSERT_EQUAL(compare(&d, mine, ref, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_ERR_INPUT);
    if (strcmp(err.msg, want) != 0)
        fprintf(stderr, "\n    expected \"%s\"\n    got      \"%s\"\n", want, err.msg);
    CU_ASSERT_STRING_EQUAL(err.msg, want);
}

/* ------------------------------------------------------------- the library */

static void test_identical_traces_agree(void) {
    TraceRecorder a, b;
    make_trace(&a, 1, 2);
    make_trace(&b, 1, 2);
    TraceDiff d;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(compare(&d, &a, &b, 0, 0, &err), VIT_OK); // even with no tolerance
    CU_ASSERT_EQUAL(d.stages, 6);
    CU_ASSERT_EQUAL(d.differ, 0);
    CU_ASSERT_EQUAL(d.max_abs, 0);
    CU_ASSERT_PTR_NULL(d.max_abs_stage);
    CU_ASSERT_STRING_EQUAL(d.last.name, "logits");
    char line[512];
    CU_ASSERT_STRING_EQUAL(tracediff_report(line, sizeof line, &d, "; "),
                           "no stage differs: all 6 stages within 0 + 0·|ref|");
    CU_ASSERT_STRING_EQUAL(tracediff_summary(line, sizeof line, &d),
                           "0 of 6 stages differ; the traces are identical");
    trace_recorder_free(&a);
    trace_recorder_free(&b);
}

// One element changed at a known stage and index: found there, with both values.
static void test_planted_difference_is_found(void) {
    TraceRecorder mine, ref;
    make_trace(&mine, 1, 2);
    make_trace(&ref, 1, 2);
    // [0, 1, 2, 3] of a (1, 2, 5, 5) tensor is flat ((0·2 + 1)·5 + 2)·5 + 3 = 38
    stage_data(&ref, "blocks.0.attn.probs")[38] = 0.25f;
    stage_data(&mine, "blocks.0.attn.probs")[38] = 0.75f;
    TraceDiff d;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(compare(&d, &mine, &ref, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    CU_ASSERT_STRING_EQUAL(d.first.name, "blocks.0.attn.probs");
    CU_ASSERT_EQUAL(d.first.index, 4);
    CU_ASSERT_EQUAL(d.first.bad, 1);
    CU_ASSERT_EQUAL(d.first.numel, 50);
    CU_ASSERT_EQUAL(d.first.worst, 38);
    const int at[4] = {0, 1, 2, 3};
    CU_ASSERT_EQUAL(memcmp(d.first.worst_at, at, sizeof at), 0);
    CU_ASSERT_EQUAL(d.first.a, 0.75f);
    CU_ASSERT_EQUAL(d.first.b, 0.25f);
    CU_ASSERT_EQUAL(d.first.max_abs, 0.5);
    char line[512];
    CU_ASSERT_STRING_EQUAL(tracediff_report(line, sizeof line, &d, "; "),
                           "first difference at blocks.0.attn.probs (1, 2, 5, 5): 1 of 50 elements "
                           "outside 0.0001 + 0.001·|ref|; worst at [0, 1, 2, 3]: 0.75 vs 0.25 in "
                           "the reference (max |diff| 0.5); the 4 stages before it agree; no later "
                           "stage differs");
    CU_ASSERT_STRING_EQUAL(tracediff_summary(line, sizeof line, &d),
                           "1 of 6 stages differ, the first blocks.0.attn.probs (stage 5 of 6); "
                           "the last, logits, agrees (max |diff| 0)");

    // a later stage too, and two elements of the first: the worst is the larger difference
    stage_data(&mine, "logits")[2] += 1.0f;
    stage_data(&mine, "blocks.0.attn.probs")[7] += 0.125f;
    CU_ASSERT_EQUAL_FATAL(compare(&d, &mine, &ref, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 2);
    CU_ASSERT_STRING_EQUAL(d.first.name, "blocks.0.attn.probs");
    CU_ASSERT_EQUAL(d.first.bad, 2);
    CU_ASSERT_EQUAL(d.first.worst, 38);
    CU_ASSERT_PTR_NOT_NULL(strstr(tracediff_report(line, sizeof line, &d, "\n  "),
                                  "2 of 50 elements outside"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "\n  the 4 stages before it agree\n  1 later stage "
                                        "differs too"));
    CU_ASSERT_STRING_EQUAL(tracediff_summary(line, sizeof line, &d),
                           "2 of 6 stages differ, the first blocks.0.attn.probs (stage 5 of 6); "
                           "the last, logits, differs too, by up to 1");
    // the very first stage
    stage_data(&mine, "input")[0] += 1.0f;
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(d.first.name, "input");
    CU_ASSERT_PTR_NOT_NULL(strstr(tracediff_report(line, sizeof line, &d, "; "),
                                  "; it is the first stage; 2 later stages differ too"));
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);
}

// NaN agrees only with NaN, an infinity only with the same one; they beat finite differences.
static void test_nan_and_infinities(void) {
    const float ref_v[6] = {1, NAN, INFINITY, INFINITY, 2, 5};
    const float mine_v[6] = {1, NAN, INFINITY, -INFINITY, NAN, 105};
    TraceRecorder mine, ref;
    one_stage(&mine, "logits", mine_v, 6);
    one_stage(&ref, "logits", ref_v, 6);
    TraceDiff d;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(compare(&d, &mine, &ref, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    CU_ASSERT_EQUAL(d.first.bad, 3);      // -inf vs inf, NaN vs 2, 105 vs 5
    CU_ASSERT_EQUAL(d.first.worst, 3);    // the first non-finite one, not the larger 100
    CU_ASSERT_EQUAL(d.first.finite, 2);
    CU_ASSERT_EQUAL(d.first.max_abs, 100);
    char line[512];
    CU_ASSERT_PTR_NOT_NULL(strstr(tracediff_report(line, sizeof line, &d, "; "),
                                  "3 of 6 elements outside 0.0001 + 0.001·|ref|; worst at [3]: "
                                  "-inf vs inf in the reference (max |diff| 100 where both are "
                                  "finite)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tracediff_summary(line, sizeof line, &d),
                                  "it is the last stage"));
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);

    // NaN against a number differs under any tolerance; NaN against NaN agrees under none
    one_stage(&mine, "logits", (const float[]){NAN, NAN}, 2);
    one_stage(&ref, "logits", (const float[]){0.5f, NAN}, 2);
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 1e30f, 1e30f, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    CU_ASSERT_EQUAL(d.first.bad, 1);
    CU_ASSERT_TRUE(isnan(d.first.a));
    CU_ASSERT_EQUAL(d.first.b, 0.5f);
    CU_ASSERT_PTR_NOT_NULL(strstr(tracediff_report(line, sizeof line, &d, "; "),
                                  "worst at [0]: NaN vs 0.5 in the reference (no element is finite "
                                  "on both sides)"));
    stage_data(&ref, "logits")[0] = NAN;
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 0, 0, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 0);
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);
}

// The edge of |a − b| ≤ atol + rtol·|b| belongs inside; |b| is the reference's alone.
static void test_tolerance_edges(void) {
    // b = 1, atol 0.25, rtol 0.5: the edge is |a − b| = 0.75, exact in binary
    const float edge = 1.75f, beyond = nextafterf(1.75f, 2.0f);
    TraceRecorder mine, ref;
    TraceDiff d;
    VitError err;
    one_stage(&ref, "logits", (const float[]){1, 1}, 2);
    one_stage(&mine, "logits", (const float[]){edge, 2 - 0.75f}, 2);
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 0.25f, 0.5f, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 0);
    CU_ASSERT_EQUAL(d.max_used, 1.0); // on the edge: all of the tolerance
    stage_data(&mine, "logits")[1] = beyond;
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 0.25f, 0.5f, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    CU_ASSERT_EQUAL(d.first.bad, 1);
    CU_ASSERT_EQUAL(d.first.worst, 1);
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);

    // not symmetric: 1 against 2 is inside rtol 0.5 (0.5·2 = 1), 2 against 1 is not
    one_stage(&mine, "logits", (const float[]){1}, 1);
    one_stage(&ref, "logits", (const float[]){2}, 1);
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 0, 0.5f, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 0);
    CU_ASSERT_EQUAL(d.max_rel, 0.5);
    CU_ASSERT_EQUAL(compare(&d, &ref, &mine, 0, 0.5f, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);

    // no tolerance at all: only equal values agree, and -0 equals +0
    one_stage(&mine, "logits", (const float[]){-0.0f, 3}, 2);
    one_stage(&ref, "logits", (const float[]){0.0f, 3}, 2);
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 0, 0, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 0);
    stage_data(&mine, "logits")[1] = nextafterf(3, 4);
    CU_ASSERT_EQUAL(compare(&d, &mine, &ref, 0, 0, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);

    // the largest differences of agreeing traces, and where they were
    TraceRecorder a, b;
    make_trace(&a, 1, 2);
    make_trace(&b, 1, 2);
    stage_data(&a, "embed")[3] += 2e-5f;
    CU_ASSERT_EQUAL(compare(&d, &a, &b, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 0);
    CU_ASSERT_STRING_EQUAL(d.max_abs_stage, "embed");
    CU_ASSERT_STRING_EQUAL(d.max_used_stage, "embed");
    CU_ASSERT(d.max_abs > 1.9e-5 && d.max_abs < 2.1e-5);
    char line[512];
    CU_ASSERT_EQUAL(strncmp(tracediff_summary(line, sizeof line, &d),
                            "0 of 6 stages differ; largest |diff| 2e-05 (embed)", 50), 0);
    trace_recorder_free(&a);
    trace_recorder_free(&b);
}

static void test_missing_stage_is_not_comparable(void) {
    TraceRecorder mine, ref;
    make_trace(&mine, 1, 2);
    make_trace(&ref, 1, 2);
    // the trace lacks the reference's last stage
    mine.count--;
    free(mine.entries[mine.count].name);
    tensor_free(&mine.entries[mine.count].t);
    expect_refused(&mine, &ref, "cannot compare mine with ref: different stages: ref has "
                                "'logits', mine does not (mine has 5 stages, ref 6)");
    // and the other way round: a stage the reference lacks (a deeper model, say)
    expect_refused(&ref, &mine, "cannot compare mine with ref: different stages: mine has "
                                "'logits', ref does not (mine has 6 stages, ref 5)");
    Tensor t = tensor_new(4, 1, 2, 5, 5);
    trace_record(&mine, "blocks.1.attn.probs", &t);
    trace_record(&mine, "logits", trace_find(&ref, "logits"));
    expect_refused(&mine, &ref, "cannot compare mine with ref: different stages: mine has "
                                "'blocks.1.attn.probs', ref does not (mine has 7 stages, ref 6)");
    // a stage recorded twice (two passes into one recorder)
    trace_recorder_free(&mine);
    make_trace(&mine, 1, 2);
    trace_record(&mine, "embed", &t);
    expect_refused(&mine, &ref, "cannot compare mine with ref: stage 'embed' appears twice in mine");
    tensor_free(&t);
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);
}

static void test_shape_mismatch_is_not_comparable(void) {
    TraceRecorder mine, ref;
    // another batch: the first stage already says so
    make_trace(&mine, 2, 2);
    make_trace(&ref, 1, 2);
    expect_refused(&mine, &ref, "cannot compare mine with ref: different shapes: input is "
                                "(2, 3, 4, 4) in mine but (1, 3, 4, 4) in ref, a different batch "
                                "B (2 vs 1)");
    trace_recorder_free(&mine);
    // another number of heads: only the attention differs
    make_trace(&mine, 1, 3);
    expect_refused(&mine, &ref, "cannot compare mine with ref: different shapes: "
                                "blocks.0.attn.probs is (1, 3, 5, 5) in mine but (1, 2, 5, 5) in "
                                "ref, a different number of heads H (3 vs 2)");
    trace_recorder_free(&mine);
    // the same sizes, another number of axes: no axis to blame
    make_trace(&mine, 1, 2);
    Tensor *logits = &mine.entries[5].t;
    logits->ndim = 1, logits->shape[0] = 3;
    expect_refused(&mine, &ref, "cannot compare mine with ref: different shapes: logits is (3) in "
                                "mine but (1, 3) in ref");
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);
}

// A real forward pass with one weight changed: the first stage that reads it differs first.
static void test_changed_weight_in_process(void) {
    const VitConfig small = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 64,
                             .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                             .ln_eps = 1e-6f};
    Vit vit;
    VitError err;
    VitInit init = vit_init_timm(3);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &small, &init, &err), VIT_OK);
    Tensor x = tensor_new(4, 2, 3, 32, 32);
    Rng rng;
    rng_seed(&rng, 5);
    rng_fill_uniform(&rng, x.data, x.numel, -1, 1);
    TraceRecorder ref = {0}, mine = {0};
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, trace_record, &ref, &err), VIT_OK);
    // W[0][0] of block 1's output projection (D, D): only output column 0 reads it
    VitParam params[64];
    CU_ASSERT_FATAL(vit_params(&vit, NULL) <= 64);
    const int n = vit_params(&vit, params);
    float *w = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(params[i].name, "blocks.1.attn.proj.weight")) w = (float *)params[i].data;
    CU_ASSERT_PTR_NOT_NULL_FATAL(w); // vit_build_random()'s own memory: ours to change
    w[0] += 1.0f;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, trace_record, &mine, &err), VIT_OK);
    TraceDiff d;
    CU_ASSERT_EQUAL_FATAL(compare(&d, &mine, &ref, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.stages, TRACE_STAGES(small.depth));
    CU_ASSERT_STRING_EQUAL(d.first.name, "blocks.1.attn.proj");
    CU_ASSERT_EQUAL(d.first.index, 4 + 15 + 8); // 4 before the blocks, block 0, 8 of block 1
    CU_ASSERT_EQUAL(d.first.numel, 2 * 17 * 64);
    CU_ASSERT_EQUAL(d.first.worst_at[2], 0);
    CU_ASSERT(d.first.bad > 0 && d.first.bad <= 2 * 17); // column 0 of each token's row
    // and everything after it: resid1, norm2, fc1, gelu, fc2, out, norm, pre_logits, logits
    CU_ASSERT_EQUAL(d.differ, 1 + 9);
    CU_ASSERT_STRING_EQUAL(d.last.name, "logits");
    CU_ASSERT(d.last.bad > 0);
    trace_recorder_free(&mine);
    trace_recorder_free(&ref);
    tensor_free(&x);
    vit_free(&vit);
}

/* ------------------------------------------------------------- trace files */

// A file written with F16 stages is converted on reading; weights are not a trace.
static void test_trace_files(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char path[PATH_SIZE], w[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "t.safetensors", path, sizeof path);
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    TraceRecorder rec;
    make_trace(&rec, 1, 2);
    StWriter out = {0};
    for (int i = 0; i < rec.count; i++)
        st_writer_add_as(&out, rec.entries[i].name, &rec.entries[i].t, i == 2 ? ST_F16 : ST_F32);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&out, path, &err), VIT_OK);
    st_writer_free(&out);

    TraceFile f;
    CU_ASSERT_EQUAL_FATAL(trace_file_open(&f, path, &err), VIT_OK);
    TraceView file = trace_file_view(&f), mem = trace_view(&rec, "memory");
    CU_ASSERT_STRING_EQUAL(file.label, path);
    CU_ASSERT_EQUAL(file.count, 6);
    for (int i = 0; i < file.count && i < rec.count; i++)
        CU_ASSERT_STRING_EQUAL(file.stages[i].name, rec.entries[i].name);
    TraceDiff d;
    CU_ASSERT_EQUAL(tracediff_compare(&d, &file, &mem, 1e-3f, 0, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 0); // F16 keeps 11 bits: within 1e-3 of values in [-1, 1]
    CU_ASSERT_EQUAL(tracediff_compare(&d, &file, &mem, 0, 0, &err), VIT_OK);
    CU_ASSERT_EQUAL(d.differ, 1);
    CU_ASSERT_STRING_EQUAL(d.first.name, "tokens"); // only the F16 one lost bits
    trace_file_close(&f);
    trace_file_close(&f); // twice is harmless

    // weights are not a trace: none of their names is a stage
    Tensor t = tensor_new(2, 3, 4);
    out = (StWriter){0};
    st_writer_add(&out, "cls_token", &t);
    st_writer_add(&out, "blocks.0.norm1.weight", &t);
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&out, w, &err), VIT_OK);
    st_writer_free(&out);
    tensor_free(&t);
    CU_ASSERT_EQUAL(trace_file_open(&f, w, &err), VIT_ERR_INPUT);
    snprintf(msg, sizeof msg, "%s: not a trace: none of its tensors is named like a stage of the "
             "forward pass ('input', 'blocks.0.attn.probs', 'logits', ...); 'vit trace' writes "
             "traces", w);
    CU_ASSERT_STRING_EQUAL(err.msg, msg);
    CU_ASSERT_EQUAL(f.count, 0);
    trace_file_close(&f);
    trace_recorder_free(&rec);
    scratch_remove(&dir);
}

/* ------------------------------------------------------------ the program */

static const char *const small_flags[] = {"--dim", "64", "--heads", "4", "--img", "32",
                                          "--patch", "8", "--classes", "10", "--bias-std",
                                          "0.02", "--norm-std", "0.1"};

// `vit make-weights` for the small model at the given depth; CU-asserts that it worked.
static void make_small(const char *out, const char *depth) {
    const char *args[32];
    int n = 0;
    args[n++] = "make-weights";
    for (size_t i = 0; i < sizeof small_flags / sizeof small_flags[0]; i++)
        args[n++] = small_flags[i];
    const char *rest[] = {"--depth", depth, "--seed", "7", "--out", out, NULL};
    for (int i = 0; rest[i]; i++) args[n++] = rest[i];
    args[n] = NULL;
    CliResult r = cli_run(args);
    if (r.status != 0) fprintf(stderr, "\n    make-weights failed (%d): %s", r.status, r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
}

// A batch of B images for the small model, named 'input', values in [-1, 1].
static void write_input(const char *path, int B) {
    Tensor t = tensor_new(4, B, 3, 32, 32);
    for (size_t i = 0; i < t.numel; i++) t.data[i] = sinf(0.37f * (float)i + 0.5f);
    StWriter w = {0};
    st_writer_add(&w, "input", &t);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    tensor_free(&t);
}

// `vit trace`; CU-asserts that it worked.
static void run_trace(const char *weights, const char *input, const char *out, const char *threads) {
    CliResult r = VIT_RUN("trace", "--weights", weights, "--input", input, "--out", out,
                          "--threads", threads);
    if (r.status != 0) fprintf(stderr, "\n    trace failed (%d): %s", r.status, r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
}

// A copy of the weights in `from` with `delta` added to element `at` of tensor `name`.
static void write_changed_weights(const char *from, const char *to, const char *name, size_t at,
                                  float delta) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, from, &err), VIT_OK);
    Tensor *copies = calloc((size_t)st.count, sizeof *copies);
    StWriter out = {0};
    bool changed = false;
    for (int i = 0; i < st.count; i++) {
        CU_ASSERT_EQUAL(st_read_tensor(&st, st.tensors[i].name, &copies[i], &err), VIT_OK);
        if (!strcmp(st.tensors[i].name, name) && at < copies[i].numel) {
            copies[i].data[at] += delta;
            changed = true;
        }
        st_writer_add(&out, st.tensors[i].name, &copies[i]);
    }
    for (int i = 0; i < st.meta_count; i++) st_writer_meta(&out, st.meta_keys[i], st.meta_values[i]);
    CU_ASSERT_TRUE(changed);
    CU_ASSERT_EQUAL(st_writer_save(&out, to, &err), VIT_OK);
    st_writer_free(&out);
    for (int i = 0; i < st.count; i++) tensor_free(&copies[i]);
    free(copies);
    st_close(&st);
}

// Two traces of the same weights and batch (with other thread counts) agree: exit 0.
static void test_cli_same_weights_agree(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t1[PATH_SIZE], t2[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t1.safetensors", t1, sizeof t1);
    scratch_file(&dir, "t2.safetensors", t2, sizeof t2);
    make_small(w, "2");
    write_input(x, 2);
    run_trace(w, x, t1, "1");
    run_trace(w, x, t2, "2");
    CliResult r = VIT_RUN("diff", t1, t2);
    if (r.status != 0) fprintf(stderr, "\n    diff: %d %s%s", r.status, r.out, r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_EQUAL(strncmp(r.out, "no stage differs: all 37 stages within 0.0001 + 0.001·|ref|\n"
                                   "summary: 0 of 37 stages differ",
                            strlen("no stage differs: all 37 stages within 0.0001 + 0.001·|ref|\n"
                                   "summary: 0 of 37 stages differ")), 0);
    cli_result_free(&r);
    // a trace agrees with itself under no tolerance at all
    r = VIT_RUN("diff", "--atol", "0", "--rtol=0", t1, t1);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "within 0 + 0·|ref|\nsummary: 0 of 37 stages differ; "
                                         "the traces are identical\n"));
    cli_result_free(&r);
    scratch_remove(&dir);
}

// One weight of block 1's MLP changed: the first difference is blocks.1.mlp.fc1, exit 1.
static void test_cli_changed_weight_differs_at_its_stage(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], w2[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE], t2[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "changed.safetensors", w2, sizeof w2);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    scratch_file(&dir, "t2.safetensors", t2, sizeof t2);
    make_small(w, "2");
    // fc1's weight is (M, D) = (256, 64): [5][3] feeds output feature 5 of every token
    write_changed_weights(w, w2, "blocks.1.mlp.fc1.weight", 5 * 64 + 3, 1.0f);
    write_input(x, 2);
    run_trace(w, x, t, "1");
    run_trace(w2, x, t2, "1");

    CliResult r = VIT_RUN("diff", t2, t);
    const char *head = "first difference at blocks.1.mlp.fc1 (2, 17, 256): ";
    if (r.status != 1) fprintf(stderr, "\n    diff: %d %s%s", r.status, r.out, r.err);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_EQUAL(strncmp(r.out, head, strlen(head)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, " of 8,704 elements outside 0.0001 + 0.001·|ref|\n"
                                         "  worst at ["));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, ", 5]: ")); // output feature 5
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n  the 30 stages before it agree\n"
                                         "  6 later stages differ too\n"
                                         "summary: 7 of 37 stages differ, the first "
                                         "blocks.1.mlp.fc1 (stage 31 of 37); the last, logits, "
                                         "differs too, by up to "));
    snprintf(msg, sizeof msg, "vit: %s differs from %s, first at blocks.1.mlp.fc1\n", t2, t);
    CU_ASSERT_STRING_EQUAL(r.err, msg);
    cli_result_free(&r);
    // a tolerance as large as the change hides it
    r = VIT_RUN("diff", t2, t, "--atol", "1000");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "no stage differs: all 37 stages within 1000 + "));
    cli_result_free(&r);
    scratch_remove(&dir);
}

// A tolerance is any finite number >= 0, however large: 1e30 (which a float
// holds as 1.0000000150e30, past a bound of 1e30) and 3.4e38 are taken;
// infinity, NaN, a number past the float range and a negative one are not.
static void test_cli_tolerance_range(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    make_small(w, "1");
    write_input(x, 1);
    run_trace(w, x, t, "1");
    const char *const taken[][3] = {
        {"--atol", "1e30", "within 1e+30 + 0.001·|ref|"},
        {"--rtol", "1e30", "within 0.0001 + 1e+30·|ref|"},
        {"--atol", "3.4e38", "within 3.4e+38 + "}, // the largest the parser takes
        {"--atol", "0", "within 0 + 0.001·|ref|"},
    };
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        CliResult r = VIT_RUN("diff", t, t, taken[i][0], taken[i][1]);
        if (r.status != 0) fprintf(stderr, "\n    %s %s: %d %s", taken[i][0], taken[i][1], r.status, r.err);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, taken[i][2]));
        cli_result_free(&r);
    }
    const char *const refused[] = {"inf", "-inf", "nan", "1e39", "3.41e38"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char msg[MSG_SIZE];
        snprintf(msg, sizeof msg, "vit: --atol: '%s' is not a finite number", refused[i]);
        EXPECT_FAILURE(VIT_RUN("diff", t, t, "--atol", refused[i]), 2, msg);
    }
    EXPECT_FAILURE(VIT_RUN("diff", t, t, "--rtol", "-1e-30"), 2,
                   "vit: --rtol: -1e-30 is out of range [0, 3.4e+38]");
    scratch_remove(&dir);
}

// Another batch, another depth: exit 2 with the reason, before any value is compared.
static void test_cli_not_comparable(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], w1[PATH_SIZE], x1[PATH_SIZE], x2[PATH_SIZE], msg[MSG_SIZE];
    char t1[PATH_SIZE], t2[PATH_SIZE], td[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "w1.safetensors", w1, sizeof w1);
    scratch_file(&dir, "x1.safetensors", x1, sizeof x1);
    scratch_file(&dir, "x2.safetensors", x2, sizeof x2);
    scratch_file(&dir, "t1.safetensors", t1, sizeof t1);
    scratch_file(&dir, "t2.safetensors", t2, sizeof t2);
    scratch_file(&dir, "depth1.safetensors", td, sizeof td);
    make_small(w, "2");
    make_small(w1, "1");
    write_input(x1, 1);
    write_input(x2, 2);
    run_trace(w, x1, t1, "1");
    run_trace(w, x2, t2, "1");
    run_trace(w1, x1, td, "1");
    snprintf(msg, sizeof msg, "vit: cannot compare %s with %s: different shapes: input is "
             "(1, 3, 32, 32) in %s but (2, 3, 32, 32) in %s, a different batch B (1 vs 2)",
             t1, t2, t1, t2);
    EXPECT_FAILURE(VIT_RUN("diff", t1, t2), 2, msg);
    snprintf(msg, sizeof msg, "vit: cannot compare %s with %s: different stages: %s has "
             "'blocks.1.norm1', %s does not (%s has 22 stages, %s 37)", td, t1, t1, td, td, t1);
    EXPECT_FAILURE(VIT_RUN("diff", td, t1), 2, msg);
    scratch_remove(&dir);
}

static void test_cli_bad_usage(void) {
    EXPECT_FAILURE(VIT_RUN("diff"), 2,
                   "vit: 'vit diff' needs two traces, TRACE and REFERENCE, got 0 (see 'vit diff "
                   "--help')");
    EXPECT_FAILURE(VIT_RUN("diff", "a.safetensors"), 2, "got 1 (see 'vit diff --help')");
    EXPECT_FAILURE(VIT_RUN("diff", "a", "b", "c"), 2,
                   "vit: unexpected argument 'c' for 'vit diff' (see 'vit diff --help')");
    EXPECT_FAILURE(VIT_RUN("diff", "a", "b", "--tol", "1"), 2,
                   "vit: unknown option '--tol' for 'vit diff' (see 'vit diff --help')");
    EXPECT_FAILURE(VIT_RUN("diff", "a", "b", "--atol", "abc"), 2,
                   "vit: --atol: 'abc' is not a finite number");
    EXPECT_FAILURE(VIT_RUN("diff", "a", "b", "--rtol", "-1"), 2,
                   "vit: --rtol: -1 is out of range [0, 3.4e+38]");
    EXPECT_FAILURE(VIT_RUN("diff", "a", "b", "--atol"), 2, "vit: --atol needs a value (ATOL)");
    // the help, and the command in the overview
    CliResult r = VIT_RUN("diff", "--help");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_EQUAL(strncmp(r.out, "vit diff: ", 10), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "usage: vit diff [--atol ATOL] [--rtol RTOL] TRACE "
                                         "REFERENCE\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nexamples:\n"));
    cli_result_free(&r);
    r = VIT_RUN("--help");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n  diff "));
    cli_result_free(&r);
}

// Files that are not traces, or not files: bad input, exit 1, the file named.
static void test_cli_bad_files(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], x[PATH_SIZE], t[PATH_SIZE], fifo[PATH_SIZE], none[PATH_SIZE];
    char msg[MSG_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    scratch_file(&dir, "fifo", fifo, sizeof fifo);
    scratch_file(&dir, "missing.safetensors", none, sizeof none);
    make_small(w, "1");
    write_input(x, 1);
    run_trace(w, x, t, "1");
    snprintf(msg, sizeof msg, "vit: %s: not a trace: none of its tensors is named like a stage", w);
    EXPECT_FAILURE(VIT_RUN("diff", w, t), 1, msg);
    snprintf(msg, sizeof msg, "vit: %s: cannot open: No such file or directory", none);
    EXPECT_FAILURE(VIT_RUN("diff", t, none), 1, msg);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0); // would hang a reader: refused at once
    snprintf(msg, sizeof msg, "vit: %s: is a FIFO (named pipe), not a safetensors file", fifo);
    EXPECT_FAILURE(VIT_RUN("diff", fifo, t), 1, msg);
    scratch_remove(&dir);
}

// A stage name from a file reaches the terminal escaped, in the report and in the verdict.
static void test_cli_escapes_names(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char a[PATH_SIZE], b[PATH_SIZE];
    scratch_file(&dir, "a.safetensors", a, sizeof a);
    scratch_file(&dir, "b.safetensors", b, sizeof b);
    const char *evil = "logits\x1b]0;pwned\x07\nsummary: all agree";
    for (int f = 0; f < 2; f++) {
        Tensor x = tensor_new(1, 4), y = tensor_new(1, 2);
        y.data[1] = (float)f;
        StWriter w = {0};
        st_writer_add(&w, "input", &x);
        st_writer_add(&w, evil, &y);
        VitError err;
        CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, f ? b : a, &err), VIT_OK);
        st_writer_free(&w);
        tensor_free(&x);
        tensor_free(&y);
    }
    CliResult r = VIT_RUN("diff", a, b);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "first difference at logits\\x1b]0;pwned\\x07\\nsummary: "
                                         "all agree (2): 1 of 2 elements"));
    CU_ASSERT_PTR_NULL(strchr(r.out, '\x1b'));
    CU_ASSERT_PTR_NULL(strchr(r.err, '\x1b'));
    CU_ASSERT_PTR_NULL(strchr(r.out, '\x07'));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "first at logits\\x1b]0;pwned\\x07\\nsummary"));
    CU_ASSERT_PTR_EQUAL(strchr(r.err, '\n'), r.err + strlen(r.err) - 1); // one line
    cli_result_free(&r);
    scratch_remove(&dir);
}

CU_TestInfo tests_diff[] = {
    {"identical_traces_agree", test_identical_traces_agree},
    {"planted_difference_is_found", test_planted_difference_is_found},
    {"nan_and_infinities", test_nan_and_infinities},
    {"tolerance_edges", test_tolerance_edges},
    {"missing_stage_is_not_comparable", test_missing_stage_is_not_comparable},
    {"shape_mismatch_is_not_comparable", test_shape_mismatch_is_not_comparable},
    {"changed_weight_in_process", test_changed_weight_in_process},
    {"trace_files", test_trace_files},
    {"cli_same_weights_agree", test_cli_same_weights_agree},
    {"cli_changed_weight_differs_at_its_stage", test_cli_changed_weight_differs_at_its_stage},
    {"cli_not_comparable", test_cli_not_comparable},
    {"cli_bad_usage", test_cli_bad_usage},
    {"cli_tolerance_range", test_cli_tolerance_range},
    {"cli_bad_files", test_cli_bad_files},
    {"cli_escapes_names", test_cli_escapes_names},
    CU_TEST_INFO_NULL,
};
