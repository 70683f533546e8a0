/**
 * @file tui_tree.c
 * @brief The pipeline tree: input → patches → … → blocks (collapsible) → … → logits,
 *        with the forward pass's progress and the breakpoints.
 */
#include "tui.h"

#include <stdlib.h>
#include <string.h>

// Does any stage of block b carry a breakpoint?
static bool block_has_breakpoint(const Stepper *st, int b) {
    for (int i = stepper_block_first(st, b); i <= stepper_block_last(st, b); i++)
        if (st->breakpoints[i]) return true;
    return false;
}

// Did any stage of block b change in the what-if (against the unmodified pass)?
static bool block_moved(const State *s, int b) {
    const Stepper *st = &s->stepper;
    for (int i = stepper_block_first(st, b); i <= stepper_block_last(st, b); i++)
        if (state_moved(s, i) > 0) return true;
    return false;
}

// One line: [breakpoint][frontier][changed] name, e.g. "●▶   attn.probs" or " ▸ blocks.3  7/15".
static void row_draw(const State *s, int y, Rect r, const TreeRow *row, bool selected) {
    const Stepper *st = &s->stepper;
    const int frontier = st->done - 1;
    bool mark_bp, mark_here, computed, mark_moved;
    char label[64];
    if (row->header) {
        const int first = stepper_block_first(st, row->block), last = row->node;
        const bool open = st->open[row->block];
        mark_bp = !open && block_has_breakpoint(st, row->block);
        mark_here = !open && frontier >= first && frontier <= last;
        mark_moved = !open && block_moved(s, row->block);
        computed = frontier >= first;
        int inside = frontier < first  ? 0
                     : frontier > last ? last - first + 1
                                       : frontier - first + 1;
        if (inside > 0 && inside <= last - first)
            snprintf(label, sizeof label, "%s blocks.%d %d/%d",
                     ui_glyph(s, open ? "▾" : "▸", open ? "-" : "+"), row->block, inside,
                     last - first + 1);
        else
            snprintf(label, sizeof label, "%s blocks.%d",
                     ui_glyph(s, open ? "▾" : "▸", open ? "-" : "+"), row->block);
    } else {
        const PipeNode *n = &st->nodes[row->node];
        mark_bp = st->breakpoints[row->node];
        mark_here = row->node == frontier;
        mark_moved = state_moved(s, row->node) > 0;
        computed = row->node <= frontier;
        if (stepper_is_update(n)) // AdamW's change to a parameter: named by the parameter
            snprintf(label, sizeof label, "%s %s", ui_glyph(s, "Δ", "d"),
                     n->name + strlen(TRAIN_UPDATE_PREFIX));
        else snprintf(label, sizeof label, "%s%s", n->block >= 0 ? "    " : "", n->stage->name);
    }
    const Role role = selected ? ROLE_SELECTED : computed ? ROLE_NORMAL : ROLE_PENDING;
    if (selected) {
        attrset(ui_role(ROLE_SELECTED));
        mvhline(y, r.x, ' ', r.w);
    }
    if (mark_bp) ui_text(y, r.x, 1, selected ? role : ROLE_BREAKPOINT, ui_glyph(s, "●", "*"));
    if (mark_here) ui_text(y, r.x + 1, 1, selected ? role : ROLE_FRONTIER, ui_glyph(s, "▶", ">"));
    if (mark_moved) ui_text(y, r.x + 2, 1, selected ? role : ROLE_ERROR, ui_glyph(s, "Δ", "~"));
    ui_text(y, r.x + 3, r.w - 3, role, label);
}

void tree_draw(const State *s) {
    const Rect r = s->layout.tree;
    const Stepper *st = &s->stepper;
    TreeRow *rows = malloc((size_t)(st->count + st->depth) * sizeof *rows);
    if (!rows) return;
    const int n = stepper_tree_rows(st, rows, st->count + st->depth);
    const int sel = stepper_selected_row(st, rows, n);
    // keep the selection in view, near the middle when the tree is longer than the pane
    int top = sel - r.h / 2;
    if (top > n - r.h) top = n - r.h;
    if (top < 0) top = 0;
    for (int i = 0; i < r.h && top + i < n; i++)
        row_draw(s, r.y + i, r, &rows[top + i], top + i == sel && s->focus == FOCUS_TREE);
    if (s->focus != FOCUS_TREE && sel - top < r.h) // the view has the keys: a quieter mark
        ui_text(r.y + sel - top, r.x + 2, 1, ROLE_KEY, ui_glyph(s, "›", ">"));
    if (top > 0) ui_text(r.y, r.x + r.w - 1, 1, ROLE_DIM, ui_glyph(s, "↑", "^"));
    if (top + r.h < n) ui_text(r.y + r.h - 1, r.x + r.w - 1, 1, ROLE_DIM, ui_glyph(s, "↓", "v"));
    free(rows);
}

