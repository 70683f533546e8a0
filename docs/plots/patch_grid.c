/**
 * @file patch_grid.c
 * @brief The book's picture of the patch grid: a photo as ViT-B/16 sees it,
 *        224 × 224, cut into 14 × 14 patches of 16 pixels, a few of them numbered.
 *
 *   patch_grid IMAGE OUT.png
 *
 * Loads IMAGE with image_load() and prepares it with image_preprocess() and
 * the timm preset for ViT-B/16 (vit_config_for_arch("vit-base"): S = 224,
 * p = 16), the preprocessing `vit classify` gives timm weights: the shorter
 * side resized to 248 (bicubic), the centre 224 × 224 cropped. The model's
 * input is turned back into pixels (picture_from_input()) and drawn three
 * times larger, with white lines between the patches. The patches in MARKED
 * are outlined and labelled with their index, and each one is put where
 * patch_unfold() takes it from: the program unfolds an image whose every pixel
 * holds its own address and reads which pixel patch i starts at, so the
 * numbers are those of the code, not of an assumed order. Rows and columns
 * of the grid are numbered along the edges. scripts/docs.sh runs it for
 * chapter 06's page.
 */
#include <stdio.h>
#include <stdlib.h>

#include "model/config.h"
#include "base/fileio.h"
#include "io/image.h"
#include "model/patch.h"
#include "io/picture.h"

/**
 * The patches outlined and numbered: the four corners, the first two of rows 0
 * and 1 (13 ends row 0, 14 starts row 1), and 60, on the eye at row 4, column 4.
 */
static const int MARKED[] = {0, 1, 13, 14, 15, 60, 182, 195};
enum { MARKED_COUNT = sizeof MARKED / sizeof MARKED[0] };

enum {
    SCALE = 3,       // each image pixel drawn 3 × 3
    MARGIN = 28,     // room for the row and column numbers, in picture pixels
    OUTLINE = 3,     // a marked patch's frame, in picture pixels
};
static const Rgb WHITE = {255, 255, 255};
static const Rgb INK = {0, 0, 0};
static const Rgb MARK = {255, 214, 0}; // a yellow that stands out on the cat's fur and on grey

/** The top-left pixel (x, y) of each patch, in the order patch_unfold() writes the patches. */
static void patch_corners(int *x, int *y, int S, int p) {
    const int P = (S / p) * (S / p), K = p * p;
    float *address = vit_malloc(sizeof(float) * (size_t)S * S);   // (1, 1, S, S)
    float *patches = vit_malloc(sizeof(float) * (size_t)P * K);   // (1, P, p·p)
    for (int i = 0; i < S * S; i++) address[i] = (float)i; // exact: S² < 2²⁴
    patch_unfold(patches, address, 1, 1, S, p);
    for (int i = 0; i < P; i++) { // entry 0 of a patch is its top-left pixel
        const int a = (int)patches[(size_t)i * K];
        x[i] = a % S, y[i] = a / S;
    }
    free(patches);
    free(address);
}

/** The 224 × 224 pixels the model sees, from the photo at @p path. */
static VitStatus model_view(Image *view, const char *path, const VitConfig *cfg, VitError *err) {
    Preprocess pre;
    Image photo;
    VitStatus s = image_preprocess_preset(&pre, "timm", cfg->image_size, err);
    if (s == VIT_OK) s = image_load(&photo, path, err);
    if (s != VIT_OK) return s;
    const int S = cfg->image_size;
    float *input = vit_malloc(sizeof(float) * 3 * (size_t)S * S); // (C, S, S)
    image_preprocess(input, &photo, &pre);
    *view = picture_from_input(input, 3, S, pre.mean, pre.std);
    free(input);
    image_free(&photo);
    return VIT_OK;
}

/** A frame @p t pixels thick just inside the w × h rectangle at (x, y). */
static void draw_frame(Image *pic, int x, int y, int w, int h, int t, Rgb colour) {
    picture_fill(pic, x, y, w, t, colour);
    picture_fill(pic, x, y + h - t, w, t, colour);
    picture_fill(pic, x, y, t, h, colour);
    picture_fill(pic, x + w - t, y, t, h, colour);
}

/** @p text centred on (cx, cy), on a box of @p box colour. */
static void draw_label(Image *pic, int cx, int cy, int scale, const char *text, Rgb ink, Rgb box) {
    const int w = picture_text_width(text, scale), h = picture_text_height(scale);
    picture_fill(pic, cx - w / 2 - 2, cy - h / 2 - 1, w + 4, h + 1, box);
    picture_text(pic, cx - w / 2, cy - h / 2 + scale, scale, text, ink);
}

/** White lines between the patches, and the grid's rows and columns numbered in the margins. */
static void draw_grid(Image *pic, int S, int p) {
    const int side = S * SCALE, cell = p * SCALE;
    char n[12]; // any int
    for (int k = 1; k < S / p; k++) {
        picture_fill(pic, MARGIN + k * cell, MARGIN, 1, side, WHITE);
        picture_fill(pic, MARGIN, MARGIN + k * cell, side, 1, WHITE);
    }
    for (int k = 0; k < S / p; k++) {
        snprintf(n, sizeof n, "%d", k);
        draw_label(pic, MARGIN + k * cell + cell / 2, MARGIN / 2, 2, n, INK, WHITE);
        draw_label(pic, MARGIN / 2, MARGIN + k * cell + cell / 2, 2, n, INK, WHITE);
    }
}

/** Outlines patch @p i, whose top-left pixel is (x, y), and writes its index in it. */
static void draw_marked(Image *pic, int i, int x, int y, int p) {
    const int cell = p * SCALE, left = MARGIN + x * SCALE, top = MARGIN + y * SCALE;
    char n[12]; // any int
    snprintf(n, sizeof n, "%d", i);
    draw_frame(pic, left, top, cell + 1, cell + 1, OUTLINE, MARK);
    draw_label(pic, left + cell / 2, top + cell / 2, 2, n, INK, MARK);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IMAGE OUT.png\n", argv[0]);
        return 2;
    }
    VitConfig cfg;
    VitError err = {{0}};
    Image view = {0};
    VitStatus s = file_check_not_input(argv[2], "the picture", argv[1], "the photo", &err);
    if (s == VIT_OK) s = vit_config_for_arch(&cfg, "vit-base", &err);
    if (s == VIT_OK) s = model_view(&view, argv[1], &cfg, &err);
    if (s != VIT_OK) {
        fprintf(stderr, "patch_grid: %s\n", err.msg);
        return 1;
    }
    const int S = cfg.image_size, p = cfg.patch_size, P = (S / p) * (S / p);
    int *x = vit_malloc(sizeof(int) * (size_t)P), *y = vit_malloc(sizeof(int) * (size_t)P);
    patch_corners(x, y, S, p);

    Image pic = picture_new(MARGIN + S * SCALE + 1, MARGIN + S * SCALE + 1);
    picture_overlay(&pic, &(Overlay){.x = MARGIN, .y = MARGIN, .scale = SCALE}, &view, NULL, 0, 0);
    draw_grid(&pic, S, p);
    for (int m = 0; m < MARKED_COUNT; m++) {
        const int i = MARKED[m];
        draw_marked(&pic, i, x[i], y[i], p);
    }
    s = picture_write_png(&pic, argv[2], &err);
    if (s != VIT_OK) fprintf(stderr, "patch_grid: %s\n", err.msg);

    image_free(&pic);
    image_free(&view);
    free(x);
    free(y);
    return s == VIT_OK ? 0 : 1;
}
