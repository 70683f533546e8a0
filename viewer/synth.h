/**
 * @file synth.h
 * @brief The generated test picture the viewer shows until an image is given.
 *
 * A house with a window and a door, a tree, a sun, sky and grass: flat shapes
 * with clear edges, the same on every machine, so patches differ from their
 * neighbours and attention maps have something to latch onto. It is drawn at
 * any size from coordinates relative to the side.
 */
#ifndef VIEWER_SYNTH_H
#define VIEWER_SYNTH_H

#include "base/tensor.h"
#include "model/vit.h"

/** @defgroup viewer_synth Viewer test picture
 *  @brief A deterministic picture made of simple shapes.
 *  @{
 */

/**
 * @brief Draw the picture.
 * @param[out] rgb  (3, S, S), values in [0, 1], channel-major like a tensor
 */
void synth_image(float *rgb, int S);

/**
 * @brief The picture as a model input: (1, C, S, S) for the model's S and C,
 *        normalised with mean = std = 0.5 (the timm and Hugging Face ViT presets).
 *        With C ≠ 3, channel c shows colour c mod 3.
 * @return an owned tensor; tensor_free() it
 */
Tensor synth_input(const VitConfig *cfg);

/** @} */
#endif
