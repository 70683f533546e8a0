/**
 * @file test_train_cli.c
 * @brief `vit train`, run for real on Fashion-MNIST with a tiny model: the
 *        files it writes, Ctrl-C and --resume, and how it fails.
 *
 * The model is the smallest that still trains (patch 7 so N = 17, D 16, one
 * block, 2 heads, MLP 32) on a few hundred images, so a whole run with a
 * validation pass over the 5,000 held-out images each epoch takes a fraction
 * of a second. tests/test_train.c checks the loop itself in-process; here,
 * what a user of the command sees.
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "gemm/gemm.h"
#include "io/safetensors.h"

enum { PATH_SIZE = 512 };

#define TINY "--patch", "7", "--dim", "16", "--depth", "1", "--heads", "2", "--mlp", "32", \
             "--batch", "32", "--test", "0"

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}

/* ------------------------------------------------------------ a run */

static void test_a_run_writes_model_log_checkpoint(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], log[PATH_SIZE], ckpt[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "m.csv", log, sizeof log);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    // VIT_GEMM set to the backend the run takes anyway: the command it records names it
    const char *was = getenv("VIT_GEMM");
    char saved[64] = "", backend[64];
    if (was) snprintf(saved, sizeof saved, "%s", was);
    snprintf(backend, sizeof backend, "%s", gemm_backend_name(gemm_backend_for(64, 64, 64)));
    setenv("VIT_GEMM", backend, 1);
    CliResult r = VIT_RUN("train", TINY, "--epochs", "2", "--warmup", "0", "--limit", "320",
                          "--out", out);
    if (was) setenv("VIT_GEMM", saved, 1);
    else unsetenv("VIT_GEMM");
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    // the heading, one summary per epoch, the model's line; no progress bar off a terminal
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "on 320 images, validating on 5000: 2 epochs of 10 steps"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "epoch 1/2: train loss"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "epoch 2/2: train loss"));
    CU_ASSERT_PTR_NULL(strchr(r.out, '\r'));
    cli_result_free(&r);

    // the log: a header and one row per epoch
    char *csv = slurp(log);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_EQUAL(strncmp(csv, "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,", 52), 0);
    CU_ASSERT_EQUAL(count_lines(csv), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(csv, "\n2,20,"));

    // the model: what programs need to use it, and how it was made
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, out, &err), VIT_OK);
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "head.weight"));
    CU_ASSERT_PTR_NULL(st_find(&st, "optim.m.head.weight")); // the model alone
    const char *names = st_meta(&st, "class_names"), *cmd = st_meta(&st, "train.command");
    CU_ASSERT_TRUE(names && strstr(names, "\"Ankle boot\""));
    CU_ASSERT_TRUE(cmd && strstr(cmd, "vit train"));
    char want[96];
    snprintf(want, sizeof want, "VIT_GEMM=%s ", backend); // first, as a shell writes it
    CU_ASSERT_TRUE(cmd && strncmp(cmd, want, strlen(want)) == 0);
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "preprocess") ? st_meta(&st, "preprocess") : "",
                           "fashion-mnist");
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "channels") ? st_meta(&st, "channels") : "", "1");
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "train.log") ? st_meta(&st, "train.log") : "", csv);
    st_close(&st);
    // the checkpoint: AdamW's state and the step
    CU_ASSERT_EQUAL_FATAL(st_open(&st, ckpt, &err), VIT_OK);
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "optim.v.blocks.0.attn.qkv.weight"));
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "train.step") ? st_meta(&st, "train.step") : "", "20");
    st_close(&st);
    free(csv);
    scratch_remove(&d);
}

/* ----------------------------------------------------- Ctrl-C, resume */

// Waits until the file holds @p needle (at most ten seconds).
static bool wait_for(const char *path, const char *needle) {
    for (int i = 0; i < 1000; i++) {
        char *s = slurp(path);
        bool found = s && strstr(s, needle);
        free(s);
        if (found) return true;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

// Every tensor of two files, byte for byte.
static void expect_same_tensors(const char *path_a, const char *path_b) {
    SafeTensors a, b;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&a, path_a, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&b, path_b, &err), VIT_OK);
    CU_ASSERT_EQUAL(a.count, b.count);
    for (int i = 0; i < a.count; i++) {
        const StTensor *x = &a.tensors[i], *y = st_find(&b, x->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        const size_t nx = x->end - x->begin, ny = y->end - y->begin;
        CU_ASSERT_EQUAL(nx, ny);
        if (nx == ny && memcmp(x->bytes, y->bytes, nx) != 0) {
            fprintf(stderr, "\n    %s differs", x->name);
            CU_FAIL("a resumed run's tensor differs from the uninterrupted run's");
        }
    }
    st_close(&a);
    st_close(&b);
}

// Stopped by Ctrl-C in the middle, resumed: the uninterrupted run's model, bit for bit.
static void test_ctrl_c_then_resume(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], ckpt[PATH_SIZE], whole[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    scratch_file(&d, "whole.safetensors", whole, sizeof whole);
#define RUN_FLAGS TINY, "--epochs", "6", "--warmup", "1", "--limit", "1920"
    CliResult r = VIT_RUN("train", RUN_FLAGS, "--out", whole);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);

    // 6 epochs of 60 steps, interrupted once the first is done
    const char *const args[] = {"train", RUN_FLAGS, "--out", out, NULL};
    CliChild c;
    CU_ASSERT_FATAL(cli_start(&c, cli_program(), args));
    CU_ASSERT_TRUE(wait_for(c.out_path, "epoch 1/6: train loss"));
    kill(c.pid, SIGINT);
    r = cli_finish(&c);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "interrupted at step"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--resume"));
    CU_ASSERT_FALSE(file_exists(out)); // no model until the run is complete
    cli_result_free(&r);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, ckpt, &err), VIT_OK);
    const long stopped = atol(st_meta(&st, "train.step") ? st_meta(&st, "train.step") : "0");
    CU_ASSERT(stopped >= 60 && stopped < 360);
    st_close(&st);

    // resumed with another seed: refused, saying which setting differs
    r = VIT_RUN("train", RUN_FLAGS, "--seed", "9", "--out", out, "--resume", ckpt);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "another run"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "seed=9"));
    cli_result_free(&r);

    // resumed with the same flags: to the end, and the same model as never stopping
    r = VIT_RUN("train", RUN_FLAGS, "--out", out, "--resume", ckpt);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "resumed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "epoch 6/6: train loss"));
    cli_result_free(&r);
    if (file_exists(out)) expect_same_tensors(whole, out);
