/**
 * @file train.c
 * @brief The training loop's pieces (train.h): a step, an evaluation, a
 *        checkpoint and a resume.
 *
 * Shape legend: B batch, C channels, S side, Y classes.
 *
 * Where the randomness comes from. Three things are drawn: the initial
 * weights (vit_build_random(), seeded by the run's seed), each epoch's order
 * of the images (a stream seeded by the seed and the epoch) and each
 * image's crop and flip (a stream seeded by the seed and the step). None is
 * carried from one step to the next, so the state of a run is its weights,
 * AdamW's moments and the step number — what a checkpoint holds — and a
 * resumed run is the uninterrupted one.
 *
 * Deliberately omitted: dropout and drop-path, mixup and cutmix, an
 * exponential moving average of the weights, gradient accumulation, mixed
 * precision: the shipped model reaches its accuracy without them.
 */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "ops/ops.h"
#include "io/safetensors.h"

// [train_defaults]
TrainConfig train_defaults(void) {
    return (TrainConfig){.epochs = 36, .batch = 128, .lr = 2e-3, .min_lr = 1e-5,
                         .warmup_epochs = 2, .weight_decay = 0.05, .clip = 1.0f,
                         .smoothing = 0.1f, .augment = {.pad = 1, .flip = true}, .seed = 1,
                         .shards = 2, .mean = 0.2860f, .std = 0.3530f};
}
// [train_defaults]

// One stream per (seed, purpose, index): splitmix64 of the three, so nearby
// seeds and steps give unrelated streams.
static void seed_stream(Rng *rng, uint64_t seed, uint64_t purpose, uint64_t index) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + purpose * 0xBF58476D1CE4E5B9ull + index;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    rng_seed(rng, z ^ (z >> 31));
}
enum { STREAM_SHUFFLE = 1, STREAM_AUGMENT = 2 };

static VitStatus check_config(const TrainConfig *c, VitError *err) {
    if (c->epochs < 1) return vit_fail(err, VIT_ERR_USAGE, "epochs must be at least 1, not %d", c->epochs);
    if (c->batch < 1) return vit_fail(err, VIT_ERR_USAGE, "the batch must be at least 1, not %d", c->batch);
    if (c->warmup_epochs < 0 || c->warmup_epochs >= c->epochs)
        return vit_fail(err, VIT_ERR_USAGE, "the warm-up (%d epochs) must be shorter than the "
                        "run (%d epochs)", c->warmup_epochs, c->epochs);
    if (!(c->smoothing >= 0 && c->smoothing < 1))
        return vit_fail(err, VIT_ERR_USAGE, "label smoothing must lie in [0, 1), not %g",
                        (double)c->smoothing);
    if (c->shards < 0 || c->shards > c->batch)
        return vit_fail(err, VIT_ERR_USAGE, "the batch of %d cannot be split into %d shards "
                        "(1 to %d)", c->batch, c->shards, c->batch);
    if (!(c->clip >= 0)) return vit_fail(err, VIT_ERR_USAGE, "clip must be 0 or more, not %g", (double)c->clip);
    if (!(c->std > 0) || !isfinite(c->mean))
        return vit_fail(err, VIT_ERR_USAGE, "the normalisation needs a finite mean and a std "
                        "above 0, not %g and %g", (double)c->mean, (double)c->std);
    if (c->augment.pad < 0 || c->augment.pad > 64)
        return vit_fail(err, VIT_ERR_USAGE, "the crop padding must lie in [0, 64], not %d",
                        c->augment.pad);
    return VIT_OK;
}

// The model must read the data's images and name its classes.
static VitStatus check_fits(const VitConfig *m, const Dataset *d, int B, VitError *err) {
    if (m->channels != d->channels || m->image_size != d->size)
        return vit_fail(err, VIT_ERR_INPUT, "the model reads %d×%d images of %d channel%s; the "
                        "data's are %d×%d with %d", m->image_size, m->image_size, m->channels,
                        m->channels == 1 ? "" : "s", d->size, d->size, d->channels);
    if (m->num_classes != d->classes)
        return vit_fail(err, VIT_ERR_INPUT, "the model has %d classes; the data has %d",
                        m->num_classes, d->classes);
    if (d->count < B)
        return vit_fail(err, VIT_ERR_INPUT, "%d training images are fewer than one batch of %d",
                        d->count, B);
    return VIT_OK;
}

