/**
 * @file dataset.h
 * @brief A labelled image set in memory (Fashion-MNIST), its splits, and the
 *        batches a training loop feeds the model, with augmentation.
 *
 * Shapes: a Dataset holds count images of (C, S, S) bytes, image i at
 * `pixels + i·C·S·S`, and count labels in [0, classes). A batch is (B, C, S, S)
 * floats, normalised as the model's input is (@ref contract_images):
 * \f$ x = (\text{pixel}/255 - \mu)/\sigma \f$.
 *
 * Fashion-MNIST (H. Xiao, K. Rasul, R. Vollgraf, 2017) is 70,000 grey 28×28
 * photographs of clothing in 10 classes: 60,000 to train on, 10,000 to test
 * on, as Debian's `dataset-fashion-mnist` installs them under
 * FASHION_MNIST_DIR (IDX files, idx_format.h). Its published statistics, over every
 * pixel of the training set in [0, 1] units: mean 0.2860, std 0.3530.
 *
 * The project's fixed validation split: the last FASHION_MNIST_VAL (5,000) of
 * the 60,000 training images are held out for validation, the first 55,000
 * are trained on, and the test set is kept for the end. Splits and slices are
 * views into the loaded set: no pixel is copied.
 *
 * Randomness (shuffling, augmentation) comes from one Rng (rng.h), drawn in a
 * fixed order, so the same seed gives the same epoch bit for bit.
 *
 * Deliberately omitted: colour, images that are not square, datasets larger
 * than memory (streaming), augmentations other than crop and flip (rotation,
 * colour jitter, mixup, cutout), class-balanced sampling and background loading.
 */
#ifndef VIT_DATASET_H
#define VIT_DATASET_H

#include <stdbool.h>

#include "base/rng.h"
#include "base/util.h"

/** @defgroup dataset Datasets
 *  @brief Labelled images in memory, views, shuffled batches, crop and flip.
 *
 *  Batch element (b, c, y, x), for image i = indices[b] drawn with offsets
 *  (dy, dx) and padding p, is
 *  \f[ \text{out}_{b,c,y,x} = \left(\frac{\text{img}_i(c,\ y + dy - p,\ x' + dx - p)}{255}
 *      - \mu\right) \Big/ \sigma, \qquad x' = \begin{cases} S-1-x & \text{flipped} \\
 *      x & \text{otherwise} \end{cases} \f]
 *  with pixels outside the image 0 (black).
 *
 *  Taught in @ref chapter11 "chapter 11" (the data, the split and the batches). Pinned by the
 *  suites @ref test_dataset.c "dataset", @ref test_train.c "train" (@ref answer_keys "the
 *  answer keys").
 *  @{
 */

/** A labelled image set: owned (loaded) or a view into another one. */
typedef struct {
    int count;                            /**< how many images, e.g. 60000 */
    int channels;                         /**< C, e.g. 1 (grey) */
    int size;                             /**< S, the side of the square images, e.g. 28 */
    int classes;                          /**< how many classes, e.g. 10; labels are < classes */
    const unsigned char *pixels;          /**< (count, C, S, S) bytes, 0 = black, 255 = white */
    const unsigned char *labels;          /**< (count) class indices */
    unsigned char *owned_pixels;          /**< what dataset_free() frees; NULL for a view */
    unsigned char *owned_labels;          /**< what dataset_free() frees; NULL for a view */
    const char *const *class_names;       /**< (classes) names, static strings */
} Dataset;

/** The ten Fashion-MNIST classes, by label: "T-shirt/top" (0) … "Ankle boot" (9). */
extern const char *const DATASET_FASHION_MNIST_CLASSES[10];

/** Where Debian's dataset-fashion-mnist package puts the files. */
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
/** How many of the 60,000 training images are held out for validation: the last 5,000. */
#define FASHION_MNIST_VAL 5000

/** The two files of one split, as dataset_fashion_mnist_files() finds them. */
typedef struct {
    char images[4096]; /**< e.g. DIR/train-images-idx3-ubyte.gz */
    char labels[4096]; /**< e.g. DIR/train-labels-idx1-ubyte.gz */
} FashionMnistFiles;

