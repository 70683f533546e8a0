/**
 * @file test_classify.c
 * @brief `vit classify` and `vit trace IMAGE`, run for real, on RGB and grey
 *        models (a grey model's file naming its preset, normalisation and class
 *        names), and every kind of bad input the issue lists: each must give one
 *        line naming the file and the problem, exit 1 (bad input) or 2 (bad
 *        usage), and leave no output file behind.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli_run.h"
#include "io/image.h"
#include "io/labels.h"
#include "ops/ops.h"
#include "io/safetensors.h"
#include "model/vit.h"

enum { PATH_SIZE = 256, MSG_SIZE = 1024 };

/* ---------------------------------------------------------------- helpers */

// A small model with 10 classes (D 64, L 2, H 4, S 32, p 8), written by `vit make-weights`.
static void make_model(const char *path) {
    CliResult r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img",
                          "32", "--patch", "8", "--classes", "10", "--std", "0.2", "--bias-std",
                          "0.02", "--seed", "4", "--out", path);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
}

static const char *test_image(const char *name, char *buf) {
    snprintf(buf, PATH_SIZE, "%s/data/%s", VIT_TEST_DIR, name);
    return buf;
}

// Writes `bytes` as a file.
static void write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

// A safetensors file whose header is `json` (length as given, or `claimed` when non-zero)
// followed by `data_len` zero bytes.
static void write_safetensors(const char *path, const char *json, size_t data_len,
                              uint64_t claimed) {
    size_t h = strlen(json), n = 8 + h + data_len;
    unsigned char *buf = calloc(1, n);
    uint64_t len = claimed ? claimed : h;
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len >> (8 * i));
    memcpy(buf + 8, json, h);
    write_bytes(path, buf, n);
    free(buf);
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ------------------------------------------------------------ classifying */

// The probabilities `vit classify` prints equal softmax(vit_forward(preprocess(image))).
static void test_classify_prints_top_k(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    make_model(w);
    CliResult r = VIT_RUN("classify", "--weights", w, test_image("img_wide.png", img), "--top",
                          "3", "--preprocess", "torchvision");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");

    // the same thing in-process
    Vit vit;
    VitError err;
    Image picture;
    Preprocess pre;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, w, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(image_load(&picture, img, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&pre, "torchvision", 32, &err), VIT_OK);
    Tensor x = tensor_new(4, 1, 3, 32, 32);
    image_preprocess(x.data, &picture, &pre);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    float probs[10];
    softmax(probs, vit.acts.logits, 1, 10);

    // "  rank  probability  label" then three rows, most probable first
    const char *table = strstr(r.out, "rank  probability  label\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    const char *row = strchr(table, '\n') + 1;
    float last = 2.0f;
    bool printed[10] = {false};
    for (int rank = 1; rank <= 3; rank++) {
        int got_rank, cls;
        float p;
        CU_ASSERT_EQUAL_FATAL(sscanf(row, " %d %f class %d", &got_rank, &p, &cls), 3);
        CU_ASSERT_EQUAL(got_rank, rank);
        CU_ASSERT(cls >= 0 && cls < 10);
        CU_ASSERT_DOUBLE_EQUAL(p, probs[cls], 6e-5); // printed with 4 decimals
        CU_ASSERT(p <= last);
        printed[cls] = true;
        last = p;
        row = strchr(row, '\n') + 1;
    }
    CU_ASSERT_STRING_EQUAL(row, ""); // exactly three rows
    for (int k = 0; k < 10; k++) // nothing left out is more probable than the last row
        if (!printed[k]) CU_ASSERT(probs[k] <= last + 1e-4f);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(torchvision preprocessing, 32×32)"));
    cli_result_free(&r);
    tensor_free(&x);
    image_free(&picture);
    vit_free(&vit);
    scratch_remove(&dir);
}

static void test_classify_labels_and_several_images(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], labels[PATH_SIZE], a[PATH_SIZE], b[PATH_SIZE], t[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "labels.txt", labels, sizeof labels);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    make_model(w);
    const char *names = "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";
    write_bytes(labels, names, strlen(names));
    CliResult r = VIT_RUN("classify", "--weights", w, "--labels", labels, "--top", "10",
                          test_image("img_grey.png", a), test_image("img_rgba.png", b), "--trace",
                          t);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    // two tables, every class named once in each
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "img_grey.png  (timm preprocessing"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "img_rgba.png  (timm preprocessing"));
    int named = 0;
    for (const char *p = r.out; (p = strstr(p, "  seven\n")); p++) named++;
    CU_ASSERT_EQUAL(named, 2);
    cli_result_free(&r);
    // --trace holds the batch of two
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, t, &err), VIT_OK);
    const StTensor *logits = st_find(&st, "logits");
    CU_ASSERT_PTR_NOT_NULL_FATAL(logits);
    CU_ASSERT_EQUAL(logits->shape[0], 2);
    CU_ASSERT_EQUAL(logits->shape[1], 10);
    st_close(&st);
    // a label file of the wrong length is refused
    write_bytes(labels, "cat\ndog\n", 8);
    char msg[MSG_SIZE];
    snprintf(msg, sizeof msg, "%s: has 2 labels but the model has 10 classes", labels);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, "--labels", labels, a), 1, msg);
    scratch_remove(&dir);
}

