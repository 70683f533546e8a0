/**
 * @file test_image.c
 * @brief Decoding, Pillow-exact resizing and the three preprocessing presets,
 *        against goldens computed by Pillow and torchvision (tools/gen_golden_image.py).
 *
 * Tolerances: resized pixels are integers and must match Pillow exactly; the
 * normalised floats may differ from torchvision's by float32 rounding of
 * (v/255 − μ)/σ, so 1e-5 absolute. The 224-pixel cases pin 64 sampled
 * elements and the per-channel sums: a sum of 50 176 values each within one
 * float32 ulp (~1.2e-7) of the reference, so 1e-2 absolute.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "image.h"

static const char *const IMAGES[] = {"wide", "tall", "square32", "grey", "rgba", "strip"};
enum { N_IMAGES = sizeof IMAGES / sizeof IMAGES[0] };


// One tensor of tests/golden/image.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("image.safetensors", name); }

static Image load_test_image(const char *key) {
    char path[512];
    snprintf(path, sizeof path, "%s/data/img_%s.png", VIT_TEST_DIR, key);
    Image img;
    VitError err;
    if (image_load(&img, path, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL_FATAL("test image did not load");
    }
    return img;
}

// Pixels (H, W, 3) as floats, to compare with a golden.
static Tensor pixels(const Image *img) {
    Tensor t = tensor_new(3, img->height, img->width, 3);
    for (size_t i = 0; i < t.numel; i++) t.data[i] = img->rgb[i];
    return t;
}

static void test_decodes_png_grey_and_rgba_to_rgb(void) {
    const char *small[] = {"tall", "square32", "grey", "rgba"}; // the ones pinned whole
    for (int i = 0; i < 4; i++) {
        Image img = load_test_image(small[i]);
        char name[64];
        snprintf(name, sizeof name, "%s.rgb", small[i]);
        Tensor want = golden(name), got = pixels(&img);
        assert_tensor_close(&got, &want, 0, 0, name);
        tensor_free(&want), tensor_free(&got);
        image_free(&img);
    }
}

// The fuzzer's seed images: one picture saved by Pillow as PNG, BMP and PPM,
// decoded by stb; lossless formats must give identical pixels.
static void test_lossless_formats_agree(void) {
    const char *files[] = {"rgb.png", "rgb.bmp", "rgb.ppm"};
    Image first = {0};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/fuzz/seeds/image/%s", VIT_TEST_DIR, files[i]);
        Image img;
        VitError err;
        if (image_load(&img, path, &err) != VIT_OK) {
            fprintf(stderr, "\n    %s\n", err.msg);
            CU_FAIL("seed image did not load");
            continue;
        }
        CU_ASSERT_EQUAL(img.width, 10);
        CU_ASSERT_EQUAL(img.height, 12);
        if (i == 0) first = img;
        else {
            CU_ASSERT_EQUAL(memcmp(img.rgb, first.rgb, 10 * 12 * 3), 0);
            image_free(&img);
        }
    }
    image_free(&first);
}

static void test_resize_matches_pillow_exactly(void) {
    Image wide = load_test_image("wide");
    const struct {
        int w, h;
        ImageFilter f;
        const char *name;
    } cases[] = {
        {97, 61, FILTER_BILINEAR, "resize.97x61.bilinear"},
        {61, 45, FILTER_BICUBIC, "resize.61x45.bicubic"},
        {120, 90, FILTER_BICUBIC, "resize.120x90.bicubic"},
        {160, 37, FILTER_BILINEAR, "resize.160x37.bilinear"},
        {23, 120, FILTER_BICUBIC, "resize.23x120.bicubic"},
        {13, 7, FILTER_BILINEAR, "resize.13x7.bilinear"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Image r = image_resize(&wide, cases[i].w, cases[i].h, cases[i].f);
        Tensor got = pixels(&r), want = golden(cases[i].name);
        assert_tensor_close(&got, &want, 0, 0, cases[i].name);
        tensor_free(&got), tensor_free(&want);
        image_free(&r);
    }
    image_free(&wide);
}

static void check_preset_small(const char *preset) {
    for (int i = 0; i < N_IMAGES; i++) {
        Image img = load_test_image(IMAGES[i]);
        Preprocess p;
        VitError err;
        CU_ASSERT_EQUAL_FATAL(preprocess_preset(&p, preset, 32, &err), VIT_OK);
        Tensor got = tensor_new(3, 3, 32, 32);
        image_preprocess(got.data, &img, &p);
        char name[64];
        snprintf(name, sizeof name, "%s.%s.32", IMAGES[i], preset);
        Tensor want = golden(name);
        assert_tensor_close(&got, &want, 1e-5f, 0, name);
        tensor_free(&got), tensor_free(&want);
        image_free(&img);
    }
}

static void check_preset_224(const char *preset) {
    for (int i = 0; i < N_IMAGES; i++) {
        Image img = load_test_image(IMAGES[i]);
        Preprocess p;
        VitError err;
        CU_ASSERT_EQUAL_FATAL(preprocess_preset(&p, preset, 224, &err), VIT_OK);
        Tensor got = tensor_new(3, 3, 224, 224);
        image_preprocess(got.data, &img, &p);
        char name[96];
        snprintf(name, sizeof name, "%s.%s.224.sample_idx", IMAGES[i], preset);
        Tensor idx = golden(name);
        snprintf(name, sizeof name, "%s.%s.224.sample", IMAGES[i], preset);
        Tensor want = golden(name), sample = tensor_new(1, (int)idx.numel);
        for (size_t k = 0; k < idx.numel; k++) sample.data[k] = got.data[(size_t)idx.data[k]];
        assert_tensor_close(&sample, &want, 1e-5f, 0, name);
        snprintf(name, sizeof name, "%s.%s.224.channel_sum", IMAGES[i], preset);
        Tensor want_sum = golden(name), sum = tensor_new(1, 3);
        for (int c = 0; c < 3; c++) {
            double s = 0;
            for (size_t k = 0; k < 224 * 224; k++) s += got.data[(size_t)c * 224 * 224 + k];
            sum.data[c] = (float)s;
        }
        assert_tensor_close(&sum, &want_sum, 1e-2f, 0, name);
        tensor_free(&got), tensor_free(&idx), tensor_free(&want), tensor_free(&sample);
        tensor_free(&want_sum), tensor_free(&sum);
        image_free(&img);
    }
}

static void test_preset_hf(void) { check_preset_small("hf"), check_preset_224("hf"); }
static void test_preset_timm(void) { check_preset_small("timm"), check_preset_224("timm"); }
static void test_preset_torchvision(void) {
    check_preset_small("torchvision"), check_preset_224("torchvision");
}

static void test_square_image_is_not_resampled(void) {
    Image img = load_test_image("square32");
    Preprocess p;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(preprocess_preset(&p, "timm", 32, &err), VIT_OK);
    Tensor got = tensor_new(3, 3, 32, 32);
    image_preprocess(got.data, &img, &p);
    // pixel (0,0) red channel: (v/255 - 0.5)/0.5 of the stored value, untouched
    CU_ASSERT_DOUBLE_EQUAL(got.data[0], (img.rgb[0] / 255.0f - 0.5f) / 0.5f, 1e-7);
    tensor_free(&got);
    image_free(&img);
}

static void test_presets_settings(void) {
    Preprocess p;
    VitError err;
    CU_ASSERT_EQUAL(preprocess_preset(&p, "timm", 224, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.resize_short, 248); // floor(224 / 0.9)
    CU_ASSERT_EQUAL(p.filter, FILTER_BICUBIC);
    CU_ASSERT_EQUAL(preprocess_preset(&p, "torchvision", 224, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.resize_short, 256);
    CU_ASSERT_DOUBLE_EQUAL(p.mean[0], 0.485, 1e-7);
    CU_ASSERT_EQUAL(preprocess_preset(&p, "hf", 224, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.resize_short, 0);
    CU_ASSERT_EQUAL(preprocess_preset(&p, "caffe", 224, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown preprocessing preset 'caffe'"));
}

/* ------------------------------------------------------------ bad input */

