/**
 * @file image.h
 * @brief Images in: decoding, grey conversion, resizing, cropping, normalising into a tensor.
 *
 * Shape legend: C channels (1 grey, 3 RGB), S the model's image side.
 *
 * Decoding uses stb_image (Debian's libstb): PNG, JPEG, BMP, PPM/PGM, with
 * grey and RGBA converted to RGB (alpha dropped, as PIL's convert("RGB")).
 * A model of one channel gets grey pixels, converted from RGB exactly as
 * Pillow's convert("L") does (image_to_grey()). Resizing reproduces Pillow's
 * Image.resize exactly (the resampler that Hugging Face's and torchvision's
 * preprocessing call): separable, antialiased when shrinking (the filter is
 * widened by the scale factor), fixed-point 8-bit arithmetic with rounding
 * between the horizontal and vertical passes, each channel alike.
 *
 * Presets (@ref contract_images), because the reference stacks disagree:
 *   hf             resize to S×S bilinear, /255, mean = std = 0.5
 *   timm           shorter side to ⌊S/0.9⌋ bicubic, centre crop S, mean = std = 0.5
 *   torchvision    shorter side to 256 bilinear, centre crop 224 (S), ImageNet mean/std
 *   fashion-mnist  grey; shorter side to S bilinear, centre crop S, mean 0.2860, std 0.3530
 * An image that is already S×S is not resampled by any preset. A model file
 * may name its own preset and normalisation in its `__metadata__`
 * ("preprocess", "mean", "std"): image_preprocess_for_model() lets them win over
 * the defaults.
 *
 * Deliberately omitted: colour management (ICC profiles), EXIF rotation,
 * 16-bit precision (stb reduces it to 8 bits), animated images (first frame),
 * models of other than 1 or 3 channels.
 */
#ifndef VIT_IMAGE_H
#define VIT_IMAGE_H

#include <stdbool.h>

#include "base/tensor.h"
#include "base/util.h"
#include "io/resample.h"
#include "io/safetensors.h"

/** @defgroup image Images
 *  @brief Decode, convert to grey like Pillow, resize like Pillow, crop, normalise:
 *  \f$ x_{c,y,x} = (\text{pixel}_{y,x,c}/255 - \mu_c)/\sigma_c \f$, with grey
 *  \f$ L = \lfloor (19595\,R + 38470\,G + 7471\,B + 2^{15}) / 2^{16} \rfloor \f$.
 *
 *  Taught in @ref chapter06 "chapter 06" (an image as a tensor). Pinned by the suites
 *  @ref test_image.c "image", @ref test_classify.c "classify" (@ref answer_keys "the answer
 *  keys").
 *  @{
 */

/** Largest image we decode, in pixels (a decompression bomb guard): 64 megapixels. */
#define IMAGE_MAX_PIXELS (64L * 1024 * 1024)
/** Longest side we decode: resampling weights grow with the shrink factor. */
#define IMAGE_MAX_SIDE 65535
/** Most channels a picture gives a model: 3 (RGB); a grey model takes 1. */
#define IMAGE_MAX_CHANNELS 3

/** An 8-bit image of 1 (grey) or 3 (RGB) channels, rows top to bottom, channels interleaved. */
typedef struct {
    int width;             /**< columns */
    int height;            /**< rows */
    int channels;          /**< C: 1 grey, 3 R, G, B */
    unsigned char *pixels; /**< width·height·channels bytes */
} Image;

/** How to turn a picture into the model's input. */
typedef struct {
    const char *name;   /**< "hf", "timm", "torchvision" or "fashion-mnist" */
    int resize_short;   /**< shorter side after resizing; 0: resize straight to crop×crop */
    int crop;           /**< side of the centre crop = the model's S */
    ImageFilter filter; /**< resampling filter */
    int channels;       /**< C of the result: 1 grey (convert("L") first), 3 RGB */
    float mean[IMAGE_MAX_CHANNELS]; /**< per-channel mean subtracted after /255 (channels used) */
    float std[IMAGE_MAX_CHANNELS];  /**< per-channel standard deviation divided by */
} Preprocess;

/**
 * @brief Decode an image file into 8-bit RGB (3 channels).
 * @return VIT_ERR_INPUT naming @p path for a missing, empty, undecodable,
 *         zero-sized or oversized (more than IMAGE_MAX_PIXELS, or a side
 *         longer than IMAGE_MAX_SIDE) image.
 */
VitStatus image_load(Image *img, const char *path, VitError *err);
/** @brief Decode an image from memory (same checks; @p label names it in messages). */
VitStatus image_load_memory(Image *img, const unsigned char *data, size_t size,
                            const char *label, VitError *err);
/** @brief A new w×h image of @p channels (1 or 3), black. */
Image image_new(int width, int height, int channels);
/** @brief Free the pixels and zero the struct. */
void image_free(Image *img);

