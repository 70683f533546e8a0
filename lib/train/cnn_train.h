/**
 * @file cnn_train.h
 * @brief Training the small CNN (cnn.h): one AdamW step on a batch, the same
 *        loop body as the ViT's trainer_step().
 *
 * Shape legend: B images in a batch, 28×28 grey, 10 classes.
 *
 * @code
 * CnnTrainer t;
 * if (cnn_trainer_init(&t, cnn_config_default(), B, seed, &cfg, &err) != VIT_OK)
 *     return 1;                                                   // once
 * for (int step = 0; step < steps; step++) {
 *     float loss;
 *     if (cnn_train_step(&t, images, labels, lr, &loss, &err) != VIT_OK) break;
 * }
 * cnn_trainer_free(&t);
 * @endcode
 *
 * Weight decay applies to the three weights, not to the biases (timm's rule,
 * adamw_decays()). cnn_train_step() is the bare update (the caller hands each
 * batch and learning rate in); a CnnRun is the ViT's Trainer with the model
 * swapped: the same TrainConfig, schedule, clipping, label smoothing, and the
 * same images, order, crops and flips at every step (train_fill_batch()).
 * What it omits: checkpoints and evaluation.
 */
#ifndef VIT_CNN_TRAIN_H
#define VIT_CNN_TRAIN_H

#include "base/util.h"
#include "model/cnn.h"
#include "train/optim.h"
#include "train/train.h"

#include <stdint.h>

/** @defgroup cnn_train Training the small CNN
 *  @brief One AdamW step of the small CNN: forward, cross-entropy, backward, update.
 *
 *  The loop body of @ref chapter11 "chapter 11"'s trainer for the model of cnn.h,
 *  with @ref chapter10 "chapter 10"'s AdamW. Pinned by the suite @ref test_cnn.c "cnn"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** What a CNN training run keeps between steps. */
typedef struct {
    CnnParams params;  /**< the model's parameters, updated by each step */
    CnnParams grads;   /**< their gradients, zeroed and refilled by each step */
    CnnActs acts;      /**< the forward's activations for one batch */
    float *dlogits;    /**< (B, 10) the loss's gradient */
    AdamW opt;         /**< the optimizer's moments, one pair per tensor of params */
} CnnTrainer;

/**
 * @brief Parameters of a CNN with @p model's channels from cnn_init() with
 *        @p seed, zero gradients, activations for batches of @p B and AdamW with @p cfg.
 * @param[out] t     free with cnn_trainer_free()
 * @param[in]  model the channel counts, e.g. cnn_config_default()
 * @param[in]  B     images per batch (≥ 1)
 * @param[in]  seed  the Rng seed of cnn_init()
 * @param[in]  cfg   AdamW's constants, e.g. adamw_defaults()
 * @param[out] err   the message on failure
 * @return VIT_OK, or adamw_init()'s error (then @p t is all zero)
 */
VitStatus cnn_trainer_init(CnnTrainer *t, CnnConfig model, int B, uint64_t seed,
                           const AdamWConfig *cfg, VitError *err);

/**
 * @brief One step: gradients zeroed, forward, cross-entropy, backward, AdamW.
 *
 * A loss that is not finite stops before the update, so one bad step cannot
 * write NaN into every weight.
 * @param[in,out] t       the run
 * @param[in]     images  (B, 1, 28, 28), normalised pixels
 * @param[in]     labels  (B) classes, each in [0, 10)
 * @param[in]     lr      the learning rate of this step, e.g. 3e-3
 * @param[out]    loss    the batch's mean loss before the update
 * @param[out]    err     the message on failure
 * @return VIT_OK, or VIT_ERR_INPUT when the loss is not finite (nothing updated)
 */
VitStatus cnn_train_step(CnnTrainer *t, const float *images, const int *labels, double lr,
                         float *loss, VitError *err);

/** @brief Free what cnn_trainer_init() took and zero @p t (safe on a zeroed one). */
void cnn_trainer_free(CnnTrainer *t);

/** A whole CNN training run with a ViT run's settings (train.h). */
typedef struct {
    CnnTrainer model;    /**< the CNN, its gradients and AdamW */
    TrainConfig config;  /**< the settings, the same a ViT run takes */
    const Dataset *data; /**< the training images (borrowed) */
    LrSchedule schedule; /**< warm-up + cosine, train_schedule() */
    int64_t step;        /**< steps taken; the next is this one */
    int *order;          /**< (count) the current epoch's permutation */
    int order_epoch;     /**< the epoch @ref order holds, −1 before the first */
    float *images;       /**< (B, 1, 28, 28) the batch, normalised and augmented */
    int *labels;         /**< (B) its labels */
} CnnRun;

/**
 * @brief Start a run: cnn_init() from @p c's seed, AdamW with train_adamw(),
 *        the schedule of train_schedule().
 * @param[out] r     free with cnn_run_free()
 * @param[in]  model the channel counts
 * @param[in]  data  28×28 grey images of 10 classes, borrowed for the run
 * @return VIT_ERR_INPUT for data the CNN cannot read, VIT_ERR_USAGE for
 *         settings out of range
 */
VitStatus cnn_run_init(CnnRun *r, CnnConfig model, const TrainConfig *c, const Dataset *data,
                       VitError *err);

/**
 * @brief One step, trainer_step() with the model swapped: the step's batch,
 *        lr_at(), forward, label-smoothed loss, backward, clipping, AdamW.
 * @param[out] out  the loss, the images right, the gradient norm before
 *                  clipping, the learning rate
 * @return VIT_ERR_INPUT, nothing updated, when the loss or the gradient is not finite
 */
VitStatus cnn_run_step(CnnRun *r, TrainStep *out, VitError *err);

/**
 * @brief The share of @p data's images whose largest logit is their label,
 *        un-augmented, in batches of the trainer's B (eval_run() for the CNN).
 * @param[in] mean, std  the normalisation, the run's TrainConfig's
 */
float cnn_accuracy(CnnTrainer *t, const Dataset *data, float mean, float std);

/** @brief Free what cnn_run_init() took and zero @p r (safe on a zeroed one). */
void cnn_run_free(CnnRun *r);

/** @} */
#endif
