/**
 * @file test_train_run.c
 * @brief The training run's new outputs (lib/train/run.h, layer_stats.h):
 *        the layer log and its numbers, the film, a resume that continues
 *        both, and `vit train --watch` off a terminal.
 *
 * The layer groups' numbers are pinned twice: layer_stats.c against
 * PyTorch (tests/golden/train_layers.safetensors, tools/gen_golden_train.py:
 * one AdamW step of the suite vit_backward's small model, clipped), and the
 * layer log against a plain double loop over
 * files the run wrote anyway, not against layer_stats.c: a run of one step
 * without clipping keeps the weights before it (the film's epoch 0), the
 * weights after it (epoch 1) and, in its checkpoint, AdamW's first moment
 * m = (1 − β₁)·g, from which the gradient is g = m / (1 − β₁).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "io/safetensors.h"
#include "model/vit.h"
#include "train/layer_stats.h"
#include "train/optim.h"

enum { PATH_SIZE = 512 };

// a tiny model (N = 17, D 16, depth 2: five layer groups) on a few images
#define TINY "--patch", "7", "--dim", "16", "--depth", "2", "--heads", "2", "--mlp", "32", \
             "--batch", "32", "--test", "0"

static int count_lines(const char *s) {
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

// Tensor `name` of an open file as doubles (a float32 tensor), or NULL.
static double *tensor_doubles(SafeTensors *st, const char *name, size_t *n) {
    Tensor t;
    VitError err;
    if (st_read_tensor(st, name, &t, &err) != VIT_OK) return NULL;
    *n = t.numel;
    double *x = malloc(*n * sizeof *x);
    for (size_t i = 0; i < *n; i++) x[i] = t.data[i];
    tensor_free(&t);
    return x;
}

// The layer group of a parameter, written here from the names alone.
static int group_of(const char *name, int depth) {
    if (!strncmp(name, "patch_embed", 11) || !strcmp(name, "cls_token") || !strcmp(name, "pos_embed"))
        return 0;
    if (!strncmp(name, "blocks.", 7)) return 1 + atoi(name + 7);
    return !strncmp(name, "norm.", 5) ? depth + 1 : depth + 2;
}

/* ------------------------------------------------- against PyTorch */

// The run of tools/gen_golden_train.py's train_layers: its first AdamW step.
static const char *const LAYERS_GOLDEN = "train_layers.safetensors";
static const AdamWConfig golden_adamw = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                         .weight_decay = 0.05};
enum { GOLDEN_BATCH = 3, GOLDEN_GROUPS = 5 };

static void expect_meta(const char *file, const char *key, const char *want) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, golden_path(file), &err), VIT_OK);
    const char *got = st_meta(&st, key);
    if (!got || strcmp(got, want) != 0)
        fprintf(stderr, "\n    %s: %s is \"%s\", expected \"%s\"", file, key, got ? got : "-", want);
    CU_ASSERT_TRUE(got && strcmp(got, want) == 0);
    st_close(&st);
}

// The golden's model as one that owns its parameters (AdamW writes them).
static bool load_owned(Vit *vit, const char *file) {
    Vit from;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&from, golden_path(file), &err), VIT_OK);
    const VitInit init = vit_init_timm(1);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &from.config, &init, &err), VIT_OK);
    const int n = vit_params(&from, NULL);
    VitParam *src = calloc((size_t)n, sizeof *src), *dst = calloc((size_t)n, sizeof *dst);
    vit_params(&from, src);
    vit_params(vit, dst);
    for (int i = 0; i < n; i++) // the fresh model owns its buffers: writable
        memcpy((float *)dst[i].data, src[i].data, src[i].numel * sizeof(float));
    free(src), free(dst);
    vit_free(&from);
    return true;
}