static void expect_load_error(const unsigned char *data, size_t size, const char *needle) {
    Image img;
    VitError err = {{0}};
    CU_ASSERT_EQUAL(image_load_memory(&img, data, size, "x.png", &err), VIT_ERR_INPUT);
    bool ok = strstr(err.msg, "x.png") && strstr(err.msg, needle);
    if (!ok) fprintf(stderr, "\n    message was: %s\n", err.msg);
    CU_ASSERT(ok);
    CU_ASSERT_PTR_NULL(img.rgb);
}

static void test_refuses_bad_images(void) {
    expect_load_error((const unsigned char *)"", 0, "empty");
    expect_load_error((const unsigned char *)"hello, not an image", 19, "not an image");
    // a PPM header claiming 20000×20000 pixels (400 M): refused before any allocation
    const char *bomb = "P6\n20000 20000\n255\n";
    expect_load_error((const unsigned char *)bomb, strlen(bomb), "larger than");
    // a strip of 2×100000: few pixels, but resampling weights grow with the longest side
    const char *strip = "P6\n2 100000\n255\n";
    expect_load_error((const unsigned char *)strip, strlen(strip), "side longer than 65535");
    // a truncated PPM: the header is fine, the pixels are missing
    const char *cut = "P6\n4 4\n255\nabc";
    expect_load_error((const unsigned char *)cut, strlen(cut), "cannot decode");
}

