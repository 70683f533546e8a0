/**
 * @file tui_heads.c
 * @brief The head-importance view (key I): every head switched off in turn,
 *        the change in the predicted class's probability, as an L × H heatmap
 *        of cells with their numbers, a cursor on one; Enter on a cell goes to
 *        that layer's attention probabilities with that head shown.
 *
 * Shape legend: L layers (rows), H heads (columns), then a column for each
 * layer's heads all off at once.
 *
 * The numbers are lib's head_importance() (importance.h), measured between
 * passes by tui_app.c when I asks for them; this file only draws them and
 * moves the cursor. Cells are blue where switching the head off lowers the
 * class's probability and red where it raises it, on one scale symmetric
 * about 0, and hold their number as `vit heads` prints it when they are wide
 * enough (8 columns); narrower, the colour alone, and the cursor's readout.
 * Without colour, a cell's rows above and below its number show |Δp| as the
 * ASCII ramp's density (the sign is the number's).
 */
#include "tui.h"
#include "tui_draw.h"
#include "importance.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { LABEL_W = 8, NUMBER_W = 8 }; // "layer 11", " -0.2620"

/** Where the grid's cells fall in the pane. */
typedef struct {
    int x, y;      // the first cell's corner
    int cell_w;    // columns per cell
    int cell_h;    // rows per cell (the number on the middle one)
    int all_x;     // the layers' column ("all heads")
    int first;     // the first layer shown: more layers than rows scroll with the cursor
    int rows;      // how many layers are shown
} GridPlace;

static GridPlace grid_place(const ImportanceView *v, Rect r) {
    const int L = v->grid.layers, H = v->grid.heads;
    const int room = maxi(1, r.h - 4); // the caption and heads above, two lines below
    GridPlace g = {.x = r.x + LABEL_W, .y = r.y + 2};
    g.cell_w = maxi(1, mini(NUMBER_W + 1, (r.w - LABEL_W - 1) / (H + 1)));
    g.cell_h = maxi(1, mini(3, (room - 1) / L));
    g.all_x = g.x + H * g.cell_w + 1;
    g.rows = mini(L, room / g.cell_h);
    g.first = maxi(0, mini(v->layer - g.rows / 2, L - g.rows));
    return g;
}

// One cell: its colour over cell_w × cell_h, its number (in brackets under the
// cursor) on the middle row when it fits.
static void cell_draw(const State *s, const GridPlace *g, int y, int x, float delta,
                      const HeatScale *sc, bool cursor) {
    const float t = heat_position(sc, delta);
    char number[16], text[24];
    importance_cell_text(number, sizeof number, delta);
    const bool fits = g->cell_w >= NUMBER_W;
    for (int row = 0; row < g->cell_h; row++) {
        const bool middle = row == g->cell_h / 2;
        if (middle && fits)
            snprintf(text, sizeof text, cursor ? "[%*s]" : " %*s ", NUMBER_W - 1, number);
        else if (middle && cursor) snprintf(text, sizeof text, "%-*s", g->cell_w, "X");
        else if (s->colour == COLOUR_MONO) // no colour: |Δp| as the ASCII ramp's density
            for (int i = 0; i < g->cell_w; i++)
                text[i] = i == g->cell_w - 1 ? ' ' : ramp_ascii(fabsf(2 * t - 1));
        else snprintf(text, sizeof text, "%*s", g->cell_w, "");
        text[g->cell_w] = '\0'; // a cell of 8: the number without its margin after
        ui_heat_text(s, y + row, x, sc->kind, t, text);
    }
}

// The header row: "head 0" … above the cells, "all" above the layers' column.
static void heads_axis(const State *s, const GridPlace *g, int H) {
    for (int h = 0; h < H; h++) {
        char label[16];
        snprintf(label, sizeof label, g->cell_w >= NUMBER_W ? "head %d" : "%d", h);
        const int len = (int)strlen(label);
        ui_text(g->y - 1, g->x + h * g->cell_w + maxi(0, g->cell_w - 1 - len), g->cell_w,
                ROLE_DIM, label);
    }
    ui_text(g->y - 1, g->all_x, g->cell_w + 2, ROLE_DIM, g->cell_w >= NUMBER_W ? "   all" : "all");
}

static void grid_draw(const State *s, const ImportanceView *v, const GridPlace *g,
                      const HeatScale *sc) {
    const int H = v->grid.heads;
    heads_axis(s, g, H);
    for (int l = g->first; l < g->first + g->rows; l++) {
        const int y = g->y + (l - g->first) * g->cell_h;
        ui_printf(y + g->cell_h / 2, g->x - LABEL_W, LABEL_W, ROLE_DIM, "layer %d", l);
        for (int h = 0; h < H; h++)
            cell_draw(s, g, y, g->x + h * g->cell_w, importance_at(v, l, h), sc,
                      l == v->layer && h == v->head);
        cell_draw(s, g, y, g->all_x, v->grid.layer_delta[l], sc, false);
    }
}