// One clipped AdamW step, measured per group: PyTorch's numbers.
static void test_layer_stats_match_pytorch(void) {
    expect_meta(LAYERS_GOLDEN, "groups", "patch_embed blocks.0 blocks.1 norm head");
    expect_meta(LAYERS_GOLDEN, "lr", "0.0003");
    expect_meta(LAYERS_GOLDEN, "smoothing", "0.1");
    expect_meta(LAYERS_GOLDEN, "adamw", "beta1=0.9 beta2=0.999 eps=1e-08 weight_decay=0.05 max_norm=1");
    Vit vit;
    if (!load_owned(&vit, "train_vit_timm.safetensors")) return;
    CU_ASSERT_EQUAL_FATAL(vit.config.depth, 2);
    Tensor input = golden_tensor("train_batch.safetensors", "input");
    Tensor targets = golden_tensor("train_batch.safetensors", "targets");
    CU_ASSERT_EQUAL_FATAL(targets.numel, GOLDEN_BATCH);
    int labels[GOLDEN_BATCH];
    for (int i = 0; i < GOLDEN_BATCH; i++) labels[i] = (int)targets.data[i];
    VitGrads grads;
    AdamW opt;
    TrainLayerWatch watch;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_grads_init(&grads, &vit, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(adamw_init_vit(&opt, &vit, &grads.weights, &golden_adamw, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(train_layers_init(&watch, &opt, 2, &err), VIT_OK);
    CU_ASSERT_EQUAL(watch.groups, GOLDEN_GROUPS);

    train_layers_before(&watch, &opt);
    float loss;
    CU_ASSERT_EQUAL_FATAL(vit_forward_backward(&vit, &grads, &input, labels, 0.1f, &loss, NULL,
                                               NULL, &err), VIT_OK);
    const double norm = optim_clip_grad_norm(opt.params, opt.count, 1.0);
    CU_ASSERT(norm > 1.0); // clipped: the numbers before clipping are what is pinned
    adamw_step(&opt, 3e-4);
    TrainLayerStats got[GOLDEN_GROUPS];
    train_layers_after(&watch, &opt, norm, 1.0f, got);

    Tensor grad = golden_tensor(LAYERS_GOLDEN, "grad_norm");
    Tensor weight = golden_tensor(LAYERS_GOLDEN, "weight_norm");
    Tensor ratio = golden_tensor(LAYERS_GOLDEN, "update_ratio");
    CU_ASSERT_EQUAL_FATAL(grad.numel, GOLDEN_GROUPS);
    for (int g = 0; g < GOLDEN_GROUPS; g++) {
        const double rtol = 1e-4; // float32 against float64, as the AdamW run's goldens
        CU_ASSERT_DOUBLE_EQUAL(got[g].grad_norm, grad.data[g], rtol * grad.data[g]);
        CU_ASSERT_DOUBLE_EQUAL(got[g].weight_norm, weight.data[g], rtol * weight.data[g]);
        CU_ASSERT_DOUBLE_EQUAL(got[g].update_ratio, ratio.data[g], rtol * ratio.data[g]);
        if (golden_report_wanted())
            fprintf(stderr, "\n      group %d: grad %.7g (%.7g), weight %.7g (%.7g), ratio %.7g (%.7g)",
                    g, got[g].grad_norm, (double)grad.data[g], got[g].weight_norm,
                    (double)weight.data[g], got[g].update_ratio, (double)ratio.data[g]);
    }
    tensor_free(&grad), tensor_free(&weight), tensor_free(&ratio);
    tensor_free(&input), tensor_free(&targets);
    train_layers_free(&watch);
    adamw_free(&opt);
    vit_grads_free(&grads);
    vit_free(&vit);
}

/* ---------------------------------------------------- the layer numbers */

// One step, no clipping: each group's ‖g‖, ‖θ after‖, ‖Δθ‖/‖θ before‖ from
// the film's two frames and the checkpoint's first moment, against the log.
static void test_layer_numbers_of_one_step(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], layers[PATH_SIZE], ckpt[PATH_SIZE], before[PATH_SIZE], after[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "m.layers.csv", layers, sizeof layers);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    scratch_file(&d, "m.film/epoch-000.safetensors", before, sizeof before);
    scratch_file(&d, "m.film/epoch-001.safetensors", after, sizeof after);
    CliResult r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "32",
                          "--clip", "0", "--lr", "0.01", "--out", out);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);

    enum { DEPTH = 2, GROUPS = DEPTH + 3 };
    double g2[GROUPS] = {0}, w2[GROUPS] = {0}, d2[GROUPS] = {0}, b2[GROUPS] = {0};
    SafeTensors a, b, c;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&a, before, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&b, after, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&c, ckpt, &err), VIT_OK);
    for (int i = 0; i < b.count; i++) {
        const char *name = b.tensors[i].name;
        char m_name[160];
        snprintf(m_name, sizeof m_name, "optim.m.%s", name);
        size_t n0 = 0, n1 = 0, n2 = 0;
        double *was = tensor_doubles(&a, name, &n0), *now = tensor_doubles(&b, name, &n1);
        double *m = tensor_doubles(&c, m_name, &n2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(was);
        CU_ASSERT_PTR_NOT_NULL_FATAL(now);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_FATAL(n0 == n1 && n1 == n2);
        const int k = group_of(name, DEPTH);
        for (size_t j = 0; j < n1; j++) {
            const double g = m[j] / (double)(1.0f - 0.9f); // AdamW's first step: m = (1 − β₁) g
            g2[k] += g * g, w2[k] += now[j] * now[j];
            d2[k] += (now[j] - was[j]) * (now[j] - was[j]), b2[k] += was[j] * was[j];
        }
        free(was), free(now), free(m);
    }
    st_close(&a), st_close(&b), st_close(&c);

    char *csv = read_whole_file(layers, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_EQUAL(strncmp(csv, "epoch,step,layer,grad_norm,weight_norm,update_ratio\n", 52), 0);
    CU_ASSERT_EQUAL(count_lines(csv), 1 + GROUPS);
    static const char *const NAMES[GROUPS] = {"patch_embed", "blocks.0", "blocks.1", "norm", "head"};
    const char *row = strchr(csv, '\n') + 1;
    for (int k = 0; k < GROUPS && row && *row; k++) {
        int epoch, step;
        char name[32];
        double grad, weight, ratio;
        CU_ASSERT_EQUAL_FATAL(sscanf(row, "%d,%d,%31[^,],%lf,%lf,%lf", &epoch, &step, name,
                                     &grad, &weight, &ratio), 6);
        CU_ASSERT_EQUAL(epoch, 1);
        CU_ASSERT_EQUAL(step, 1);
        CU_ASSERT_STRING_EQUAL(name, NAMES[k]);
        // the log's %.6g: six digits
        CU_ASSERT_DOUBLE_EQUAL(grad, sqrt(g2[k]), 2e-5 * sqrt(g2[k]));
        CU_ASSERT_DOUBLE_EQUAL(weight, sqrt(w2[k]), 2e-5 * sqrt(w2[k]));
        CU_ASSERT_DOUBLE_EQUAL(ratio, sqrt(d2[k] / b2[k]), 2e-5 * sqrt(d2[k] / b2[k]));
        CU_ASSERT(grad > 0 && ratio > 0);
        row = strchr(row, '\n');
        if (row) row++;
    }
    free(csv);
    scratch_remove(&d);
}

/* ------------------------------------------------------------ the film */

static void test_film_keeps_0_powers_of_two_and_the_last(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], film[PATH_SIZE], frame[PATH_SIZE], layers[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "frames", film, sizeof film);
    scratch_file(&d, "m.layers.csv", layers, sizeof layers);
    CliResult r = VIT_RUN("train", TINY, "--epochs", "5", "--warmup", "1", "--limit", "64",
                          "--out", out, "--film", film);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    // epochs 0, 1, 2, 4 and the last, 5; not 3
    static const struct {
        int epoch;
        bool kept;
    } frames[] = {{0, true}, {1, true}, {2, true}, {3, false}, {4, true}, {5, true}};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "frames/epoch-%03d.safetensors", frames[i].epoch);
        scratch_file(&d, name, frame, sizeof frame);
        CU_ASSERT_EQUAL(file_exists(frame), frames[i].kept);
        if (!frames[i].kept) continue;
        Vit vit;
        VitError err;
        CU_ASSERT_EQUAL(vit_build(&vit, frame, &err), VIT_OK); // loads like any model
        vit_free(&vit);
        SafeTensors st;
        CU_ASSERT_EQUAL_FATAL(st_open(&st, frame, &err), VIT_OK);
        char want[16];
        snprintf(want, sizeof want, "%d", frames[i].epoch);
        const char *epoch = st_meta(&st, "train.epoch"), *epochs = st_meta(&st, "train.epochs");
        CU_ASSERT_STRING_EQUAL(epoch ? epoch : "", want);
        CU_ASSERT_STRING_EQUAL(epochs ? epochs : "", "5");
        CU_ASSERT_PTR_NOT_NULL(st_meta(&st, "class_names"));
        st_close(&st);
    }
    // the last frame is the model, bit for bit
    scratch_file(&d, "frames/epoch-005.safetensors", frame, sizeof frame);
    SafeTensors a, b;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&a, out, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&b, frame, &err), VIT_OK);
    CU_ASSERT_EQUAL(a.count, b.count);
    for (int i = 0; i < a.count; i++) {
        const StTensor *x = &a.tensors[i], *y = st_find(&b, x->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        CU_ASSERT_TRUE(x->end - x->begin == y->end - y->begin &&
                       memcmp(x->bytes, y->bytes, x->end - x->begin) == 0);
    }
    CU_ASSERT_PTR_NULL(st_meta(&a, "train.epoch")); // the model is no frame
    st_close(&a), st_close(&b);
    // the layer log: five groups a row each, for each of the 5 epochs
    char *csv = read_whole_file(layers, NULL);
    CU_ASSERT_EQUAL(count_lines(csv), 1 + 5 * 5);
    CU_ASSERT_TRUE(csv && strstr(csv, "\n5,10,head,") != NULL);
    free(csv);
    scratch_remove(&d);
}