/**
 * @brief Where a split's two files are: DIR/NAME.gz, else DIR/NAME when only
 *        the uncompressed file is there (what dataset_fashion_mnist_load() reads).
 *
 * A program that writes files beside reading these (`vit train`) checks its
 * outputs against them before it starts: no output may replace the data.
 * @param[out] f      the two paths (both filled even when one is missing: the
 *                    file looked for, e.g. DIR/NAME.gz)
 * @param[in]  dir    the folder; NULL for FASHION_MNIST_DIR
 * @param[in]  split  "train" or "test"
 * @param[out] err    "PATH: cannot open: REASON …" when a file is missing
 * @return VIT_OK, VIT_ERR_INPUT for a missing file, VIT_ERR_USAGE for an unknown split.
 */
VitStatus dataset_fashion_mnist_files(FashionMnistFiles *f, const char *dir, const char *split,
                              VitError *err);

/**
 * @brief Load a Fashion-MNIST split into memory.
 *
 * Reads DIR/train-images-idx3-ubyte.gz and DIR/train-labels-idx1-ubyte.gz for
 * "train" (60,000 images), DIR/t10k-… for "test" (10,000); when only the
 * uncompressed file (the same name without .gz) is there, that one. Checks
 * that the images are square, that there are as many labels as images, and
 * that every label is below 10.
 * @param[out] out    the set (C = 1, S = 28, 10 classes); all zero on failure
 * @param[in]  dir    the folder holding the files; NULL for FASHION_MNIST_DIR
 * @param[in]  split  "train" or "test"
 * @param[out] err    the message on failure, naming the file and the problem
 * @return VIT_OK, VIT_ERR_INPUT for a missing or bad file, VIT_ERR_USAGE for an unknown split.
 */
VitStatus dataset_fashion_mnist_load(Dataset *out, const char *dir, const char *split, VitError *err);

/**
 * @brief Load only the first @p count images of a Fashion-MNIST split (and
 *        their labels), without decompressing the rest of the files.
 *
 * The same files and the same checks as dataset_fashion_mnist_load() (square
 * images, as many labels as images read, every label below 10), on the first
 * @p count of each file; what reading a prefix leaves unchecked (the bytes
 * after it, the gzip trailer's CRC) is in idx_read_images_first(). For a
 * program that needs a few images: the first 64 of the 60,000 training images
 * take a fraction of the quarter of a second the whole set takes to decompress.
 * The first @p count images are the same bytes as the first @p count of the
 * whole split.
 * @param[out] out    the set (count images, C = 1, S = 28, 10 classes); all zero on failure
 * @param[in]  dir    the folder holding the files; NULL for FASHION_MNIST_DIR
 * @param[in]  split  "train" or "test"
 * @param[in]  count  how many, 1 to the split's size (60,000 for "train", 10,000 for "test")
 * @param[out] err    the message on failure, naming the file: e.g. "PATH: holds 10,000
 *                    images, fewer than the 20,000 asked for"
 * @return VIT_OK, VIT_ERR_INPUT for a missing or bad file or a count out of range,
 *         VIT_ERR_USAGE for an unknown split.
 */
VitStatus dataset_fashion_mnist_load_first(Dataset *out, const char *dir, const char *split,
                                           int count, VitError *err);

/** @brief Free what @p d owns (nothing for a view) and zero it. */
void dataset_free(Dataset *d);

/**
 * @brief A view of @p count images starting at image @p first: no copy.
 *
 * The view borrows @p d's memory: it is valid while @p d is, and needs no
 * dataset_free() (one does no harm). first ≥ 0, count ≥ 0 and first + count
 * ≤ d->count, or the program stops with a message (a programming error).
 */
Dataset dataset_slice(const Dataset *d, int first, int count);

