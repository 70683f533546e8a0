/**
 * @file layer_stats.h
 * @brief How healthy each layer's step was: its gradient's norm, its
 *        weights' norm and how far the step moved them, ‖Δθ‖ / ‖θ‖.
 *
 * A ViT's parameters fall into depth + 3 groups, in the forward's order:
 * `patch_embed` (with `cls_token` and `pos_embed`), `blocks.0` …
 * `blocks.L-1`, `norm` (the final LayerNorm) and `head`. For each group,
 * after one trainer_step():
 *
 *     grad_norm    = ‖g‖ of the group, before clipping (as the step saw it)
 *     weight_norm  = ‖θ‖ of the group after the update
 *     update_ratio = ‖θ_after − θ_before‖ / ‖θ_before‖
 *
 * A healthy run keeps update_ratio near 1e-3; a layer whose ratio is 100
 * times its neighbours' is being shaken, one near 0 has stopped learning.
 * Δθ needs the weights before the update: train_layers_before() copies them
 * into memory the watch owns (allocated once), so a run that does not ask
 * pays nothing. Pinned by the suite @ref test_train_run.c "train_run".
 */
#ifndef VIT_LAYER_STATS_H
#define VIT_LAYER_STATS_H

#include <stddef.h>

#include "train/train.h"

/** @addtogroup train
 *  @{
 */

/** One group's numbers for one step (or their mean over an epoch's steps). */
typedef struct {
    double grad_norm;     /**< ‖g‖ before clipping */
    double weight_norm;   /**< ‖θ‖ after the update */
    double update_ratio;  /**< ‖Δθ‖ / ‖θ before‖; 0 for a group of zeros */
} TrainLayerStats;

/** The copy of the weights before a step, and where each tensor's group is. */
typedef struct {
    int groups;           /**< depth + 3 */
    int params;           /**< tensors: Trainer::opt's count */
    int *group_of;        /**< (params) the group of each tensor */
    float *before;        /**< (Σ numel) the weights before the step, tensor after tensor */
    size_t floats;        /**< Σ numel */
    double *sums;         /**< (groups, 4) a step's Σ g², Σ θ², Σ Δθ², Σ θ_before² */
} TrainLayerWatch;

/** @brief Layer groups of a model of @p c: its depth + 3. */
int train_layer_count(const VitConfig *c);

/**
 * @brief The group (0 … depth + 2) of the parameter named @p name (timm's
 *        names: "blocks.3.mlp.fc1.weight" → 4), or −1 for a name of none.
 */
int train_layer_of(const char *name, int depth);

/** @brief The name of group @p g: "patch_embed", "blocks.0", …, "norm", "head". */
void train_layer_name(char *buf, size_t size, int g, int depth);

/**
 * @brief Ready a watch of the parameters @p opt updates (a model of @p depth
 *        blocks, timm's names), its memory allocated once; free with
 *        train_layers_free().
 * @return VIT_ERR_INPUT naming a parameter of no group
 */
VitStatus train_layers_init(TrainLayerWatch *w, const AdamW *opt, int depth, VitError *err);

/** @brief Copy the weights before the next step. */
void train_layers_before(TrainLayerWatch *w, const AdamW *opt);

/**
 * @brief Each group's numbers of the step just taken (train_layers_before()
 *        was called before it).
 * @param[in]  opt        its parameters after the update, their gradients as
 *                        the update used them (clipped)
 * @param[in]  grad_norm  the global norm before clipping (what
 *                        optim_clip_grad_norm() returned) and …
 * @param[in]  clip       … the clip (0: none): together they undo the clipping
 * @param[out] out        (groups) one entry per group
 */
void train_layers_after(TrainLayerWatch *w, const AdamW *opt, double grad_norm, float clip,
                        TrainLayerStats *out);

/** @brief Free the watch and zero it (safe on a zeroed one). */
void train_layers_free(TrainLayerWatch *w);

/** @} */
#endif
