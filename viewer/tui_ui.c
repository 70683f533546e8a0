/**
 * @file tui_ui.c
 * @brief Terminal setup, the colour-role table, the colour-pair cache and the
 *        drawing helpers every pane uses.
 */
#include "tui.h"
#include "format.h"

#include <langinfo.h>
#include <math.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

/* ----------------------------------------------------------- colour roles */

// Every colour the interface uses, by meaning; the last column is what a
// monochrome terminal (or NO_COLOR) gets instead. -1 is the terminal's default.
static const struct {
    short fg, bg;
    attr_t colour_attr, mono_attr;
} roles[ROLE_COUNT] = {
    [ROLE_NORMAL] = {-1, -1, A_NORMAL, A_NORMAL},
    [ROLE_TITLE] = {COLOR_BLACK, COLOR_CYAN, A_NORMAL, A_REVERSE},
    [ROLE_STATUS] = {COLOR_BLACK, COLOR_WHITE, A_NORMAL, A_REVERSE},
    [ROLE_KEY] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [ROLE_SELECTED] = {COLOR_BLACK, COLOR_YELLOW, A_NORMAL, A_REVERSE},
    [ROLE_PENDING] = {-1, -1, A_DIM, A_DIM},
    [ROLE_FRONTIER] = {COLOR_GREEN, -1, A_BOLD, A_BOLD},
    [ROLE_BREAKPOINT] = {COLOR_RED, -1, A_BOLD, A_BOLD},
    [ROLE_HEADING] = {COLOR_CYAN, -1, A_BOLD, A_BOLD},
    [ROLE_FORMULA] = {COLOR_MAGENTA, -1, A_NORMAL, A_NORMAL},
    [ROLE_MESSAGE] = {COLOR_BLACK, COLOR_YELLOW, A_NORMAL, A_REVERSE | A_BOLD},
    [ROLE_ERROR] = {COLOR_RED, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [ROLE_BAR] = {COLOR_GREEN, -1, A_NORMAL, A_NORMAL},
    [ROLE_DIM] = {COLOR_CYAN, -1, A_NORMAL, A_DIM},
};

static ColourMode mode = COLOUR_MONO;
static bool started;

attr_t ui_role(Role r) {
    if (mode == COLOUR_MONO) return roles[r].mono_attr;
    return COLOR_PAIR(r + 1) | roles[r].colour_attr; // pairs 1 … ROLE_COUNT are the roles
}

/* ----------------------------------------------------- data colour pairs */

// Heatmaps and the image need many (fg, bg) combinations. They get pair
// numbers after the roles' from this cache; when it is full it starts over
// (ncurses repaints cells whose pair is redefined), which at most costs one
// frame's colours on terminals with very few pairs.
enum { CACHE_SLOTS = 8192 }; // a power of two, > the most pairs used
static struct {
    int fg, bg, pair; // pair 0: empty slot
} cache[CACHE_SLOTS];
static int cache_next, cache_limit;

static void cache_reset(void) {
    memset(cache, 0, sizeof cache);
    cache_next = ROLE_COUNT + 1;
}

static int data_pair(int fg, int bg) {
    unsigned h = ((unsigned)fg * 2654435761u) ^ ((unsigned)bg * 40503u);
    for (unsigned i = 0;; i++) {
        unsigned slot = (h + i) & (CACHE_SLOTS - 1);
        if (cache[slot].pair && cache[slot].fg == fg && cache[slot].bg == bg)
            return cache[slot].pair;
        if (!cache[slot].pair) {
            if (cache_next >= cache_limit) { // full: start over
                cache_reset();
                return data_pair(fg, bg);
            }
            cache[slot].fg = fg, cache[slot].bg = bg, cache[slot].pair = cache_next++;
            init_extended_pair(cache[slot].pair, fg, bg);
            return cache[slot].pair;
        }
    }
}

/* --------------------------------------------------------- start and stop */

static ColourMode detect_colour(bool force_mono) {
    const char *no_color = getenv("NO_COLOR"); // no-color.org: set and not empty
    if (force_mono || (no_color && *no_color) || !has_colors()) return COLOUR_MONO;
    start_color();
    use_default_colors();
    if (COLORS < 8 || COLOR_PAIRS < ROLE_COUNT + 17) return COLOUR_MONO;
    if (COLORS >= 0x1000000) return COLOUR_DIRECT;
    if (COLORS >= 256) return COLOUR_256;
    return COLOUR_BASIC;
}

// COLORTERM=truecolor (or 24bit) says the terminal takes 24-bit colours even
// though TERM names a 256-colour entry, as most terminals' TERM does: the
// entry's -direct sibling (xterm-direct, tmux-direct) is the same terminal with
// them, which curses then drives through its extended colours. Without such an
// entry, TERM as it is (256 colours).
SCREEN *ui_open_terminal(void) {
    const char *colorterm = getenv("COLORTERM"), *term = getenv("TERM");
    const bool truecolor = colorterm && (!strcmp(colorterm, "truecolor") ||
                                         !strcmp(colorterm, "24bit"));
    if (truecolor && term && !strstr(term, "-direct")) {
        char direct[64];
        snprintf(direct, sizeof direct, "%.*s-direct", (int)strcspn(term, "-"), term);
        SCREEN *screen = newterm(direct, stdout, stdin);
        if (screen) return screen;
    }
    return newterm(NULL, stdout, stdin);
}

// curses learns of a resize from SIGWINCH. One that comes while it cannot see
// it (between newterm() reading the size and its handler being set, as when
// the window is resized while the program starts on a busy machine) is lost,
// and every screen after it is drawn for the old size, its lines wrapped.
// So the terminal is also asked its size before each wait for a key.
bool ui_missed_resize(void) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return false;
    if (ws.ws_row == LINES && ws.ws_col == COLS) return false;
    resize_term(ws.ws_row, ws.ws_col);
    clearok(curscr, TRUE); // what is on the terminal was drawn for the old size: all of it again
    return true;
}

