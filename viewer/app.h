/**
 * @file app.h
 * @brief Running the viewer: the forward pass with the UI inside its trace callback.
 */
#ifndef VIEWER_APP_H
#define VIEWER_APP_H

#include <stdbool.h>
#include <stddef.h>

#include "frames.h"
#include "io/labels.h"
#include "pictures.h"
#include "model/vit.h"
#include "train/step_view.h"

/** @defgroup viewer_app Viewer main loop
 *  @brief The forward pass, stopped in its trace callback by the UI.
 *  @{
 */

/** What main() hands the viewer. */
typedef struct {
    Vit *vit;             /**< a built model */
    const Tensor *input;  /**< (1, C, S, S) normalised pixels (copied) */
    const char *model;    /**< the model, for the title row */
    const char *picture;  /**< the picture, for the title row */
    Pictures *pictures;   /**< the pictures the keys { } T switch to (borrowed) */
    size_t history_bytes; /**< budget for the recorded tensors */
    Labels labels;        /**< class names (ownership passes to the viewer) */
    bool mono;            /**< --mono: no colour even if the terminal has it */
    const char *timings;  /**< write latency measurements here at exit (NULL: don't) */
    const char *message;  /**< a note for the title row at the start (NULL: none) */
    FilmView film;        /**< the training's film beside the weights, or none (ownership
                               passes to the viewer) */
} AppOptions;

/**
 * @brief Start curses, run the forward pass under the UI until the learner
 *        quits, restore the terminal.
 * @return an exit status: 0, or VIT_ERR_INPUT when the forward pass refuses the input
 */
int app_run(AppOptions *opt);

/**
 * @brief A training step's debugger, on the terminal curses already has (the
 *        training screen's): the run's next step, taken on the copy @p step
 *        (train/step_view.h), stepped stage by stage through its forward on the
 *        batch, the backward of its loss and AdamW's update of each parameter,
 *        then browsed until q. The caller draws its own screen again after.
 * @param[in] opt  @ref AppOptions::vit is the copy's model, @ref AppOptions::input
 *                 the step's batch (B, C, S, S); no pictures, film or timings
 * @return 0 (a step that cannot be taken says why on the screen)
 */
int app_run_train_step(AppOptions *opt, TrainStepView *step);

/**
 * @brief Give the terminal back (end curses) if the viewer has it; for a fatal
 *        signal's handler, just before the program exits with a message.
 */
void app_restore_terminal(void);

/** @} */
#endif
