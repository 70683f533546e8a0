/**
 * @file render_image.h
 * @brief The input image as terminal pixels: colours, resampling, the patch
 *        grid and an attention map laid over it.
 *
 * A terminal cell is about twice as tall as wide. Drawing "▀" with the
 * foreground set to one pixel and the background to the one below gives two
 * square-ish pixels per cell, so a w × h pixel picture takes w columns and
 * h/2 rows. These functions make that picture; drawing it is the terminal
 * code's job. Pictures are row-major arrays of Rgb, (h, w).
 */
#ifndef VIEWER_RENDER_IMAGE_H
#define VIEWER_RENDER_IMAGE_H

#include "colour.h"

/** @defgroup viewer_image Viewer image rendering
 *  @brief From a (C, S, S) tensor to a small picture with patches and attention.
 *  @{
 */

/**
 * @brief Pixels from a normalised image tensor, stretching its smallest value
 *        to 0 and its largest to 255 (undoes any mean/std normalisation up to
 *        contrast, whatever preset made it).
 * @param[out] out  (S, S) pixels
 * @param[in]  chw  (C, S, S); C = 3 is RGB, otherwise channel 0 is shown as grey
 */
void image_to_rgb(Rgb *out, const float *chw, int C, int S);

/**
 * @brief Resize by averaging the source pixels each output pixel covers
 *        (nearest pixel when growing).
 * @param[out] out  (oh, ow)
 * @param[in]  in   (ih, iw)
 */
void image_resample(Rgb *out, int ow, int oh, const Rgb *in, int iw, int ih);

/** @brief Which patch (row-major, 0 … grid²−1) pixel (x, y) of a w × h picture shows. */
int image_patch_at(int x, int y, int w, int h, int grid);

/**
 * @brief Mark the grid × grid patches on a w × h picture: dark lines between
 *        patches when each patch is at least 4 pixels wide and tall, otherwise
 *        a faint checkerboard (lines would cover half the picture).
 */
void image_patch_grid(Rgb *px, int w, int h, int grid);

/**
 * @brief Lay one value per patch over the picture: each pixel becomes a blend
 *        of the dimmed image and the ramp colour of its patch's value.
 * @param[in,out] px      (h, w) picture of the whole image
 * @param[in]     patch_t (grid, grid) positions on the ramp, [0, 1]
 */
void image_overlay(Rgb *px, int w, int h, const float *patch_t, int grid, RampKind kind);

/** @} */
#endif
