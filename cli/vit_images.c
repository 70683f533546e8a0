/**
 * @file vit_images.c
 * @brief Images on the command line: the preprocessing flags shared by
 *        `vit classify` and `vit trace`, and turning image files into a batch.
 *
 * The recipe for each image: decode (lib/image.h) → resize and crop as the
 * chosen preset says → normalise with its mean and std → one (3, S, S) slice
 * of the (B, 3, S, S) batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "vit_cli.h"

// The preset that matches how the weights were trained, by their naming convention.
static const char *default_preset(const Vit *vit) {
    if (!strcmp(vit->source, "hf")) return "hf";
    if (!strcmp(vit->source, "torchvision")) return "torchvision";
    return "timm"; // timm names, and our own random weights (written with timm names)
}

// "0.5" or "0.485,0.456,0.406": one value for every channel, or one per channel.
static VitStatus parse_triple(float out[3], const char *text, const char *flag, bool positive,
                              VitError *err) {
    float v[3];
    int n = 0;
    const char *p = text;
    while (n < 3) {
        char part[64];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof part) break;
        memcpy(part, p, len);
        part[len] = '\0';
        VitStatus s = vit_parse_float(&v[n], part, flag, err);
        if (s != VIT_OK) return s;
        if (positive && !(v[n] > 0))
            return vit_fail(err, VIT_ERR_USAGE, "%s: %g must be greater than 0", flag, (double)v[n]);
        n++;
        p += len;
        if (*p != ',') break;
        p++;
    }
    if (*p != '\0' || (n != 1 && n != 3))
        return vit_fail(err, VIT_ERR_USAGE,
                        "%s: expected one number or three separated by commas (R,G,B), got '%s'",
                        flag, text);
    for (int c = 0; c < 3; c++) out[c] = v[n == 1 ? 0 : c];
    return VIT_OK;
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
 * @param[out] p    the preset, with --mean/--std applied
 * @param[in] a     the parsed image flags
 * @param[in] vit   the model (its input size, and its convention for the default preset)
 * @param[out] err  the message on failure
 * @return VIT_OK, or VIT_ERR_USAGE for an unknown preset or a malformed mean/std.
 */
VitStatus cli_preprocess(Preprocess *p, const ImageArgs *a, const Vit *vit, VitError *err) {
    const char *preset = a->preset ? a->preset : default_preset(vit);
    VitStatus s = preprocess_preset(p, preset, vit->config.image_size, err);
    if (s != VIT_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return vit_fail(err, s, "--preprocess: %s", msg);
    }
    if (a->mean && (s = parse_triple(p->mean, a->mean, "--mean", false, err)) != VIT_OK) return s;
    if (a->std && (s = parse_triple(p->std, a->std, "--std", true, err)) != VIT_OK) return s;
    return VIT_OK;
}

/**
 * @brief Decode and preprocess image files into one batch.
 * @param[out] batch  (n, 3, S, S), owned by the caller
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
    const int S = p->crop;
    *batch = tensor_new(4, n, 3, S, S);
    for (int i = 0; i < n; i++) {
        Image img;
        VitStatus s = image_load(&img, paths[i], err);
        if (s != VIT_OK) {
            tensor_free(batch);
            return s;
        }
        image_preprocess(batch->data + (size_t)i * 3 * S * S, &img, p);
        image_free(&img);
    }
    return VIT_OK;
}