/* ------------------------------------------------------------------ keys */

static UiAction selected_changed(State *s) {
    state_clamp(s);
    return ACT_NONE;
}

static UiAction cmd_down(State *s, int key) {
    stepper_move(&s->stepper, 1);
    return selected_changed(s);
}
static UiAction cmd_up(State *s, int key) {
    stepper_move(&s->stepper, -1);
    return selected_changed(s);
}

static UiAction cmd_page(State *s, int key) {
    const int page = s->layout.tree.h > 2 ? s->layout.tree.h - 1 : 1;
    stepper_move(&s->stepper, key == KEY_NPAGE ? page : -page);
    return selected_changed(s);
}

static UiAction cmd_ends(State *s, int key) {
    stepper_select_row(&s->stepper, key == 'g' || key == KEY_HOME ? 0 : 1 << 30);
    return selected_changed(s);
}

static UiAction cmd_history(State *s, int key) {
    stepper_move_node(&s->stepper, key == '.' ? 1 : -1);
    return selected_changed(s);
}

static UiAction cmd_frontier(State *s, int key) {
    if (s->stepper.done > 0) stepper_stopped_at(&s->stepper, s->stepper.done - 1);
    return selected_changed(s);
}

static UiAction cmd_toggle(State *s, int key) {
    Stepper *st = &s->stepper;
    const int b = st->nodes[st->selected].block;
    if (b < 0) return ACT_NONE;
    stepper_set_open(st, b, st->sel_header ? !st->open[b] : false); // inside: close it
    return selected_changed(s);
}

static UiAction cmd_open(State *s, int key) {
    Stepper *st = &s->stepper;
    const int b = st->nodes[st->selected].block;
    if (st->sel_header && b >= 0) stepper_set_open(st, b, true);
    return selected_changed(s);
}

static UiAction cmd_close(State *s, int key) {
    Stepper *st = &s->stepper;
    const int b = st->nodes[st->selected].block;
    if (b < 0) return ACT_NONE;
    if (st->sel_header) stepper_set_open(st, b, false);
    else st->selected = stepper_block_last(st, b), st->sel_header = true; // up to the block
    return selected_changed(s);
}

static UiAction cmd_breakpoint(State *s, int key) {
    Stepper *st = &s->stepper;
    bool on = stepper_toggle_breakpoint(st, st->selected);
    state_message(s, "breakpoint %s %s", on ? "set on" : "cleared from",
                  st->nodes[st->selected].name);
    return ACT_NONE;
}

static const KeyBinding bindings[] = {
    {{'j', KEY_DOWN}, "j ↓", "select the next line of the tree", cmd_down},
    {{'k', KEY_UP}, "k ↑", "select the previous line", cmd_up},
    {{KEY_NPAGE, KEY_PPAGE}, "PgDn PgUp", "a page down / up", cmd_page},
    {{'g', 'G', KEY_HOME, KEY_END}, "g G", "the first / last stage", cmd_ends},
    {{'.', ','}, ". ,", "next / previous stage in forward order, into blocks", cmd_history},
    {{'p'}, "p", "back to where the forward pass is paused", cmd_frontier},
    {{'\n', '\r', KEY_ENTER, ' '}, "Enter Space", "open / close the selected block", cmd_toggle},
    {{KEY_RIGHT, 'l'}, "→ l", "open the selected block", cmd_open},
    {{KEY_LEFT, 'h'}, "← h", "up to the block's line; there, close it", cmd_close},
    {{'b'}, "b", "toggle a breakpoint on the selected stage", cmd_breakpoint},
};

const KeyTable tree_keys = {"The pipeline tree (left)", bindings,
                            sizeof bindings / sizeof bindings[0]};

UiAction tree_key(State *s, int key) { return keytable_dispatch(&tree_keys, s, key); }