void ui_start(State *s, bool force_mono) {
    // (setlocale and newterm are done by app_run, which can report a failure)
    s->utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25); // Esc closes things; don't wait a second for an escape sequence
    mode = detect_colour(force_mono);
    s->colour = mode;
    if (mode != COLOUR_MONO) {
        for (int r = 0; r < ROLE_COUNT; r++) init_pair((short)(r + 1), roles[r].fg, roles[r].bg);
        cache_limit = COLOR_PAIRS < 0x8000 ? COLOR_PAIRS : 0x8000;
        if (cache_limit > CACHE_SLOTS / 2) cache_limit = CACHE_SLOTS / 2; // keep probes short
        cache_reset();
    }
    started = true;
    state_resize(s, COLS, LINES);
}

void ui_stop(void) {
    if (!started) return;
    endwin();
    started = false;
}

/* ------------------------------------------------------------------ text */

int ui_text(int y, int x, int w, Role role, const char *text) {
    if (w <= 0) return 0;
    wchar_t wide[512];
    size_t n = mbstowcs(wide, text, sizeof wide / sizeof wide[0] - 1);
    if (n == (size_t)-1) { // not UTF-8 here: spell the symbols in ASCII
        char ascii[512];
        fmt_ascii(ascii, sizeof ascii, text);
        n = mbstowcs(wide, ascii, sizeof wide / sizeof wide[0] - 1);
        if (n == (size_t)-1) return 0;
    }
    wide[n] = L'\0';
    int cols = 0;
    size_t fit = 0;
    for (; fit < n; fit++) {
        int cw = wcwidth(wide[fit]);
        if (cw < 0) cw = 1;
        if (cols + cw > w) break;
        cols += cw;
    }
    if (fit < n && fit > 0) { // cut short: end with an ellipsis rather than a wrong-looking word
        int cw = wcwidth(wide[fit - 1]);
        cols -= cw < 0 ? 1 : cw;
        wide[fit - 1] = MB_CUR_MAX > 1 ? L'…' : L'~'; // "…" in a UTF-8 locale
        cols += 1;
    }
    attrset(ui_role(role));
    mvaddnwstr(y, x, wide, (int)fit);
    attrset(A_NORMAL);
    return cols;
}

