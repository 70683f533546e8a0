/**
 * @file picture.h
 * @brief Pictures a person can look at: a map over the patch grid laid over
 *        its image, a colour bar with its numbers, text, and PNG files.
 *
 * A picture is an Image of 3 channels (image.h): width·height·3 bytes, row
 * by row, R, G, B. Everything here draws into one, clipped to its edges;
 * picture_write_png() saves it (stb_image_write, written to a temporary file
 * and renamed, as every file the project writes).
 *
 * Colours come from viridis (the default colour map of matplotlib, designed
 * by S. van der Walt and N. Smith to be perceptually uniform and readable in
 * grey and by colour-blind readers), sampled at ten published points and
 * interpolated in between. Text is stb_easy_font's: ASCII, about 6 pixels
 * high, drawn at an integer scale.
 *
 * Deliberately omitted: anti-aliasing, fonts other than stb_easy_font,
 * colour maps other than viridis, and any format but PNG.
 */
#ifndef VIT_PICTURE_H
#define VIT_PICTURE_H

#include "base/util.h"
#include "io/image.h"

/** @defgroup picture Pictures
 *  @brief Maps over images, colour bars and text, drawn into RGB pictures and saved as PNG.
 *
 *  A map value v on a scale from lo to hi gets the colour
 *  \f$ \mathrm{viridis}\big((v - \mathrm{lo})/(\mathrm{hi} - \mathrm{lo})\big) \f$,
 *  clamped to [0, 1]; laid over a grey pixel g with opacity α it becomes
 *  \f$ (1 - α)\,g + α\,\mathrm{viridis}(·) \f$.
 *
 *  Draws the attention maps of @ref chapter12 "chapter 12" (through `vit attention`, which the book runs
 *  for its pictures). Pinned by the suites @ref test_attention_cli.c "attention_cli", which checks the PNGs
 *  it writes (@ref answer_keys "the answer keys").
 *  @{
 */

/** An RGB colour. */
typedef struct {
    unsigned char r; /**< red, 0 to 255 */
    unsigned char g; /**< green */
    unsigned char b; /**< blue */
} Rgb;

/** A white picture of @p width × @p height (image_free() it). */
Image picture_new(int width, int height);

/** @brief viridis at @p t in [0, 1] (clamped); NaN is magenta, which viridis never is. */
Rgb picture_viridis(float t);

/** @brief Fill the rectangle at (x, y) of w × h pixels. */
void picture_fill(Image *pic, int x, int y, int w, int h, Rgb colour);

/**
 * @brief Draw @p text with its top-left corner at (x, y), each font pixel a
 *        @p scale × @p scale square; characters outside printable ASCII show as '?'.
 * @return the width drawn, in pixels
 */
int picture_text(Image *pic, int x, int y, int scale, const char *text, Rgb colour);
/** @brief The width picture_text() would draw, in pixels. */
int picture_text_width(const char *text, int scale);
/** @brief The height of one line of text, in pixels. */
int picture_text_height(int scale);

/** Where and how a map is laid over its image. */
typedef struct {
    int x;           /**< the left edge in the picture */
    int y;           /**< the top edge */
    int scale;       /**< each image pixel becomes scale × scale picture pixels */
    float lo;        /**< the colour scale's bottom: picture_viridis(0) */
    float hi;        /**< its top: picture_viridis(1) */
    float opacity;   /**< α in [0, 1]: 0 shows only the image, 1 only the map */
} Overlay;

/**
 * @brief Draw @p img (grey, or RGB shown as is) upscaled, with @p map laid over it.
 *
 * The map is (rows, cols) over the patch grid: cell (i, j) covers the image
 * pixels of patch (i, j), img->height/rows × img->width/cols of them. With
 * @p map NULL only the image is drawn.
 */
void picture_overlay(Image *pic, const Overlay *o, const Image *img, const float *map, int rows,
                     int cols);

/**
 * @brief Draw a vertical colour bar at (x, y), w × h, from lo (bottom) to hi
 *        (top), with its two ends written beside it, and a tick at @p mark
 *        labelled @p mark_label (e.g. the uniform level 1/P; NaN: none).
 */
void picture_colour_bar(Image *pic, int x, int y, int w, int h, float lo, float hi, float mark,
                        const char *mark_label);

/**
 * @brief The image a model saw: its normalised input (C, S, S) turned back into
 *        pixels, \f$ v = 255\,(x\,σ_c + μ_c) \f$ rounded and clamped (image_free() it).
 */
Image picture_from_input(const float *input, int channels, int side, const float *mean,
                         const float *std);

/**
 * @brief Save @p pic as a PNG at @p path, written whole to a temporary file, then renamed.
 * @return VIT_ERR_INPUT, naming the file, when it cannot be written
 */
VitStatus picture_write_png(const Image *pic, const char *path, VitError *err);

/** @} */
#endif
