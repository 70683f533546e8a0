/**
 * @file cnn_train.c
 * @brief One AdamW step of the small CNN (see cnn_train.h): PyTorch's loop
 *        body, line for line, as trainer_step() runs it for the ViT.
 *
 * Shape legend: B images in a batch, 28×28 grey, 10 classes.
 */
#include "train/cnn_train.h"
#include "ops/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The six tensors of @p t as AdamW's list, named like PyTorch's parameters.
static void cnn_optim_params(OptimParam out[6], CnnTrainer *t) {
    static const char *const names[6] = {"conv1.weight", "conv1.bias", "conv2.weight",
                                         "conv2.bias",   "fc.weight",  "fc.bias"};
    float *data[6] = {t->params.conv1_w, t->params.conv1_b, t->params.conv2_w,
                      t->params.conv2_b, t->params.fc_w,    t->params.fc_b};
    float *grad[6] = {t->grads.conv1_w, t->grads.conv1_b, t->grads.conv2_w,
                      t->grads.conv2_b, t->grads.fc_w,    t->grads.fc_b};
    for (int i = 0; i < 6; i++) {
        // each tensor ends where the next begins (the last where the memory ends)
        const float *end = i < 5 ? data[i + 1] : t->params.memory + t->params.count;
        out[i] = (OptimParam){.data = data[i], .grad = grad[i], .numel = (size_t)(end - data[i]),
                              .decay = i % 2 == 0}; // weights decay, biases do not
        snprintf(out[i].name, sizeof out[i].name, "%s", names[i]);
    }
}

VitStatus cnn_trainer_init(CnnTrainer *t, CnnConfig model, int B, uint64_t seed,
                           const AdamWConfig *cfg, VitError *err) {
    *t = (CnnTrainer){0};
    cnn_params_new(&t->params, model);
    cnn_params_new(&t->grads, model);
    Rng rng;
    rng_seed(&rng, seed);
    cnn_init(&t->params, &rng);
    cnn_acts_new(&t->acts, model, B);
    t->dlogits = vit_calloc((size_t)B * CNN_CLASSES, sizeof(float));
    OptimParam list[6];
    cnn_optim_params(list, t);
    const VitStatus s = adamw_init(&t->opt, list, 6, cfg, err);
    if (s != VIT_OK) cnn_trainer_free(t);
    return s;
}

// One update on a batch: PyTorch's loop body from opt.zero_grad() to opt.step(),
// the loss label-smoothed by `smoothing` and the gradient clipped to `clip` (0: not).
static VitStatus cnn_update(CnnTrainer *t, const float *images, const int *labels, double lr,
                            float smoothing, float clip, float *loss, double *norm,
                            VitError *err) {
    const int B = t->acts.B;
    memset(t->grads.memory, 0, t->grads.count * sizeof(float));            // opt.zero_grad()
    memset(t->dlogits, 0, (size_t)B * CNN_CLASSES * sizeof(float));
    cnn_forward(&t->acts, &t->params, images);                              // logits = model(images)
    *loss = loss_cross_entropy(t->dlogits, t->acts.logits, labels, B, CNN_CLASSES, smoothing);
    if (!isfinite(*loss))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the loss is not finite (%g): the "
                        "learning rate %g is likely too high; the weights were not updated",
                        (long long)t->opt.step + 1, (double)*loss, lr);
    cnn_backward(&t->grads, t->dlogits, &t->acts, &t->params, images);     // loss.backward()
    *norm = clip > 0 ? optim_clip_grad_norm(t->opt.params, t->opt.count, clip) // clip_grad_norm_
                     : optim_grad_norm(t->opt.params, t->opt.count);
    if (!isfinite(*norm))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the gradient norm is not finite (%g): "
                        "the learning rate %g is likely too high; the weights were not updated",
                        (long long)t->opt.step + 1, *norm, lr);
    adamw_step(&t->opt, lr);                                                // opt.step()
    return VIT_OK;
}

// [cnn_train_step]
VitStatus cnn_train_step(CnnTrainer *t, const float *images, const int *labels, double lr,
                         float *loss, VitError *err) {
    double norm;
    return cnn_update(t, images, labels, lr, 0.0f, 0.0f, loss, &norm, err);
}
// [cnn_train_step]