// `vit trace IMAGE` records the same pass as `vit trace --input` on the preprocessed image.
static void test_trace_accepts_an_image(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], img[PATH_SIZE], t1[PATH_SIZE], t2[PATH_SIZE], x[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "t1.safetensors", t1, sizeof t1);
    scratch_file(&dir, "t2.safetensors", t2, sizeof t2);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    make_model(w);
    CliResult r = VIT_RUN("trace", "--weights", w, test_image("img_tall.png", img), "--out", t1,
                          "--preprocess", "hf");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    // the preprocessed image, written as --input
    Image picture;
    Preprocess pre;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(image_load(&picture, img, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&pre, "hf", 32, &err), VIT_OK);
    Tensor input = tensor_new(4, 1, 3, 32, 32);
    image_preprocess(input.data, &picture, &pre);
    StWriter wr = {0};
    st_writer_add(&wr, "input", &input);
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&wr, x, &err), VIT_OK);
    st_writer_free(&wr);
    r = VIT_RUN("trace", "--weights", w, "--input", x, "--out", t2);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    SafeTensors a, b;
    CU_ASSERT_EQUAL_FATAL(st_open(&a, t1, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_open(&b, t2, &err), VIT_OK);
    CU_ASSERT_EQUAL(a.count, b.count);
    Tensor la, lb;
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&a, "logits", &la, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&b, "logits", &lb, &err), VIT_OK);
    assert_tensor_close(&la, &lb, 0, 0, "logits from IMAGE vs --input");
    tensor_free(&la), tensor_free(&lb), tensor_free(&input);
    st_close(&a), st_close(&b);
    image_free(&picture);
    // neither or both
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, "--out", t1), 2, "either --input FILE or IMAGE");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, "--input", x, img, "--out", t1), 2, "not both");
    scratch_remove(&dir);
}

static void test_classify_at_another_image_size(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    make_model(w);
    CliResult r = VIT_RUN("classify", "--weights", w, test_image("img_wide.png", img),
                          "--img-size", "48");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "48×48"));
    cli_result_free(&r);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--img-size", "50"), 2,
                   "--img-size", "multiple of the patch size 8");
    scratch_remove(&dir);
}

/* ------------------------------------------------- grey models and their metadata */

/** The grey model: 28×28 images of 1 channel in 7×7 patches, 10 classes (D 32, L 1, H 2). */
static const VitConfig grey_config = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 32,
                                      .depth = 1, .heads = 2, .mlp_dim = 64, .num_classes = 10,
                                      .ln_eps = 1e-6f};

/** The names the grey model's tests give its classes. */
static const char *const GREY_NAMES[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
static const char GREY_NAMES_JSON[] =
    "[\"T-shirt/top\", \"Trouser\", \"Pullover\", \"Dress\", \"Coat\", \"Sandal\", \"Shirt\", "
    "\"Sneaker\", \"Bag\", \"Ankle boot\"]";

// Writes the grey model (seed 5, weights std 0.2 so its predictions spread)
// with the __metadata__ pairs given: key, value, ..., NULL.
static void write_grey_model(const char *path, const char *const *meta) {
    VitInit init = vit_init_timm(5);
    init.std = 0.2f, init.bias_std = 0.05f;
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &grey_config, &init, &err), VIT_OK);
    StWriter w = {0};
    CU_ASSERT_EQUAL_FATAL(vit_writer_add(&w, &vit, &err), VIT_OK);
    for (int i = 0; meta && meta[i]; i += 2) st_writer_meta(&w, meta[i], meta[i + 1]);
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    vit_free(&vit);
}
#define GREY_MODEL(path, ...) write_grey_model((path), (const char *const[]){__VA_ARGS__, NULL})

