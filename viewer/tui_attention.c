/**
 * @file tui_attention.c
 * @brief The views of an attention stage: the N × N map with the query's row
 *        over the image, every head at once, the rollout (gradient-weighted in
 *        the backward pass), the live softmax with a temperature, and every
 *        layer and head for one query.
 */
#include "tui.h"
#include "tui_draw.h"
#include "format.h"
#include "heatmap.h"
#include "render_image.h"
#include "explain/rollout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


const char *const head_mode_names[] = {"head", "mean over heads", "max over heads"};

static const char *const scale_names[SCALE_MODES] = {"its range", "0 to its max", "0 to 1"};

HeatScale map_scale(const State *s, const float *v, size_t n) {
    HeatScale sc = heat_scale(v, n); // its range (diverging when signed)
    if (s->scale == SCALE_ZERO && sc.kind == RAMP_SEQUENTIAL) sc.lo = 0;
    if (s->scale == SCALE_UNIT && sc.kind == RAMP_SEQUENTIAL) sc.lo = 0, sc.hi = 1;
    return sc;
}

// The query's attention to the P patches (its row without the cls key), on [0, 1].
static HeatScale query_row(const State *s, Mat a, float *patch_t) {
    const float *row = a.data + (size_t)s->query * a.cols;
    const int P = a.cols - 1;
    HeatScale sc = map_scale(s, row + 1, (size_t)P);
    for (int p = 0; p < P; p++) patch_t[p] = heat_position(&sc, row[1 + p]);
    return sc;
}

// The largest of the query's row over the patches (keys 1 … N-1), and its patch.
static float row_max(const float *row, int N, int *best) {
    int b = 1;
    for (int k = 2; k < N; k++)
        if (row[k] > row[b]) b = k;
    if (best) *best = b - 1;
    return row[b];
}

// The query's attention over the image: patch colours blended with the picture.
static void overlay_draw(const State *s, Rect r, Mat a, int side, int px_h) {
    const int grid = state_grid(s), P = grid * grid;
    if (a.cols != P + 1) return; // not a token × token map (never for this model)
    float *patch_t = malloc((size_t)P * sizeof *patch_t);
    if (!patch_t) return;
    HeatScale sc = query_row(s, a, patch_t);
    patches_over_image(s, r.y, r.x, side, px_h, patch_t, sc.kind, s->query - 1);
    const float *row = a.data + (size_t)s->query * a.cols;
    int best;
    const float top = row_max(row, a.cols, &best);
    // under the picture: the numbers behind the colours, short enough for 80 columns
    const int y = r.y + px_h / ui_pixel_rows(s), bottom = r.y + r.h - 1;
    if (y <= bottom) ui_printf(y, r.x, r.w, ROLE_DIM, "to cls %.3g", (double)row[0]);
    if (y + 1 <= bottom)
        ui_printf(y + 1, r.x, r.w, ROLE_DIM, "most to token %d (%d,%d)", best + 1, best / grid,
                  best % grid);
    if (y + 2 <= bottom) ui_printf(y + 2, r.x, r.w, ROLE_DIM, "  = %.4g", (double)top);
    const bool probs = !strcmp(state_node(s)->stage->name, "attn.probs");
    if (y + 3 <= bottom) // the overlay's own scale, uniform attention (1/N) ticked
        legend_draw_mark(s, y + 3, r.x, r.w, &sc, true, probs ? 1.0f / (float)a.cols : NAN);
    free(patch_t);
}

// "cls" or "token 13 (1,5)": the query token in words.
static void query_name(const State *s, char *buf, size_t size) {
    token_label(buf, size, s->query, state_grid(s));
}

// One row over the image on an absolute scale: patch_t = row[1 + p] / hi.
static void row_positions(float *patch_t, const float *row, int P, float hi) {
    for (int p = 0; p < P; p++) patch_t[p] = hi > 0 ? fminf(1.0f, fmaxf(0.0f, row[1 + p] / hi)) : 0;
}

