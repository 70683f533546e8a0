/**
 * @file 11_training.c
 * @brief Chapter 11 · Training a ViT: Fashion-MNIST, the training loop, its
 *        curves, and the model the project trained.
 *
 * Chapter 10 took one AdamW step on one image. Training is that step
 * repeated, on shuffled batches of labelled images, with a learning rate from
 * the schedule:
 * \f[ \theta_{s+1} = \mathrm{AdamW}\big(\theta_s,\ \mathrm{clip}(\nabla_\theta
 *     \tfrac{1}{B}\textstyle\sum_{b} \ell(f_{\theta_s}(x_b), t_b)),\ \eta(s)\big). \f]
 * The chapter looks at the data (Fashion-MNIST: the counts, the validation
 * split, the pixel statistics, one image drawn in the terminal); trains a
 * tiny ViT for 192 steps and watches the loss fall, then trains it on 128
 * images until it knows them by heart; reads the training log of the model
 * the project ships and of the experiments beside it; evaluates that model
 * on the first 1,000 test images (the confusion matrix, its mistakes); and
 * asks why a ViT is so hungry for data. Last, the film of the shipped
 * model's training: four of its frames (epochs 0, 1, 4, 36) on one test
 * image and on the first 1,000, and the update ratios of its layer log
 * beside the learning rate.
 *
 * Every number of the data and of the runs is pinned by name and checked by
 * tests/test_ch11_training.c against tools/gen_golden_ch11.py, which reads
 * the same IDX files in Python and repeats every run in PyTorch (the same
 * shuffles and batches, F.cross_entropy, clip_grad_norm_, torch.optim.AdamW);
 * the logs' numbers are read there with Python's csv module and the shipped
 * model and its film's frames are run there by tools/ref_vit.py. The
 * timings are printed only.
 *
 * Run: `build/chapters/11_training`
 */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "train/dataset.h"
#include "base/fileio.h"
#include "io/labels.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "io/safetensors.h"
#include "base/tensor.h"
#include "train/train.h"
#include "train/cnn_train.h"
#include "train/film.h"
#include "explain/rollout.h"
#include "base/util.h"
#include "model/vit.h"

enum {
    BATCH = 32,        // images per step, every run of the chapter
    WARMUP = 64,       // of them, the warm-up's
    VAL_IMAGES = 1000, // the runs are validated on the first 1,000 of the 5,000
    FIT_IMAGES = 1000, // and measured on (at most) 1,000 of their own images
    FIRST = 5,         // steps listed one by one
    MAX_ROWS = 48,     // epochs a run may log (the 128-image run's at --steps 1536)
    RUNS = 5,          // the runs of Sections 2 and 5
    SEEDS = 3,         // Section 5 runs each from seed(), seed() + 1 and seed() + 2
    TEST_IMAGES = 1000, // the shipped model is tested on the first 1,000 test images
    MISTAKES = 4,      // of its mistakes, drawn
    LOG_COLUMNS = 9,   // epoch,step,lr,train_loss,train_acc,val_loss,val_acc,seconds,images_per_s
    LOG_MAX_ROWS = 1000,
    MAX_EXPERIMENTS = 24,
    TRAIN_IMAGES = 55000, // an epoch: the training images less the 5,000 held out
};
// The runs' two numbers a learner may change from the command line
// (build/chapters/11_training --help); the book's are the defaults.
// [knobs]
enum { KNOB_SEED, KNOB_STEPS, KNOBS };
static ChapterKnob knobs[KNOBS] = {
    [KNOB_SEED] = {.name = "seed", .meaning = "every run's weights and shuffles",
                   .value = 11, .min = 0, .max = 1000000000},
    [KNOB_STEPS] = {.name = "steps", .meaning = "steps of every run, of 32 images each",
                    .value = 192, .min = 192, .max = 1536, .multiple = 192},
};
// [knobs]
static uint64_t seed(void) { return (uint64_t)knobs[KNOB_SEED].value; }
static int steps(void) { return knobs[KNOB_STEPS].value; }
static const uint64_t AUGMENT_SEED = 12; // Section 1's crop and flip
static const int SHOWN = 0;              // the training image Section 1 draws
// The chapter's runs: each learns from the first `images` of the 55,000 training
// images for steps() steps (192 in the book), and is validated every `every` epochs. Section 2 shows
// SHORT and SMALL; Section 5 compares them all.
// [runs]
static const struct {
    int images;
    bool augment; // with CROP_AND_FLIP
    int every;
} RUN[RUNS] = {{128, false, 8}, {512, false, 12}, {2048, false, 1}, {6144, false, 1},
               {512, true, 12}};
// [runs]
enum { SMALL = 0, SHORT = 2, AUGMENTED = 4, SIZES = 4 }; // RUN[0 … SIZES − 1]: more and more images
static const double RUN_LR = 3e-3; // the peak learning rate of the runs
// The augmentation of Section 1 and of the one augmented run: `vit train --crop-pad 2 --flip 1`.
static const Augment CROP_AND_FLIP = {.pad = 2, .flip = true};

// The tiny ViT of the runs: 28×28 grey images in 7×7 patches, so N = 16 + 1 tokens.
static const VitConfig TINY = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 32,
                               .depth = 2, .heads = 2, .mlp_dim = 64, .num_classes = 10,
                               .ln_eps = 1e-6f};

// The CNN of Section 5 (cnn.h with narrower channels): 8 and 20 channels make its
// multiply-adds per image about the tiny ViT's (vit_macs()), so the two spend the
// same arithmetic on every image; the CNN has fewer parameters.
static const CnnConfig SMALL_CNN = {.c1 = 8, .c2 = 20};

static const char MODEL_FILE[] = "models/vit-fashion.safetensors"; // under data/
static const char LOG_FILE[] = "models/vit-fashion.csv";
static const char EXPERIMENTS_DIR[] = "models/experiments";
static const char LOG_HEADER[] =
    "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,seconds,images_per_s";
enum { L_EPOCH, L_STEP, L_LR, L_TRAIN_LOSS, L_TRAIN_ACC, L_VAL_LOSS, L_VAL_ACC, L_SECONDS, L_RATE };

// What the experiments under data/models/experiments/ changed, by file name
// (their README.md says the same), and what each pair of them, one change
// apart, measures.
static const struct {
    const char *name, *changed;
} EXPERIMENT_NAMES[] = {
    {"baseline", "nothing: no augmentation"},
    {"augment", "crop and flip"},
    {"augment-no-warmup", "crop and flip, no warm-up"},
    {"no-augment", "no crop and flip"},
    {"no-warmup", "no warm-up"},
    {"no-decay", "no weight decay"},
    {"full-no-augment", "18 epochs, no augmentation"},
    {"full-flip", "18 epochs, flip (shipped before)"},
    {"full-crop-flip", "18 epochs, crop and flip"},
    {"full30-flip", "30 epochs, flip"},
    {"full30-crop1-flip", "30 epochs, crop 1 and flip"},
    {"full36-crop1-flip", "36 epochs, crop 1 and flip (shipped)"},
    {"full30-batch64", "30 epochs of the recipe, batches of 64"},
    {"full30-batch32", "30 epochs of the recipe, batches of 32"},
    {"full30-decay001", "30 epochs of the recipe, weight decay 0.01"},
    {"full30-lr3e-3", "30 epochs of the recipe, peak lr 3e-3"},
    {"full36-seed2", "the shipped recipe, seed 2"},
    {"full36-seed3", "the shipped recipe, seed 3"},
};
// The shipped recipe from three seeds: the shipped model's own log (seed 1), then two more.
static const char *const SEED_RUNS[] = {"full36-crop1-flip", "full36-seed2", "full36-seed3"};
enum { SEED_RUN_COUNT = sizeof SEED_RUNS / sizeof SEED_RUNS[0] };
static const struct {
    const char *with, *without, *what; // the accuracy `with` minus `without` is what `what` did
} EXPERIMENT_PAIRS[] = {
    {"augment", "baseline", "crop and flip"},
    {"baseline", "no-augment", "crop and flip"},
    {"augment", "augment-no-warmup", "the warm-up (with crop and flip)"},
    {"baseline", "no-warmup", "the warm-up"},
    {"baseline", "no-decay", "weight decay"},
    {"full-flip", "full-no-augment", "the flip, over 18 epochs"},
    {"full-crop-flip", "full-flip", "the crop, over 18 epochs"},
    {"full30-flip", "full-flip", "12 more epochs, with the flip"},
    {"full30-crop1-flip", "full30-flip", "a 1-pixel crop, over 30 epochs"},
    {"full30-crop1-flip", "full30-batch64", "batches of 128, not 64"},
    {"full30-crop1-flip", "full30-batch32", "batches of 128, not 32"},
    {"full30-crop1-flip", "full30-decay001", "weight decay 0.05, not 0.01"},
    {"full30-crop1-flip", "full30-lr3e-3", "peak lr 2e-3, not 3e-3"},
    {"full36-crop1-flip", "full30-crop1-flip", "6 more epochs, crop 1 and flip"},
};

/* ------------------------------------------------------------ helpers */

static void pin_row(Chapter *ch, const char *name, const float *values, int n) {
    Tensor t = tensor_view((float *)values, 1, n);
    ch_pin(ch, name, &t);
}

static void pin_rowf(Chapter *ch, const float *values, int n, const char *fmt, const char *what) {
    char name[128];
    snprintf(name, sizeof name, fmt, what);
    pin_row(ch, name, values, n);
}

static void count_labels(int counts[10], const Dataset *d) {
    memset(counts, 0, 10 * sizeof *counts);
    for (int i = 0; i < d->count; i++) counts[d->labels[i]]++;
}

// n with thousands separators ("2,048"), from one of eight buffers used in turn, so
// that one paragraph can quote several.
static const char *th(int n) {
    static char buf[8][VIT_NUM_BUF];
    static int next;
    next = (next + 1) % 8;
    return vit_thousands(buf[next], n);
}

/* -------------------------------------------------- images as characters */

// Ten shades from black to white; a cell of the terminal is about twice as
// tall as it is wide.
static const char RAMP[] = " .:-=+*#%@";

static char shade(float v) { // v in [0, 1]
    int k = (int)(v * 10.0f);
    return RAMP[k < 0 ? 0 : k > 9 ? 9 : k];
}

// [draw]
// One S×S image of values in [0, 1], two characters per pixel, one row per line.
static void draw_image(Chapter *ch, const float *img, int S) {
    char line[2 * 64 + 8];
    for (int y = 0; y < S && S <= 64; y++) {
        int at = 0;
        line[at++] = ' ', line[at++] = ' ', line[at++] = ' ', line[at++] = ' ';
        for (int x = 0; x < S; x++) line[at] = line[at + 1] = shade(img[y * S + x]), at += 2;
        line[at] = '\0';
        ch_line(ch, "%s", line);
    }
}
// [draw]

// Up to four S×S images side by side, each at half height (one character per
// pixel, the mean of two rows per line), with a caption of two lines above each.
static void draw_row(Chapter *ch, const float *const *img, char (*caption)[2][40], int k, int S) {
    enum { GAP = 4 };
    char line[4 * (64 + GAP) + 8];
    for (int c = 0; c < 2; c++) {
        int at = 0;
        for (int i = 0; i < k; i++)
            at += snprintf(line + at, sizeof line - (size_t)at, "%*s%-*.*s", GAP, "", S, S,
                           caption[i][c]);
        ch_line(ch, "%s", line);
    }
    for (int y = 0; y + 1 < S && S <= 64; y += 2) {
        int at = 0;
        for (int i = 0; i < k; i++) {
            for (int g = 0; g < GAP; g++) line[at++] = ' ';
            for (int x = 0; x < S; x++)
                line[at++] = shade(0.5f * (img[i][y * S + x] + img[i][(y + 1) * S + x]));
        }
        line[at] = '\0';
        ch_line(ch, "%s", line);
    }
    ch_line(ch, "%s", "");
}

// Image i of d as values in [0, 1] (S·S floats).
static void image_values(float *out, const Dataset *d, int i) {
    const size_t n = (size_t)d->channels * d->size * d->size;
    for (size_t k = 0; k < n; k++) out[k] = d->pixels[(size_t)i * n + k] / 255.0f;
}

/* ----------------------------------------------------------- the work */

/// What one training run of the chapter logged.
typedef struct {
    char name[32];               // e.g. "run2048", "run512_augmented": its values' prefix
    int images, epochs, every;   // training images, epochs, and an evaluation every `every`
    bool augment;                // with crop and flip
    int rows;                    // evaluations logged
    float epoch[MAX_ROWS];       // the epoch (from 1) of row r
    float train_loss[MAX_ROWS];  // mean loss of that epoch's steps, with label smoothing
    float train_acc[MAX_ROWS];   // share of that epoch's batches' images it got right
    float val_loss[MAX_ROWS];    // on the validation slice, at the epoch's end
    float val_acc[MAX_ROWS];
    float first_loss[FIRST], first_lr[FIRST], first_norm[FIRST]; // the first steps
    float fit_loss, fit_acc;     // at the end, on (at most) 1,000 of its own training images
    double seconds;              // the steps' time, printed only
    bool ok;
} RunLog;

typedef struct {
    Dataset all, test;    // the 60,000 training images and the 10,000 test images
    Dataset train, val;   // the validation split of `all`: the first 55,000, the last 5,000
    Dataset val_slice;    // the first VAL_IMAGES of `val`
    RunLog runs[RUNS];    // one per RUN, from seed()
    float seed_val[RUNS][SEEDS], seed_fit[RUNS][SEEDS]; // Section 5: each seed's final accuracies
    bool have_model;      // Section 4 found the shipped model, and measured:
    float pos_near[2], pos_far[2]; // its position embeddings' similarity, trained [0] and drawn [1]
    int pos_far_from;     // the distance from which patches count as far
} Work;

/* ------------------------------------------------------ 1. the data */

