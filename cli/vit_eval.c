/**
 * @file vit_eval.c
 * @brief `vit eval`: how good is a model on Fashion-MNIST? Accuracy, each
 *        class's, the confusion matrix and the pairs it confuses most.
 *
 * The recipe: parse the flags → vit_build() the model → load the split
 * (test: the 10,000 test images; val: the last 5,000 training images; train:
 * the first 55,000) and keep its first --limit images → check that the
 * model reads the data's images (1×28×28) and has its 10 classes → the
 * class names (the weights' "class_names", else the dataset's) and the
 * normalisation (the weights' "mean"/"std", else the fashion-mnist
 * preset's) → eval_run(), a forward pass per batch → print.
 *
 * It is PyTorch's evaluation loop:
 *
 *     model.eval()
 *     with torch.no_grad():
 *         for images, labels in loader:                  # (B, 1, 28, 28), normalised
 *             predicted = model(images).argmax(dim=1)
 *             for t, p in zip(labels, predicted): confusion[t, p] += 1
 *     accuracy = confusion.diag().sum() / confusion.sum()
 *
 * The confusion matrix says more than the accuracy: row t, column p counts
 * the images of class t the model called p, so the diagonal is what it got
 * right and each off-diagonal cell is one kind of mistake.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/dataset.h"
#include "io/image.h"
#include "io/labels.h"
#include "explain/rollout.h"
#include "train/train.h"
#include "model/vit.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *data;    // "fashion-mnist" (Debian's folder) or a folder with its files
    const char *split;   // "test", "val" or "train"
    int batch;           // images per forward pass
    int limit;           // only the first N images of the split; 0: all
    bool attention;      // also measure the attention maps (rollout.h)
    bool occlusion;      // ... and occlusion, the reference that asks the model
    int draws;           // random orders per image for each random baseline
    const char *precision; // "fp32", "bf16" or "int8": the number the Linear layers run in
    int threads;
} EvalArgs;

static const char description[] =
    "Runs the model in --weights over a split of Fashion-MNIST and prints how often\n"
    "it is right: the accuracy, each class's accuracy, the confusion matrix (row =\n"
    "the true class, column = the class the model chose, so the diagonal is what it\n"
    "got right and every other cell one kind of mistake), and the pairs of classes\n"
    "it tells apart worst (the two directions of a pair added up).\n"
    "\n"
    "The splits: test, the 10,000 test images (look at them last: a model chosen\n"
    "for its test score is no longer tested by it); val, the last 5,000 of the\n"
    "60,000 training images, held out from training; train, the first 55,000, the\n"
    "ones `vit train` learns from. --limit keeps the first N images of the split.\n"
    "\n"
    "The model must read 1×28×28 images and have 10 classes. Each image is\n"
    "normalised as (pixel/255 - mean)/std with the mean and std in the weights'\n"
    "metadata, else the fashion-mnist preset's (0.2860, 0.3530); the class names\n"
    "are the weights' own (\"class_names\"), else Fashion-MNIST's.\n"
    "\n"
    "--attention also measures four attention maps of each image (the rollout with\n"
    "heads averaged; the rollout with heads fused by max and the lowest 90%\n"
    "discarded; the last layer's [cls] attention; the gradient-weighted rollout for\n"
    "the predicted class): how much of each lies on the garment (pixels above 32 of\n"
    "255) against the garment's share of the image, which a uniform map would put\n"
    "on it; and the deletion test: the predicted class's mean probability once the\n"
    "1, 5 or 10 patches a map ranks highest are blacked out. Beside them, four\n"
    "baselines that use no model (random patches and random garment patches, each\n"
    "the mean of --draws orders per image; each patch's brightness; the garment\n"
    "mask), and each map against the strongest of them at k = 10, image by image:\n"
    "the difference and its standard error (chapter 12 explains the test).\n"
    "--occlusion adds the reference that asks the model: each patch blacked out\n"
    "alone, ranked by how far the probability fell. Per image: 1 + 3 × (6 + 2 ×\n"
    "draws) forward passes and one backward pass, and 49 more with --occlusion.\n"
    "\n"
    "--precision bf16 or int8 runs every Linear layer in that number (chapter 15):\n"
    "bf16 rounds weights and activations to bf16 and sums in float; int8 quantizes\n"
    "each weight per output channel and each token's activations on the fly, and\n"
    "sums exactly in 32-bit integers. The float model runs over the same images\n"
    "too, and the agreement says on how many of them both chose the same class.\n";

static const char examples[] =
    "  vit eval --weights data/models/vit-fashion.safetensors\n"
    "  vit eval --weights data/models/vit-fashion.safetensors --split val --limit 500\n"
    "  vit make-weights --dim 64 --depth 2 --heads 4 --img 28 --patch 4 \\\n"
    "                   --channels 1 --classes 10 --seed 1 --out random.safetensors\n"
    "  vit eval --weights random.safetensors --limit 200     # about 10%: chance\n"
    "  vit eval --weights data/models/vit-fashion.safetensors --attention --limit 1000\n"
    "  vit eval --weights data/models/vit-fashion.safetensors --precision int8\n";

/** The splits, the one table --split is checked against. */
static const char *const SPLITS[] = {"test", "val", "train"};
enum { SPLIT_COUNT = sizeof SPLITS / sizeof SPLITS[0] };

