/**
 * @file colour.h
 * @brief Colour ramps for heatmaps and the mapping of RGB onto what a terminal can show.
 *
 * A heatmap value is first placed on [0, 1] (heatmap.h), then turned into a
 * colour by a ramp: a sequential ramp (dark violet → teal → yellow, after
 * matplotlib's viridis) for values of one sign such as attention
 * probabilities, a diverging ramp (blue → near-white → red) centred on zero
 * for signed activations. The terminal then gets the nearest colour it has:
 * 24-bit, one of xterm's 256, one of the 8 ANSI colours, or, on a monochrome
 * terminal or with NO_COLOR, a character from an ASCII density ramp.
 *
 * Nothing here touches the terminal, so it is tested without one.
 */
#ifndef VIEWER_COLOUR_H
#define VIEWER_COLOUR_H

#include <stdint.h>

#include "io/picture.h" // Rgb and picture_viridis(): the terminal's colours are the PNGs'

/** @defgroup viewer_colour Viewer colours
 *  @brief Ramps from a number in [0, 1] to a colour, and RGB to terminal colours.
 *  @{
 */

/** Which ramp a heatmap uses. */
typedef enum {
    RAMP_SEQUENTIAL, /**< low → high, for values of one sign (probabilities) */
    RAMP_DIVERGING,  /**< negative → zero → positive, zero at t = 0.5 */
} RampKind;

/** What a terminal can show; chosen once at start-up. */
typedef enum {
    COLOUR_MONO,   /**< no colour (monochrome terminal or NO_COLOR): ASCII ramps */
    COLOUR_BASIC,  /**< the 8 ANSI colours */
    COLOUR_256,    /**< xterm's 256-colour palette */
    COLOUR_DIRECT, /**< 24-bit colour (a direct-colour terminfo entry such as xterm-direct) */
} ColourMode;

/** The characters of the ASCII density ramp, lightest first. */
#define ASCII_RAMP " .:-=+*#%@"

/**
 * @brief The colour of @p t on a ramp.
 * @param[in] kind  sequential or diverging
 * @param[in] t     position in [0, 1]; clamped; NaN gives mid grey
 */
Rgb ramp_rgb(RampKind kind, float t);

/** @brief The ASCII_RAMP character for @p t in [0, 1] (clamped; NaN gives ' '). */
char ramp_ascii(float t);

/**
 * @brief Quantise @p t in [0, 1] to one of @p levels steps, 0 … levels-1
 *        (so few distinct colour pairs are needed).
 */
int ramp_level(float t, int levels);

/** @brief Blend: (1 − w)·a + w·b, per channel, w in [0, 1]. */
Rgb rgb_mix(Rgb a, Rgb b, float w);

/** @brief Perceived brightness in [0, 1] (Rec. 601 weights 0.299, 0.587, 0.114). */
float rgb_luma(Rgb c);

/**
 * @brief The nearest xterm-256 colour index: the 6×6×6 cube (16–231) or the
 *        grey ramp (232–255), whichever is closer.
 */
int rgb_to_xterm256(Rgb c);

/** @brief The colour of xterm-256 entry @p index (16–255; the cube and the grey ramp). */
Rgb xterm256_rgb(int index);

/** @brief CIE L*a*b* (D65) of an sRGB colour: lab[0] is the lightness L*, 0–100. */
void rgb_to_lab(Rgb c, float lab[3]);

/** How many steps a ramp is drawn in on a terminal (few colour pairs). */
#define RAMP_LEVELS 32
/** The sequential ramp's 256-colour version is grey below this t, its hue faded in up to it. */
#define RAMP_CHROMA_FROM 0.2f

/**
 * @brief The xterm-256 entry for @p t on a ramp, in RAMP_LEVELS steps; -1 for NaN.
 *        The sequential ramp starts at a neutral dark and grows lighter at every
 *        step, the entries nearest viridis in L*a*b* (its hue faded in up to
 *        t = RAMP_CHROMA_FROM); the diverging one is the nearest entry to each step.
 */
int ramp_xterm256(RampKind kind, float t);

/**
 * @brief The ramp's colour as the terminal in @p mode will show it: in 256
 *        colours the palette entry's RGB (so an overlay blends what is drawn),
 *        otherwise ramp_rgb().
 */
Rgb ramp_rgb_shown(RampKind kind, float t, ColourMode mode);

/** @brief The nearest ANSI colour, 0–7 (black, red, green, yellow, blue, magenta, cyan, white). */
int rgb_to_basic8(Rgb c);

/**
 * @brief The colour number to hand to curses in @p mode: packed 0xRRGGBB for
 *        direct colour, an xterm-256 index, or an ANSI index; -1 for COLOUR_MONO.
 */
int rgb_to_terminal(Rgb c, ColourMode mode);

/** @} */
#endif
