/**
 * @file fuzz_image.c
 * @brief libFuzzer target: arbitrary bytes as an image file.
 *
 * Decodes the bytes (stb_image behind our size and truncation checks), and
 * when they decode, runs every preprocessing preset on the result. Run with
 * `make fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>

#include "io/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Image img;
    VitError err;
    if (image_load_memory(&img, data, size, "fuzz.img", &err) != VIT_OK) return 0;
    static const char *const presets[] = {"hf", "timm", "torchvision", "fashion-mnist"};
    float *out = malloc(sizeof(float) * 3 * 32 * 32); // 3 channels, or 1 (grey)
    for (int i = 0; i < 4; i++) {
        Preprocess p;
        if (image_preprocess_preset(&p, presets[i], 32, &err) == VIT_OK) image_preprocess(out, &img, &p);
    }
    free(out);
    image_free(&img);
    return 0;
}