// The largest tile side (columns, even) that puts H tiles of side × side/2
// cells, each with a label row, into w × h cells; *cols tiles to a row.
static int tile_side(int H, int w, int h, int *cols) {
    int best = 0;
    *cols = H;
    for (int c = 1; c <= H; c++) {
        const int rows = (H + c - 1) / c;
        int side = mini((w - (c - 1)) / c, (h / rows - 1) * 2);
        side -= side % 2;
        if (side > best) best = side, *cols = c;
    }
    return best;
}

// Every head's row for the query, over the image, on one scale from 0 to the largest.
static void heads_view(const State *s, Rect r, const Tensor *t) {
    const int H = t->shape[1], N = t->shape[2], P = N - 1, grid = state_grid(s);
    const size_t nn = (size_t)N * N;
    if (P != grid * grid) return;
    float hi = 0;
    for (int h = 0; h < H; h++)
        hi = fmaxf(hi, row_max(t->data + h * nn + (size_t)s->query * N, N, NULL));
    char query[64];
    query_name(s, query, sizeof query);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "every head · query %s < > · one scale, 0 to %.3g "
              "(uniform 1/%d = %.3g) · a: rollout", query, (double)hi, P, 1.0 / P);
    int cols;
    const int side = tile_side(H, r.w, r.h - 2, &cols);
    if (side < 4) {
        ui_text(r.y + 1, r.x, r.w, ROLE_ERROR, "too small for every head: enlarge the terminal");
        return;
    }
    float *patch_t = malloc((size_t)P * sizeof *patch_t);
    if (!patch_t) return;
    const int px_h = side / 2 * ui_pixel_rows(s), tile_h = side / 2 + 1;
    for (int h = 0; h < H; h++) {
        const float *row = t->data + h * nn + (size_t)s->query * N;
        const int y = r.y + 1 + h / cols * tile_h, x = r.x + h % cols * (side + 1);
        row_positions(patch_t, row, P, hi);
        patches_over_image(s, y, x, side, px_h, patch_t, RAMP_SEQUENTIAL, s->query - 1);
        int best;
        const float top = row_max(row, N, &best);
        ui_printf(y + side / 2, x, side, h == s->plane ? ROLE_KEY : ROLE_DIM,
                  "h%d%s max %.2g", h, s->heads_off[state_node(s)->block * H + h] ? " off" : "",
                  (double)top);
    }
    free(patch_t);
    const HeatScale sc = {0, hi, RAMP_SEQUENTIAL};
    legend_draw(s, r.y + r.h - 1, r.x, r.w, &sc, true);
}

// The kept entry of `name` in history h of stepper st, or NULL (with *why
// saying what is missing).
static const HistEntry *kept_entry(const Stepper *st, const History *h, const char *name,
                                   const char **why) {
    const HistEntry *e = history_get(h, stepper_find(st, name));
    if (e && e->kept) return e;
    *why = e ? "dropped for the history budget" : "not computed yet (s steps)";
    return NULL;
}

// Its values, or NULL.
static const float *recorded(const Stepper *st, const History *h, const char *name,
                             const char **why) {
    const HistEntry *e = kept_entry(st, h, name, why);
    return e ? e->t.data : NULL;
}

// The layers a rollout multiplies, first … last, from the histories: the
// forward's probabilities and, in the backward pass, their gradients. Says
// on row y what is missing and returns false when a layer is not there.
static bool rollout_layers(const State *s, int first, int last, const float **probs,
                           const float **grads, int y, Rect r) {
    for (int l = first; l <= last; l++) {
        char name[64];
        const char *why = "";
        snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
        probs[l - first] = recorded(state_forward_stepper(s), state_forward_history(s), name, &why);
        if (probs[l - first] && s->backward) {
            snprintf(name, sizeof name, VIT_GRAD_PREFIX "blocks.%d.attn.probs", l);
            grads[l - first] = recorded(&s->stepper, &s->history, name, &why);
        }
        if (!probs[l - first] || (s->backward && !grads[l - first])) {
            ui_printf(y, r.x, r.w, ROLE_ERROR, "the rollout needs %s: %s", name, why);
            return false;
        }
    }
    return true;
}

