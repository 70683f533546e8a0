/**
 * @file tui_positions.c
 * @brief Position similarity on the `embed` stage (key E): one patch
 *        position's embedding against every patch's, as cosines coloured on
 *        the patch grid, the position moved with the arrows.
 *
 * Shape legend: rows × cols = the patch grid, P = rows·cols.
 *
 * The numbers are lib's position_similarity() on the model's `pos_embed`
 * (what `vit positions --row R --col C` prints), blue below 0 and red above
 * on one scale from −1 to 1. Each cell holds its cosine when the grid fits
 * 7 columns a cell (the shipped model's 7 × 7 does at 80 × 24), else its
 * colour alone; the cell of the position itself reads 1.0000.
 */
#include "tui.h"
#include "tui_draw.h"
#include "explain/position_similarity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LABEL_W = 3, NUMBER_W = 7 }; // "6  ", "-0.5598"

bool positions_shown(const State *s) {
    return s->positions && !s->backward && s->model && strcmp(state_node(s)->name, "embed") == 0;
}

static int grid_side(const State *s) { return s->cfg->image_size / s->cfg->patch_size; }

// One row of cells: each coloured by its cosine on −1 … 1, its number inside when wide enough.
static void grid_row(const State *s, int y, int x, int cell_w, const float *sim, int side) {
    const HeatScale sc = {-1, 1, RAMP_DIVERGING};
    for (int c = 0; c < side; c++) {
        char text[16];
        if (cell_w >= NUMBER_W) snprintf(text, sizeof text, "%7.4f", (double)sim[c]);
        else snprintf(text, sizeof text, "%*s", cell_w, "");
        text[cell_w < (int)sizeof text ? cell_w : (int)sizeof text - 1] = '\0';
        ui_heat_text(s, y, x + c * cell_w, sc.kind, heat_position(&sc, sim[c]), text);
    }
}

void positions_view(const State *s, Rect r) {
    const int side = grid_side(s), P = side * side, N = vit_num_tokens(s->cfg);
    float *sim = malloc(sizeof(float) * (size_t)P);
    if (!sim) return;
    position_similarity(sim, s->model->weights.pos_embed, N - P, P, s->cfg->dim,
                        s->pos_y * side + s->pos_x);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "position similarity: patch (%d, %d) against each",
              s->pos_y, s->pos_x);
    const HeatScale sc = {-1, 1, RAMP_DIVERGING};
    const int used = legend_draw(s, r.y + 1, r.x, r.w, &sc, true);
    ui_text(r.y + 1, r.x + used + 1, r.w - used - 1, ROLE_DIM, "cosine of pos_embed rows");
    const int cell_w = maxi(1, mini(NUMBER_W, (r.w - LABEL_W) / side));
    for (int y = 0; y < side && 2 + y < r.h - 1; y++) {
        ui_printf(r.y + 2 + y, r.x, LABEL_W, ROLE_DIM, "%d", y);
        grid_row(s, r.y + 2 + y, r.x + LABEL_W, cell_w, sim + (size_t)y * side, side);
    }
    ui_text(r.y + r.h - 1, r.x, r.w, ROLE_DIM, "arrows: the patch · E closes");
    free(sim);
}

/* ------------------------------------------------------------------ keys */

UiAction cmd_positions(State *s, int key) {
    if (!s->positions && (s->backward || !s->model ||
                          strcmp(state_node(s)->name, "embed") != 0)) {
        state_message(s, "E shows position similarity on the embed stage (/embed goes to it)");
        return ACT_NONE;
    }
    const bool open = !s->positions;
    state_close_views(s); // one view in place of the stage's at a time
    s->positions = open;
    if (s->positions) {
        const int side = grid_side(s);
        s->pos_y = mini(s->pos_y, side - 1), s->pos_x = mini(s->pos_x, side - 1);
    }
    state_message(s, s->positions ? "position similarity (arrows move the patch; E: the stage's "
                                    "own view)"
                                  : "the stage's own view (E: position similarity)");
    return ACT_NONE;
}

static UiAction cmd_move(State *s, int key) {
    const int side = grid_side(s);
    const int dy = key == KEY_DOWN ? 1 : key == KEY_UP ? -1 : 0;
    const int dx = key == KEY_RIGHT ? 1 : key == KEY_LEFT ? -1 : 0;
    s->pos_y = maxi(0, mini(side - 1, s->pos_y + dy));
    s->pos_x = maxi(0, mini(side - 1, s->pos_x + dx));
    return ACT_NONE;
}

static UiAction cmd_close(State *s, int key) { return cmd_positions(s, 'E'); }

static const KeyBinding bindings[] = {
    {{KEY_UP, KEY_DOWN, KEY_LEFT, KEY_RIGHT}, "arrows", "move the patch compared with the others",
     cmd_move},
    {{'E', 27}, "E Esc", "close position similarity", cmd_close},
};

const KeyTable position_keys = {"Position similarity (E on the embed stage)", bindings,
                                sizeof bindings / sizeof bindings[0]};

UiAction position_key(State *s, int key) {
    return positions_shown(s) ? keytable_dispatch(&position_keys, s, key) : ACT_UNHANDLED;
}
