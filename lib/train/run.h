/**
 * @file run.h
 * @brief A whole training run, driven one step at a time: the data and its
 *        validation split, init or resume, the epochs with their validation
 *        pass, CSV logs, checkpoints and film frames, the test split once,
 *        the model written.
 *
 * `vit train` (cli/vit_train.c) is a loop over it that prints; a live
 * screen can draw from what the run keeps between two steps (its history,
 * the last validation's confusion matrix, each layer's health):
 * @code
 * TrainRun r;
 * if (train_run_open(&r, &settings, &err) != VIT_OK) ...   // checked, loaded, resumed
 * while (!train_run_done(&r)) {
 *     TrainRunStep st;
 *     if (train_run_step(&r, &st, &err) != VIT_OK) break;   // one step; an epoch's end
 *     if (stop) { train_run_interrupt(&r, &err); break; }   // checkpoint now
 * }
 * train_run_finish(&r, &err);                              // test split, model
 * train_run_free(&r);
 * @endcode
 *
 * Files: the model (--out), the checkpoint, the CSV of each epoch, the CSV
 * of each epoch's layer groups (layer_stats.h), the CSV of each step
 * (run_steps.c: its numbers and, with a layer log, its layer groups'), and the film: a folder of
 * model files, one per kept epoch (0, each power of two, the last), each
 * `epoch-NNN.safetensors` loadable like the final model.
 */
#ifndef VIT_TRAIN_RUN_H
#define VIT_TRAIN_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "train/layer_stats.h"
#include "train/train.h"

/** @addtogroup train
 *  @{
 */

/** What a run is told: `vit train`'s flags, the paths made. */
typedef struct {
    TrainConfig config;     /**< the training settings */
    const char *arch;       /**< the named architecture: "vit-fashion" */
    int patch;              /**< the patch side; 0: the arch's (4) */
    int dim;                /**< D; 0: the arch's (64) */
    int depth;              /**< L; 0: the arch's (6) */
    int heads;              /**< H; 0: the arch's (4) */
    int mlp;                /**< the MLP's width; 0: the arch's (128) */
    const char *data_dir;   /**< the folder of Fashion-MNIST's four files */
    int limit;              /**< train on the first N images only; 0: all */
    const char *out;        /**< the trained model */
    const char *checkpoint; /**< written each epoch and on an interrupt */
    const char *resume;     /**< a checkpoint to continue from; NULL: start */
    const char *log;        /**< the CSV of each epoch */
    const char *layer_log;  /**< the CSV of each epoch's layer groups; NULL: none */
    const char *step_log;   /**< the CSV of each step; NULL: none */
    const char *film;       /**< the folder of the kept epochs' models; NULL: none */
    bool test;              /**< evaluate the test split at the end */
    const char *command;    /**< the command line, for the metadata */
} TrainRunSettings;

/** What the progress line and the log know of the current epoch. */
typedef struct {
    double loss_sum;  /**< Σ of the steps' losses this epoch */
    int64_t correct;  /**< images right this epoch (before each step's update) */
    int64_t seen;     /**< images this epoch */
    int steps;        /**< steps this epoch */
    double started;   /**< vit_now() at the epoch's first step (earlier after a resume:
                           its time before the stop counts) */
} TrainEpochStats;

/** One finished epoch, as its CSV row gives it. */
typedef struct {
    double train_loss;    /**< the mean of the epoch's steps' losses */
    double train_acc;     /**< the images its steps had right, of all (before each update) */
    double val_loss;      /**< of the validation pass after it */
    double val_acc;       /**< … and its accuracy */
    double lr;            /**< of its last step */
    double seconds;       /**< the training steps' time alone */
    double images_per_s;  /**< images over seconds */
} TrainEpochRow;

/** One step, as the history keeps it. */
typedef struct {
    float loss;       /**< the batch's loss before the update */
    float lr;         /**< the learning rate it used */
    float grad_norm;  /**< the global gradient norm before clipping */
    int correct;      /**< images of the batch right; −1: a step before a resume */
} TrainStepPoint;

/** What train_run_step() did. */
typedef struct {
    TrainStep step;       /**< trainer_step()'s report */
    bool epoch_ended;     /**< this step finished an epoch: validated, logged, saved */
    TrainEpochStats done; /**< when it did: that epoch's sums */
    double seconds;       /**< … and its training steps' time (without the validation) */
    int val_count;        /**< … and the validation images */
} TrainRunStep;

