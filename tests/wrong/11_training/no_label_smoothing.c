// hint: label smoothing is missing
/**
 * @file train_step.c
 * @brief A wrong train_step.c for exercise 11 (tests/wrong/): the plain cross-entropy, without the run's label smoothing.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "train/train.h"

#include <math.h>

#include "ops/ops.h"

VitStatus trainer_step(Trainer *t, TrainStep *out, VitError *err) {
    const TrainConfig *c = &t->config;
    const VitConfig *m = &t->vit.config;
    if (t->step >= trainer_total_steps(t))
        return vit_fail(err, VIT_ERR_INPUT, "the run is over: all %lld steps are taken",
                        (long long)trainer_total_steps(t));
    // [step]
    trainer_next_batch(t);                                  // images, labels = next(loader)
    const int shape[4] = {c->batch, m->channels, m->image_size, m->image_size};
    const Tensor images = tensor_view_shape(t->images, 4, shape);
    const double lr = lr_at(&t->schedule, (int)t->step);    // warm-up, then cosine
    vit_grads_zero(&t->grads);                              // opt.zero_grad()
    float loss;                                             // loss = F.cross_entropy(...)
    VitStatus s = vit_shards_forward_backward(t->shards, &t->grads, &images, t->labels,
                                              0.0f, /* WRONG: no smoothing */
                                              &loss, err); // loss.backward()
    if (s != VIT_OK) return s;
    const double norm = c->clip > 0 ? optim_clip_grad_norm(t->opt.params, t->opt.count, c->clip)
                                    : optim_grad_norm(t->opt.params, t->opt.count);
    if (!isfinite(loss) || !isfinite(norm))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the %s is not finite (%g): the "
                        "learning rate %g is likely too high; the weights were not updated",
                        (long long)t->step + 1, isfinite(loss) ? "gradient norm" : "loss",
                        isfinite(loss) ? norm : (double)loss, lr);
    adamw_step(&t->opt, lr);                                // opt.step()
    // [step]
    const Tensor logits = vit_logits(&t->vit);
    *out = (TrainStep){.loss = loss, .grad_norm = norm, .lr = lr,
                       .correct = eval_logits_correct(logits.data, t->labels, c->batch, m->num_classes)};
    t->step++;
    return VIT_OK;
}

