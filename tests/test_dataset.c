/**
 * @file test_dataset.c
 * @brief Datasets (lib/train/dataset.h): the installed Fashion-MNIST against its
 *        published facts, views, batches (normalisation, crop, flip,
 *        determinism), shuffling and statistics.
 *
 * The real sets are read once per run (about 0.2 s for the 60,000 training
 * images) and kept for every test that needs them. The batch tests compare
 * with a plain reference written here: the padded image built in full, then
 * cropped, then mirrored, pixel by pixel.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "cli_run.h"
#include "train/dataset.h"
#include "io/idx_format.h"

enum { PATH_SIZE = 512 };

/* ------------------------------------------------------- the real dataset */

static Dataset fashion_sets[2];
static bool fashion_tried[2];

static void free_fashion(void) {
    dataset_free(&fashion_sets[0]);
    dataset_free(&fashion_sets[1]);
}

// The installed Fashion-MNIST split ("train" or "test"), loaded on first use; NULL if it cannot be.
static const Dataset *fashion(const char *split) {
    int k = strcmp(split, "train") == 0 ? 0 : 1;
    if (!fashion_tried[k]) {
        fashion_tried[k] = true;
        if (!fashion_tried[1 - k]) atexit(free_fashion);
        VitError err = {{0}};
        if (dataset_fashion_mnist_load(&fashion_sets[k], NULL, split, &err) != VIT_OK)
            fprintf(stderr, "\n    %s (scripts/deps.sh installs dataset-fashion-mnist)\n", err.msg);
    }
    return fashion_sets[k].count > 0 ? &fashion_sets[k] : NULL;
}

static void check_fashion(const char *split, int count) {
    const Dataset *d = fashion(split);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL(d->count, count);
    CU_ASSERT_EQUAL(d->channels, 1);
    CU_ASSERT_EQUAL(d->size, 28);
    CU_ASSERT_EQUAL(d->classes, 10);
    CU_ASSERT(d->pixels == d->owned_pixels && d->labels == d->owned_labels);
    CU_ASSERT_PTR_EQUAL(d->class_names, DATASET_FASHION_MNIST_CLASSES);
    // both sets start with an ankle boot
    CU_ASSERT_EQUAL(d->labels[0], 9);
    CU_ASSERT_STRING_EQUAL(d->class_names[d->labels[0]], "Ankle boot");
    int per_class[10] = {0};
    for (int i = 0; i < d->count; i++) per_class[d->labels[i]]++;
    for (int c = 0; c < 10; c++) CU_ASSERT_EQUAL(per_class[c], count / 10);
}

static void test_fashion_train(void) { check_fashion("train", 60000); }
static void test_fashion_test(void) { check_fashion("test", 10000); }

static void test_class_names(void) {
    const char *want[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                            "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    for (int c = 0; c < 10; c++) CU_ASSERT_STRING_EQUAL(DATASET_FASHION_MNIST_CLASSES[c], want[c]);
}

// The published normalisation of Fashion-MNIST: mean 0.2860, std 0.3530.
static void test_fashion_statistics(void) {
    const Dataset *d = fashion("train");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    double mean, std;
    dataset_stats(d, &mean, &std);
    if (fabs(mean - 0.2860) > 5e-4 || fabs(std - 0.3530) > 5e-4)
        fprintf(stderr, "\n    mean %.6f std %.6f, published 0.2860 and 0.3530\n", mean, std);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.2860, 5e-4);
    CU_ASSERT_DOUBLE_EQUAL(std, 0.3530, 5e-4);
}

static void test_stats_by_hand(void) {
    // 0 and 255 once each: mean 1/2, std 1/2; then 0, 0, 0, 255: mean 1/4, std √3/4
    unsigned char px[4] = {0, 255, 0, 0};
    unsigned char lab[4] = {0};
    Dataset d = {.count = 2, .channels = 1, .size = 1, .classes = 1, .pixels = px, .labels = lab};
    double mean, std;
    dataset_stats(&d, &mean, &std);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.5, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(std, 0.5, 1e-15);
    px[1] = 0, px[3] = 255;
    d.count = 4;
    dataset_stats(&d, &mean, &std);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.25, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(std, sqrt(3.0) / 4, 1e-15);
    Dataset empty = dataset_slice(&d, 4, 0);
    dataset_stats(&empty, &mean, &std);
    CU_ASSERT(mean == 0 && std == 0);
}