// The cursor's cell in words, and what Enter does.
static void readout_draw(const State *s, const ImportanceView *v, Rect r) {
    const float delta = importance_at(v, v->layer, v->head);
    const double full = v->grid.full[0];
    int most_l, most_h;
    head_importance_most(&v->grid, 0, &most_l, &most_h);
    const bool most = most_l == v->layer && most_h == v->head;
    ui_printf(r.y + r.h - 2, r.x, r.w, ROLE_KEY, "layer %d, head %d off: %.4f → %.4f (%+.4f)%s",
              v->layer, v->head, full, full + delta, (double)delta,
              most ? " · the most important" : "");
}

void importance_draw(const State *s, Rect r) {
    const ImportanceView *v = &s->importance;
    ui_clear(r);
    if (!v->measured) {
        ui_text(r.y + 1, r.x + 2, r.w - 2, ROLE_PENDING, "head importance: not measured yet");
        return;
    }
    const char *label = labels_name(&s->labels, v->grid.classes[0]);
    char name[64];
    if (label && label[0]) vit_escape(name, sizeof name, label);
    else snprintf(name, sizeof name, "class %d", v->grid.classes[0]);
    const float extent = importance_extent(v);
    const HeatScale sc = {-extent, extent, RAMP_DIVERGING};
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "head importance: Δ p(%s) with one head off", name);
    const GridPlace g = grid_place(v, r);
    grid_draw(s, v, &g, &sc);
    readout_draw(s, v, r);
    // the colour scale (without colour: the density of |Δp|), then what the keys do
    const bool mono = s->colour == COLOUR_MONO;
    const HeatScale magnitude = {0, extent, RAMP_SEQUENTIAL};
    int lw = mono ? ui_text(r.y + r.h - 1, r.x, r.w, ROLE_DIM, "|Δp| ") : 0;
    lw += legend_draw(s, r.y + r.h - 1, r.x + lw, r.w - lw, mono ? &magnitude : &sc, true);
    ui_text(r.y + r.h - 1, r.x + lw, r.w - lw, ROLE_DIM,
            " · all: the layer's heads · Enter: its map · I closes");
}

/* ------------------------------------------------------------------ keys */

UiAction importance_open(State *s, int key) {
    if (s->backward) {
        state_message(s, "I measures the forward pass: d goes back to it");
        return ACT_NONE;
    }
    if (s->importance.shown) {
        s->importance.shown = false;
        state_message(s, "head importance closed (I opens it)");
        return ACT_NONE;
    }
    if (!s->importance.measured) { // between passes: tui_app.c measures it, then shows it
        s->request = REQ_IMPORTANCE;
        return ACT_REQUEST;
    }
    s->importance.shown = true;
    s->lens = false; // one view in place of the stage's at a time
    occlusion_comparison_free(&s->occlusion);
    patching_free(&s->patching);
    return ACT_NONE;
}

static UiAction cmd_close(State *s, int key) {
    s->importance.shown = false;
    state_message(s, "head importance closed (I opens it)");
    return ACT_NONE;
}

static UiAction cmd_move(State *s, int key) {
    const int dl = key == KEY_DOWN || key == 'j' ? 1 : key == KEY_UP || key == 'k' ? -1 : 0;
    const int dh = key == KEY_RIGHT || key == 'l' ? 1 : key == KEY_LEFT || key == 'h' ? -1 : 0;
    importance_move(&s->importance, dl, dh);
    return ACT_NONE;
}

// Enter: the cursor's layer's attention probabilities, its head shown as the map;
// a stage the pass has not reached yet is run to, as a breakpoint would stop there.
static UiAction cmd_jump(State *s, int key) {
    const ImportanceView *v = &s->importance;
    char name[48];
    importance_stage_name(name, sizeof name, v->layer);
    const int node = stepper_find(&s->stepper, name);
    if (node < 0) return ACT_NONE; // every model has its layers' attention stages
    s->plane = v->head;
    s->heads = HEADS_ONE;
    s->attn_view = ATTN_MAP;
    s->importance.shown = false;
    state_message(s, "%s, head %d (I: back to head importance)", name, v->head);
    if (node >= s->stepper.done) { // not computed yet: the pass runs to it and stops
        s->stepper.target = node;
        return ACT_RUN;
    }
    stepper_move_node(&s->stepper, node - s->stepper.selected);
    state_clamp(s);
    return ACT_NONE;
}

static const KeyBinding bindings[] = {
    {{KEY_UP, KEY_DOWN, KEY_LEFT, KEY_RIGHT}, "arrows", "move the cursor: layers ↓, heads →",
     cmd_move},
    {{'h', 'j', 'k', 'l'}, "h j k l", "the same", cmd_move},
    {{'\n', '\r', KEY_ENTER}, "Enter", "go to that layer's attn.probs, that head shown", cmd_jump},
    {{'I', 27}, "I Esc", "close the head-importance view", cmd_close},
};

const KeyTable importance_keys = {"Head importance (I: every head off in turn)", bindings,
                                  sizeof bindings / sizeof bindings[0]};

UiAction importance_key(State *s, int key) {
    const bool open = s->importance.shown && !s->backward; // the backward hides it
    return open ? keytable_dispatch(&importance_keys, s, key) : ACT_UNHANDLED;
}
