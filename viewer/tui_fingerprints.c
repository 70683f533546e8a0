/**
 * @file tui_fingerprints.c
 * @brief The head fingerprints table (key F): for the picture the pass
 *        sees, every head's mean attention distance, entropy and share on
 *        [cls], one row per (layer, head), sorted by a column with S.
 *
 * Shape legend: L layers, H heads, L·H rows of 3 numbers.
 *
 * The numbers are lib's head_fingerprints_layer() on each layer's
 * `blocks.{l}.attn.probs` as the history recorded it (so they are `vit
 * fingerprints`'s), recomputed at each draw: a few thousand weights per
 * head. A layer the pass has not reached yet (or dropped from the history)
 * has no rows; the last line says so. Rows that do not fit scroll with the
 * arrows.
 */
#include "tui.h"
#include "tui_draw.h"
#include "explain/head_fingerprints.h"

#include <math.h>
#include <stdlib.h>

enum { F = HEAD_FINGERPRINT_COLUMNS, LAYER_W = 7, HEAD_W = 6, NUM_W = 10, ABOVE = 2, BELOW = 1 };

bool fingerprints_shown(const State *s) { return s->fingerprints && !s->backward; }

// Layer l's probabilities (1, H, N, N) as recorded, or NULL (not computed, or dropped).
static const Tensor *layer_probs(const State *s, int l) {
    char name[48];
    snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
    const HistEntry *e = history_get(&s->history, stepper_find(&s->stepper, name));
    return e && e->kept && e->t.ndim == 4 ? &e->t : NULL;
}

// table (L·H, 3) for picture 0, the rows of layers computed; returns how many layers those are.
static int fingerprint_rows(const State *s, float *table, bool *have) {
    const int L = s->cfg->depth, H = s->cfg->heads;
    const int side = s->cfg->image_size / s->cfg->patch_size;
    int count = 0;
    for (int l = 0; l < L; l++) {
        const Tensor *t = layer_probs(s, l);
        have[l] = t && t->shape[1] == H;
        if (!have[l]) continue;
        const int N = t->shape[3];
        head_fingerprints_layer(table + (size_t)l * H * F, t->data, H, N - side * side, side, side);
        count++;
    }
    return count;
}

// The header: each column's name, the one sorted by marked ▼ (v without UTF-8).
static void header_draw(const State *s, int y, Rect r) {
    ui_text(y, r.x, LAYER_W, ROLE_DIM, "layer");
    ui_text(y, r.x + LAYER_W, HEAD_W, ROLE_DIM, "head");
    int x = r.x + LAYER_W + HEAD_W;
    for (int k = 0; k < F; k++, x += NUM_W) {
        const bool sorted = s->fingerprint_sort == k;
        ui_printf(y, x, NUM_W, sorted ? ROLE_HEADING : ROLE_DIM, "%*s%s", NUM_W - 2,
                  head_fingerprint_name(k), sorted ? ui_glyph(s, "▼", "v") : " ");
    }
}

static void row_draw(const State *s, int y, Rect r, int row, const float *f) {
    const int H = s->cfg->heads;
    ui_printf(y, r.x, LAYER_W, ROLE_NORMAL, "%-5d", row / H);
    ui_printf(y, r.x + LAYER_W, HEAD_W, ROLE_NORMAL, "%-4d", row % H);
    for (int k = 0; k < F; k++)
        ui_printf(y, r.x + LAYER_W + HEAD_W + k * NUM_W, NUM_W, s->fingerprint_sort == k
                  ? ROLE_HEADING : ROLE_NORMAL, "%8.4f", (double)f[k]);
}

// The last line: what sorts, what uniform attention would give, or how far the pass is.
static void footer_draw(const State *s, int y, Rect r, int count) {
    const int L = s->cfg->depth, N = vit_num_tokens(s->cfg);
    if (count < L) {
        ui_printf(y, r.x, r.w, ROLE_DIM, "%d of %d layers computed: c runs on · F closes", count,
                  L);
        return;
    }
    ui_printf(y, r.x, r.w, ROLE_DIM, "S: sort · entropy ln %d = %.4f uniform · F closes", N,
              log((double)N));
}

