/**
 * @file film.h
 * @brief A training's film: a few snapshots of the model kept beside it, so
 *        that `vitview` can show the same picture at epoch 0, 1, 2, 4, … (film.c).
 *
 * The naming rules, in one place for the writer (`vit train`) and the reader
 * (`vitview`):
 *
 *     runs/fashion.safetensors              the model as trained
 *     runs/fashion.film/epoch-000.safetensors   the initial weights
 *     runs/fashion.film/epoch-001.safetensors   after epoch 1
 *     runs/fashion.film/epoch-002.safetensors   after epoch 2, then 4, 8, 16, …
 *     runs/fashion.film/epoch-036.safetensors   and after the last epoch
 *
 * Each frame is an ordinary model file, written as the final model is
 * (trainer_save(t, path, false, meta, n, err), the same metadata) with two
 * keys more: `train.epoch` (that epoch, decimal) and `train.epochs` (the
 * run's total). Any tool that opens a model opens a frame.
 */
#ifndef VIT_FILM_H
#define VIT_FILM_H

#include <stdbool.h>

#include "base/util.h"

/** @addtogroup train
 *  @{
 */

/** The largest epoch a frame's name holds: three digits, epoch-999. */
#define FILM_MAX_EPOCH 999

/** One frame of a film: the model after an epoch. */
typedef struct {
    int epoch;  /**< 0 for the initial weights, else the epochs trained */
    char *path; /**< the frame's file, folder included (owned) */
} FilmFrame;

/** A film's frames, sorted by epoch. Zero-initialise, then film_open(). */
typedef struct {
    char *dir;          /**< the folder, as given (owned) */
    FilmFrame *frames;  /**< count frames, epoch ascending (owned) */
    int count;          /**< at least 1 after film_open() */
} Film;

/**
 * @brief The film's folder for a model file: "X.safetensors" → "X.film",
 *        any other path gets ".film" appended ("model.bin" → "model.bin.film").
 * @return a new string (free() it)
 */
char *film_dir_for(const char *model_path);

/**
 * @brief A frame's path: @p dir "/epoch-" and the epoch in three digits,
 *        "runs/fashion.film/epoch-004.safetensors".
 * @param[in] epoch  0 … FILM_MAX_EPOCH
 * @return a new string (free() it)
 */
char *film_frame_path(const char *dir, int epoch);

/**
 * @brief Does a run of @p epochs keep a frame after epoch @p epoch? Epoch 0
 *        (the initial weights), every power of two, and the last: for 36
 *        epochs, 0 1 2 4 8 16 32 36. Never past FILM_MAX_EPOCH (a name has
 *        three digits) nor past @p epochs.
 */
bool film_keeps_epoch(int epoch, int epochs);

/**
 * @brief The frames in folder @p dir: the files named exactly
 *        `epoch-NNN.safetensors` (three digits), sorted by epoch. Other
 *        names are not frames and are passed over.
 * @return VIT_ERR_INPUT naming the folder when it cannot be read, is not a
 *         folder, or holds no frame; @p f is then empty (film_free() is safe).
 */
VitStatus film_open(Film *f, const char *dir, VitError *err);

/** @brief Free what film_open() allocated and zero @p f. */
void film_free(Film *f);

/** @} */
#endif