static void the_data(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. The data")) return;
    const Dataset *all = &w->all, *test = &w->test;
    int train_count[10], test_count[10], val_count[10];
    count_labels(train_count, all);
    count_labels(test_count, test);
    count_labels(val_count, &w->val);
    float tc[10], sc[10], vc[10];
    for (int y = 0; y < 10; y++) tc[y] = (float)train_count[y], sc[y] = (float)test_count[y],
                                 vc[y] = (float)val_count[y];
    pin_row(ch, "data.train_per_class", tc, 10);
    pin_row(ch, "data.test_per_class", sc, 10);
    pin_row(ch, "data.val_per_class", vc, 10);
    char n_train[VIT_NUM_BUF], n_test[VIT_NUM_BUF], n_split[VIT_NUM_BUF], n_val[VIT_NUM_BUF];
    vit_thousands(n_train, (int64_t)ch_value(ch, "data.train_images", (float)all->count));
    vit_thousands(n_test, (int64_t)ch_value(ch, "data.test_images", (float)test->count));
    bool balanced = true;
    for (int y = 1; y < 10; y++)
        balanced &= train_count[y] == train_count[0] && test_count[y] == test_count[0];
    ch_say(ch, "Fashion-MNIST (H. Xiao, K. Rasul and R. Vollgraf, 2017) is photographs of "
               "clothes, grey, %d×%d pixels, in %d classes: %s to train on and %s to test on. "
               "Debian's dataset-fashion-mnist installs them as four gzipped IDX files, and "
               "dataset_fashion_mnist_load() (lib/train/dataset.h) reads them through zlib into one block "
               "of bytes per split, 0 for black and 255 for white, beside one label per "
               "image. %s",
           all->size, all->size, all->classes, n_train, n_test,
           balanced ? "The classes are balanced, to the image, in both:"
                    : "The images per class:");
    ch_line(ch, "    class                train    test   validation");
    for (int y = 0; y < 10; y++)
        ch_line(ch, "    %d  %-14s %8d %7d %9d", y, DATASET_FASHION_MNIST_CLASSES[y], train_count[y],
                test_count[y], val_count[y]);
    ch_line(ch, "%s", "");
    vit_thousands(n_split, (int64_t)ch_value(ch, "data.split_train", (float)w->train.count));
    vit_thousands(n_val, (int64_t)ch_value(ch, "data.split_val", (float)w->val.count));
    int lo = val_count[0], hi = val_count[0];
    for (int y = 1; y < 10; y++) lo = val_count[y] < lo ? val_count[y] : lo,
                                 hi = val_count[y] > hi ? val_count[y] : hi;
    ch_say(ch, "The last column is the validation split. dataset_split_validation() holds "
               "the last %s of the %s training images out, as views into the same bytes: "
               "the model learns from the first %s and is measured on the other %s after "
               "every epoch. %s (%d to %d per class), because the split takes the file's "
               "order as it is.", n_val, n_train, n_split, n_val,
           lo == hi ? "They happen to be balanced" : "They are not balanced to the image", lo,
           hi);
    ch_say(ch, "Why a validation split, when there is a test set? Every choice made while "
               "training, the learning rate, how many epochs, which of two runs is better, "
               "is made by looking at an accuracy. Made on the test images, those choices "
               "would fit the test set a little, one decision at a time, and its accuracy "
               "would no longer say how the model does on images nobody has looked at. "
               "So `vit train` chooses on the validation split, never trains on it, and "
               "runs the test set once, at the end, for the record. This chapter does the "
               "same: its runs are validated on the first %s validation images, and only "
               "Section 4 touches the test set, with the model already trained.",
           th(VAL_IMAGES));
    // [stats]
    double mean, std, split_mean, split_std;
    dataset_stats(all, &mean, &std);
    dataset_stats(&w->train, &split_mean, &split_std);
    // [stats]
    ch_say(ch, "The model's input is not the bytes but x = (pixel/255 − μ)/σ, so that its "
               "pixels have mean 0 and standard deviation 1 when they arrive. "
               "dataset_stats() computes μ and σ over every pixel of the %s training "
               "images: μ = %.4f and σ = %.4f, the published figures. Most of each image is "
               "black background, which pulls the mean far below the 0.5 of mid-grey. Over "
               "the %s images the model trains on they are %.4f and %.4f: %s, and the model "
               "uses the published %.4f and %.4f (train_defaults()).",
           n_train, ch_value(ch, "data.mean", (float)mean), ch_value(ch, "data.std", (float)std),
           n_split, ch_value(ch, "data.split_mean", (float)split_mean),
           ch_value(ch, "data.split_std", (float)split_std),
           fabs(split_mean - mean) < 5e-4 && fabs(split_std - std) < 5e-4
               ? "the same to three digits" : "close",
           (double)train_defaults().mean, (double)train_defaults().std);

    const int S = all->size, label = all->labels[SHOWN];
    float *img = vit_malloc(sizeof(float) * S * S), *moved = vit_malloc(sizeof(float) * S * S);
    image_values(img, all, SHOWN);
    float *bytes = vit_malloc(sizeof(float) * S * S);
    for (int k = 0; k < S * S; k++) bytes[k] = all->pixels[(size_t)SHOWN * S * S + k];
    Tensor tb = tensor_view(bytes, 2, S, S);
    ch_pin(ch, "image.pixels", &tb);
    ch_say(ch, "Training image %d, whose label is %d, %s, drawn with one of ten characters "
               "per pixel from black to white (\"%s\"), two per pixel across, since a "
               "character is about twice as tall as it is wide:", SHOWN,
           (int)ch_value(ch, "image.label", (float)label), DATASET_FASHION_MNIST_CLASSES[label], RAMP);
    draw_image(ch, img, S);
    ch_line(ch, "%s", "");
    // [augment]
    const Augment aug = CROP_AND_FLIP; // vit train --crop-pad 2 --flip 1
    Rng rng;
    rng_seed(&rng, AUGMENT_SEED);
    AugmentDraw draw = dataset_augment_draw(&aug, &rng); // what dataset_batch() would draw first
    rng_seed(&rng, AUGMENT_SEED);
    int index = SHOWN, ignored;
    dataset_batch(moved, &ignored, all, &index, 1, 0.0f, 1.0f, &aug, &rng); // μ 0, σ 1: [0, 1]
    // [augment]
    Tensor tm = tensor_view(moved, 2, S, S);
    ch_pin(ch, "augment.pixels", &tm);
    const float d[3] = {(float)draw.dy, (float)draw.dx, (float)draw.flip};
    pin_row(ch, "augment.draw", d, 3);
    ch_say(ch, "A model can also be shown each image a little changed every time it comes "
               "up: augmentation. With `vit train --crop-pad %d --flip 1`, dataset_batch() "
               "pads the image with %d black pixels on every side, crops a %d×%d window back "
               "out at a random offset, and mirrors it left to right half the time. Here "
               "dataset_augment_draw() put the window %d rows down and %d columns across, out of 0 "
               "to %d, so the garment moved %+d pixels down and %+d right (a minus: up, "
               "left), and %s. Beside the original, at half height:",
           aug.pad, aug.pad, S, S, draw.dy, draw.dx, 2 * aug.pad, aug.pad - draw.dy,
           aug.pad - draw.dx, draw.flip ? "it was mirrored" : "it was not mirrored");
    const float *pair[2] = {img, moved};
    char caption[2][2][40];
    snprintf(caption[0][0], 40, "image %d", SHOWN);
    snprintf(caption[0][1], 40, "as it is");
    snprintf(caption[1][0], 40, "cropped and moved");
    snprintf(caption[1][1], 40, draw.flip ? "and mirrored" : "not mirrored");
    draw_row(ch, pair, caption, 2, S);
    const Augment shipped = train_defaults().augment;
    ch_say(ch, "A garment mirrored or moved by two pixels is still the same garment, so "
               "the label stays; each epoch the model sees a slightly different picture of "
               "every garment, and cannot learn the exact pixels by heart. The draws come "
               "from a stream seeded by the run's seed and the step, so a run is the same "
               "every time it is repeated (train.h). %s",
           shipped.pad == 0 && !shipped.flip
               ? "The shipped recipe (train_defaults()) leaves it off; Section 5 shows what "
                 "it costs and what it gives."
           : shipped.pad == 0
               ? "The shipped recipe (train_defaults()) mirrors, without the crop; Section 3's "
                 "experiments show what each costs and what it gives."
               : "The shipped recipe (train_defaults()) uses it; Section 5 shows what it "
                 "costs and what it gives.");
    free(img), free(moved), free(bytes);
}

/* ------------------------------------------------------- the runs */

// The settings of RUN[i] from `seed`: the shipped model's, with the chapter's changes.
// [run_config]
static TrainConfig run_config(int i, uint64_t seed) {
    const int steps_per_epoch = RUN[i].images / BATCH;
    TrainConfig c = train_defaults();       // the shipped model's settings, and then:
    c.epochs = steps() / steps_per_epoch;   // the same steps, whatever the number of images
    c.batch = BATCH, c.lr = RUN_LR, c.seed = seed;
    c.warmup_epochs = 0;                    // the warm-up is set in steps, after the start
    c.augment = RUN[i].augment ? CROP_AND_FLIP : (Augment){.pad = 0, .flip = false};
    return c;
}
// [run_config]

// Run RUN[i] from `seed` into log: the first `images` training images, steps() steps.
static bool train_run(Chapter *ch, Work *w, int i, uint64_t seed, RunLog *log) {
    const int images = RUN[i].images, every = RUN[i].every;
    memset(log, 0, sizeof *log);
    log->images = images, log->every = every, log->augment = RUN[i].augment;
    snprintf(log->name, sizeof log->name, "run%d%s", images, log->augment ? "_augmented" : "");
    const Dataset train = dataset_slice(&w->train, 0, images);
    // [recipe]
    const TrainConfig c = run_config(i, seed);
    Trainer t;
    VitError err;
    if (trainer_init(&t, &TINY, &c, &train, &err) != VIT_OK) {
        ch_verdict(ch, "cannot start the run: %s", err.msg);
        return false;
    }
    t.schedule.warmup_steps = WARMUP;       // 64 steps, even when an epoch is the whole run
    // [recipe]
    log->epochs = c.epochs;
    const double started = vit_now();
    double eval_seconds = 0;
    int taken = 0; // steps this run has taken
    // [loop]
    for (int epoch = 1; epoch <= c.epochs; epoch++) {
        double loss = 0;
        int correct = 0;
        for (int s = 0; s < t.steps_per_epoch; s++) {
            TrainStep step;
            if (trainer_step(&t, &step, &err) != VIT_OK) { // one batch: forward, backward, AdamW
                ch_say(ch, "the run stopped at step %lld: %s", (long long)t.step + 1, err.msg);
                trainer_free(&t);
                return false;
            }
            loss += step.loss, correct += step.correct;
            if (taken < FIRST) {
                log->first_loss[taken] = step.loss, log->first_lr[taken] = (float)step.lr;
                log->first_norm[taken] = (float)step.grad_norm;
            }
            taken++;
        }
        if (epoch % every != 0 || log->rows == MAX_ROWS) continue;
        const double at = vit_now();
        EvalResult val;                                  // the validation images, unseen
        if (eval_run(&t.vit, &w->val_slice, c.mean, c.std, BATCH, &val, &err) != VIT_OK) break;
        eval_seconds += vit_now() - at;
        const int r = log->rows++;
        log->epoch[r] = (float)epoch;
        log->train_loss[r] = (float)(loss / t.steps_per_epoch);
        log->train_acc[r] = (float)correct / (float)(t.steps_per_epoch * c.batch);
        log->val_loss[r] = (float)val.loss, log->val_acc[r] = (float)eval_accuracy(&val);
        eval_free(&val);
    }
    // [loop]
    log->seconds = vit_now() - started - eval_seconds;
    const Dataset own = dataset_slice(&train, 0, images < FIT_IMAGES ? images : FIT_IMAGES);
    EvalResult fit;
    log->ok = log->rows * every == c.epochs &&
              eval_run(&t.vit, &own, c.mean, c.std, BATCH, &fit, &err) == VIT_OK;
    if (log->ok) {
        log->fit_loss = (float)fit.loss, log->fit_acc = (float)eval_accuracy(&fit);
        eval_free(&fit);
    } else {
        ch_verdict(ch, "the run's evaluation failed: %s", err.msg);
    }
    trainer_free(&t);
    return log->ok;
}

// Every number a run logged, by name: run2048.val_acc, ….
static void pin_run(Chapter *ch, const RunLog *r) {
    const char *prefix = r->name;
    pin_rowf(ch, r->epoch, r->rows, "%s.epoch", prefix);
    pin_rowf(ch, r->train_loss, r->rows, "%s.train_loss", prefix);
    pin_rowf(ch, r->train_acc, r->rows, "%s.train_acc", prefix);
    pin_rowf(ch, r->val_loss, r->rows, "%s.val_loss", prefix);
    pin_rowf(ch, r->val_acc, r->rows, "%s.val_acc", prefix);
    pin_rowf(ch, r->first_loss, FIRST, "%s.first_loss", prefix);
    pin_rowf(ch, r->first_lr, FIRST, "%s.first_lr", prefix);
    pin_rowf(ch, r->first_norm, FIRST, "%s.first_grad_norm", prefix);
    ch_valuef(ch, r->fit_loss, "%s.fit_loss", prefix);
    ch_valuef(ch, r->fit_acc, "%s.fit_acc", prefix);
}

static void epoch_table(Chapter *ch, const RunLog *r) {
    ch_line(ch, "    epoch   train loss  train acc   val loss   val acc");
    for (int i = 0; i < r->rows; i++)
        ch_line(ch, "    %5d   %10.4f  %8.1f%%  %9.4f  %7.1f%%", (int)r->epoch[i], r->train_loss[i],
                100 * r->train_acc[i], r->val_loss[i], 100 * r->val_acc[i]);
    ch_line(ch, "%s", "");
}

/* ------------------------------------------------- 2. the loss falling */