/* ------------------------------------------------------------ the data */

/** The loaded set and the view that is evaluated. */
typedef struct {
    Dataset all;  // the file's images (owned)
    Dataset used; // the split, cut to --limit: a view into all
    int split_count; // images in the whole split, before --limit
} EvalData;

// Loads the split: test from the t10k files; val and train from the training
// files, split as `vit train` splits them (dataset_split_validation()).
static VitStatus load_split(EvalData *d, const EvalArgs *a, VitError *err) {
    memset(d, 0, sizeof *d);
    const bool test = strcmp(a->split, "test") == 0;
    VitStatus s = dataset_fashion_mnist_load(&d->all, cli_data_dir(a->data), test ? "test" : "train", err);
    if (s != VIT_OK) return s;
    Dataset part = d->all;
    if (!test) {
        Dataset train, val;
        if ((s = dataset_split_validation(&train, &val, &d->all, FASHION_MNIST_VAL, err)) !=
            VIT_OK) {
            cli_name_the_folder(err, cli_data_dir(a->data));
            dataset_free(&d->all);
            return s;
        }
        part = strcmp(a->split, "val") == 0 ? val : train;
    }
    d->split_count = part.count;
    d->used = a->limit && a->limit < part.count ? dataset_slice(&part, 0, a->limit) : part;
    return VIT_OK;
}

// The model must read the data's images and name as many classes.
static VitStatus check_model(const Vit *vit, const Dataset *d, const char *weights,
                             VitError *err) {
    const VitConfig *c = &vit->config;
    char path[1024];
    vit_escape(path, sizeof path, weights);
    if (c->channels != d->channels || c->image_size != d->size)
        return vit_fail(err, VIT_ERR_INPUT, "%s: the model reads %d×%d×%d images (C×S×S); "
                        "Fashion-MNIST's are %d×%d×%d", path, c->channels, c->image_size,
                        c->image_size, d->channels, d->size, d->size);
    if (c->num_classes != d->classes)
        return vit_fail(err, VIT_ERR_INPUT, "%s: the model has %d classes; Fashion-MNIST has %d",
                        path, c->num_classes, d->classes);
    return VIT_OK;
}

/* --------------------------------------------------------------- names */

enum { ABBREV = 5 }; // characters of a class name in the matrix's column headers

/** Each class's name, escaped for the terminal, and its short form. */
typedef struct {
    int count;
    char (*name)[64];
    char (*abbrev)[ABBREV * 4 + 1]; // ABBREV characters of UTF-8
} ClassNames;

// The weights' names if they have them, else the dataset's; abbreviations
// are their first characters, or c0, c1, ... when two would look the same.
static void class_names(ClassNames *n, const Labels *labels, const Dataset *d) {
    n->count = d->classes;
    n->name = vit_calloc((size_t)n->count, sizeof *n->name);
    n->abbrev = vit_calloc((size_t)n->count, sizeof *n->abbrev);
    for (int y = 0; y < n->count; y++) {
        const char *name = labels_name(labels, y);
        if (!name && d->class_names) name = d->class_names[y];
        if (name) vit_escape(n->name[y], sizeof n->name[y], name);
        else snprintf(n->name[y], sizeof n->name[y], "class %d", y);
        // the first ABBREV characters (bytes of UTF-8 stay whole)
        const char *p = n->name[y];
        int chars = 0;
        size_t len = 0;
        while (p[len] && chars < ABBREV) {
            len++;
            while ((p[len] & 0xC0) == 0x80) len++;
            chars++;
        }
        memcpy(n->abbrev[y], p, len);
        while (len > 0 && n->abbrev[y][len - 1] == ' ') len--; // "Ankle boot" → "Ankle"
        n->abbrev[y][len] = '\0';
    }
    bool clash = false;
    for (int i = 0; i < n->count; i++)
        for (int j = i + 1; j < n->count; j++)
            clash |= strcmp(n->abbrev[i], n->abbrev[j]) == 0;
    if (clash)
        for (int y = 0; y < n->count; y++) snprintf(n->abbrev[y], sizeof n->abbrev[y], "c%d", y);
}

