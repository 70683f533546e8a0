/**
 * @file test_viewer_heatmap.c
 * @brief The viewer's heatmap pooling and scaling, its colour ramps and the
 *        mapping of colours onto terminals (viewer/heatmap.h, viewer/colour.h).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../viewer/colour.h"
#include "../viewer/format.h"
#include "../viewer/heatmap.h"

static void test_pool_mean_halves(void) {
    // a 4×4 matrix pooled to 2×2: each cell is the mean of a 2×2 block
    const float m[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    float out[4];
    heatmap_pool(out, 2, 2, m, 4, 4, POOL_MEAN);
    CU_ASSERT_DOUBLE_EQUAL(out[0], (1 + 2 + 5 + 6) / 4.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], (3 + 4 + 7 + 8) / 4.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[2], (9 + 10 + 13 + 14) / 4.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[3], (11 + 12 + 15 + 16) / 4.0, 1e-6);
}

static void test_pool_max(void) {
    const float m[8] = {1, -5, 3, 2, 0, 9, -1, 4}; // (2, 4)
    float out[2];
    heatmap_pool(out, 1, 2, m, 2, 4, POOL_MAX);
    CU_ASSERT_EQUAL(out[0], 9);  // max of {1, -5, 0, 9}
    CU_ASSERT_EQUAL(out[1], 4);  // max of {3, 2, -1, 4}
}

static void test_pool_uneven_blocks_cover_everything(void) {
    // 5 rows into 2 cells: rows 0–1 and rows 2–4 (⌊i·5/2⌋), every row used once
    const float m[5] = {1, 1, 10, 10, 10};
    float out[2];
    heatmap_pool(out, 2, 1, m, 5, 1, POOL_MEAN);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 1, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 10, 1e-6);
    // a (197, 768) activation into 20 × 60 cells keeps the overall mean
    static float big[197 * 768];
    double sum = 0;
    for (int i = 0; i < 197 * 768; i++)
        big[i] = (float)((i * 7919) % 1000) / 1000.0f, sum += big[i];
    float cells[20 * 60];
    heatmap_pool(cells, 20, 60, big, 197, 768, POOL_MEAN);
    double cell_min = 1, cell_max = 0, cell_sum = 0;
    for (int i = 0; i < 20 * 60; i++) {
        cell_min = fmin(cell_min, cells[i]), cell_max = fmax(cell_max, cells[i]);
        cell_sum += cells[i];
    }
    CU_ASSERT(cell_min >= 0 && cell_max <= 1);
    // blocks differ by at most a row or column, so the mean of means is close to the mean
    CU_ASSERT_DOUBLE_EQUAL(cell_sum / (20 * 60), sum / (197 * 768), 0.01);
}

static void test_pool_grows_by_repeating(void) {
    const float m[2] = {3, 7};
    float out[4];
    heatmap_pool(out, 1, 4, m, 1, 2, POOL_MEAN);
    CU_ASSERT_EQUAL(out[0], 3);
    CU_ASSERT_EQUAL(out[1], 3);
    CU_ASSERT_EQUAL(out[2], 7);
    CU_ASSERT_EQUAL(out[3], 7);
}

static void test_pool_skips_nan_and_inf(void) {
    const float m[4] = {NAN, 4, INFINITY, NAN};
    float out[2];
    heatmap_pool(out, 1, 2, m, 2, 2, POOL_MEAN); // columns {NaN, Inf} and {4, NaN}
    CU_ASSERT(isnan(out[0]));                    // nothing finite: blank
    CU_ASSERT_EQUAL(out[1], 4);
}

static void test_scale_sequential_and_diverging(void) {
    const float probs[4] = {0.1f, 0.4f, 0.2f, 0.3f};
    HeatScale s = heat_scale(probs, 4);
    CU_ASSERT_EQUAL(s.kind, RAMP_SEQUENTIAL);
    CU_ASSERT_DOUBLE_EQUAL(s.lo, 0.1, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(s.hi, 0.4, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(heat_position(&s, 0.25f), 0.5, 1e-6);
    const float signed_values[3] = {-1, 0.5f, 3};
    s = heat_scale(signed_values, 3);
    CU_ASSERT_EQUAL(s.kind, RAMP_DIVERGING);
    CU_ASSERT_EQUAL(s.lo, -3); // symmetric, so zero sits in the middle
    CU_ASSERT_EQUAL(s.hi, 3);
    CU_ASSERT_DOUBLE_EQUAL(heat_position(&s, 0), 0.5, 1e-6);
}

static void test_scale_edge_cases(void) {
    const float nan_only[2] = {NAN, NAN};
    HeatScale s = heat_scale(nan_only, 2);
    CU_ASSERT_EQUAL(s.lo, 0);
    CU_ASSERT_EQUAL(s.hi, 0);
    const float same[3] = {2, 2, 2};
    s = heat_scale(same, 3);
    CU_ASSERT_DOUBLE_EQUAL(heat_position(&s, 2), 0.5, 1e-6); // a constant map: mid ramp
    const float zeros[3] = {0, 0, 0}; // ... but all 0 (a head switched off): the bottom
    const HeatScale z = heat_scale(zeros, 3);
    CU_ASSERT_DOUBLE_EQUAL(heat_position(&z, 0), 0.0, 1e-6);
    s = (HeatScale){0, 1, RAMP_SEQUENTIAL};
    CU_ASSERT_EQUAL(heat_position(&s, -5), 0); // clamped
    CU_ASSERT_EQUAL(heat_position(&s, 5), 1);
    CU_ASSERT(isnan(heat_position(&s, NAN)));
}

static bool rgb_eq(Rgb a, int r, int g, int b) { return a.r == r && a.g == g && a.b == b; }

static void test_ramps(void) {
    // ends of the sequential ramp are viridis' ends; the diverging middle is near-white
    CU_ASSERT(rgb_eq(ramp_rgb(RAMP_SEQUENTIAL, 0), 68, 1, 84));
    CU_ASSERT(rgb_eq(ramp_rgb(RAMP_SEQUENTIAL, 1), 253, 231, 37));
    CU_ASSERT(rgb_eq(ramp_rgb(RAMP_SEQUENTIAL, 7), 253, 231, 37)); // clamped
    CU_ASSERT(rgb_eq(ramp_rgb(RAMP_DIVERGING, 0.5f), 247, 247, 247));
    Rgb neg = ramp_rgb(RAMP_DIVERGING, 0), pos = ramp_rgb(RAMP_DIVERGING, 1);
    CU_ASSERT(neg.b > neg.r); // negative is blue
    CU_ASSERT(pos.r > pos.b); // positive is red
    CU_ASSERT(rgb_eq(ramp_rgb(RAMP_SEQUENTIAL, NAN), 128, 128, 128));
    // one map, one set of colours: the screen's ramp is the PNGs' viridis (picture.h)
    for (int i = 0; i <= 36; i++) {
        const Rgb v = picture_viridis(i / 36.0f), r = ramp_rgb(RAMP_SEQUENTIAL, i / 36.0f);
        CU_ASSERT(rgb_eq(r, v.r, v.g, v.b));
    }
    // and near matplotlib's picture_viridis(0.5) = (0.127568, 0.566949, 0.550556) = (33, 145, 140)
    const Rgb mid = ramp_rgb(RAMP_SEQUENTIAL, 0.5f);
    CU_ASSERT(abs(mid.r - 33) <= 3 && abs(mid.g - 145) <= 3 && abs(mid.b - 140) <= 3);
    // the sequential ramp gets brighter monotonically (so it reads in grey too)
    float last = -1;
    for (int i = 0; i <= 20; i++) {
        float l = rgb_luma(ramp_rgb(RAMP_SEQUENTIAL, i / 20.0f));
        CU_ASSERT(l > last);
        last = l;
    }
}

static void test_ascii_ramp_and_levels(void) {
    CU_ASSERT_EQUAL(ramp_ascii(0), ' ');
    CU_ASSERT_EQUAL(ramp_ascii(1), '@');
    CU_ASSERT_EQUAL(ramp_ascii(0.5f), ASCII_RAMP[5]);
    CU_ASSERT_EQUAL(ramp_ascii(NAN), ' ');
    CU_ASSERT_EQUAL(ramp_level(0, 32), 0);
    CU_ASSERT_EQUAL(ramp_level(1, 32), 31);
    CU_ASSERT_EQUAL(ramp_level(0.5f, 32), 16);
    CU_ASSERT_EQUAL(ramp_level(-3, 32), 0);
}

// An xterm-256 palette entry as RGB (the cube 16–231, the greys 232–255).
static Rgb palette_rgb(int x) {
    static const int level[6] = {0, 95, 135, 175, 215, 255};
    if (x >= 232) return (Rgb){(uint8_t)(8 + 10 * (x - 232)), (uint8_t)(8 + 10 * (x - 232)),
                               (uint8_t)(8 + 10 * (x - 232))};
    x -= 16;
    return (Rgb){(uint8_t)level[x / 36], (uint8_t)level[x / 6 % 6], (uint8_t)level[x % 6]};
}

// In 256 colours the diverging ramp stays blue below the middle and red above
// it: no step is matched to a magenta or a crimson, a hue its legend lacks.
static void test_256_colours_keep_the_ramp_s_hues(void) {
    for (int i = 0; i < 32; i++) {
        const float t = (float)i / 31.0f;
        const Rgb c = ramp_rgb(RAMP_DIVERGING, t), m = palette_rgb(rgb_to_xterm256(c));
        const bool grey = m.r == m.g && m.g == m.b;
        if (c.b > c.r + 20) CU_ASSERT(grey || m.b >= m.r);             // the blue half
        if (c.r > c.b + 20) CU_ASSERT(grey || (m.r > m.b && m.g <= m.r)); // the red half
        if (c.r > c.b + 20) CU_ASSERT(m.b <= m.g + 40); // red, not magenta: blue no more than green
        const Rgb v = ramp_rgb(RAMP_SEQUENTIAL, t), w = palette_rgb(rgb_to_xterm256(v));
        CU_ASSERT(abs((int)w.r - v.r) <= 60 && abs((int)w.g - v.g) <= 60 &&
                  abs((int)w.b - v.b) <= 60);
    }
}

// L*a*b* against the CIE's published values for sRGB white and red.
static void test_lab(void) {
    float lab[3];
    rgb_to_lab((Rgb){255, 255, 255}, lab);
    CU_ASSERT(fabsf(lab[0] - 100) < 0.1f && fabsf(lab[1]) < 0.1f && fabsf(lab[2]) < 0.1f);
    rgb_to_lab((Rgb){255, 0, 0}, lab);
    CU_ASSERT(fabsf(lab[0] - 53.24f) < 0.1f && fabsf(lab[1] - 80.09f) < 0.2f &&
              fabsf(lab[2] - 67.20f) < 0.2f);
}

// The sequential ramp in 256 colours starts at a neutral dark (the nearest
// entry to viridis' violet, 53 or 54, made near-zero attention look high
// beside the grey of a dark background), and no step is darker than the one
// before, so the order of the colours is the order of the values.
static void test_256_colour_ramp_is_ordered(void) {
    float lab[3], first = 0, prev = -1;
    for (int i = 0; i < RAMP_LEVELS; i++) {
        const int e = ramp_xterm256(RAMP_SEQUENTIAL, (float)i / (RAMP_LEVELS - 1));
        CU_ASSERT(e >= 16 && e <= 255);
        rgb_to_lab(palette_rgb(e), lab);
        if (i == 0) {
            first = lab[0];
            CU_ASSERT(lab[0] < 30);                                // dark
            CU_ASSERT(sqrtf(lab[1] * lab[1] + lab[2] * lab[2]) < 5); // and without a hue
        }
        CU_ASSERT(lab[0] >= prev);
        prev = lab[0];
    }
    CU_ASSERT(prev > first + 50); // it spans the lightness viridis does
    const Rgb top = palette_rgb(ramp_xterm256(RAMP_SEQUENTIAL, 1));
    CU_ASSERT(top.r > top.b + 100 && top.g > top.b + 100); // viridis' yellow
    CU_ASSERT_EQUAL(ramp_xterm256(RAMP_SEQUENTIAL, NAN), -1);
    // what an overlay blends in 256 colours is what is drawn: grey at zero
    const Rgb zero = ramp_rgb_shown(RAMP_SEQUENTIAL, 0, COLOUR_256);
    CU_ASSERT(zero.r == zero.g && zero.g == zero.b);
    const Rgb v = ramp_rgb_shown(RAMP_SEQUENTIAL, 0, COLOUR_DIRECT);
    CU_ASSERT(rgb_eq(v, 68, 1, 84)); // true colour keeps viridis
}

static void test_terminal_colours(void) {
    CU_ASSERT_EQUAL(rgb_to_xterm256((Rgb){0, 0, 0}), 16);
    CU_ASSERT_EQUAL(rgb_to_xterm256((Rgb){255, 255, 255}), 231);
    CU_ASSERT_EQUAL(rgb_to_xterm256((Rgb){255, 0, 0}), 196);
    CU_ASSERT_EQUAL(rgb_to_xterm256((Rgb){128, 128, 128}), 244); // grey ramp: 8 + 10·12
    CU_ASSERT_EQUAL(rgb_to_xterm256((Rgb){95, 135, 175}), 16 + 36 * 1 + 6 * 2 + 3);
    CU_ASSERT_EQUAL(rgb_to_basic8((Rgb){200, 10, 10}), 1);  // red
    CU_ASSERT_EQUAL(rgb_to_basic8((Rgb){10, 10, 230}), 4);  // blue
    CU_ASSERT_EQUAL(rgb_to_basic8((Rgb){250, 250, 250}), 7); // white
    CU_ASSERT_EQUAL(rgb_to_terminal((Rgb){1, 2, 3}, COLOUR_DIRECT), 0x010203);
    CU_ASSERT_EQUAL(rgb_to_terminal((Rgb){1, 2, 3}, COLOUR_MONO), -1);
    Rgb mid = rgb_mix((Rgb){0, 0, 0}, (Rgb){200, 100, 50}, 0.5f);
    CU_ASSERT(rgb_eq(mid, 100, 50, 25));
}

static void test_ascii_spellings(void) {
    char buf[64];
    CU_ASSERT_STRING_EQUAL(fmt_ascii(buf, sizeof buf, "softmax(Q·Kᵀ/√Dh)"),
                           "softmax(Q*K^T/sqrt Dh)");
    CU_ASSERT_STRING_EQUAL(fmt_ascii(buf, sizeof buf, "16×16 → ok"), "16x16 -> ok");
    CU_ASSERT_STRING_EQUAL(fmt_ascii(buf, sizeof buf, "né"), "n?");
    CU_ASSERT_STRING_EQUAL(fmt_ascii(buf, 4, "abcdef"), "abc"); // truncated, terminated
}

CU_TestInfo tests_viewer_heatmap[] = {
    {"pool mean halves", test_pool_mean_halves},
    {"pool max", test_pool_max},
    {"pool uneven blocks cover everything", test_pool_uneven_blocks_cover_everything},
    {"pool grows by repeating", test_pool_grows_by_repeating},
    {"pool skips NaN and Inf", test_pool_skips_nan_and_inf},
    {"scale sequential and diverging", test_scale_sequential_and_diverging},
    {"scale edge cases", test_scale_edge_cases},
    {"colour ramps", test_ramps},
    {"ASCII ramp and levels", test_ascii_ramp_and_levels},
    {"256 colours keep the ramp's hues", test_256_colours_keep_the_ramp_s_hues},
    {"L*a*b*", test_lab},
    {"the 256-colour ramp is ordered from a neutral dark", test_256_colour_ramp_is_ordered},
    {"terminal colours", test_terminal_colours},
    {"ASCII spellings", test_ascii_spellings},
    CU_TEST_INFO_NULL,
};