static void the_loss_falling(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. The loss falling")) return;
    RunLog *r = &w->runs[SHORT];
    const TrainConfig d = train_defaults();
    char params[VIT_NUM_BUF];
    vit_thousands(params, vit_param_count(&TINY));
    ch_say(ch, "The model the project ships took thousands of steps to train. To watch "
               "training happen, this chapter trains a tiny ViT instead: %d×%d images in "
               "%d×%d patches, so N = %d tokens, of width D = %d, %d blocks of %d heads, M = "
               "%d, %s parameters in all. It learns from the first %s training images, in "
               "batches of %d, for %d steps, and is validated on the first %s validation "
               "images after every epoch. The recipe is `vit train`'s (train_defaults()), "
               "with these changes:", TINY.image_size, TINY.image_size, TINY.patch_size,
           TINY.patch_size, vit_num_tokens(&TINY), TINY.dim, TINY.depth, TINY.heads,
           TINY.mlp_dim, params, th(RUN[SHORT].images), BATCH, steps(), th(VAL_IMAGES));
    ch_line(ch, "    batch %d (shipped: %d), peak learning rate %g (shipped: %g)", BATCH,
            d.batch, RUN_LR, d.lr);
    ch_line(ch, "    warm-up %d steps (shipped: %d epochs), then the cosine to %g", WARMUP,
            d.warmup_epochs, d.min_lr);
    const bool shipped_augments = d.augment.pad != 0 || d.augment.flip;
    if (shipped_augments) {
        char shipped[96];
        if (d.augment.pad == 0) snprintf(shipped, sizeof shipped, "half the images mirrored");
        else
            snprintf(shipped, sizeof shipped, "a random crop after padding by %d pixel%s%s",
                     d.augment.pad, d.augment.pad == 1 ? "" : "s",
                     d.augment.flip ? ", and half mirrored" : "");
        ch_line(ch, "    no augmentation (shipped: %s)", shipped);
    }
    ch_line(ch, "    as shipped: AdamW's weight decay %g, clipping at %g, label smoothing %g%s",
            d.weight_decay, (double)d.clip, (double)d.smoothing,
            shipped_augments ? "" : ", no augmentation");
    ch_line(ch, "%s", "");
    if (!train_run(ch, w, SHORT, seed(), &w->runs[SHORT])) return;
    pin_run(ch, r);
    ch_say(ch, "trainer_init() draws the weights from the seed (%d), sets up the gradients, "
               "AdamW with timm's two groups, and the schedule over all %d steps. Each "
               "trainer_step() (lib/train/train_step.c) is PyTorch's loop body: the next batch of "
               "the epoch's shuffled order, the gradients zeroed, forward, loss and "
               "backward, the gradient clipped to length %g, one AdamW step at this step's "
               "learning rate, and the step counted. The first %d steps:",
           (int)seed(), steps(), (double)d.clip, FIRST);
    ch_line(ch, "    step   learning rate     loss   |gradient|");
    bool all_clipped = true;
    for (int s = 0; s < FIRST; s++) {
        ch_line(ch, "    %4d   %13.3e  %7.4f  %11.4f", s + 1, r->first_lr[s], r->first_loss[s],
                r->first_norm[s]);
        all_clipped &= r->first_norm[s] > d.clip;
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "The first loss, %.4f, is near the ln 10 = %.4f of a model that knows "
               "nothing (Chapter 10). The first step's learning rate is %g: the warm-up "
               "starts from 0, so that step moves AdamW's moments and no weight, and the "
               "second batch meets the same model. %s Then, epoch by epoch:",
           r->first_loss[0], log(10.0), r->first_lr[0],
           all_clipped ? "Every one of these gradients is longer than the clipping length, "
                         "and is scaled down to it: at the start the loss is steep."
                       : "Gradients longer than the clipping length are scaled down to it.");
    epoch_table(ch, r);
    const int last = r->rows - 1;
    ch_say(ch, "In %d steps (%.1f s of them, on one thread) the loss fell from %.4f at the "
               "first step to a validation loss of %.4f, and %.1f%% of the %s validation "
               "images are right, against the 10%% of guessing. The training columns are "
               "what `vit train` logs too: the "
               "mean over the epoch's steps, taken while the weights were still moving, with "
               "label smoothing (%g) in the loss, which keeps it above 0.5 even for a model "
               "that is always right. The validation loss is the plain cross-entropy at the "
               "epoch's end. So the two losses are not directly comparable; each falls.",
           steps(), r->seconds, r->first_loss[0], r->val_loss[last], 100 * r->val_acc[last],
           th(VAL_IMAGES), (double)d.smoothing);

    RunLog *o = &w->runs[SMALL];
    const int spe = RUN[SMALL].images / BATCH;
    ch_say(ch, "Now the same %d steps on only the first %d images: %d steps an epoch, %d "
               "epochs, every image seen %d times. The validation images are the same %s; "
               "a row every %d epochs:", steps(), RUN[SMALL].images, spe, steps() / spe, steps() / spe,
           th(VAL_IMAGES), RUN[SMALL].every);
    if (!train_run(ch, w, SMALL, seed(), &w->runs[SMALL])) return;
    pin_run(ch, o);
    epoch_table(ch, o);
    int best = 0;
    bool falling = true;
    for (int i = 1; i < o->rows; i++) {
        if (o->val_loss[i] < o->val_loss[best]) best = i;
        falling &= o->train_loss[i] < o->train_loss[i - 1];
    }
    const int end = o->rows - 1;
    ch_say(ch, "Measured on its own %d images at the end, without smoothing, the model gets "
               "%.1f%% of them right, with a loss of %.4f; of the images it never saw, "
               "%.1f%%, with a loss of %.4f. That gap is overfitting: with so few images, the "
               "cheapest way to lower the training loss is to learn these %d pictures, their "
               "backgrounds and stray pixels, rather than what makes a shirt a shirt. The "
               "validation loss was lowest at epoch %d (%.4f)%s, while the training loss "
               "%s. Section 5 comes back to it.",
           o->images, 100 * o->fit_acc, o->fit_loss, 100 * o->val_acc[end], o->val_loss[end],
           o->images, (int)o->epoch[best], o->val_loss[best],
           best == end ? ", at the end" : " and has risen since",
           falling ? "fell at every row" : "went on down");
}

/* -------------------------------------------------- 3. the shipped model's curve */

/// A training log of `vit train`: one row per epoch, LOG_COLUMNS numbers each.
typedef struct {
    int rows;
    double (*v)[LOG_COLUMNS];
} TrainLog;

// Read a CSV log; false with the reason in why (already escaped) otherwise.
static bool log_read(TrainLog *log, const char *path, const char *shown, char *why, size_t size) {
    memset(log, 0, sizeof *log);
    char *text, esc[256];
    size_t bytes;
    VitError err;
    if (file_read_all(&text, &bytes, path, (size_t)LOG_MAX_ROWS * 256, "a CSV log", &err) != VIT_OK) {
        snprintf(why, size, "%s", vit_escape(esc, sizeof esc, err.msg));
        return false;
    }
    char *line = text, *next;
    bool ok = true;
    log->v = vit_calloc(LOG_MAX_ROWS, sizeof *log->v);
    for (int n = 0; ok && line && *line; n++, line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        const size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[len - 1] = '\0';
        if (n == 0) {
            if (strcmp(line, LOG_HEADER) != 0)
                snprintf(why, size, "%s: its first line is not \"%s\"", shown, LOG_HEADER), ok = false;
            continue;
        }
        if (!*line) continue;
        if (log->rows == LOG_MAX_ROWS) {
            snprintf(why, size, "%s: more than %d rows", shown, LOG_MAX_ROWS), ok = false;
            break;
        }
        char *p = line;
        for (int c = 0; ok && c < LOG_COLUMNS; c++) {
            char *end;
            log->v[log->rows][c] = strtod(p, &end);
            const char want = c == LOG_COLUMNS - 1 ? '\0' : ',';
            if (end == p || *end != want || !isfinite(log->v[log->rows][c]))
                snprintf(why, size, "%s: row %d, column %d is not a number", shown, n, c + 1),
                    ok = false;
            p = end + 1;
        }
        log->rows++;
    }
    if (ok && log->rows == 0) snprintf(why, size, "%s: no rows", shown), ok = false;
    free(text);
    if (!ok) free(log->v), log->v = NULL, log->rows = 0;
    return ok;
}

static void log_column(float *out, const TrainLog *log, int c) {
    for (int r = 0; r < log->rows; r++) out[r] = (float)log->v[r][c];
}

static const char *experiment_changed(const char *name) {
    for (size_t i = 0; i < sizeof EXPERIMENT_NAMES / sizeof EXPERIMENT_NAMES[0]; i++)
        if (strcmp(EXPERIMENT_NAMES[i].name, name) == 0) return EXPERIMENT_NAMES[i].changed;
    return "as its name says";
}

// The shipped recipe's runs from three seeds (SEED_RUNS), when all are among the
// experiments: their final validation accuracies, and what their spread says.
// final[i] is experiment names[i]'s, NaN when its log could not be read. Returns
// the spread, NaN when the three are not all there.
static float seed_spread(Chapter *ch, char (*names)[64], const float *final, int n) {
    float acc[SEED_RUN_COUNT];
    for (int s = 0; s < SEED_RUN_COUNT; s++) {
        acc[s] = NAN;
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], SEED_RUNS[s]) == 0) acc[s] = final[i];
        if (isnan(acc[s])) return NAN; // not all three: nothing to say
    }
    float lo = acc[0], hi = acc[0], mean = 0;
    for (int s = 0; s < SEED_RUN_COUNT; s++) {
        lo = acc[s] < lo ? acc[s] : lo, hi = acc[s] > hi ? acc[s] : hi;
        mean += acc[s] / SEED_RUN_COUNT;
    }
    ch_value(ch, "experiments.seeds.mean", mean);
    ch_value(ch, "experiments.seeds.spread", hi - lo);
    // one standard error of the difference of two accuracies near the mean, on 5,000 images each
    const double sigma = sqrt(2 * mean * (1 - mean) / 5000.0);
    ch_say(ch, "How far does the seed alone move a run? The shipped recipe ran from three "
               "seeds, 36 epochs each (seed 1 is the shipped model's own log): %.2f%%, %.2f%% "
               "and %.2f%% on validation, a mean of %.2f%% and a spread of %.2f points from the "
               "lowest to the highest.", 100 * acc[0], 100 * acc[1], 100 * acc[2], 100 * mean,
           100 * (hi - lo));
    ch_verdict(ch, "%s (one standard error of a difference of two runs on these images is "
                   "%.2f points, and twice that %.2f). The one-seed differences above are to "
                   "be read against this spread, not against the images' noise alone.",
               hi - lo > 2 * sigma ? "That spread is larger than the images' noise: the seed "
                                     "moves a run by more than a difference on 5,000 images can "
                                     "tell"
               : hi - lo > sigma ? "That spread is between one and two times the images' noise "
                                   "of a difference: the seed moves a run by about as much as "
                                   "the measurement can tell"
                                 : "That spread is within the images' noise of a difference: "
                                   "here the seed moves a run by less than the measurement can "
                                   "tell",
               100 * sigma, 200 * sigma);
    return hi - lo;
}

// Accuracy against minutes: for each length the full runs (18 epochs or more)
// had, the best final validation accuracy of a run that long, and the minutes
// those epochs take at the shipped run's speed (`speed` training images a
// second; the experiments ran at other speeds, one thread each, side by side,
// so their own seconds do not compare). Then what it says of the project's
// 92.5 % goal in 30 minutes.
static void accuracy_against_minutes(Chapter *ch, char (*names)[64], const float *final,
                                     const int *epochs, int n, double speed, float spread) {
    enum { FULL = 18 };            // a full run: the short ones used another warm-up
    const double GOAL = 0.925, BUDGET = 30; // the accuracy asked for, in minutes at most
    if (speed <= 0) return;
    int lengths[MAX_EXPERIMENTS], k = 0; // the distinct lengths, ascending
    for (int i = 0; i < n; i++) {
        if (epochs[i] < FULL || isnan(final[i])) continue;
        int at = 0;
        while (at < k && lengths[at] < epochs[i]) at++;
        if (at < k && lengths[at] == epochs[i]) continue;
        memmove(lengths + at + 1, lengths + at, sizeof lengths[0] * (size_t)(k - at));
        lengths[at] = epochs[i], k++;
    }
    if (k < 2) return;
    ch_say(ch, "Is more training the road to a better model? The full runs above at each "
               "length, the best of each, with the minutes those epochs take at the shipped "
               "run's own speed (%.0f training images a second; the experiments ran at other "
               "speeds, one thread each and side by side, so their own seconds do not "
               "compare):", speed);
    ch_line(ch, "    %6s  %8s  %8s  %s", "epochs", "minutes", "val acc", "best run of that length");
    float best_in_budget = 0, best[MAX_EXPERIMENTS];
    for (int j = 0; j < k; j++) {
        int who = -1;
        for (int i = 0; i < n; i++)
            if (epochs[i] == lengths[j] && !isnan(final[i]) && (who < 0 || final[i] > final[who]))
                who = i;
        const double minutes = lengths[j] * (double)TRAIN_IMAGES / speed / 60;
        best[j] = final[who];
        ch_valuef(ch, (float)minutes, "frontier.%d.minutes", lengths[j]);
        ch_valuef(ch, best[j], "frontier.%d.val_acc", lengths[j]);
        if (minutes <= BUDGET && best[j] > best_in_budget) best_in_budget = best[j];
        ch_line(ch, "    %6d  %8.1f  %7.2f%%  %s", lengths[j], minutes, 100 * best[j], names[who]);
    }
    ch_line(ch, "%s", "");
    char luck[160] = ""; // the best of several runs is the luckiest of them
    if (!isnan(spread))
        snprintf(luck, sizeof luck, " (The best of each length is the luckiest of its runs: "
                 "the three seeds of one recipe lie %.2f points apart.)", 100 * spread);
    const double last_gain = best[k - 1] - best[k - 2], p = best[k - 1];
    const double sigma = sqrt(2 * p * (1 - p) / 5000.0); // of a difference of two runs
    ch_value(ch, "frontier.best_in_budget", best_in_budget);
    const bool flat = fabs(last_gain) < 2 * sigma, reached = best_in_budget >= GOAL;
    char next[320]; // what the curve says of more epochs, as its last step measured it
    if (reached)
        snprintf(next, sizeof next, "The goal is met within the budget.");
    else if (flat)
        snprintf(next, sizeof next, "At that rate more epochs of this recipe do not look like "
                 "the road across the %.2f points left; a model that reaches %.1f%% in %.0f "
                 "minutes needs another recipe, or a larger model with faster steps, which "
                 "these runs have not measured.", 100 * (GOAL - best_in_budget), 100 * GOAL,
                 BUDGET);
    else
        snprintf(next, sizeof next, "More epochs might close part of the %.2f points left; "
                 "whether they reach %.1f%% within %.0f minutes these runs cannot say.",
                 100 * (GOAL - best_in_budget), 100 * GOAL, BUDGET);
    ch_verdict(ch, "The best run that fits in %.0f minutes ends at %.2f%% on validation, %s the "
                   "%.1f%% the project asked of its model. The curve %s: the last step, from %d "
                   "to %d epochs, adds %+.2f points, %s twice the uncertainty of a difference of "
                   "two runs on these images (2 × %.2f points). %s%s",
               BUDGET, 100 * best_in_budget, reached ? "reaching" : "short of", 100 * GOAL,
               flat ? "flattens" : "still climbs", lengths[k - 2], lengths[k - 1],
               100 * last_gain, flat ? "less than" : "more than", 100 * sigma, next, luck);
}