// softmax(forward(x)) of the model in `path` on the (1, C, S, S) input x.
static void probabilities(float *probs, const char *path, const Tensor *x) {
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, path, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, x, NULL, NULL, &err), VIT_OK);
    softmax(probs, vit.acts.logits, 1, vit.config.num_classes);
    vit_free(&vit);
}

// The picture as the grey model sees it: Pillow's grey, the fashion-mnist
// resize and crop, normalised with the mean and std given (written out here,
// not read from the file, so that the program's reading of it is what is tested).
static Tensor grey_input(const char *img, float mean, float std) {
    Image picture;
    Preprocess pre;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(image_load(&picture, img, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&pre, "fashion-mnist", 28, &err), VIT_OK);
    pre.mean[0] = mean, pre.std[0] = std;
    Tensor x = tensor_new(4, 1, 1, 28, 28);
    image_preprocess(x.data, &picture, &pre);
    image_free(&picture);
    return x;
}

// The table `vit classify --top 10` printed: probs[class] for every row; the
// names looked up in GREY_NAMES. Returns how many rows named a class.
static int read_named_table(const char *out, float probs[10]) {
    const char *table = strstr(out, "rank  probability  label\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    int rows = 0;
    for (const char *row = strchr(table, '\n') + 1; *row; row = strchr(row, '\n') + 1) {
        int rank, at;
        float p;
        if (sscanf(row, " %d %f %n", &rank, &p, &at) != 2) break;
        const char *name = row + at, *end = strchr(name, '\n');
        for (int k = 0; k < 10; k++)
            if ((size_t)(end - name) == strlen(GREY_NAMES[k]) &&
                strncmp(name, GREY_NAMES[k], (size_t)(end - name)) == 0)
                probs[k] = p, rows++;
    }
    return rows;
}

// A grey model whose file names its preset, normalisation and classes:
// `vit classify` needs no --preprocess, prints the names, and its numbers are
// those of the file's mean and std (not the preset's); --mean and --std win
// over the file; `vit trace IMAGE` records the same grey input.
static void test_classify_a_grey_model_by_its_metadata(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], img[PATH_SIZE], t[PATH_SIZE];
    scratch_file(&dir, "fashion.safetensors", w, sizeof w);
    scratch_file(&dir, "t.safetensors", t, sizeof t);
    test_image("img_wide.png", img);
    GREY_MODEL(w, "class_names", GREY_NAMES_JSON, "preprocess", "fashion-mnist", "mean", "0.25",
               "std", "0.4");
    float want[10], preset[10], got[10] = {0};
    Tensor x = grey_input(img, 0.25f, 0.4f), y = grey_input(img, 0.2860f, 0.3530f);
    probabilities(want, w, &x);
    probabilities(preset, w, &y);
    float apart = 0; // the file's normalisation must make a difference, or this proves nothing
    for (int k = 0; k < 10; k++) apart = fmaxf(apart, fabsf(want[k] - preset[k]));
    CU_ASSERT(apart > 1e-3f);

    CliResult r = VIT_RUN("classify", "--weights", w, img, "--top", "10");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(fashion-mnist preprocessing, 28×28)"));
    CU_ASSERT_EQUAL(read_named_table(r.out, got), 10);
    for (int k = 0; k < 10; k++) CU_ASSERT_DOUBLE_EQUAL(got[k], want[k], 6e-5);
    cli_result_free(&r);

    // --temperature T: softmax(z / T), that is p^(1/T) renormalised; T = 1 is the default
    r = VIT_RUN("classify", "--weights", w, img, "--top", "10", "--temperature", "2");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_EQUAL(read_named_table(r.out, got), 10);
    double root_sum = 0;
    for (int k = 0; k < 10; k++) root_sum += sqrt(want[k]);
    for (int k = 0; k < 10; k++) CU_ASSERT_DOUBLE_EQUAL(got[k], sqrt(want[k]) / root_sum, 6e-5);
    cli_result_free(&r);
    CliResult one = VIT_RUN("classify", "--weights", w, img, "--temperature", "1"),
              plain = VIT_RUN("classify", "--weights", w, img);
    CU_ASSERT_STRING_EQUAL(one.out, plain.out);
    cli_result_free(&one), cli_result_free(&plain);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--temperature", "0"), 2,
                   "--temperature");

    // the flags win over the file
    r = VIT_RUN("classify", "--weights", w, img, "--top", "10", "--mean", "0.2860", "--std",
                "0.3530");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_EQUAL(read_named_table(r.out, got), 10);
    for (int k = 0; k < 10; k++) CU_ASSERT_DOUBLE_EQUAL(got[k], preset[k], 6e-5);
    cli_result_free(&r);
    // three values for a grey model: bad usage
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--mean", "0.1,0.2,0.3"), 2,
                   "--mean: expected one number (the model has 1 channel), got '0.1,0.2,0.3'");

    // vit trace IMAGE: the input stage is the grey picture, (1, 1, 28, 28)
    r = VIT_RUN("trace", "--weights", w, img, "--out", t);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    SafeTensors st;
    VitError err;
    Tensor input;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, t, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "input", &input, &err), VIT_OK);
    assert_tensor_close(&input, &x, 0, 0, "the grey input vit trace recorded");
    tensor_free(&input);
    st_close(&st);
    tensor_free(&x), tensor_free(&y);
    scratch_remove(&dir);
}