// Beside the picture: what the rollout's row is, and its numbers.
static void rollout_notes(const State *s, Rect r, const float *row, int first, int last,
                          HeadFuse fuse) {
    const int N = vit_num_tokens(s->cfg), P = N - 1, grid = state_grid(s);
    int best;
    const float hi = row_max(row, N, &best);
    double on_patches = 0;
    for (int p = 0; p < P; p++) on_patches += row[1 + p];
    char query[64], l1[96], l2[96], l3[96], l4[96], l5[96], l6[96];
    query_name(s, query, sizeof query);
    if (s->backward) snprintf(l1, sizeof l1, "A_l = rownorm(mean_h max(0, P ⊙ ∂P) + I)");
    else snprintf(l1, sizeof l1, "A_l = rownorm(%s of heads + I)", head_fuse_name(fuse));
    // J is the product A_last ··· A_first, later blocks on the left; one or two factors written out
    if (last == first) snprintf(l2, sizeof l2, "J = A_%d: how much of token", last);
    else if (last == first + 1) snprintf(l2, sizeof l2, "J = A_%d · A_%d: how much of token", last, first);
    else snprintf(l2, sizeof l2, "J = A_%d ··· A_%d: how much of token", last, first);
    snprintf(l3, sizeof l3, "%s's row comes from each input", query);
    snprintf(l4, sizeof l4, "most from token %d (%d,%d): %.3g", best + 1, best / grid,
             best % grid, (double)hi);
    snprintf(l5, sizeof l5, "from cls%s %.3g, patches %.3g", s->query == 0 ? " itself" : "",
             (double)row[0], on_patches);
    snprintf(l6, sizeof l6, "uniform would be %.3g a patch", on_patches / P);
    const char *lines[] = {l1, "the residual stream counted as I,", l2, l3,
                           "token through the blocks.", "", l4, l5, l6};
    for (int i = 0; i < (int)(sizeof lines / sizeof lines[0]) && i < r.h; i++)
        ui_text(r.y + i, r.x, r.w, i == 6 ? ROLE_NORMAL : ROLE_DIM, lines[i]);
}

// Rollout through blocks 0 … `block` (heads fused by mean, or max with m):
// the query's row of the product over the image, beside what it means. In
// the backward pass, the gradient-weighted rollout of the blocks whose
// gradients are known, `block` … L-1.
static void rollout_view(const State *s, Rect r, int block) {
    const int H = s->cfg->heads, N = vit_num_tokens(s->cfg), P = N - 1;
    const int L = s->cfg->depth, first = s->backward ? block : 0, last = s->backward ? L - 1 : block;
    const int layers = last - first + 1;
    const float **probs = calloc((size_t)layers, sizeof *probs);
    const float **grads = calloc((size_t)layers, sizeof *grads);
    float *joint = malloc((size_t)N * N * sizeof *joint), *patch_t = malloc((size_t)P * sizeof *patch_t);
    if (!probs || !grads || !joint || !patch_t ||
        !rollout_layers(s, first, last, probs, grads, r.y + 1, r))
        goto done;
    const HeadFuse fuse = s->heads == HEADS_MAX ? FUSE_MAX : FUSE_MEAN;
    const RolloutOptions opt = {fuse, 0};
    VitError err;
    if (attention_rollout(joint, (const float *const *)probs,
                          s->backward ? (const float *const *)grads : NULL, layers, H, N, &opt,
                          &err) != VIT_OK) {
        ui_text(r.y + 1, r.x, r.w, ROLE_ERROR, err.msg);
        goto done;
    }
    char query[64];
    query_name(s, query, sizeof query);
    const float *row = joint + (size_t)s->query * N;
    const float hi = row_max(row, N, NULL);
    if (s->backward)
        ui_printf(r.y, r.x, r.w, ROLE_HEADING, "gradient-weighted rollout, blocks %d–%d · query %s "
                  "< > · 0 to %.3g · a: the map", first, last, query, (double)hi);
    else // a leads on to the softmax view; said before the scale, which the legend repeats
        ui_printf(r.y, r.x, r.w, ROLE_HEADING, "rollout, blocks 0–%d · heads' %s (m) · query %s "
                  "< > · a: softmax · 0 to %.3g", block, head_fuse_name(fuse), query, (double)hi);
    int px_h, side = picture_side(s, r.h - 2, r.w / 2, &px_h);
    row_positions(patch_t, row, P, hi);
    patches_over_image(s, r.y + 1, r.x, side, px_h, patch_t, RAMP_SEQUENTIAL, s->query - 1);
    const HeatScale sc = {0, hi, RAMP_SEQUENTIAL};
    legend_draw(s, r.y + r.h - 1, r.x, side + 2, &sc, true);
    const Rect notes = {r.y + 1, r.x + side + 2, r.h - 2, r.w - side - 2};
    if (notes.w >= 24) rollout_notes(s, notes, row, first, last, fuse);
done:
    free(probs), free(grads), free(joint), free(patch_t);
}

