/**
 * @file test_train_hostile.c
 * @brief `vit train` against a hostile user: outputs that name its own data,
 *        two outputs that are one file, a folder of too few images, outputs
 *        and a test split that only fail at the end, damaged checkpoints, and
 *        names longer than any fixed buffer. Each case here once lost data,
 *        aborted or was found only after the training.
 *
 * The data is a folder this suite writes: the first images of Debian's
 * Fashion-MNIST as uncompressed IDX files (the loader takes DIR/NAME when
 * DIR/NAME.gz is not there), so that a test that failed would overwrite a
 * copy, never the system's dataset. The model is test_train_cli.c's tiny one.
 */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "train/dataset.h"
#include "io/safetensors.h"

enum { PATH_SIZE = 512, DEEP_SIZE = 2048 };

#define TINY "--patch", "7", "--dim", "16", "--depth", "1", "--heads", "2", "--mlp", "32", \
             "--batch", "32", "--warmup", "0", "--epochs", "1"

/* ---------------------------------------------------------------- the data */

static unsigned char *put_be32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
    return p + 4;
}

static void write_bytes(const char *path, const unsigned char *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

// PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte in dir: the first n
// images of d (prefix "train" or "t10k").
static void write_split(const ScratchDir *dir, const char *prefix, const Dataset *d, int n) {
    char name[64], path[PATH_SIZE];
    const size_t pixels = (size_t)n * 28 * 28;
    unsigned char *buf = malloc(16 + pixels);
    unsigned char *p = put_be32(put_be32(put_be32(put_be32(buf, 0x803), (uint32_t)n), 28), 28);
    memcpy(p, d->pixels, pixels);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    write_bytes(scratch_file(dir, name, path, sizeof path), buf, 16 + pixels);
    p = put_be32(put_be32(buf, 0x801), (uint32_t)n);
    memcpy(p, d->labels, (size_t)n);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    write_bytes(scratch_file(dir, name, path, sizeof path), buf, 8 + (size_t)n);
    free(buf);
}

// A data folder of `train` training images (the last 5,000 of them validate)
// and `test` test images, both the first images of Fashion-MNIST's training
// split (only those are read); false when Fashion-MNIST is not installed.
static bool make_data(ScratchDir *dir, int train, int test) {
    Dataset first;
    VitError err;
    if (dataset_fashion_mnist_load_first(&first, NULL, "train", train > test ? train : test,
                                         &err) != VIT_OK) {
        fprintf(stderr, "\n    %s (scripts/deps.sh installs dataset-fashion-mnist)\n", err.msg);
        return false;
    }
    bool made = scratch_make(dir);
    if (made) {
        write_split(dir, "train", &first, train);
        if (test) write_split(dir, "t10k", &first, test);
    }
    dataset_free(&first);
    return made;
}

/* ---------------------------------------------------- outputs and inputs */

// Every output flag naming every data file, directly or through a link:
// refused before any work, the file's bytes as they were.
static void test_no_output_replaces_the_data(void) {
    ScratchDir data, out;
    CU_ASSERT_FATAL(make_data(&data, 5064, 64));
    CU_ASSERT_FATAL(scratch_make(&out));
    static const char *const files[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    static const char *const flags[] = {"--out", "--checkpoint", "--log"};
    char file[PATH_SIZE], copy[PATH_SIZE], model[PATH_SIZE], link[PATH_SIZE];
    scratch_file(&out, "m.safetensors", model, sizeof model);
    scratch_file(&out, "link", link, sizeof link);
    for (int i = 0; i < 4; i++) {
        scratch_file(&data, files[i], file, sizeof file);
        scratch_file(&out, "copy", copy, sizeof copy);
        copy_file(file, copy);
        CU_ASSERT_EQUAL_FATAL(symlink(file, link), 0);
        for (int k = 0; k < 3; k++)
            for (int via_link = 0; via_link <= 1; via_link++) {
                const char *target = via_link ? link : file;
                CliResult r = k == 0 ? VIT_RUN("train", TINY, "--data", data.path, "--out", target)
                                     : VIT_RUN("train", TINY, "--data", data.path, "--out", model,
                                               flags[k], target);
                if (r.status != 1 || !strstr(r.err, "refusing to overwrite an input"))
                    fprintf(stderr, "\n    %s %s%s: status %d, said: %s", flags[k], files[i],
                            via_link ? " (a link)" : "", r.status, r.err);
                CU_ASSERT_EQUAL(r.status, 1);
                CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "refusing to overwrite an input"));
                CU_ASSERT_PTR_NULL(strstr(r.out, "training a ViT")); // refused before the run
                cli_result_free(&r);
                CU_ASSERT_TRUE(same_bytes(file, copy));
            }
        unlink(link);
        unlink(copy);
    }
    CU_ASSERT_EQUAL(scratch_count(&out), 0); // and nothing written
    scratch_remove(&out);
    scratch_remove(&data);
}

