/**
 * @file pictures.h
 * @brief The pictures the viewer can show without leaving: the ones shipped
 *        with the project, and any of Fashion-MNIST's 10,000 test images.
 *
 * A picture becomes the model's input as `vit classify` makes it (the same
 * Preprocess); a test image, already 28×28 grey, goes through the same
 * function as a decoded file. Nothing here includes curses.
 */
#ifndef VIEWER_PICTURES_H
#define VIEWER_PICTURES_H

#include <stdbool.h>
#include <stddef.h>

#include "train/dataset.h"
#include "io/image.h"
#include "base/tensor.h"
#include "model/vit.h"

/** @defgroup viewer_pictures Viewer pictures
 *  @brief The shipped pictures, the test images, and how each becomes an input.
 *  @{
 */

/** Where the viewer's pictures come from. */
typedef struct {
    Preprocess pre;      /**< picture → (1, C, S, S), as `vit classify` */
    int image_size;      /**< S */
    char **paths;        /**< the shipped pictures for the model, sorted by name (owned) */
    int count;           /**< how many */
    int current;         /**< the one shown, or -1 (a file named on the command line, a test
                              image, the generated picture) */
    int test_index;      /**< the test image shown, or -1 */
    const char *test_dir;/**< the dataset's folder (NULL: FASHION_MNIST_DIR) */
    char shown[1024];    /**< the file the input came from, "" for a test image (an input an
                              export must not overwrite) */
    Dataset test;        /**< Fashion-MNIST's test split, read on first use */
} Pictures;

/**
 * @brief The preprocessing for @p vit, and the list of shipped pictures: the
 *        PNGs in data/images/fashion-mnist/ for a model of one channel, the
 *        pictures in data/images/ for an RGB one.
 * @param[in] preset  --preprocess, or NULL for the one the model's metadata names
 * @return VIT_ERR_USAGE ("--preprocess: …") for an unknown preset; VIT_ERR_INPUT as
 *         image_preprocess_for_model()
 */
VitStatus pictures_init(Pictures *p, const Vit *vit, const char *preset, VitError *err);
/** @brief Free what @p p owns. */
void pictures_free(Pictures *p);

/**
 * @brief Decode @p path and preprocess it into @p input, (1, C, S, S), newly allocated.
 * @param[out] desc  e.g. "0001-pullover.png 28×28 (fashion-mnist preprocessing)"
 * @return VIT_ERR_INPUT naming the file when it cannot be read
 */
VitStatus pictures_load_file(Pictures *p, const char *path, Tensor *input, char *desc,
                             size_t size, VitError *err);
/**
 * @brief The shipped picture @p delta places after the current one (wrapping),
 *        or the first one when none of them is shown.
 * @return VIT_ERR_INPUT when there are none, or the file cannot be read
 */
VitStatus pictures_step(Pictures *p, int delta, Tensor *input, char *desc, size_t size,
                        VitError *err);
/**
 * @brief Fashion-MNIST's test image @p index (0–9,999), read from the dataset
 *        package's files on first use.
 * @param[out] desc  e.g. "test image 123 (label: Shirt)"
 * @return VIT_ERR_INPUT when the dataset is not installed (the message says how
 *         to install it) or @p index is out of range
 */
VitStatus pictures_load_test(Pictures *p, int index, Tensor *input, char *desc, size_t size,
                             VitError *err);
/**
 * @brief Paint patch @p patch of @p input (1, C, S, S) black, as the
 *        preprocessing would turn a black picture: (0 − mean) / std per channel.
 */
void pictures_mask_patch(const Pictures *p, Tensor *input, int patch_size, int patch);
/**
 * @brief Paint pixel (@p y, @p x) of @p input (1, C, S, S) white (255 in every
 *        channel) or black (0), normalised as the preprocessing would.
 */
void pictures_paint_pixel(const Pictures *p, Tensor *input, int y, int x, bool white);
/** @brief Is pixel (@p y, @p x) of @p input light: its channels' mean above 127.5 of 255? */
bool pictures_pixel_light(const Pictures *p, const Tensor *input, int y, int x);

/** @} */
#endif