static void class_names_free(ClassNames *n) {
    free(n->name);
    free(n->abbrev);
    memset(n, 0, sizeof *n);
}

// Columns a string takes on the terminal: its characters (UTF-8 sequences count once).
static int columns(const char *s) {
    int n = 0;
    for (; *s; s++) n += (*s & 0xC0) != 0x80;
    return n;
}

// Prints s padded with spaces to `width` columns, on the left or the right.
static void print_padded(const char *s, int width, bool right) {
    int pad = width - columns(s);
    if (right) printf("%*s%s", pad > 0 ? pad : 0, "", s);
    else printf("%s%*s", s, pad > 0 ? pad : 0, "");
}

/* -------------------------------------------------------------- output */

static int row_total(const EvalResult *r, int t) {
    int n = 0;
    for (int p = 0; p < r->classes; p++) n += r->confusion[t * r->classes + p];
    return n;
}

// Each class: its images, how many were right, the accuracy, and the class
// its mistakes went to most often.
static void print_per_class(const EvalResult *r, const ClassNames *n) {
    const int Y = r->classes;
    int w = columns("class");
    for (int y = 0; y < Y; y++) w = columns(n->name[y]) > w ? columns(n->name[y]) : w;
    printf("\nper class:\n  ");
    print_padded("class", w, false);
    printf("  images  correct  accuracy  most often taken for\n");
    for (int t = 0; t < Y; t++) {
        const int total = row_total(r, t), right = r->confusion[t * Y + t];
        int worst = -1;
        for (int p = 0; p < Y; p++)
            if (p != t && r->confusion[t * Y + p] > 0 &&
                (worst < 0 || r->confusion[t * Y + p] > r->confusion[t * Y + worst]))
                worst = p;
        printf("  ");
        print_padded(n->name[t], w, false);
        printf("  %6d  %7d  ", total, right);
        if (total) printf("%7.2f%%", 100.0 * right / total);
        else printf("%8s", "-");
        if (worst >= 0) printf("  %s (%d)", n->name[worst], r->confusion[t * Y + worst]);
        printf("\n");
    }
}

// The Y×Y counts under abbreviated headers, then the legend of the abbreviations.
static void print_confusion(const EvalResult *r, const ClassNames *n) {
    const int Y = r->classes;
    int most = 0, label = 0;
    for (int i = 0; i < Y * Y; i++) most = r->confusion[i] > most ? r->confusion[i] : most;
    char digits[16];
    int w = snprintf(digits, sizeof digits, "%d", most);
    for (int y = 0; y < Y; y++) {
        w = columns(n->abbrev[y]) > w ? columns(n->abbrev[y]) : w;
        label = columns(n->abbrev[y]) > label ? columns(n->abbrev[y]) : label;
    }
    w += 1; // a space between columns
    printf("\nconfusion matrix (row: the true class, column: the class the model chose):\n");
    printf("  %*s ", label, "");
    for (int p = 0; p < Y; p++) print_padded(n->abbrev[p], w, true);
    printf("\n");
    for (int t = 0; t < Y; t++) {
        printf("  ");
        print_padded(n->abbrev[t], label, false);
        printf(" ");
        for (int p = 0; p < Y; p++) printf("%*d", w, r->confusion[t * Y + p]);
        printf("\n");
    }
    // the legend, wrapped at 80 columns
    int col = printf("  legend:");
    for (int y = 0; y < Y; y++) {
        char entry[160];
        snprintf(entry, sizeof entry, " %s = %s%s", n->abbrev[y], n->name[y], y + 1 < Y ? "," : "");
        if (col + columns(entry) > 80) col = printf("\n         ");
        printf("%s", entry);
        col += columns(entry);
    }
    printf("\n");
}

