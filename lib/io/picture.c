/**
 * @file picture.c
 * @brief Drawing maps, colour bars and text into RGB pictures, and saving them as PNG (picture.h).
 */
#include "io/picture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image_write.h>

#include "base/fileio.h"

// stb_easy_font is a header of static functions; not every one is used here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-braces"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop

Image picture_new(int width, int height) {
    Image pic = image_new(width, height, 3);
    memset(pic.pixels, 255, (size_t)width * (size_t)height * 3);
    return pic;
}

/* ----------------------------------------------------------------- colours */

Rgb picture_viridis(float t) {
    // matplotlib's viridis at t = 0, 1/9, …, 1 (its published sRGB values)
    static const Rgb points[10] = {
        {0x44, 0x01, 0x54}, {0x48, 0x28, 0x78}, {0x3e, 0x49, 0x89}, {0x31, 0x68, 0x8e},
        {0x26, 0x82, 0x8e}, {0x1f, 0x9e, 0x89}, {0x35, 0xb7, 0x79}, {0x6e, 0xce, 0x58},
        {0xb5, 0xde, 0x2b}, {0xfd, 0xe7, 0x25}};
    if (isnan(t)) return (Rgb){255, 0, 255};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const float at = t * 9;
    const int i = at >= 9 ? 8 : (int)at;
    const float f = at - (float)i;
    const Rgb a = points[i], b = points[i + 1];
    return (Rgb){(unsigned char)lroundf(a.r + f * (b.r - a.r)),
                 (unsigned char)lroundf(a.g + f * (b.g - a.g)),
                 (unsigned char)lroundf(a.b + f * (b.b - a.b))};
}

static void put(Image *pic, int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= pic->width || y >= pic->height) return;
    unsigned char *p = pic->pixels + ((size_t)y * (size_t)pic->width + (size_t)x) * 3;
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void picture_fill(Image *pic, int x, int y, int w, int h, Rgb colour) {
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++) put(pic, i, j, colour);
}

/* -------------------------------------------------------------------- text */

// text with everything outside printable ASCII as '?', which stb_easy_font can draw
static void printable(char *out, size_t size, const char *text) {
    size_t n = 0;
    for (; *text && n + 1 < size; text++) {
        const unsigned char c = (unsigned char)*text;
        out[n++] = c >= 32 && c < 127 ? (char)c : '?';
    }
    out[n] = '\0';
}

int picture_text_width(const char *text, int scale) {
    char safe[256];
    printable(safe, sizeof safe, text);
    return stb_easy_font_width(safe) * scale;
}

int picture_text_height(int scale) { return 8 * scale; }

int picture_text(Image *pic, int x, int y, int scale, const char *text, Rgb colour) {
    char safe[256];
    printable(safe, sizeof safe, text);
    // each quad is 4 vertices of (x, y, z, colour), 16 bytes each: about 270 bytes a character
    const size_t bytes = (strlen(safe) + 1) * 320;
    float *quads = vit_malloc(bytes);
    const int n = stb_easy_font_print(0, 0, safe, NULL, quads, (int)bytes);
    for (int q = 0; q < n; q++) {
        const float *v0 = quads + q * 16, *v2 = v0 + 8; // vertices 0 and 2 span the quad
        const int x0 = (int)v0[0], y0 = (int)v0[1], x1 = (int)v2[0], y1 = (int)v2[1];
        picture_fill(pic, x + x0 * scale, y + y0 * scale, (x1 - x0) * scale, (y1 - y0) * scale,
                     colour);
    }
    free(quads);
    return stb_easy_font_width(safe) * scale;
}

/* ------------------------------------------------------------------- maps */

void picture_overlay(Image *pic, const Overlay *o, const Image *img, const float *map, int rows,
                     int cols) {
    // map is (rows, cols) over the patch grid; img is (height, width, channels)
    const float span = o->hi > o->lo ? o->hi - o->lo : 1;
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            const unsigned char *p =
                img->pixels + ((size_t)y * (size_t)img->width + (size_t)x) * (size_t)img->channels;
            Rgb c = img->channels >= 3 ? (Rgb){p[0], p[1], p[2]} : (Rgb){p[0], p[0], p[0]};
            if (map) {
                const int i = y * rows / img->height, j = x * cols / img->width;
                const Rgb m = picture_viridis((map[i * cols + j] - o->lo) / span);
                const float a = o->opacity;
                c = (Rgb){(unsigned char)lroundf((1 - a) * c.r + a * m.r),
                          (unsigned char)lroundf((1 - a) * c.g + a * m.g),
                          (unsigned char)lroundf((1 - a) * c.b + a * m.b)};
            }
            picture_fill(pic, o->x + x * o->scale, o->y + y * o->scale, o->scale, o->scale, c);
        }
}

void picture_colour_bar(Image *pic, int x, int y, int w, int h, float lo, float hi, float mark,
                        const char *mark_label) {
    const Rgb ink = {0, 0, 0};
    for (int j = 0; j < h; j++) // top row hi, bottom row lo
        picture_fill(pic, x, y + j, w, 1, picture_viridis(h > 1 ? 1.0f - (float)j / (float)(h - 1) : 1));
    char label[64];
    const int tx = x + w + 4, th = picture_text_height(1);
    snprintf(label, sizeof label, "%.4g", (double)hi);
    picture_text(pic, tx, y, 1, label, ink);
    snprintf(label, sizeof label, "%.4g", (double)lo);
    picture_text(pic, tx, y + h - th, 1, label, ink);
    if (!isnan(mark) && hi > lo && mark >= lo && mark <= hi) {
        const int my = y + (int)lroundf((1 - (mark - lo) / (hi - lo)) * (float)(h - 1));
        picture_fill(pic, x - 3, my, w + 6, 1, ink);
        // beside the tick; moved right when it would overlap an end's number
        const int ly = my - th / 2;
        const bool clash = ly < y + th || ly + th > y + h - th;
        const int lx = clash ? tx + picture_text_width(label, 1) + 6 : tx;
        if (mark_label) picture_text(pic, lx, ly, 1, mark_label, ink);
    }
}

Image picture_from_input(const float *input, int channels, int side, const float *mean,
                         const float *std) {
    // input is (C, S, S) channel-major; the image is (S, S, C) interleaved
    Image img = image_new(side, side, channels);
    const size_t plane = (size_t)side * (size_t)side;
    for (int c = 0; c < channels; c++)
        for (size_t i = 0; i < plane; i++) {
            const float v = 255.0f * (input[(size_t)c * plane + i] * std[c] + mean[c]);
            img.pixels[i * (size_t)channels + (size_t)c] =
                (unsigned char)(!(v > 0) ? 0 : v >= 255 ? 255 : lroundf(v)); // NaN: 0
        }
    return img;
}

/* -------------------------------------------------------------------- PNG */

static void to_file(void *context, void *data, int size) {
    OutFile *o = context;
    if (size > 0) fwrite(data, 1, (size_t)size, o->f);
}

VitStatus picture_write_png(const Image *pic, const char *path, VitError *err) {
    OutFile o;
    VitStatus s = outfile_open(&o, path, err);
    if (s != VIT_OK) return s;
    const int ok = stbi_write_png_to_func(to_file, &o, pic->width, pic->height, 3, pic->pixels,
                                          pic->width * 3);
    return outfile_commit(&o, ok != 0 && !ferror(o.f), err);
}
