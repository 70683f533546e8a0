/**
 * @file tui.h
 * @brief The terminal side of the viewer: colour roles, drawing helpers, the
 *        panes' draw and key functions, key tables.
 *
 * Every pane has `x_draw(const State *)`, which only reads the state, and
 * `x_key(State *, int key)`, which changes it (as in ncdu and htop). Each pane's
 * keys are one table (KeyTable) that both dispatches them and lists them in
 * the help screen, so the two cannot drift apart. Colours are semantic roles
 * (tui_ui.c) with a monochrome fallback; data colours (heatmaps, the image)
 * go through a small cache of colour pairs.
 *
 * Only the tui_*.c files and main.c include curses.
 */
#ifndef VIEWER_TUI_H
#define VIEWER_TUI_H

#define NCURSES_WIDECHAR 1 // cchar_t and the wide-character functions
#include <curses.h>

#include "colour.h"
#include "state.h"

/** @defgroup viewer_tui Viewer terminal interface
 *  @brief Panes, keys and drawing on top of ncurses.
 *  @{
 */

/** What the screen uses colour for; a table in tui_ui.c gives each colours and a mono attribute. */
typedef enum {
    ROLE_NORMAL,     /**< ordinary text */
    ROLE_TITLE,      /**< the title row */
    ROLE_STATUS,     /**< the status row */
    ROLE_KEY,        /**< a key name in hints and help */
    ROLE_SELECTED,   /**< the selected tree line */
    ROLE_PENDING,    /**< a stage not computed yet */
    ROLE_FRONTIER,   /**< the marker of how far the forward pass has run */
    ROLE_BREAKPOINT, /**< a breakpoint mark */
    ROLE_HEADING,    /**< a stage name, a caption */
    ROLE_FORMULA,    /**< a formula */
    ROLE_MESSAGE,    /**< feedback for the last action */
    ROLE_ERROR,      /**< something is wrong (too small, values dropped) */
    ROLE_BAR,        /**< bars of the logits chart */
    ROLE_DIM,        /**< secondary text */
    ROLE_COUNT       /**< number of roles */
} Role;

/** What a key asks of the forward pass. */
typedef enum {
    ACT_UNHANDLED = -1, /**< no binding took the key */
    ACT_NONE = 0,       /**< handled; stay in the UI */
    ACT_RUN,            /**< resume the forward pass (a target is set) */
    ACT_RESTART,        /**< abandon this pass and start again */
    ACT_QUIT,           /**< abandon this pass and exit */
    ACT_REQUEST,        /**< abandon this pass, do State::request, run the new pass */
} UiAction;

/** One binding: the keys, how the help names them, what they do. */
typedef struct {
    int keys[6];                       /**< key codes, 0-terminated */
    const char *label;                 /**< e.g. "j k ↑ ↓" */
    const char *help;                  /**< e.g. "select the next / previous stage" */
    UiAction (*fn)(State *s, int key); /**< the action; ACT_UNHANDLED to pass the key on */
} KeyBinding;

/** A pane's bindings. */
typedef struct {
    const char *title;           /**< heading in the help screen */
    const KeyBinding *bindings;  /**< the bindings */
    int count;                   /**< how many */
} KeyTable;

/** @brief Run the binding of @p key in @p table, or return ACT_UNHANDLED. */
UiAction keytable_dispatch(const KeyTable *table, State *s, int key);

/* tui_ui.c: terminal setup, roles, drawing helpers */

/** @brief newterm() on stdout, in 24-bit colour when COLORTERM says the terminal
 *         has it (TERM's -direct entry); NULL when the terminal cannot be driven. */
SCREEN *ui_open_terminal(void);

/** @brief Start curses; fills s->colour, s->utf8 and the layout. @p force_mono: --mono. */
void ui_start(State *s, bool force_mono);
/** @brief True (and curses resized) when the terminal's size is not curses' own: a
 *         resize whose SIGWINCH was lost. Called before each wait for a key. */
bool ui_missed_resize(void);
/** @brief Give the terminal back. Safe to call twice. */
void ui_stop(void);
/** @brief The attribute for a role in the current colour mode. */
attr_t ui_role(Role r);
/**
 * @brief Print UTF-8 @p text at (y, x), at most @p w columns (ASCII spellings
 *        without UTF-8). @return columns used
 */