// A film that is a file, not a folder, is refused before the first step;
// none turns the film and the layer log off.
static void test_film_refusal_and_none(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], film[PATH_SIZE], layers[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "a-file", film, sizeof film);
    write_text(film, "not a folder");
    CliResult r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "64",
                          "--out", out, "--film", film);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not a folder"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    CU_ASSERT_EQUAL(scratch_count(&d), 1); // the file alone
    cli_result_free(&r);
    // the layer log is one more output: never one of the others
    r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "64", "--out", out,
                "--layer-log", out);
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "one file"));
    cli_result_free(&r);
    r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "64", "--out", out,
                "--film", "none", "--layer-log", "none");
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    scratch_file(&d, "m.layers.csv", layers, sizeof layers);
    CU_ASSERT_FALSE(file_exists(layers));
    scratch_file(&d, "m.film", film, sizeof film);
    CU_ASSERT_FALSE(file_exists(film));
    scratch_remove(&d);
}

/* -------------------------------------------------------------- resume */

// Waits until the file holds @p needle (at most ten seconds).
static bool wait_for(const char *path, const char *needle) {
    for (int i = 0; i < 1000; i++) {
        char *s = read_whole_file(path, NULL);
        bool found = s && strstr(s, needle);
        free(s);
        if (found) return true;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

// A copy of the checkpoint at `from` without the entries whose keys start
// with `drop` (NULL: none), and with the entry `key` set to `value` (NULL:
// none): a checkpoint of vit train from before a log, or a damaged one.
static void copy_checkpoint(const char *from, const char *to, const char *drop, const char *key,
                            const char *value) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, from, &err), VIT_OK);
    StWriter w = {0};
    Tensor *t = calloc((size_t)st.count, sizeof *t);
    for (int i = 0; i < st.count; i++) {
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, st.tensors[i].name, &t[i], &err), VIT_OK);
        st_writer_add(&w, st.tensors[i].name, &t[i]);
    }
    for (int i = 0; i < st.meta_count; i++) {
        const char *k = st.meta_keys[i];
        if (drop && strncmp(k, drop, strlen(drop)) == 0) continue;
        st_writer_meta(&w, k, key && strcmp(k, key) == 0 ? value : st.meta_values[i]);
    }
    CU_ASSERT_EQUAL(st_writer_save(&w, to, &err), VIT_OK);
    st_writer_free(&w);
    for (int i = 0; i < st.count; i++) tensor_free(&t[i]);
    free(t);
    st_close(&st);
}