// Inputs the fuzzer found that crash stb_image 2.27 (out-of-bounds writes in
// its JPEG Huffman table builder and its 16-bit PGM conversion, an int
// overflow in its PNM header parser, an assertion on a corrupt Huffman code);
// the loader must refuse them cleanly.
static void test_refuses_fuzzer_found_files(void) {
    const struct {
        const char *file, *needle;
    } cases[] = {
        {"jpeg_dht_overflow_1.jpg", "corrupt JPEG Huffman table"},
        {"jpeg_dht_overflow_2.jpg", "corrupt JPEG Huffman table"},
        {"pgm_16bit_overflow.pgm", "16-bit PPM/PGM"},
        {"ppm_header_overflow.ppm", "malformed PPM/PGM header"},
        {"jpeg_bad_huffman_code.jpg", "cannot decode image"}, // trips an assert in debug stb
        {"bmp_truncated_bomb.bmp", "pixel data is truncated"}, // 79 bytes claiming 65 MP
        {"png_empty_idat_unknown_chunk.png", "PNG chunk not known"}, // raw bytes in stb's reason
        {"jpeg_bit_reader_underflow.jpg", "cannot decode image"}, // a shift by 33 inside stb
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/data/bad/%s", VIT_TEST_DIR, cases[i].file);
        Image img;
        VitError err;
        CU_ASSERT_EQUAL(image_load(&img, path, &err), VIT_ERR_INPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].needle));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].file));
        for (const char *c = err.msg; *c; c++) // only printable text reaches the terminal
            if ((unsigned char)*c < 0x20) CU_FAIL("control character in the message");
    }
}

static void test_refuses_missing_file_and_directory(void) {
    Image img;
    VitError err;
    CU_ASSERT_EQUAL(image_load(&img, "/nonexistent/cat.png", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent/cat.png: cannot open"));
    CU_ASSERT_EQUAL(image_load(&img, VIT_TEST_DIR, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is a directory"));
}

CU_TestInfo tests_image[] = {
    {"decodes PNG, grey and RGBA to RGB", test_decodes_png_grey_and_rgba_to_rgb},
    {"PNG, BMP and PPM give the same pixels", test_lossless_formats_agree},
    {"resize matches Pillow exactly", test_resize_matches_pillow_exactly},
    {"preset hf matches PIL", test_preset_hf},
    {"preset timm matches torchvision", test_preset_timm},
    {"preset torchvision matches torchvision", test_preset_torchvision},
    {"square image is not resampled", test_square_image_is_not_resampled},
    {"preset settings", test_presets_settings},
    {"refuses bad images", test_refuses_bad_images},
    {"refuses fuzzer-found files", test_refuses_fuzzer_found_files},
    {"refuses missing file and directory", test_refuses_missing_file_and_directory},
    CU_TEST_INFO_NULL,
};
