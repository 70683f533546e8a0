/**
 * @file train.h
 * @brief Training a ViT on a labelled image set: the epoch loop's pieces
 *        (one step, an evaluation, a checkpoint, a resume), each one call.
 *
 * Shape legend: B batch, C channels, S side, Y classes (the book's glossary).
 *
 * `vit train` (cli/vit_train.c) strings them together; a chapter or a test
 * can call the same pieces on a few hundred images.
 */
#ifndef VIT_TRAIN_H
#define VIT_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "model/vit.h"
#include "train/dataset.h"
#include "train/optim.h"
#include "train/shards.h"

/** @defgroup train Training
 *  @brief The loop around vit_shards_forward_backward() and adamw_step():
 *  shuffle, batch, augment, step, evaluate, save, resume.
 *
 *  One step is PyTorch's training loop line for line:
 *  @code
 *  for images, labels in loader:                 # trainer_step(): a shuffled batch, augmented
 *      lr = lr_at(step)                          #   warm-up, then cosine to the floor
 *      opt.zero_grad()
 *      loss = F.cross_entropy(model(images), labels, label_smoothing=eps)
 *      loss.backward()
 *      clip_grad_norm_(model.parameters(), clip)
 *      opt.step()                                # AdamW, timm's two groups
 *  @endcode
 *
 *  Every random draw comes from a stream seeded by the run's seed and the
 *  step (the epoch for the shuffle), never from a generator carried across
 *  steps: so a run resumed at any step draws exactly what the uninterrupted
 *  run drew, and the same seed and thread count give the same weights bit
 *  for bit.
 *
 *  Taught in @ref chapter11 "chapter 11" (training a ViT). Pinned by the suites
 *  @ref test_train.c "train", @ref test_train_cli.c "train_cli",
 *  @ref test_ch11_training.c "ch11_training" (@ref answer_keys "the answer keys").
 *  @{
 */

/** The settings of a training run: what `vit train` takes as flags. */
typedef struct {
    int epochs;          /**< E: passes over the training set */
    int batch;           /**< B: images per step; the last partial batch of an epoch is dropped */
    double lr;           /**< the peak learning rate, reached after the warm-up */
    double min_lr;       /**< the floor the cosine ends at, on the last step */
    int warmup_epochs;   /**< epochs of linear warm-up from 0 (in steps: warmup_epochs · steps per epoch) */
    double weight_decay; /**< AdamW's λ of the weights (not biases, norms, [cls], positions) */
    float clip;          /**< the largest global gradient norm; 0: no clipping */
    float smoothing;     /**< label smoothing of the cross-entropy, in [0, 1) */
    Augment augment;     /**< random crop after padding, horizontal flip; {0, false}: none */
    uint64_t seed;       /**< of the weights' init, the shuffles and the augmentation */
    int shards;          /**< each batch split over this many replicas, one per thread
                              (vit_shards_new()); 1: unsplit. The weights depend on it,
                              not on the thread count */
    float mean;          /**< the normalisation (pixel/255 − mean)/std of every image: its mean */
    float std;           /**< … and its standard deviation */
} TrainConfig;

/** @brief The settings of the shipped Fashion-MNIST model (the README's command). */
TrainConfig train_defaults(void);

/** A training run in progress: the model, its gradients and optimizer, where it is. */
typedef struct {
    Vit vit;             /**< the model being trained; its parameters are its own */
    VitShards *shards;   /**< the model with each batch split over TrainConfig::shards
                              replicas, one per thread (shards.h); one shard: the model
                              itself. A step's forward and backward go through it */
    VitGrads grads;      /**< d loss / d θ of the last step */
    AdamW opt;           /**< AdamW over every parameter, timm's decay groups */
    LrSchedule schedule; /**< warm-up + cosine over every step of the run */
    TrainConfig config;  /**< the settings */
    const Dataset *data; /**< the training images (borrowed) */
    int steps_per_epoch; /**< ⌊count / B⌋ */
    int64_t step;        /**< steps taken so far, over the whole run; the next is this one */
    int *order;          /**< (count) the current epoch's permutation of the images */
    int order_epoch;     /**< the epoch @ref order was shuffled for, −1 before the first */
    float *images;       /**< (B, C, S, S) the batch, normalised and augmented */
    int *labels;         /**< (B) its labels */
} Trainer;

/** What one step did. */
typedef struct {
    float loss;          /**< the batch's mean cross-entropy, before the update */
    int correct;         /**< images of the batch whose largest logit was their label */
    double grad_norm;    /**< the gradient's global norm before clipping */
    double lr;           /**< the learning rate the update used */
} TrainStep;

/** @brief AdamW's constants of a run: adamw_defaults() with the run's weight decay. */
AdamWConfig train_adamw(const TrainConfig *c);

/** @brief The learning rate schedule of a run on @p data: warm-up over the
 *         first warmup_epochs, cosine to min_lr on the last of epochs · ⌊count / B⌋ steps. */
LrSchedule train_schedule(const TrainConfig *c, const Dataset *data);

