/**
 * @file test_viewer_defaults.c
 * @brief What vitview opens when nothing is named (viewer/defaults.h): the
 *        trained model or random weights, the picture that suits the model,
 *        the preset; the shipped pictures are there and a grey one reaches the
 *        screen as the file's own pixels.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "../viewer/defaults.h"
#include "../viewer/render_image.h"
#include "io/image.h"
#include "io/labels.h"

static void test_weights_source(void) {
    // given, random asked, trained model there → where the weights come from
    CU_ASSERT_EQUAL(viewer_weights_source(true, false, true), WEIGHTS_GIVEN);
    CU_ASSERT_EQUAL(viewer_weights_source(true, true, false), WEIGHTS_GIVEN);
    CU_ASSERT_EQUAL(viewer_weights_source(false, false, true), WEIGHTS_SHIPPED);
    CU_ASSERT_EQUAL(viewer_weights_source(false, true, true), WEIGHTS_RANDOM);  // --arch, --seed
    CU_ASSERT_EQUAL(viewer_weights_source(false, true, false), WEIGHTS_RANDOM);
    CU_ASSERT_EQUAL(viewer_weights_source(false, false, false), WEIGHTS_MISSING); // said so
}

static void test_image_and_preset_for_the_model(void) {
    CU_ASSERT_STRING_EQUAL(viewer_default_image(1), "images/fashion-mnist/0000-ankle-boot.png");
    CU_ASSERT_STRING_EQUAL(viewer_default_image(3), "images/chelsea.jpg");
    CU_ASSERT_PTR_NULL(viewer_default_image(2)); // the generated picture
    CU_ASSERT_PTR_NULL(viewer_default_image(4));
    CU_ASSERT_STRING_EQUAL(viewer_default_preset("timm", 1), "fashion-mnist");
    CU_ASSERT_STRING_EQUAL(viewer_default_preset("hf", 1), "fashion-mnist");
    CU_ASSERT_STRING_EQUAL(viewer_default_preset("timm", 3), "timm");
    CU_ASSERT_STRING_EQUAL(viewer_default_preset("random", 3), "timm");
    CU_ASSERT_STRING_EQUAL(viewer_default_preset("hf", 3), "hf");
    CU_ASSERT_STRING_EQUAL(viewer_default_preset("torchvision", 3), "torchvision");
}

static void test_shipped_pictures(void) {
    char path[4096];
    VitError err;
    Image img;
    // the grey one: a 28×28 Fashion-MNIST test image, white garment on black
    CU_ASSERT_EQUAL_FATAL(image_load(&img, vit_data_path(path, sizeof path, VIEWER_GREY_IMAGE),
                                     &err), VIT_OK);
    CU_ASSERT(img.width == 28 && img.height == 28);
    const int C = img.channels;
    bool grey = true;
    for (int i = 0; i < 28 * 28 && C == 3; i++)
        grey &= img.pixels[3 * i] == img.pixels[3 * i + 1] &&
                img.pixels[3 * i] == img.pixels[3 * i + 2];
    CU_ASSERT(grey);
    CU_ASSERT_EQUAL(img.pixels[0], 0); // the corners are background
    CU_ASSERT_EQUAL(img.pixels[(28 * 28 - 1) * C], 0);
    image_free(&img);
    // the photo for RGB models
    CU_ASSERT_EQUAL(access(vit_data_path(path, sizeof path, VIEWER_RGB_IMAGE), R_OK), 0);
}

// The grey picture the viewer draws for the model's input is the file's own
// pixels, up to the contrast stretch: preprocessed with the fashion-mnist
// preset (grey, mean 0.2860, std 0.3530), then image_to_rgb() of that tensor,
// against the stretch computed here from the file's bytes.
static void test_grey_input_is_drawn_as_the_file(void) {
    char path[4096];
    VitError err;
    Image img;
    CU_ASSERT_EQUAL_FATAL(image_load(&img, vit_data_path(path, sizeof path, VIEWER_GREY_IMAGE),
                                     &err), VIT_OK);
    Preprocess pre;
    CU_ASSERT_EQUAL_FATAL(image_preprocess_for_model(&pre, NULL, viewer_default_preset("timm", 1),
                                               NULL, 28, 1, &err), VIT_OK);
    CU_ASSERT_EQUAL(pre.channels, 1);
    float chw[28 * 28];
    image_preprocess(chw, &img, &pre);
    Rgb px[28 * 28];
    image_to_rgb(px, chw, 1, 28);
    int lo = 255, hi = 0;
    for (int i = 0; i < 28 * 28; i++) {
        const int v = img.pixels[i * img.channels];
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    CU_ASSERT_FATAL(hi > lo);
    int worst = 0;
    for (int i = 0; i < 28 * 28; i++) {
        const double want = (img.pixels[i * img.channels] - lo) * 255.0 / (hi - lo);
        const int d = abs(px[i].r - (int)(want + 0.5));
        worst = d > worst ? d : worst;
        CU_ASSERT(px[i].r == px[i].g && px[i].g == px[i].b); // grey
    }
    if (worst > 1) printf("\n    grey picture: off by %d levels from the file's pixels\n", worst);
    CU_ASSERT(worst <= 1);
    image_free(&img);
}

CU_TestInfo tests_viewer_defaults[] = {
    {"weights: given, trained, random", test_weights_source},
    {"picture and preset for the model", test_image_and_preset_for_the_model},
    {"shipped pictures", test_shipped_pictures},
    {"grey input drawn as the file", test_grey_input_is_drawn_as_the_file},
    CU_TEST_INFO_NULL,
};
