/**
 * @file tui_train.h
 * @brief The training screen on the terminal: drawing a TrainView
 *        (tui_train.c) and the loop that trains under it (tui_train_run.c).
 */
#ifndef VIEWER_TUI_TRAIN_H
#define VIEWER_TUI_TRAIN_H

#include <stdbool.h>

#include "train_view.h"

/** @addtogroup viewer_train
 *  @{
 */

/** @brief Take the terminal for the training screen: curses, colours; fills
 *         TrainView::colour, TrainView::utf8 and the layout. @p mono: --mono. */
void train_screen_start(TrainView *v, bool mono);
/** @brief Give the terminal back. Safe to call twice. */
void train_screen_stop(void);
/** @brief The whole training screen (or the too-small note), then refresh: the one redraw. */
void train_screen_draw(const TrainView *v);
/** @brief The one place the terminal's size is read again (KEY_RESIZE). */
void train_screen_resize(TrainView *v);

/**
 * @brief `vitview --train [the flags of vit train]`: train with the model on
 *        the screen, then write what `vit train` writes.
 * @param[in] argc, argv  vitview's command line, --train among it
 * @return the exit status: 0, 1 bad input, 2 bad usage
 */
int train_main(int argc, char **argv);

/** @} */
#endif
