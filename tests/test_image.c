/**
 * @file test_image.c
 * @brief Decoding, Pillow-exact grey conversion and resizing, the preprocessing
 *        presets and a model file's own preprocessing, against goldens computed
 *        by Pillow and torchvision (tools/gen_golden_image.py, and values pinned
 *        here with the Python that gave them).
 *
 * Tolerances: resized pixels are integers and must match Pillow exactly; the
 * normalised floats may differ from torchvision's by float32 rounding of
 * (v/255 − μ)/σ, so 1e-5 absolute. The 224-pixel cases pin 64 sampled
 * elements and the per-channel sums: a sum of 50 176 values each within one
 * float32 ulp (~1.2e-7) of the reference, so 1e-2 absolute.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/image.h"
#include "io/safetensors.h"

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
    for (size_t i = 0; i < t.numel; i++) t.data[i] = img->pixels[i];
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
            CU_ASSERT_EQUAL(memcmp(img.pixels, first.pixels, 10 * 12 * 3), 0);
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
        CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&p, preset, 32, &err), VIT_OK);
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
        CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&p, preset, 224, &err), VIT_OK);
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
    CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&p, "timm", 32, &err), VIT_OK);
    Tensor got = tensor_new(3, 3, 32, 32);
    image_preprocess(got.data, &img, &p);
    // pixel (0,0) red channel: (v/255 - 0.5)/0.5 of the stored value, untouched
    CU_ASSERT_DOUBLE_EQUAL(got.data[0], (img.pixels[0] / 255.0f - 0.5f) / 0.5f, 1e-7);
    tensor_free(&got);
    image_free(&img);
}

static void test_presets_settings(void) {
    Preprocess p;
    VitError err;
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "timm", 224, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.resize_short, 248); // floor(224 / 0.9)
    CU_ASSERT_EQUAL(p.filter, FILTER_BICUBIC);
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "torchvision", 224, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.resize_short, 256);
    CU_ASSERT_DOUBLE_EQUAL(p.mean[0], 0.485, 1e-7);
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "hf", 224, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.resize_short, 0);
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "caffe", 224, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown preprocessing preset 'caffe'"));
}

/* ------------------------------------------------------------------- grey */

// One pixel through image_to_grey().
static int grey_of(int r, int g, int b) {
    Image rgb = image_new(1, 1, 3);
    rgb.pixels[0] = (unsigned char)r, rgb.pixels[1] = (unsigned char)g, rgb.pixels[2] = (unsigned char)b;
    Image grey = image_to_grey(&rgb);
    CU_ASSERT_EQUAL(grey.channels, 1);
    const int v = grey.pixels[0];
    image_free(&rgb), image_free(&grey);
    return v;
}

// Pillow's convert("L"): L = R·299/1000 + G·587/1000 + B·114/1000 rounded to
// the nearest integer, as the formula gives it, for every one of the 2^24
// colours; within 0.001 of a half (x.499 to x.501) Pillow's fixed-point
// rounding may go either way, and there the values Pillow itself gives are
// pinned (Pillow 9.4: Image.new("RGB", (1, 1), c).convert("L").getpixel((0, 0))).
static void test_grey_is_pillows_convert_L(void) {
    const struct {
        int r, g, b, L;
    } pillow[] = {
        {255, 255, 255, 255}, {255, 0, 0, 76}, {0, 255, 0, 150}, {0, 0, 255, 29},
        {128, 64, 32, 79},    {10, 200, 30, 124}, {1, 1, 1, 1},  {100, 150, 200, 141},
        {37, 201, 99, 140},
        // exactly x.5: 28.5 and 21.5 go down, as Pillow's 16-bit weights take them
        {0, 0, 250, 28},      {0, 4, 168, 21},  {0, 8, 86, 14},  {0, 14, 213, 32},
    };
    for (size_t i = 0; i < sizeof pillow / sizeof pillow[0]; i++) {
        const int got = grey_of(pillow[i].r, pillow[i].g, pillow[i].b);
        if (got != pillow[i].L)
            fprintf(stderr, "\n    grey of (%d, %d, %d) is %d, Pillow's is %d\n", pillow[i].r,
                    pillow[i].g, pillow[i].b, got, pillow[i].L);
        CU_ASSERT_EQUAL(got, pillow[i].L);
    }
    // every colour, one image of 4096 × 4096 pixels
    Image all = image_new(4096, 4096, 3);
    for (long i = 0; i < 4096L * 4096; i++)
        all.pixels[3 * i] = (unsigned char)(i >> 16), all.pixels[3 * i + 1] = (unsigned char)(i >> 8),
        all.pixels[3 * i + 2] = (unsigned char)i;
    Image grey = image_to_grey(&all);
    long wrong = 0, near_half = 0;
    for (long i = 0; i < 4096L * 4096; i++) {
        const long exact = 299L * (i >> 16) + 587L * ((i >> 8) & 255) + 114L * (i & 255); // ×1000
        const long rem = exact % 1000, L = grey.pixels[i];
        if (rem >= 499 && rem <= 501) { // a near-tie: either neighbour
            near_half++;
            wrong += L != exact / 1000 && L != exact / 1000 + 1;
        } else {
            wrong += L != (exact + 500) / 1000;
        }
    }
    if (wrong) fprintf(stderr, "\n    %ld of 16777216 colours are not the formula's grey\n", wrong);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(near_half > 0 && near_half < 60000); // the exceptions are few
    image_free(&all), image_free(&grey);
    // a grey image is copied as it is
    Image g = image_new(3, 2, 1);
    for (int i = 0; i < 6; i++) g.pixels[i] = (unsigned char)(40 * i);
    Image copy = image_to_grey(&g);
    CU_ASSERT_EQUAL(copy.channels, 1);
    CU_ASSERT_EQUAL(memcmp(copy.pixels, g.pixels, 6), 0);
    image_free(&g), image_free(&copy);
}