// The steps of a step log's rows: true when they are first, first + 1, …,
// last, each once, and each row ends with a newline.
static bool steps_in_turn(const char *csv, long first, long last) {
    const char *row = csv ? strchr(csv, '\n') : NULL; // after the header
    long want = first;
    for (row = row ? row + 1 : NULL; row && *row; want++) {
        const char *comma = strchr(row, ',');
        if (!comma || atol(comma + 1) != want) return false;
        row = strchr(row, '\n');
        row = row ? row + 1 : NULL;
    }
    return row && want == last + 1;
}

// Ctrl-C in the middle, --resume: the layer log and the step log go on as if
// never stopped, the layer log's epoch means over steps before and after the
// stop alike, the step log's rows each step once.
static void test_resume_continues_the_layer_log(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], whole[PATH_SIZE], ckpt[PATH_SIZE], a[PATH_SIZE], b[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "whole.safetensors", whole, sizeof whole);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    scratch_file(&d, "whole.layers.csv", a, sizeof a);
    scratch_file(&d, "m.layers.csv", b, sizeof b);
    char whole_steps[PATH_SIZE], steps[PATH_SIZE];
    scratch_file(&d, "whole.steps.csv", whole_steps, sizeof whole_steps);
    scratch_file(&d, "m.steps.csv", steps, sizeof steps);