/** A run in progress: everything it owns, freed by train_run_free(). */
typedef struct {
    TrainRunSettings settings; /**< as given (the strings borrowed) */
    Dataset all;               /**< the 60,000 training images */
    Dataset train;             /**< the first 55,000 of them (or the limit's) */
    Dataset val;               /**< the last 5,000 */
    Dataset test;              /**< the test split, when the run uses it */
    Trainer t;                 /**< the model, AdamW, the step */
    VitConfig model;           /**< the architecture */
    bool resumed;              /**< from a checkpoint */
    char *log;                 /**< the CSV of each epoch so far, header first */
    char *layer_log;           /**< the CSV of each epoch's layer groups, header first */
    char *step_log;            /**< the CSV of each step so far, header first (kept, and
                                    checkpointed, even when the settings write none) */
    size_t step_log_size;      /**< strlen(@ref step_log) */
    size_t step_log_room;      /**< bytes allocated for @ref step_log */
    bool step_layers;          /**< its rows carry the layer groups' columns */
    TrainEpochStats epoch;     /**< the current epoch so far (a checkpoint keeps it) */
    char val_acc[32];          /**< the last validation accuracy, "%.4f", or "not measured" */
    char test_acc[32];         /**< the test accuracy, "%.4f", or "not measured" */
    int test_correct;          /**< the test split's images right; 0 before */
    int test_count;            /**< the test split's images; 0 before */
    TrainEpochRow *epochs;     /**< (config.epochs) the finished epochs; from a resumed
                                    checkpoint's log too */
    int epochs_done;           /**< rows of @ref epochs */
    TrainStepPoint *steps;     /**< (total steps) every step taken; those before a
                                    resume have correct = −1 and zeros */
    EvalResult last_val;       /**< the last validation pass (its confusion matrix) */
    bool watch_layers;         /**< measure the layer groups at each step */
    TrainLayerWatch watch;     /**< the weights before the step */
    TrainLayerStats *layers;   /**< (groups) the last step's numbers */
    TrainLayerStats *layer_sums; /**< (groups) Σ over the current epoch's steps */
    int layer_steps;           /**< steps in @ref layer_sums */
    double started;            /**< vit_now() at the first step of this process */
    int64_t first_step;        /**< the step this process started at */
} TrainRun;

/**
 * @brief Check the files, load the data, draw the model or resume it.
 *
 * Before any work every output is checked: distinct files, none of them one
 * the run reads (the data, the checkpoint it resumes), each one writable;
 * the film's folder, if it exists, is a folder. Then the data (the test
 * split too when it will be used), the model, and on a resume the logs and
 * the epoch's sums; then epoch 0's film frame of a run that starts.
 * @return VIT_ERR_USAGE for settings at fault, VIT_ERR_INPUT for files; the
 *         run is then to be freed
 */
VitStatus train_run_open(TrainRun *r, const TrainRunSettings *s, VitError *err);

/** @brief Measure each layer group at every step from now on (layer_stats.h). */
VitStatus train_run_watch_layers(TrainRun *r, VitError *err);

/** @brief Whether every step of the run is taken. */
bool train_run_done(const TrainRun *r);

/**
 * @brief One trainer_step() and its row of the step log; after an epoch's
 *        last step, the validation pass, the CSV rows, the checkpoint, the
 *        CSV files and the film frame.
 * @param[out] out  what the step did; out->epoch_ended is set as soon as the
 *                  epoch is validated, even when a file fails after
 */
VitStatus train_run_step(TrainRun *r, TrainRunStep *out, VitError *err);

/**
 * @brief Save a checkpoint at the current step (and the step log up to it)
 *        and fail with the message saying how to continue ("interrupted at
 *        step …; … --resume FILE").
 * @return VIT_ERR_INPUT always (the checkpoint's own error if it fails)
 */
VitStatus train_run_interrupt(TrainRun *r, VitError *err);

/** @brief The test split once (when asked), then the model with its metadata. */
VitStatus train_run_finish(TrainRun *r, VitError *err);

/** @brief Images per second over the steps this process has taken. */
double train_run_rate(const TrainRun *r);

/** @brief Seconds left at train_run_rate(); 0 when not known yet. */
double train_run_eta(const TrainRun *r);

/** @brief Free everything and zero @p r (safe on a zeroed one). */
void train_run_free(TrainRun *r);

/** @} */
#endif