/* ------------------------------------------------------------------ views */

static void test_slices_and_validation_split(void) {
    const Dataset *d = fashion("train");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    Dataset train, val;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(dataset_split_validation(&train, &val, d, FASHION_MNIST_VAL, &err),
                          VIT_OK);
    CU_ASSERT_EQUAL(train.count, 55000);
    CU_ASSERT_EQUAL(val.count, 5000);
    // views: the same memory, nothing owned
    CU_ASSERT_PTR_EQUAL(train.pixels, d->pixels);
    CU_ASSERT_PTR_EQUAL(val.pixels, d->pixels + (size_t)55000 * 28 * 28);
    CU_ASSERT_PTR_EQUAL(val.labels, d->labels + 55000);
    CU_ASSERT(train.owned_pixels == NULL && train.owned_labels == NULL);
    CU_ASSERT(val.owned_pixels == NULL && val.owned_labels == NULL);
    CU_ASSERT(val.channels == 1 && val.size == 28 && val.classes == 10);
    CU_ASSERT_PTR_EQUAL(val.class_names, DATASET_FASHION_MNIST_CLASSES);
    // the validation set's last image is the training file's last
    CU_ASSERT_EQUAL(memcmp(val.pixels + (size_t)4999 * 784, d->pixels + (size_t)59999 * 784, 784), 0);
    // a slice of a slice
    Dataset s = dataset_slice(&val, 10, 3);
    CU_ASSERT_EQUAL(s.count, 3);
    CU_ASSERT_PTR_EQUAL(s.pixels, d->pixels + (size_t)55010 * 784);
    CU_ASSERT_EQUAL(s.labels[2], d->labels[55012]);
    Dataset whole = dataset_slice(d, 0, d->count), none = dataset_slice(d, d->count, 0);
    CU_ASSERT(whole.count == 60000 && none.count == 0);
    dataset_free(&s); // a view owns nothing: this only zeroes it
    CU_ASSERT(s.count == 0 && s.pixels == NULL);
    CU_ASSERT_EQUAL(d->labels[0], 9); // and the set itself is untouched
}

/* -------------------------------------------------------- loading, failing */

