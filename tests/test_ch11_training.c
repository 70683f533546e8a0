/**
 * @file test_ch11_training.c
 * @brief Chapter 11 against PyTorch, the claims it makes about training, and
 *        the probes of exercise 11's trainer_step().
 *
 * `build/tests/run ch11_training` grades a student's own trainer_step() too
 * (exercise 11): the chapter's runs call lib's version, or whatever replaced
 * lib/train/train_step.c at link time.
 *
 * The golden is two files. ch11_training.safetensors holds every number of
 * the data and of the chapter's runs, each run repeated in PyTorch by
 * tools/gen_golden_ch11.py. ch11_shipped.safetensors holds the numbers of
 * data/models (the shipped model's training log, the experiments' logs, the
 * model on the test images, four frames of its film and its layer log) as
 * they were when it was made; it is checked when
 * data/models still holds the same files, and otherwise the test says that
 * it must be made again, and checks the rest.
 *
 * The probes at the end are exercise 11's diagnosis. They run the student's
 * trainer_step() for a few steps of a tiny model on 64 images (clipping
 * always active, a warm-up, label smoothing, crop and flip), beside PyTorch's
 * loop body written here with lib's pieces. When the weights, the gradients
 * or AdamW's moments differ, each likely mistake (the gradients not zeroed,
 * adamw_step() before the backward, no clipping or clipping after the step,
 * the learning rate of step 0 or the peak or one step ahead, no label
 * smoothing, the step counted twice or not at all, adamw_step() run twice) is
 * run from the same start, and the one that lands where the student's did is
 * named with check_hint().
 * Three more probes: what a step reports, the step count, and a loss that is
 * not finite.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "io/labels.h"
#include "ops/ops.h"
#include "train/train.h"

/* ------------------------------------------------- the chapter's values */

/** One value the chapter pinned, kept for the claims. */
typedef struct {
    char name[96];
    float *v;
    int n;
} Kept;

static Kept *kept;
static int kept_count;

static void keep_value(const char *name, const Tensor *t) {
    kept = realloc(kept, sizeof *kept * (size_t)(kept_count + 1));
    Kept *k = &kept[kept_count++];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->n = (int)t->numel;
    k->v = malloc(sizeof(float) * (t->numel ? t->numel : 1));
    memcpy(k->v, t->data, sizeof(float) * t->numel);
}

static void keep_only(void *user, const char *name, const Tensor *t) {
    (void)user;
    keep_value(name, t);
}

static void free_kept(void) {
    for (int i = 0; i < kept_count; i++) free(kept[i].v);
    free(kept), kept = NULL, kept_count = 0;
}

static bool chapter_ran; // kept holds the numbers the chapter pinned in this process

// The value NAME kept last (a chapter run after the goldens were read wins).
static const Kept *kept_find(const char *name) {
    for (int i = kept_count - 1; i >= 0; i--)
        if (strcmp(kept[i].name, name) == 0) return &kept[i];
    return NULL;
}

static bool shipped_golden_current(const GoldenCheck *shipped);
static void keep_golden(const char *file);

// The chapter's value NAME (n floats), for the claims below, which hold the
// book's sentences against the chapter's numbers. In a process that ran the
// chapter's test they are the numbers it pinned. Otherwise they are PyTorch's,
// from the golden that test holds the chapter's to: make test runs the claims
// without that test (the exercise checks replay the chapter against its
// golden), and replaying the chapter for the claims alone would cost it 14 s
// more. The numbers of data/models come from ch11_shipped.safetensors only
// while it speaks for data/models (as the chapter's test decides); otherwise,
// and for a value no golden holds, the chapter is run.
static const float *chapter_value(const char *name, int *n) {
    if (!kept) {
        GoldenCheck shipped = {0};
        const bool current = golden_open(&shipped, "ch11_shipped.safetensors") &&
                             shipped_golden_current(&shipped);
        golden_close(&shipped);
        keep_golden("ch11_training.safetensors");
        if (current) keep_golden("ch11_shipped.safetensors");
    }
    const Kept *k = kept_find(name);
    if (!k && !chapter_ran) { // (added to what is kept: values handed out stay valid)
        Chapter ch = {.out = NULL, .pin = keep_only, .pin_user = NULL};
        chapter11_run(&ch);
        chapter_ran = true;
        k = kept_find(name);
    }
    if (k) {
        if (n) *n = k->n;
        return k->v;
    }
    fprintf(stderr, "\n    the chapter pinned no value '%s'\n", name);
    return NULL;
}

/* ------------------------------------------------------------ the goldens */