#define RUN_FLAGS TINY, "--epochs", "6", "--warmup", "1", "--limit", "1920"
    CliResult r = VIT_RUN("train", RUN_FLAGS, "--out", whole);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    const char *const args[] = {"train", RUN_FLAGS, "--out", out, NULL};
    CliChild c;
    CU_ASSERT_FATAL(cli_start(&c, cli_program(), args));
    CU_ASSERT_TRUE(wait_for(c.out_path, "epoch 1/6: train loss"));
    kill(c.pid, SIGINT);
    r = cli_finish(&c);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "interrupted at step"));
    cli_result_free(&r);
    // a checkpoint from before the layer and step logs resumes too, those logs from empty
    char old[PATH_SIZE], old_out[PATH_SIZE], old_log[PATH_SIZE], old_steps[PATH_SIZE];
    scratch_file(&d, "old.ckpt", old, sizeof old);
    scratch_file(&d, "old.safetensors", old_out, sizeof old_out);
    scratch_file(&d, "old.layers.csv", old_log, sizeof old_log);
    scratch_file(&d, "old.steps.csv", old_steps, sizeof old_steps);
    char no_steps[PATH_SIZE];
    scratch_file(&d, "no-steps.ckpt", no_steps, sizeof no_steps);
    copy_checkpoint(ckpt, old, "train.layer_", NULL, NULL);
    copy_checkpoint(old, no_steps, "train.step_log", NULL, NULL);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, ckpt, &err), VIT_OK);
    const long stopped = atol(st_meta(&st, "train.step") ? st_meta(&st, "train.step") : "0");
    st_close(&st);
    CU_ASSERT(stopped >= 60 && stopped < 360);
    // the stop wrote the step log up to its step
    char *at_stop = read_whole_file(steps, NULL);
    CU_ASSERT_EQUAL(count_lines(at_stop), 1 + stopped);
    CU_ASSERT_TRUE(steps_in_turn(at_stop, 1, stopped));
    free(at_stop);
    r = VIT_RUN("train", RUN_FLAGS, "--out", old_out, "--resume", no_steps);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    char *old_rows = read_whole_file(old_log, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(old_rows);
    CU_ASSERT_EQUAL(count_lines(old_rows), 1 + 5 * (6 - (int)(stopped / 60)));
    CU_ASSERT_PTR_NULL(strstr(old_rows, "\n1,60,")); // epoch 1 was before the stop
    free(old_rows);
    old_rows = read_whole_file(old_steps, NULL); // the steps after the stop, each once
    CU_ASSERT_EQUAL(count_lines(old_rows), 1 + 360 - stopped);
    CU_ASSERT_TRUE(steps_in_turn(old_rows, stopped + 1, 360));
    free(old_rows);
    // the checkpoint of today, resumed
    r = VIT_RUN("train", RUN_FLAGS, "--out", out, "--resume", ckpt);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
#undef RUN_FLAGS
    char *whole_log = read_whole_file(a, NULL), *resumed_log = read_whole_file(b, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(whole_log);
    CU_ASSERT_PTR_NOT_NULL_FATAL(resumed_log);
    CU_ASSERT_EQUAL(count_lines(whole_log), 1 + 6 * 5);
    CU_ASSERT_STRING_EQUAL(resumed_log, whole_log);
    free(whole_log), free(resumed_log);
    // the step log: every step once, the uninterrupted run's rows exactly
    whole_log = read_whole_file(whole_steps, NULL), resumed_log = read_whole_file(steps, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(whole_log);
    CU_ASSERT_PTR_NOT_NULL_FATAL(resumed_log);
    CU_ASSERT_EQUAL(count_lines(resumed_log), 1 + 360);
    CU_ASSERT_TRUE(steps_in_turn(resumed_log, 1, 360));
    CU_ASSERT_STRING_EQUAL(resumed_log, whole_log);
    free(whole_log), free(resumed_log);
    scratch_remove(&d);
}

/* ------------------------------------------------------------ the step log */

// The fields of one CSV row (up to its newline) as numbers, an empty one NaN;
// returns how many there are (at most max kept).
static int csv_numbers(const char *row, double *out, int max) {
    int n = 0;
    for (const char *p = row;; n++) {
        char *end;
        const double v = strtod(p, &end);
        if (n < max) out[n] = end == p ? NAN : v;
        p = end + strcspn(end, ",\n");
        if (*p != ',') return n + 1;
        p++;
    }
}

// The learning rate of step k (from 0) of `total`, from the recipe's words:
// a straight line from 0 up to the peak over `warm` steps, then half a cosine
// down to min_lr at the last step.
static double recipe_lr(int k, int warm, int total, double peak, double min_lr) {
    if (k < warm) return peak * k / warm;
    const double progress = (double)(k - warm) / (total - 1 - warm);
    return min_lr + (peak - min_lr) * 0.5 * (1 + cos(acos(-1.0) * progress));
}

enum { STEP_GROUPS = 5, STEP_FIELDS = 6 + 3 * STEP_GROUPS, STEP_EPOCHS = 2, EPOCH_STEPS = 10 };
#define STEP_RUN TINY, "--epochs", "2", "--warmup", "1", "--limit", "320", "--lr", "0.001", \
                 "--min-lr", "0.0001"

// Each row of the step log checked by hand: its epoch and step, the
// schedule's rate, a loss and batch accuracy that can be, the global norm
// the root of the groups' squares; and the epochs' rows of the epoch log
// are the means of their steps'.
static void expect_step_rows(const char *csv, const char *epoch_log) {
    const char *row = strchr(csv, '\n') + 1;
    double sum_loss[STEP_EPOCHS] = {0}, sum_acc[STEP_EPOCHS] = {0};
    for (int i = 1; i <= STEP_EPOCHS * EPOCH_STEPS && row && *row; i++) {
        double x[STEP_FIELDS + 1];
        CU_ASSERT_EQUAL(csv_numbers(row, x, STEP_FIELDS + 1), STEP_FIELDS);
        const int epoch = (i - 1) / EPOCH_STEPS + 1;
        CU_ASSERT_EQUAL(x[0], epoch);
        CU_ASSERT_EQUAL(x[1], i);
        const double lr = recipe_lr(i - 1, EPOCH_STEPS, STEP_EPOCHS * EPOCH_STEPS, 1e-3, 1e-4);
        if (fabs(x[2] - lr) > 1e-5 * lr) fprintf(stderr, "\n    step %d: lr %g, not %g", i, x[2], lr);
        CU_ASSERT_TRUE(fabs(x[2] - lr) <= 1e-5 * lr);
        CU_ASSERT_TRUE(isfinite(x[3]) && x[3] > 0 && x[3] < 10); // ≈ ln 10 at the start
        CU_ASSERT_TRUE(x[4] >= 0 && x[4] <= 1 && x[4] * 32 == round(x[4] * 32)); // of 32 images
        double squares = 0;
        for (int g = 0; g < STEP_GROUPS; g++) {
            const double *grp = x + 6 + 3 * g; // grad_norm, weight_norm, update_ratio
            CU_ASSERT_TRUE(grp[0] >= 0 && grp[1] > 0 && grp[2] >= 0);
            squares += grp[0] * grp[0];
        }
        CU_ASSERT_TRUE(x[5] > 0 && fabs(sqrt(squares) - x[5]) <= 1e-4 * x[5]);
        sum_loss[epoch - 1] += x[3], sum_acc[epoch - 1] += x[4];
        row = strchr(row, '\n') + 1;
    }
    CU_ASSERT_TRUE(row && *row == '\0');
    const char *erow = strchr(epoch_log, '\n') + 1; // epoch,step,lr,train_loss,train_acc,…
    for (int e = 0; e < STEP_EPOCHS && erow && *erow; e++) {
        double x[9];
        CU_ASSERT_EQUAL(csv_numbers(erow, x, 9), 9);
        CU_ASSERT_DOUBLE_EQUAL(x[3], sum_loss[e] / EPOCH_STEPS, 1e-4);
        CU_ASSERT_DOUBLE_EQUAL(x[4], sum_acc[e] / EPOCH_STEPS, 1e-4);
        erow = strchr(erow, '\n') + 1;
    }
}

// A run of 2 epochs of 10 steps: the step log beside the model, a header and
// a row per step, the same rows the checkpoint keeps.
static void test_step_log_rows_follow_the_schedule(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], steps[PATH_SIZE], log[PATH_SIZE], ckpt[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "m.steps.csv", steps, sizeof steps);
    scratch_file(&d, "m.csv", log, sizeof log);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    CliResult r = VIT_RUN("train", STEP_RUN, "--out", out);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    char *csv = read_whole_file(steps, NULL), *epochs = read_whole_file(log, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(epochs);
    static const char HEADER[] =
        "epoch,step,lr,loss,batch_acc,grad_norm,"
        "patch_embed.grad_norm,patch_embed.weight_norm,patch_embed.update_ratio,"
        "blocks.0.grad_norm,blocks.0.weight_norm,blocks.0.update_ratio,"
        "blocks.1.grad_norm,blocks.1.weight_norm,blocks.1.update_ratio,"
        "norm.grad_norm,norm.weight_norm,norm.update_ratio,"
        "head.grad_norm,head.weight_norm,head.update_ratio\n";
    CU_ASSERT_EQUAL_FATAL(strncmp(csv, HEADER, strlen(HEADER)), 0);
    CU_ASSERT_EQUAL(count_lines(csv), 1 + STEP_EPOCHS * EPOCH_STEPS);
    expect_step_rows(csv, epochs);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, ckpt, &err), VIT_OK);
    const char *kept = st_meta(&st, "train.step_log");
    CU_ASSERT_STRING_EQUAL(kept ? kept : "", csv);
    st_close(&st);
    free(csv), free(epochs);
    scratch_remove(&d);
}