// A grey model without metadata gets the fashion-mnist preset and prints "class N";
// --preprocess picks another, converted to grey.
static void test_grey_model_without_metadata(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "grey.safetensors", w, sizeof w);
    test_image("img_tall.png", img);
    CliResult r = VIT_RUN("make-weights", "--dim", "32", "--depth", "1", "--heads", "2", "--img",
                          "28", "--patch", "7", "--channels", "1", "--classes", "10", "--std",
                          "0.2", "--seed", "3", "--out", w);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    float want[10];
    Tensor x = grey_input(img, 0.2860f, 0.3530f);
    probabilities(want, w, &x);
    r = VIT_RUN("classify", "--weights", w, img, "--top", "1");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(fashion-mnist preprocessing, 28×28)"));
    int rank, cls;
    float p;
    const char *row = strstr(r.out, "label\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_EQUAL_FATAL(sscanf(row + 6, " %d %f class %d", &rank, &p, &cls), 3);
    CU_ASSERT(cls >= 0 && cls < 10);
    CU_ASSERT_DOUBLE_EQUAL(p, want[cls], 6e-5);
    for (int k = 0; k < 10; k++) CU_ASSERT(want[k] <= p + 1e-4f);
    cli_result_free(&r);
    r = VIT_RUN("classify", "--weights", w, img, "--preprocess", "hf");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(hf preprocessing, 28×28)"));
    cli_result_free(&r);
    tensor_free(&x);
    scratch_remove(&dir);
}