static void write_idx_gz(const char *path, uint32_t magic, int ndim, const uint32_t *dims,
                         const unsigned char *data, size_t n, bool gz) {
    unsigned char header[16];
    for (int i = 0; i <= ndim; i++) {
        uint32_t v = i == 0 ? magic : dims[i - 1];
        header[4 * i] = (unsigned char)(v >> 24), header[4 * i + 1] = (unsigned char)(v >> 16);
        header[4 * i + 2] = (unsigned char)(v >> 8), header[4 * i + 3] = (unsigned char)v;
    }
    if (gz) {
        gzFile f = gzopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(gzwrite(f, header, 4 * (unsigned)(ndim + 1)), 4 * (ndim + 1));
        CU_ASSERT_EQUAL(gzwrite(f, data, (unsigned)n), (int)n);
        CU_ASSERT_EQUAL(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fwrite(header, 1, 4 * (size_t)(ndim + 1), f);
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

// A Fashion-MNIST-shaped folder: n images of rows×cols and m labels, gzip or plain.
static void write_set(const ScratchDir *dir, const char *prefix, int n, int rows, int cols,
                      const unsigned char *labels, int m, bool gz) {
    char path[PATH_SIZE], name[64];
    unsigned char px[4 * 3 * 3];
    for (int k = 0; k < (int)sizeof px; k++) px[k] = (unsigned char)(k * 19);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", prefix, gz ? ".gz" : "");
    write_idx_gz(scratch_file(dir, name, path, sizeof path), IDX_MAGIC_IMAGES, 3,
                 (uint32_t[]){(uint32_t)n, (uint32_t)rows, (uint32_t)cols}, px,
                 (size_t)n * rows * cols, gz);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", prefix, gz ? ".gz" : "");
    write_idx_gz(scratch_file(dir, name, path, sizeof path), IDX_MAGIC_LABELS, 1,
                 (uint32_t[]){(uint32_t)m}, labels, (size_t)m, gz);
}

static void expect_load_failure(const char *dir, const char *split, VitStatus status,
                                const char *a, const char *b) {
    Dataset d;
    memset(&d, 0x5a, sizeof d);
    VitError err = {{0}};
    CU_ASSERT_EQUAL(dataset_fashion_mnist_load(&d, dir, split, &err), status);
    CU_ASSERT(d.count == 0 && d.pixels == NULL && d.labels == NULL && d.owned_pixels == NULL &&
              d.owned_labels == NULL && d.class_names == NULL);
    bool ok = strstr(err.msg, a) && (!b || strstr(err.msg, b));
    if (!ok) fprintf(stderr, "\n    message '%s' lacks '%s' / '%s'\n", err.msg, a, b ? b : "");
    CU_ASSERT(ok);
}

static void test_load_checks(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    const unsigned char labels[4] = {3, 9, 0, 12};
    // a good little set, plain files (no .gz there): loaded
    write_set(&dir, "t10k", 4, 3, 3, labels, 3, false);
    write_set(&dir, "train", 3, 3, 3, labels, 3, false);
    Dataset d;
    VitError err = {{0}};
    CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load(&d, dir.path, "train", &err), VIT_OK);
    CU_ASSERT(d.count == 3 && d.size == 3 && d.channels == 1 && d.classes == 10);
    CU_ASSERT(d.pixels[8] == (unsigned char)(8 * 19) && d.labels[1] == 9);
    dataset_free(&d);
    CU_ASSERT(d.count == 0 && d.owned_pixels == NULL);
    // 4 images, 3 labels
    char lab[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "t10k-labels-idx1-ubyte", lab, sizeof lab);
    scratch_file(&dir, "t10k-images-idx3-ubyte", img, sizeof img);
    expect_load_failure(dir.path, "test", VIT_ERR_INPUT, lab, "3 labels for the 4 images of");
    // a label that is no class; the .gz files, now there, are read first
    write_set(&dir, "t10k", 4, 3, 3, labels, 4, true);
    scratch_file(&dir, "t10k-labels-idx1-ubyte.gz", lab, sizeof lab);
    expect_load_failure(dir.path, "test", VIT_ERR_INPUT, lab,
                        "label 12 of image 3 is not a Fashion-MNIST class (0 to 9)");
    // images that are not square
    write_set(&dir, "train", 3, 3, 2, labels, 3, true);
    scratch_file(&dir, "train-images-idx3-ubyte.gz", img, sizeof img);
    expect_load_failure(dir.path, "train", VIT_ERR_INPUT, img,
                        "images of 3×2 pixels; a dataset's images must be square");
    // a bad file inside: idx's message comes through
    write_set(&dir, "train", 3, 3, 3, labels, 3, true);
    write_idx_gz(img, IDX_MAGIC_LABELS, 1, (uint32_t[]){3}, labels, 3, true);
    expect_load_failure(dir.path, "train", VIT_ERR_INPUT, img, "is a labels file, not images");
    // an unknown split is bad usage; a folder without the files says what installs them
    expect_load_failure(dir.path, "validation", VIT_ERR_USAGE,
                        "unknown Fashion-MNIST split 'validation' (train or test)", NULL);
    expect_load_failure(dir.path, NULL, VIT_ERR_USAGE, "unknown Fashion-MNIST split", NULL);
    char empty[PATH_SIZE];
    scratch_file(&dir, "nothing", empty, sizeof empty);
    expect_load_failure(empty, "train", VIT_ERR_INPUT, "nothing/train-images-idx3-ubyte.gz: cannot "
                        "open: No such file or directory", "dataset-fashion-mnist");
    scratch_remove(&dir);
}

// Refused by dataset_fashion_mnist_load_first(): as expect_load_failure(), for the first count.
static void expect_load_first_failure(const char *dir, const char *split, int count,
                                      const char *a, const char *b) {
    Dataset d;
    memset(&d, 0x5a, sizeof d);
    VitError err = {{0}};
    CU_ASSERT_EQUAL(dataset_fashion_mnist_load_first(&d, dir, split, count, &err), VIT_ERR_INPUT);
    CU_ASSERT(d.count == 0 && d.pixels == NULL && d.labels == NULL && d.owned_pixels == NULL &&
              d.owned_labels == NULL && d.class_names == NULL);
    bool ok = strstr(err.msg, a) && (!b || strstr(err.msg, b));
    if (!ok) fprintf(stderr, "\n    message '%s' lacks '%s' / '%s'\n", err.msg, a, b ? b : "");
    CU_ASSERT(ok);
}

// The first images of the installed splits are the whole splits' first, byte for byte.
static void test_load_first_of_fashion(void) {
    const struct { const char *split; int count; } cases[] = {
        {"train", 64}, {"train", 2000}, {"test", 1}, {"test", 10000},
    };
    for (int k = 0; k < 4; k++) {
        const Dataset *all = fashion(cases[k].split);
        CU_ASSERT_PTR_NOT_NULL_FATAL(all);
        Dataset d;
        VitError err = {{0}};
        CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load_first(&d, NULL, cases[k].split,
                                                               cases[k].count, &err), VIT_OK);
        CU_ASSERT(d.count == cases[k].count && d.channels == 1 && d.size == 28 && d.classes == 10);
        CU_ASSERT(d.pixels == d.owned_pixels && d.labels == d.owned_labels);
        CU_ASSERT_PTR_EQUAL(d.class_names, DATASET_FASHION_MNIST_CLASSES);
        CU_ASSERT_EQUAL(memcmp(d.pixels, all->pixels, (size_t)d.count * 784), 0);
        CU_ASSERT_EQUAL(memcmp(d.labels, all->labels, (size_t)d.count), 0);
        dataset_free(&d);
    }
    FashionMnistFiles files;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_files(&files, NULL, "test", &err), VIT_OK);
    expect_load_first_failure(NULL, "test", 20000, files.images,
                              "holds 10,000 images, fewer than the 20,000 asked for");
    expect_load_first_failure(NULL, "train", 0, "asked for the first 0 images; ask for 1 or more",
                              NULL);
    expect_load_first_failure(NULL, "train", -3, "asked for the first -3 images", NULL);
}