// Every tensor of two model files, byte for byte.
static bool same_tensors(const char *path_a, const char *path_b) {
    SafeTensors a, b;
    VitError err;
    if (st_open(&a, path_a, &err) != VIT_OK) return false;
    if (st_open(&b, path_b, &err) != VIT_OK) return st_close(&a), false;
    bool same = a.count == b.count && a.count > 0;
    for (int i = 0; i < a.count && same; i++) {
        const StTensor *x = &a.tensors[i], *y = st_find(&b, x->name);
        same = y && x->end - x->begin == y->end - y->begin &&
               memcmp(x->bytes, y->bytes, x->end - x->begin) == 0;
        if (!same) fprintf(stderr, "\n    %s differs", x->name);
    }
    st_close(&a), st_close(&b);
    return same;
}

// --step-log none writes no step log, and the weights are the same bits as
// with one; without a layer log the rows have the step's six columns alone.
static void test_step_log_none_same_weights(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char with[PATH_SIZE], without[PATH_SIZE], steps[PATH_SIZE], bare[PATH_SIZE];
    scratch_file(&d, "with.safetensors", with, sizeof with);
    scratch_file(&d, "without.safetensors", without, sizeof without);
    scratch_file(&d, "without.steps.csv", steps, sizeof steps);
    scratch_file(&d, "bare.safetensors", bare, sizeof bare);
    CliResult r = VIT_RUN("train", STEP_RUN, "--out", with);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    r = VIT_RUN("train", STEP_RUN, "--out", without, "--step-log", "none");
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    CU_ASSERT_FALSE(file_exists(steps));
    CU_ASSERT_TRUE(same_tensors(with, without));
    // no layer log: the columns of the step alone, a row per step
    r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "320", "--out", bare,
                "--layer-log", "none", "--film", "none");
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    scratch_file(&d, "bare.steps.csv", steps, sizeof steps);
    char *csv = read_whole_file(steps, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_EQUAL(strncmp(csv, "epoch,step,lr,loss,batch_acc,grad_norm\n", 39), 0);
    CU_ASSERT_EQUAL(count_lines(csv), 1 + EPOCH_STEPS);
    const char *last = strstr(csv, "\n1,10,");
    double x[8];
    CU_ASSERT_TRUE(last && csv_numbers(last + 1, x, 8) == 6);
    free(csv);
    scratch_remove(&d);
}