AdamWConfig train_adamw(const TrainConfig *c) {
    AdamWConfig adamw = adamw_defaults();
    adamw.weight_decay = c->weight_decay;
    return adamw;
}

LrSchedule train_schedule(const TrainConfig *c, const Dataset *data) {
    const int steps_per_epoch = data->count / c->batch;
    return (LrSchedule){.peak_lr = c->lr, .min_lr = c->min_lr,
                        .warmup_steps = c->warmup_epochs * steps_per_epoch,
                        .total_steps = c->epochs * steps_per_epoch};
}

// [trainer_init]
VitStatus trainer_init(Trainer *t, const VitConfig *model, const TrainConfig *cfg,
                       const Dataset *data, VitError *err) {
    memset(t, 0, sizeof *t);
    VitStatus s = check_config(cfg, err);
    if (s == VIT_OK) s = check_fits(model, data, cfg->batch, err);
    if (s != VIT_OK) return s;
    t->config = *cfg;
    t->data = data;
    t->steps_per_epoch = data->count / cfg->batch;
    t->order_epoch = -1;
    const VitInit init = vit_init_timm(cfg->seed);
    const AdamWConfig adamw = train_adamw(cfg);
    t->schedule = train_schedule(cfg, data);
    if ((s = lr_schedule_check(&t->schedule, err)) != VIT_OK ||
        (s = vit_build_random(&t->vit, model, &init, err)) != VIT_OK ||
        (s = vit_shards_new(&t->shards, &t->vit, cfg->shards > 1 ? cfg->shards : 1, cfg->batch,
                            err)) != VIT_OK ||
        (s = vit_grads_init(&t->grads, &t->vit, err)) != VIT_OK ||
        (s = adamw_init_vit(&t->opt, &t->vit, &t->grads.weights, &adamw, err)) != VIT_OK) {
        trainer_free(t);
        return s;
    }
    const size_t image = (size_t)data->channels * data->size * data->size;
    t->order = vit_malloc((size_t)data->count * sizeof *t->order);
    t->images = vit_malloc_aligned((size_t)cfg->batch * image * sizeof *t->images);
    t->labels = vit_malloc((size_t)cfg->batch * sizeof *t->labels);
    return VIT_OK;
}
// [trainer_init]

int trainer_epoch(const Trainer *t) { return (int)(t->step / t->steps_per_epoch); }

int64_t trainer_total_steps(const Trainer *t) {
    return (int64_t)t->config.epochs * t->steps_per_epoch;
}