/** A pair of classes and the images of each taken for the other. */
typedef struct {
    int a, b;     // the classes, a < b
    int ab, ba;   // images of a called b, of b called a
} Pair;

static int by_confusion(const void *x, const void *y) {
    const Pair *p = x, *q = y;
    const int d = (q->ab + q->ba) - (p->ab + p->ba);
    if (d) return d;
    return p->a != q->a ? p->a - q->a : p->b - q->b; // ties: the order of the classes
}

enum { HARDEST = 5 }; // how many pairs to print

// The pairs with the most mistakes between them, both directions added up.
static void print_hardest_pairs(const EvalResult *r, const ClassNames *n) {
    const int Y = r->classes;
    Pair *pairs = vit_malloc(sizeof *pairs * (size_t)(Y * (Y - 1) / 2 + 1));
    int count = 0;
    for (int a = 0; a < Y; a++)
        for (int b = a + 1; b < Y; b++) {
            Pair p = {a, b, r->confusion[a * Y + b], r->confusion[b * Y + a]};
            if (p.ab + p.ba > 0) pairs[count++] = p;
        }
    qsort(pairs, (size_t)count, sizeof *pairs, by_confusion);
    printf("\nthe hardest pairs to tell apart (mistakes both ways; A → B: A taken for B):\n");
    if (count == 0) printf("  none: no image was taken for another class\n");
    for (int i = 0; i < count && i < HARDEST; i++) {
        const Pair *p = &pairs[i];
        // the more frequent mistake first
        const int x = p->ba > p->ab ? p->b : p->a, y = x == p->a ? p->b : p->a;
        const int xy = r->confusion[x * Y + y], yx = r->confusion[y * Y + x];
        printf("  %d. %5d  %s → %s %d, %s → %s %d\n", i + 1, p->ab + p->ba, n->name[x],
               n->name[y], xy, n->name[y], n->name[x], yx);
    }
    free(pairs);
}

/* ------------------------------------------------------------- attention */

enum { GARMENT_THRESHOLD = 32, MEASURE_SEED = 12 }; // chapter 12's

// Each map against the strongest baseline at the largest k, paired image by
// image, and the verdict: a map beats it only by more than 2 standard errors.
static void print_against_baseline(const AttentionMeasures *m) {
    const int k = MEASURE_KS - 1;
    const MapMethod strongest = attention_measure_strongest_baseline(m, k);
    char images[VIT_NUM_BUF];
    printf("\n  against the strongest baseline at k = %d, the %s, %.3f:\n"
           "  the difference of the means (below 0: a lower probability, the better ranking)\n"
           "  and its standard error, paired over the %s images\n\n", rollout_measure_ks[k],
           rollout_map_method_name(strongest), m->prob_top[strongest][k],
           vit_thousands(images, m->images));
    printf("  %-28s %11s %7s  %s\n", "map", "difference", "SE", "verdict");
    for (int i = 0; i < m->maps; i++) {
        if (i == (int)strongest) continue;
        const double d = m->prob_top[i][k] - m->prob_top[strongest][k];
        const double se = attention_measure_paired_se(m, (MapMethod)i, strongest, k);
        printf("  %-28s %+11.3f %7.3f  %s\n", rollout_map_method_name((MapMethod)i), d, se,
               d < -2 * se ? "beats it" : d > 2 * se ? "worse than it" : "within 2 SE: does not beat it");
    }
}

// The table of attention_measure()'s figures.
static void print_attention(const AttentionMeasures *m, double seconds) {
    printf("\nattention maps on these %d images (%.1f s):\n", m->images, seconds);
    printf("  on the garment (pixels above %d): the share of each map's mass, against the %.3f\n"
           "  of the patches' area the garment covers, which a uniform map would give it\n",
           m->threshold, m->uniform_mass);
    printf("  deletion: the predicted class's mean probability, %.3f with nothing masked, once\n"
           "  the k patches a map ranks highest are black\n\n", m->prob_full);
    printf("  %-28s %8s %9s", "map", "garment", "× uniform");
    for (int k = 0; k < MEASURE_KS; k++) printf("   k = %-2d", rollout_measure_ks[k]);
    printf("\n");
    for (int i = 0; i < m->maps; i++) {
        if (i == MAP_RANDOM || i == MAP_RANDOM_GARMENT) // an order, not values: no share
            printf("  %-28s %8s %9s", rollout_map_method_name((MapMethod)i), "", "");
        else
            printf("  %-28s %8.3f %8.2f×", rollout_map_method_name((MapMethod)i), m->mass[i],
                   m->mass[i] / m->uniform_mass);
        for (int k = 0; k < MEASURE_KS; k++) printf(" %8.3f", m->prob_top[i][k]);
        printf("\n");
    }
    print_against_baseline(m);
}

