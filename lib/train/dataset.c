/**
 * @file dataset.c
 * @brief Loading Fashion-MNIST, views, batches with crop and flip, shuffling
 *        and pixel statistics (see dataset.h).
 */
#include "train/dataset.h"
#include "io/idx_format.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const DATASET_FASHION_MNIST_CLASSES[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot",
};

// A programming error (never user input): say what, and stop.
static void misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void misuse(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---------------------------------------------------------------- loading */

// DIR/NAME.gz, or DIR/NAME when only the uncompressed file is there.
static VitStatus find_file(char *path, size_t size, const char *dir, const char *name,
                           VitError *err) {
    char plain[4096];
    int n = snprintf(path, size, "%s/%s.gz", dir, name);
    snprintf(plain, sizeof plain, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size || strlen(plain) + 3 != (size_t)n) {
        char safe[256];
        return vit_fail(err, VIT_ERR_INPUT, "%s: the folder's name is too long",
                        vit_escape(safe, sizeof safe, dir));
    }
    if (access(path, F_OK) == 0) return VIT_OK;
    if (access(plain, F_OK) == 0) {
        memcpy(path, plain, strlen(plain) + 1);
        return VIT_OK;
    }
    char safe[512];
    return vit_fail(err, VIT_ERR_INPUT, "%s: cannot open: %s (Debian's dataset-fashion-mnist "
                    "package installs the files in " FASHION_MNIST_DIR ")",
                    vit_escape(safe, sizeof safe, path), strerror(errno));
}

// [dataset_fashion_mnist_files]
VitStatus dataset_fashion_mnist_files(FashionMnistFiles *f, const char *dir, const char *split,
                              VitError *err) {
    memset(f, 0, sizeof *f);
    const char *prefix = NULL;
    if (split && strcmp(split, "train") == 0) prefix = "train";
    else if (split && strcmp(split, "test") == 0) prefix = "t10k";
    if (!prefix) {
        char safe[64];
        return vit_fail(err, VIT_ERR_USAGE, "unknown Fashion-MNIST split '%s' (train or test)",
                        vit_escape(safe, sizeof safe, split ? split : "(none)"));
    }
    if (!dir) dir = FASHION_MNIST_DIR;
    char name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    VitStatus s = find_file(f->images, sizeof f->images, dir, name, err);
    VitError later;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    const VitStatus labels = find_file(f->labels, sizeof f->labels, dir, name, &later);
    if (s == VIT_OK && labels != VIT_OK) { // the first file missing names the message
        s = labels;
        if (err) *err = later;
    }
    return s;
}
// [dataset_fashion_mnist_files]

// A split's images and labels: all of them (whole), or the first count.
static VitStatus read_split(IdxImages *images, IdxLabels *labels, const FashionMnistFiles *files,
                            bool whole, int count, VitError *err) {
    memset(labels, 0, sizeof *labels);
    VitStatus s = whole ? idx_read_images(images, files->images, err)
                        : idx_read_images_first(images, files->images, count, err);
    if (s != VIT_OK) return s;
    s = whole ? idx_read_labels(labels, files->labels, err)
              : idx_read_labels_first(labels, files->labels, count, err);
    if (s != VIT_OK) idx_images_free(images);
    return s;
}

// [dataset_fashion_mnist_load]
// The split's images (all of them, or the first count), checked, into out.
static VitStatus load_split(Dataset *out, const char *dir, const char *split, bool whole, int count,
                            VitError *err) {
    memset(out, 0, sizeof *out);
    FashionMnistFiles files;
    VitStatus s = dataset_fashion_mnist_files(&files, dir, split, err);
    if (s != VIT_OK) return s;
    IdxImages images;
    IdxLabels labels;
    s = read_split(&images, &labels, &files, whole, count, err);
    if (s != VIT_OK) return s;

    char img_name[512], lab_name[512];
    vit_escape(img_name, sizeof img_name, files.images);
    vit_escape(lab_name, sizeof lab_name, files.labels);
    if (images.rows != images.cols)
        s = vit_fail(err, VIT_ERR_INPUT, "%s: images of %d×%d pixels; a dataset's images must "
                     "be square", img_name, images.rows, images.cols);
    if (s == VIT_OK && labels.count != images.count) {
        char nl[VIT_NUM_BUF], ni[VIT_NUM_BUF];
        s = vit_fail(err, VIT_ERR_INPUT, "%s: %s labels for the %s images of %s", lab_name,
                     vit_thousands(nl, labels.count), vit_thousands(ni, images.count), img_name);
    }
    for (int i = 0; s == VIT_OK && i < labels.count; i++)
        if (labels.labels[i] >= 10) {
            char at[VIT_NUM_BUF];
            s = vit_fail(err, VIT_ERR_INPUT, "%s: label %d of image %s is not a Fashion-MNIST "
                         "class (0 to 9)", lab_name, labels.labels[i], vit_thousands(at, i));
        }
    if (s != VIT_OK) {
        idx_images_free(&images);
        idx_labels_free(&labels);
        return s;
    }
    out->count = images.count;
    out->channels = 1;
    out->size = images.rows;
    out->classes = 10;
    out->pixels = out->owned_pixels = images.pixels;
    out->labels = out->owned_labels = labels.labels;
    out->class_names = DATASET_FASHION_MNIST_CLASSES;
    return VIT_OK;
}

VitStatus dataset_fashion_mnist_load(Dataset *out, const char *dir, const char *split, VitError *err) {
    return load_split(out, dir, split, true, 0, err);
}
// [dataset_fashion_mnist_load]

VitStatus dataset_fashion_mnist_load_first(Dataset *out, const char *dir, const char *split,
                                           int count, VitError *err) {
    return load_split(out, dir, split, false, count, err);
}

void dataset_free(Dataset *d) {
    if (!d) return;
    free(d->owned_pixels);
    free(d->owned_labels);
    memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------------ views */

// [dataset_slice]
Dataset dataset_slice(const Dataset *d, int first, int count) {
    if (first < 0 || count < 0 || first > d->count - count)
        misuse("dataset_slice: images %d to %lld of a set of %d", first, (long long)first + count,
               d->count);
    Dataset v = *d;
    size_t image = (size_t)d->channels * d->size * d->size;
    v.count = count;
    v.pixels = d->pixels ? d->pixels + (size_t)first * image : NULL;
    v.labels = d->labels ? d->labels + first : NULL;
    v.owned_pixels = v.owned_labels = NULL;
    return v;
}
// [dataset_slice]

// [dataset_split_validation]
VitStatus dataset_split_validation(Dataset *train, Dataset *val, const Dataset *d, int val_count,
                                   VitError *err) {
    memset(train, 0, sizeof *train);
    memset(val, 0, sizeof *val);
    if (val_count < 0 || val_count >= d->count) { // a folder of other files can hold fewer
        char n[VIT_NUM_BUF], v[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "the training set has %s images: too few to hold "
                        "out the last %s for validation and keep any to learn from",
                        vit_thousands(n, d->count), vit_thousands(v, val_count));
    }
    *train = dataset_slice(d, 0, d->count - val_count);
    *val = dataset_slice(d, d->count - val_count, val_count);
    return VIT_OK;
}
// [dataset_split_validation]

/* ------------------------------------------------------------- randomness */

// Uniform in [0, n), n ≥ 1: the high half of rng_u32()·n, redrawn while the
// low half falls in the 2³² mod n values that would make some results likelier
// (D. Lemire, "Fast random integer generation in an interval", 2019).
static uint32_t rng_below(Rng *rng, uint32_t n) {
    uint64_t m = (uint64_t)rng_u32(rng) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(0u - n) % n; // 2³² mod n
        while (low < threshold) {
            m = (uint64_t)rng_u32(rng) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

// [dataset_augment_draw]
AugmentDraw dataset_augment_draw(const Augment *aug, Rng *rng) {
    if (aug->pad < 0 || aug->pad > 1024) misuse("dataset_augment_draw: pad %d (0 to 1024)", aug->pad);
    AugmentDraw a = {aug->pad, aug->pad, false};
    if (aug->pad > 0) {
        uint32_t span = 2u * (uint32_t)aug->pad + 1;
        a.dy = (int)rng_below(rng, span);
        a.dx = (int)rng_below(rng, span);
    }
    if (aug->flip) a.flip = rng_u32(rng) >> 31;
    return a;
}
// [dataset_augment_draw]

void dataset_shuffle(int *order, int n, Rng *rng) {
    // order is (n)
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(rng, (uint32_t)i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* ---------------------------------------------------------------- batches */

// [dataset_batch]
void dataset_batch(float *out, int *labels, const Dataset *d, const int *indices, int B, float mean,
                   float std, const Augment *aug, Rng *rng) {
    // out is (B, C, S, S), labels is (B), indices is (B)
    if (aug && !rng) misuse("dataset_batch: augmentation without a generator");
    const int C = d->channels, S = d->size;
    const size_t plane = (size_t)S * S, image = (size_t)C * plane;
    float lut[256]; // every byte's normalised value, computed once per batch
    for (int v = 0; v < 256; v++) lut[v] = ((float)v / 255.0f - mean) / std;
    const float black = lut[0];
    for (int b = 0; b < B; b++) {
        int i = indices[b];
        if (i < 0 || i >= d->count)
            misuse("dataset_batch: index %d (batch row %d) outside the %d images", i, b, d->count);
        labels[b] = d->labels[i];
        const unsigned char *src = d->pixels + (size_t)i * image;
        float *dst = out + (size_t)b * image;
        AugmentDraw a = {0, 0, false};
        int pad = 0;
        if (aug) {
            a = dataset_augment_draw(aug, rng);
            pad = aug->pad;
        }
        if (pad == 0 && !a.flip) { // the image as it is
            for (size_t k = 0; k < image; k++) dst[k] = lut[src[k]];
            continue;
        }
        // out(y, x) = padded(y + dy, x' + dx) = image(y + dy − pad, x' + dx − pad),
        // x' = S − 1 − x when flipped; black outside the image
        for (int c = 0; c < C; c++)
            for (int y = 0; y < S; y++) {
                float *row = dst + c * plane + (size_t)y * S;
                int sy = y + a.dy - pad;
                if (sy < 0 || sy >= S) {
                    for (int x = 0; x < S; x++) row[x] = black;
                    continue;
                }
                const unsigned char *srow = src + c * plane + (size_t)sy * S;
                for (int x = 0; x < S; x++) {
                    int sx = (a.flip ? S - 1 - x : x) + a.dx - pad;
                    row[x] = sx >= 0 && sx < S ? lut[srow[sx]] : black;
                }
            }
    }
}
// [dataset_batch]

/* ------------------------------------------------------------- statistics */

// [dataset_stats]
void dataset_stats(const Dataset *d, double *mean, double *std) {
    // d->pixels is (count, C, S, S): a histogram of the 256 byte values, then
    // the moments from it, exactly as a sum over every pixel would give them
    size_t n = (size_t)d->count * d->channels * d->size * d->size;
    *mean = *std = 0;
    if (n == 0) return;
    uint64_t hist[256] = {0};
    for (size_t k = 0; k < n; k++) hist[d->pixels[k]]++;
    double sum = 0;
    for (int v = 0; v < 256; v++) sum += (double)hist[v] * (v / 255.0);
    double mu = sum / (double)n, sq = 0;
    for (int v = 0; v < 256; v++) sq += (double)hist[v] * (v / 255.0 - mu) * (v / 255.0 - mu);
    *mean = mu;
    *std = sqrt(sq / (double)n);
}
// [dataset_stats]
