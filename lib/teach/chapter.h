/**
 * @file chapter.h
 * @brief The narrator every chapter program speaks through.
 *
 * A chapter is a function `void run(Chapter *ch)` that explains one idea in
 * prose and computes with lib/. Every number it quotes goes through ch_value(),
 * ch_show() or ch_pin(), which both print (when ch->out is set) and hand the
 * value, by name, to ch->pin: the same TraceFn stream the model uses. Run as a
 * program, the stream goes nowhere and the prose goes to stdout; run by the
 * tests, the prose is silenced and the stream is compared with PyTorch goldens.
 * So every number a student reads is a number a test has checked.
 */
#ifndef VIT_CHAPTER_H
#define VIT_CHAPTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"

/** @defgroup chapter Chapter narration
 *  @brief Prose for the reader, named values for the tests.
 *
 *  Used by every chapter, from @ref chapter01 "chapter 01" on: it is the narrator they speak
 *  through. Pinned by the suites @ref test_ch01_dot_product.c "ch01_dot_product" (@ref answer_keys "the answer keys").
 *  @{
 */

/** Where a chapter's words and numbers go. */
typedef struct {
    FILE *out;      /**< prose destination; NULL keeps quiet (tests) */
    TraceFn pin;    /**< receives every quoted value by name; NULL ignores them */
    void *pin_user; /**< passed to pin */
    int width;      /**< wrap prose at this column, e.g. 78 */
    bool stop;      /**< set by a test's pin once a value is wrong: the sections
                         still to come are skipped (see ch_section()) */
} Chapter;

/** What starts each line of ch_say()'s prose when the environment has
 *  VIT_CHAPTER_PROSE=marked (the book's capture, scripts/docs.sh): the ASCII
 *  record separator, so the capture tells prose from tables and values. */
#define CHAPTER_PROSE_MARK "\036"

/** A chapter's body. */
typedef void (*ChapterFn)(Chapter *ch);

/** @brief Print the chapter banner: "Chapter 01 · The dot product". */
void ch_title(Chapter *ch, const char *number, const char *title);
/**
 * @brief Print a section heading, underlined, and say whether the section
 *        should run.
 *
 * A section starts `if (!ch_section(ch, "2. ...")) return;`. Run as a
 * program, it always runs. Under a test, once a pinned value came out wrong
 * the test sets ch->stop: each later section then returns at once, since
 * every number it would compute rests on the wrong one and would only
 * repeat the first error (and a skeleton's chapter fails in seconds, not in
 * the half minute its later sections take).
 * @return false when ch->stop is set (nothing printed), true otherwise
 */
bool ch_section(Chapter *ch, const char *heading);
/** @brief Print one paragraph (printf-style), word-wrapped, followed by a blank line. */
void ch_say(Chapter *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** @brief A paragraph the data decides (a verdict, a branch taken on the
 *         numbers): printed as ch_say() prints, but never marked as prose, so the
 *         book's box keeps it whole beside the numbers it concludes from. */
void ch_verdict(Chapter *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** @brief Print one line verbatim (tables, formulas), no wrapping. */
void ch_line(Chapter *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** @brief Pin a scalar under @p name and return it, for use inside ch_say(). */
float ch_value(Chapter *ch, const char *name, float value);
/** @brief ch_value() under a printf-style name: `ch_valuef(ch, v, "var_d%d", 768)`. */
float ch_valuef(Chapter *ch, float value, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** @brief Pin the largest \f$|a_i - b_i|\f$ over @p n floats under @p name, and return it. */
float ch_max_diff(Chapter *ch, const char *name, const float *a, const float *b, size_t n);
/** @brief Pin @p t under @p name and print it PyTorch-style. */
void ch_show(Chapter *ch, const char *name, const Tensor *t);
/** @brief Pin @p t under @p name without printing it. */
void ch_pin(Chapter *ch, const char *name, const Tensor *t);


/**
 * @brief What a chapter concludes from a comparison of two timings.
 *
 * The ratios are one speed over another, one per interleaved round (each
 * round runs both once, so that load coming and going falls on both). A
 * conclusion needs every round beyond the margin on the same side of 1.
 */
typedef enum {
    SPEED_FASTER, /**< every round ≥ SPEED_MARGIN */
    SPEED_SLOWER, /**< every round ≤ 1 / SPEED_MARGIN */
    SPEED_SAME,   /**< every round between 1 / SPEED_MARGIN and SPEED_MARGIN */
    SPEED_NOISY,  /**< none of those: too noisy to tell */
} SpeedVerdict;
/** @brief The margin of a verdict: 10 % either side of 1. */
#define SPEED_MARGIN 1.1
/** @brief The median of @p n values (at most 100), @p v left as it was. */
double speed_median(const double *v, int n);
/**
 * @brief The verdict on @p n speed ratios, and their smallest, median and
 *        largest (each pointer may be NULL).
 */
SpeedVerdict speed_verdict(const double *ratios, int n, double *lo, double *mid, double *hi);
/**
 * @brief The verdict on @p n speed ratios as a sentence: "On this machine
 *        @p what 2.0 times faster than @p against: ..." (or "% faster",
 *        "slower", "about as fast as"), or "Against @p against this run was
 *        too noisy to tell: ...", with the median and the range of the rounds.
 */
SpeedVerdict speed_compare(char *buf, size_t size, const double *ratios, int n, const char *what,
                           const char *against);

/**
 * @brief One number of a chapter's experiments a learner may change from the
 *        command line, as `--name VALUE`: a seed, a count of images, of steps.
 *
 * The chapter reads ->value. Its default is what the book prints and the tests
 * pin: they run the chapter's body without chapter_main_knobs(), so they always
 * see it.
 */
typedef struct {
    const char *name;    /**< the option without its dashes, e.g. "seed" */
    const char *meaning; /**< what it changes, one line of --help */
    int value;           /**< the default, then what the command line set */
    int min;             /**< the smallest value it takes */
    int max;             /**< the largest value it takes */
    int multiple;        /**< the value must be a multiple of this (0 or 1: any) */
} ChapterKnob;

/**
 * @brief Set @p knobs from `--name VALUE` (or `--name=VALUE`) arguments.
 * @param[in]     argc, argv  the program's arguments (argv[0] is skipped)
 * @param[in,out] knobs       the chapter's knobs, holding their defaults
 * @param[in]     count       how many
 * @return VIT_OK; VIT_ERR_USAGE naming the argument and what it takes (an
 *         unknown option, a missing or malformed value, one out of range)
 */
VitStatus chapter_parse_knobs(int argc, char **argv, ChapterKnob *knobs, int count, VitError *err);

/**
 * @brief The `main` of every chapter program: parses --help, runs @p run
 *        with prose on stdout, returns the exit code.
 * @param[in] argc, argv  the program's arguments
 * @param[in] run    the chapter's body
 * @param[in] about  one line for --help
 */
int chapter_main(int argc, char **argv, ChapterFn run, const char *about);

/**
 * @brief chapter_main() for a chapter whose experiments have knobs: --help
 *        lists them with their defaults; after the run, when one was changed,
 *        the command that repeats it is printed.
 */
int chapter_main_knobs(int argc, char **argv, ChapterFn run, const char *about,
                       ChapterKnob *knobs, int count);

/** @} */
#endif