// A stage of this block recorded (and kept) in the forward history, or NULL.
static const HistEntry *block_stage(const State *s, int block, const char *stage) {
    char name[64];
    snprintf(name, sizeof name, "blocks.%d.%s", block, stage);
    const char *why;
    return kept_entry(state_forward_stepper(s), state_forward_history(s), name, &why);
}

// One row of N values drawn over the patch grid (the cls value said in words),
// in a tile at (y, x) of w columns; the caption above it.
static void row_tile(const State *s, int y, int x, int w, int h, const float *row,
                     const HeatScale *sc, const char *caption) {
    const int grid = state_grid(s);
    ui_text(y, x, w, ROLE_HEADING, caption);
    int cw, ch;
    heat_draw_on(s, (Rect){y + 1, x, h - 2, w}, (Mat){row + 1, grid, grid}, sc, &cw, &ch);
    ui_printf(y + 1 + ch, x, w, ROLE_DIM, "cls %.4g", (double)row[0]);
}

// The query's row through scores → scaled → probs, and the softmax again at a
// temperature T (+ -): chapter 03's lesson, live. At T = 1 the live row is the
// recorded one, bit for bit, and the view checks it.
static void softmax_view(const State *s, Rect r, int block) {
    const HistEntry *sc_e = block_stage(s, block, "attn.scores"),
                    *sd_e = block_stage(s, block, "attn.scaled"),
                    *pr_e = block_stage(s, block, "attn.probs");
    if (!sc_e || !sd_e || !pr_e) {
        ui_printf(r.y + 1, r.x, r.w, ROLE_ERROR, "the softmax view needs blocks.%d's attn.scores, "
                  "scaled and probs: not computed yet (s steps) or dropped", block);
        return;
    }
    const int N = pr_e->t.shape[2], head = s->plane;
    const size_t at = ((size_t)head * N + s->query) * N;
    const float *scores = sc_e->t.data + at, *scaled = sd_e->t.data + at, *probs = pr_e->t.data + at;
    float *live = malloc((size_t)N * sizeof *live);
    if (!live) return;
    softmax_at_temperature(live, scaled, N, s->temperature);
    char query[64];
    query_name(s, query, sizeof query);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "softmax of query %s, head %d ([ ] < >) · T = %.3g "
              "(+ -) · a: every layer", query, head, (double)s->temperature);
    // the two probability rows share one scale, so the temperature's effect shows
    float hi = 0;
    for (int k = 1; k < N; k++) hi = fmaxf(hi, fmaxf(probs[k], live[k]));
    const HeatScale p_scale = {0, hi, RAMP_SEQUENTIAL};
    const int tile_w = mini((r.w - 3) / 4, 2 * (r.h - 8)), tile_h = r.h - 6;
    char cap[4][48];
    snprintf(cap[0], sizeof cap[0], "scores Q·Kᵀ");
    snprintf(cap[1], sizeof cap[1], "scaled ÷√Dh");
    snprintf(cap[2], sizeof cap[2], "probs");
    snprintf(cap[3], sizeof cap[3], "softmax(·/%.3g)", (double)s->temperature);
    const float *rows[4] = {scores, scaled, probs, live};
    for (int i = 0; i < 4; i++)
        row_tile(s, r.y + 1, r.x + i * (tile_w + 1), tile_w, tile_h, rows[i],
                 i >= 2 ? &p_scale : NULL, cap[i]);
    int best = 0;
    for (int k = 1; k < N; k++)
        if (live[k] > live[best]) best = k;
    const double h = entropy_nats(live, N);
    char who[48];
    token_label(who, sizeof who, best, state_grid(s));
    const int y = r.y + r.h - 4;
    const bool same = s->temperature == 1.0f && !memcmp(live, probs, (size_t)N * sizeof *live);
    ui_printf(y, r.x, r.w, ROLE_NORMAL, "max %.4g on %s", (double)live[best], who);
    ui_printf(y + 1, r.x, r.w, ROLE_NORMAL, "entropy %.3f nats · e^H = %.1f of %d keys", h, exp(h),
              N);
    ui_text(y + 2, r.x, r.w, same ? ROLE_NORMAL : ROLE_DIM,
            same ? "at T = 1 the live row is the recorded probs, bit for bit"
                 : "T → 0: all on the largest score · T → ∞: uniform");
    legend_draw(s, r.y + r.h - 1, r.x, r.w, &p_scale, true);
    free(live);
}