// Class names: a labels file, else config.json, else the weights' "class_names";
// a malformed "class_names" is refused naming the file and the key.
static void test_class_names_from_the_weights(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], labels[PATH_SIZE], img[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "named.safetensors", w, sizeof w);
    scratch_file(&dir, "labels.txt", labels, sizeof labels);
    test_image("img_wide.png", img);
    GREY_MODEL(w, "class_names", GREY_NAMES_JSON);
    // in the library: the metadata's names, in order
    SafeTensors st;
    Labels l;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, w, &err), VIT_OK);
    CU_ASSERT_EQUAL(labels_load_metadata(&l, &st, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(l.count, 10);
    for (int k = 0; k < 10; k++) CU_ASSERT_STRING_EQUAL(labels_name(&l, k), GREY_NAMES[k]);
    labels_free(&l);
    CU_ASSERT_EQUAL(labels_for_weights(&l, NULL, NULL, &st, 10, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 9), "Ankle boot");
    labels_free(&l);
    // a labels file wins over the metadata
    const char *names = "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";
    write_bytes(labels, names, strlen(names));
    CU_ASSERT_EQUAL(labels_for_weights(&l, labels, NULL, &st, 10, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 9), "nine");
    labels_free(&l);
    // the metadata is the model's, so its count must be the model's
    CU_ASSERT_EQUAL(labels_for_weights(&l, NULL, NULL, &st, 12, &err), VIT_ERR_INPUT);
    snprintf(msg, sizeof msg, "%s: __metadata__ \"class_names\" has 10 names but the model has "
             "12 classes", w);
    CU_ASSERT_STRING_EQUAL(err.msg, msg);
    st_close(&st);
    // without metadata: none (a random model of 10 classes prints "class N")
    SafeTensors none = {0};
    CU_ASSERT_EQUAL(labels_for_weights(&l, NULL, NULL, &none, 10, &err), VIT_OK);
    CU_ASSERT_EQUAL(l.count, 0);
    CU_ASSERT_EQUAL(labels_load_metadata(&l, NULL, &err), VIT_OK);
    CU_ASSERT_EQUAL(l.count, 0);

    // vit classify prints the names, or the labels file's
    CliResult r = VIT_RUN("classify", "--weights", w, img, "--top", "10");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    float got[10];
    CU_ASSERT_EQUAL(read_named_table(r.out, got), 10);
    cli_result_free(&r);
    r = VIT_RUN("classify", "--weights", w, img, "--top", "10", "--labels", labels);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "  nine\n"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "Ankle boot"));
    cli_result_free(&r);

    // malformed: refused with one line naming the file and the key, exit 1
    const struct {
        const char *json, *needle;
    } bad[] = {
        {"[\"a\", \"b\"", "__metadata__ \"class_names\" is not valid JSON"},
        {"[\"a\"] trailing", "__metadata__ \"class_names\" is not valid JSON"},
        {"{\"0\": \"a\"}", "__metadata__ \"class_names\" is not a JSON array"},
        {"[]", "__metadata__ \"class_names\" holds 0 names"},
        {"[\"a\", \"b\", 3, \"d\", \"e\", \"f\", \"g\", \"h\", \"i\", \"j\"]",
         "__metadata__ \"class_names\": entry 2 is a number, not a string"},
        {"[\"a\", null, \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\", \"j\"]",
         "entry 1 is null, not a string"},
        {"[\"a\", \"b\", \"c\"]", "__metadata__ \"class_names\" has 3 names but the model has 10 "
                                  "classes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        GREY_MODEL(w, "class_names", bad[i].json);
        snprintf(msg, sizeof msg, "%s: ", w);
        EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, msg, bad[i].needle);
    }
    // a malformed mean or an unknown preset in the file: refused by name too
    GREY_MODEL(w, "mean", "0.2,0.3");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, "__metadata__ \"mean\": expected "
                   "one number (the model has 1 channel), got '0.2,0.3'");
    GREY_MODEL(w, "preprocess", "caffe");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, "__metadata__ \"preprocess\": "
                   "unknown preprocessing preset 'caffe'");
    scratch_remove(&dir);
}

/* --------------------------------------------------------------- bad input */

// Broken weights files: every one named, exit 1, and `vit trace` writes nothing.
static void test_bad_weights_files(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], good[PATH_SIZE], img[PATH_SIZE], out[PATH_SIZE];
    scratch_file(&dir, "bad.safetensors", w, sizeof w);
    scratch_file(&dir, "good.safetensors", good, sizeof good);
    scratch_file(&dir, "out.safetensors", out, sizeof out);
    test_image("img_wide.png", img);
    make_model(good);
    const char *F32_2 = "{\"cls_token\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    const struct {
        const char *json;
        size_t data;
        uint64_t claimed; // header length to claim (0: the true one)
        const char *needle;
    } cases[] = {
        {"", 0, 0, "too short"},                                       // 8 bytes of zeros, no JSON
        {F32_2, 4, 0, "run past the data section"},                    // truncated data
        {F32_2, 8, 1u << 30, "exceeds"},                               // header length beyond the file
        {"{\"cls_token\":{\"dtype\":\"F32\",", 0, 0, "not valid JSON"}, // invalid JSON
        {"{\"cls_token\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 0,
         "unknown dtype 'Q4'"},
        {"{\"cls_token\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,80]}}", 8, 0,
         "run past the data section"},                                 // offsets out of range
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"cls_token\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, 0,
         "overlap"},
        {"{\"cls_token\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, 0,
         "need 12"},                                                   // bytes ≠ shape
        {F32_2, 8, 0, "missing tensor 'patch_embed.proj.weight'"},     // a missing tensor, named
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (i == 0) write_bytes(w, "\0\0\0\0\0\0", 6);
        else write_safetensors(w, cases[i].json, cases[i].data, cases[i].claimed);
        EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, w, cases[i].needle);
        EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, img, "--out", out), 1, w,
                       cases[i].needle);
        CU_ASSERT_FALSE(file_exists(out));
    }
    // an empty file, a directory, a missing file
    write_bytes(w, "", 0);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, w, "is empty");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", dir.path, img), 1, dir.path, "is a directory");
    scratch_file(&dir, "nope.safetensors", w, sizeof w);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, w, "cannot open");
    CU_ASSERT_FALSE(file_exists(out));
    scratch_remove(&dir);
}

