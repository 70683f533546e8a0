/**
 * @file render_image.c
 * @brief Image tensor to pixels, resampling, patch grid, overlay (see render_image.h).
 */
#include "render_image.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

static uint8_t to_byte(float v, float lo, float scale) {
    float x = (v - lo) * scale;
    return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : lrintf(x));
}

void image_to_rgb(Rgb *out, const float *chw, int C, int S) {
    const size_t plane = (size_t)S * S;
    const int shown = C >= 3 ? 3 : 1;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < plane * (size_t)shown; i++)
        if (isfinite(chw[i])) lo = fminf(lo, chw[i]), hi = fmaxf(hi, chw[i]);
    const float scale = hi > lo ? 255.0f / (hi - lo) : 0.0f;
    for (size_t i = 0; i < plane; i++) {
        uint8_t r = to_byte(chw[i], lo, scale);
        out[i] = shown == 3 ? (Rgb){r, to_byte(chw[plane + i], lo, scale),
                                    to_byte(chw[2 * plane + i], lo, scale)}
                            : (Rgb){r, r, r};
    }
}

void image_resample(Rgb *out, int ow, int oh, const Rgb *in, int iw, int ih) {
    for (int y = 0; y < oh; y++) {
        int y0 = (int)((long long)y * ih / oh), y1 = (int)((long long)(y + 1) * ih / oh);
        if (y1 <= y0) y1 = y0 + 1;
        for (int x = 0; x < ow; x++) {
            int x0 = (int)((long long)x * iw / ow), x1 = (int)((long long)(x + 1) * iw / ow);
            if (x1 <= x0) x1 = x0 + 1;
            unsigned long r = 0, g = 0, b = 0, n = 0;
            for (int yy = y0; yy < y1; yy++)
                for (int xx = x0; xx < x1; xx++) {
                    Rgb p = in[(size_t)yy * iw + xx];
                    r += p.r, g += p.g, b += p.b, n++;
                }
            out[(size_t)y * ow + x] = (Rgb){(uint8_t)(r / n), (uint8_t)(g / n), (uint8_t)(b / n)};
        }
    }
}

int image_patch_at(int x, int y, int w, int h, int grid) {
    int col = (int)((long long)x * grid / w), row = (int)((long long)y * grid / h);
    return row * grid + col;
}

int image_fit_side(int avail, int S) {
    return S > 0 && avail >= S ? avail / S * S : avail;
}

Rgb image_grid_mark(Rgb p, float w) {
    static const Rgb dark_line = {0, 0, 0}, light_line = {120, 140, 200};
    return rgb_mix(p, rgb_luma(p) >= 0.5f ? dark_line : light_line, w);
}

void image_patch_grid(Rgb *px, int w, int h, int grid) {
    const bool lines = w >= IMAGE_GRID_LINE_MIN * grid && h >= IMAGE_GRID_LINE_MIN * grid;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            Rgb *p = &px[(size_t)y * w + x];
            int patch = image_patch_at(x, y, w, h, grid);
            if (lines) {
                // a pixel whose left or upper neighbour is in another patch is on a line
                bool edge = (x > 0 && image_patch_at(x - 1, y, w, h, grid) != patch) ||
                            (y > 0 && image_patch_at(x, y - 1, w, h, grid) != patch);
                if (edge) *p = image_grid_mark(*p, 0.45f);
            } else if ((patch / grid + patch % grid) % 2) {
                *p = image_grid_mark(*p, 0.35f); // strong enough to show on a photo
            }
        }
}

void image_overlay(Rgb *px, int w, int h, const float *patch_t, int grid, RampKind kind,
                   float opacity, ColourMode mode) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            Rgb *p = &px[(size_t)y * w + x];
            // the image in dim grey keeps its shapes readable under the colours
            uint8_t grey = (uint8_t)lrintf(rgb_luma(*p) * 110.0f);
            // the ramp as drawn in `mode`, so that in 256 colours near zero stays grey
            Rgb heat = ramp_rgb_shown(kind, patch_t[image_patch_at(x, y, w, h, grid)], mode);
            *p = rgb_mix((Rgb){grey, grey, grey}, heat, opacity);
        }
}