// Every layer (rows) × every head (columns): the query's row over the patch
// grid in each, on one scale, from the forward history (bertviz's model view).
static void layers_view(const State *s, Rect r) {
    const int L = s->cfg->depth, H = s->cfg->heads, N = vit_num_tokens(s->cfg), grid = state_grid(s);
    const float **rows = calloc((size_t)L * H, sizeof *rows);
    if (!rows) return;
    float hi = 0;
    int known = 0;
    for (int l = 0; l < L; l++) {
        const HistEntry *e = block_stage(s, l, "attn.probs");
        for (int h = 0; e && h < H; h++) {
            const float *row = e->t.data + ((size_t)h * N + s->query) * N;
            rows[l * H + h] = row;
            for (int k = 1; k < N; k++) hi = fmaxf(hi, row[k]);
        }
        known += e != NULL;
    }
    char query[64];
    query_name(s, query, sizeof query);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "every layer × head · %d of %d layers computed · "
              "query %s < > · 0 to %.3g · a: the map", known, L, query, (double)hi);
    const int lab = 4, tile_w = maxi(1, (r.w - lab) / H - 1), tile_h = maxi(1, (r.h - 3) / L);
    // Each tile is the patch grid kept square (a terminal row is ui_pixel_rows()
    // pixels high), pooled the same way along both axes, so the caption's "mean
    // of k×k" holds; a blank row parts the layers when each has three rows or more.
    const int pr = ui_pixel_rows(s), gap = tile_h > 2;
    int side = mini(tile_w, (tile_h - gap) * pr);
    if (side >= pr) side -= side % pr; // whole rows: as many pixels down as across
    const HeatScale sc = {0, hi, RAMP_SEQUENTIAL};
    int per = 1;
    for (int h = 0; h < H; h++)
        ui_printf(r.y + 1, r.x + lab + h * (tile_w + 1), tile_w, ROLE_DIM, "h%d", h);
    for (int l = 0; l < L; l++) {
        const int y = r.y + 2 + l * tile_h;
        ui_printf(y, r.x, lab, ROLE_DIM, "b%d", l);
        for (int h = 0; h < H; h++) {
            if (!rows[l * H + h]) continue;
            int cw, ch;
            heat_draw_on(s, (Rect){y, r.x + lab + h * (tile_w + 1), (side + pr - 1) / pr, side},
                         (Mat){rows[l * H + h] + 1, grid, grid}, &sc, &cw, &ch);
            if (cw) per = (grid + cw - 1) / cw;
        }
    }
    const int lw = legend_draw(s, r.y + r.h - 1, r.x, r.w, &sc, true);
    ui_printf(r.y + r.h - 1, r.x + lw + 2, r.w - lw - 2, ROLE_DIM, "cell ≈ mean of %d×%d patches",
              per, per);
    free(rows);
}