// Weights whose tensors disagree with the configuration they imply.
static void test_inconsistent_weights(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char good[PATH_SIZE], w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "good.safetensors", good, sizeof good);
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    test_image("img_wide.png", img);
    make_model(good);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, good, &err), VIT_OK);
    // rewrite the model with (a) one tensor of the wrong shape, (b) 5 heads for D 64
    for (int variant = 0; variant < 2; variant++) {
        StWriter wr = {0};
        Tensor *copies = calloc((size_t)st.count, sizeof(Tensor));
        for (int i = 0; i < st.count; i++) {
            CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, st.tensors[i].name, &copies[i], &err), VIT_OK);
            if (variant == 0 && !strcmp(st.tensors[i].name, "blocks.1.mlp.fc1.bias"))
                copies[i].shape[0] = 255, copies[i].numel = 255;
            st_writer_add(&wr, st.tensors[i].name, &copies[i]);
        }
        st_writer_meta(&wr, "num_heads", variant == 1 ? "5" : "4");
        CU_ASSERT_EQUAL_FATAL(st_writer_save(&wr, w, &err), VIT_OK);
        st_writer_free(&wr);
        for (int i = 0; i < st.count; i++) tensor_free(&copies[i]);
        free(copies);
        if (variant == 0)
            EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, w,
                           "'blocks.1.mlp.fc1.bias' has shape (255)", "needs (256)");
        else
            EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, w,
                           "not divisible by 5 heads");
    }
    st_close(&st);
    scratch_remove(&dir);
}

// Broken images: named, exit 1; the model is fine.
static void test_bad_images(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], bad[PATH_SIZE], out[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "out.safetensors", out, sizeof out);
    make_model(w);
#define BYTES(literal) literal, sizeof literal - 1 // a string literal and its length
    const struct {
        const char *name, *needle, *bytes;
        size_t len;
    } cases[] = {
        {"text.png", "not an image I can decode", BYTES("this is not a picture")},
        {"empty.jpg", "is empty", BYTES("")},
        // a BMP header claiming 0×0 pixels
        {"zero.bmp", "zero size",
         BYTES("BM\x3a\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0\0\0\0\0\0\0\0\0\x01\0\x18\0"
               "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0")},
        // a PPM header claiming 20000×20000 pixels: refused before decoding
        {"bomb.ppm", "larger than the", BYTES("P6\n20000 20000\n255\n")},
        {"cut.ppm", "truncated", BYTES("P6\n4 4\n255\nabc")},
    };
#undef BYTES
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scratch_file(&dir, cases[i].name, bad, sizeof bad);
        write_bytes(bad, cases[i].bytes, cases[i].len);
        EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, bad), 1, bad, cases[i].needle);
        EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, bad, "--out", out), 1, bad,
                       cases[i].needle);
    }
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, dir.path), 1, dir.path, "is a directory");
    CU_ASSERT_FALSE(file_exists(out));
    scratch_remove(&dir);
}

// Bad flags: exit 2, the flag named.
static void test_bad_flags(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) CU_FAIL_FATAL("no scratch directory");
    char w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    test_image("img_wide.png", img);
    make_model(w);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--preprocess", "caffe"), 2,
                   "unknown preprocessing preset 'caffe'");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--top", "many"), 2, "--top",
                   "'many' is not an integer");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--top", "0"), 2, "--top");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--threads", "-3"), 2, "--threads");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--mean", "0.5,x,0.5"), 2, "--mean");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--std", "0.5,0,0.5"), 2, "--std",
                   "greater than 0");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--img-size", "1e9"), 2, "--img-size");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w), 2, "at least one IMAGE");
    EXPECT_FAILURE(VIT_RUN("classify", img), 2, "--weights");
    scratch_remove(&dir);
}

CU_TestInfo tests_classify[] = {
    {"classify prints the top K", test_classify_prints_top_k},
    {"classify: labels, several images, --trace", test_classify_labels_and_several_images},
    {"trace accepts an image", test_trace_accepts_an_image},
    {"classify at another image size", test_classify_at_another_image_size},
    {"classify a grey model by its metadata", test_classify_a_grey_model_by_its_metadata},
    {"a grey model without metadata", test_grey_model_without_metadata},
    {"class names from the weights", test_class_names_from_the_weights},
    {"bad weights files", test_bad_weights_files},
    {"weights inconsistent with their config", test_inconsistent_weights},
    {"bad images", test_bad_images},
    {"bad flags", test_bad_flags},
    CU_TEST_INFO_NULL,
};