// The values that come from data/models, checked against ch11_shipped.safetensors.
static bool shipped_name(const char *name) {
    static const char *const prefixes[] = {"log.",  "experiment", "model.", "test.",
                                            "mistakes.", "film.", "layers.", "frontier."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

typedef struct {
    GoldenCheck runs, shipped;
    bool check_shipped;
} Route;

static void route(void *user, const char *name, const Tensor *t) {
    Route *r = user;
    keep_value(name, t);
    if (!shipped_name(name)) golden_check(&r->runs, name, t);
    else if (r->check_shipped) golden_check(&r->shipped, name, t);
}

// The scalar NAME of a golden, or -1 when it has none.
static float golden_scalar(const GoldenCheck *g, const char *name) {
    Tensor t;
    VitError err;
    if (!st_find(&g->golden, name) || st_read_tensor(&g->golden, name, &t, &err) != VIT_OK)
        return -1.0f;
    const float v = t.numel ? t.data[0] : -1.0f;
    tensor_free(&t);
    return v;
}

// How many data/models/experiments/NAME.csv the chapter lists (plain NAMEs, at most 16).
static int experiment_files(void) {
    char dir[1024];
    DIR *d = opendir(vit_data_path(dir, sizeof dir, "models/experiments"));
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        bool plain = len > 4 && len - 4 < 64 && strcmp(e->d_name + len - 4, ".csv") == 0;
        for (size_t i = 0; plain && i < len - 4; i++) {
            const char c = e->d_name[i];
            plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
        }
        n += plain;
    }
    closedir(d);
    return n < 16 ? n : 16;
}

static bool data_file(const char *relative) {
    char path[1024];
    return access(vit_data_path(path, sizeof path, relative), F_OK) == 0;
}

// Whether the shipped golden speaks for data/models: it does only for the files
// that were there when it was made.
static bool shipped_golden_current(const GoldenCheck *shipped) {
    const float log = golden_scalar(shipped, "log.present");
    const float model = golden_scalar(shipped, "model.present");
    const float experiments = golden_scalar(shipped, "experiments.count");
    const float film = golden_scalar(shipped, "film.present");
    const bool frames = data_file("models/vit-fashion.film/epoch-000.safetensors") &&
                        data_file("models/vit-fashion.film/epoch-001.safetensors") &&
                        data_file("models/vit-fashion.film/epoch-004.safetensors") &&
                        data_file("models/vit-fashion.film/epoch-036.safetensors");
    return log == (data_file("models/vit-fashion.csv") ? 1.0f : 0.0f) &&
           model == (data_file("models/vit-fashion.safetensors") ? 1.0f : 0.0f) &&
           experiments == (float)experiment_files() && film == (frames ? 1.0f : 0.0f);
}

// Every value of tests/golden/FILE, kept as the chapter's (chapter_value()).
static void keep_golden(const char *file) {
    SafeTensors st;
    VitError err;
    if (st_open(&st, golden_path(file), &err) != VIT_OK) return; // the chapter is run instead
    for (int i = 0; i < st.count; i++) {
        Tensor t;
        if (st_read_tensor(&st, st.tensors[i].name, &t, &err) != VIT_OK) continue;
        keep_value(st.tensors[i].name, &t);
        tensor_free(&t);
    }
    st_close(&st);
}

static void test_chapter_matches_pytorch(void) {
    Route r = {0};
    if (!golden_open(&r.runs, "ch11_training.safetensors")) return;
    if (!golden_open(&r.shipped, "ch11_shipped.safetensors")) {
        golden_finish(&r.runs);
        return;
    }
    r.check_shipped = shipped_golden_current(&r.shipped);
    if (!r.check_shipped)
        printf("\n      note: data/models is not what tests/golden/ch11_shipped.safetensors "
               "was made from (a log, the model or an experiment came or went): its numbers "
               "are not checked; make the golden again with tools/gen_golden_ch11.py "
               "ch11_shipped ");
    free_kept();
    chapter_ran = true;
    Chapter ch = {.out = NULL, .pin = route, .pin_user = &r};
    r.runs.stop = r.shipped.stop = &ch.stop; // the first wrong value stops the chapter
    chapter11_run(&ch);
    golden_finish(&r.runs);
    if (r.check_shipped)
        golden_finish(&r.shipped);
    else
        golden_close(&r.shipped);
}

/* ------------------------------------------------------------- the claims */

static void test_the_data(void) {
    // 60,000 and 10,000 images, 6,000 and 1,000 of each class; the published μ and σ
    Dataset train, test;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load(&train, NULL, "train", &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load(&test, NULL, "test", &err), VIT_OK);
    CU_ASSERT_EQUAL(train.count, 60000);
    CU_ASSERT_EQUAL(test.count, 10000);
    int per_train[10] = {0}, per_test[10] = {0};
    for (int i = 0; i < train.count; i++) per_train[train.labels[i]]++;
    for (int i = 0; i < test.count; i++) per_test[test.labels[i]]++;
    for (int y = 0; y < 10; y++) {
        CU_ASSERT_EQUAL(per_train[y], 6000);
        CU_ASSERT_EQUAL(per_test[y], 1000);
    }
    double mean, std;
    dataset_stats(&train, &mean, &std);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.2860, 5e-5);
    CU_ASSERT_DOUBLE_EQUAL(std, 0.3530, 5e-5);
    dataset_free(&train);
    dataset_free(&test);
}