// Two outputs that are one file, however spelled: refused (the second
// written would replace the first). And --resume may not be the model or the log.
static void test_two_outputs_are_never_one_file(void) {
    ScratchDir data, d;
    CU_ASSERT_FATAL(make_data(&data, 5064, 0));
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], dotted[PATH_SIZE], log[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "./m.safetensors", dotted, sizeof dotted);
    scratch_file(&d, "m.csv", log, sizeof log);
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", data.path, "--out", out,
                           "--log", dotted), 2, "--out", "--log", "one file");
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", data.path, "--out", out,
                           "--checkpoint", log), 2, "--checkpoint", "--log", "one file");
    // a link to the model that already exists is the model too
    write_text(out, "an earlier model");
    char link[PATH_SIZE];
    scratch_file(&d, "ckpt-link", link, sizeof link);
    CU_ASSERT_EQUAL_FATAL(symlink(out, link), 0);
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", data.path, "--out", out,
                           "--checkpoint", link), 2, "--out", "--checkpoint", "one file");
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", data.path, "--out", out,
                           "--resume", dotted), 2, "--resume", "--out");
    CU_ASSERT_TRUE(has_text(out, "an earlier model"));
    scratch_remove(&d);
    scratch_remove(&data);
}

/* ------------------------------------------------------- a small folder */

// Fewer images than the validation split needs, and --limit above what is
// left: a message and exit 1, where both once stopped with abort().
static void test_a_small_folder_is_a_message(void) {
    ScratchDir small, d;
    CU_ASSERT_FATAL(make_data(&small, 300, 0));
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], msg[3 * PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    snprintf(msg, sizeof msg, "%s: the training set has 300 images: too few to hold out the "
             "last 5,000", small.path);
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", small.path, "--out", out), 1,
                   msg);
    scratch_remove(&small);
    ScratchDir some;
    CU_ASSERT_FATAL(make_data(&some, 5100, 0));
    snprintf(msg, sizeof msg, "--limit 500: %s holds 100 training images", some.path);
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", some.path, "--limit", "500",
                           "--out", out), 1, msg);
    // fewer images than one batch: trainer_init()'s message
    EXPECT_FAILURE(VIT_RUN("train", TINY, "--test", "0", "--data", some.path, "--limit", "10",
                           "--out", out), 1, "fewer than one batch");
    CU_ASSERT_EQUAL(scratch_count(&d), 0);
    scratch_remove(&some);
    scratch_remove(&d);
}

