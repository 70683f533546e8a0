/**
 * @file frames.h
 * @brief The training's film in the viewer: which snapshot is shown, moving
 *        to the next or the previous, and loading its weights (frames.c).
 *
 * `vit train` keeps a few snapshots of the model beside it, in X.film/
 * (train/film.h): epoch 0, 1, 2, 4, 8, …, the last. The viewer's places are
 * those frames in epoch order and the model as loaded: when the film's last
 * frame is the run's last epoch it is the model as loaded (the same weights),
 * else the model as loaded comes after the frames. The viewer starts on it;
 * ( ) move from place to place, the same picture run again each time.
 *
 * Nothing here draws or reads keys: the key (tui_app.c) asks frames_step()
 * where to go, the main loop calls frames_show() between passes.
 */
#ifndef VIEWER_FRAMES_H
#define VIEWER_FRAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "model/vit.h"
#include "train/film.h"

/** @addtogroup viewer_state
 *  @{
 */

/** The film beside the model, and where in it the viewer is. */
typedef struct {
    Film film;       /**< the frames (film.count 0: no film) */
    int places;      /**< where ( ) can go: the frames, plus the model as loaded when it is
                          not the last frame */
    int at;          /**< the place shown, 0 … places − 1 (the model as loaded at the start) */
    int loaded;      /**< the place that is the model as loaded: places − 1 */
    int run_epochs;  /**< the model's train.epochs, or -1 (not written by vit train) */
    int epochs;      /**< the run's epochs: run_epochs, or the last frame's when that is more */
    bool *refused;   /**< (places) frames found not to fit the model: ( ) pass over them */
    Vit kept;        /**< the model as loaded, kept here while a frame is shown */
    char none[200];  /**< without a film: why, for ( ) to say */
} FilmView;

/**
 * @brief The film for the viewer: @p film_dir if given (it must hold frames),
 *        else the film beside @p weights (film_dir_for()), if there is one.
 *
 * Without a film @p v says why in FilmView::none (no weights file, no folder
 * beside it, a folder without frames) and ( ) show that.
 * @param[in] weights   the model's file, or NULL (random weights)
 * @param[in] film_dir  --film DIR, or NULL: the film beside the weights
 * @param[in] model     the model as loaded: its train.epochs metadata counts the run
 * @return VIT_ERR_INPUT when @p film_dir is given and holds no frames; else VIT_OK
 */
VitStatus frames_find(FilmView *v, const char *weights, const char *film_dir, const Vit *model,
                      VitError *err);

/** @brief Is there a film to move through? */
bool frames_any(const FilmView *v);

/**
 * @brief Where ( ) go from the place shown: @p dir +1 the next place, −1 the
 *        previous, passing over refused frames.
 * @param[out] to   the place
 * @param[out] why  when there is none: why, in words (no film; the first or last place)
 * @return false when there is nowhere to go
 */
bool frames_step(const FilmView *v, int dir, int *to, char *why, size_t size);

/**
 * @brief Place @p place in words: "epoch 4 of 36 · frame 4/8", and for the
 *        model as loaded "epoch 36 of 36 · frame 8/8 · the model as loaded"
 *        ("the model as loaded · frame 9/9" when its metadata has no epochs);
 *        "" without a film.
 */
void frames_label(const FilmView *v, int place, char *buf, size_t size);

/**
 * @brief Show place @p to in @p vit: the frame's weights, or the model as
 *        loaded again (kept in FilmView::kept meanwhile, never read twice).
 *
 * A frame is loaded only if its architecture is the model's (VitConfig field
 * by field); otherwise it is marked refused and @p vit is left as it was.
 * The caller switches every head back on first (what-ifs are of the weights shown).
 * @return VIT_ERR_INPUT naming the frame's file: unreadable, or another architecture
 */
VitStatus frames_show(FilmView *v, Vit *vit, int to, VitError *err);

/** @brief Free the film and the kept model. */
void frames_free(FilmView *v);

/** @} */
#endif