static void test_the_loss_falls(void) {
    // the short run: from about ln 10 to far below it, epoch after epoch; well above guessing
    int n = 0;
    const float *first = chapter_value("run2048.first_loss", NULL);
    const float *val = chapter_value("run2048.val_loss", &n);
    const float *train = chapter_value("run2048.train_loss", NULL);
    const float *acc = chapter_value("run2048.val_acc", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    CU_ASSERT_PTR_NOT_NULL_FATAL(val);
    CU_ASSERT_FATAL(n == 3 && train && acc);
    CU_ASSERT(fabs(first[0] - log(10.0)) < 0.1);
    for (int i = 1; i < n; i++) {
        CU_ASSERT(val[i] < val[i - 1]);
        CU_ASSERT(train[i] < train[i - 1]);
    }
    CU_ASSERT(val[n - 1] < 0.6 * log(10.0));
    CU_ASSERT(acc[n - 1] > 0.5);
}

static void test_overfitting_is_visible(void) {
    // 128 images, 48 times each: nearly all of them right, far fewer new ones
    int n = 0;
    const float *fit = chapter_value("run128.fit_acc", NULL);
    const float *val = chapter_value("run128.val_acc", &n);
    CU_ASSERT_FATAL(fit && val && n > 0);
    CU_ASSERT(fit[0] > 0.95);
    CU_ASSERT(fit[0] - val[n - 1] > 0.3);
}

static void test_the_gap_shrinks_with_data(void) {
    // Section 5: the gap between own and new images shrinks from 128 to 6,144 images,
    // and crop and flip shrink it on 512
    static const char *const runs[5] = {"run128", "run512", "run2048", "run6144",
                                        "run512_augmented"};
    float gap[5];
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.gap", runs[i]);
        const float *g = chapter_value(name, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        gap[i] = g[0];
    }
    CU_ASSERT(gap[0] > 20);         // 128 images
    CU_ASSERT(gap[1] < gap[0]);     // 512
    CU_ASSERT(gap[3] < gap[1]);     // 6,144
    CU_ASSERT(fabsf(gap[3]) < 2);   // each image seen once: own images are new ones
    CU_ASSERT(gap[4] < gap[1]);     // 512 with crop and flip
}

// The shipped model's accuracy on the chapter's slice (the first 1,000 test
// images) must not fall below this.
// Measured when it was committed: 92.1% (921 of 1,000); the floor leaves a few
// images for another machine's rounding.
#define SHIPPED_FLOOR 0.915

static void test_the_shipped_model(void) {
    char path[1024];
    vit_data_path(path, sizeof path, "models/vit-fashion.safetensors");
    if (access(path, F_OK) != 0) {
        printf("\n      note: data/models/vit-fashion.safetensors is not there: nothing to check ");
        return;
    }
    Vit vit;
    Dataset test;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, path, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load_first(&test, NULL, "test", 1000, &err), VIT_OK);
    const Dataset slice = test; // the chapter's slice: the first 1,000, all that was read
    const char *m = st_meta(&vit.file, "mean"), *s = st_meta(&vit.file, "std");
    const float mean = m ? strtof(m, NULL) : 0.2860f, std = s ? strtof(s, NULL) : 0.3530f;
    EvalResult r;
    CU_ASSERT_EQUAL_FATAL(eval_run(&vit, &slice, mean, std, 50, &r, &err), VIT_OK);
    printf("\n      the shipped model: %.1f%% of the first 1,000 test images ",
           100 * eval_accuracy(&r));
    CU_ASSERT(eval_accuracy(&r) >= SHIPPED_FLOOR);
    eval_free(&r);
    dataset_free(&test);
    vit_free(&vit);
}

