/**
 * @file synth.c
 * @brief The generated test picture (see synth.h).
 */
#include "synth.h"
#include "base/util.h"

#include <stdlib.h>

typedef struct {
    float r, g, b;
} Colour;

// Is (u, v) in the triangle with apex (0.30, 0.25) and base v = 0.42 from u = 0.11 to 0.49?
static int in_roof(float u, float v) {
    if (v < 0.25f || v > 0.42f) return 0;
    float half = 0.19f * (v - 0.25f) / 0.17f; // widens linearly to the base
    return u > 0.30f - half && u < 0.30f + half;
}

static int in_box(float u, float v, float u0, float u1, float v0, float v1) {
    return u >= u0 && u < u1 && v >= v0 && v < v1;
}

static int in_disc(float u, float v, float cu, float cv, float r) {
    return (u - cu) * (u - cu) + (v - cv) * (v - cv) < r * r;
}

// The colour at relative position (u, v), u to the right, v down; later shapes cover earlier.
static Colour scene(float u, float v) {
    Colour c;
    if (v < 0.62f) { // sky, lighter towards the horizon
        float t = v / 0.62f;
        c = (Colour){0.27f + 0.47f * t, 0.51f + 0.35f * t, 0.78f + 0.18f * t};
    } else { // grass, darker towards the bottom
        float t = (v - 0.62f) / 0.38f;
        c = (Colour){0.24f - 0.08f * t, 0.59f - 0.16f * t, 0.24f - 0.08f * t};
    }
    if (in_disc(u, v, 0.80f, 0.18f, 0.09f)) c = (Colour){1.00f, 0.84f, 0.24f};        // sun
    if (in_box(u, v, 0.65f, 0.70f, 0.45f, 0.74f)) c = (Colour){0.40f, 0.26f, 0.14f}; // trunk
    if (in_disc(u, v, 0.675f, 0.42f, 0.10f)) c = (Colour){0.12f, 0.40f, 0.16f};      // crown
    if (in_box(u, v, 0.14f, 0.46f, 0.42f, 0.78f)) c = (Colour){0.75f, 0.20f, 0.16f}; // wall
    if (in_roof(u, v)) c = (Colour){0.43f, 0.24f, 0.16f};                             // roof
    if (in_box(u, v, 0.19f, 0.26f, 0.48f, 0.56f)) c = (Colour){0.75f, 0.90f, 1.00f}; // window
    if (in_box(u, v, 0.32f, 0.39f, 0.60f, 0.78f)) c = (Colour){0.31f, 0.20f, 0.12f}; // door
    return c;
}

void synth_image(float *rgb, int S) {
    const size_t plane = (size_t)S * S;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            // sample the pixel's centre so the picture looks the same at every size
            Colour c = scene((x + 0.5f) / (float)S, (y + 0.5f) / (float)S);
            size_t i = (size_t)y * S + x;
            rgb[i] = c.r, rgb[plane + i] = c.g, rgb[2 * plane + i] = c.b;
        }
}

Tensor synth_input(const VitConfig *cfg) {
    const int S = cfg->image_size, C = cfg->channels;
    const size_t plane = (size_t)S * S;
    float *rgb = vit_malloc(3 * plane * sizeof(float));
    synth_image(rgb, S);
    Tensor t = tensor_new(4, 1, C, S, S);
    for (int c = 0; c < C; c++)
        for (size_t i = 0; i < plane; i++)
            t.data[c * plane + i] = (rgb[(c % 3) * plane + i] - 0.5f) / 0.5f; // mean = std = 0.5
    free(rgb);
    return t;
}