// A little set, plain and gzip: the first images load, and are checked as the whole set is.
static void test_load_first_checks(void) {
    const unsigned char labels[4] = {3, 9, 0, 12};
    for (int gz = 0; gz <= 1; gz++) {
        ScratchDir set;
        CU_ASSERT_FATAL(scratch_make(&set));
        const char *sub = set.path;
        char lab[PATH_SIZE], img[PATH_SIZE];
        write_set(&set, "train", 4, 3, 3, labels, 4, gz);
        Dataset whole = {0}, d;
        VitError err = {{0}};
        CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load_first(&d, sub, "train", 3, &err), VIT_OK);
        CU_ASSERT(d.count == 3 && d.size == 3 && d.channels == 1 && d.classes == 10);
        CU_ASSERT(d.pixels[8] == (unsigned char)(8 * 19) && d.labels[1] == 9);
        dataset_free(&d);
        // the fourth label, 12, is no class: it is seen once the fourth image is asked for
        const char *suffix = gz ? ".gz" : "";
        snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte%s", sub, suffix);
        snprintf(img, sizeof img, "%s/train-images-idx3-ubyte%s", sub, suffix);
        expect_load_first_failure(sub, "train", 4, lab, "label 12 of image 3 is not a "
                                  "Fashion-MNIST class (0 to 9)");
        CU_ASSERT_NOT_EQUAL(dataset_fashion_mnist_load(&whole, sub, "train", &err), VIT_OK);
        expect_load_first_failure(sub, "train", 5, img, "holds 4 images, fewer than the 5 asked for");
        // fewer labels than the images asked for: the labels file says so
        write_set(&set, "train", 4, 3, 3, labels, 2, gz);
        expect_load_first_failure(sub, "train", 3, lab, "holds 2 labels, fewer than the 3 asked for");
        // images that are not square
        write_set(&set, "train", 3, 3, 2, labels, 3, gz);
        expect_load_first_failure(sub, "train", 1, img,
                                  "images of 3×2 pixels; a dataset's images must be square");
        scratch_remove(&set);
    }
}