// Section 6's claims about the film and the layer log, held against the numbers
// the chapter pinned (which the golden checks against PyTorch).
static void test_the_film(void) {
    const float *present = chapter_value("film.present", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(present);
    if (present[0] != 1.0f) {
        printf("\n      note: data/models/vit-fashion.film is not there: nothing to check ");
        return;
    }
    int n = 0;
    const float *bits = chapter_value("film.bits", &n), *acc = chapter_value("film.accuracy", NULL);
    const float *chosen = chapter_value("film.chosen", NULL);
    CU_ASSERT_FATAL(bits && acc && chosen && n == 4);
    CU_ASSERT(bits[0] > log2(49.0) - 0.05);  // epoch 0: [cls] reads the patches alike
    CU_ASSERT(bits[n - 1] < bits[0] - 0.5);  // the trained model's map is focused
    CU_ASSERT(acc[0] < 0.2);                 // the initial weights guess
    for (int k = 1; k < n; k++) CU_ASSERT(acc[k] > acc[k - 1]);
    CU_ASSERT(acc[n - 1] >= SHIPPED_FLOOR);  // the last frame is the shipped model
    CU_ASSERT(chosen[n - 1] == 9.0f);        // and names test image 0, an ankle boot
    // the update ratio follows the learning rate: the middle block's ratio ÷ rate
    // within a factor of 4 while the rate spans a factor of 100 and more
    int m = 0;
    const float *ratio = chapter_value("layers.ratio", &m), *lr = chapter_value("layers.lr", NULL);
    CU_ASSERT_FATAL(ratio && lr && m == 6 * 3);
    float lo = INFINITY, hi = 0, lr_lo = INFINITY, lr_hi = 0;
    for (int e = 0; e < 6; e++) {
        const float q = ratio[e * 3 + 1] / lr[e];
        lo = fminf(lo, q), hi = fmaxf(hi, q), lr_lo = fminf(lr_lo, lr[e]), lr_hi = fmaxf(lr_hi, lr[e]);
    }
    CU_ASSERT(lr_hi > 100 * lr_lo);
    CU_ASSERT(hi < 4 * lo);
}

/* -------------------------------------------------------------- the probes */

// A model and a run small enough for a dozen replays in a blink, with every part
// of a step visible: a warm-up (step 0's learning rate is 0), clipping that
// always bites, weight decay large enough to show, label smoothing, crop and flip.
static const VitConfig PROBE_MODEL = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 16,
                                      .depth = 1, .heads = 2, .mlp_dim = 32, .num_classes = 10,
                                      .ln_eps = 1e-6f};
enum { PROBE_IMAGES = 64, PROBE_STEPS = 6 };

// The probes' clip: 0.25, which always bites; 0 for the probe of "no clipping".
static float probe_clip = 0.25f;

static TrainConfig probe_config(void) {
    TrainConfig c = train_defaults();
    c.epochs = 2, c.batch = 16, c.lr = 1e-2, c.warmup_epochs = 1, c.weight_decay = 0.5;
    c.clip = probe_clip, c.seed = 3;
    c.augment = (Augment){.pad = 0, .flip = true}; // mirrored, not cropped; smoothing 0.1
    return c;
}

// The first PROBE_IMAGES training images, read alone: a grader runs every test in
// a process of its own, and decompressing all 60,000 for 64 would cost each one
// a quarter of a second.
static const Dataset *probe_data(void) {
    static Dataset few;
    static bool loaded;
    if (!loaded) {
        VitError err;
        if (dataset_fashion_mnist_load_first(&few, NULL, "train", PROBE_IMAGES, &err) != VIT_OK) {
            fprintf(stderr, "\n    %s\n", err.msg);
            return NULL;
        }
        loaded = true;
    }
    return &few;
}

/* The step as train.h says, written here with lib's pieces, or with one likely mistake. */
typedef enum {
    RIGHT,
    NO_ZERO,      // the gradients never zeroed: each step adds to the last
    STEP_FIRST,   // zero, adamw_step(), then forward + backward, clip
    STEP_LATE,    // adamw_step() on the last step's gradient, then zero, forward + backward
    NO_CLIP,      // the gradient never clipped
    CLIP_AFTER,   // adamw_step() on the gradient as it is, clipped afterwards
    LR_STEP0,     // lr_at(schedule, 0) at every step
    LR_PEAK,      // config.lr at every step
    LR_AHEAD,     // lr_at(schedule, step + 1)
    NO_SMOOTHING, // the cross-entropy without label smoothing
    COUNT_TWICE,  // step += 2
    COUNT_NONE,   // step not counted
    ADAMW_TWICE,  // adamw_step() called a second time after the first
    MISTAKES,
    LOSS_AFTER = MISTAKES, // right, but reporting the loss of a forward after the update
    CLIP_ZERO,             // optim_clip_grad_norm() called with a clip of 0 too
} Mistake;

static const char *const HINT[MISTAKES] = {
    NULL,
    "the gradients were not zeroed before the backward: vit_backward() ADDS to them, so "
    "without vit_grads_zero() each step's gradient is every step's so far (opt.zero_grad())",
    "adamw_step() ran before the backward: the update must use this batch's gradient, so "
    "forward + backward and clipping come first, then adamw_step()",
    "adamw_step() ran before the backward: the update must use this batch's gradient, so "
    "forward + backward and clipping come first, then adamw_step()",
    "the gradient was not clipped: optim_clip_grad_norm(t->opt.params, t->opt.count, "
    "t->config.clip) scales it to length clip before the update (0 means no clipping)",
    "the gradient was clipped after adamw_step(): the update used the gradient unclipped; "
    "clip first, then adamw_step()",
    "the learning rate is always lr_at(schedule, 0), which the warm-up makes 0: use "
    "lr_at(&t->schedule, t->step), this step's",
    "the learning rate is the peak, config.lr, at every step: take it from the schedule, "
    "lr_at(&t->schedule, t->step), warm-up and cosine",
    "the learning rate is one step ahead: lr_at(&t->schedule, t->step) before the step is "
    "counted; step 0 has the first learning rate",
    "label smoothing is missing: pass t->config.smoothing to vit_shards_forward_backward(), as "
    "F.cross_entropy(..., label_smoothing=eps)",
    "the step was counted twice: t->step grows by exactly 1 per step (and adamw_step() counts "
    "its own)",
    "the step was not counted: t->step++ at the end, or the next step takes the same batch "
    "and the same learning rate",
    "adamw_step() ran twice in each step: one call per step (opt.step()); a second one moves "
    "the weights again with the same gradient and counts an extra AdamW step",
};