static int by_name(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

// The first `max` NAMEs, sorted, of the data/models/experiments/NAME.csv whose
// NAME is plain (letters, digits, '-', '_'; up to 63 of them); how many.
static int experiment_names(char (*names)[64], int max) {
    enum { LOOKED_AT = 256 }; // files of the folder considered at most
    char dir[1024], (*all)[64] = vit_malloc(sizeof *all * LOOKED_AT);
    DIR *d = opendir(vit_data_path(dir, sizeof dir, EXPERIMENTS_DIR));
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < LOOKED_AT;) {
        const size_t len = strlen(e->d_name);
        if (len <= 4 || len - 4 >= 64 || strcmp(e->d_name + len - 4, ".csv") != 0) continue;
        bool plain = true;
        for (size_t i = 0; i < len - 4; i++)
            plain &= isalnum((unsigned char)e->d_name[i]) || e->d_name[i] == '-' || e->d_name[i] == '_';
        if (!plain) continue;
        memcpy(all[n], e->d_name, len - 4);
        all[n++][len - 4] = '\0';
    }
    if (d) closedir(d);
    qsort(all, (size_t)n, sizeof all[0], by_name);
    if (n > max) n = max;
    memcpy(names, all, sizeof all[0] * (size_t)n);
    free(all);
    return n;
}

// The row of the best validation accuracy (the first of equals).
static int best_row(const TrainLog *log) {
    int best = 0;
    for (int r = 1; r < log->rows; r++)
        if (log->v[r][L_VAL_ACC] > log->v[best][L_VAL_ACC]) best = r;
    return best;
}

static void the_shipped_curve(Chapter *ch) {
    int shipped_epochs = 0; // rows of the shipped model's log, when it is read
    double shipped_speed = 0; // its training images a second, from its rows and seconds
    if (!ch_section(ch, "3. The shipped model's curve")) return;
    char path[1024], shown[256], why[512];
    snprintf(shown, sizeof shown, "data/%s", LOG_FILE);
    vit_data_path(path, sizeof path, LOG_FILE);
    TrainLog log;
    const bool present = access(path, F_OK) == 0;
    ch_value(ch, "log.present", present ? 1.0f : 0.0f);
    if (!present) {
        ch_verdict(ch, "%s, the log `vit train` wrote while training the model the project "
                   "ships, is not there yet, so this section has nothing to show: it is "
                   "skipped. Once the model is trained and its log committed, this section "
                   "reads it.", shown);
    } else if (!log_read(&log, path, shown, why, sizeof why)) {
        ch_value(ch, "log.rows", 0.0f);
        ch_say(ch, "%s cannot be read (%s): this section is skipped.", shown, why);
    } else {
        const int R = shipped_epochs = log.rows;
        float *col = vit_malloc(sizeof(float) * R);
        static const struct { int c; const char *name; } COLS[] = {
            {L_EPOCH, "epoch"}, {L_STEP, "step"}, {L_LR, "lr"}, {L_TRAIN_LOSS, "train_loss"},
            {L_TRAIN_ACC, "train_acc"}, {L_VAL_LOSS, "val_loss"}, {L_VAL_ACC, "val_acc"},
        };
        ch_value(ch, "log.rows", (float)R);
        for (size_t k = 0; k < sizeof COLS / sizeof COLS[0]; k++) {
            log_column(col, &log, COLS[k].c);
            pin_rowf(ch, col, R, "log.%s", COLS[k].name);
        }
        free(col);
        double seconds = 0;
        for (int r = 0; r < R; r++) seconds += log.v[r][L_SECONDS];
        ch_value(ch, "log.seconds", (float)seconds);
        if (seconds > 0) shipped_speed = (double)TRAIN_IMAGES * R / seconds;
        ch_say(ch, "`vit train` wrote %s while it trained the model the project ships, one "
                   "row per epoch: the learning rate of the epoch's last step, the training "
                   "loss and accuracy averaged over the epoch's batches, and the "
                   "loss and accuracy on the 5,000 validation images at its end:", shown);
        ch_line(ch, "    epoch    step   learning rate  train loss  train acc  val loss  val acc");
        for (int r = 0; r < R; r++)
            ch_line(ch, "    %5.0f  %6.0f   %13.3e  %10.4f  %8.2f%%  %8.4f  %6.2f%%",
                    log.v[r][L_EPOCH], log.v[r][L_STEP], log.v[r][L_LR], log.v[r][L_TRAIN_LOSS],
                    100 * log.v[r][L_TRAIN_ACC], log.v[r][L_VAL_LOSS], 100 * log.v[r][L_VAL_ACC]);
        ch_line(ch, "%s", "");
        const int best = best_row(&log), last = R - 1;
        int lowest = 0;
        for (int r = 1; r < R; r++)
            if (log.v[r][L_VAL_LOSS] < log.v[lowest][L_VAL_LOSS]) lowest = r;
        // the gap of the two accuracies as printed (to 0.01 points), so that it
        // is the difference a reader takes of the two numbers beside it
        const double gap = round(10000 * log.v[last][L_TRAIN_ACC]) / 10000 -
                           round(10000 * log.v[last][L_VAL_ACC]) / 10000;
        const double lowest_loss = log.v[lowest][L_VAL_LOSS], final_loss = log.v[last][L_VAL_LOSS];
        char loss_said[320] = "";
        // overfitting in the loss: the validation loss back up by more than 1 %
        // of its lowest while the training loss went on down
        if (lowest < last && final_loss > 1.01 * lowest_loss &&
            log.v[last][L_TRAIN_LOSS] < log.v[lowest][L_TRAIN_LOSS])
            snprintf(loss_said, sizeof loss_said, " The validation loss was lowest after "
                     "epoch %.0f (%.4f) and ends at %.4f, while the training loss went on "
                     "down (%.4f to %.4f): the model began to fit its own images better than "
                     "new ones.", log.v[lowest][L_EPOCH], lowest_loss, final_loss,
                     log.v[lowest][L_TRAIN_LOSS], log.v[last][L_TRAIN_LOSS]);
        else if (lowest < last)
            snprintf(loss_said, sizeof loss_said, " The validation loss was lowest after "
                     "epoch %.0f (%.4f) and ends at %.4f, within 1%% of it: the loss shows no "
                     "overfitting.", log.v[lowest][L_EPOCH], lowest_loss, final_loss);
        ch_say(ch, "%d epochs, %.0f steps, %.1f minutes of training steps (the log's seconds, "
                   "without the validation passes; `make bench` is the measurement of speed). "
                   "The validation accuracy was highest after epoch %.0f, "
                   "%.2f%%, and is %.2f%% at the end.%s The training accuracy ends at %.2f%%, "
                   "%.2f points %s the validation accuracy; it is the mean over the last "
                   "epoch's batches, taken while the weights still moved.",
               R, log.v[last][L_STEP], seconds / 60, log.v[best][L_EPOCH],
               100 * log.v[best][L_VAL_ACC], 100 * log.v[last][L_VAL_ACC], loss_said,
               100 * log.v[last][L_TRAIN_ACC], 100 * fabs(gap), gap >= 0 ? "above" : "below");
        free(log.v);
    }

    char names[MAX_EXPERIMENTS][64];
    const int n = experiment_names(names, MAX_EXPERIMENTS);
    ch_value(ch, "experiments.count", (float)n);
    if (n == 0) {
        ch_verdict(ch, "Beside the shipped model, data/%s/ is to hold the logs of shorter runs "
                   "that each leave one part of the recipe out (baseline.csv, no-augment.csv, "
                   "no-warmup.csv, no-decay.csv). None is there yet, so what warm-up, "
                   "augmentation and weight decay change is not shown.", EXPERIMENTS_DIR);
        return;
    }
    ch_say(ch, "Beside it, data/%s/ holds the logs of experiments: shorter runs of the same "
               "model, each changing a part of the recipe (its README.md says how they were "
               "run). Their last epoch:", EXPERIMENTS_DIR);
    ch_line(ch, "    %-18s %6s  %8s  %s", "experiment", "epochs", "val acc", "what changed");
    float base = NAN;
    float final[MAX_EXPERIMENTS], fit[MAX_EXPERIMENTS]; // the last epoch's accuracies
    int epochs[MAX_EXPERIMENTS];                          // and how many epochs each ran
    int epochs_max = 0, epochs_min = 0;
    for (int i = 0; i < n; i++) {
        char file[160];
        snprintf(file, sizeof file, "%s/%s.csv", EXPERIMENTS_DIR, names[i]);
        snprintf(shown, sizeof shown, "data/%s", file);
        final[i] = fit[i] = NAN, epochs[i] = 0;
        if (!log_read(&log, vit_data_path(path, sizeof path, file), shown, why, sizeof why)) {
            ch_valuef(ch, 0.0f, "experiment.%s.rows", names[i]);
            ch_line(ch, "    %-18s cannot be read: %s", names[i], why);
            continue;
        }
        const int last = log.rows - 1;
        epochs[i] = log.rows;
        ch_valuef(ch, (float)log.rows, "experiment.%s.rows", names[i]);
        final[i] = ch_valuef(ch, (float)log.v[last][L_VAL_ACC], "experiment.%s.val_acc", names[i]);
        fit[i] = ch_valuef(ch, (float)log.v[last][L_TRAIN_ACC], "experiment.%s.train_acc",
                           names[i]);
        if (strcmp(names[i], "baseline") == 0) base = final[i];
        epochs_max = log.rows > epochs_max ? log.rows : epochs_max;
        epochs_min = i == 0 || log.rows < epochs_min ? log.rows : epochs_min;
        ch_line(ch, "    %-18s %6d  %7.2f%%  %s", names[i], log.rows, 100 * log.v[last][L_VAL_ACC],
                experiment_changed(names[i]));
        free(log.v);
    }
    ch_line(ch, "%s", "");
    // one standard error of an accuracy near p on 5,000 images: √(p(1 − p)/5000)
    const float p = isnan(base) ? final[0] : base;
    const double noise = sqrt(p * (1 - p) / 5000.0);
    ch_say(ch, "What each change did, as the difference between the final validation "
               "accuracies of two runs one change apart. An accuracy measured on 5,000 "
               "images is itself uncertain, by √(p(1 − p)/5000) = %.2f points near %.1f%%, "
               "so the difference of two by about √2 times that, and one below twice its "
               "uncertainty says nothing either way. That rule knows only the images: each "
               "run is one seed, and a run from another seed lands elsewhere too (Section 5 "
               "measures by how much, on its short runs), so a difference beyond it is a "
               "lead to check with more seeds, not yet a finding:", 100 * noise, 100 * p);
    int pairs = 0;
    // [pairs]
    for (size_t k = 0; k < sizeof EXPERIMENT_PAIRS / sizeof EXPERIMENT_PAIRS[0]; k++) {
        float a = NAN, b = NAN;
        for (int i = 0; i < n; i++) {
            if (strcmp(names[i], EXPERIMENT_PAIRS[k].with) == 0) a = final[i];
            if (strcmp(names[i], EXPERIMENT_PAIRS[k].without) == 0) b = final[i];
        }
        if (isnan(a) || isnan(b)) continue;
        const double diff = a - b, sigma = sqrt(a * (1 - a) / 5000.0 + b * (1 - b) / 5000.0);
        ch_line(ch, "    %-32s %+6.2f points, %s", EXPERIMENT_PAIRS[k].what, 100 * diff,
                fabs(diff) < 2 * sigma ? "within the images' noise"
                : diff < 0             ? "lower: a lead (one seed)"
                                       : "higher: a lead (one seed)");
        ch_line(ch, "        (%s − %s)", EXPERIMENT_PAIRS[k].with, EXPERIMENT_PAIRS[k].without);
        pairs++;
    }
    // [pairs]
    if (!pairs) ch_line(ch, "    (no two of these runs are one change apart)");
    ch_line(ch, "%s", "");
    char ran[96];
    if (epochs_min == epochs_max) snprintf(ran, sizeof ran, "%d epochs each", epochs_min);
    else snprintf(ran, sizeof ran, "%d to %d epochs", epochs_min, epochs_max);
    char against[96] = "the shipped model's full run";
    if (shipped_epochs > 0)
        snprintf(against, sizeof against,
                 epochs_max >= shipped_epochs ? "the shipped model's %d (its own log among them)"
                                              : "the shipped model's %d",
                 shipped_epochs);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], "augment") == 0 && fit[i] < final[i])
            ch_verdict(ch, "In the run with crop and flip, the training accuracy (%.2f%%) is still "
                       "below the validation accuracy (%.2f%%) after its last epoch: the "
                       "model has not begun to overfit, and overfitting is what augmentation "
                       "is for.", 100 * fit[i], 100 * final[i]);
    const float spread = seed_spread(ch, names, final, n);
    accuracy_against_minutes(ch, names, final, epochs, n, shipped_speed, spread);
    ch_say(ch, "Be careful with these: the experiments ran %s, against %s, with one seed "
               "each. Augmentation and weight decay "
               "are regularisers: they fight overfitting, which grows with training, so a "
               "short run shows them at their least useful, and may even find them in the "
               "way. Warm-up protects the first steps, whose damage a long run has time to "
               "repair. What a short experiment can say is whether a part hurts or helps "
               "early; the long run is the one that counts.", ran, against);
}

/* ------------------------------------------------------ 4. the trained model */