// The fashion-mnist preset against Pillow and torchvision: for each test image,
// Image.open(f).convert("L"), then Resize(28) (bilinear, antialiased) and
// CenterCrop(28), as uint8. Pinned: the sum of the 784 pixels, their sum
// weighted by position (1 … 784, row-major: a pixel out of place changes it),
// and pixels 0, 393 and 783 (torchvision 0.14, Pillow 9.4).
static void test_preset_fashion_mnist_matches_pillow(void) {
    const struct {
        const char *image;
        long sum, weighted;
        int first, middle, last;
    } want[] = {
        {"wide", 97254, 42972199, 45, 111, 205},     {"tall", 98799, 41972770, 64, 106, 195},
        {"square32", 96999, 43026806, 51, 92, 222},  {"grey", 99737, 39392857, 44, 62, 210},
        {"rgba", 97016, 42936335, 43, 103, 208},     {"strip", 92502, 36224466, 89, 93, 160},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        Image img = load_test_image(want[i].image);
        Preprocess p;
        VitError err;
        CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&p, "fashion-mnist", 28, &err), VIT_OK);
        CU_ASSERT_EQUAL(p.channels, 1);
        p.mean[0] = 0, p.std[0] = 1; // x = v/255: the pixels come back exactly
        float x[28 * 28];
        image_preprocess(x, &img, &p);
        long sum = 0, weighted = 0;
        int v[784];
        for (int k = 0; k < 784; k++) {
            v[k] = (int)lrintf(x[k] * 255.0f);
            sum += v[k], weighted += (long)(k + 1) * v[k];
        }
        if (sum != want[i].sum || weighted != want[i].weighted)
            fprintf(stderr, "\n    %s: sum %ld, weighted %ld; Pillow's %ld, %ld\n", want[i].image,
                    sum, weighted, want[i].sum, want[i].weighted);
        CU_ASSERT_EQUAL(sum, want[i].sum);
        CU_ASSERT_EQUAL(weighted, want[i].weighted);
        CU_ASSERT_EQUAL(v[0], want[i].first);
        CU_ASSERT_EQUAL(v[393], want[i].middle);
        CU_ASSERT_EQUAL(v[783], want[i].last);
        // and normalised with the preset's own mean and std
        CU_ASSERT_EQUAL(image_preprocess_preset(&p, "fashion-mnist", 28, &err), VIT_OK);
        image_preprocess(x, &img, &p);
        CU_ASSERT_DOUBLE_EQUAL(x[393], (want[i].middle / 255.0f - 0.2860f) / 0.3530f, 1e-6);
        image_free(&img);
    }
}

// Grey pixels resized alone are the RGB resampler's (pinned against Pillow
// above) on the same grey repeated in R, G and B: one channel, every preset.
static void test_grey_resizes_as_each_rgb_channel(void) {
    static const char *const presets[] = {"hf", "timm", "torchvision", "fashion-mnist"};
    Image wide = load_test_image("wide"), grey = image_to_grey(&wide), rgb = image_new(160, 120, 3);
    for (int i = 0; i < 160 * 120; i++)
        rgb.pixels[3 * i] = rgb.pixels[3 * i + 1] = rgb.pixels[3 * i + 2] = grey.pixels[i];
    for (int k = 0; k < 4; k++) {
        Preprocess p1, p3;
        VitError err;
        CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&p1, presets[k], 24, &err), VIT_OK);
        p3 = p1;
        CU_ASSERT_EQUAL(image_preprocess_set_channels(&p1, 1, &err), VIT_OK);
        CU_ASSERT_EQUAL(image_preprocess_set_channels(&p3, 3, &err), VIT_OK);
        p1.mean[0] = p3.mean[0] = p3.mean[1] = p3.mean[2] = 0.25f;
        p1.std[0] = p3.std[0] = p3.std[1] = p3.std[2] = 0.5f;
        float one[24 * 24], three[3 * 24 * 24];
        image_preprocess(one, &grey, &p1);
        image_preprocess(three, &rgb, &p3);
        for (int c = 0; c < 3; c++)
            CU_ASSERT_EQUAL(memcmp(one, three + c * 24 * 24, sizeof one), 0);
        // an RGB picture for a grey model is converted first: the same numbers
        image_preprocess(three, &wide, &p1);
        CU_ASSERT_EQUAL(memcmp(one, three, sizeof one), 0);
    }
    image_free(&wide), image_free(&grey), image_free(&rgb);
}