// trainer_step()'s recipe from its pieces, to name which step a wrong trainer_step() took
// independent: out of order; the pieces are each held to PyTorch by their own suites
static VitStatus reference_step(Trainer *t, TrainStep *out, VitError *err, Mistake m) {
    const TrainConfig *c = &t->config;
    const VitConfig *mc = &t->vit.config;
    if (t->step >= trainer_total_steps(t))
        return vit_fail(err, VIT_ERR_INPUT, "the run is over");
    trainer_next_batch(t);
    const int shape[4] = {c->batch, mc->channels, mc->image_size, mc->image_size};
    const Tensor images = tensor_view_shape(t->images, 4, shape);
    const int s = (int)t->step;
    const double lr = m == LR_STEP0 ? lr_at(&t->schedule, 0)
                      : m == LR_PEAK ? c->lr
                      : m == LR_AHEAD ? lr_at(&t->schedule, s + 1)
                                      : lr_at(&t->schedule, s);
    if (m == STEP_LATE) adamw_step(&t->opt, lr);
    if (m != NO_ZERO) vit_grads_zero(&t->grads);
    if (m == STEP_FIRST) adamw_step(&t->opt, lr);
    float loss;
    VitStatus st = vit_shards_forward_backward(t->shards, &t->grads, &images, t->labels,
                                               m == NO_SMOOTHING ? 0.0f : c->smoothing, &loss, err);
    if (st != VIT_OK) return st;
    const bool clip = (c->clip > 0 || m == CLIP_ZERO) && m != NO_CLIP && m != CLIP_AFTER;
    const double norm = clip ? optim_clip_grad_norm(t->opt.params, t->opt.count, c->clip)
                             : optim_grad_norm(t->opt.params, t->opt.count);
    if (!isfinite(loss) || !isfinite(norm)) return vit_fail(err, VIT_ERR_INPUT, "not finite");
    if (m != STEP_FIRST && m != STEP_LATE) adamw_step(&t->opt, lr);
    if (m == ADAMW_TWICE) adamw_step(&t->opt, lr);
    if (m == CLIP_AFTER) optim_clip_grad_norm(t->opt.params, t->opt.count, c->clip);
    const Tensor logits = vit_logits(&t->vit);
    *out = (TrainStep){.loss = loss, .grad_norm = norm, .lr = lr,
                       .correct = eval_logits_correct(logits.data, t->labels, c->batch, mc->num_classes)};
    if (m == LOSS_AFTER && vit_forward(&t->vit, &images, NULL, NULL, err) == VIT_OK)
        out->loss = loss_cross_entropy(NULL, vit_logits(&t->vit).data, t->labels, c->batch,
                                  mc->num_classes, c->smoothing);
    t->step += m == COUNT_TWICE ? 2 : m == COUNT_NONE ? 0 : 1;
    return VIT_OK;
}

/** Where a run stands after some steps: everything a step changes. */
typedef struct {
    float *theta, *grad, *m, *v; // every parameter, its gradient and AdamW's moments, flat
    size_t n;
    int64_t step, adam_step;
    int steps;                   // steps that returned VIT_OK
    TrainStep out[PROBE_STEPS];  // what each reported
    VitStatus status;            // of the last step tried
    char error[256];             // its message, when it failed
} Snapshot;

static void snapshot_take(Snapshot *s, const Trainer *t) {
    size_t n = 0;
    for (int i = 0; i < t->opt.count; i++) n += t->opt.params[i].numel;
    if (!s->theta) {
        s->theta = malloc(sizeof(float) * n), s->grad = malloc(sizeof(float) * n);
        s->m = malloc(sizeof(float) * n), s->v = malloc(sizeof(float) * n);
    }
    s->n = 0;
    for (int i = 0; i < t->opt.count; i++) {
        const OptimParam *p = &t->opt.params[i];
        memcpy(s->theta + s->n, p->data, sizeof(float) * p->numel);
        memcpy(s->grad + s->n, p->grad, sizeof(float) * p->numel);
        memcpy(s->m + s->n, t->opt.moments[i].m, sizeof(float) * p->numel);
        memcpy(s->v + s->n, t->opt.moments[i].v, sizeof(float) * p->numel);
        s->n += p->numel;
    }
    s->step = t->step, s->adam_step = t->opt.step;
}

