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

VitStatus cnn_trainer_init(CnnTrainer *t, int B, uint64_t seed, const AdamWConfig *cfg,
                           VitError *err) {
    *t = (CnnTrainer){0};
    cnn_params_new(&t->params);
    cnn_params_new(&t->grads);
    Rng rng;
    rng_seed(&rng, seed);
    cnn_init(&t->params, &rng);
    cnn_acts_new(&t->acts, B);
    t->dlogits = vit_calloc((size_t)B * CNN_CLASSES, sizeof(float));
    OptimParam list[6];
    cnn_optim_params(list, t);
    const VitStatus s = adamw_init(&t->opt, list, 6, cfg, err);
    if (s != VIT_OK) cnn_trainer_free(t);
    return s;
}

// [cnn_train_step]
VitStatus cnn_train_step(CnnTrainer *t, const float *images, const int *labels, double lr,
                         float *loss, VitError *err) {
    const int B = t->acts.B;
    memset(t->grads.memory, 0, t->grads.count * sizeof(float));            // opt.zero_grad()
    memset(t->dlogits, 0, (size_t)B * CNN_CLASSES * sizeof(float));
    cnn_forward(&t->acts, &t->params, images);                              // logits = model(images)
    *loss = loss_cross_entropy(t->dlogits, t->acts.logits, labels, B, CNN_CLASSES, 0.0f);
    if (!isfinite(*loss))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the loss is not finite (%g): the "
                        "learning rate %g is likely too high; the weights were not updated",
                        (long long)t->opt.step + 1, (double)*loss, lr);
    cnn_backward(&t->grads, t->dlogits, &t->acts, &t->params, images);     // loss.backward()
    adamw_step(&t->opt, lr);                                                // opt.step()
    return VIT_OK;
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
