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
 * @brief The side to draw an S × S image at in @p avail pixels: the largest
 *        whole multiple of S that fits, so every image pixel is the same k × k
 *        block and patches fall on pixel boundaries (a 28 × 28 Fashion-MNIST
 *        image in 40 pixels is drawn at 28); @p avail itself when S does not fit.
 */
int image_fit_side(int avail, int S);

/**
 * @brief Mark the grid × grid patches on a w × h picture: lines between
 *        patches when each patch is at least IMAGE_GRID_LINE_MIN pixels wide
 *        and tall, otherwise a checkerboard (a line would cover a quarter of a
 *        smaller patch). A mark darkens a light pixel and lightens a dark one
 *        (image_grid_mark()), so it shows on a black background too.
 */
void image_patch_grid(Rgb *px, int w, int h, int grid);

/** Patches at least this many pixels on a side get lines; smaller ones a checkerboard. */
#define IMAGE_GRID_LINE_MIN 6

/**
 * @brief One pixel of the patch grid: @p p moved by @p w towards black when
 *        it is light (luma ≥ 0.5), towards a slate blue when it is dark.
 */
Rgb image_grid_mark(Rgb p, float w);

/**
 * @brief Lay one value per patch over the picture: each pixel becomes a blend
 *        of the dimmed image and the ramp colour of its patch's value.
 * @param[in,out] px      (h, w) picture of the whole image
 * @param[in]     patch_t (grid, grid) positions on the ramp, [0, 1]
 * @param[in]     opacity how much colour covers the image, 0 (the image alone) to 1
 * @param[in]     mode    the terminal's colours: the ramp blended is the one it will show
 */
void image_overlay(Rgb *px, int w, int h, const float *patch_t, int grid, RampKind kind,
                   float opacity, ColourMode mode);

/** @} */
#endif