int ui_printf(int y, int x, int w, Role role, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ui_text(y, x, w, role, buf);
}

const char *ui_glyph(const State *s, const char *utf8, const char *ascii) {
    return s->utf8 ? utf8 : ascii;
}

void ui_clear(Rect r) {
    attrset(A_NORMAL);
    for (int y = r.y; y < r.y + r.h; y++) mvhline(y, r.x, ' ', r.w);
}

/* ---------------------------------------------------------------- pixels */

int ui_pixel_rows(const State *s) { return s->colour != COLOUR_MONO && s->utf8 ? 2 : 1; }

// One cell: glyph in colour fg on colour bg (terminal colour numbers, -1 default).
static void put_cell(int y, int x, const wchar_t *glyph, int fg, int bg) {
    int pair = data_pair(fg, bg);
    cchar_t cc;
    setcchar(&cc, glyph, A_NORMAL, 0, &pair); // extended pair through the opts argument
    mvadd_wch(y, x, &cc);
}

void ui_pixels(const State *s, int y, int x, Rgb top, Rgb bottom) {
    if (s->colour == COLOUR_MONO) {
        // brighter pixels get denser characters (a dark terminal is assumed)
        mvaddch(y, x, (chtype)ramp_ascii((rgb_luma(top) + rgb_luma(bottom)) / 2));
        return;
    }
    int fg = rgb_to_terminal(top, s->colour), bg = rgb_to_terminal(bottom, s->colour);
    if (s->utf8) put_cell(y, x, L"\u2580", fg, bg); // ▀: upper half in fg, lower in bg
    else put_cell(y, x, L" ", fg, fg);               // one pixel per cell: the background
}

// A ramp value as a terminal colour, quantised to RAMP_LEVELS steps (few pairs); NaN:
// default. 256 colours have a ramp of their own (colour.c: viridis' dark end is misleading there).
static int heat_colour(const State *s, RampKind kind, float t) {
    if (isnan(t)) return -1;
    if (s->colour == COLOUR_256) return ramp_xterm256(kind, t);
    const float level = (float)ramp_level(t, RAMP_LEVELS) / (RAMP_LEVELS - 1);
    return rgb_to_terminal(ramp_rgb(kind, level), s->colour);
}

void ui_heat(const State *s, int y, int x, RampKind kind, float t_top, float t_bottom) {
    if (s->colour == COLOUR_MONO) {
        mvaddch(y, x, (chtype)ramp_ascii(t_top));
        return;
    }
    int fg = heat_colour(s, kind, t_top), bg = heat_colour(s, kind, t_bottom);
    if (s->utf8) put_cell(y, x, L"\u2580", fg, bg);
    else put_cell(y, x, L" ", fg, fg);
}

void ui_heat_text(const State *s, int y, int x, RampKind kind, float t, const char *text) {
    if (s->colour == COLOUR_MONO) {
        ui_text(y, x, (int)strlen(text), ROLE_NORMAL, text);
        return;
    }
    const int bg = heat_colour(s, kind, t);
    const Rgb black = {0, 0, 0}, white = {255, 255, 255};
    const bool light = !isnan(t) && rgb_luma(ramp_rgb_shown(kind, t, s->colour)) > 0.5f;
    const int fg = isnan(t) ? -1 : rgb_to_terminal(light ? black : white, s->colour);
    for (const char *c = text; *c; c++, x++) // ASCII: one byte, one cell
        put_cell(y, x, (const wchar_t[]){(wchar_t)(unsigned char)*c, L'\0'}, fg, bg);
}

/* ------------------------------------------------------------------ keys */

UiAction keytable_dispatch(const KeyTable *table, State *s, int key) {
    for (int i = 0; i < table->count; i++)
        for (const int *k = table->bindings[i].keys; *k; k++)
            if (*k == key) {
                UiAction a = table->bindings[i].fn(s, key);
                if (a != ACT_UNHANDLED) return a;
            }
    return ACT_UNHANDLED;
}