// A grey picture for an RGB model: R = G = B, each normalised with its own mean and std.
static void test_grey_image_for_an_rgb_model(void) {
    Image g = image_new(2, 2, 1);
    for (int i = 0; i < 4; i++) g.pixels[i] = (unsigned char)(60 * i + 10);
    Preprocess p;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(image_preprocess_preset(&p, "torchvision", 2, &err), VIT_OK);
    float x[12];
    image_preprocess(x, &g, &p);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 4; i++)
            CU_ASSERT_DOUBLE_EQUAL(x[c * 4 + i], ((60 * i + 10) / 255.0f - p.mean[c]) / p.std[c], 1e-6);
    image_free(&g);
}

static void test_presets_fit_the_model_channels(void) {
    Preprocess p;
    VitError err;
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "fashion-mnist", 28, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(p.name, "fashion-mnist");
    CU_ASSERT_EQUAL(p.channels, 1);
    CU_ASSERT_EQUAL(p.resize_short, 28);
    CU_ASSERT_EQUAL(p.crop, 28);
    CU_ASSERT_EQUAL(p.filter, FILTER_BILINEAR);
    CU_ASSERT_DOUBLE_EQUAL(p.mean[0], 0.2860, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(p.std[0], 0.3530, 1e-7);
    // one value for three channels: the same everywhere
    CU_ASSERT_EQUAL(image_preprocess_set_channels(&p, 3, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.channels, 3);
    for (int c = 0; c < 3; c++)
        CU_ASSERT(p.mean[c] == 0.2860f && p.std[c] == 0.3530f);
    // three for one: the luma-weighted sum; hf's 0.5 stays exactly 0.5
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "hf", 28, &err), VIT_OK);
    CU_ASSERT_EQUAL(p.channels, 3);
    CU_ASSERT_EQUAL(image_preprocess_set_channels(&p, 1, &err), VIT_OK);
    CU_ASSERT(p.channels == 1 && p.mean[0] == 0.5f && p.std[0] == 0.5f);
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "torchvision", 28, &err), VIT_OK);
    CU_ASSERT_EQUAL(image_preprocess_set_channels(&p, 1, &err), VIT_OK);
    CU_ASSERT_DOUBLE_EQUAL(p.mean[0], 0.299 * 0.485 + 0.587 * 0.456 + 0.114 * 0.406, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(p.std[0], 0.299 * 0.229 + 0.587 * 0.224 + 0.114 * 0.225, 1e-6);
    // pictures have no other number of channels
    CU_ASSERT_EQUAL(image_preprocess_set_channels(&p, 4, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "a model of 4 channels cannot read them"));
    // the unknown-preset message lists every preset
    CU_ASSERT_EQUAL(image_preprocess_preset(&p, "caffe", 28, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "known: hf, timm, torchvision, fashion-mnist"));
}