// The model's normalisation from its metadata, else train_defaults()'.
static void model_norm(const Vit *vit, float *mean, float *std) {
    const TrainConfig d = train_defaults();
    *mean = d.mean, *std = d.std;
    const char *m = st_meta(&vit->file, "mean"), *s = st_meta(&vit->file, "std");
    float a, b;
    VitError err;
    if (m && s && vit_parse_float(&a, m, "mean", &err) == VIT_OK &&
        vit_parse_float(&b, s, "std", &err) == VIT_OK && b > 0)
        *mean = a, *std = b;
}

// [pos_similarity]
// The mean cosine similarity of the position embeddings of patches next to each other
// (Manhattan distance 1 on the G×G grid) and far apart (G/2 or more); pos is
// (1 + G·G, D), row 0 [cls]'s.
static void pos_similarity(float *near, float *far, const float *pos_embed, int G, int D) {
    const float *pos = pos_embed + D;
    double sum_near = 0, sum_far = 0;
    int n_near = 0, n_far = 0;
    for (int a = 0; a < G * G; a++)
        for (int b = a + 1; b < G * G; b++) {
            const int d = abs(a / G - b / G) + abs(a % G - b % G);
            double ab = 0, aa = 0, bb = 0;
            for (int j = 0; j < D; j++) {
                const double x = pos[a * D + j], y = pos[b * D + j];
                ab += x * y, aa += x * x, bb += y * y;
            }
            const double cosine = ab / sqrt(aa * bb);
            if (d == 1) sum_near += cosine, n_near++;
            else if (d >= G / 2) sum_far += cosine, n_far++;
        }
    *near = (float)(sum_near / (n_near ? n_near : 1));
    *far = (float)(sum_far / (n_far ? n_far : 1));
}
// [pos_similarity]

static void the_trained_model(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. The trained model")) return;
    char path[1024], shown[128];
    snprintf(shown, sizeof shown, "data/%s", MODEL_FILE);
    vit_data_path(path, sizeof path, MODEL_FILE);
    const bool present = access(path, F_OK) == 0;
    ch_value(ch, "model.present", present ? 1.0f : 0.0f);
    if (!present) {
        ch_verdict(ch, "%s, the model `vit train` trained for the project on all 55,000 "
                   "training images, is not there yet, so it cannot be tested here: this "
                   "section is skipped. Once it is committed, this section loads it, runs it "
                   "on the first %s test images, and shows its confusion matrix and its "
                   "mistakes.", shown, th(TEST_IMAGES));
        return;
    }
    Vit vit;
    VitError err;
    if (vit_build(&vit, path, &err) != VIT_OK) {
        ch_verdict(ch, "%s cannot be loaded (%s): this section is skipped.", shown, err.msg);
        return;
    }
    const VitConfig *c = &vit.config;
    const Dataset slice = dataset_slice(&w->test, 0, TEST_IMAGES);
    float mean, std;
    model_norm(&vit, &mean, &std);
    char params[VIT_NUM_BUF];
    vit_thousands(params, (int64_t)ch_value(ch, "model.params", (float)vit_param_count(c)));
    ch_say(ch, "%s is the model `vit train` trained for the project: %d×%d images in %d×%d "
               "patches, N = %d tokens of width D = %d, %d blocks of %d heads, M = %d, %s "
               "parameters. vit_build() maps it, and its metadata gives the normalisation "
               "it was trained with (μ = %.4f, σ = %.4f). Now, for the first time, the "
               "test images: eval_run() runs it on the first %s and counts.",
           shown, c->image_size, c->image_size, c->patch_size, c->patch_size,
           vit_num_tokens(c), c->dim, c->depth, c->heads, c->mlp_dim, params, (double)mean,
           (double)std, th(TEST_IMAGES));
    EvalResult r;
    // [evaluate]
    if (eval_run(&vit, &slice, mean, std, 50, &r, &err) != VIT_OK) {
        ch_verdict(ch, "the evaluation failed: %s", err.msg);
        vit_free(&vit);
        return;
    }
    // [evaluate]
    const int Y = r.classes;
    float *conf = vit_malloc(sizeof(float) * Y * Y), per_class[10];
    for (int i = 0; i < Y * Y; i++) conf[i] = (float)r.confusion[i];
    Tensor tc = tensor_view(conf, 2, Y, Y);
    ch_pin(ch, "test.confusion", &tc);
    ch_say(ch, "%d of the %s are right, %.1f%%, with a mean loss of %.4f. The confusion "
               "matrix counts every image once, in the row of its true class and the "
               "column of the class the model chose; the diagonal is right:",
           (int)ch_value(ch, "test.correct", (float)r.correct), th(r.count),
           100 * ch_value(ch, "test.accuracy", (float)eval_accuracy(&r)),
           ch_value(ch, "test.loss", (float)r.loss));
    char head[160];
    int at = snprintf(head, sizeof head, "    %-14s", "true \\ chosen");
    for (int x = 0; x < Y && Y <= 10; x++) at += snprintf(head + at, sizeof head - (size_t)at, "%5d", x);
    ch_line(ch, "%s   right", head);
    int worst_true = 0, worst_pred = 1;
    for (int y = 0; y < Y && Y <= 10; y++) {
        char row[160];
        int n = 0, k = snprintf(row, sizeof row, "    %d %-12s", y, DATASET_FASHION_MNIST_CLASSES[y]);
        for (int x = 0; x < Y; x++) {
            k += snprintf(row + k, sizeof row - (size_t)k, "%5d", r.confusion[y * Y + x]);
            n += r.confusion[y * Y + x];
            if (x != y && r.confusion[y * Y + x] > r.confusion[worst_true * Y + worst_pred])
                worst_true = y, worst_pred = x;
        }
        per_class[y] = n ? (float)r.confusion[y * Y + y] / (float)n : 0.0f;
        ch_line(ch, "%s  %5.1f%%", row, 100 * per_class[y]);
    }
    ch_line(ch, "%s", "");
    pin_row(ch, "test.per_class", per_class, Y);
    const int easiest = ops_index_of_max(per_class, Y);
    int hardest = 0;
    for (int y = 1; y < Y; y++)
        if (per_class[y] < per_class[hardest]) hardest = y;
    // the tops: T-shirt/top, pullover, coat and shirt, whose outlines are alike
    const bool top[10] = {[0] = true, [2] = true, [4] = true, [6] = true};
    ch_say(ch, "The easiest class is %s (%.1f%% right), the hardest %s (%.1f%%). The most "
               "frequent mistake is a %s taken for a %s, %d times%s",
           DATASET_FASHION_MNIST_CLASSES[easiest], 100 * per_class[easiest],
           DATASET_FASHION_MNIST_CLASSES[hardest], 100 * per_class[hardest],
           DATASET_FASHION_MNIST_CLASSES[worst_true], DATASET_FASHION_MNIST_CLASSES[worst_pred],
           r.confusion[worst_true * Y + worst_pred],
           Y == 10 && top[hardest] && top[worst_true] && top[worst_pred]
               ? ": the hard classes are the tops (T-shirt, pullover, coat, shirt), whose "
                 "outlines differ in details at 28×28, a collar or a button line."
               : ".");

    // The first MISTAKES mistakes, in the test set's order, with their probabilities.
    enum { CHUNK = 50 };
    const int S = c->image_size;
    const size_t image = (size_t)c->channels * S * S;
    float *batch = vit_malloc_aligned(sizeof(float) * CHUNK * image), probs[10];
    float mi[MISTAKES], mt[MISTAKES], mp[MISTAKES], mprob[MISTAKES], mtrue_prob[MISTAKES];
    int found = 0, labels[CHUNK], idx[CHUNK];
    const int shape[4] = {CHUNK, c->channels, S, S};
    const Tensor input = tensor_view_shape(batch, 4, shape);
    for (int first = 0; first + CHUNK <= slice.count && found < MISTAKES; first += CHUNK) {
        for (int b = 0; b < CHUNK; b++) idx[b] = first + b;
        dataset_batch(batch, labels, &slice, idx, CHUNK, mean, std, NULL, NULL);
        if (vit_forward(&vit, &input, NULL, NULL, &err) != VIT_OK) break;
        const Tensor logits = vit_logits(&vit);
        for (int b = 0; b < CHUNK && found < MISTAKES; b++) {
            softmax(probs, logits.data + (size_t)b * Y, 1, Y);
            const int chosen = ops_index_of_max(probs, Y);
            if (chosen == labels[b]) continue;
            mi[found] = (float)(first + b), mt[found] = (float)labels[b], mp[found] = (float)chosen;
            mprob[found] = probs[chosen], mtrue_prob[found] = probs[labels[b]];
            found++;
        }
    }
    free(batch);
    pin_row(ch, "mistakes.index", mi, found);
    pin_row(ch, "mistakes.true", mt, found);
    pin_row(ch, "mistakes.chosen", mp, found);
    pin_row(ch, "mistakes.p_chosen", mprob, found);
    pin_row(ch, "mistakes.p_true", mtrue_prob, found);
    ch_say(ch, "Its first %d mistakes among the test images, with the probability softmax "
               "gives the class it chose and the true one:", found);
    float *img = vit_malloc(sizeof(float) * image * MISTAKES);
    const float *shown_img[MISTAKES];
    char caption[MISTAKES][2][40];
    for (int i = 0; i < found; i++) {
        image_values(img + i * image, &slice, (int)mi[i]);
        shown_img[i] = img + i * image;
        snprintf(caption[i][0], 40, "test %d: %s", (int)mi[i], DATASET_FASHION_MNIST_CLASSES[(int)mt[i]]);
        snprintf(caption[i][1], 40, "as %s %.2f (%.2f)", DATASET_FASHION_MNIST_CLASSES[(int)mp[i]],
                 (double)mprob[i], (double)mtrue_prob[i]);
    }
    for (int i = 0; i < found; i += 2)
        draw_row(ch, shown_img + i, caption + i, found - i < 2 ? 1 : 2, S);
    ch_say(ch, "Above each: the test image's index and its true class, then the class the "
               "model took it for with its probability, and in brackets the probability of "
               "the true class.");
    free(img);
    free(conf);
    eval_free(&r);

    // What the position embeddings learned, beside a model drawn at random (Section 5).
    Vit fresh;
    const VitInit init = vit_init_timm(seed());
    if (vit_build_random(&fresh, c, &init, &err) == VIT_OK) {
        const int G = S / c->patch_size;
        pos_similarity(&w->pos_near[0], &w->pos_far[0], vit.weights.pos_embed, G, c->dim);
        pos_similarity(&w->pos_near[1], &w->pos_far[1], fresh.weights.pos_embed, G, c->dim);
        ch_valuef(ch, w->pos_near[0], "model.pos_cos_near");
        ch_valuef(ch, w->pos_far[0], "model.pos_cos_far");
        ch_valuef(ch, w->pos_near[1], "model.pos_cos_near_init");
        ch_valuef(ch, w->pos_far[1], "model.pos_cos_far_init");
        w->pos_far_from = G / 2, w->have_model = true;
        vit_free(&fresh);
    }
    vit_free(&vit);
}

/* -------------------------------------------------------- 5. data hunger */

// The mean and the standard deviation (n − 1 in the denominator) of n values.
static void mean_and_sd(const float *v, int n, float *mean, float *sd) {
    double sum = 0, squares = 0;
    for (int i = 0; i < n; i++) sum += v[i];
    const double m = sum / n;
    for (int i = 0; i < n; i++) squares += (v[i] - m) * (v[i] - m);
    *mean = (float)m, *sd = n > 1 ? (float)sqrt(squares / (n - 1)) : 0.0f;
}

/// One run of Section 5 over its seeds, in points (percent).
typedef struct {
    float fit, fit_sd, val, val_sd, gap, gap_sd; // means over the seeds, and their spread
} SeedSummary;

// Do two means over SEEDS runs each differ by more than their seeds' spread: more
// than twice the standard error of their difference, √(sd_a²/n + sd_b²/n)?
static bool beyond_seeds(float a, float sd_a, float b, float sd_b) {
    return fabsf(a - b) > 2 * sqrtf((sd_a * sd_a + sd_b * sd_b) / SEEDS);
}

// Pins the seeds' final accuracies (fractions) of the run `name` and their
// summary, in points.
static void summarize_seeds(Chapter *ch, const char *name, const float seed_val[SEEDS],
                            const float seed_fit[SEEDS], SeedSummary *o) {
    pin_rowf(ch, seed_val, SEEDS, "%s.seeds.val_acc", name);
    pin_rowf(ch, seed_fit, SEEDS, "%s.seeds.fit_acc", name);
    float val[SEEDS], fit[SEEDS], gap[SEEDS];
    for (int k = 0; k < SEEDS; k++)
        val[k] = 100 * seed_val[k], fit[k] = 100 * seed_fit[k], gap[k] = fit[k] - val[k];
    mean_and_sd(val, SEEDS, &o->val, &o->val_sd);
    mean_and_sd(fit, SEEDS, &o->fit, &o->fit_sd);
    mean_and_sd(gap, SEEDS, &o->gap, &o->gap_sd);
    ch_valuef(ch, o->val, "%s.val_mean", name), ch_valuef(ch, o->val_sd, "%s.val_sd", name);
    ch_valuef(ch, o->fit, "%s.fit_mean", name), ch_valuef(ch, o->fit_sd, "%s.fit_sd", name);
    ch_valuef(ch, o->gap, "%s.gap", name), ch_valuef(ch, o->gap_sd, "%s.gap_sd", name);
}

// Runs RUN[i] from the seeds after seed() (seed() itself is w->runs[i]) and pins
// and returns every seed's final accuracies and their summary, in points.
// [seeds]
static bool run_seeds(Chapter *ch, Work *w, int i, SeedSummary *out) {
    const RunLog *first = &w->runs[i];
    w->seed_val[i][0] = first->val_acc[first->rows - 1], w->seed_fit[i][0] = first->fit_acc;
    for (int k = 1; k < SEEDS; k++) {
        RunLog other;
        if (!train_run(ch, w, i, seed() + (uint64_t)k, &other)) return false;
        w->seed_val[i][k] = other.val_acc[other.rows - 1], w->seed_fit[i][k] = other.fit_acc;
    }
    summarize_seeds(ch, first->name, w->seed_val[i], w->seed_fit[i], out);
    return true;
}
// [seeds]

