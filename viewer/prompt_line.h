/**
 * @file prompt_line.h
 * @brief The line typed in the status row, without the terminal: typing into
 *        it, and the export (e) it asks for.
 *
 * The line holds as much as a path may be (PATH_MAX bytes with the NUL), so
 * any file name the system can open can be typed or pasted. What does not fit
 * is never cut off quietly: the key is refused, the title row says so, and
 * Enter then does nothing with the line, since what it holds is not what was
 * typed. An export written under a shortened name would land in another file.
 *
 * The curses side (tui_prompt.c) draws the line and hands keys here; nothing
 * here includes curses, so the viewer_export suite tests it without a terminal.
 */
#ifndef VIEWER_PROMPT_LINE_H
#define VIEWER_PROMPT_LINE_H

#include <stdbool.h>

#include "state.h"

/** @defgroup viewer_prompt_line Viewer prompt line
 *  @brief The status row's line: typed whole or refused, never cut.
 *  @{
 */

/** @brief Open an empty line for @p kind (B, /, e, W, T, D). */
void prompt_line_open(State *s, PromptKind kind);

/**
 * @brief Add a typed character to the end of the line.
 * @param[in,out] s  its prompt; when full, prompt_overflow is set and the message says so
 * @param[in] ch     a printable ASCII character (32 to 126); others are ignored
 * @return true when the character was kept.
 */
bool prompt_line_type(State *s, int ch);

/** @brief Remove the last character (Backspace). */
void prompt_line_erase(State *s);

/**
 * @brief Whether the line holds everything that was typed into it.
 * @return true, or false with the message saying the line was too long and nothing was done.
 */
bool prompt_line_whole(State *s);

/**
 * @brief Enter on the export line: write the tensor shown to the name typed
 *        (.npy, or safetensors for a name ending in .safetensors), or to
 *        export_default_path() when nothing was typed.
 *
 * Refused, with the reason in the message and no file touched: a line that lost
 * characters (prompt_line_whole()), a stage not computed yet or dropped by the
 * history, and a name that is one of the files the pass reads (the weights,
 * the picture).
 * @param[in,out] s  the stage shown and its tensor; the message tells what happened
 */
void prompt_line_export(State *s);

/** @} */
#endif