static void test_parse_values(void) {
    float v[3] = {0};
    VitError err;
    CU_ASSERT_EQUAL(image_preprocess_parse_values(v, 3, "0.5", "--mean", VIT_ERR_USAGE, false, &err), VIT_OK);
    CU_ASSERT(v[0] == 0.5f && v[1] == 0.5f && v[2] == 0.5f);
    CU_ASSERT_EQUAL(image_preprocess_parse_values(v, 3, "0.1,-0.2,3e-1", "--mean", VIT_ERR_USAGE, false,
                                            &err), VIT_OK);
    CU_ASSERT(v[0] == 0.1f && v[1] == -0.2f && v[2] == 0.3f);
    CU_ASSERT_EQUAL(image_preprocess_parse_values(v, 1, "0.286", "m", VIT_ERR_INPUT, false, &err), VIT_OK);
    CU_ASSERT(v[0] == 0.286f);
    const struct {
        int channels;
        const char *text, *needle;
        bool positive;
    } bad[] = {
        {3, "0.1,0.2", "expected one number or 3 separated by commas (R,G,B), got '0.1,0.2'", false},
        {1, "0.1,0.2,0.3", "expected one number (the model has 1 channel), got '0.1,0.2,0.3'", false},
        {3, "0.1,,0.3", "got '0.1,,0.3'", false},
        {3, "0.1,0.2,0.3,0.4", "got '0.1,0.2,0.3,0.4'", false},
        {1, "abc", "got 'abc'", false},
        {1, "", "got ''", false},
        {1, "0.5 ", "got '0.5 '", false},
        {1, "nan", "got 'nan'", false},
        {1, "1e39", "got '1e39'", false},
        {3, "0.5,0,0.5", "0 must be greater than 0", true},
        {1, "-1", "-1 must be greater than 0", true},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int k = 0; k < 2; k++) { // the status asked for: usage for a flag, input for a file
            const VitStatus status = k ? VIT_ERR_INPUT : VIT_ERR_USAGE;
            CU_ASSERT_EQUAL(image_preprocess_parse_values(v, bad[i].channels, bad[i].text, "WHAT", status,
                                                    bad[i].positive, &err), status);
            const bool ok = strncmp(err.msg, "WHAT: ", 6) == 0 && strstr(err.msg, bad[i].needle);
            if (!ok) fprintf(stderr, "\n    '%s': %s\n", bad[i].text, err.msg);
            CU_ASSERT(ok);
        }
    }
}

// A weights file of no tensors whose __metadata__ is `meta` (JSON pairs), in memory.
static void parse_meta(SafeTensors *st, unsigned char *buf, size_t size, const char *meta) {
    char json[512];
    int n = snprintf(json, sizeof json, "{\"__metadata__\":{%s}}", meta);
    CU_ASSERT_FATAL(n > 0 && (size_t)n + 8 <= size);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, json, (size_t)n);
    VitError err;
    if (st_parse(st, buf, 8 + (size_t)n, "w.safetensors", &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL_FATAL("the metadata file did not parse");
    }
}

// A model file's own "preprocess", "mean" and "std" win over every default;
// a preset asked for wins over the file's; malformed metadata is refused by name.
static void test_preprocessing_from_the_model_file(void) {
    unsigned char buf[600];
    SafeTensors st;
    Preprocess p;
    VitError err;
    // no file, or a file without a word on it: the fallback preset
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, NULL, "timm", NULL, 32, 3, &err), VIT_OK);
    CU_ASSERT(strcmp(p.name, "timm") == 0 && p.channels == 3 && p.mean[0] == 0.5f);
    SafeTensors empty = {0}; // a model built in memory (vit_build_random) has a zeroed file
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, NULL, "fashion-mnist", &empty, 28, 1, &err), VIT_OK);
    CU_ASSERT(strcmp(p.name, "fashion-mnist") == 0 && p.mean[0] == 0.2860f);
    // the file names its preset and normalisation
    parse_meta(&st, buf, sizeof buf,
               "\"preprocess\":\"fashion-mnist\",\"mean\":\"0.25\",\"std\":\"0.375\"");
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, NULL, "timm", &st, 28, 1, &err), VIT_OK);
    CU_ASSERT(strcmp(p.name, "fashion-mnist") == 0 && p.resize_short == 28 && p.channels == 1);
    CU_ASSERT(p.mean[0] == 0.25f && p.std[0] == 0.375f);
    // a preset asked for wins over the file's; the file's mean and std still win over the preset's
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, "hf", "timm", &st, 28, 1, &err), VIT_OK);
    CU_ASSERT(strcmp(p.name, "hf") == 0 && p.resize_short == 0);
    CU_ASSERT(p.mean[0] == 0.25f && p.std[0] == 0.375f);
    // on an RGB model the one value serves every channel
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, NULL, "timm", &st, 28, 3, &err), VIT_OK);
    CU_ASSERT(p.channels == 3 && p.mean[2] == 0.25f && p.std[1] == 0.375f);
    st_close(&st);
    // per-channel values
    parse_meta(&st, buf, sizeof buf, "\"mean\":\"0.1,0.2,0.3\"");
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, NULL, "hf", &st, 32, 3, &err), VIT_OK);
    CU_ASSERT(p.mean[0] == 0.1f && p.mean[1] == 0.2f && p.mean[2] == 0.3f && p.std[0] == 0.5f);
    st_close(&st);
    // refusals name the file and the key
    const struct {
        const char *meta, *needle;
        int channels;
        VitStatus status;
    } bad[] = {
        {"\"preprocess\":\"caffe\"", "w.safetensors: __metadata__ \"preprocess\": unknown "
                                     "preprocessing preset 'caffe'", 1, VIT_ERR_INPUT},
        {"\"mean\":\"zero\"", "w.safetensors: __metadata__ \"mean\": expected one number", 1,
         VIT_ERR_INPUT},
        {"\"mean\":\"0.1,0.2,0.3\"", "w.safetensors: __metadata__ \"mean\": expected one number "
                                     "(the model has 1 channel)", 1, VIT_ERR_INPUT},
        {"\"std\":\"0\"", "w.safetensors: __metadata__ \"std\": 0 must be greater than 0", 1,
         VIT_ERR_INPUT},
        {"\"std\":\"0.3\"", "w.safetensors: pictures have 1 channel (grey) or 3 (RGB); a model of "
                            "2 channels cannot read them", 2, VIT_ERR_INPUT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        parse_meta(&st, buf, sizeof buf, bad[i].meta);
        CU_ASSERT_EQUAL(image_preprocess_for_model(&p, NULL, "timm", &st, 28, bad[i].channels, &err),
                        bad[i].status);
        if (!strstr(err.msg, bad[i].needle)) fprintf(stderr, "\n    %s\n", err.msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, bad[i].needle));
        st_close(&st);
    }
    // an unknown preset asked for is bad usage, not the file's fault
    parse_meta(&st, buf, sizeof buf, "\"preprocess\":\"fashion-mnist\"");
    CU_ASSERT_EQUAL(image_preprocess_for_model(&p, "caffe", "timm", &st, 28, 1, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown preprocessing preset 'caffe'"));
    st_close(&st);
}

/* ------------------------------------------------------------ bad input */

static void expect_load_error(const unsigned char *data, size_t size, const char *needle) {
    Image img;
    VitError err = {{0}};
    CU_ASSERT_EQUAL(image_load_memory(&img, data, size, "x.png", &err), VIT_ERR_INPUT);
    bool ok = strstr(err.msg, "x.png") && strstr(err.msg, needle);
    if (!ok) fprintf(stderr, "\n    message was: %s\n", err.msg);
    CU_ASSERT(ok);
    CU_ASSERT_PTR_NULL(img.pixels);
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
// overflow in its PNM header parser, an assertion on a corrupt Huffman code, a
// read through a Huffman table that was never defined);
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
        // a progressive scan decoded with an AC table no DHT defined: a heap read out of
        // bounds (use-after-free under ASan) in stb's Huffman decoder
        {"jpeg_undefined_huffman_table.jpg", "uses Huffman table AC 0, which the file does not "
                                             "define before it"},
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

/* ------------------------------------------ headers and files built in C */

static unsigned char *put_le16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
    return p + 2;
}

static unsigned char *put_le32(unsigned char *p, uint32_t v) {
    return put_le16(put_le16(p, v & 0xffff), v >> 16);
}

static unsigned char *put_be32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
    return p + 4;
}