// RUN[i] for the CNN from `seed`: the ViT's settings, and its images, order,
// crops and flips step for step; its final accuracy on the validation images
// and on (at most FIT_IMAGES of) its own.
static bool cnn_run(Chapter *ch, Work *w, int i, uint64_t seed, float *val, float *fit) {
    const int images = RUN[i].images;
    const Dataset train = dataset_slice(&w->train, 0, images);
    // [cnn_recipe]
    const TrainConfig c = run_config(i, seed); // the ViT's settings, the same images
    CnnRun r;
    VitError err;
    if (cnn_run_init(&r, SMALL_CNN, &c, &train, &err) != VIT_OK) {
        ch_verdict(ch, "cannot start the CNN's run: %s", err.msg);
        return false;
    }
    r.schedule.warmup_steps = WARMUP;          // as the ViT's runs
    for (int s = 0; s < steps(); s++) {
        TrainStep step;
        if (cnn_run_step(&r, &step, &err) != VIT_OK) { // trainer_step(), the model swapped
            ch_say(ch, "the CNN's run stopped at step %d: %s", s + 1, err.msg);
            cnn_run_free(&r);
            return false;
        }
    }
    // [cnn_recipe]
    const Dataset own = dataset_slice(&train, 0, images < FIT_IMAGES ? images : FIT_IMAGES);
    *val = cnn_accuracy(&r.model, &w->val_slice, c.mean, c.std);
    *fit = cnn_accuracy(&r.model, &own, c.mean, c.std);
    cnn_run_free(&r);
    return true;
}

// The CNN's runs of the SIZES from every seed, pinned as cnn128, … and summarized.
static bool cnn_seeds(Chapter *ch, Work *w, SeedSummary out[SIZES]) {
    for (int i = 0; i < SIZES; i++) {
        float val[SEEDS], fit[SEEDS];
        for (int k = 0; k < SEEDS; k++)
            if (!cnn_run(ch, w, i, seed() + (uint64_t)k, &val[k], &fit[k])) return false;
        char name[32];
        snprintf(name, sizeof name, "cnn%d", RUN[i].images);
        summarize_seeds(ch, name, val, fit, &out[i]);
    }
    return true;
}

static void hunger_intro(Chapter *ch, const Work *w) {
    if (!ch_section(ch, "5. Why a ViT is hungry for data")) return;
    ch_say(ch, "A convolutional network is built to see images. Its filters are small, so "
               "each output looks at a neighbourhood of pixels (locality), and one filter "
               "slides over every position, so a pattern learned in one corner is "
               "recognised in every other (translation equivariance). Nothing has to be "
               "learned for that: it is in the architecture. A ViT has both only inside a "
               "patch. Its patch embedding is a convolution whose stride is its size "
               "(Chapter 06: unfold + linear), %d×%d pixels in this chapter's small model "
               "and 4×4 in the shipped one, so the same filters read every patch; but a "
               "garment moved by less than a patch lands in other patches, the position "
               "embeddings tie each token to its place, and from there attention lets every "
               "token read every other, near or far, with equal ease. That a patch's "
               "neighbours matter more than the far corner, that a sleeve is a sleeve "
               "wherever it is, the ViT must learn from examples: the position embeddings "
               "start as noise and have to discover which patches are next to each other.",
           TINY.patch_size, TINY.patch_size);
    if (w->have_model)
        ch_verdict(ch, "The shipped model shows what that learning produced. In its position "
                   "embeddings, the vectors of patches next to each other have a mean cosine "
                   "similarity of %.2f, those of patches %d or more apart %.2f%s. Position "
                   "embeddings drawn at random, as a run's are before its first step (timm's "
                   "initialisation, here from this chapter's seed, %d; the shipped run "
                   "started from a seed of its own), give %.2f and %.2f.",
               w->pos_near[0], w->pos_far_from, w->pos_far[0],
               w->pos_near[0] - w->pos_far[0] > 0.1f && w->pos_near[0] - w->pos_near[1] > 0.1f
                   ? ": the grid has been learned, from images alone"
                   : ": little of the grid is there",
               (int)seed(), w->pos_near[1], w->pos_far[1]);
}

// One row of Section 5's table: a run's mean ± sd over the seeds.
static void seeds_row(Chapter *ch, const char *model, int i, const SeedSummary *m) {
    ch_line(ch, "    %-5s  %6d  %9s  %6d  %5.1f ± %4.1f%%  %5.1f ± %4.1f%%   %5.1f ± %4.1f", model,
            RUN[i].images, RUN[i].augment ? "yes" : "no", steps() / (RUN[i].images / BATCH),
            m->fit, m->fit_sd, m->val, m->val_sd, m->gap, m->gap_sd);
}

// The table of Section 5: the ViT's runs, then the CNN's on the same sizes.
static void seeds_table(Chapter *ch, const SeedSummary *vit, const SeedSummary *cnn) {
    ch_line(ch, "    model  images  augmented  epochs     own images     validation  gap (points)");
    for (int i = 0; i < RUNS; i++) seeds_row(ch, "ViT", i, &vit[i]);
    for (int i = 0; i < SIZES; i++) seeds_row(ch, "CNN", i, &cnn[i]);
    ch_line(ch, "%s", "");
}

static void hunger_gap(Chapter *ch, const Work *w, const SeedSummary *m) {
    const RunLog *few = &w->runs[0], *most = &w->runs[SIZES - 1];
    // the gap falls: from the fewest images to the most beyond the seeds' spread,
    // and never rising beyond it from one size to the next
    bool falls = beyond_seeds(m[0].gap, m[0].gap_sd, m[SIZES - 1].gap, m[SIZES - 1].gap_sd) &&
                 m[SIZES - 1].gap < m[0].gap;
    for (int i = 1; i < SIZES; i++)
        falls &= m[i].gap <= m[i - 1].gap || !beyond_seeds(m[i].gap, m[i].gap_sd, m[i - 1].gap,
                                                           m[i - 1].gap_sd);
    ch_say(ch, "\"Own images\" is the accuracy on (at most %s of) the images the run trained "
               "on, \"validation\" on the %s it never saw (the same for every run), and the "
               "gap is the difference. With %d images the model learns them by heart: %.1f%% "
               "of its own, %.1f%% of new ones, a gap of %.1f points. The gap %s: %.1f points "
               "with %s, %.1f with %s, %.1f with %s, where every image is seen once and an "
               "image trained on is, when it comes, as new as a validation one.%s",
           th(FIT_IMAGES), th(VAL_IMAGES), few->images, m[0].fit, m[0].val, m[0].gap,
           falls ? "falls as the images grow" : "does not clearly fall as the images grow",
           m[1].gap, th(RUN[1].images), m[2].gap, th(RUN[2].images), m[SIZES - 1].gap,
           th(most->images),
           falls ? " That is the hunger: what a model learns from few images is, to a large "
                   "part, those images." : "");
}

static void hunger_validation(Chapter *ch, const Work *w, const SeedSummary *m) {
    const RunLog *few = &w->runs[0], *most = &w->runs[SIZES - 1];
    int best = 0;
    for (int i = 1; i < SIZES; i++)
        if (m[i].val > m[best].val) best = i;
    const SeedSummary *b = &m[best], *l = &m[SIZES - 1];
    if (best == SIZES - 1) {
        ch_verdict(ch, "And the validation accuracy is highest with the most images: %.1f%%, "
                   "%.1f%%, %.1f%% and %.1f%%.", m[0].val, m[1].val, m[2].val, m[3].val);
        return;
    }
    const bool clear = beyond_seeds(b->val, b->val_sd, l->val, l->val_sd);
    ch_say(ch, "Yet the validation accuracy does not keep growing: %.1f%%, %.1f%%, %.1f%% and "
               "%.1f%% for the four sizes, highest with %s images, %.1f points above the run "
               "on %s%s. %d steps are few for a large set: the run on %s images got only "
               "%.1f%% of its own images right, far from having learned what they hold, so "
               "more steps could still lift it; the run on %d has seen its images %d times "
               "already. The shipped recipe looks at %d times as many images as these runs.",
           m[0].val, m[1].val, m[2].val, m[3].val, th(RUN[best].images), b->val - l->val,
           th(most->images),
           clear ? ", more than the seeds' spread" : ", within the seeds' spread: these runs "
                   "cannot tell the two apart", steps(), th(most->images), l->fit, few->images,
           w->runs[0].epochs,
           (int)lround((double)train_defaults().epochs * (55000 / train_defaults().batch) *
                       train_defaults().batch / (steps() * BATCH)));
}

static void hunger_augmentation(Chapter *ch, const SeedSummary *m) {
    const int plain = 1;
    const SeedSummary *a = &m[AUGMENTED], *p = &m[plain];
    const bool closes = a->gap < p->gap && beyond_seeds(a->gap, a->gap_sd, p->gap, p->gap_sd);
    const bool costs = a->val < p->val && beyond_seeds(a->val, a->val_sd, p->val, p->val_sd);
    const bool helps = a->val > p->val && beyond_seeds(a->val, a->val_sd, p->val, p->val_sd);
    ch_say(ch, "And augmentation? On the same %d images, crop and flip take the gap from "
               "%.1f to %.1f points%s. %s %.1f%% of new images right, against %.1f%% "
               "without.%s",
           RUN[AUGMENTED].images, p->gap, a->gap,
           closes ? ": the model can no longer learn the exact pixels, since it never sees "
                    "them twice alike" : ", not beyond the seeds' spread",
           costs   ? "But in so short a run they cost more than they give:"
           : helps ? "And they help at once:"
                   : "Their effect on new images is within the seeds' spread:",
           a->val, p->val,
           costs ? " A moved and mirrored image is a harder lesson, learned more slowly. "
                   "Augmentation pays when overfitting is what limits the model, and only a "
                   "run long enough for that can show it; Section 3's experiments ask it of "
                   "the shipped model's recipe." : "");
}

// Multiply-adds of one image's forward pass through a ViT: the products of its
// matrix multiplications (patch embedding, Q, K, V, Q·Kᵀ, probs·V, the output
// projection, the MLP, the head on [cls]); norms, softmax and GELU add no products.
static long vit_macs(const VitConfig *m) {
    const long D = m->dim, M = m->mlp_dim, P = (long)(m->image_size / m->patch_size) *
                                               (m->image_size / m->patch_size), N = P + 1;
    const long patch = P * m->channels * m->patch_size * m->patch_size * D;
    const long block = N * D * 3 * D + 2 * N * N * D + N * D * D + 2 * N * D * M;
    return patch + m->depth * block + D * m->num_classes;
}

// The two models' sizes and what one image costs each.
static void cnn_intro(Chapter *ch) {
    CnnParams p;
    cnn_params_new(&p, SMALL_CNN);
    const int cnn_params = (int)ch_value(ch, "cnn.params", (float)p.count);
    cnn_params_free(&p);
    const int cnn_cost = (int)ch_value(ch, "cnn.macs", (float)cnn_macs(SMALL_CNN));
    const int vit_params = (int)ch_value(ch, "vit.params", (float)vit_param_count(&TINY));
    const int vit_cost = (int)ch_value(ch, "vit.macs", (float)vit_macs(&TINY));
    ch_say(ch, "Is that hunger the ViT's, or any model's on so few images? Beside each run "
               "of the four sizes, a small CNN (cnn.h: a 3×3 convolution of %d channels, "
               "ReLU, 2×2 max pooling, a 3×3 convolution of %d, ReLU, pooling, the mean of "
               "each channel, a linear layer) trains with the ViT's recipe on the same "
               "images, in the same order, from the same seeds, for the same steps. Its "
               "channels are chosen so that both models spend the same arithmetic on an "
               "image: %s multiply-adds for the CNN, %s for the ViT. The parameters are not "
               "matched: the CNN has %s, the ViT %s, so whatever the CNN does better it "
               "does with fewer weights.",
           SMALL_CNN.c1, SMALL_CNN.c2, th(cnn_cost), th(vit_cost), th(cnn_params),
           th(vit_params));
}

// Does the CNN beat the ViT on few images, and does the ViT catch up as they grow?
static void hunger_cnn(Chapter *ch, const SeedSummary *vit, const SeedSummary *cnn) {
    float lead[SIZES], lead_sd[SIZES]; // CNN − ViT on new images, and its seeds' spread
    for (int i = 0; i < SIZES; i++)
        lead[i] = cnn[i].val - vit[i].val,
        lead_sd[i] = sqrtf(cnn[i].val_sd * cnn[i].val_sd + vit[i].val_sd * vit[i].val_sd);
    const int last = SIZES - 1;
    const bool few = beyond_seeds(cnn[0].val, cnn[0].val_sd, vit[0].val, vit[0].val_sd);
    const bool most = beyond_seeds(cnn[last].val, cnn[last].val_sd, vit[last].val, vit[last].val_sd);
    const bool closes = lead[last] < lead[0] && beyond_seeds(lead[0], lead_sd[0], lead[last],
                                                              lead_sd[last]);
    ch_say(ch, "On new images, with %d training images the CNN gets %.1f%% right and the ViT "
               "%.1f%%: %s. With %s images, %.1f%% against %.1f%%: %s. The difference, CNN "
               "minus ViT, goes from %.1f points to %.1f (%.1f and %.1f with %s and %s "
               "images)%s.",
           RUN[0].images, cnn[0].val, vit[0].val,
           !few ? "the seeds cannot tell them apart"
           : lead[0] > 0 ? "the CNN is ahead, beyond the seeds' spread"
                         : "the ViT is ahead, beyond the seeds' spread",
           th(RUN[last].images), cnn[last].val, vit[last].val,
           !most ? "the seeds cannot tell them apart"
           : lead[last] > 0 ? "the CNN is still ahead, beyond the seeds' spread"
                            : "the ViT is ahead, beyond the seeds' spread",
           lead[0], lead[last], lead[1], lead[2], th(RUN[1].images), th(RUN[2].images),
           closes ? ", a fall beyond the seeds' spread" : ", a change the seeds cannot tell "
                                                          "from their noise");
    if (few && lead[0] > 0 && closes)
        ch_verdict(ch, "That is what \"a ViT is hungry for data\" means here, measured: with the "
                   "same arithmetic per image, a model with locality and equivariance built "
                   "in learns more from few images, and the ViT closes the distance as the "
                   "images grow.");
    else
        ch_verdict(ch, "So these runs do not show the whole of the claim that a ViT is hungrier "
                   "for data than a CNN: %s",
               few && lead[0] > 0 ? "the CNN leads on few images, but the lead does not fall "
                                    "beyond the seeds' spread as the images grow."
                                  : "on few images the CNN is not ahead beyond the seeds' "
                                    "spread.");
    bool underfits = true; // the CNN learns less of its own images than the ViT, on every size
    for (int i = 0; i < SIZES; i++)
        underfits &= cnn[i].fit < vit[i].fit &&
                     beyond_seeds(cnn[i].fit, cnn[i].fit_sd, vit[i].fit, vit[i].fit_sd);
    if (underfits)
        ch_verdict(ch, "Built-in locality did not make up for what this CNN lacks in %d steps of "
                   "the ViT's recipe: it gets only %.1f%% of its own %d images right, where "
                   "the ViT learns %.1f%% of them, and it learns less of its own images than "
                   "the ViT on every size. It underfits; a CNN trained longer, or with a "
                   "recipe of its own, may tell another story, and these runs say nothing "
                   "about that.", steps(), cnn[0].fit, RUN[0].images, vit[0].fit);
}