int ops_index_of_max(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

int eval_logits_correct(const float *logits, const int *labels, int B, int Y) {
    int correct = 0;
    for (int b = 0; b < B; b++) correct += ops_index_of_max(logits + (size_t)b * Y, Y) == labels[b];
    return correct;
}

// [trainer_next_batch]
void train_fill_batch(float *images, int *labels, int *order, int *order_epoch,
                      const TrainConfig *c, const Dataset *data, int64_t step) {
    const int steps_per_epoch = data->count / c->batch;
    const int epoch = (int)(step / steps_per_epoch), i = (int)(step % steps_per_epoch);
    if (*order_epoch != epoch) { // each epoch its own order, drawn from its own stream
        Rng shuffle;
        seed_stream(&shuffle, c->seed, STREAM_SHUFFLE, (uint64_t)epoch);
        dataset_shuffle(order, data->count, &shuffle);
        *order_epoch = epoch;
    }
    Rng augment;
    seed_stream(&augment, c->seed, STREAM_AUGMENT, (uint64_t)step);
    const bool augmenting = c->augment.pad > 0 || c->augment.flip;
    dataset_batch(images, labels, data, order + (size_t)i * c->batch, c->batch, c->mean, c->std,
                  augmenting ? &c->augment : NULL, &augment);
}

void trainer_next_batch(Trainer *t) {
    train_fill_batch(t->images, t->labels, t->order, &t->order_epoch, &t->config, t->data,
                     t->step);
}
// [trainer_next_batch]

void trainer_free(Trainer *t) {
    adamw_free(&t->opt);
    vit_grads_free(&t->grads);
    vit_shards_free(t->shards); // the replicas borrow the model's weights: first
    vit_free(&t->vit);
    free(t->order);
    free(t->images);
    free(t->labels);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------ evaluation */

// [evaluate]
VitStatus eval_run(Vit *vit, const Dataset *data, float mean, float std, int batch,
                   EvalResult *out, VitError *err) {
    memset(out, 0, sizeof *out);
    const VitConfig *m = &vit->config;
    const int Y = m->num_classes;
    VitStatus s = check_fits(m, data, 1, err);
    if (s != VIT_OK) return s;
    if (batch < 1) return vit_fail(err, VIT_ERR_USAGE, "the batch must be at least 1, not %d", batch);
    if (batch > data->count) batch = data->count;
    const size_t image = (size_t)data->channels * data->size * data->size;
    float *images = vit_malloc_aligned((size_t)batch * image * sizeof *images);
    int *labels = vit_malloc((size_t)batch * sizeof *labels), *index = vit_malloc((size_t)batch * sizeof *index);
    *out = (EvalResult){.classes = Y, .confusion = vit_calloc((size_t)Y * Y, sizeof(int)),
                        .predicted = vit_calloc((size_t)data->count + 1, sizeof(int))};
    double loss_sum = 0;
    const int shape[4] = {batch, m->channels, m->image_size, m->image_size};
    const Tensor input = tensor_view_shape(images, 4, shape);
    for (int first = 0; first < data->count && s == VIT_OK; first += batch) {
        // always a full batch, so the model keeps one size; the padding repeats the last image
        const int real = data->count - first < batch ? data->count - first : batch;
        for (int b = 0; b < batch; b++) index[b] = first + (b < real ? b : real - 1);
        dataset_batch(images, labels, data, index, batch, mean, std, NULL, NULL);
        if ((s = vit_forward(vit, &input, NULL, NULL, err)) != VIT_OK) break;
        const Tensor logits = vit_logits(vit);
        loss_sum += (double)loss_cross_entropy(NULL, logits.data, labels, real, Y, 0.0f) * real;
        for (int b = 0; b < real; b++) {
            const int best = ops_index_of_max(logits.data + (size_t)b * Y, Y);
            out->confusion[labels[b] * Y + best]++;
            out->predicted[first + b] = best;
            out->correct += best == labels[b];
        }
        out->count += real;
    }
    out->loss = out->count ? loss_sum / out->count : 0;
    free(images);
    free(labels);
    free(index);
    if (s != VIT_OK) eval_free(out);
    return s;
}
// [evaluate]

double eval_accuracy(const EvalResult *r) { return r->count ? (double)r->correct / r->count : 0; }

int eval_agreement(const EvalResult *a, const EvalResult *b) {
    const int n = a->count < b->count ? a->count : b->count;
    int same = 0;
    for (int i = 0; i < n; i++) same += a->predicted[i] == b->predicted[i];
    return same;
}

void eval_free(EvalResult *r) {
    free(r->confusion);
    free(r->predicted);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------- checkpoints */

// The settings that make a run this run, as one line: a checkpoint carries it,
// and a resume must find the same (another batch or schedule is another run).
static void config_line(char *buf, size_t size, const Trainer *t) {
    const TrainConfig *c = &t->config;
    const VitConfig *m = &t->vit.config;
    snprintf(buf, size, "img=%d channels=%d patch=%d dim=%d depth=%d heads=%d mlp=%d "
             "classes=%d epochs=%d batch=%d lr=%.9g min_lr=%.9g warmup=%d wd=%.9g clip=%.9g "
             "smoothing=%.9g pad=%d flip=%d seed=%llu shards=%d mean=%.9g std=%.9g images=%d",
             m->image_size, m->channels, m->patch_size, m->dim, m->depth, m->heads, m->mlp_dim,
             m->num_classes, c->epochs, c->batch, c->lr, c->min_lr, c->warmup_epochs,
             c->weight_decay, (double)c->clip, (double)c->smoothing, c->augment.pad,
             (int)c->augment.flip, (unsigned long long)c->seed, c->shards > 1 ? c->shards : 1,
             (double)c->mean, (double)c->std,
             t->data->count);
}

VitStatus trainer_save(const Trainer *t, const char *path, bool with_state, const TrainMeta *meta,
                       int meta_count, VitError *err) {
    StWriter wr = {0};
    VitStatus s = vit_writer_add(&wr, &t->vit, err);
    char line[512], step[32];
    for (int i = 0; i < meta_count && s == VIT_OK; i++) st_writer_meta(&wr, meta[i].key, meta[i].value);
    if (s == VIT_OK && with_state) {
        config_line(line, sizeof line, t);
        st_writer_meta(&wr, "train.config", line);
        snprintf(step, sizeof step, "%lld", (long long)t->step);
        st_writer_meta(&wr, "train.step", step);
        char name[96];
        for (int i = 0; i < t->opt.count; i++) { // AdamW's m and v, flat, under the parameter's name
            const int n = (int)t->opt.params[i].numel;
            Tensor m = tensor_view(t->opt.moments[i].m, 1, n), v = tensor_view(t->opt.moments[i].v, 1, n);
            snprintf(name, sizeof name, "optim.m.%s", t->opt.params[i].name);
            st_writer_add(&wr, name, &m);
            snprintf(name, sizeof name, "optim.v.%s", t->opt.params[i].name);
            st_writer_add(&wr, name, &v);
        }
    }
    if (s == VIT_OK) s = st_writer_save(&wr, path, err);
    st_writer_free(&wr);
    return s;
}

// Copy the float32 tensor NAME of the checkpoint into dst (n values).
static VitStatus read_into(float *dst, size_t n, const SafeTensors *st, const char *name,
                           const char *path, VitError *err) {
    const StTensor *e = st_find(st, name);
    char shown[1024];
    if (!e) return vit_fail(err, VIT_ERR_INPUT, "%s: no tensor '%s': not a checkpoint of this "
                            "model", vit_escape(shown, sizeof shown, path), name);
    const float *values;
    int owned;
    VitStatus s = st_get_f32(st, e, &values, &owned, err);
    if (s != VIT_OK) return s;
    int64_t numel = 1;
    for (int d = 0; d < e->ndim; d++) numel *= e->shape[d];
    if ((size_t)numel != n) s = vit_fail(err, VIT_ERR_INPUT, "%s: '%s' has %lld values, this "
                                         "model's has %zu", vit_escape(shown, sizeof shown, path),
                                         name, (long long)numel, n);
    else memcpy(dst, values, n * sizeof *dst);
    if (owned) free((void *)values);
    return s;
}

VitStatus trainer_resume(Trainer *t, const char *path, VitError *err) {
    SafeTensors st;
    VitStatus s = st_open(&st, path, err);
    if (s != VIT_OK) return s;
    char shown[1024], line[512];
    vit_escape(shown, sizeof shown, path);
    config_line(line, sizeof line, t);
    const char *theirs = st_meta(&st, "train.config"), *step = st_meta(&st, "train.step");
    long long at = -1;
    char *end = NULL, theirs_shown[1024], step_shown[64];
    if (step) { // all of it a number in range: "12abc" or 2⁶⁴ is damage, not step 12
        errno = 0;
        at = strtoll(step, &end, 10);
        if (end == step || *end || errno) at = -1;
    }
    if (!theirs || !step)
        s = vit_fail(err, VIT_ERR_INPUT, "%s: not a training checkpoint (no train.config and "
                     "train.step in its metadata)", shown);
    else if (strcmp(theirs, line) != 0)
        s = vit_fail(err, VIT_ERR_INPUT, "%s is a checkpoint of another run: it was started "
                     "with \"%s\", this one with \"%s\"", shown,
                     vit_escape(theirs_shown, sizeof theirs_shown, theirs), line);
    else if (at < 0 || at > trainer_total_steps(t))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: train.step \"%s\" is not a step of this run (0 to "
                     "%lld)", shown, vit_escape(step_shown, sizeof step_shown, step),
                     (long long)trainer_total_steps(t));
    // the parameters, and AdamW's m and v beside each (AdamW's list is the parameters')
    for (int i = 0; i < t->opt.count && s == VIT_OK; i++) {
        const OptimParam *p = &t->opt.params[i];
        char name[96];
        s = read_into(p->data, p->numel, &st, p->name, path, err);
        snprintf(name, sizeof name, "optim.m.%s", p->name);
        if (s == VIT_OK) s = read_into(t->opt.moments[i].m, p->numel, &st, name, path, err);
        snprintf(name, sizeof name, "optim.v.%s", p->name);
        if (s == VIT_OK) s = read_into(t->opt.moments[i].v, p->numel, &st, name, path, err);
    }
    st_close(&st);
    if (s != VIT_OK) return s;
    t->step = at;
    t->opt.step = at; // AdamW's bias correction counts the steps taken
    t->order_epoch = -1;
    return VIT_OK;
}