/**
 * @brief Start a run: a model of @p model drawn from the seed, its gradients, AdamW.
 * @param[in] model  the architecture; its channels, image size and classes
 *                   must be the data's
 * @param[in] data   the training images, borrowed for the whole run
 * @return VIT_ERR_USAGE for settings out of range (named), VIT_ERR_INPUT for a
 *         model that does not fit the data or memory
 */
VitStatus trainer_init(Trainer *t, const VitConfig *model, const TrainConfig *cfg,
                       const Dataset *data, VitError *err);

/** @brief The epoch (from 0) of the next step. */
int trainer_epoch(const Trainer *t);
/** @brief Steps in the whole run, epochs · steps per epoch. */
int64_t trainer_total_steps(const Trainer *t);

/**
 * @brief The batch of step @p step of a run with settings @p c on @p data:
 *        its images in the epoch's order (shuffled from a stream of the seed
 *        and the epoch), each augmented from a stream of the seed and the step.
 *
 * What trainer_next_batch() does for the ViT, for any model trained with the
 * same settings on the same images (cnn_train.h): the same step draws the
 * same images, crops and flips.
 * @param[out]    images       (B, C, S, S) normalised, augmented
 * @param[out]    labels       (B)
 * @param[in,out] order        (data->count) the epoch's permutation, reshuffled
 *                             when the step starts another epoch
 * @param[in,out] order_epoch  the epoch @p order holds; −1 before the first
 */
void train_fill_batch(float *images, int *labels, int *order, int *order_epoch,
                      const TrainConfig *c, const Dataset *data, int64_t step);

/**
 * @brief Fill Trainer::images and Trainer::labels with the batch of step
 *        Trainer::step: its images in the epoch's order (shuffled from a
 *        stream of the seed and the epoch), each augmented from a stream of
 *        the seed and the step.
 */
void trainer_next_batch(Trainer *t);

/** @brief The first index of the largest of @p n values: a row of logits' predicted class. */
int ops_index_of_max(const float *x, int n);

/** @brief How many of @p B rows of (B, Y) @p logits have their largest entry at their label. */
int eval_logits_correct(const float *logits, const int *labels, int B, int Y);

/**
 * @brief One training step on the next batch of the epoch (train_step.c).
 *
 * Fills the batch (trainer_next_batch()), zeroes the gradients, runs
 * forward + loss + backward, clips, and takes one AdamW step at lr_at(step);
 * then Trainer::step counts it.
 * @return VIT_ERR_INPUT, with nothing updated, when the loss or the gradient
 *         is not finite (the message says which, and the step)
 */
VitStatus trainer_step(Trainer *t, TrainStep *out, VitError *err);

/** @brief Free everything and zero @p t (safe on a zeroed or freed one). */
void trainer_free(Trainer *t);

/** The result of running a model over a set of images. */
typedef struct {
    int classes;         /**< Y */
    int count;           /**< images seen */
    int correct;         /**< whose largest logit was their label */
    double loss;         /**< the mean cross-entropy (no smoothing) */
    int *confusion;      /**< (Y, Y): row = true class, column = predicted class */
    int *predicted;      /**< (count) the class the model chose for each image, in order */
} EvalResult;

/** @brief Images for which @p a and @p b chose the same class (the first min(count) of each). */
int eval_agreement(const EvalResult *a, const EvalResult *b);

/**
 * @brief Run @p vit over every image of @p data, batches of @p batch (the last
 *        padded, the padding not counted): accuracy, loss, confusion matrix.
 * @param[out] out  free with eval_free()
 */
VitStatus eval_run(Vit *vit, const Dataset *data, float mean, float std, int batch,
                   EvalResult *out, VitError *err);
/** @brief correct / count, 0 for an empty set. */
double eval_accuracy(const EvalResult *r);
/** @brief Free the confusion matrix and the predictions, and zero @p r. */
void eval_free(EvalResult *r);

/** One `__metadata__` entry to write beside the parameters. */
typedef struct {
    const char *key;     /**< e.g. "train.command" */
    const char *value;   /**< a string (JSON where the reader expects JSON) */
} TrainMeta;

/**
 * @brief Write the run: the parameters under timm's names, the metadata
 *        entries given, and, for a checkpoint, AdamW's moments and the step.
 *
 * The file is written atomically (temporary file, then rename): an
 * interrupted save leaves the previous checkpoint as it was.
 * @param[in] with_state  true: a checkpoint trainer_resume() can continue from
 *                        ("optim.m.NAME", "optim.v.NAME" and the step in the
 *                        metadata); false: the model alone
 */
VitStatus trainer_save(const Trainer *t, const char *path, bool with_state, const TrainMeta *meta,
                       int meta_count, VitError *err);

/**
 * @brief Continue a run from a checkpoint written by trainer_save(…, true, …).
 *
 * @p t must be a run trainer_init() started with the same architecture and
 * settings; its parameters, AdamW's moments and the step become the
 * checkpoint's. The next trainer_step() then does exactly what the
 * uninterrupted run's would have.
 * @return VIT_ERR_INPUT naming the file when it is not a checkpoint of this
 *         run (another architecture, seed, batch or schedule: the message
 *         says which), or is damaged; the run is then half-overwritten:
 *         free it
 */
VitStatus trainer_resume(Trainer *t, const char *path, VitError *err);

/** @} */
#endif
