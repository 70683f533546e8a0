/**
 * @file defaults.h
 * @brief What vitview opens when the command line names nothing: the
 *        project's trained Fashion-MNIST model and one of its test images.
 *
 * Without --weights the viewer opens the model the project trained itself,
 * data/models/vit-fashion.safetensors (`vit train` writes it; `make run`
 * opens it), on a Fashion-MNIST test image it has never seen. When that file
 * is not there, it builds random weights instead and says so. Asking for
 * random weights (--arch, --seed) gets them even when the model is there.
 * Without IMAGE the picture suits the model: a grey Fashion-MNIST image for a
 * model of one channel, the bundled photo for an RGB one, the generated
 * picture for anything else or when the file is missing.
 *
 * These are choices, not file access: main.c looks at the files and hands
 * the answers in, so the tests check every case without touching data/.
 */
#ifndef VIEWER_DEFAULTS_H
#define VIEWER_DEFAULTS_H

#include <stdbool.h>

/** @defgroup viewer_defaults Viewer defaults
 *  @brief The model and the picture vitview opens when none is named.
 *  @{
 */

/** The trained model opened without --weights, under data/. */
#define VIEWER_SHIPPED_MODEL "models/vit-fashion.safetensors"
/** The picture for a grey model, under data/: Fashion-MNIST test image 0, an ankle boot. */
#define VIEWER_GREY_IMAGE "images/fashion-mnist/0000-ankle-boot.png"
/** The picture for a model of three channels (ImageNet-style), under data/. */
#define VIEWER_RGB_IMAGE "images/chelsea.jpg"

/** Where the weights come from. */
typedef enum {
    WEIGHTS_GIVEN,   /**< --weights FILE */
    WEIGHTS_SHIPPED, /**< no --weights: the trained model, VIEWER_SHIPPED_MODEL */
    WEIGHTS_RANDOM,  /**< random weights, asked for with --arch or --seed */
    WEIGHTS_MISSING, /**< random weights, because the trained model is not there (said so) */
} WeightsSource;

/**
 * @brief Which weights to open.
 * @param[in] given           --weights was on the command line
 * @param[in] random_asked    --arch or --seed was: random weights are wanted
 * @param[in] shipped_exists  VIEWER_SHIPPED_MODEL is there and readable
 */
WeightsSource viewer_weights_source(bool given, bool random_asked, bool shipped_exists);

/**
 * @brief The picture for a model of @p channels when no IMAGE is given.
 * @return VIEWER_GREY_IMAGE for 1, VIEWER_RGB_IMAGE for 3 (relative to data/),
 *         NULL for any other: the generated picture
 */
const char *viewer_default_image(int channels);

/**
 * @brief The preprocessing preset for weights whose metadata names none, as
 *        `vit classify` picks it: fashion-mnist for a model of one channel,
 *        else the one of the naming convention.
 * @param[in] source    the weights' convention: "timm", "hf" or "torchvision"
 *                      (Vit::source; random weights use timm's names)
 * @param[in] channels  C, the model's input channels
 */
const char *viewer_default_preset(const char *source, int channels);

/** @} */
#endif
