/**
 * @file tui_patch.c
 * @brief Activation patching (key C): for the picture shown (A) and the next
 *        shipped picture (B), A's class probability with one token of B's
 *        stream put in after the selected block, over the patch layout, the
 *        tokens that flip the answer marked.
 *
 * Shape legend: L blocks, T = 1 + side² tokens ([cls] first), side × side patches.
 *
 * The grid is lib's patching_grid() (what `vit patch` prints), measured
 * between passes by tui_app.c for the input the pass sees (what-ifs
 * included), once for every block: moving to another block's stage shows
 * that block's row of it. The patches are drawn on one 0-to-1 scale of the
 * probability, [cls] on the line above them; a cell whose patch flips the
 * answer holds an `x`. A new picture or what-if drops it.
 */
#include "tui.h"
#include "tui_draw.h"
#include "explain/patching.h"

#include <stdio.h>
#include <stdlib.h>

bool patching_shown(const State *s) {
    return s->patching.prob && !s->backward && state_node(s)->block >= 0;
}

// The class's name, escaped, or "class K".
static const char *class_name(char *buf, size_t size, const State *s, int k) {
    const char *label = labels_name(&s->labels, k);
    if (label && label[0]) return vit_escape(buf, size, label);
    snprintf(buf, size, "class %d", k);
    return buf;
}

// An x in the middle of each flipping patch's cell; the map drawn at (y, x) is w × h.
static void mark_flips(const Patching *pt, int l, int side, int y, int x, int w, int h) {
    const int cw = w / side, ch = h / side; // one patch's cell
    for (int t = 1; t < pt->tokens; t++) {
        if (pt->top[(size_t)l * pt->tokens + t] == pt->a_class) continue;
        const int q = t - 1;
        ui_text(y + q / side * ch + ch / 2, x + q % side * cw + cw / 2, 1, ROLE_KEY, "x");
    }
}

// Under the map: block l's flips in words and its largest change.
static void summary_draw(const State *s, const Patching *pt, int l, int side, int y, Rect r) {
    int largest;
    const int flips = patching_layer_summary(pt, l, &largest);
    const double p = pt->prob[(size_t)l * pt->tokens + largest];
    char where[32];
    if (largest == 0) snprintf(where, sizeof where, "[cls]");
    else snprintf(where, sizeof where, "patch %d,%d", (largest - 1) / side, (largest - 1) % side);
    ui_printf(y, r.x, r.w, ROLE_NORMAL, "largest change: %s %.4f (%+.4f) · flips: %d", where, p,
              p - pt->a_prob, flips);
    ui_text(y + 1, r.x, r.w, ROLE_DIM, "x: the answer flips · a block's stage picks the block"
                                       " · C closes");
}

void patching_view(const State *s, Rect r) {
    const Patching *pt = &s->patching;
    const int l = state_node(s)->block, side = s->cfg->image_size / s->cfg->patch_size;
    char name[64], b_name[64];
    class_name(name, sizeof name, s, pt->a_class);
    class_name(b_name, sizeof b_name, s, pt->b_class);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "patching, block %d: p(%s) in A, %.4f", l, name,
              pt->a_prob);
    const float cls = pt->prob[(size_t)l * pt->tokens];
    const bool cls_flips = pt->top[(size_t)l * pt->tokens] != pt->a_class;
    ui_printf(r.y + 1, r.x, r.w, cls_flips ? ROLE_KEY : ROLE_NORMAL, "B %s (%s) · [cls] %.4f%s",
              s->patching_b, b_name, (double)cls, cls_flips ? " x flips" : "");
    const HeatScale scale = {0, 1, RAMP_SEQUENTIAL};
    const int used = legend_draw(s, r.y + 2, r.x, r.w, &scale, true);
    ui_text(r.y + 2, r.x + used + 1, r.w - used - 1, ROLE_DIM, "p of A's class, each patch B's");
    const int h = r.h - 5;
    if (h < 2 || r.w < 8) return;
    int w, h_drawn; // what the map took, in columns and rows
    const Mat m = {pt->prob + (size_t)l * pt->tokens + 1, side, side};
    heat_draw_on(s, (Rect){r.y + 3, r.x, h, r.w}, m, &scale, &w, &h_drawn);
    if (w >= side && h_drawn >= side) mark_flips(pt, l, side, r.y + 3, r.x, w, h_drawn);
    summary_draw(s, pt, l, side, r.y + 3 + (h_drawn > 0 ? h_drawn : h), r);
}

UiAction cmd_patching(State *s, int key) {
    if (s->backward) {
        state_message(s, "patching reads the forward pass: d goes back to it");
        return ACT_NONE;
    }
    if (s->patching.prob) {
        patching_free(&s->patching);
        state_message(s, "the stage's own view (C: activation patching)");
        return ACT_NONE;
    }
    if (state_node(s)->block < 0) {
        state_message(s, "C shows activation patching on a block's stage: select one (j k, or /)");
        return ACT_NONE;
    }
    s->request = REQ_PATCHING;
    return ACT_REQUEST;
}