// An output that cannot be written and a test split that cannot be read are
// found before the first step: nothing is trained to be thrown away.
static void test_bad_outputs_and_test_split_fail_before_step_one(void) {
    ScratchDir data, d;
    CU_ASSERT_FATAL(make_data(&data, 5064, 64));
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], nowhere[PATH_SIZE], folder[PATH_SIZE], test_images[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "no-such-folder/m.csv", nowhere, sizeof nowhere);
    static const char *const flags[] = {"--out", "--checkpoint", "--log"};
    for (int k = 0; k < 3; k++) {
        CliResult r = k == 0 ? VIT_RUN("train", TINY, "--data", data.path, "--out", nowhere)
                             : VIT_RUN("train", TINY, "--data", data.path, "--out", out,
                                       flags[k], nowhere);
        CU_ASSERT_EQUAL(r.status, 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "no-such-folder/m.csv: cannot write"));
        CU_ASSERT_STRING_EQUAL(r.out, ""); // not one step
        cli_result_free(&r);
    }
    // a flag at the top of its range is in range (the float nearest 0.99 is a little
    // above the double 0.99): what stops this run is its output, not the flag
    CliResult edge = VIT_RUN("train", TINY, "--label-smoothing", "0.99", "--data", data.path,
                             "--out", nowhere);
    CU_ASSERT_EQUAL(edge.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(edge.err, "cannot write"));
    cli_result_free(&edge);
    // a directory where the log goes
    scratch_file(&d, "a-folder", folder, sizeof folder);
    CU_ASSERT_EQUAL_FATAL(mkdir(folder, 0755), 0);
    CliResult r = VIT_RUN("train", TINY, "--data", data.path, "--out", out, "--log", folder);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "is a directory"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    cli_result_free(&r);
    // a damaged test split: found now, not after the last epoch
    write_text(scratch_file(&data, "t10k-images-idx3-ubyte", test_images, sizeof test_images),
               "not an IDX file");
    r = VIT_RUN("train", TINY, "--data", data.path, "--out", out);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "t10k-images-idx3-ubyte"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    cli_result_free(&r);
    // with --test 0 the test split is not read: the run goes ahead
    r = VIT_RUN("train", TINY, "--test", "0", "--data", data.path, "--out", out);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    scratch_remove(&d);
    scratch_remove(&data);
}

/* --------------------------------------------------------------- resume */

// A copy of the checkpoint at `from` with one metadata value replaced.
static void damage(const char *from, const char *to, const char *key, const char *value) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, from, &err), VIT_OK);
    StWriter w = {0};
    Tensor *t = calloc((size_t)st.count, sizeof *t);
    for (int i = 0; i < st.count; i++) {
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, st.tensors[i].name, &t[i], &err), VIT_OK);
        st_writer_add(&w, st.tensors[i].name, &t[i]);
    }
    for (int i = 0; i < st.meta_count; i++)
        st_writer_meta(&w, st.meta_keys[i], strcmp(st.meta_keys[i], key) ? st.meta_values[i] : value);
    CU_ASSERT_EQUAL(st_writer_save(&w, to, &err), VIT_OK);
    st_writer_free(&w);
    for (int i = 0; i < st.count; i++) tensor_free(&t[i]);
    free(t);
    st_close(&st);
}

