/**
 * @file train_step.c
 * @brief Exercise 11: one step of training, trainer_step() (lib/train/train.h), your version.
 *
 * Shape legend: B batch, C channels, S side, Y classes.
 *
 * Fill in the TODO. `make exercise CH=11` grades it: Chapter 11's runs, the
 * training suite's runs and the probes all call your trainer_step().
 * README.md says what the tests check and what the hints mean. Until the TODO
 * is done the function refuses every step with an error, so the tests fail
 * without hanging.
 */
#include "train/train.h"

#include <math.h>

VitStatus trainer_step(Trainer *t, TrainStep *out, VitError *err) {
    // t->images is (B, C, S, S), t->labels (B); B = t->config.batch

    // TODO: one step of training, PyTorch's loop body, line for line:
    //
    //   images, labels = next(loader)     trainer_next_batch(t): fills t->images, t->labels
    //   lr = schedule(step)               lr_at(&t->schedule, (int)t->step)
    //   opt.zero_grad()                   vit_grads_zero(&t->grads)
    //   loss = F.cross_entropy(model(images), labels, label_smoothing=eps)
    //   loss.backward()                   both: vit_shards_forward_backward(t->shards,
    //                                       &t->grads, &images, t->labels,
    //                                       t->config.smoothing, &loss, err), images a
    //                                       (B, C, S, S) view of t->images
    //                                       (tensor_view_shape()); t->shards is the model
    //                                       t->vit with each batch split over threads
    //   clip_grad_norm_(params, clip)     optim_clip_grad_norm(t->opt.params, t->opt.count,
    //                                       t->config.clip); it returns the norm before
    //                                       clipping. clip 0: no clipping, and the norm
    //                                       is optim_grad_norm()'s
    //   opt.step()                        adamw_step(&t->opt, lr)
    //   step += 1                         t->step++
    //
    //   - First, refuse a step past the end of the run: t->step ≥ trainer_total_steps(t)
    //     returns VIT_ERR_INPUT (vit_fail()) with a message that says the run is over.
    //   - A failed vit_shards_forward_backward() returns its status as it is.
    //   - If the loss or the norm is not finite (isfinite()), return VIT_ERR_INPUT before
    //     adamw_step(): one bad step must not write NaN into every weight. A refused step
    //     is not counted.
    //   - Then fill *out: the loss (before the update), the number of images of the batch
    //     whose largest logit is their label (eval_logits_correct() on vit_logits(&t->vit)),
    //     the norm before clipping, and the learning rate the update used.
    (void)t, (void)out;
    return vit_fail(err, VIT_ERR_INPUT, "trainer_step() is not written yet (exercise 11's "
                    "TODO)"); // placeholder: delete it
}