/* ------------------------------------------------------------- command */

// Not fp32: the same model back in float over the same images, and how often the
// two agree (vit is left in fp32).
static VitStatus print_agreement(Vit *vit, bool int8_file, const EvalData *d,
                                 const EvalResult *r, float mean, float std, int B, VitError *err) {
    const char *precision = lowp_precision_name(vit->precision);
    VitStatus s = vit_set_precision(vit, LOWP_FP32, err);
    EvalResult f = {0};
    if (s == VIT_OK && (s = eval_run(vit, &d->used, mean, std, B, &f, err)) == VIT_OK) {
        const int same = eval_agreement(r, &f);
        char n1[VIT_NUM_BUF], n2[VIT_NUM_BUF];
        printf("\nagainst the same model in fp32 on the same images%s:\n",
               int8_file ? " (the file holds int8 weights only: fp32 here is q x scale, not "
                           "the weights they were made from)" : "");
        printf("  fp32 accuracy: %.2f%%; %s: %.2f%%, a difference of %+.2f points\n",
               100.0 * eval_accuracy(&f), precision, 100.0 * eval_accuracy(r),
               100.0 * (eval_accuracy(r) - eval_accuracy(&f)));
        printf("  top-1 agreement: %.2f%% (the same class for %s of %s images)\n",
               r->count ? 100.0 * same / r->count : 0.0, vit_thousands(n1, same),
               vit_thousands(n2, r->count));
    }
    eval_free(&f);
    return s;
}

