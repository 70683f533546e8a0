/**
 * @file format.h
 * @brief Numbers for people: FLOPs, durations, shapes with axis names (bytes are lib's vit_bytes()).
 */
#ifndef VIEWER_FORMAT_H
#define VIEWER_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tensor.h"

/** @defgroup viewer_format Viewer number formatting
 *  @brief Short human-readable numbers for the info pane.
 *  @{
 */

/** @brief A count with an SI prefix: 950 → "950", 1.23e9 → "1.23 G". Returns @p buf. */
char *fmt_si(char *buf, size_t size, double v);
/** @brief Bytes in binary units: 621 KiB, 1.8 MiB. Returns @p buf. */
/** @brief A duration: "0.4 ms", "12 ms", "1.3 s". Returns @p buf. */
char *fmt_seconds(char *buf, size_t size, double seconds);
/** @brief A time left on a clock: "0:02:05" (h:mm:ss); "-:--:--" when not known. Returns @p buf. */
char *fmt_clock(char *buf, size_t size, double seconds);
/**
 * @brief A pass's progress: a bar of @p cells, @p done of @p count filled, and
 *        the time it has taken, "█████░░░░░ 1.30 s" (ASCII: "[#####-----] 1.30 s").
 * @return @p buf
 */
char *fmt_progress(char *buf, size_t size, int done, int count, int cells, double seconds,
                   bool utf8);
/**
 * @brief A shape with its axis names, e.g. "(B=1, H=3, N=197, N=197)".
 * @param[in] axes  comma-separated names as in VitStage.axes; missing names print as sizes alone
 * @return @p buf
 */
char *fmt_shape_axes(char *buf, size_t size, const Tensor *t, const char *axes);

/**
 * @brief @p text with the symbols the stage table uses (·, ᵀ, √, ×, …) spelled
 *        in ASCII, for terminals without UTF-8; other non-ASCII becomes '?'.
 * @return @p buf
 */
char *fmt_ascii(char *buf, size_t size, const char *text);

/** @} */
#endif