// A step log that cannot be written, or is another output, is refused before
// the first step with nothing written; a checkpoint whose step log misses a
// step is refused on --resume, the files of before left as they were.
static void test_step_log_refusals(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], bad[PATH_SIZE], folder[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "no-such-folder/m.steps.csv", bad, sizeof bad);
    scratch_file(&d, "a-folder", folder, sizeof folder);
    CU_ASSERT_EQUAL_FATAL(mkdir(folder, 0777), 0);
#define ONE_EPOCH TINY, "--epochs", "1", "--warmup", "0", "--limit", "64", "--out", out
    EXPECT_FAILURE(VIT_RUN("train", ONE_EPOCH, "--step-log", bad), 1,
                   "no-such-folder/m.steps.csv", "cannot write");
    EXPECT_FAILURE(VIT_RUN("train", ONE_EPOCH, "--step-log", folder), 1, "a-folder",
                   "is a directory");
    EXPECT_FAILURE(VIT_RUN("train", ONE_EPOCH, "--step-log", out), 2, "--step-log", "one file");
    CU_ASSERT_EQUAL(scratch_count(&d), 1); // the folder alone: nothing written
    // a checkpoint whose step log lost its last row
    char steps[PATH_SIZE], ckpt[PATH_SIZE], damaged[PATH_SIZE];
    scratch_file(&d, "m.steps.csv", steps, sizeof steps);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    scratch_file(&d, "damaged.ckpt", damaged, sizeof damaged);
    CliResult r = VIT_RUN("train", ONE_EPOCH);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    char *csv = read_whole_file(steps, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_EQUAL(count_lines(csv), 1 + 2); // 64 images, 32 a step
    char *cut = strdup(csv);
    *strstr(cut, "\n1,2,") = '\0'; // steps 1 alone: the header and one row, then nothing
    strcat(cut, "\n");
    copy_checkpoint(ckpt, damaged, NULL, "train.step_log", cut);
    const int files = scratch_count(&d);
    r = VIT_RUN("train", ONE_EPOCH, "--resume", damaged);
    if (!strstr(r.err, "train.step_log")) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "damaged.ckpt"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "train.step_log"));
    cli_result_free(&r);
    CU_ASSERT_TRUE(has_text(steps, csv)); // as the first run left it
    CU_ASSERT_EQUAL(scratch_count(&d), files);