/* ---------------------------------------------------------------- batches */

enum { TC = 2, TS = 5, TN = 6 }; // a tiny set: 6 images of 2×5×5

static unsigned char tiny_px[TN * TC * TS * TS];
static unsigned char tiny_lab[TN] = {4, 1, 0, 9, 2, 7};

static Dataset tiny_set(void) {
    for (int k = 0; k < (int)sizeof tiny_px; k++) tiny_px[k] = (unsigned char)(k * 89 + k / 7);
    tiny_px[0] = 0, tiny_px[1] = 255;
    return (Dataset){.count = TN, .channels = TC, .size = TS, .classes = 10, .pixels = tiny_px,
                     .labels = tiny_lab, .class_names = DATASET_FASHION_MNIST_CLASSES};
}

static float norm(unsigned char v, float mean, float std) { return ((float)v / 255.0f - mean) / std; }

// The reference: image i padded by p in full, cropped at (dy, dx), mirrored when flip.
static void reference_augmented(float *out, const Dataset *d, int i, int p, AugmentDraw a,
                                float mean, float std) {
    int S = d->size, P = S + 2 * p;
    unsigned char *padded = calloc((size_t)P * P, 1);
    for (int c = 0; c < d->channels; c++) {
        memset(padded, 0, (size_t)P * P);
        const unsigned char *src = d->pixels + ((size_t)i * d->channels + c) * S * S;
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) padded[(y + p) * P + x + p] = src[y * S + x];
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                float v = norm(padded[(y + a.dy) * P + x + a.dx], mean, std); // the crop
                out[((size_t)c * S + y) * S + (a.flip ? S - 1 - x : x)] = v;  // the mirror
            }
    }
    free(padded);
}

static void test_batch_normalises_exactly(void) {
    Dataset d = tiny_set();
    const int idx[4] = {3, 0, 5, 3};
    float out[4 * TC * TS * TS];
    int labels[4];
    const float mean = 0.2860f, std = 0.3530f;
    dataset_batch(out, labels, &d, idx, 4, mean, std, NULL, NULL);
    for (int b = 0; b < 4; b++) {
        CU_ASSERT_EQUAL(labels[b], tiny_lab[idx[b]]);
        for (int k = 0; k < TC * TS * TS; k++)
            CU_ASSERT_EQUAL(out[b * TC * TS * TS + k], norm(tiny_px[idx[b] * TC * TS * TS + k], mean, std));
    }
    // black and white at their known values
    CU_ASSERT_DOUBLE_EQUAL(out[TC * TS * TS], -0.2860 / 0.3530, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[TC * TS * TS + 1], (1 - 0.2860) / 0.3530, 1e-6);
    // an augmentation that does nothing gives the same batch and draws nothing
    Rng rng, before;
    rng_seed(&rng, 5);
    before = rng;
    float again[sizeof out / sizeof out[0]];
    dataset_batch(again, labels, &d, idx, 4, mean, std, &(Augment){0, false}, &rng);
    CU_ASSERT_EQUAL(memcmp(again, out, sizeof out), 0);
    CU_ASSERT_EQUAL(memcmp(&rng, &before, sizeof rng), 0);
}

static void test_augment_draws_in_range(void) {
    Rng rng;
    rng_seed(&rng, 11);
    const Augment aug = {4, true};
    int seen[9] = {0}, flips = 0, n = 9000;
    for (int t = 0; t < n; t++) {
        AugmentDraw a = dataset_augment_draw(&aug, &rng);
        CU_ASSERT_FATAL(a.dy >= 0 && a.dy <= 8 && a.dx >= 0 && a.dx <= 8);
        seen[a.dy]++, seen[a.dx]++;
        flips += a.flip;
    }
    for (int v = 0; v <= 8; v++) CU_ASSERT(abs(seen[v] - 2 * n / 9) < 200); // ≈ 2000 each
    CU_ASSERT(abs(flips - n / 2) < 300);
    // pad 0, no flip: (0, 0), nothing drawn
    Rng before = rng;
    AugmentDraw a = dataset_augment_draw(&(Augment){0, false}, &rng);
    CU_ASSERT(a.dy == 0 && a.dx == 0 && !a.flip);
    CU_ASSERT_EQUAL(memcmp(&rng, &before, sizeof rng), 0);
}

