/**
 * @file step_view.h
 * @brief The next step of a training run, taken on a copy so a debugger can
 *        watch it stage by stage: the forward, the loss's backward, and
 *        AdamW's update of each parameter; the run itself is not touched.
 *
 * Shape legend: B batch, C channels, S side, N tokens, D width, Y classes.
 *
 * A paused run (run.h) hands its Trainer to train_step_view_open(), which
 * copies what the next step reads: the weights, AdamW's moments and step
 * count, the step's number. train_step_view_run() then takes that step on the
 * copy, with a listener hearing, in order,
 *   - the forward's stages on the step's batch ("input" … "logits", the trace
 *     contract), with every image of the batch;
 *   - the backward's stages of the batch's mean loss ("grad.logits" …
 *     "grad.embed"; the gradient of the pixels is not computed, as in
 *     training);
 *   - one stage per parameter, "optim.update." + its name, in the order of
 *     timm's state_dict: the change AdamW made to it, θ_after − θ_before,
 *     shaped like the parameter. At that moment TrainStepView::copy.opt holds
 *     its clipped gradient, its new m and v, and TrainStepView::before its old
 *     values, so a screen can show the gradient, the moments, the step and
 *     the decay (train_step_view_update()).
 * Closing the view frees the copy: the run goes on from exactly where it
 * paused, as if nobody had looked (tested: the same weights bit for bit).
 *
 * The copy's step is the run's step with one difference, said where it is
 * shown: a run with --shards 2 (the default) splits the batch in two halves
 * whose gradients are summed, and the copy computes the whole batch at once,
 * so the sums are added in another order. With --shards 1 the two steps are
 * the same arithmetic, and their weights are the same bits (tested); with 2
 * shards they agree to float32's rounding (tested to a relative 1e-5).
 */
#ifndef VIT_TRAIN_STEP_VIEW_H
#define VIT_TRAIN_STEP_VIEW_H

#include <stdint.h>

#include "base/trace.h"
#include "train/train.h"

/** @addtogroup train
 *  @{
 */

/** The next step of a run, on a copy of its state. */
typedef struct {
    Trainer copy;     /**< the run's weights, moments and step, copied, unsplit (1 shard) */
    int shards;       /**< the run's own shards, which the copy does not use */
    int64_t step;     /**< the step it takes, from 0 (Trainer::step of the run) */
    double lr;        /**< that step's learning rate */
    float *before;    /**< (Σ numel) every parameter before the update, in the optimizer's order */
    size_t *offset;   /**< (params) where each parameter starts in @ref before */
    float *delta;     /**< (largest numel) the update being shown, θ_after − θ_before */
    TrainStep result; /**< what the step did, once train_step_view_run() returned */
    int taken;        /**< 1 once the step is taken (a view takes it once) */
} TrainStepView;

/** One parameter's update, as a screen shows it: norms over the tensor. */
typedef struct {
    double grad;     /**< ‖g‖ after clipping: what AdamW was given */
    double m;        /**< ‖m‖ after the step */
    double v;        /**< ‖v‖ after the step (v is a mean of g², so its norm is in g² units) */
    double before;   /**< ‖θ‖ before */
    double update;   /**< ‖Δθ‖: the whole change, the step and the decay together */
    double decay;    /**< ‖η λ θ‖: the decay's part of it (0 for a tensor that does not decay) */
    double ratio;    /**< ‖Δθ‖ / ‖θ‖ (0 for a tensor of zeros) */
} TrainParamUpdate;

/**
 * @brief Copy what the next step of @p run reads, and draw its batch
 *        (copy.images, copy.labels: the run's next batch, the same images,
 *        crops and flips).
 * @return VIT_ERR_INPUT when the run is over (no next step) or the memory
 *         cannot be had; the view is then freed
 */
VitStatus train_step_view_open(TrainStepView *v, const Trainer *run, VitError *err);

/**
 * @brief Take the step on the copy, handing every stage to @p trace (see the file's comment).
 * @return VIT_ERR_INPUT when the loss or the gradient is not finite (nothing
 *         is then updated, as in training), or the step was taken already
 */
VitStatus train_step_view_run(TrainStepView *v, TraceFn trace, void *user, VitError *err);

/**
 * @brief The norms of parameter @p i's update (its index in copy.opt.params),
 *        once the step reached it.
 */
TrainParamUpdate train_step_view_update(const TrainStepView *v, int i);

/** @brief The parameter whose stage is @p name ("optim.update.head.weight"), or −1. */
int train_step_view_param(const TrainStepView *v, const char *name);

/** @brief Free the copy and zero @p v (safe on a zeroed or freed one). */
void train_step_view_free(TrainStepView *v);

/** The prefix of the optimizer's stages: "optim.update." + a parameter's name. */
#define TRAIN_UPDATE_PREFIX "optim.update."

/** @} */
#endif