// Metadata that does not parse exactly, or does not fit the run, is refused;
// a run resumed at its last step keeps its validation accuracy.
static void test_resume_takes_exact_metadata_only(void) {
    ScratchDir data, d;
    CU_ASSERT_FATAL(make_data(&data, 5064, 0));
    CU_ASSERT_FATAL(scratch_make(&d));
    char out[PATH_SIZE], ckpt[PATH_SIZE], bad[PATH_SIZE], again[PATH_SIZE];
    scratch_file(&d, "m.safetensors", out, sizeof out);
    scratch_file(&d, "m.safetensors.ckpt", ckpt, sizeof ckpt);
    scratch_file(&d, "bad.ckpt", bad, sizeof bad);
    scratch_file(&d, "again.safetensors", again, sizeof again);
#define RUN "train", TINY, "--test", "0", "--data", data.path
    CliResult r = VIT_RUN(RUN, "--out", out);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);

    static const char *const cases[][3] = {
        // key, value, what the message says
        {"train.step", "2abc", "train.step"},
        {"train.step", "99999999999999999999", "train.step"},
        {"train.step", "-1", "train.step"},
        {"train.step", "", "train.step"},
        {"train.epoch_sums", "0 0 0 0", "train.epoch_sums"},
        {"train.epoch_sums", "0 0 0 0 0 extra", "train.epoch_sums"},
        {"train.epoch_sums", "nan 0 0 0 0.0", "train.epoch_sums"},
        {"train.epoch_sums", "0 9223372036854775807 9223372036854775807 2147483647 1e300",
         "train.epoch_sums"},
        {"train.epoch_sums", "1.5 40 32 1 0.5", "train.epoch_sums"}, // a step into an epoch
        {"train.log", "epoch,step\n", "train.log"},
        {"train.log", "", "train.log"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        damage(ckpt, bad, cases[i][0], cases[i][1]);
        r = VIT_RUN(RUN, "--out", again, "--resume", bad);
        if (r.status != 1 || !strstr(r.err, cases[i][2]))
            fprintf(stderr, "\n    %s = \"%s\": status %d, said: %s", cases[i][0], cases[i][1],
                    r.status, r.err);
        CU_ASSERT_EQUAL(r.status, 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, cases[i][2]));
        cli_result_free(&r);
    }
    // the checkpoint of the run's last step, resumed: nothing left to train, and
    // the model says the validation accuracy the run measured
    r = VIT_RUN(RUN, "--out", again, "--resume", ckpt);
    if (r.status) fprintf(stderr, "\n    %s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    SafeTensors a, b;
    VitError err;
    if (st_open(&a, out, &err) == VIT_OK && st_open(&b, again, &err) == VIT_OK) {
        // independent: two runs that must agree, both read by the same st_meta()
    const char *want = st_meta(&a, "train.val_accuracy"), *got = st_meta(&b, "train.val_accuracy");
        CU_ASSERT_PTR_NOT_NULL(want);
        CU_ASSERT_PTR_NOT_NULL(got);
        if (want && got) {
            CU_ASSERT_STRING_EQUAL(got, want);
            CU_ASSERT(atof(want) > 0);
        }
        st_close(&a);
        st_close(&b);
    } else {
        CU_FAIL("the two models could not be opened");
    }
#undef RUN
    scratch_remove(&d);
    scratch_remove(&data);
}

/* ------------------------------------------------------------ long names */

// The checkpoint's and the log's names are made from --out at any length:
// a path of more than 1,023 characters (five folders of 240) is not cut.
static void test_default_names_of_any_length(void) {
    ScratchDir data, d;
    CU_ASSERT_FATAL(make_data(&data, 5064, 0));
    CU_ASSERT_FATAL(scratch_make(&d));
    char deep[DEEP_SIZE], part[241];
    memset(part, 'f', 240);
    part[240] = '\0';
    int at = snprintf(deep, sizeof deep, "%s", d.path);
    for (int i = 0; i < 5; i++) {
        at += snprintf(deep + at, sizeof deep - (size_t)at, "/%s", part);
        CU_ASSERT_EQUAL_FATAL(mkdir(deep, 0755), 0);
    }
    char out[DEEP_SIZE + 32], ckpt[DEEP_SIZE + 32], log[DEEP_SIZE + 32];
    snprintf(out, sizeof out, "%s/m.safetensors", deep);
    snprintf(ckpt, sizeof ckpt, "%s/m.safetensors.ckpt", deep);
    snprintf(log, sizeof log, "%s/m.csv", deep);
    CU_ASSERT(strlen(ckpt) > 1100);
    CliResult r = VIT_RUN("train", TINY, "--test", "0", "--data", data.path, "--out", out);
    if (r.status) fprintf(stderr, "\n    %.300s", r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    struct stat sb;
    CU_ASSERT_EQUAL(stat(out, &sb), 0);
    CU_ASSERT_EQUAL(stat(ckpt, &sb), 0);
    CU_ASSERT_EQUAL(stat(log, &sb), 0);
    scratch_remove(&d);
    scratch_remove(&data);
}

CU_TestInfo tests_train_hostile[] = {
    {"no output replaces the data, even through a link", test_no_output_replaces_the_data},
    {"two outputs are never one file", test_two_outputs_are_never_one_file},
    {"a small folder is a message, not an abort", test_a_small_folder_is_a_message},
    {"bad outputs and test split fail before step 1",
     test_bad_outputs_and_test_split_fail_before_step_one},
    {"resume takes exact metadata only", test_resume_takes_exact_metadata_only},
    {"default names of any length", test_default_names_of_any_length},
    CU_TEST_INFO_NULL,
};
