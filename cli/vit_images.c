/**
 * @file vit_images.c
 * @brief Images on the command line: the preprocessing flags shared by
 *        `vit classify`, `vit trace`, `vit grad` and `vit step`, and turning
 *        image files into a batch.
 *
 * The recipe for each image: decode (lib/io/image.h) → grey (Pillow's
 * convert("L")) when the model takes 1 channel → resize and crop as the
 * chosen preset says → normalise with the mean and std (the flags', else the
 * weights' own metadata, else the preset's) → one (C, S, S) slice of the
 * (B, C, S, S) batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image.h"
#include "vit_cli.h"

// The preset that matches how the weights were trained, by their naming convention
// (a grey model: the project's own Fashion-MNIST one), when their metadata names none.
static const char *default_preset(const Vit *vit) {
    if (vit->config.channels == 1) return "fashion-mnist";
    if (!strcmp(vit->source, "hf")) return "hf";
    if (!strcmp(vit->source, "torchvision")) return "torchvision";
    return "timm"; // timm names, and our own random weights (written with timm names)
}

/**
 * @brief Resize the model's position embeddings when --img-size asks for another input size.
 * @param[in,out] vit  the model
 * @param[in] a        the parsed image flags
 * @param[out] err     the message on failure
 * @return VIT_OK, or VIT_ERR_USAGE when the size is not a multiple of the patch size.
 */
VitStatus cli_apply_image_size(Vit *vit, const ImageArgs *a, VitError *err) {
    if (a->img_size == 0) return VIT_OK;
    VitStatus s = vit_resize_positions(vit, a->img_size, err);
    if (s != VIT_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        vit_fail(err, s, "--img-size: %s", msg);
    }
    return s;
}

/**
 * @brief The preprocessing the flags ask for, for this model.
 *
 * The preset is --preprocess, else the one the weights' metadata names
 * ("preprocess"), else the one of the weights' naming convention; it is
 * fitted to the model's channels (grey for 1, RGB for 3); the weights'
 * "mean" and "std" metadata replace the preset's, and --mean / --std replace
 * those (one value, or one per channel).
 * @param[out] p    the preprocessing
 * @param[in] a     the parsed image flags
 * @param[in] vit   the model (its input size and channels, its file's
 *                  metadata, its convention for the default preset)
 * @param[out] err  the message on failure
 * @return VIT_OK; VIT_ERR_USAGE for an unknown preset or a malformed --mean/--std;
 *         VIT_ERR_INPUT for malformed metadata (naming the file and key) or a
 *         model of neither 1 nor 3 channels.
 */
VitStatus cli_preprocess(Preprocess *p, const ImageArgs *a, const Vit *vit, VitError *err) {
    const VitConfig *c = &vit->config;
    VitStatus s = image_preprocess_for_model(p, a->preset, default_preset(vit), &vit->file,
                                       c->image_size, c->channels, err);
    if (s == VIT_ERR_USAGE) { // the preset the flag named: say which flag
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return vit_fail(err, s, "--preprocess: %s", msg);
    }
    if (s == VIT_OK && a->mean)
        s = image_preprocess_parse_values(p->mean, p->channels, a->mean, "--mean", VIT_ERR_USAGE, false,
                                    err);
    if (s == VIT_OK && a->std)
        s = image_preprocess_parse_values(p->std, p->channels, a->std, "--std", VIT_ERR_USAGE, true, err);
    return s;
}

/**
 * @brief Decode and preprocess image files into one batch.
 * @param[out] batch  (n, C, S, S), C = p->channels, owned by the caller
 * @param[in] paths   the image files
 * @param[in] n       how many (1 … 256)
 * @param[in] p       the preprocessing (see cli_preprocess())
 * @param[out] err    the message on failure, naming the file
 * @return VIT_OK, or VIT_ERR_INPUT for an image that cannot be read or decoded.
 */
VitStatus cli_load_images(Tensor *batch, const char *const *paths, int n, const Preprocess *p,
                          VitError *err) {
    if (n < 1 || n > MAX_IMAGES)
        return vit_fail(err, VIT_ERR_USAGE, "give between 1 and %d images, not %d", MAX_IMAGES, n);
    const int S = p->crop, C = p->channels;
    *batch = tensor_new(4, n, C, S, S);
    for (int i = 0; i < n; i++) {
        Image img;
        VitStatus s = image_load(&img, paths[i], err);
        if (s != VIT_OK) {
            tensor_free(batch);
            return s;
        }
        image_preprocess(batch->data + (size_t)i * C * S * S, &img, p);
        image_free(&img);
    }
    return VIT_OK;
}
