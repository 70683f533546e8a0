/**
 * @file test_step_view.c
 * @brief The next training step watched on a copy (train/step_view.h): it is
 *        the step the run takes, every stage is heard in order, each update
 *        is the change of its parameter, and the run goes on as if nobody had
 *        looked.
 *
 * The small ViT of the train suite (28×28, 7×7 patches, D 32, L 2, H 2,
 * M 64) on the first 512 Fashion-MNIST training images, batches of 32, crop
 * and flip on: three steps take a fraction of a second. The reference is
 * always the run itself: trainer_step() on a second trainer of the same
 * settings, which no view ever touched.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/step_view.h"

static const VitConfig tiny = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 32,
                               .depth = 2, .heads = 2, .mlp_dim = 64, .num_classes = 10,
                               .ln_eps = 1e-6f};

static const Dataset *first_images(void) {
    static Dataset set;
    static bool loaded;
    if (!loaded) {
        VitError err;
        if (dataset_fashion_mnist_load_first(&set, NULL, "train", 512, &err) != VIT_OK) {
            fprintf(stderr, "\n    %s\n", err.msg);
            return NULL;
        }
        loaded = true;
    }
    return &set;
}

static TrainConfig settings(int shards) {
    TrainConfig c = train_defaults();
    c.epochs = 2, c.batch = 32, c.lr = 3e-3, c.warmup_epochs = 1, c.seed = 11;
    c.augment = (Augment){.pad = 2, .flip = true}; // the view must draw the same crops
    c.shards = shards;
    return c;
}

static bool start(Trainer *t, int shards) {
    VitError err;
    const Dataset *d = first_images();
    const TrainConfig c = settings(shards);
    if (!d || trainer_init(t, &tiny, &c, d, &err) != VIT_OK) {
        CU_FAIL("the trainer could not start");
        return false;
    }
    return true;
}

static bool steps(Trainer *t, int n, TrainStep *last) {
    VitError err;
    for (int i = 0; i < n; i++)
        if (trainer_step(t, last, &err) != VIT_OK) {
            fprintf(stderr, "\n    %s\n", err.msg);
            CU_FAIL("a training step failed");
            return false;
        }
    return true;
}

// The largest |a − b| over every parameter, relative to the largest |b|.
static double weights_gap(const AdamW *a, const AdamW *b) {
    double gap = 0, scale = 0;
    for (int i = 0; i < a->count; i++)
        for (size_t j = 0; j < a->params[i].numel; j++) {
            gap = fmax(gap, fabs((double)a->params[i].data[j] - b->params[i].data[j]));
            scale = fmax(scale, fabs((double)b->params[i].data[j]));
        }
    return scale > 0 ? gap / scale : gap;
}

static bool same_bits(const AdamW *a, const AdamW *b) {
    if (a->count != b->count || a->floats != b->floats) return false;
    for (int i = 0; i < a->count; i++)
        if (memcmp(a->params[i].data, b->params[i].data, a->params[i].numel * sizeof(float)))
            return false;
    return memcmp(a->memory, b->memory, a->floats * sizeof(float)) == 0; // m and v too
}

// A listener that only counts: the debugger's is heard the same way, and a
// listener must not change a bit of the step.
static void count_stage(void *user, const char *name, const Tensor *t) {
    (void)name, (void)t;
    ++*(int *)user;
}

// Watch step 3 of a run on `shards`, against the same step taken by a run
// nobody watched; then let the watched run go on and compare the two again.
static void watch_step_three(int shards, bool bitwise) {
    Trainer watched, plain;
    if (!start(&watched, shards)) return;
    if (!start(&plain, shards)) { trainer_free(&watched); return; }
    TrainStep st, view_st;
    VitError err;
    TrainStepView v;
    if (steps(&watched, 2, &st) && steps(&plain, 3, &st) &&
        train_step_view_open(&v, &watched, &err) == VIT_OK) {
        CU_ASSERT_EQUAL(v.step, 2);
        CU_ASSERT_DOUBLE_EQUAL(v.lr, st.lr, 0); // the learning rate of the step it shows
        int heard = 0;
        CU_ASSERT_EQUAL(train_step_view_run(&v, count_stage, &heard, &err), VIT_OK);
        CU_ASSERT_TRUE(heard > v.copy.opt.count); // the stages, then an update per parameter
        view_st = v.result;
        if (bitwise) {
            CU_ASSERT_TRUE(same_bits(&v.copy.opt, &plain.opt)); // the run's step, bit for bit
            CU_ASSERT_EQUAL(view_st.loss, st.loss);
            CU_ASSERT_EQUAL(view_st.correct, st.correct);
        } else {
            CU_ASSERT_TRUE(weights_gap(&v.copy.opt, &plain.opt) < 1e-5); // summed in another order
            CU_ASSERT_DOUBLE_EQUAL(view_st.loss, st.loss, 1e-5);
        }
        train_step_view_free(&v);
        // closed: the watched run takes step 3 and 4 itself, as the plain one does
        if (steps(&watched, 2, &st) && steps(&plain, 1, &st))
            CU_ASSERT_TRUE(same_bits(&watched.opt, &plain.opt));
        CU_ASSERT_EQUAL(watched.step, plain.step);
    } else CU_FAIL("the view could not open");
    trainer_free(&watched);
    trainer_free(&plain);
}

static void test_the_runs_step_one_shard(void) { watch_step_three(1, true); }
static void test_the_runs_step_two_shards(void) { watch_step_three(2, false); }

/* ----------------------------------------------------- what it hears */