// A BMP's file header and 40-byte info header: pixels at `offset`, `height`
// negative for rows stored top first. The caller writes palette and pixels.
static void bmp_headers(unsigned char *buf, uint32_t file_size, uint32_t offset, int32_t width,
                        int32_t height, unsigned bpp) {
    memset(buf, 0, 54);
    unsigned char *p = buf;
    *p++ = 'B', *p++ = 'M';
    p = put_le32(put_le32(put_le32(p, file_size), 0), offset);
    p = put_le32(put_le32(put_le32(p, 40), (uint32_t)width), (uint32_t)height);
    put_le16(put_le16(p, 1), bpp); // planes, bits per pixel; compression 0, the rest 0
}

// The w×h picture `rgb` (rows top first) as a 24- or 32-bit BMP, rows stored
// bottom first, or top first (negative height). Each row is B, G, R[, A]
// padded to 4 bytes. Returns the file's size.
static size_t make_bmp(unsigned char *buf, const unsigned char *rgb, int w, int h, unsigned bpp,
                       bool top_down) {
    size_t row = ((size_t)bpp * w + 31) / 32 * 4, size = 54 + row * h;
    bmp_headers(buf, (uint32_t)size, 54, w, top_down ? -h : h, bpp);
    memset(buf + 54, 0, row * h);
    for (int y = 0; y < h; y++) {
        unsigned char *out = buf + 54 + row * (top_down ? y : h - 1 - y);
        for (int x = 0; x < w; x++) {
            const unsigned char *px = rgb + ((size_t)y * w + x) * 3;
            unsigned char *o = out + (size_t)x * (bpp / 8);
            o[0] = px[2], o[1] = px[1], o[2] = px[0];
            if (bpp == 32) o[3] = 0x80; // alpha, dropped
        }
    }
    return size;
}