static void data_hunger(Chapter *ch, Work *w) {
    hunger_intro(ch, w);
    ch_say(ch, "So a ViT would need many images, or augmentation that makes more images out "
               "of each one. Does it? With this dataset: the same tiny ViT, the same recipe and the "
               "same %d steps, on more and more training images (the two runs of Section 2 "
               "among them), and once on %d images with `vit train`'s crop and flip. One run "
               "says little: each is run from %d seeds (%d, %d and %d: the weights' draw and "
               "the order of the images), and the table gives the mean ± the standard "
               "deviation over them. Two means differ here only when they are more than "
               "twice the standard error of their difference apart, √(sd_a²/%d + sd_b²/%d); "
               "with %d seeds that is a rough rule, and a difference inside it says nothing "
               "either way.", steps(), RUN[AUGMENTED].images, SEEDS, (int)seed(),
           (int)seed() + 1, (int)seed() + 2, SEEDS, SEEDS, SEEDS);
    for (int i = 0; i < RUNS; i++) {
        if (i == SMALL || i == SHORT) continue;
        if (!train_run(ch, w, i, seed(), &w->runs[i])) return;
        pin_run(ch, &w->runs[i]);
    }
    SeedSummary sum[RUNS], cnn[SIZES];
    for (int i = 0; i < RUNS; i++)
        if (!w->runs[i].ok || !run_seeds(ch, w, i, &sum[i])) return;
    cnn_intro(ch);
    if (!cnn_seeds(ch, w, cnn)) return;
    seeds_table(ch, sum, cnn);
    hunger_gap(ch, w, sum);
    hunger_validation(ch, w, sum);
    hunger_augmentation(ch, sum);
    hunger_cnn(ch, sum, cnn);
}

/* ------------------------------------------------------------- 6. the film */

// The film's frames the section shows, the test image it follows, and the
// layer log's epochs and groups it tabulates.
enum { FILM_FRAMES = 4, FILM_TOP = 5, RATIO_EPOCHS = 6, RATIO_GROUPS = 3 };
static const int FILM_EPOCH[FILM_FRAMES] = {0, 1, 4, 36};
static const int FILM_IMAGE = 0; // test image 0, an ankle boot the trained model is sure of
static const char FILM_DIR[] = "models/vit-fashion.film";
static const char LAYER_LOG[] = "models/vit-fashion.layers.csv";
static const char LAYER_HEADER[] = "epoch,step,layer,grad_norm,weight_norm,update_ratio";
static const int RATIO_EPOCH[RATIO_EPOCHS] = {1, 2, 4, 8, 16, 36};
static const char *const RATIO_GROUP[RATIO_GROUPS] = {"patch_embed", "blocks.2", "head"};

/// What one frame of the film did on the first TEST_IMAGES and on FILM_IMAGE.
typedef struct {
    float accuracy;        // on the first TEST_IMAGES test images
    int chosen;            // FILM_IMAGE's predicted class
    float p_chosen, p_true; // its probability, and the true class's
    int side, heads;       // the frame's patch grid's side (P = side²) and its heads
    float cls[64];         // the last layer's [cls] attention over the P patches, heads' mean
    float self;            // what [cls] keeps for itself
    float bits, top;       // the patch shares' entropy (renormalised to sum 1), the top 5's share
} FilmFrameResult;

// The entropy in bits of the P shares of a map renormalised to sum 1, and the
// share of its FILM_TOP largest (of the renormalised map).
static void map_focus(float *bits, float *top, const float *map, int P) {
    double sum = 0, h = 0;
    for (int p = 0; p < P; p++) sum += map[p];
    for (int p = 0; p < P; p++)
        if (map[p] > 0) h -= map[p] / sum * log2(map[p] / sum);
    int order[64];
    rollout_map_rank(order, map, P);
    double t = 0;
    for (int k = 0; k < FILM_TOP && k < P; k++) t += map[order[k]];
    *bits = (float)h, *top = (float)(t / sum);
}

// Can the section read this frame: 28×28 grey images, 10 classes, at most 64 patches?
static bool film_fits(const VitConfig *c, const char *path, VitError *err) {
    const int G = c->image_size / c->patch_size;
    if (c->image_size == 28 && c->channels == 1 && c->num_classes == 10 && G * G <= 64)
        return true;
    vit_fail(err, VIT_ERR_INPUT, "%s is not a model of 28×28 grey images in 10 classes with "
             "at most 64 patches", path);
    return false;
}

// [film_look]
// FILM_IMAGE through a frame, recording only the attention probabilities
// (rollout_record_probs(), as Chapter 12's rollout does): the class chosen, the
// probabilities, and the last block's [cls] row, the heads' mean.
static bool film_look(FilmFrameResult *r, Vit *vit, const Dataset *test, float mean, float std,
                      VitError *err) {
    const VitConfig *c = &vit->config;
    const int S = c->image_size, G = S / c->patch_size, N = G * G + 1, Y = c->num_classes;
    float input[28 * 28], probs[10], row[65]; // film_fits(): 28×28 grey, 10 classes, N ≤ 65
    int label, idx = FILM_IMAGE;
    const int shape[4] = {1, 1, S, S};
    const Tensor x = tensor_view_shape(input, 4, shape); // (1, 1, S, S)
    dataset_batch(input, &label, test, &idx, 1, mean, std, NULL, NULL);
    TraceRecorder rec = {0};
    char name[64];
    snprintf(name, sizeof name, "blocks.%d.attn.probs", c->depth - 1);
    const Tensor *t = NULL; // (1, H, N, N)
    if (vit_forward(vit, &x, rollout_record_probs, &rec, err) == VIT_OK &&
        !(t = trace_find(&rec, name)))
        vit_fail(err, VIT_ERR_INPUT, "no %s in the trace", name);
    if (t) {
        softmax(probs, vit_logits(vit).data, 1, Y);
        r->chosen = ops_index_of_max(probs, Y);
        r->p_chosen = probs[r->chosen], r->p_true = probs[label];
        attention_cls_row(row, t->data, c->heads, N, -1, FUSE_MEAN); // (N): [cls], the patches
        r->self = row[0], r->side = G, r->heads = c->heads;
        memcpy(r->cls, row + 1, sizeof(float) * (size_t)(N - 1));
        map_focus(&r->bits, &r->top, r->cls, N - 1);
    }
    trace_recorder_free(&rec);
    return t != NULL;
}
// [film_look]

// [film_frame]
// One frame of the film, loaded as any model file is: its accuracy on `slice`
// (the first TEST_IMAGES test images), and what it makes of FILM_IMAGE.
static bool film_frame(FilmFrameResult *r, const char *path, const Dataset *test,
                       const Dataset *slice, VitError *err) {
    Vit vit;
    if (vit_build(&vit, path, err) != VIT_OK) return false;
    float mean, std;
    model_norm(&vit, &mean, &std); // the frame's metadata: the normalisation it trained with
    EvalResult e;
    bool ok = film_fits(&vit.config, path, err) &&
              eval_run(&vit, slice, mean, std, 50, &e, err) == VIT_OK;
    if (ok) r->accuracy = (float)eval_accuracy(&e), eval_free(&e);
    ok = ok && film_look(r, &vit, test, mean, std, err);
    vit_free(&vit);
    return ok;
}
// [film_frame]

static float most_of(const float *x, int n) {
    float m = x[0];
    for (int i = 1; i < n; i++) m = fmaxf(m, x[i]);
    return m;
}

// Two frames' maps side by side, each as percent of [cls]'s attention laid out on the
// G×G patch grid (as Chapter 12 prints its maps), under their captions.
static void film_grids(Chapter *ch, const FilmFrameResult *f, const int *epoch, int G) {
    char line[256];
    ch_line(ch, "    epoch %-*d    epoch %d", 6 * G - 6, epoch[0], epoch[1]);
    for (int y = 0; y < G; y++) {
        int at = snprintf(line, sizeof line, "   ");
        for (int k = 0; k < 2; k++, at += snprintf(line + at, sizeof line - (size_t)at, "   "))
            for (int x = 0; x < G; x++)
                at += snprintf(line + at, sizeof line - (size_t)at, " %5.1f",
                               100 * (double)f[k].cls[y * G + x]);
        while (at > 0 && line[at - 1] == ' ') line[--at] = '\0';
        ch_line(ch, "%s", line);
    }
    ch_line(ch, "%s", "");
}

// The update ratios of RATIO_GROUP at RATIO_EPOCH from the layer log (NAN where a
// row is missing); false with the reason in why when it cannot be read.
static bool layer_ratios(float ratio[RATIO_EPOCHS][RATIO_GROUPS], const char *path, char *why,
                         size_t size) {
    char *text, esc[256];
    size_t bytes;
    VitError err;
    if (file_read_all(&text, &bytes, path, (size_t)LOG_MAX_ROWS * 16 * 128, "a layer log",
                      &err) != VIT_OK) {
        snprintf(why, size, "%s", vit_escape(esc, sizeof esc, err.msg));
        return false;
    }
    for (int e = 0; e < RATIO_EPOCHS; e++)
        for (int g = 0; g < RATIO_GROUPS; g++) ratio[e][g] = NAN;
    const bool ok = strncmp(text, LAYER_HEADER, strlen(LAYER_HEADER)) == 0;
    if (!ok) snprintf(why, size, "its first line is not \"%s\"", LAYER_HEADER);
    // each row: epoch,step,layer,grad_norm,weight_norm,update_ratio
    for (char *line = ok ? strchr(text, '\n') : NULL; line && *++line; line = strchr(line, '\n')) {
        char group[32];
        int epoch;
        double grad, weight, r;
        if (sscanf(line, "%d,%*d,%31[^,],%lf,%lf,%lf", &epoch, group, &grad, &weight, &r) != 5)
            continue;
        for (int e = 0; e < RATIO_EPOCHS; e++)
            for (int g = 0; g < RATIO_GROUPS; g++)
                if (epoch == RATIO_EPOCH[e] && strcmp(group, RATIO_GROUP[g]) == 0 && isfinite(r))
                    ratio[e][g] = (float)r;
    }
    free(text);
    return ok;
}

// What the four frames show, said from their numbers.
static void film_says(Chapter *ch, const FilmFrameResult *f, double uniform, int t) {
    int right = -1, sharpest = 0; // the first frame that names the image, the most focused map
    for (int k = FILM_FRAMES - 1; k >= 0; k--)
        if (f[k].chosen == t) right = k;
    for (int k = 1; k < FILM_FRAMES; k++)
        if (f[k].bits < f[sharpest].bits) sharpest = k;
    const int last = FILM_FRAMES - 1;
    char named[200], after[80] = "";
    if (right < 0) snprintf(named, sizeof named, "No frame names the image.");
    else if (right == 0) snprintf(named, sizeof named, "Even the initial weights name the image.");
    else
        snprintf(named, sizeof named, "The frame of epoch %d is the first of the four to name "
                 "the image; epoch %d chose %s.", FILM_EPOCH[right], FILM_EPOCH[right - 1],
                 DATASET_FASHION_MNIST_CLASSES[f[right - 1].chosen]);
    if (sharpest != last)
        snprintf(after, sizeof after, ", and %s by epoch %d (%.2f bits)",
                 f[last].bits - f[sharpest].bits < 0.5 ? "a little broader again" : "broader again",
                 FILM_EPOCH[last], (double)f[last].bits);
    ch_say(ch, "At epoch 0 the attention is %s: %.2f bits against the uniform %.2f, and the "
               "top %d patches hold %.1f%%. The initial weights are small, so every score "
               "q·k is near 0 and softmax spreads [cls] evenly; the accuracy, %.1f%%, is %s. "
               "After epoch %d it is %.1f%%, after epoch %d %.1f%%, after epoch %d %.1f%%. %s "
               "The map is most focused at epoch %d (%.2f bits, the top %d holding %.1f%%)%s. "
               "Where [cls] reads is not yet why the model answers: Chapter 12 tests how far "
               "such maps point at what the answer rests on.",
           fabs(f[0].bits - uniform) < 0.05 ? "all but uniform" : "already uneven",
           (double)f[0].bits, uniform, FILM_TOP, 100 * (double)f[0].top,
           100 * (double)f[0].accuracy,
           fabsf(f[0].accuracy - 0.1f) < 0.03f ? "about what guessing one of ten gives"
                                               : "not what guessing one of ten gives",
           FILM_EPOCH[1], 100 * (double)f[1].accuracy, FILM_EPOCH[2], 100 * (double)f[2].accuracy,
           FILM_EPOCH[last], 100 * (double)f[last].accuracy, named, FILM_EPOCH[sharpest],
           (double)f[sharpest].bits, FILM_TOP, 100 * (double)f[sharpest].top, after);
}