/**
 * @brief Grey pixels, exactly as Pillow's Image.convert("L") makes them.
 *
 * ITU-R 601-2 luma, L = R·299/1000 + G·587/1000 + B·114/1000, which Pillow
 * computes in 16-bit fixed point, rounded: L = (19595 R + 38470 G + 7471 B +
 * 32768) >> 16 (the three weights are 299, 587 and 114 thousandths of 65536,
 * rounded, and sum to 65536, so white stays 255). That is the integer nearest
 * to the exact value, except within 0.001 of a half (x.499 to x.501), where
 * it may go either way: (0, 0, 250) is exactly 28.5 and becomes 28.
 * A grey image is copied as it is.
 */
Image image_to_grey(const Image *src);
/** @brief Resize to w×h exactly as Pillow's Image.resize((w, h), filter), every channel alike. */
Image image_resize(const Image *src, int width, int height, ImageFilter filter);
/** @brief Copy the w×h rectangle whose top-left corner is (left, top); must lie inside. */
Image image_crop(const Image *src, int left, int top, int width, int height);

/**
 * @brief The settings of a preset for a model of side @p image_size.
 *
 * hf, timm and torchvision give 3 channels (RGB), fashion-mnist 1 (grey);
 * image_preprocess_set_channels() fits them to the model.
 * @return VIT_ERR_USAGE for an unknown name (the message lists the known ones).
 */
VitStatus image_preprocess_preset(Preprocess *p, const char *name, int image_size, VitError *err);

/**
 * @brief Fit a preset to a model of @p channels: RGB pictures for 3, grey for 1.
 *
 * Going from 3 channels to 1, the mean and std become their luma-weighted
 * sums (0.299, 0.587, 0.114, as the grey pixels are made): for hf and timm
 * their one value, 0.5. Going from 1 to 3, the one value serves every channel.
 * @return VIT_ERR_INPUT for a model of neither 1 nor 3 channels (pictures have no other).
 */
VitStatus image_preprocess_set_channels(Preprocess *p, int channels, VitError *err);

/**
 * @brief Parse "0.5" or "0.485,0.456,0.406": one value for every channel, or one per channel.
 * @param[out] out      @p channels values
 * @param[in] channels  C
 * @param[in] text      the numbers, separated by commas
 * @param[in] what      names the text in messages, e.g. "--mean"
 * @param[in] status    the status of a refusal: VIT_ERR_USAGE for a flag,
 *                      VIT_ERR_INPUT for a file's metadata
 * @param[in] positive  every value must be above 0 (a standard deviation)
 * @param[out] err      the message, naming @p what and quoting @p text
 * @return VIT_OK, or @p status for anything but 1 or C finite numbers (positive when asked)
 */
VitStatus image_preprocess_parse_values(float *out, int channels, const char *text, const char *what,
                                  VitStatus status, bool positive, VitError *err);

/**
 * @brief The preprocessing of a model, its file's own word first.
 *
 * The preset is @p preset if given, else the one the weights' `__metadata__`
 * names under "preprocess", else @p fallback; it is fitted to the model's
 * @p channels (image_preprocess_set_channels()); then the file's "mean" and "std"
 * metadata, when present (one value, or one per channel), replace the
 * preset's. Flags the user gave on top (--mean, --std) are the caller's to
 * apply after this.
 * @param[out] p         the preprocessing
 * @param[in] preset     the preset asked for, or NULL
 * @param[in] fallback   the preset when neither @p preset nor the file names one
 * @param[in] weights    the model's file, whose metadata is read (NULL or
 *                       a zeroed SafeTensors: none)
 * @param[in] image_size S, the model's input side
 * @param[in] channels   C, the model's input channels (1 or 3)
 * @param[out] err       the message on failure
 * @return VIT_ERR_USAGE for an unknown @p preset (or @p fallback); VIT_ERR_INPUT,
 *         naming the file and the key, for metadata that names an unknown preset
 *         or holds a malformed mean or std; VIT_ERR_INPUT, naming the file, for a
 *         model whose channels are neither 1 nor 3.
 */
VitStatus image_preprocess_for_model(Preprocess *p, const char *preset, const char *fallback,
                               const SafeTensors *weights, int image_size, int channels,
                               VitError *err);

/**
 * @brief Convert, resize, crop and normalise one image into (C, S, S) floats.
 *
 * The pixels are first given p->channels (grey by image_to_grey(), or a grey
 * image repeated as R, G and B), then resized and cropped, then normalised.
 * @param[out] out  C·S·S floats, channel-major (C, H, W), C = p->channels, S = p->crop
 */
void image_preprocess(float *out, const Image *img, const Preprocess *p);

/**
 * @brief Pixels to normalised floats: \f$ (v/255 - \mu_c)/\sigma_c \f$.
 * @param[out] out   (C, H, W), C = img->channels
 * @param[in] mean, std  C values each
 */
void image_to_chw(float *out, const Image *img, const float *mean, const float *std);

/** @} */
#endif