static void test_flip_mirrors_exactly(void) {
    Dataset d = tiny_set();
    enum { B = 32 };
    int idx[B], labels[B];
    for (int b = 0; b < B; b++) idx[b] = b % TN;
    float out[B * TC * TS * TS], ref[TC * TS * TS];
    Rng rng, replay;
    rng_seed(&rng, 2);
    replay = rng;
    const Augment aug = {0, true};
    dataset_batch(out, labels, &d, idx, B, 0.5f, 0.25f, &aug, &rng);
    int flipped = 0;
    for (int b = 0; b < B; b++) {
        AugmentDraw a = dataset_augment_draw(&aug, &replay);
        CU_ASSERT(a.dy == 0 && a.dx == 0);
        flipped += a.flip;
        const float *o = out + b * TC * TS * TS;
        const unsigned char *src = tiny_px + idx[b] * TC * TS * TS;
        for (int c = 0; c < TC; c++) // column x of the output is column S−1−x of the image
            for (int y = 0; y < TS; y++)
                for (int x = 0; x < TS; x++)
                    CU_ASSERT_EQUAL(o[(c * TS + y) * TS + x],
                                    norm(src[(c * TS + y) * TS + (a.flip ? TS - 1 - x : x)], 0.5f, 0.25f));
        reference_augmented(ref, &d, idx[b], 0, a, 0.5f, 0.25f);
        CU_ASSERT_EQUAL(memcmp(o, ref, sizeof ref), 0);
        CU_ASSERT_EQUAL(labels[b], tiny_lab[idx[b]]);
    }
    CU_ASSERT(flipped > 4 && flipped < B - 4); // both kinds happened
    CU_ASSERT_EQUAL(memcmp(&rng, &replay, sizeof rng), 0); // one draw per image, no more
}

static void test_crop_matches_reference(void) {
    Dataset d = tiny_set();
    enum { B = 48 };
    int idx[B], labels[B];
    for (int b = 0; b < B; b++) idx[b] = (b * 5) % TN;
    float out[B * TC * TS * TS], ref[TC * TS * TS];
    for (int pad = 1; pad <= 3; pad++) {
        const Augment aug = {pad, pad != 2};
        Rng rng, replay;
        rng_seed(&rng, (uint64_t)(40 + pad));
        replay = rng;
        dataset_batch(out, labels, &d, idx, B, 0.1f, 0.7f, &aug, &rng);
        bool moved = false;
        for (int b = 0; b < B; b++) {
            AugmentDraw a = dataset_augment_draw(&aug, &replay);
            CU_ASSERT(a.dy >= 0 && a.dy <= 2 * pad && a.dx >= 0 && a.dx <= 2 * pad);
            moved = moved || a.dy != pad || a.dx != pad;
            reference_augmented(ref, &d, idx[b], pad, a, 0.1f, 0.7f);
            CU_ASSERT_EQUAL(memcmp(out + b * TC * TS * TS, ref, sizeof ref), 0);
        }
        CU_ASSERT(moved);
    }
    // an all-white image: the black border left by a crop at (dy, dx) is
    // S² − (S − |dy − p|)·(S − |dx − p|) pixels per channel
    unsigned char white[TC * TS * TS];
    memset(white, 255, sizeof white);
    unsigned char lab = 0;
    Dataset w = {.count = 1, .channels = TC, .size = TS, .classes = 1, .pixels = white, .labels = &lab};
    const Augment aug = {2, false};
    Rng rng, replay;
    rng_seed(&rng, 8);
    replay = rng;
    for (int t = 0; t < 40; t++) {
        int zero = 0, l;
        dataset_batch(out, &l, &w, &zero, 1, 0.0f, 1.0f, &aug, &rng);
        AugmentDraw a = dataset_augment_draw(&aug, &replay);
        int black = 0;
        for (int k = 0; k < TC * TS * TS; k++) black += out[k] == 0.0f;
        int inside = (TS - abs(a.dy - 2)) * (TS - abs(a.dx - 2));
        CU_ASSERT_EQUAL(black, TC * (TS * TS - inside));
    }
}