typedef struct {
    TraceRecorder rec;
    const TrainStepView *view;
    double *ratio;  // (params) train_step_view_update()'s ratio, read as each is heard
    int updates;
} Heard;

static void hear(void *user, const char *name, const Tensor *t) {
    Heard *h = user;
    trace_record(&h->rec, name, t);
    const int i = train_step_view_param(h->view, name);
    if (i >= 0) h->ratio[h->updates++] = train_step_view_update(h->view, i).ratio;
}

static int index_of(const TraceRecorder *r, const char *name) {
    for (int i = 0; i < r->count; i++)
        if (!strcmp(r->entries[i].name, name)) return i;
    return -1;
}

// The stages in order: the forward, the backward, then one update per
// parameter in the optimizer's order, each the parameter's change.
static void test_every_stage_in_order(void) {
    Trainer run;
    if (!start(&run, 2)) return;
    TrainStep st;
    VitError err;
    TrainStepView v;
    if (!steps(&run, 1, &st) || train_step_view_open(&v, &run, &err) != VIT_OK) {
        CU_FAIL("the view could not open");
        trainer_free(&run);
        return;
    }
    const int P = v.copy.opt.count;
    Heard h = {.view = &v, .ratio = calloc((size_t)P, sizeof(double))};
    CU_ASSERT_EQUAL_FATAL(train_step_view_run(&v, hear, &h, &err), VIT_OK);
    const TraceRecorder *r = &h.rec;
    const int input = index_of(r, "input"), logits = index_of(r, "logits");
    const int dlogits = index_of(r, "grad.logits"), first = index_of(r, "optim.update.cls_token");
    CU_ASSERT_EQUAL(input, 0);
    CU_ASSERT_TRUE(input < logits && logits < dlogits && dlogits < first);
    CU_ASSERT_EQUAL(r->entries[input].t.shape[0], 32); // the whole batch
    CU_ASSERT_EQUAL(h.updates, P);
    CU_ASSERT_EQUAL(r->count - P, index_of(r, TRAIN_UPDATE_PREFIX "cls_token")); // updates last
    for (int i = 0; i < P && i < h.updates; i++) {
        const OptimParam *after = &v.copy.opt.params[i], *before = &run.opt.params[i];
        char name[96];
        snprintf(name, sizeof name, TRAIN_UPDATE_PREFIX "%s", after->name);
        const Tensor *d = trace_find(r, name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        CU_ASSERT_EQUAL((size_t)d->numel, after->numel);
        bool exact = true; // the run (untouched) holds θ before; the copy θ after
        double diff = 0, norm = 0;
        for (size_t j = 0; j < after->numel; j++) {
            exact &= d->data[j] == after->data[j] - before->data[j];
            diff += (double)d->data[j] * d->data[j];
            norm += (double)before->data[j] * before->data[j];
        }
        CU_ASSERT_TRUE(exact);
        const TrainParamUpdate u = train_step_view_update(&v, i);
        CU_ASSERT_DOUBLE_EQUAL(u.update, sqrt(diff), 1e-9 * (1 + sqrt(diff)));
        CU_ASSERT_DOUBLE_EQUAL(u.before, sqrt(norm), 1e-9 * (1 + sqrt(norm)));
        CU_ASSERT_DOUBLE_EQUAL(h.ratio[i], u.ratio, 0); // as heard: the update was done
        // the decay's part, η λ ‖θ‖, only where timm's rule decays
        const double decay = after->decay ? v.lr * v.copy.opt.config.weight_decay * sqrt(norm) : 0;
        CU_ASSERT_DOUBLE_EQUAL(u.decay, decay, 1e-12 + 1e-9 * decay);
    }
    CU_ASSERT_EQUAL(train_step_view_param(&v, "optim.update.head.weight"), P - 2);
    CU_ASSERT_EQUAL(train_step_view_param(&v, "head.weight"), -1);
    trace_recorder_free(&h.rec);
    free(h.ratio);
    train_step_view_free(&v);
    trainer_free(&run);
}

static void test_refusals(void) {
    Trainer run;
    if (!start(&run, 1)) return;
    VitError err;
    TrainStepView v;
    CU_ASSERT_EQUAL_FATAL(train_step_view_open(&v, &run, &err), VIT_OK);
    CU_ASSERT_EQUAL(train_step_view_run(&v, NULL, NULL, &err), VIT_OK);
    CU_ASSERT_EQUAL(train_step_view_run(&v, NULL, NULL, &err), VIT_ERR_INPUT); // once
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "taken already"));
    train_step_view_free(&v);
    train_step_view_free(&v); // twice is harmless
    run.step = trainer_total_steps(&run); // a run that is over has no next step
    CU_ASSERT_EQUAL(train_step_view_open(&v, &run, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "the run is over"));
    trainer_free(&run);
}

CU_TestInfo tests_step_view[] = {
    {"one shard: the run's next step, bit for bit", test_the_runs_step_one_shard},
    {"two shards: the run's next step to rounding", test_the_runs_step_two_shards},
    {"every stage heard, each update its change", test_every_stage_in_order},
    {"a step is watched once; a finished run has none", test_refusals},
    CU_TEST_INFO_NULL,
};