#undef ONE_EPOCH
    free(cut), free(csv);
    scratch_remove(&d);
}

/* -------------------------------------------------------------- --watch */

// A line of the output without its clock: the progress line up to its
// accuracy, an epoch's line up to its seconds; "trained in" not at all.
static void without_times(char *text) {
    char *w = text;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        const size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        size_t keep = n;
        char *cut = strstr(line, "%  ");
        char *secs = strstr(line, "images); ");
        if (cut && cut < line + n) keep = (size_t)(cut - line) + 1;
        else if (secs && secs < line + n) keep = (size_t)(secs - line) + 8;
        if (strncmp(line, "trained in", 10) == 0) keep = 0;
        memmove(w, line, keep);
        w += keep;
        line += n;
    }
    *w = '\0';
}

// Off a terminal --watch is the progress line: the same output, the same
// model, the same step log.
static void test_watch_off_a_terminal_is_the_progress_line(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char plain[PATH_SIZE], watched[PATH_SIZE];
    scratch_file(&d, "plain.safetensors", plain, sizeof plain);
    scratch_file(&d, "watched.safetensors", watched, sizeof watched);
    CliResult r = VIT_RUN("train", TINY, "--epochs", "2", "--warmup", "0", "--limit", "320",
                          "--out", plain);
    CliResult w = VIT_RUN("train", TINY, "--epochs", "2", "--warmup", "0", "--limit", "320",
                          "--out", watched, "--watch");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(w.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.out, "epoch 2/2 [####################] step 10/10"));
    // the last line names the model: drop it, the rest is the same but for times
    char *last = strstr(r.out, ": the model ("), *wlast = strstr(w.out, ": the model (");
    CU_ASSERT_PTR_NOT_NULL_FATAL(last);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wlast);
    while (last > r.out && last[-1] != '\n') last--;
    while (wlast > w.out && wlast[-1] != '\n') wlast--;
    last[0] = '\0', wlast[0] = '\0';
    without_times(r.out);
    without_times(w.out);
    if (strcmp(w.out, r.out) != 0) fprintf(stderr, "\n    with --watch:\n%s\n    without:\n%s", w.out, r.out);
    CU_ASSERT_STRING_EQUAL(w.out, r.out);
    cli_result_free(&r);
    cli_result_free(&w);
    char plain_steps[PATH_SIZE], watched_steps[PATH_SIZE];
    scratch_file(&d, "plain.steps.csv", plain_steps, sizeof plain_steps);
    scratch_file(&d, "watched.steps.csv", watched_steps, sizeof watched_steps);
    char *csv = read_whole_file(plain_steps, NULL);
    CU_ASSERT_EQUAL(count_lines(csv), 1 + 20);
    CU_ASSERT_TRUE(csv && has_text(watched_steps, csv));
    free(csv);
    scratch_remove(&d);
}

CU_TestInfo tests_train_run[] = {
    {"each layer group's numbers of a step equal PyTorch's", test_layer_stats_match_pytorch},
    {"the layer log's numbers of one step, by hand", test_layer_numbers_of_one_step},
    {"the film keeps epoch 0, powers of two, the last", test_film_keeps_0_powers_of_two_and_the_last},
    {"a film that is a file is refused; none is off", test_film_refusal_and_none},
    {"a resume continues the layer log and the step log exactly",
     test_resume_continues_the_layer_log},
    {"the step log: a row per step, the schedule's rate", test_step_log_rows_follow_the_schedule},
    {"the step log changes no weight; none writes none", test_step_log_none_same_weights},
    {"a step log that cannot be written is refused", test_step_log_refusals},
    {"--watch off a terminal is the progress line", test_watch_off_a_terminal_is_the_progress_line},
    CU_TEST_INFO_NULL,
};