static void snapshot_free(Snapshot *s) {
    free(s->theta), free(s->grad), free(s->m), free(s->v);
    memset(s, 0, sizeof *s);
}

// A fresh run of the probe's settings, `steps` steps by the student's trainer_step()
// (mistake < 0) or by reference_step() with one mistake; false when it cannot start.
static bool probe_run(Snapshot *s, int steps, int mistake) {
    memset(s, 0, sizeof *s);
    const Dataset *d = probe_data();
    if (!d) return false;
    const TrainConfig c = probe_config();
    Trainer t;
    VitError err;
    if (trainer_init(&t, &PROBE_MODEL, &c, d, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        return false;
    }
    s->status = VIT_OK;
    for (int k = 0; k < steps && s->status == VIT_OK; k++) {
        s->status = mistake < 0 ? trainer_step(&t, &s->out[k], &err)
                                : reference_step(&t, &s->out[k], &err, (Mistake)mistake);
        if (s->status == VIT_OK) s->steps++;
        else snprintf(s->error, sizeof s->error, "%.*s", (int)sizeof s->error - 1, err.msg);
    }
    snapshot_take(s, &t);
    trainer_free(&t);
    return true;
}

// How near a result must be to another to be called the same: float32 arithmetic
// in another order, far below what any mistake changes after a few steps.
#define SAME_ATOL 1e-6f
#define SAME_RTOL 1e-4f

static bool same_floats(const float *a, const float *b, size_t n) {
    Tensor x = tensor_view((float *)a, 1, (int)n), y = tensor_view((float *)b, 1, (int)n);
    return tensor_near(&x, &y, SAME_ATOL, SAME_RTOL);
}

// The same weights, gradients, moments and step count.
static bool same_state(const Snapshot *a, const Snapshot *b) {
    return a->n == b->n && a->step == b->step && same_floats(a->theta, b->theta, a->n) &&
           same_floats(a->grad, b->grad, a->n) && same_floats(a->m, b->m, a->n) &&
           same_floats(a->v, b->v, a->n);
}

static bool same_value(double a, double b) {
    return fabs(a - b) <= SAME_ATOL + SAME_RTOL * fabs(b);
}

// Hints for a step that failed: the placeholder, the forward that kept nothing.
static void diagnose_error(const char *msg, int step) {
    if (strstr(msg, "not written yet"))
        check_hint("trainer_step() returned the skeleton's error (\"%s\"): is the exercise's "
                   "TODO still there?", msg);
    else if (strstr(msg, "kept its activations"))
        check_hint("the forward kept nothing for the backward: trainer_init() prepared the "
                   "model for training (or its shards' replicas, when the batch is split); use "
                   "vit_shards_forward_backward(t->shards, …), which runs forward and backward "
                   "on them as they are, never an inference forward (VIT_KEEP_NONE)");
    else
        check_hint("step %d failed where PyTorch's loop body does not: \"%s\"", step, msg);
}

static void test_probe_trainer_step(void) {
    Snapshot got, want;
    if (!probe_run(&want, PROBE_STEPS, RIGHT)) {
        CU_FAIL("the probe's run cannot start");
        return;
    }
    CU_ASSERT_FATAL(probe_run(&got, PROBE_STEPS, -1));
    if (got.status != VIT_OK) {
        CU_FAIL("trainer_step() failed on an ordinary step");
        fprintf(stderr, "\n    step %d: %s\n", got.steps + 1, got.error);
        diagnose_error(got.error, got.steps + 1);
    } else {
        Tensor g = tensor_view(got.theta, 1, (int)got.n), w = tensor_view(want.theta, 1, (int)want.n);
        bool ok = assert_tensor_close(&g, &w, SAME_ATOL, SAME_RTOL,
                                      "the weights after 6 steps vs PyTorch's loop body");
        g = tensor_view(got.grad, 1, (int)got.n), w = tensor_view(want.grad, 1, (int)want.n);
        ok &= assert_tensor_close(&g, &w, SAME_ATOL, SAME_RTOL,
                                  "the gradient after 6 steps (clipped) vs PyTorch's");
        g = tensor_view(got.m, 1, (int)got.n), w = tensor_view(want.m, 1, (int)want.n);
        ok &= assert_tensor_close(&g, &w, SAME_ATOL, SAME_RTOL, "AdamW's first moment vs PyTorch's");
        CU_ASSERT_EQUAL(got.step, want.step);
        ok &= got.step == want.step;
        if (!ok) {
            int found = 0;
            const char *said = "";
            for (int m = RIGHT + 1; m < MISTAKES; m++) {
                Snapshot maybe;
                if (!probe_run(&maybe, PROBE_STEPS, m)) break;
                if (maybe.status == VIT_OK && same_state(&got, &maybe) && strcmp(said, HINT[m]))
                    check_hint("%s", HINT[m]), said = HINT[m], found++;
                snapshot_free(&maybe);
            }
            if (!found)
                check_hint("after %d steps the weights are not those of the loop body: the "
                           "batch (trainer_next_batch()), lr_at(&t->schedule, t->step), "
                           "vit_grads_zero(), vit_shards_forward_backward() with the smoothing, "
                           "optim_clip_grad_norm() to t->config.clip, adamw_step(), t->step++, in "
                           "that order", PROBE_STEPS);
        }
    }
    snapshot_free(&got);
    snapshot_free(&want);
}

static void test_probe_trainer_step_reports(void) {
    // TrainStep: the loss before the update, the learning rate used, the norm before
    // clipping, the images of the batch it got right
    Snapshot got, want, after;
    CU_ASSERT_FATAL(probe_run(&want, PROBE_STEPS, RIGHT));
    CU_ASSERT_FATAL(probe_run(&after, PROBE_STEPS, LOSS_AFTER));
    CU_ASSERT_FATAL(probe_run(&got, PROBE_STEPS, -1));
    if (got.status != VIT_OK) {
        CU_FAIL("trainer_step() failed on an ordinary step");
        diagnose_error(got.error, got.steps + 1);
    } else if (same_state(&got, &want)) { // the steps are right: what do they say?
        const float clip = probe_config().clip;
        for (int k = 0; k < PROBE_STEPS; k++) {
            const TrainStep *a = &got.out[k], *b = &want.out[k];
            if (!same_value(a->loss, b->loss)) {
                CU_FAIL("TrainStep.loss is not the batch's loss");
                fprintf(stderr, "\n    step %d: loss %.6f, PyTorch's %.6f\n", k + 1, (double)a->loss,
                        (double)b->loss);
                bool later = true; // every step's loss is that of a forward after the update
                for (int j = 0; j < PROBE_STEPS; j++)
                    later &= same_value(got.out[j].loss, after.out[j].loss);
                if (later)
                    check_hint("the loss reported is the one after the update: report the "
                               "loss vit_shards_forward_backward() returned, before adamw_step()");
                else
                    check_hint("TrainStep.loss is the loss vit_shards_forward_backward() returns "
                               "(with label smoothing), before the update");
                break;
            }
            if (!same_value(a->lr, b->lr)) {
                CU_FAIL("TrainStep.lr is not the learning rate of the update");
                check_hint("TrainStep.lr is the learning rate this step's adamw_step() used, "
                           "lr_at(&t->schedule, t->step): step %d used %g, it says %g", k + 1,
                           b->lr, a->lr);
                break;
            }
            if (!same_value(a->grad_norm, b->grad_norm)) {
                CU_FAIL("TrainStep.grad_norm is not the gradient's norm before clipping");
                check_hint("%s", same_value(a->grad_norm, clip)
                                     ? "grad_norm reported is the norm after clipping: report "
                                       "what optim_clip_grad_norm() returns, the norm before"
                                     : "TrainStep.grad_norm is the gradient's global norm "
                                       "before clipping, what optim_clip_grad_norm() returns");
                break;
            }
            if (a->correct != b->correct) {
                CU_FAIL("TrainStep.correct is not the batch's right answers");
                check_hint("TrainStep.correct counts the images of the batch whose largest "
                           "logit is their label: eval_logits_correct() on vit_logits() of this "
                           "step's forward (got %d, want %d at step %d)", a->correct,
                           b->correct, k + 1);
                break;
            }
        }
    } else { // the first probe names what is wrong with the steps themselves
        CU_FAIL("the steps are not PyTorch's loop body (the first probe says how), so what "
                "they report cannot be checked");
    }
    snapshot_free(&got);
    snapshot_free(&want);
    snapshot_free(&after);
}

static void test_probe_trainer_step_counts(void) {
    // Trainer::step counts each step once, and AdamW's own count keeps pace
    Snapshot one, two;
    CU_ASSERT_FATAL(probe_run(&one, 1, -1));
    CU_ASSERT_FATAL(probe_run(&two, 2, -1));
    if (one.status != VIT_OK || two.status != VIT_OK) {
        CU_FAIL("trainer_step() failed on an ordinary step");
        diagnose_error(one.status != VIT_OK ? one.error : two.error, 1);
    } else {
        CU_ASSERT_EQUAL(one.step, 1);
        CU_ASSERT_EQUAL(two.step, 2);
        CU_ASSERT_EQUAL(one.adam_step, 1);
        CU_ASSERT_EQUAL(two.adam_step, 2);
        if (one.step == 2 || two.step == 4) check_hint("%s", HINT[COUNT_TWICE]);
        else if (one.step == 0 || two.step == 0) check_hint("%s", HINT[COUNT_NONE]);
        else if (one.adam_step == 2 * one.step && two.adam_step == 2 * two.step)
            check_hint("%s", HINT[ADAMW_TWICE]);
        else if (one.adam_step != one.step || two.adam_step != two.step)
            check_hint("adamw_step() must run exactly once per step: AdamW has taken %lld "
                       "steps in %lld", (long long)two.adam_step, (long long)two.step);
    }
    snapshot_free(&one);
    snapshot_free(&two);
}

// A clip of 0 means no clipping (PyTorch's loop has no clip_grad_norm_ then):
// optim_clip_grad_norm() called with 0 would scale every gradient to length 0.
static void test_probe_trainer_step_clip_zero(void) {
    Snapshot got, want, clipped;
    probe_clip = 0.0f;
    const bool ran = probe_run(&want, 2, RIGHT) && probe_run(&clipped, 2, CLIP_ZERO) &&
                     probe_run(&got, 2, -1);
    probe_clip = 0.25f;
    CU_ASSERT_FATAL(ran);
    if (got.status != VIT_OK) {
        CU_FAIL("trainer_step() failed on an ordinary step with a clip of 0");
        diagnose_error(got.error, got.steps + 1);
    } else {
        const Tensor g = tensor_view(got.theta, 1, (int)got.n), w = tensor_view(want.theta, 1, (int)want.n);
        if (!assert_tensor_close(&g, &w, SAME_ATOL, SAME_RTOL,
                                 "the weights after 2 steps with a clip of 0 (no clipping)") &&
            same_state(&got, &clipped))
            check_hint("a clip of 0 means no clipping: call optim_clip_grad_norm() only when "
                       "t->config.clip > 0 (with 0 it scales every gradient to length 0), and "
                       "report optim_grad_norm() then");
        CU_ASSERT_DOUBLE_EQUAL(got.out[1].grad_norm, want.out[1].grad_norm, 1e-4 * want.out[1].grad_norm);
    }
    snapshot_free(&got);
    snapshot_free(&want);
    snapshot_free(&clipped);
}

static void test_probe_trainer_step_refuses_nan(void) {
    // a loss that is not finite: VIT_ERR_INPUT, and nothing moved, not even AdamW's moments
    const Dataset *d = probe_data();
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    const TrainConfig c = probe_config();
    Trainer t;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&t, &PROBE_MODEL, &c, d, &err), VIT_OK);
    TrainStep out;
    VitStatus first = trainer_step(&t, &out, &err); // a first, ordinary step
    if (first != VIT_OK) {
        CU_FAIL("trainer_step() failed on an ordinary step");
        diagnose_error(err.msg, 1);
        trainer_free(&t);
        return;
    }
    for (int i = 0; i < t.opt.count; i++)
        if (strcmp(t.opt.params[i].name, "head.bias") == 0) t.opt.params[i].data[0] = NAN;
    Snapshot before = {0}, after = {0};
    snapshot_take(&before, &t);
    const VitStatus s = trainer_step(&t, &out, &err);
    snapshot_take(&after, &t);
    CU_ASSERT_EQUAL(s, VIT_ERR_INPUT);
    const bool same_theta = memcmp(before.theta, after.theta, sizeof(float) * before.n) == 0;
    const bool same_moments = memcmp(before.m, after.m, sizeof(float) * before.n) == 0 &&
                              memcmp(before.v, after.v, sizeof(float) * before.n) == 0;
    CU_ASSERT_TRUE(same_theta);
    CU_ASSERT_TRUE(same_moments);
    CU_ASSERT_EQUAL(after.step, before.step);
    if (s == VIT_OK)
        check_hint("a loss that is not finite must stop the step: if !isfinite(loss) or "
                   "!isfinite(norm), return VIT_ERR_INPUT (vit_fail()) before adamw_step(), so "
                   "that no NaN reaches the weights");
    else if (!same_theta || !same_moments)
        check_hint("the step was refused only after adamw_step() had run: check isfinite() of "
                   "the loss and of the norm before the update");
    else if (after.step != before.step)
        check_hint("a refused step is not counted: return before t->step++");
    snapshot_free(&before);
    snapshot_free(&after);
    trainer_free(&t);
}

CU_TestInfo tests_ch11_training[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"Fashion-MNIST: 60,000 and 10,000 images, balanced, the published mean and std",
     test_the_data},
    {"the short run's loss falls, epoch after epoch", test_the_loss_falls},
    {"128 images: overfitting is visible", test_overfitting_is_visible},
    {"the gap between own and new images shrinks with data and augmentation",
     test_the_gap_shrinks_with_data},
    {"the shipped model on the first 1,000 test images", test_the_shipped_model},
    {"the film: attention even at epoch 0, focused at the end; the ratio follows the rate",
     test_the_film},
    {"probe: trainer_step is PyTorch's loop body", test_probe_trainer_step},
    {"probe: trainer_step reports the loss, lr, norm and right answers",
     test_probe_trainer_step_reports},
    {"probe: trainer_step counts each step once", test_probe_trainer_step_counts},
    {"probe: trainer_step refuses a loss that is not finite", test_probe_trainer_step_refuses_nan},
    {"probe: trainer_step with a clip of 0 does not clip", test_probe_trainer_step_clip_zero},
    CU_TEST_INFO_NULL,
};