int ui_text(int y, int x, int w, Role role, const char *text);
/** @brief ui_text() with a printf format. */
int ui_printf(int y, int x, int w, Role role, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/** @brief One cell showing two stacked pixels (▀ with fg = top, bg = bottom). */
void ui_pixels(const State *s, int y, int x, Rgb top, Rgb bottom);
/** @brief One cell of a heatmap: two values on a ramp, or an ASCII density in mono. */
void ui_heat(const State *s, int y, int x, RampKind kind, float t_top, float t_bottom);
/** @brief ASCII @p text on a heatmap cell's colour (ramp position @p t), in black or
 *         white, whichever reads; plain text in mono. */
void ui_heat_text(const State *s, int y, int x, RampKind kind, float t, const char *text);
/** @brief Pixel rows per cell: 2 with colour and UTF-8 (half blocks), else 1. */
int ui_pixel_rows(const State *s);
/** @brief Fill a rectangle with blanks. */
void ui_clear(Rect r);
/** @brief A glyph: the UTF-8 one, or the ASCII fallback. */
const char *ui_glyph(const State *s, const char *utf8, const char *ascii);

/* the panes */

/** @brief The whole screen (or the too-small note), then refresh: the one redraw. */
void screen_draw(const State *s);
/** @brief The title row: model, picture, the last message. */
void title_draw(const State *s);
/** @brief The status row: where the pass is, what is selected, the main keys; or the prompt. */
void status_draw(const State *s);
/** @brief The pipeline tree with progress and breakpoint marks. */
void tree_draw(const State *s);
/** @brief Tree keys: selection, blocks, breakpoints. */
UiAction tree_key(State *s, int key);
/** @brief Name, formula, shape, statistics, cost and time of the selected stage. */
void info_draw(const State *s);
/** @brief The picture that suits the selected stage. */
void view_draw(const State *s);
/** @brief View keys: heads, query token, numbers, scrolling. */
UiAction view_key(State *s, int key);
/** @brief The key list over the screen. */
void help_draw(const State *s);
/** @brief Keys while the help is open (any closes it). */
UiAction help_key(State *s, int key);
/** @brief The status row while a line is typed: what is asked, and the line so far. */
void prompt_draw(const State *s, Rect r);
/** @brief Keys while typing a line: a breakpoint, a stage, a number, a file, a threshold. */
UiAction prompt_key(State *s, int key);
/** @brief Keys while the fingerprints (F, tui_fingerprints.c) are shown: S sorts, the arrows
 *         scroll; ACT_UNHANDLED for others. */
UiAction fingerprint_key(State *s, int key);
/** @brief Keys while position similarity (E, tui_positions.c) is shown: the arrows move its
 *         patch; ACT_UNHANDLED for others. */
UiAction position_key(State *s, int key);
/** @brief The head-importance view (I, tui_heads.c): the grid as a heatmap with numbers. */
void importance_draw(const State *s, Rect r);
/** @brief Its keys while it is open: the cursor, Enter, closing; ACT_UNHANDLED for others. */
UiAction importance_key(State *s, int key);
/** @brief I: open the view, measuring the grid first (a request) if the picture has none. */
UiAction importance_open(State *s, int key);
/** @brief P on the input stage (tui_paint.c): painting the picture by hand on or off. */
UiAction paint_toggle(State *s, int key);
/** @brief Its keys while painting: the cursor, space, stopping; ACT_UNHANDLED for others. */
UiAction paint_key(State *s, int key);
/** @brief The mouse reported while painting, and only then (the terminal's own text
 *         selection works the rest of the time); called before each key is read. */
void paint_mouse(const State *s);
/** @brief Keys that drive the forward pass and the screen (s n f c r b B ? q Tab). */
UiAction app_key(State *s, int key);

/** The tables the help screen lists, in order; NULL-terminated. */
extern const KeyTable *const all_key_tables[];
/** The app's keys (tui_app.c). */
extern const KeyTable app_keys;
/** The tree's keys (tui_tree.c). */
extern const KeyTable tree_keys;
/** The view's keys (tui_view.c). */
extern const KeyTable view_keys;
/** The head-importance view's keys (tui_heads.c). */
extern const KeyTable importance_keys;
/** The painting keys (tui_paint.c). */
extern const KeyTable paint_keys;
/** The head fingerprints' keys (tui_fingerprints.c). */
extern const KeyTable fingerprint_keys;
/** Position similarity's keys (tui_positions.c). */
extern const KeyTable position_keys;

/** @} */
#endif
