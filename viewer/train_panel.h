/**
 * @file train_panel.h
 * @brief The training screen's panel: a few held-out pictures run through the
 *        model being trained, their predictions, and [cls]'s attention over
 *        the chosen one, on the weights as they are now.
 *
 * The pass runs on a probe: a Vit with the model's sizes that reads the
 * trained model's weights (borrowed, as a shard's replica does) but has
 * activations of its own, so looking never touches what the next optimizer
 * step reads or writes: the run's weights stay bit for bit those of
 * `vit train` with the same flags. Shape legend: P pictures, C channels,
 * S side, H heads, N tokens, G patches per side.
 */
#ifndef VIEWER_TRAIN_PANEL_H
#define VIEWER_TRAIN_PANEL_H

#include "train_view.h"
#include "model/vit.h"
#include "train/dataset.h"

/** @addtogroup viewer_train
 *  @{
 */

/** The pictures of the panel and the probe that runs them. */
typedef struct {
    Vit probe;          /**< the model's sizes and borrowed weights, its own activations */
    Tensor input;       /**< (P, C, S, S) the pictures, normalised as the run normalises */
    int wanted_layer;   /**< the layer whose probabilities the trace keeps (during a pass) */
    int wanted_head;    /**< … its head */
    int wanted_picture; /**< … its picture */
    TrainView *view;    /**< where the pass writes (during a pass) */
} TrainPanel;

/**
 * @brief The first picture of each class of @p d, in class order, at most
 *        @p max of them (fewer when a class has none).
 * @param[out] indices  (max) image numbers in @p d
 * @return how many
 */
int train_panel_pick(int *indices, const Dataset *d, int max);

/**
 * @brief Set up the panel: its pictures from @p d (train_panel_pick()),
 *        shown in @p v (thumbnails, labels, class names), and a probe of @p model.
 * @param[in] model  the model being trained: its weights are read at each
 *                   train_panel_update(), never written
 */
VitStatus train_panel_init(TrainPanel *p, TrainView *v, const Vit *model, const Dataset *d,
                           float mean, float std, VitError *err);

/**
 * @brief One pass of the pictures on the model's weights as they are now:
 *        each picture's predicted class and probability, and [cls]'s
 *        attention over the chosen picture (TrainView::picture, TrainView::layer,
 *        TrainView::head) into @p v.
 */
VitStatus train_panel_update(TrainPanel *p, TrainView *v, VitError *err);

/** @brief Free the probe's activations and the pictures (never the model's weights). */
void train_panel_free(TrainPanel *p);

/** @} */
#endif