static VitStatus eval(const EvalArgs *a, VitError *err) {
    // 1. the model, in the number asked for, and the images of the split it is to be judged on
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    const bool int8_file = vit.int8_only; // a file `vit quantize` wrote: no float weights in it
    s = cli_set_precision(&vit, a->precision, err);
    if (s == VIT_OK && a->attention && vit.precision != LOWP_FP32)
        s = vit_fail(err, VIT_ERR_USAGE, "--attention takes a backward pass, which needs fp32: "
                     "the Linear layers of %s are in %s; add --precision fp32", a->weights,
                     lowp_precision_name(vit.precision));
    if (s != VIT_OK) {
        vit_free(&vit);
        return s;
    }
    const LowpPrecision precision = vit.precision;
    EvalData d;
    if ((s = load_split(&d, a, err)) != VIT_OK) {
        vit_free(&vit);
        return s;
    }
    // 2. it must fit them; its own class names and normalisation
    Labels labels = {0};
    Preprocess pre;
    const int B = a->batch < d.used.count ? a->batch : d.used.count;
    if ((s = check_model(&vit, &d.used, a->weights, err)) == VIT_OK &&
        (s = labels_for_weights(&labels, NULL, vit.config_json, &vit.file,
                                vit.config.num_classes, err)) == VIT_OK &&
        (s = image_preprocess_for_model(&pre, NULL, "fashion-mnist", &vit.file, vit.config.image_size,
                                  vit.config.channels, err)) == VIT_OK &&
        d.used.count > 0)
        s = vit_check_batch(&vit.config, B, 0, "", err);
    // 3. a forward pass per batch, each image's largest logit counted
    EvalResult r = {0};
    const double t0 = vit_now();
    if (s == VIT_OK && d.used.count == 0)
        s = vit_fail(err, VIT_ERR_INPUT, "the %s split holds no images", a->split);
    if (s == VIT_OK) s = eval_run(&vit, &d.used, pre.mean[0], pre.std[0], B, &r, err);
    const double seconds = vit_now() - t0;
    // 4. what it got right, class by class, and what it confused
    if (s == VIT_OK) {
        ClassNames names;
        class_names(&names, &labels, &d.used);
        char path[1024], n1[VIT_NUM_BUF], n2[VIT_NUM_BUF], n3[VIT_NUM_BUF];
        const bool own = st_meta(&vit.file, "mean") || st_meta(&vit.file, "std");
        printf("%s on Fashion-MNIST %s: ", vit_escape(path, sizeof path, a->weights), a->split);
        if (d.used.count == d.split_count) printf("all %s images\n", vit_thousands(n1, d.used.count));
        else printf("the first %s of its %s images\n", vit_thousands(n1, d.used.count),
                    vit_thousands(n2, d.split_count));
        printf("  normalised with mean %.4f, std %.4f (%s)\n", (double)pre.mean[0],
               (double)pre.std[0], own ? "the weights' metadata" : "the fashion-mnist preset");
        printf("  batches of %d: %.1f s, %.0f images/s; Linear layers in %s\n", B, seconds,
               seconds > 0 ? r.count / seconds : 0.0, lowp_precision_name(precision));
        printf("accuracy: %.2f%% (%s of %s), mean cross-entropy %.4f\n", 100.0 * eval_accuracy(&r),
               vit_thousands(n2, r.correct), vit_thousands(n3, r.count), r.loss);
        print_per_class(&r, &names);
        print_confusion(&r, &names);
        print_hardest_pairs(&r, &names);
        class_names_free(&names);
        if (precision != LOWP_FP32)
            s = print_agreement(&vit, int8_file, &d, &r, pre.mean[0], pre.std[0], B, err);
    }
    // 5. --attention: the maps measured on the same images
    if (s == VIT_OK && a->attention) {
        AttentionMeasures m;
        const double t1 = vit_now();
        const MeasureOptions opt = {.draws = a->draws, .baselines = true, .occlusion = a->occlusion};
        s = attention_measure(&vit, &d.used, d.used.count, pre.mean[0], pre.std[0], B,
                              GARMENT_THRESHOLD, MEASURE_SEED, &opt, &m, err);
        if (s == VIT_OK) print_attention(&m, vit_now() - t1);
    }
    eval_free(&r);
    labels_free(&labels);
    dataset_free(&d.all);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit eval`: parse → build → load the split → evaluate → print.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "eval"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_eval(const VitCommand *self, int argc, char **argv, VitError *err) {
    EvalArgs a = {.data = "fashion-mnist", .split = "test", .batch = 256, .draws = 10};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors of a ViT reading 1×28×28 images into 10 classes",
         .required = true},
        {"--data", CLI_STRING, &a.data, "DIR",
         "fashion-mnist (the default: Debian's files, in " FASHION_MNIST_DIR ") or a folder "
         "holding the same IDX files", .required = false},
        {"--split", CLI_STRING, &a.split, "SPLIT",
         "test (10,000 images, the default), val (the last 5,000 training images) or train "
         "(the first 55,000)", .required = false},
        {"--batch", CLI_INT, &a.batch, "N", "images per forward pass", .show_default = true,
         .lo = 1, .hi = 65536},
        {"--limit", CLI_INT, &a.limit, "N", "only the first N images of the split (default: all)",
         .lo = 0, .hi = 1 << 30},
        {"--attention", CLI_FLAG, &a.attention, "",
         "also measure the attention maps: their mass on the garment, the deletion test "
         "against baselines that use no model", .required = false},
        {"--occlusion", CLI_FLAG, &a.occlusion, "",
         "with --attention: also occlusion, the reference (49 forward passes more per image)",
         .required = false},
        {"--draws", CLI_INT, &a.draws, "N",
         "with --attention: random orders per image for each random baseline",
         .show_default = true, .lo = 1, .hi = 1000},
        CLI_OPTION_PRECISION(&a.precision),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    bool known = false;
    char names[64] = "";
    for (int i = 0; i < SPLIT_COUNT; i++) {
        known |= strcmp(a.split, SPLITS[i]) == 0;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 i == 0 ? "" : i + 1 < SPLIT_COUNT ? ", " : " or ", SPLITS[i]);
    }
    if (!known) {
        char shown[64];
        return vit_fail(err, VIT_ERR_USAGE, "--split: '%s' is not a split (%s)",
                        vit_escape(shown, sizeof shown, a.split), names);
    }
    if (!*a.data) return vit_fail(err, VIT_ERR_USAGE, "--data: give fashion-mnist or a folder");
    LowpPrecision precision; // a name that is none of the three: refused before any file
    if ((s = cli_precision(&precision, a.precision, err)) != VIT_OK) return s;
    cli_apply_threads(&spec, a.threads);
    return eval(&a, err);
}