// The caption of the map: the head, the query, the pooling or the zoom, the scale.
static void map_caption(const State *s, Rect r, int H, int per, const int *zoom, Mat shown) {
    char head[48], query[64];
    if (s->heads == HEADS_ONE) snprintf(head, sizeof head, "head %d of %d%s", s->plane, H,
                                        s->heads_off[state_node(s)->block * H + s->plane]
                                            ? " (off)" : "");
    else snprintf(head, sizeof head, "%s", head_mode_names[s->heads]);
    query_name(s, query, sizeof query);
    if (zoom) ui_printf(r.y, r.x, r.w, ROLE_HEADING, "zoom (Z): queries %d–%d, keys %d–%d · %s · "
                        "query %s < > · scale %s (A)", zoom[0], zoom[0] + shown.rows - 1, zoom[1],
                        zoom[1] + shown.cols - 1, head, query, scale_names[s->scale]);
    else ui_printf(r.y, r.x, r.w, ROLE_HEADING, "%s ([ ] m) · queries ↓ keys → · query %s < > · "
                   "cell ≈ mean of %d×%d · scale %s (A)", head, query, per, per,
                   scale_names[s->scale]);
}

// The N × N map of the head (or fusion) shown and the query's row over the
// image, side by side; the query and key marked; the cell under the cursor read out.
static void map_view(const State *s, Rect r, const Tensor *t) {
    const int N = t->shape[2], H = t->shape[1];
    float *scratch = s->heads == HEADS_ONE ? NULL : malloc((size_t)N * N * sizeof *scratch);
    const Mat a = attention_map(t, s->plane, scratch ? s->heads : HEADS_ONE, scratch);
    int px_h, side = square_side(s, r.h - 6, (r.w - 6) / 2, &px_h); // 4 lines and the legend
    const Rect map = {r.y + 1, r.x + 4, side / 2, side};
    const HeatScale msc = map_scale(s, a.data, (size_t)N * N);
    // Z: the part of the map around the cursor (query, key), one value a cell
    int zoom[2] = {0, 0}, cw, ch;
    float *win = s->zoom ? malloc((size_t)side * side * sizeof *win) : NULL;
    const Mat shown = win ? mat_window(a, s->query, s->key, map.h * ui_pixel_rows(s), map.w, win,
                                       &zoom[0], &zoom[1])
                          : a;
    const HeatScale sc = heat_draw_on(s, map, shown, &msc, &cw, &ch);
    map_caption(s, r, H, cw > 0 ? (shown.cols + cw - 1) / cw : 1, win ? zoom : NULL, shown);
    token_axis(s, (Rect){map.y, r.x, map.h, 3}, ch, zoom[0], shown.rows, true);
    const int q = s->query - zoom[0], k = s->key - zoom[1]; // inside the map shown
    if (ch > 0 && q >= 0 && q < shown.rows)
        ui_text(map.y + (int)((long long)q * ch / shown.rows), r.x + 3, 1, ROLE_KEY,
                ui_glyph(s, "▸", ">"));
    if (cw > 0 && k >= 0 && k < shown.cols) // under the map: the key's column
        ui_text(map.y + ch, map.x + (int)((long long)k * cw / shown.cols), 1, ROLE_KEY,
                ui_glyph(s, "▴", "^"));
    const bool probs = !strcmp(state_node(s)->stage->name, "attn.probs");
    legend_draw_mark(s, r.y + r.h - 2, r.x, r.w / 2, &sc, true, probs ? 1.0f / (float)N : NAN);
    char text[160]; // the cell under the cursor, at full precision
    state_cursor_text(s, a, text, sizeof text);
    const MatStats st = mat_stats(a); // of the head (or fusion) shown, not the whole tensor
    ui_printf(r.y + r.h - 1, r.x, r.w, ROLE_KEY, "%s · shown: mean %.3g std %.3g", text, st.mean,
              st.std);
    const Rect over = {r.y + 1, map.x + side + 2, r.h - 1, r.x + r.w - (map.x + side + 2)};
    if (over.w >= side && side >= 8) overlay_draw(s, over, a, side, px_h);
    free(win);
    free(scratch);
}

void attention_view(const State *s, Rect r, const Tensor *t) {
    const bool forward = !s->backward; // the backward has the map and the rollout
    if (s->attn_view == ATTN_HEADS && forward) heads_view(s, r, t);
    else if (s->attn_view == ATTN_ROLLOUT) rollout_view(s, r, state_node(s)->block);
    else if (s->attn_view == ATTN_SOFTMAX && forward) softmax_view(s, r, state_node(s)->block);
    else if (s->attn_view == ATTN_LAYERS && forward) layers_view(s, r);
    else map_view(s, r, t);
}