// PNG's CRC-32 (ISO 3309, reflected, polynomial 0xEDB88320), bit by bit.
static uint32_t png_crc(const unsigned char *d, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= d[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static unsigned char *png_chunk(unsigned char *p, const char *type, const unsigned char *data,
                                uint32_t n) {
    p = put_be32(p, n);
    memcpy(p, type, 4);
    if (n) memcpy(p + 4, data, n);
    return put_be32(p + 4 + n, png_crc(p, 4 + (size_t)n));
}

/** What make_png writes. */
typedef struct {
    uint32_t width, height;
    int colour;                // PNG colour type: 2 RGB, 3 palette
    const unsigned char *plte; // palette, 3 bytes an entry; NULL: no PLTE chunk
    int plte_entries;
    const unsigned char *rows; // filtered rows (a 0 filter byte, then samples)
    uint16_t rows_size;
} PngSpec;

// A PNG: signature, IHDR (8 bits a sample), PLTE if any, one IDAT holding the
// rows in a zlib stream of one stored (uncompressed) block, IEND. Returns its size.
static size_t make_png(unsigned char *buf, const PngSpec *s) {
    memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
    unsigned char ihdr[13] = {0}, idat[512], *z = idat;
    put_be32(put_be32(ihdr, s->width), s->height);
    ihdr[8] = 8, ihdr[9] = (unsigned char)s->colour; // depth; no compression, filter, interlace
    unsigned char *p = png_chunk(buf + 8, "IHDR", ihdr, 13);
    if (s->plte) p = png_chunk(p, "PLTE", s->plte, 3 * (uint32_t)s->plte_entries);
    uint32_t a = 1, b = 0; // Adler-32 of the rows
    for (int i = 0; i < s->rows_size; i++) a = (a + s->rows[i]) % 65521, b = (b + a) % 65521;
    *z++ = 0x78, *z++ = 0x01, *z++ = 0x01; // zlib header; a final stored block
    z = put_le16(put_le16(z, s->rows_size), (uint16_t)~s->rows_size);
    memcpy(z, s->rows, s->rows_size);
    z = put_be32(z + s->rows_size, b << 16 | a);
    p = png_chunk(p, "IDAT", idat, (uint32_t)(z - idat));
    return (size_t)(png_chunk(p, "IEND", NULL, 0) - buf);
}

// The message of a refused load (VIT_ERR_INPUT, nothing allocated, the file
// named), or "" after a failed assertion.
static const char *refusal(const unsigned char *data, size_t size) {
    static VitError err;
    Image img;
    memset(&err, 0, sizeof err);
    VitStatus s = image_load_memory(&img, data, size, "x.png", &err);
    CU_ASSERT_EQUAL(s, VIT_ERR_INPUT);
    CU_ASSERT_PTR_NULL(img.pixels);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "x.png: "));
    if (s == VIT_OK) image_free(&img);
    return err.msg;
}

// Every needle (up to a NULL) is in the message of the refused load; prints it if not.
static void expect_refusal(const unsigned char *data, size_t size, const char *needle, ...) {
    const char *msg = refusal(data, size);
    va_list ap;
    va_start(ap, needle);
    for (const char *n = needle; n; n = va_arg(ap, const char *)) {
        if (strstr(msg, n)) continue;
        fprintf(stderr, "\n    no '%s' in: %s\n", n, msg);
        CU_FAIL("message does not name the problem");
    }
    va_end(ap);
}

