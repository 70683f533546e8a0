// hint: a clip of 0 means no clipping
/**
 * @file train_step.c
 * @brief A wrong train_step.c for exercise 11 (tests/wrong/): optim_clip_grad_norm() called with
 *        a clip of 0, which means no clipping: every gradient is scaled to length 0.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "train/train.h"

#include <math.h>

VitStatus trainer_step(Trainer *t, TrainStep *out, VitError *err) {
    // t->images is (B, C, S, S), t->labels (B); B = t->config.batch
    if (t->step >= trainer_total_steps(t))
        return vit_fail(err, VIT_ERR_INPUT, "the run is over: step %lld of %lld steps",
                        (long long)t->step, (long long)trainer_total_steps(t));

    // images, labels = next(loader): the batch of this step, before it is counted
    trainer_next_batch(t);
    const VitConfig *c = &t->vit.config;
    int shape[4] = {t->config.batch, c->channels, c->image_size, c->image_size};
    Tensor images = tensor_view_shape(t->images, 4, shape);

    // lr = schedule(step): this step's, the warm-up starting from 0
    double lr = lr_at(&t->schedule, (int)t->step);

    // opt.zero_grad(); loss = F.cross_entropy(model(images), labels, eps); loss.backward()
    vit_grads_zero(&t->grads);  // the backward ADDS to the gradients
    float loss = 0.0f;
    VitStatus st = vit_shards_forward_backward(t->shards, &t->grads, &images, t->labels,
                                               t->config.smoothing, &loss, err);
    if (st != VIT_OK) return st;

    // clip_grad_norm_(params, clip): after the backward, before the update; the norm before
    // clipping either way (clip 0: no clipping)
    // WRONG: a clip of 0 means no clipping, not a gradient clipped to length 0
    double norm = optim_clip_grad_norm(t->opt.params, t->opt.count, t->config.clip);

    // one bad step must not write NaN into every weight: refused, not counted
    if (!isfinite(loss))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the loss is not finite (%g)",
                        (long long)t->step, (double)loss);
    if (!isfinite(norm))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the gradient's norm is not finite (%g)",
                        (long long)t->step, norm);

    // the batch's right answers, from the logits of this forward (before the update)
    Tensor logits = vit_logits(&t->vit);  // (B, Y)
    int correct = eval_logits_correct(logits.data, t->labels, t->config.batch, c->num_classes);

    // opt.step(); step += 1
    adamw_step(&t->opt, lr);
    t->step++;

    out->loss = loss;
    out->correct = correct;
    out->grad_norm = norm;
    out->lr = lr;
    return VIT_OK;
}
