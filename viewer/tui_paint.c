/**
 * @file tui_paint.c
 * @brief Painting the input by hand (key P on the input stage): a pixel
 *        cursor over the picture, space paints the pixel under it, and the
 *        pass runs again at once, so the prediction in the title row follows
 *        each stroke.
 *
 * Shape legend: S×S the model's input pixels (28×28 for Fashion-MNIST).
 *
 * A stroke is a what-if like masking a patch (z): tui_app.c records the
 * unmodified pass once, then the input is the picture with its masked patches
 * and the painted pixels (State::painted: 1 white, −1 black), normalised as
 * the preprocessing would; the title reads "what-if: Ankle boot 0.9002 →
 * 0.8914 · 3 pixels painted · …", and u undoes every stroke at once. A light
 * pixel is painted black, a dark one white, so the same key draws a line and
 * rubs it out. A click on a pixel (where the terminal reports the mouse) moves
 * the cursor there and paints it; the mouse is asked for only while painting,
 * so that the terminal's own selection of text works the rest of the time.
 * This file moves the cursor, asks for the stroke and marks the cursor on the
 * picture; the arithmetic is the model's.
 */
#include "tui.h"
#include "tui_draw.h"
#include "colour.h"
#include "render_image.h"

#include <stdio.h>

// P on the input stage: painting on or off.
UiAction paint_toggle(State *s, int key) {
    if (s->painting) {
        s->painting = false;
        state_message(s, "painting off (P paints again; u undoes every stroke)");
        return ACT_NONE;
    }
    if (s->backward || view_kind_for(state_node(s)->stage) != VIEW_IMAGE) {
        state_message(s, "P paints the picture: on the input stage (g goes to it)");
        return ACT_NONE;
    }
    state_close_views(s); // the picture itself is shown while painting
    s->painting = true;   // its keys come first (tui_app.c), wherever the focus is
    state_message(s, "painting: arrows move the cursor, space paints a pixel (a light one black, a "
                     "dark one white), P or Esc stops");
    return ACT_NONE;
}

// Arrows and h j k l: the cursor, one pixel a press, held inside the picture.
static UiAction cmd_move(State *s, int key) {
    const int S = s->cfg->image_size;
    const int dy = key == KEY_DOWN || key == 'j' ? 1 : key == KEY_UP || key == 'k' ? -1 : 0;
    const int dx = key == KEY_RIGHT || key == 'l' ? 1 : key == KEY_LEFT || key == 'h' ? -1 : 0;
    s->paint_y = s->paint_y + dy < 0 ? 0 : s->paint_y + dy >= S ? S - 1 : s->paint_y + dy;
    s->paint_x = s->paint_x + dx < 0 ? 0 : s->paint_x + dx >= S ? S - 1 : s->paint_x + dx;
    state_message(s, "painting at pixel (%d, %d) · space paints", s->paint_y, s->paint_x);
    return ACT_NONE;
}

// Space: the stroke, as a request the main loop carries out before the rerun.
static UiAction cmd_stroke(State *s, int key) {
    s->request = REQ_PAINT;
    return ACT_REQUEST;
}

// A click on the picture: the cursor to that pixel, and a stroke there. The
// picture is where image_view() draws it: under the view's caption, w columns
// by h pixel rows, ui_pixel_rows() pixels a cell.
static UiAction cmd_click(State *s, int key) {
    MEVENT ev;
    if (getmouse(&ev) != OK || !(ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))) return ACT_NONE;
    const Rect r = s->layout.view;
    int h, w = picture_side(s, r.h - 1, r.w, &h);
    const int x = ev.x - r.x, y = (ev.y - (r.y + 1)) * ui_pixel_rows(s), S = s->cfg->image_size;
    if (w <= 0 || h <= 0 || x < 0 || x >= w || y < 0 || y >= h) {
        state_message(s, "click on the picture to paint a pixel");
        return ACT_NONE;
    }
    s->paint_y = y * S / h, s->paint_x = x * S / w;
    return cmd_stroke(s, key);
}

static UiAction cmd_stop(State *s, int key) { return paint_toggle(s, 'P'); }

static const KeyBinding bindings[] = {
    {{KEY_UP, KEY_DOWN, KEY_LEFT, KEY_RIGHT}, "arrows", "move the painting cursor one pixel",
     cmd_move},
    {{'h', 'j', 'k', 'l'}, "h j k l", "the same", cmd_move},
    {{' '}, "space", "paint the pixel: a light one black, a dark one white; the pass reruns",
     cmd_stroke},
    {{KEY_MOUSE}, "click", "on the picture: the cursor to that pixel, and paint it", cmd_click},
    {{'P', 27}, "P Esc", "stop painting (u undoes every stroke)", cmd_stop},
};

const KeyTable paint_keys = {"Painting the input (P on the input stage)", bindings,
                             sizeof bindings / sizeof bindings[0]};

void paint_mouse(const State *s) {
    static bool asked; // what the terminal was last told
    if (asked == s->painting) return;
    asked = s->painting;
    mousemask(asked ? BUTTON1_PRESSED | BUTTON1_CLICKED : 0, NULL);
}

UiAction paint_key(State *s, int key) {
    // only on the input stage of the forward pass: elsewhere the keys are the usual ones
    const bool on = s->painting && !s->backward &&
                    view_kind_for(state_node(s)->stage) == VIEW_IMAGE && !s->prompting;
    return on ? keytable_dispatch(&paint_keys, s, key) : ACT_UNHANDLED;
}

void paint_cursor_mark(const State *s, Rgb *px, int w, int h) {
    if (!s->painting) return;
    // the screen pixels that show input pixel (paint_y, paint_x), drawn w × h for S × S
    const int S = s->cfg->image_size;
    for (int y = s->paint_y * h / S; y < (s->paint_y + 1) * h / S; y++)
        for (int x = s->paint_x * w / S; x < (s->paint_x + 1) * w / S; x++)
            px[(size_t)y * w + x] = rgb_mix(px[(size_t)y * w + x], (Rgb){255, 40, 40}, 0.75f);
}