void cnn_trainer_free(CnnTrainer *t) {
    adamw_free(&t->opt);
    cnn_params_free(&t->params);
    cnn_params_free(&t->grads);
    cnn_acts_free(&t->acts);
    free(t->dlogits);
    *t = (CnnTrainer){0};
}

/* ------------------------------------------------------------ a whole run */

VitStatus cnn_run_init(CnnRun *r, CnnConfig model, const TrainConfig *c, const Dataset *data,
                       VitError *err) {
    *r = (CnnRun){.config = *c, .data = data, .order_epoch = -1};
    if (data->channels != 1 || data->size != CNN_SIDE || data->classes != CNN_CLASSES)
        return vit_fail(err, VIT_ERR_INPUT, "the CNN reads %d×%d grey images of %d classes; "
                        "the data's are %d×%d with %d channels and %d classes", CNN_SIDE,
                        CNN_SIDE, CNN_CLASSES, data->size, data->size, data->channels,
                        data->classes);
    if (c->batch < 1 || data->count < c->batch || c->epochs < 1)
        return vit_fail(err, VIT_ERR_USAGE, "%d images make no epoch of batches of %d",
                        data->count, c->batch);
    r->schedule = train_schedule(c, data);
    const AdamWConfig adamw = train_adamw(c);
    VitStatus s = lr_schedule_check(&r->schedule, err);
    if (s == VIT_OK) s = cnn_trainer_init(&r->model, model, c->batch, c->seed, &adamw, err);
    if (s != VIT_OK) return s;
    r->order = vit_malloc((size_t)data->count * sizeof *r->order);
    r->images = vit_malloc((size_t)c->batch * CNN_SIDE * CNN_SIDE * sizeof *r->images);
    r->labels = vit_malloc((size_t)c->batch * sizeof *r->labels);
    return VIT_OK;
}

// [cnn_run_step]
VitStatus cnn_run_step(CnnRun *r, TrainStep *out, VitError *err) {
    const TrainConfig *c = &r->config;
    train_fill_batch(r->images, r->labels, r->order, &r->order_epoch, c, r->data,
                     r->step);                              // images, labels = next(loader)
    const double lr = lr_at(&r->schedule, (int)r->step);    // warm-up, then cosine
    float loss = 0;
    double norm = 0;
    const VitStatus s = cnn_update(&r->model, r->images, r->labels, lr, c->smoothing, c->clip,
                                   &loss, &norm, err);      // zero_grad … opt.step()
    if (s != VIT_OK) return s;
    *out = (TrainStep){.loss = loss, .grad_norm = norm, .lr = lr,
                       .correct = eval_logits_correct(r->model.acts.logits, r->labels, c->batch,
                                                      CNN_CLASSES)};
    r->step++;
    return VIT_OK;
}
// [cnn_run_step]

float cnn_accuracy(CnnTrainer *t, const Dataset *data, float mean, float std) {
    const int B = t->acts.B;
    float *images = vit_malloc((size_t)B * CNN_SIDE * CNN_SIDE * sizeof *images);
    int *labels = vit_malloc((size_t)B * sizeof *labels), *index = vit_malloc((size_t)B * sizeof *index);
    int correct = 0;
    for (int first = 0; first < data->count; first += B) {
        // always a full batch (the activations' size); the padding repeats the last image
        const int real = data->count - first < B ? data->count - first : B;
        for (int b = 0; b < B; b++) index[b] = first + (b < real ? b : real - 1);
        dataset_batch(images, labels, data, index, B, mean, std, NULL, NULL);
        cnn_forward(&t->acts, &t->params, images);
        correct += eval_logits_correct(t->acts.logits, labels, real, CNN_CLASSES);
    }
    free(images), free(labels), free(index);
    return data->count ? (float)correct / (float)data->count : 0.0f;
}

void cnn_run_free(CnnRun *r) {
    cnn_trainer_free(&r->model);
    free(r->order);
    free(r->images);
    free(r->labels);
    *r = (CnnRun){0};
}
