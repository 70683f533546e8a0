/**
 * @file colour.c
 * @brief Ramps and nearest-colour lookups (see colour.h).
 */
#include "colour.h"

#include <math.h>
#include <string.h>

// The sequential ramp is lib's picture_viridis() (picture.h), so a map has the same
// colours on the screen and in a PNG. The diverging one is a few anchor
// colours, evenly spaced on [0, 1], interpolated linearly.
static const Rgb diverging[] = {
    {33, 102, 172}, {146, 197, 222}, {247, 247, 247}, {244, 165, 130}, {178, 24, 43}, // RdBu
};

static float clamp01(float t) { return t < 0 ? 0 : t > 1 ? 1 : t; }

Rgb rgb_mix(Rgb a, Rgb b, float w) {
    w = clamp01(w);
    return (Rgb){(uint8_t)lrintf(a.r + (b.r - a.r) * w), (uint8_t)lrintf(a.g + (b.g - a.g) * w),
                 (uint8_t)lrintf(a.b + (b.b - a.b) * w)};
}

Rgb ramp_rgb(RampKind kind, float t) {
    if (isnan(t)) return (Rgb){128, 128, 128}; // grey on screen: the text beside says NaN
    if (kind == RAMP_SEQUENTIAL) return picture_viridis(t);
    const int segments = 4; // 5 anchors
    float x = clamp01(t) * segments;
    int i = (int)x;
    if (i >= segments) i = segments - 1;
    return rgb_mix(diverging[i], diverging[i + 1], x - (float)i);
}

char ramp_ascii(float t) {
    if (isnan(t)) return ' ';
    const int n = (int)strlen(ASCII_RAMP);
    return ASCII_RAMP[ramp_level(t, n)];
}

int ramp_level(float t, int levels) {
    if (isnan(t) || levels <= 1) return 0;
    int i = (int)(clamp01(t) * (float)levels);
    return i >= levels ? levels - 1 : i;
}

float rgb_luma(Rgb c) { return (0.299f * c.r + 0.587f * c.g + 0.114f * c.b) / 255.0f; }

static int sq(int x) { return x * x; }
static int dist2(Rgb a, Rgb b) { return sq(a.r - b.r) + sq(a.g - b.g) + sq(a.b - b.b); }

// The six intensities of each axis of xterm's colour cube.
static const int cube_level[6] = {0, 95, 135, 175, 215, 255};

// How far apart two colours look, for picking a palette entry: the distance,
// plus twice the change in each colour's departure from its own grey (its hue
// and chroma), so that a dark red is not matched to a crimson that happens to
// be nearer in plain RGB distance.
static int palette_distance(Rgb a, Rgb b) {
    const int ma = (a.r + a.g + a.b) / 3, mb = (b.r + b.g + b.b) / 3;
    const int hue = sq((a.r - ma) - (b.r - mb)) + sq((a.g - ma) - (b.g - mb)) +
                    sq((a.b - ma) - (b.b - mb));
    return dist2(a, b) + 2 * hue;
}

// The two cube levels around v (the same one twice at the ends).
static void cube_levels_around(int v, int out[2]) {
    int i = 0;
    while (i < 5 && cube_level[i + 1] <= v) i++;
    out[0] = i, out[1] = i < 5 ? i + 1 : 5;
}

int rgb_to_xterm256(Rgb c) {
    // the best of the eight cube colours around c, and the nearest grey
    int rs[2], gs[2], bs[2], best = -1, best_d = 1 << 30;
    cube_levels_around(c.r, rs), cube_levels_around(c.g, gs), cube_levels_around(c.b, bs);
    for (int i = 0; i < 8; i++) {
        const int r = rs[i >> 2], g = gs[(i >> 1) & 1], b = bs[i & 1];
        const Rgb cube = {(uint8_t)cube_level[r], (uint8_t)cube_level[g], (uint8_t)cube_level[b]};
        const int d = palette_distance(c, cube);
        if (d < best_d) best_d = d, best = 16 + 36 * r + 6 * g + b;
    }
    // grey ramp 232–255 is 8, 18, …, 238: the step nearest the mean
    int mean = (c.r + c.g + c.b) / 3;
    int step = mean < 8 ? 0 : mean > 238 ? 23 : (mean - 8 + 5) / 10;
    uint8_t v = (uint8_t)(8 + 10 * step);
    return palette_distance(c, (Rgb){v, v, v}) < best_d ? 232 + step : best;
}