static void test_same_seed_same_batch(void) {
    const Dataset *d = fashion("train");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    enum { B = 64 };
    static int order[60000];
    int labels[3][B];
    Rng rng;
    rng_seed(&rng, 123);
    dataset_shuffle(order, d->count, &rng);
    static float out[3][B * 28 * 28];
    const Augment aug = {2, true};
    for (int run = 0; run < 3; run++) {
        rng_seed(&rng, run < 2 ? 7 : 8);
        dataset_batch(out[run], labels[run], d, order, B, 0.2860f, 0.3530f, &aug, &rng);
    }
    CU_ASSERT_EQUAL(memcmp(out[0], out[1], sizeof out[0]), 0);
    CU_ASSERT_EQUAL(memcmp(labels[0], labels[1], sizeof labels[0]), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(out[0], out[2], sizeof out[0]), 0);
    CU_ASSERT_EQUAL(memcmp(labels[0], labels[2], sizeof labels[0]), 0); // same images, other crops
    for (int b = 0; b < B; b++) CU_ASSERT_EQUAL(labels[0][b], d->labels[order[b]]);
}

/* -------------------------------------------------------------- shuffling */

static void test_shuffle_is_a_deterministic_permutation(void) {
    enum { N = 1000 };
    static int a[N], b[N], c[N];
    Rng rng;
    rng_seed(&rng, 99);
    dataset_shuffle(a, N, &rng);
    rng_seed(&rng, 99);
    dataset_shuffle(b, N, &rng);
    rng_seed(&rng, 100);
    dataset_shuffle(c, N, &rng);
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(a, c, sizeof a), 0);
    bool seen[N] = {false};
    int fixed = 0;
    for (int i = 0; i < N; i++) {
        CU_ASSERT_FATAL(a[i] >= 0 && a[i] < N && !seen[a[i]]);
        seen[a[i]] = true;
        fixed += a[i] == i;
    }
    CU_ASSERT(fixed < 10); // about one fixed point is expected
    // every order of three, about equally often (1,000 of 6,000 each)
    int count[3][3][3] = {{{0}}};
    for (int t = 0; t < 6000; t++) {
        int o[3];
        dataset_shuffle(o, 3, &rng);
        count[o[0]][o[1]][o[2]]++;
    }
    const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int p = 0; p < 6; p++) {
        int n = count[perms[p][0]][perms[p][1]][perms[p][2]];
        if (abs(n - 1000) >= 150) fprintf(stderr, "\n    permutation %d came %d times\n", p, n);
        CU_ASSERT(abs(n - 1000) < 150);
    }
    // n = 1 and n = 0 draw nothing
    Rng before = rng;
    int one = -1;
    dataset_shuffle(&one, 1, &rng);
    dataset_shuffle(NULL, 0, &rng);
    CU_ASSERT_EQUAL(one, 0);
    CU_ASSERT_EQUAL(memcmp(&rng, &before, sizeof rng), 0);
}

CU_TestInfo tests_dataset[] = {
    {"Fashion-MNIST train: 60,000 of 28x28, 6,000 a class", test_fashion_train},
    {"Fashion-MNIST test: 10,000 of 28x28, 1,000 a class", test_fashion_test},
    {"the ten class names", test_class_names},
    {"train mean and std are the published 0.2860, 0.3530", test_fashion_statistics},
    {"statistics by hand", test_stats_by_hand},
    {"slices and the validation split are views", test_slices_and_validation_split},
    {"loading checks counts, labels and squareness", test_load_checks},
    {"the first images of a split are the whole split's first", test_load_first_of_fashion},
    {"loading the first images checks them as the whole set", test_load_first_checks},
    {"a batch normalises exactly", test_batch_normalises_exactly},
    {"augmentation draws stay in range", test_augment_draws_in_range},
    {"flip mirrors exactly", test_flip_mirrors_exactly},
    {"crops match a padded reference", test_crop_matches_reference},
    {"same seed same batch, other seed other batch", test_same_seed_same_batch},
    {"shuffle is a deterministic permutation", test_shuffle_is_a_deterministic_permutation},
    CU_TEST_INFO_NULL,
};