void fingerprints_view(const State *s, Rect r) {
    const int L = s->cfg->depth, H = s->cfg->heads;
    float *table = malloc(sizeof(float) * (size_t)L * H * F);
    bool *have = malloc(sizeof(bool) * (size_t)L);
    int *order = malloc(sizeof(int) * (size_t)L * H), *shown = order;
    if (!table || !have || !order) goto done;
    const int count = fingerprint_rows(s, table, have);
    head_fingerprints_order(order, table, L * H, s->fingerprint_sort);
    int n = 0; // the rows of layers computed, in the order asked
    for (int i = 0; i < L * H; i++)
        if (have[order[i] / H]) shown[n++] = order[i];
    ui_text(r.y, r.x, r.w, ROLE_HEADING,
            "head fingerprints (patch queries, [cls] left out)");
    header_draw(s, r.y + 1, r);
    const int room = maxi(0, r.h - ABOVE - BELOW);
    const int first = maxi(0, mini(s->fingerprint_scroll, n - room));
    for (int i = first; i < n && i - first < room; i++)
        row_draw(s, r.y + ABOVE + i - first, r, shown[i], table + (size_t)shown[i] * F);
    footer_draw(s, r.y + r.h - 1, r, count);
done:
    free(table);
    free(have);
    free(order);
}

/* ------------------------------------------------------------------ keys */

UiAction cmd_fingerprints(State *s, int key) {
    if (s->backward) {
        state_message(s, "the fingerprints read the forward pass: d goes back to it");
        return ACT_NONE;
    }
    const bool open = !s->fingerprints;
    state_close_views(s); // one view in place of the stage's at a time
    s->fingerprints = open;
    state_message(s, s->fingerprints ? "head fingerprints (S sorts; F: the stage's own view)"
                                     : "the stage's own view (F: head fingerprints)");
    return ACT_NONE;
}

// S: layer order → distance → entropy → cls → layer order.
static UiAction cmd_sort(State *s, int key) {
    s->fingerprint_sort = s->fingerprint_sort + 1 >= F ? -1 : s->fingerprint_sort + 1;
    s->fingerprint_scroll = 0;
    state_message(s, s->fingerprint_sort < 0 ? "fingerprints in layer order"
                                             : "fingerprints by %s, the largest first",
                  head_fingerprint_name(s->fingerprint_sort));
    return ACT_NONE;
}

static UiAction cmd_scroll(State *s, int key) {
    const int page = maxi(1, s->layout.view.h - ABOVE - BELOW);
    const int d = key == KEY_DOWN ? 1 : key == KEY_UP ? -1 : key == KEY_NPAGE ? page : -page;
    const int last = maxi(0, s->cfg->depth * s->cfg->heads - page); // the last page's first row
    s->fingerprint_scroll = maxi(0, mini(s->fingerprint_scroll + d, last));
    return ACT_NONE;
}

static UiAction cmd_close(State *s, int key) { return cmd_fingerprints(s, 'F'); }

static const KeyBinding bindings[] = {
    {{'S'}, "S", "sort by distance → entropy → cls → layer order (the largest first)", cmd_sort},
    {{KEY_UP, KEY_DOWN, KEY_NPAGE, KEY_PPAGE}, "↑ ↓ PgUp PgDn", "scroll the rows", cmd_scroll},
    {{'F', 27}, "F Esc", "close the fingerprints", cmd_close},
};

const KeyTable fingerprint_keys = {"Head fingerprints (F: distance, entropy, share on [cls])",
                                   bindings, sizeof bindings / sizeof bindings[0]};

UiAction fingerprint_key(State *s, int key) {
    return fingerprints_shown(s) ? keytable_dispatch(&fingerprint_keys, s, key) : ACT_UNHANDLED;
}
