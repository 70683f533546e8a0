/**
 * @file tui_occlusion.c
 * @brief Occlusion beside the attention maps (key O on the input or an
 *        attention stage): four maps of the pass's input on one colour scale,
 *        each with its deletion test under it.
 *
 * The maps are lib's occlusion_compare() (what `vit occlusion` prints): the
 * fall of the predicted class's probability with each patch alone black, the
 * last layer's [cls] attention, the rollout and the gradient-weighted
 * rollout. Their units differ (a fall of probability, a share of attention),
 * so each is drawn divided by its largest value, on one 0-to-1 ramp; a
 * negative fall (the class surer without the patch) is drawn as 0. Under each
 * map, the predicted class's probability with its top k patches black, for k
 * = rollout_measure_ks: the lower, the more the answer rested on what the map
 * shows. The comparison is computed once, between passes (P + 3 + 4·K passes
 * and a backward), for the input the pass sees, what-ifs included; a new
 * picture or what-if drops it.
 */
#include "tui.h"
#include "tui_draw.h"
#include "explain/occlusion.h"

#include <math.h>
#include <stdlib.h>

// What each map is called under it: the names of occlusion_compared, short.
static const char *const short_names[OCCLUSION_MAPS] = {"occlusion", "last layer", "rollout",
                                                        "gradient"};

enum { GAP = 1, MIN_MAP_W = 10, LINES_UNDER = 1 + MEASURE_KS };

bool occlusion_shown(const State *s) {
    if (!s->occlusion.maps.data || s->backward) return false;
    const ViewKind k = view_kind_for(state_node(s)->stage);
    return k == VIEW_IMAGE || k == VIEW_ATTENTION;
}

// map (P) divided by its largest value, negatives as 0, into out (P); all 0 when none is > 0.
static void to_unit(float *out, const float *map, int P) {
    float hi = 0;
    for (int q = 0; q < P; q++) hi = fmaxf(hi, map[q]);
    for (int q = 0; q < P; q++) out[q] = hi > 0 ? fmaxf(map[q], 0) / hi : 0;
}

// Map m in the column at (y, x), w wide: its heatmap in `h` rows, then its name and deletion.
static void map_column(const State *s, int y, int x, int w, int h, int m, float *unit) {
    const OcclusionComparison *c = &s->occlusion;
    to_unit(unit, c->maps.data + (size_t)m * c->P, c->P);
    const HeatScale scale = {0, 1, RAMP_SEQUENTIAL};
    int cw, ch;
    heat_draw_on(s, (Rect){y, x, h, w}, (Mat){unit, c->side, c->side}, &scale, &cw, &ch);
    const int under = y + (ch > 0 ? ch : h);
    ui_text(under, x, w, m == 0 ? ROLE_HEADING : ROLE_NORMAL, short_names[m]);
    for (int k = 0; k < MEASURE_KS; k++)
        ui_printf(under + 1 + k, x, w, ROLE_NORMAL, "%2d: %.4f", rollout_measure_ks[k],
                  c->deletion[m][k]);
}

void occlusion_view(const State *s, Rect r) {
    const OcclusionComparison *c = &s->occlusion;
    const char *name = labels_name(&s->labels, c->cls);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "occlusion beside attention: p(%s) = %.4f",
              name && name[0] ? name : "?", c->full);
    const HeatScale scale = {0, 1, RAMP_SEQUENTIAL};
    const int used = legend_draw(s, r.y + 1, r.x, r.w, &scale, true);
    ui_text(r.y + 1, r.x + used + 1, r.w - used - 1, ROLE_DIM,
            "each ÷ its max · under: p, top k black");
    // four maps in a row when they fit, else two rows of two
    const int per_row = r.w >= OCCLUSION_MAPS * (MIN_MAP_W + GAP) ? OCCLUSION_MAPS : 2;
    const int rows = (OCCLUSION_MAPS + per_row - 1) / per_row;
    const int w = (r.w - GAP * (per_row - 1)) / per_row;
    const int h = (r.h - 2) / rows - LINES_UNDER;
    if (w < 8 || h < 2) return;
    float *unit = malloc(sizeof(float) * (size_t)c->P);
    if (!unit) return;
    for (int m = 0; m < OCCLUSION_MAPS; m++)
        map_column(s, r.y + 2 + m / per_row * (h + LINES_UNDER), r.x + m % per_row * (w + GAP), w,
                   h, m, unit);
    free(unit);
}

UiAction cmd_occlusion(State *s, int key) {
    if (s->backward) {
        state_message(s, "occlusion reads the forward pass: d goes back to it");
        return ACT_NONE;
    }
    if (s->occlusion.maps.data) {
        occlusion_comparison_free(&s->occlusion);
        state_message(s, "the stage's own view (O: occlusion)");
        return ACT_NONE;
    }
    const ViewKind k = view_kind_for(state_node(s)->stage);
    if (k != VIEW_IMAGE && k != VIEW_ATTENTION) {
        state_message(s, "O works on the input or an attention stage");
        return ACT_NONE;
    }
    s->request = REQ_OCCLUSION;
    return ACT_REQUEST;
}