Rgb xterm256_rgb(int index) {
    if (index >= 232) { // the grey ramp 232–255: 8, 18, …, 238
        const uint8_t v = (uint8_t)(8 + 10 * (index - 232));
        return (Rgb){v, v, v};
    }
    const int i = index < 16 ? 0 : index - 16; // the 16 system colours vary: not used here
    return (Rgb){(uint8_t)cube_level[i / 36], (uint8_t)cube_level[(i / 6) % 6],
                 (uint8_t)cube_level[i % 6]};
}

// sRGB's transfer curve undone, then CIE XYZ (D65) to L*a*b*: the space where
// equal distances look about equally different, and L* is lightness.
static float srgb_linear(uint8_t v) {
    const float c = v / 255.0f;
    return c <= 0.04045f ? c / 12.92f : powf((c + 0.055f) / 1.055f, 2.4f);
}

static float lab_f(float t) {
    return t > 216.0f / 24389 ? cbrtf(t) : (24389.0f / 27 * t + 16) / 116;
}

void rgb_to_lab(Rgb c, float lab[3]) {
    const float r = srgb_linear(c.r), g = srgb_linear(c.g), b = srgb_linear(c.b);
    const float x = (0.4124f * r + 0.3576f * g + 0.1805f * b) / 0.95047f;
    const float y = 0.2126f * r + 0.7152f * g + 0.0722f * b;
    const float z = (0.0193f * r + 0.1192f * g + 0.9505f * b) / 1.08883f;
    const float fx = lab_f(x), fy = lab_f(y), fz = lab_f(z);
    lab[0] = 116 * fy - 16, lab[1] = 500 * (fx - fy), lab[2] = 200 * (fy - fz);
}

static float lab_dist2(const float a[3], const float b[3]) {
    return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
           (a[2] - b[2]) * (a[2] - b[2]);
}

// The sequential ramp in 256 colours. Matching viridis entry by entry goes
// wrong at the dark end: its violet falls on saturated magentas (53), which
// read as "high" beside the greys a dim picture gets. So the target is viridis
// with its chroma faded in over the first fifth (a neutral dark at zero), each
// level takes the entry nearest it in L*a*b*, and never one darker than the
// level before: the ramp's lightness only grows, as viridis' does.
static void sequential_xterm256(int *out, int levels) {
    float prev_l = -1;
    for (int i = 0; i < levels; i++) {
        const float t = levels > 1 ? (float)i / (float)(levels - 1) : 0;
        float want[3];
        rgb_to_lab(picture_viridis(t), want);
        const float chroma = t < RAMP_CHROMA_FROM ? t / RAMP_CHROMA_FROM : 1;
        want[1] *= chroma, want[2] *= chroma;
        int best = 232;
        float best_d = INFINITY, best_l = 0;
        for (int e = 16; e < 256; e++) {
            float lab[3];
            rgb_to_lab(xterm256_rgb(e), lab);
            const float d = lab_dist2(lab, want);
            if (lab[0] >= prev_l && d < best_d) best_d = d, best = e, best_l = lab[0];
        }
        out[i] = best;
        prev_l = best_l;
    }
}

int ramp_xterm256(RampKind kind, float t) {
    if (isnan(t)) return -1;
    const int level = ramp_level(t, RAMP_LEVELS);
    if (kind != RAMP_SEQUENTIAL)
        return rgb_to_xterm256(ramp_rgb(kind, (float)level / (RAMP_LEVELS - 1)));
    static int table[RAMP_LEVELS], built; // the same for every run: worked out once
    if (!built) sequential_xterm256(table, RAMP_LEVELS), built = 1;
    return table[level];
}

Rgb ramp_rgb_shown(RampKind kind, float t, ColourMode mode) {
    if (mode == COLOUR_256 && !isnan(t)) return xterm256_rgb(ramp_xterm256(kind, t));
    return ramp_rgb(kind, t);
}

int rgb_to_basic8(Rgb c) {
    // the usual xterm rendering of the 8 ANSI colours
    static const Rgb ansi[8] = {{0, 0, 0},     {205, 0, 0},   {0, 205, 0},   {205, 205, 0},
                                {0, 0, 238},   {205, 0, 205}, {0, 205, 205}, {229, 229, 229}};
    int best = 0;
    for (int i = 1; i < 8; i++)
        if (dist2(c, ansi[i]) < dist2(c, ansi[best])) best = i;
    return best;
}

int rgb_to_terminal(Rgb c, ColourMode mode) {
    switch (mode) {
    case COLOUR_DIRECT: return (c.r << 16) | (c.g << 8) | c.b;
    case COLOUR_256: return rgb_to_xterm256(c);
    case COLOUR_BASIC: return rgb_to_basic8(c);
    case COLOUR_MONO: break;
    }
    return -1;
}