#undef RUN_FLAGS
    scratch_remove(&d);
}

/* ------------------------------------------------------------ refusals */

static void test_refusals(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], missing[PATH_SIZE], not_ckpt[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "nothing-here", missing, sizeof missing);
    scratch_file(&d, "plain.safetensors", not_ckpt, sizeof not_ckpt);
    struct {
        const char *const *args;
        int status;
        const char *says;
    } cases[] = {
        {(const char *const[]){"train", NULL}, 2, "--out"},
        {(const char *const[]){"train", "--out", out, "--arch", "vit-huge", NULL}, 2, "vit-fashion"},
        {(const char *const[]){"train", "--out", out, "--epochs", "2", "--warmup", "2", NULL}, 2,
         "warm-up"},
        {(const char *const[]){"train", "--out", out, "--heads", "5", NULL}, 2, "heads"},
        {(const char *const[]){"train", "--out", out, "--data", missing, NULL}, 1, "nothing-here"},
        {(const char *const[]){"train", "--out", out, "--resume", out, NULL}, 2, "--resume"},
        {(const char *const[]){"train", "--out", out, "--log", out, NULL}, 2, "one file"},
        {(const char *const[]){"train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "64",
                               "--out", out, "--resume", missing, NULL}, 1, "nothing-here"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CliResult r = cli_run(cases[i].args);
        if (r.status != cases[i].status || !strstr(r.err, cases[i].says))
            fprintf(stderr, "\n    case %zu: status %d, said: %s", i, r.status, r.err);
        CU_ASSERT_EQUAL(r.status, cases[i].status);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, cases[i].says));
        CU_ASSERT_EQUAL(count_lines(r.err), 1);
        CU_ASSERT_FALSE(file_exists(out));
        cli_result_free(&r);
    }
    // a model file is not a checkpoint
    CliResult r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "64",
                          "--out", not_ckpt);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    r = VIT_RUN("train", TINY, "--epochs", "1", "--warmup", "0", "--limit", "64", "--out", out,
                "--resume", not_ckpt);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not a training checkpoint"));
    CU_ASSERT_FALSE(file_exists(out));
    cli_result_free(&r);
    scratch_remove(&d);
}

// The default warm-up (two epochs) is shortened to fit a run of one or two
// epochs, the README's minute's try; one asked for with --warmup is not (above).
static void test_default_warmup_fits_a_short_run(void) {
    ScratchDir d;
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], ckpt[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    const char *const epochs[] = {"1", "2"}, *const warmup[] = {"warmup=0 ", "warmup=1 "};
    for (int i = 0; i < 2; i++) {
        CliResult r = VIT_RUN("train", TINY, "--epochs", epochs[i], "--limit", "64", "--out", out);
        CU_ASSERT_EQUAL(r.status, 0);
        if (r.status != 0) fprintf(stderr, "\n    --epochs %s: %s", epochs[i], r.err);
        cli_result_free(&r);
        SafeTensors st; // the run's settings, as the checkpoint records them
        VitError err;
        CU_ASSERT_EQUAL_FATAL(st_open(&st, ckpt, &err), VIT_OK);
        const char *config = st_meta(&st, "train.config");
        CU_ASSERT_PTR_NOT_NULL(config);
        CU_ASSERT_PTR_NOT_NULL(config ? strstr(config, warmup[i]) : NULL);
        st_close(&st);
    }
    scratch_remove(&d);
}

CU_TestInfo tests_train_cli[] = {
    {"a run writes the model, its log and a checkpoint", test_a_run_writes_model_log_checkpoint},
    {"Ctrl-C saves a checkpoint; --resume continues exactly", test_ctrl_c_then_resume},
    {"bad flags and files are refused", test_refusals},
    {"the default warm-up fits a run of one or two epochs", test_default_warmup_fits_a_short_run},
    CU_TEST_INFO_NULL,
};
