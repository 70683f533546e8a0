/**
 * @file image.h
 * @brief Images in: decoding, resizing, cropping, normalising into a tensor.
 *
 * Decoding uses stb_image (Debian's libstb): PNG, JPEG, BMP, PPM/PGM, with
 * grey and RGBA converted to RGB (alpha dropped, as PIL's convert("RGB")).
 * Resizing reproduces Pillow's Image.resize exactly (the resampler that
 * Hugging Face's and torchvision's preprocessing call): separable, antialiased
 * when shrinking (the filter is widened by the scale factor), fixed-point
 * 8-bit arithmetic with rounding between the horizontal and vertical passes.
 *
 * Presets (@ref contract_images), because the reference stacks disagree:
 *   hf           resize to S×S bilinear, /255, mean = std = 0.5
 *   timm         shorter side to ⌊S/0.9⌋ bicubic, centre crop S, mean = std = 0.5
 *   torchvision  shorter side to 256 bilinear, centre crop 224 (S), ImageNet mean/std
 * An image that is already S×S is not resampled by any preset.
 *
 * Deliberately omitted: colour management (ICC profiles), EXIF rotation,
 * 16-bit precision (stb reduces it to 8 bits), animated images (first frame).
 */
#ifndef VIT_IMAGE_H
#define VIT_IMAGE_H

#include "resample.h"
#include "tensor.h"
#include "util.h"

/** @defgroup image Images
 *  @brief Decode, resize like Pillow, crop, normalise:
 *  \f$ x_{c,y,x} = (\text{pixel}_{y,x,c}/255 - \mu_c)/\sigma_c \f$.
 *  @{
 */

/** Largest image we decode, in pixels (a decompression bomb guard): 64 megapixels. */
#define IMAGE_MAX_PIXELS (64L * 1024 * 1024)
/** Longest side we decode: resampling weights grow with the shrink factor. */
#define IMAGE_MAX_SIDE 65535

/** An 8-bit RGB image, rows top to bottom, pixels interleaved R, G, B. */
typedef struct {
    int width;          /**< columns */
    int height;         /**< rows */
    unsigned char *rgb; /**< width·height·3 bytes */
} Image;

/** How to turn a picture into the model's input. */
typedef struct {
    const char *name;   /**< "hf", "timm" or "torchvision" */
    int resize_short;   /**< shorter side after resizing; 0: resize straight to crop×crop */
    int crop;           /**< side of the centre crop = the model's S */
    ImageFilter filter; /**< resampling filter */
    float mean[3];      /**< per-channel mean subtracted after /255 */
    float std[3];       /**< per-channel standard deviation divided by */
} Preprocess;

/**
 * @brief Decode an image file into 8-bit RGB.
 * @return VIT_ERR_INPUT naming @p path for a missing, empty, undecodable,
 *         zero-sized or oversized (more than IMAGE_MAX_PIXELS, or a side
 *         longer than IMAGE_MAX_SIDE) image.
 */
VitStatus image_load(Image *img, const char *path, VitError *err);
/** @brief Decode an image from memory (same checks; @p label names it in messages). */
VitStatus image_load_memory(Image *img, const unsigned char *data, size_t size,
                            const char *label, VitError *err);
/** @brief A new w×h image, black. */
Image image_new(int width, int height);
/** @brief Free the pixels and zero the struct. */
void image_free(Image *img);

/** @brief Resize to w×h exactly as Pillow's Image.resize((w, h), filter). */
Image image_resize(const Image *src, int width, int height, ImageFilter filter);
/** @brief Copy the w×h rectangle whose top-left corner is (left, top); must lie inside. */
Image image_crop(const Image *src, int left, int top, int width, int height);

/**
 * @brief The settings of a preset for a model of side @p image_size.
 * @return VIT_ERR_USAGE for an unknown name (the message lists the known ones).
 */
VitStatus preprocess_preset(Preprocess *p, const char *name, int image_size, VitError *err);

/**
 * @brief Resize, crop and normalise one image into (3, S, S) floats.
 * @param[out] out  3·S·S floats, channel-major (C, H, W), S = p->crop
 */
void image_preprocess(float *out, const Image *img, const Preprocess *p);

/**
 * @brief Pixels to normalised floats: \f$ (v/255 - \mu_c)/\sigma_c \f$.
 * @param[out] out  (3, H, W)
 */
void image_to_chw(float *out, const Image *img, const float mean[3], const float std[3]);

/** @} */
#endif
