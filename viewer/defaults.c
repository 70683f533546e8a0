/**
 * @file defaults.c
 * @brief The model and picture vitview opens when none is named (see defaults.h).
 */
#include "defaults.h"

#include <stddef.h>
#include <string.h>

WeightsSource viewer_weights_source(bool given, bool random_asked, bool shipped_exists) {
    if (given) return WEIGHTS_GIVEN;
    if (random_asked) return WEIGHTS_RANDOM;
    return shipped_exists ? WEIGHTS_SHIPPED : WEIGHTS_MISSING;
}

const char *viewer_default_image(int channels) {
    return channels == 1 ? VIEWER_GREY_IMAGE : channels == 3 ? VIEWER_RGB_IMAGE : NULL;
}

const char *viewer_default_preset(const char *source, int channels) {
    if (channels == 1) return "fashion-mnist"; // the project's own grey models
    if (source && !strcmp(source, "hf")) return "hf";
    if (source && !strcmp(source, "torchvision")) return "torchvision";
    return "timm"; // timm names, and random weights (saved with timm names)
}