static void expect_pixels(const unsigned char *data, size_t size, const unsigned char *rgb,
                          int w, int h, const char *what) {
    Image img;
    VitError err = {{0}};
    if (image_load_memory(&img, data, size, what, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("image did not load");
        return;
    }
    CU_ASSERT_EQUAL(img.width, w);
    CU_ASSERT_EQUAL(img.height, h);
    bool same = img.width == w && img.height == h && memcmp(img.pixels, rgb, (size_t)w * h * 3) == 0;
    if (!same) fprintf(stderr, "\n    %s: wrong pixels\n", what);
    CU_ASSERT(same);
    image_free(&img);
}

// A 3×2 picture: odd width, so 24-bit rows carry a byte of padding.
static const unsigned char PICTURE[] = {255, 0,  0,  0,  255, 0,  0,  0,  255, // top row
                                        10,  20, 30, 40, 50,  60, 70, 80, 90};

// stb's info gives a top-down BMP's height as stored, negative; we took it for
// "zero size". Rows top first or bottom first must give the same pixels.
static void test_top_down_bmp_decodes_like_bottom_up(void) {
    unsigned char buf[128];
    for (unsigned bpp = 24; bpp <= 32; bpp += 8) {
        expect_pixels(buf, make_bmp(buf, PICTURE, 3, 2, bpp, false), PICTURE, 3, 2, "bottom-up");
        expect_pixels(buf, make_bmp(buf, PICTURE, 3, 2, bpp, true), PICTURE, 3, 2, "top-down");
    }
    // too tall a top-down BMP is named by its real height, not a negative one
    make_bmp(buf, PICTURE, 3, 2, 24, true);
    put_le32(buf + 22, (uint32_t)-100000);
    expect_refusal(buf, 54 + 24, "image of 3×100000 pixels", "side longer than 65535", NULL);
}

// stbi_info refuses these and reports only "unknown image type".
static void test_too_large_png_names_its_size_and_the_limits(void) {
    unsigned char buf[256], rows[] = {0, 1, 2, 3};
    PngSpec spec = {100000, 100000, 2, NULL, 0, rows, sizeof rows};
    expect_refusal(buf, make_png(buf, &spec), "image of 100000×100000 pixels",
                   "side longer than 65535", "limits: 65535 pixels a side, 67108864 pixels in all",
                   NULL);
    spec.width = spec.height = 9000; // sides fine, 81 megapixels
    expect_refusal(buf, make_png(buf, &spec), "image of 9000×9000 pixels",
                   "larger than the 67108864-pixel limit", "65535 pixels a side", NULL);
}

static void test_palette_png_without_plte_names_the_missing_palette(void) {
    unsigned char buf[256];
    const unsigned char plte[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
    const unsigned char rows[] = {0, 0, 1, 2, 0, 3, 3, 0}; // 3×2 indexes, a filter byte a row
    const unsigned char want[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 10, 20, 30,
                                  255, 0, 0};
    PngSpec spec = {3, 2, 3, plte, 4, rows, sizeof rows};
    expect_pixels(buf, make_png(buf, &spec), want, 3, 2, "palette PNG");
    spec.plte = NULL;
    expect_refusal(buf, make_png(buf, &spec), "palette PNG", "no PLTE chunk",
                   "the palette is missing", NULL);
}

// A frame header (SOFn) of a w×h JPEG with `bits`-bit samples, one component.
static size_t make_jpeg_frame(unsigned char *buf, unsigned marker, unsigned bits, unsigned w,
                              unsigned h) {
    const unsigned char f[] = {0xff, 0xd8, 0xff, (unsigned char)marker, 0, 11, (unsigned char)bits,
                               (unsigned char)(h >> 8), (unsigned char)h, (unsigned char)(w >> 8),
                               (unsigned char)w, 1, 1, 0x11, 0, 0xff, 0xd9};
    memcpy(buf, f, sizeof f);
    return sizeof f;
}

// A header's size fields, printed as the file states them: PNG's are
// unsigned 32-bit, BMP's signed 32-bit, PPM's decimal of any length.
static void test_sizes_are_printed_as_the_file_states_them(void) {
    unsigned char buf[256], rows[] = {0, 1, 2, 3};
    PngSpec spec = {0xfffffffcu, 1, 2, NULL, 0, rows, sizeof rows};
    const char *msg = refusal(buf, make_png(buf, &spec));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "image of 4294967292×1 pixels"));
    CU_ASSERT_PTR_NULL(strstr(msg, "-4"));
    spec = (PngSpec){1, 0x80000000u, 2, NULL, 0, rows, sizeof rows};
    expect_refusal(buf, make_png(buf, &spec), "image of 1×2147483648 pixels", NULL);
    make_bmp(buf, PICTURE, 3, 2, 24, false);
    put_le32(buf + 18, (uint32_t)-3);
    expect_refusal(buf, 54 + 24, "BMP width is negative (-3)", NULL);
    put_le32(buf + 18, 3), put_le32(buf + 22, 0x80000000u); // INT32_MIN: top down, 2^31 rows
    expect_refusal(buf, 54 + 24, "image of 3×2147483648 pixels", NULL);
    const char *ppm = "P6\n4294967292 1\n255\n";
    expect_refusal((const unsigned char *)ppm, strlen(ppm), "image of 4294967292×1 pixels", NULL);
    // JPEG sizes are 16-bit: 65535×65535 is within an int, but over the pixel limit
    expect_refusal(buf, make_jpeg_frame(buf, 0xc0, 8, 65535, 65535), "image of 65535×65535 pixels",
                   "larger than the", NULL);
}

