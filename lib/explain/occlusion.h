/**
 * @file occlusion.h
 * @brief Occlusion: how far the predicted class's probability falls when one
 *        patch is blacked out, for each patch in turn; and the deletion test
 *        of one picture's maps.
 *
 * Shape legend: B batch, C channels, S side, p patch side, P = (S/p)² patches
 * in row-major grid order, Y classes, K = MEASURE_KS deletion steps.
 *
 * An attention map says where information flows; occlusion asks the model
 * itself. With c the predicted class and x with patch q black written x∖q:
 *
 *     fall_q = p_c(x) − p_c(x∖q)
 *
 * at one forward pass per patch. It is Captum's Occlusion with a window and
 * a stride of one patch, black as the baseline and the softmax's class c as
 * the target. A fall can be negative (the class grows surer without the
 * patch), and a patch that is black already falls by exactly 0: its input is
 * unchanged, so is every number after it.
 *
 * The deletion test of a map (chapter 12's, attention_measure() over many
 * images) blacks out the k patches the map ranks highest and reads p_c again:
 * the lower, the more the prediction rested on what the map shows. Here it is
 * one picture's, for the occlusion map beside the attention maps, on the same
 * k = rollout_measure_ks.
 *
 * What occlusion is not: the whole truth. One patch at a time misses what
 * two patches do together (blacking out either alone may change nothing), and
 * black is itself a picture the model has seen only as background.
 */
#ifndef VIT_OCCLUSION_H
#define VIT_OCCLUSION_H

#include "base/tensor.h"
#include "base/util.h"
#include "explain/rollout.h"
#include "model/vit.h"

/** @defgroup occlusion Occlusion
 *  @brief Each patch blacked out in turn, and the fall of the predicted class's probability.
 *
 *  With c the predicted class and \f$x_{\setminus q}\f$ the picture with patch q black:
 *  \f[ \mathrm{fall}_q = p_c(x) - p_c(x_{\setminus q}), \qquad q = 0 \ldots P-1 \f]
 *
 *  Beside @ref chapter12 "chapter 12", which uses it as the reference of the deletion test:
 *  `vit occlusion` prints it and the viewer shows it (key O). Pinned by the suite
 *  @ref test_occlusion.c "occlusion" (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * @brief Set the pixels of @p k patches of a (C, S, S) input to @p value (the
 *        normalised black): the patches order[0 … k−1].
 */
void mask_patches(float *input, int C, int S, int patch, const int *order, int k, float value);

/**
 * @brief The normalised value of a black pixel in each channel: (0 − mean) / std.
 * @param[out] black  (C)
 */
void occlusion_black(float *black, const float *mean, const float *std, int C);

/**
 * @brief Black out patches order[0 … k−1] of one picture, each channel in its own black.
 * @param[in,out] image  (C, S, S) normalised pixels, C, S and p from @p c
 * @param[in]     black  (C) a black pixel, normalised (occlusion_black())
 */
void occlusion_black_out(float *image, const VitConfig *c, const int *order, int k,
                         const float *black);

/**
 * @brief Each image's probability of its class in the model's last forward pass.
 * @param[out] p        (B) softmax(logits[b])[classes[b]]
 * @param[in]  classes  (B)
 */
void class_probability(double *p, const Vit *vit, const int *classes, int B);

/**
 * @brief The occlusion map of each image: patch q alone set to black, for each
 *        q, one forward pass for the batch; falls[b][q] = p_c(x_b) − p_c(x_b∖q).
 *
 * p_c(x_b) comes from a pass of the unmasked batch run the same way, so a
 * patch that is black already falls by exactly 0.
 * @param[out] falls    (B, P)
 * @param[in]  input    (B, C, S, S) normalised pixels
 * @param[in]  classes  (B) the class c of each image
 * @param[in]  black    (C) a black pixel, normalised (occlusion_black())
 * @return as vit_forward()
 */
VitStatus occlusion_falls(float *falls, Vit *vit, const Tensor *input, const int *classes,
                          const float *black, VitError *err);

/**
 * @brief One picture's deletion curve for a map: p_c with the map's top k
 *        patches black (rollout_map_rank()'s order), for k = rollout_measure_ks.
 * @param[out] probs  (K)
 * @param[in]  image  (1, C, S, S) normalised pixels
 * @param[in]  map    (P)
 * @param[in]  cls    the class c whose probability is read
 * @param[in]  black  (C) a black pixel, normalised
 * @return as vit_forward()
 */
VitStatus deletion_curve(double *probs, Vit *vit, const Tensor *image, const float *map, int cls,
                         const float *black, VitError *err);

/** How many maps occlusion_compare() sets side by side. */
#define OCCLUSION_MAPS 4
/** The maps occlusion_compare() sets side by side, in order: MAP_OCCLUSION,
 *  MAP_LAST_LAYER, MAP_ROLLOUT and MAP_GRAD. */
extern const MapMethod occlusion_compared[OCCLUSION_MAPS];

/** One picture's occlusion map beside its attention maps (occlusion_compare()). */
typedef struct {
    int P;          /**< patches, e.g. 49 */
    int side;       /**< patches per row, e.g. 7 */
    int cls;        /**< the predicted class c */
    double full;    /**< p_c, nothing black */
    Tensor maps;    /**< (OCCLUSION_MAPS, P) in occlusion_compared's order (owned) */
    double deletion[OCCLUSION_MAPS][MEASURE_KS]; /**< p_c with each map's top k patches black */
} OcclusionComparison;

/**
 * @brief Occlusion, the last layer's [cls] attention, the rollout and the
 *        gradient-weighted rollout of one picture, each with its deletion curve.
 *
 * P + 3 + 4·K forward passes (64 for 49 patches) and one backward; the model is prepared for
 * training as rollout_record() does.
 * @param[out] out    a new comparison (occlusion_comparison_free() it)
 * @param[in]  image  (1, C, S, S) normalised pixels
 * @param[in]  black  (C) a black pixel, normalised
 * @return VIT_ERR_INPUT for an image that is not one (1, C, S, S) picture; else as vit_forward()
 */
VitStatus occlusion_compare(OcclusionComparison *out, Vit *vit, const Tensor *image,
                            const float *black, VitError *err);
/** @brief Free the maps and zero the comparison. */
void occlusion_comparison_free(OcclusionComparison *c);

/** @} */
#endif