// The film's FILM_FRAMES frames, each run on the first TEST_IMAGES test images and
// on FILM_IMAGE; false, said in the chapter, when one cannot be.
static bool film_run(Chapter *ch, FilmFrameResult *f, const Work *w) {
    char dir[1024];
    vit_data_path(dir, sizeof dir, FILM_DIR);
    const Dataset slice = dataset_slice(&w->test, 0, TEST_IMAGES);
    VitError err = {0};
    bool ok = true;
    for (int k = 0; ok && k < FILM_FRAMES; k++) {
        char *path = film_frame_path(dir, FILM_EPOCH[k]);
        ok = access(path, F_OK) == 0 && film_frame(&f[k], path, &w->test, &slice, &err);
        free(path);
    }
    ch_value(ch, "film.present", ok ? 1.0f : 0.0f);
    if (!ok) {
        char esc[256];
        ch_say(ch, "data/%s, the film of the shipped model's training, cannot be read (%s): "
                   "this part is skipped.", FILM_DIR,
               err.msg[0] ? vit_escape(esc, sizeof esc, err.msg) : "a frame is missing");
    }
    return ok;
}

// Every number of the frames, pinned by name: a row of FILM_FRAMES each, the maps (FILM_FRAMES, P).
static void film_pin(Chapter *ch, const FilmFrameResult *f, float *cls) {
    const int P = f[0].side * f[0].side;
    float col[9][FILM_FRAMES];
    for (int k = 0; k < FILM_FRAMES; k++) {
        const float row[9] = {(float)FILM_EPOCH[k], f[k].accuracy, (float)f[k].chosen,
                              f[k].p_chosen, f[k].p_true, f[k].self, f[k].bits, f[k].top};
        for (int c = 0; c < 8; c++) col[c][k] = row[c];
        memcpy(cls + k * P, f[k].cls, sizeof(float) * (size_t)P);
    }
    static const char *const NAME[8] = {"epoch", "accuracy", "chosen", "p_chosen",
                                        "p_true", "self", "bits", "top5"};
    for (int c = 0; c < 8; c++) pin_rowf(ch, col[c], FILM_FRAMES, "film.%s", NAME[c]);
    pin_row(ch, "film.cls", cls, FILM_FRAMES * P);
}

// What the section measures on each frame, and the table of it.
static void film_table(Chapter *ch, const FilmFrameResult *f, int t) {
    const int P = f[0].side * f[0].side;
    float lo = 1, hi = 0; // [cls] reading itself, over the frames
    for (int k = 0; k < FILM_FRAMES; k++) lo = fminf(lo, f[k].self), hi = fmaxf(hi, f[k].self);
    ch_say(ch, "`vit train --film` kept the model as it was at epoch 0 (the initial weights), "
               "1, 2, 4, 8, 16, 32 and 36, in data/%s/: each frame is a model file, and "
               "vit_build() loads it as it loads the model. Four of them, on test image %d, "
               "of class %s, and on the first %s test images. For the image: the class the "
               "frame chose and its probability, the true class's probability, and where the "
               "last block's [cls] reads (its attention over the %d patches, the %d heads' "
               "mean, as Chapter 12 reads it). How focused that is, in two numbers: its "
               "entropy in bits, with the %d shares divided by their sum (the rest of the "
               "row, [cls] reading itself, is %.1f%% to %.1f%% in these frames), where "
               "log2 %d = %.2f bits is uniform and lower is more focused; and the share of "
               "its %d largest patches (%d/%d = %.1f%% when uniform):",
           FILM_DIR, FILM_IMAGE, DATASET_FASHION_MNIST_CLASSES[t], th(TEST_IMAGES), P,
           f[0].heads, P, 100 * (double)lo, 100 * (double)hi, P, log2(P), FILM_TOP, FILM_TOP,
           P, 100.0 * FILM_TOP / P);
    ch_line(ch, "    epoch  chosen        p(chosen)  p(%s)  entropy  top %d  accuracy",
            DATASET_FASHION_MNIST_CLASSES[t], FILM_TOP);
    for (int k = 0; k < FILM_FRAMES; k++)
        ch_line(ch, "    %5d  %-12s  %8.1f%%  %*.1f%%  %5.2f b  %5.1f%%  %7.1f%%", FILM_EPOCH[k],
                DATASET_FASHION_MNIST_CLASSES[f[k].chosen], 100 * (double)f[k].p_chosen,
                (int)strlen(DATASET_FASHION_MNIST_CLASSES[t]) + 2, 100 * (double)f[k].p_true,
                (double)f[k].bits, 100 * (double)f[k].top, 100 * (double)f[k].accuracy);
    ch_line(ch, "%s", "");
}

// The image, then the frames' maps two by two.
static void film_maps(Chapter *ch, const Work *w, const FilmFrameResult *f, const float *cls,
                      int t) {
    const int G = f[0].side, P = G * G, S = w->test.size;
    float *img = vit_malloc(sizeof(float) * (size_t)S * S);
    const float *shown_img[1] = {img};
    char caption[1][2][40];
    image_values(img, &w->test, FILM_IMAGE);
    snprintf(caption[0][0], 40, "test %d:", FILM_IMAGE);
    snprintf(caption[0][1], 40, "%s", DATASET_FASHION_MNIST_CLASSES[t]);
    ch_say(ch, "The image, and each frame's map: the percent of [cls]'s attention on each "
               "patch, laid out as the patches are on the %d×%d grid (reading all %d tokens "
               "alike would give each %.1f%%; the largest share of the four maps is %.1f%%):",
           G, G, P + 1, 100.0 / (P + 1), 100 * (double)most_of(cls, FILM_FRAMES * P));
    draw_row(ch, shown_img, caption, 1, S);
    free(img);
    for (int k = 0; k + 1 < FILM_FRAMES; k += 2) film_grids(ch, f + k, FILM_EPOCH + k, G);
}

static void film_frames(Chapter *ch, Work *w) {
    FilmFrameResult f[FILM_FRAMES] = {{0}};
    if (!film_run(ch, f, w)) return;
    const int t = w->test.labels[FILM_IMAGE];
    float *cls = vit_malloc(sizeof(float) * FILM_FRAMES * (size_t)(f[0].side * f[0].side));
    film_pin(ch, f, cls);
    film_table(ch, f, t);
    film_maps(ch, w, f, cls, t);
    free(cls);
    film_says(ch, f, log2(f[0].side * f[0].side), t);
}

static float min_of(const float *x, int n) {
    float m = x[0];
    for (int i = 1; i < n; i++) m = fminf(m, x[i]);
    return m;
}

// What the ratios say about the learning rate, from their numbers.
static void ratios_say(Chapter *ch, float ratio[RATIO_EPOCHS][RATIO_GROUPS], const float *lr) {
    // [ratio_per_lr]
    float per_lr[RATIO_EPOCHS]; // the middle block's ratio divided by the learning rate
    for (int e = 0; e < RATIO_EPOCHS; e++) per_lr[e] = ratio[e][1] / lr[e];
    // [ratio_per_lr]
    const float lo = min_of(per_lr, RATIO_EPOCHS), hi = most_of(per_lr, RATIO_EPOCHS);
    const int peak = ops_index_of_max(lr, RATIO_EPOCHS), last = RATIO_EPOCHS - 1;
    char highest[256];
    int at = 0;
    for (int g = 0; g < RATIO_GROUPS; g++) {
        float col[RATIO_EPOCHS];
        for (int e = 0; e < RATIO_EPOCHS; e++) col[e] = ratio[e][g];
        at += snprintf(highest + at, sizeof highest - (size_t)at, "%s%d for %s",
                       g == 0 ? "" : g == RATIO_GROUPS - 1 ? " and " : ", ",
                       RATIO_EPOCH[ops_index_of_max(col, RATIO_EPOCHS)], RATIO_GROUP[g]);
    }
    ch_say(ch, "While the learning rate goes from %.2e (epoch %d) to %.2e (epoch %d), a "
               "factor of %.0f, %s's ratio divided by it stays between %.2f and %.2f: the "
               "ratio %s the learning rate, up through the warm-up and down the cosine. "
               "AdamW divides each gradient by its own running size, so a step moves each "
               "weight by about the learning rate, whatever the gradient's scale. Among the "
               "six epochs, the ratio is highest at epoch %s.",
           (double)lr[peak], RATIO_EPOCH[peak], (double)lr[last], RATIO_EPOCH[last],
           (double)(lr[peak] / lr[last]), RATIO_GROUP[1], (double)lo, (double)hi,
           hi < 4 * lo ? "follows" : "only loosely follows", highest);
    ch_say(ch, "So a ratio is healthy or not only beside the learning rate. At epoch %d, at "
               "the peak rate, the three groups move %.1e to %.1e of their size per step; at "
               "epoch %d, %.1e to %.1e, the largest %.0f times below: the steps have all but "
               "stopped, as the schedule means them to. The warnings are a group far from its "
               "neighbours at the same epoch, or one near 0 while the rate is still high.",
           RATIO_EPOCH[peak], (double)min_of(ratio[peak], RATIO_GROUPS),
           (double)most_of(ratio[peak], RATIO_GROUPS), RATIO_EPOCH[last],
           (double)min_of(ratio[last], RATIO_GROUPS), (double)most_of(ratio[last], RATIO_GROUPS),
           (double)(most_of(ratio[peak], RATIO_GROUPS) / most_of(ratio[last], RATIO_GROUPS)));
}

// The update ratios of a few groups at a few epochs, beside the learning rate.
static void update_ratios(Chapter *ch) {
    char path[1024], shown[160], why[512];
    snprintf(shown, sizeof shown, "data/%s", LAYER_LOG);
    float ratio[RATIO_EPOCHS][RATIO_GROUPS], lr[RATIO_EPOCHS];
    bool ok = layer_ratios(ratio, vit_data_path(path, sizeof path, LAYER_LOG), why, sizeof why);
    TrainLog log = {0};
    char log_shown[160];
    snprintf(log_shown, sizeof log_shown, "data/%s", LOG_FILE);
    ok = ok && log_read(&log, vit_data_path(path, sizeof path, LOG_FILE), log_shown, why, sizeof why);
    for (int e = 0; ok && e < RATIO_EPOCHS; e++) {
        lr[e] = NAN;
        for (int r = 0; r < log.rows; r++)
            if ((int)log.v[r][L_EPOCH] == RATIO_EPOCH[e]) lr[e] = (float)log.v[r][L_LR];
        for (int g = 0; g < RATIO_GROUPS; g++) ok &= isfinite(ratio[e][g]) && isfinite(lr[e]);
        if (!ok) snprintf(why, sizeof why, "epoch %d is not in both logs", RATIO_EPOCH[e]);
    }
    free(log.v);
    ch_value(ch, "layers.present", ok ? 1.0f : 0.0f);
    if (!ok) {
        ch_verdict(ch, "%s cannot be read (%s): the update ratios are skipped.", shown, why);
        return;
    }
    pin_row(ch, "layers.ratio", &ratio[0][0], RATIO_EPOCHS * RATIO_GROUPS);
    pin_row(ch, "layers.lr", lr, RATIO_EPOCHS);
    ch_say(ch, "The film shows what changed; %s says how fast. For each epoch and layer group "
               "it holds the mean over the epoch's steps of the update ratio ‖Δθ‖/‖θ‖: how far "
               "one AdamW step moved the group's weights, as a fraction of their size. Three "
               "groups, beside the learning rate of the epoch's last step (from %s), and "
               "which of the three moved most:",
           shown, log_shown);
    ch_line(ch, "    epoch  learning rate  %11s  %11s  %11s   most", RATIO_GROUP[0],
            RATIO_GROUP[1], RATIO_GROUP[2]);
    for (int e = 0; e < RATIO_EPOCHS; e++) {
        const int most = ops_index_of_max(ratio[e], RATIO_GROUPS);
        ch_line(ch, "    %5d  %13.2e  %11.2e  %11.2e  %11.2e   %s", RATIO_EPOCH[e], (double)lr[e],
                (double)ratio[e][0], (double)ratio[e][1], (double)ratio[e][2], RATIO_GROUP[most]);
    }
    ch_line(ch, "%s", "");
    ratios_say(ch, ratio, lr);
}

static void the_film(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. The film: the shipped model as it learned")) return;
    film_frames(ch, w);
    update_ratios(ch);
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "The model is trained; what did it learn? Chapter 12 opens it up: which "
               "patches [cls] attends to, layer by layer (attention rollout), and what "
               "changes when a patch of the image is changed.");
}

void chapter11_run(Chapter *ch) {
    ch_title(ch, "11", "Training a ViT");
    ch_say(ch, "Chapter 10 took one AdamW step on one image. Training is that step "
               "repeated: a shuffled batch of labelled images, forward, loss, backward, "
               "clip, AdamW at the schedule's learning rate, thousands of times, with an "
               "eye on images the model never trains on. This chapter looks at the data, "
               "trains a tiny ViT for a few seconds and watches it learn and then overfit, "
               "reads the log of the model the project trained, tests that model, asks "
               "why a ViT needs so many images, and watches that model learn through the "
               "film its training kept.");
    // One thread: the tiny runs gain nothing from two, and with one every number of
    // the runs is the same whatever the machine's core count (train.h).
    const int threads = vit_get_threads();
    vit_set_threads(1);
    Work w = {0};
    VitError err;
    // [load]
    if (dataset_fashion_mnist_load(&w.all, NULL, "train", &err) != VIT_OK ||
        dataset_fashion_mnist_load(&w.test, NULL, "test", &err) != VIT_OK ||
        dataset_split_validation(&w.train, &w.val, &w.all, FASHION_MNIST_VAL, &err) != VIT_OK) {
        ch_say(ch, "Fashion-MNIST cannot be loaded (%s). Install Debian's "
                   "dataset-fashion-mnist (scripts/deps.sh does) and run the chapter again.",
               err.msg);
        dataset_free(&w.all);
        dataset_free(&w.test);
        vit_set_threads(threads);
        return;
    }
    w.val_slice = dataset_slice(&w.val, 0, VAL_IMAGES);
    // [load]

    the_data(ch, &w);
    the_loss_falling(ch, &w);
    the_shipped_curve(ch);
    the_trained_model(ch, &w);
    data_hunger(ch, &w);
    the_film(ch, &w);
    whats_next(ch);

    dataset_free(&w.all);
    dataset_free(&w.test);
    vit_set_threads(threads);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main_knobs(argc, argv, chapter11_run,
                              "Chapter 11: Fashion-MNIST, a tiny ViT trained for a few seconds "
                              "(the loss falling, overfitting), the shipped model's training "
                              "log and experiments, its test accuracy and mistakes, and why a "
                              "ViT needs much data.",
                              knobs, KNOBS);
}
#endif