/**
 * @brief The fixed validation split: @p val = the last @p val_count images of
 *        @p d, @p train = all those before; both views.
 *
 * For Fashion-MNIST's training set and FASHION_MNIST_VAL, 55,000 and 5,000.
 * The set comes from files (`--data` may name a folder of fewer images), so a
 * set too small to split is a message, not a stop.
 * @param[out] train, val  the two views (empty on failure)
 * @param[in]  d           the set to split
 * @param[in]  val_count   0 ≤ val_count < d->count: at least one image is left to learn from
 * @param[out] err         "the training set has 320 images: too few to hold out …"
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus dataset_split_validation(Dataset *train, Dataset *val, const Dataset *d, int val_count,
                                   VitError *err);

/** Augmentation: a random crop after zero padding, and a random left-right flip. */
typedef struct {
    int pad;   /**< pixels of black added on every side before cropping back to S×S; 0 = no crop */
    bool flip; /**< mirror left-right with probability 1/2 */
} Augment;

/** The random choices for one image. */
typedef struct {
    int dy;    /**< crop offset down, in [0, 2·pad]; pad means "not moved" */
    int dx;    /**< crop offset right, in [0, 2·pad] */
    bool flip; /**< mirrored left-right */
} AugmentDraw;

/**
 * @brief Draw one image's augmentation: dy, then dx (each only when pad > 0),
 *        then the flip (only when flip is on), from @p rng in that order.
 *
 * An offset is uniform over the 2·pad + 1 values (rng_u32() reduced without
 * bias: Lemire's multiply-and-reject); the flip is the top bit of one rng_u32().
 * Nothing is drawn for what is switched off, so no augmentation draws nothing.
 * @param[in] aug      what to draw; 0 ≤ pad ≤ 1024
 * @param[in,out] rng  the generator
 * @return the offsets (pad, pad when there is no crop) and the flip.
 */
AugmentDraw dataset_augment_draw(const Augment *aug, Rng *rng);

/**
 * @brief Fill a batch: images @p indices, normalised, optionally augmented.
 *
 * Shapes: out is (B, C, S, S); labels and indices are (B), indices in [0, d->count).
 *
 * Each value is (pixel/255 − mean)/std in float. With @p aug and @p rng, image
 * b is padded by aug->pad black pixels (pixel 0, before normalisation) on every
 * side, cropped back to S×S at the offsets dataset_augment_draw() gives (one call per
 * image, b = 0 first, so the same seed gives the same batch bit for bit), and
 * mirrored when the draw says so; every channel is moved alike.
 * @param[out] out      B·C·S·S floats
 * @param[out] labels   B labels: labels[b] = the label of image indices[b]
 * @param[in]  d        the images
 * @param[in]  indices  which images, in batch order
 * @param[in]  B        batch size
 * @param[in]  mean, std  the normalisation, in [0, 1] units (e.g. 0.2860, 0.3530)
 * @param[in]  aug      the augmentation, or NULL for none (then @p rng is not used)
 * @param[in,out] rng   the generator when @p aug is given
 */
void dataset_batch(float *out, int *labels, const Dataset *d, const int *indices, int B, float mean,
                   float std, const Augment *aug, Rng *rng);

/**
 * @brief A seeded Fisher–Yates permutation of 0..n−1.
 *
 * order[i] = i, then for i = n−1 down to 1: swap order[i] with order[j], j
 * uniform in [0, i] (drawn as dataset_augment_draw() draws an offset).
 * @param[out] order   n ints
 * @param[in]  n       how many
 * @param[in,out] rng  the generator
 */
void dataset_shuffle(int *order, int n, Rng *rng);

/**
 * @brief The mean and the (population) standard deviation of every pixel of
 *        @p d, in [0, 1] units: pixel/255, accumulated in double precision.
 *
 * For Fashion-MNIST's 60,000 training images: about 0.2860 and 0.3530.
 * @param[in]  d          the images (every channel)
 * @param[out] mean, std  the statistics; 0 and 0 for an empty set
 */
void dataset_stats(const Dataset *d, double *mean, double *std);

/** @} */
#endif