// stbi_info refuses each of these and says only "unknown image type"; a PPM
// maxval beyond 16 bits was called 16-bit, a 9-digit width a malformed header.
static void test_refusals_name_the_real_cause(void) {
    unsigned char buf[256];
    expect_refusal(buf, make_jpeg_frame(buf, 0xc0, 8, 4, 0), "JPEG of height 0", "DNL", NULL);
    expect_refusal(buf, make_jpeg_frame(buf, 0xc1, 12, 4, 4), "12-bit samples", NULL);
    expect_refusal(buf, make_jpeg_frame(buf, 0xc3, 8, 4, 4), "SOF3", "lossless", NULL);
    expect_refusal(buf, make_jpeg_frame(buf, 0xc9, 8, 4, 4), "SOF9", "arithmetic", NULL);
    const char *ppm = "P6\n2 1\n70000\n......";
    const char *msg = refusal((const unsigned char *)ppm, strlen(ppm));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "maxval 70000 is out of range (at most 65535)"));
    CU_ASSERT_PTR_NULL(strstr(msg, "16-bit"));
    ppm = "P6\n100000000 1\n255\n";
    expect_refusal((const unsigned char *)ppm, strlen(ppm), "image of 100000000×1 pixels", NULL);
    // any other refusal of stb's info: the reason of stb's PNG decoder, not "unknown image type"
    unsigned char rows[] = {0, 1, 2, 3};
    PngSpec spec = {1, 1, 2, NULL, 0, rows, sizeof rows};
    size_t size = make_png(buf, &spec);
    put_be32(buf + 8, 12); // IHDR length 12
    msg = refusal(buf, size);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "cannot decode image: bad IHDR len"));
    CU_ASSERT_PTR_NULL(strstr(msg, "unknown image type"));
}

// stb takes memory for the pixels before it refuses a BMP's bit depth or
// palette, reads a palette index past the palette's end as uninitialised
// memory, and decoded a 28-byte OS/2 file as 8000×8000 black pixels.
static void test_bmp_depths_headers_and_palettes(void) {
    unsigned char buf[128];
    make_bmp(buf, PICTURE, 3, 2, 24, false);
    put_le16(buf + 28, 2);
    expect_refusal(buf, 54 + 24, "BMP of 2 bits per pixel is not supported", NULL);
    expect_refusal(buf, 40, "BMP header is truncated", NULL);
    // OS/2 header: 16-bit sizes, 8000×8000 at 24 bits, no pixels
    memset(buf, 0, 28), buf[0] = 'B', buf[1] = 'M', buf[10] = 26, buf[14] = 12;
    put_le16(put_le16(put_le16(put_le16(buf + 18, 8000), 8000), 1), 24);
    expect_refusal(buf, 28, "pixel data is truncated", NULL);
    // 8 bits per pixel, top down, 3×2 indexes into a palette of 3 (B, G, R, 0) entries
    const unsigned char palette[] = {0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 0};
    const unsigned char index[] = {0, 1, 2, 0, 2, 2, 1, 0};
    const unsigned char want[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 255, 0, 0, 255,
                                  0,   255, 0};
    bmp_headers(buf, 54 + 12 + 8, 54 + 12, 3, -2, 8);
    memcpy(buf + 54, palette, 12), memcpy(buf + 66, index, 8);
    expect_pixels(buf, 74, want, 3, 2, "palette BMP");
    buf[67] = 7; // index 7 of 3
    expect_refusal(buf, 74, "palette entry 7", "3-entry palette", NULL);
    put_le32(buf + 22, 2); // the same, bottom up
    expect_refusal(buf, 74, "palette entry 7", "3-entry palette", NULL);
    bmp_headers(buf, 54 + 8, 54, 3, -2, 8); // pixels right after the header
    memcpy(buf + 54, index, 8);
    expect_refusal(buf, 62, "BMP of 8 bits per pixel has no palette", NULL);
    memset(buf, 0, 36), buf[0] = 'B', buf[1] = 'M', buf[10] = 26 + 6, buf[14] = 12;
    put_le16(put_le16(put_le16(put_le16(buf + 18, 1), 1), 1), 1); // 1×1, 2 colours, 1 bit
    expect_refusal(buf, 36, "OS/2 BMP with a palette", NULL);
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
    {"grey is Pillow's convert(\"L\")", test_grey_is_pillows_convert_L},
    {"preset fashion-mnist matches Pillow", test_preset_fashion_mnist_matches_pillow},
    {"grey resizes as each RGB channel", test_grey_resizes_as_each_rgb_channel},
    {"grey image for an RGB model", test_grey_image_for_an_rgb_model},
    {"presets fit the model's channels", test_presets_fit_the_model_channels},
    {"mean and std parse", test_parse_values},
    {"preprocessing from the model file", test_preprocessing_from_the_model_file},
    {"refuses bad images", test_refuses_bad_images},
    {"refuses fuzzer-found files", test_refuses_fuzzer_found_files},
    {"top-down BMP decodes like bottom-up", test_top_down_bmp_decodes_like_bottom_up},
    {"too-large PNG names its size and the limits",
     test_too_large_png_names_its_size_and_the_limits},
    {"palette PNG without PLTE names the missing palette",
     test_palette_png_without_plte_names_the_missing_palette},
    {"sizes are printed as the file states them", test_sizes_are_printed_as_the_file_states_them},
    {"refusals name the real cause", test_refusals_name_the_real_cause},
    {"BMP depths, headers and palettes", test_bmp_depths_headers_and_palettes},
    {"refuses missing file and directory", test_refuses_missing_file_and_directory},
    CU_TEST_INFO_NULL,
};
