/**
 * @file run_internal.h
 * @brief What run.c and run_epoch.c share and no caller needs (run.h).
 */
#ifndef VIT_TRAIN_RUN_INTERNAL_H
#define VIT_TRAIN_RUN_INTERNAL_H

#include "train/run.h"

/** The CSV of each epoch's header: checkpoints' train.log starts with it. */
extern const char TRAIN_CSV_HEADER[];
/** The layer log's header: checkpoints' train.layer_log starts with it. */
extern const char TRAIN_LAYER_CSV_HEADER[];

/** @brief Append @p more to the string @p text (NULL: empty), growing it. */
void train_text_append(char **text, const char *more);

/**
 * @brief Start the step log (run_steps.c): its header alone, with the layer
 *        groups' columns when @p layers.
 */
void train_step_log_start(TrainRun *r, bool layers);

/**
 * @brief The step log of a resumed checkpoint, @p text (NULL: one from before
 *        the step log, which starts anew with columns as @p layers says).
 * @return false when it is not the step log of steps … up to the run's step
 */
bool train_step_log_restore(TrainRun *r, const char *text, bool layers);

/** @brief Append the row of the step just taken (r->t.step counts it; r->layers its groups). */
void train_step_log_row(TrainRun *r, const TrainStep *st);

/** @brief Write the film's frame of @p epoch (its folder made if missing). */
VitStatus train_film_frame(const TrainRun *r, int epoch, VitError *err);

#endif
