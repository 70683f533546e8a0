/**
 * @file tui_view.c
 * @brief The picture of the selected stage: the image with its patches, a
 *        heatmap or numeric grid of a matrix, attention maps with a query laid
 *        over the image, the top classes as bars.
 *
 * Every view draws a caption on its first row (what the axes are, which head,
 * the colour scale) and its picture below. Pooling and colour choices live in
 * heatmap.c and render_image.c; this file only places cells.
 */
#include "tui.h"
#include "tui_draw.h"
#include "format.h"
#include "heatmap.h"
#include "ops/ops.h"
#include "render_image.h"
#include "explain/rollout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------- heatmaps */

// "lo ▀▀▀▀▀▀▀▀ hi": the colour scale, 8 cells wide, right-aligned in the w
// columns from x (left-aligned when `left`). Returns columns used.
int legend_draw(const State *s, int y, int x, int w, const HeatScale *sc, bool left) {
    return legend_draw_mark(s, y, x, w, sc, left, NAN);
}

int legend_draw_mark(const State *s, int y, int x, int w, const HeatScale *sc, bool left,
                     float mark) {
    char lo[24], hi[24];
    snprintf(lo, sizeof lo, "%.3g ", (double)sc->lo);
    snprintf(hi, sizeof hi, " %.3g", (double)sc->hi);
    const int need = (int)(strlen(lo) + strlen(hi)) + 8;
    if (need > w) return 0;
    if (!left) x += w - need;
    int cx = x + ui_text(y, x, w, ROLE_DIM, lo);
    for (int i = 0; i < 8; i++) {
        float t = (float)i / 7.0f;
        ui_heat(s, y, cx + i, sc->kind, t, t);
    }
    ui_text(y, cx + 8, w - (cx + 8 - x), ROLE_DIM, hi);
    if (isnan(mark)) return need;
    // e.g. uniform attention, 1/N: ticked on the bar in colour, and said after it
    const float t = sc->hi > sc->lo ? (mark - sc->lo) / (sc->hi - sc->lo) : -1;
    if (s->colour != COLOUR_MONO && t >= 0 && t <= 1)
        ui_text(y, cx + (int)lroundf(t * 7), 1, ROLE_KEY, ui_glyph(s, "│", "|"));
    char said[32];
    snprintf(said, sizeof said, "  1/N %.3g", (double)mark);
    if (need + (int)strlen(said) <= w) {
        ui_text(y, cx + 8 + (int)strlen(hi), w, ROLE_DIM, said);
        return need + (int)strlen(said);
    }
    return need;
}

// Draw matrix m pooled into the cells of `area` (a small matrix grows by a
// whole factor instead); returns the colour scale, and the cells drawn
// through *cells_w × *cells_h.
HeatScale heat_draw(const State *s, Rect area, Mat m, int *cells_w, int *cells_h) {
    return heat_draw_on(s, area, m, NULL, cells_w, cells_h);
}

HeatScale heat_draw_on(const State *s, Rect area, Mat m, const HeatScale *scale, int *cells_w,
                       int *cells_h) {
    const int pr = ui_pixel_rows(s);
    int w = mini(area.w, m.cols), px = mini(area.h * pr, m.rows); // shrink to fit
    if (m.cols > 0 && m.rows > 0 && m.cols <= area.w && m.rows <= area.h * pr) {
        const int k = mini(area.w / m.cols, area.h * pr / m.rows); // small: grow, keep square
        w = m.cols * k, px = m.rows * k;
    }
    HeatScale sc = {0, 0, RAMP_SEQUENTIAL};
    *cells_w = *cells_h = 0;
    if (w <= 0 || px <= 0) return sc;
    float *g = malloc((size_t)w * px * sizeof *g);
    if (!g) return sc;
    heatmap_pool(g, px, w, m.data, m.rows, m.cols, POOL_MEAN);
    // the legend gives the data's range, whatever the pooling (it does not change with the
    // terminal's size); averaged cells then sit inside it
    sc = scale ? *scale : heat_scale(m.data, (size_t)m.rows * m.cols);
    const int rows = (px + pr - 1) / pr;
    for (int cy = 0; cy < rows; cy++)
        for (int cx = 0; cx < w; cx++) {
            const int top = cy * pr, bottom = top + 1;
            float t0 = heat_position(&sc, g[(size_t)top * w + cx]);
            float t1 =
                pr == 2 && bottom < px ? heat_position(&sc, g[(size_t)bottom * w + cx]) : NAN;
            ui_heat(s, area.y + cy, area.x + cx, sc.kind, t0, pr == 2 ? t1 : t0);
        }
    free(g);
    *cells_w = w, *cells_h = rows;
    return sc;
}

// Row labels at the top and bottom of a heatmap of rows first … first + rows - 1
// (a zoom's window, or the whole matrix from 0); row 0 of token rows is "cls".
void token_axis(const State *s, Rect r, int cells_h, int first, int rows, bool tokens) {
    if (cells_h <= 0) return;
    if (tokens && first == 0) ui_text(r.y, r.x, r.w, ROLE_DIM, "cls");
    else ui_printf(r.y, r.x, r.w, ROLE_DIM, "%d", first);
    if (cells_h > 1) ui_printf(r.y + cells_h - 1, r.x, r.w, ROLE_DIM, "%d", first + rows - 1);
}

// A matrix as a heatmap with a caption: "rows ↓ × cols → · cell = mean of a×b · scale".
// Under a heatmap of `cols` columns drawn `cw` cells wide: the bands the
// columns fall into (the R, G, B of a patch; the heads of attn.context), else
// ticks at the first and last column (of a zoom's window from column `first`).
static void column_axis(const State *s, int y, int x, int cw, int first, int cols, bool whole,
                        Rect r) {
    if (cw <= 0 || y >= r.y + r.h - 1) return;
    const PipeNode *n = state_node(s);
    const VitConfig *c = s->cfg;
    const bool rgb = !strcmp(n->stage->name, "patches") && c->channels == 3;
    const bool heads = !strcmp(n->stage->name, "attn.context") && cols == c->dim;
    static const char *const rgb_names[] = {"R", "G", "B"};
    const int bands = !whole ? 0 : rgb ? 3 : heads ? c->heads : 0; // a zoom's window: numbers
    for (int b = 0; b < bands; b++) {
        char label[16];
        if (rgb) snprintf(label, sizeof label, "%s", rgb_names[b]);
        else snprintf(label, sizeof label, "h%d", b);
        const int bx = x + b * cw / bands;
        ui_printf(y, bx, maxi(1, x + (b + 1) * cw / bands - bx), ROLE_DIM, "│%s", label);
    }
    if (bands) return;
    char last[16];
    const int len = snprintf(last, sizeof last, "%d", first + cols - 1);
    ui_printf(y, x, len, ROLE_DIM, "%d", first);
    if (cw > len + 2) ui_text(y, x + cw - len, len, ROLE_DIM, last);
}

// The cell cursor on a heatmap of `shown` (a window of `m` from row r0,
// column c0, or m itself) drawn as cw × ch cells at (y, x), and its readout
// from m on row `readout_y`; without the cursor, what is shown in numbers.
static void cursor_draw(const State *s, int y, int x, int cw, int ch, Mat m, Mat shown, int r0,
                        int c0, int readout_y, Rect r) {
    if (s->focus != FOCUS_VIEW) { // the statistics of what is shown (one head, one channel)
        const MatStats st = mat_stats(m);
        ui_printf(readout_y, r.x, r.w, ROLE_DIM, "shown: min %.4g max %.4g mean %.3g std %.3g · "
                  "Tab, then arrows: a cell cursor", (double)st.min, (double)st.max, st.mean,
                  st.std);
        return;
    }
    const int row = s->cursor_row - r0, col = s->cursor_col - c0;
    if (cw > 0 && ch > 0 && row >= 0 && row < shown.rows && col >= 0 && col < shown.cols)
        ui_text(y + (int)((long long)row * ch / shown.rows),
                x + (int)((long long)col * cw / shown.cols), 1, ROLE_KEY,
                s->colour == COLOUR_MONO ? "X" : "+"); // the ramp has "+"
    char text[160];
    state_cursor_text(s, m, text, sizeof text);
    ui_printf(readout_y, r.x, r.w, ROLE_KEY, "%s · arrows move it", text);
}

// The picture with patch `patch` lit (or none, -1): which patch a token row is.
static void thumbnail_draw(const State *s, int y, int x, int side, int px_h, int patch) {
    Rgb *px = picture(s, side, px_h);
    if (!px) return;
    const int grid = state_grid(s);
    image_patch_grid(px, side, px_h, grid);
    for (int py = 0; py < px_h; py++)
        for (int pxx = 0; pxx < side; pxx++)
            if (image_patch_at(pxx, py, side, px_h, grid) == patch)
                px[(size_t)py * side + pxx] =
                    rgb_mix(px[(size_t)py * side + pxx], (Rgb){255, 200, 0}, 0.6f);
    picture_draw(s, y, x, px, side, px_h);
    free(px);
}

static void matrix_view(const State *s, Rect r, Mat m, const char *rows_name,
                        const char *cols_name, const char *extra) {
    const bool tokens = m.rows == vit_num_tokens(s->cfg);
    const Rect full = r; // the readout takes the whole width
    // with the cursor on a token row, a thumbnail on the right lights its patch
    int thumb_h = 0, thumb = tokens && s->focus == FOCUS_VIEW && r.w >= 48
                                 ? picture_side(s, mini(8, r.h - 3), 16, &thumb_h) : 0;
    if (thumb) {
        thumbnail_draw(s, r.y + 2, r.x + r.w - thumb, thumb, thumb_h, s->cursor_row - 1);
        ui_text(r.y + 2 + thumb_h / ui_pixel_rows(s), r.x + r.w - thumb, thumb, ROLE_DIM,
                s->cursor_row ? "its patch" : "cls: none");
        r.w -= thumb + 1;
    }
    const Rect body = {r.y + 1, r.x + 4, r.h - 3, r.w - 4}; // then the column axis, the readout
    const HeatScale held = {s->locked_lo, s->locked_hi,
                            s->locked_lo < 0 && s->locked_hi > 0 ? RAMP_DIVERGING : RAMP_SEQUENTIAL};
    const HeatScale whole = heat_scale(m.data, (size_t)m.rows * m.cols);
    // Z: the part around the cursor, one value a cell, on the whole matrix's scale
    int r0 = 0, c0 = 0, cw, ch;
    float *win = s->zoom ? malloc((size_t)body.w * body.h * 2 * sizeof *win) : NULL;
    const Mat shown = win ? mat_window(m, s->cursor_row, s->cursor_col, body.h * ui_pixel_rows(s),
                                       body.w, win, &r0, &c0)
                          : m;
    const HeatScale sc = heat_draw_on(s, body, shown, s->locked ? &held : win ? &whole : NULL,
                                      &cw, &ch);
    token_axis(s, (Rect){body.y, r.x, body.h, 3}, ch, r0, shown.rows, tokens);
    cursor_draw(s, body.y, body.x, cw, ch, m, shown, r0, c0, r.y + r.h - 1, full);
    column_axis(s, body.y + ch, body.x, cw, c0, shown.cols, !win, r);
    const int pr = ui_pixel_rows(s), lw = legend_draw(s, r.y, r.x, r.w, &sc, false);
    const int per_r = ch ? (shown.rows + ch * pr - 1) / (ch * pr) : 1,
              per_c = cw ? (shown.cols + cw - 1) / cw : 1;
    char pooling[64];
    if (win) snprintf(pooling, sizeof pooling, "zoom (Z) from row %d, column %d", r0, c0);
    else snprintf(pooling, sizeof pooling, "cell ≈ mean of %d×%d", maxi(per_r, 1), maxi(per_c, 1));
    if (win) // the zoom first: the caption may be cut
        ui_printf(r.y, r.x, r.w - lw - 1, ROLE_HEADING, "%s · %s%s ↓ × %s →%s", pooling, extra,
                  rows_name, cols_name, s->locked ? " · scale held (#)" : "");
    else ui_printf(r.y, r.x, r.w - lw - 1, ROLE_HEADING, "%s%s ↓ × %s → · %s%s", extra, rows_name,
                   cols_name, pooling, s->locked ? " · scale held (#)" : "");
    free(win);
}

/* -------------------------------------------------------------- numbers */

static void number_text(char *buf, size_t size, float v) {
    if (isnan(v) || isinf(v) || fabsf(v) < 1e4f) snprintf(buf, size, "%8.4f", (double)v);
    else snprintf(buf, size, "%8.1e", (double)v);
}

// The values of m (a vector wrapped NUMBERS_PER_LINE to a line), scrolled to
// (scroll_row, scroll_col).
static void numbers_view(const State *s, Rect r, Mat m, const Tensor *t) {
    const bool wrap = m.rows == 1;
    const int cols = wrap ? NUMBERS_PER_LINE : m.cols, rows = numbers_rows(m);
    const bool tokens = !wrap && m.rows == vit_num_tokens(s->cfg);
    const int fit_c = maxi(1, (r.w - 6) / 9), fit_r = maxi(1, r.h - 2);
    const int r0 = s->scroll_row, c0 = s->scroll_col; // kept in range by state_clamp()
    char plane[48];
    state_plane_name(s, t, plane, sizeof plane);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "values%s%s · rows %d–%d of %d · columns %d–%d of %d · "
              "Tab then arrows scroll · v heatmap", plane[0] ? " · " : "", plane, r0,
              mini(rows, r0 + fit_r) - 1, rows, c0, mini(cols, c0 + fit_c) - 1, cols);
    const bool token_cols = !wrap && m.cols == vit_num_tokens(s->cfg); // keys: cls first
    for (int j = 0; j < fit_c && c0 + j < cols; j++) {
        if (token_cols && c0 + j == 0) ui_text(r.y + 1, r.x + 6 + 9 * j, 9, ROLE_DIM, "     cls");
        else ui_printf(r.y + 1, r.x + 6 + 9 * j, 9, ROLE_DIM, "%8d", wrap ? j : c0 + j);
    }
    for (int i = 0; i < fit_r && r0 + i < rows; i++) {
        const int row = r0 + i, y = r.y + 2 + i;
        if (tokens && row == 0) ui_text(y, r.x, 5, ROLE_DIM, "  cls");
        else ui_printf(y, r.x, 5, ROLE_DIM, "%5d", wrap ? row * NUMBERS_PER_LINE : row);
        for (int j = 0; j < fit_c && c0 + j < cols; j++) {
            const int col = c0 + j;
            const size_t idx = (size_t)row * (wrap ? NUMBERS_PER_LINE : m.cols) + col;
            if (wrap && idx >= (size_t)m.cols) break;
            char buf[32];
            number_text(buf, sizeof buf, m.data[idx]);
            ui_text(y, r.x + 6 + 9 * j, 9, ROLE_NORMAL, buf);
        }
    }
}

/* --------------------------------------------------------------- images */

// The input picture (w × h pixels) from the recorded "input" tensor; NULL if gone.
Rgb *picture(const State *s, int w, int h) {
    const History *fwd = state_forward_history(s); // the backward has the gradients
    const HistEntry *in = history_get(fwd, fwd->pinned);
    if (!in || !in->kept) return NULL;
    const int S = in->t.shape[2], C = in->t.shape[1];
    Rgb *full = malloc((size_t)S * S * sizeof *full), *px = malloc((size_t)w * h * sizeof *px);
    if (!full || !px) {
        free(full), free(px);
        return NULL;
    }
    image_to_rgb(full, in->t.data, C, S);
    image_resample(px, w, h, full, S, S);
    free(full);
    return px;
}

// Draw a w × h pixel picture at (y, x), two pixel rows per cell when colour allows.
void picture_draw(const State *s, int y, int x, const Rgb *px, int w, int h) {
    const int pr = ui_pixel_rows(s);
    for (int cy = 0; cy * pr < h; cy++)
        for (int cx = 0; cx < w; cx++) {
            Rgb top = px[(size_t)(cy * pr) * w + cx];
            Rgb bottom = pr == 2 && cy * 2 + 1 < h ? px[(size_t)(cy * 2 + 1) * w + cx] : top;
            ui_pixels(s, y + cy, x + cx, top, bottom);
        }
}

// A square picture side (in columns) fitting a rows × cols area; its pixel height.
int square_side(const State *s, int rows, int cols, int *px_h) {
    int side = mini(cols, rows * 2);
    side -= side % 2;
    *px_h = side / 2 * ui_pixel_rows(s); // cells are ~2:1, so side/2 rows look square
    return side;
}

// square_side() for the picture itself: a small image (28×28) grows by a whole
// factor, so its pixels stay square blocks and patches fall on their edges.
int picture_side(const State *s, int rows, int cols, int *px_h) {
    const int fit = square_side(s, rows, cols, px_h);
    const int side = image_fit_side(fit, s->cfg->image_size);
    if (side == fit || side % 2) return fit; // already exact, or odd: the plain square
    *px_h = side / 2 * ui_pixel_rows(s);
    return side;
}

// Values per patch (patch_t, on [0, 1]) laid over the picture, side × px_h
// pixels at (y, x); patch `mark` (or -1) drawn white, or as Q without colour.
void patches_over_image(const State *s, int y, int x, int side, int px_h,
                               const float *patch_t, RampKind kind, int mark) {
    const int grid = state_grid(s);
    Rgb *px = s->colour == COLOUR_MONO ? NULL : picture(s, side, px_h);
    if (px) {
        image_overlay(px, side, px_h, patch_t, grid, kind, s->opacity, s->colour);
        if (mark >= 0)
            for (int py = 0; py < px_h; py++)
                for (int pxx = 0; pxx < side; pxx++)
                    if (image_patch_at(pxx, py, side, px_h, grid) == mark)
                        px[(size_t)py * side + pxx] =
                            rgb_mix(px[(size_t)py * side + pxx], (Rgb){255, 255, 255}, 0.7f);
        picture_draw(s, y, x, px, side, px_h);
        free(px);
        return;
    }
    // monochrome (or no picture): the values alone, one character per pixel
    for (int py = 0; py < px_h; py++)
        for (int pxx = 0; pxx < side; pxx++) {
            int p = image_patch_at(pxx, py, side, px_h, grid);
            mvaddch(y + py, x + pxx, p == mark ? 'Q' : (chtype)ramp_ascii(patch_t[p]));
        }
}

static void image_view(const State *s, Rect r) {
    const int grid = state_grid(s);
    int h, w = picture_side(s, r.h - 1, r.w, &h);
    if (s->painting)
        ui_printf(r.y, r.x, r.w, ROLE_HEADING, "painting (P): pixel (%d, %d) · space paints · %d "
                  "painted · u undoes", s->paint_y, s->paint_x, state_painted(s));
    else
        ui_printf(r.y, r.x, r.w, ROLE_HEADING,
                  "%d×%d %spixels · %d×%d patches of %d px · shown stretched to 0–255 · P paints",
                  s->cfg->image_size, s->cfg->image_size, s->cfg->channels == 1 ? "grey " : "",
                  grid, grid, s->cfg->patch_size);
    Rgb *px = w > 0 ? picture(s, w, h) : NULL;
    if (!px) return;
    image_patch_grid(px, w, h, grid);
    paint_cursor_mark(s, px, w, h);
    picture_draw(s, r.y + 1, r.x, px, w, h);
    free(px);
    const int tx = r.x + w + 2, tw = r.x + r.w - tx;
    if (tw < 20) return;
    const bool cut = s->stepper.done > 1; // the patches are computed already
    const char *notes[] = {"Each patch becomes one token:", "", "", "plus the [cls] token,",
                           "which will carry the answer.", "",
                           cut ? "j or . shows the patches." : "s steps to the patches."};
    char a[64], b[64];
    snprintf(a, sizeof a, "%d×%d = %d patches", grid, grid, grid * grid);
    snprintf(b, sizeof b, "of %d×%d×%d numbers,", s->cfg->channels, s->cfg->patch_size,
             s->cfg->patch_size);
    notes[1] = a, notes[2] = b;
    for (int i = 0; i < 7 && i + 2 < r.h; i++) ui_text(r.y + 2 + i, tx, tw, ROLE_NORMAL, notes[i]);
}

static void patches_view(const State *s, Rect r, Mat m) {
    const int grid = state_grid(s);
    int h, w = picture_side(s, r.h - 1, r.w / 3, &h);
    Rgb *px = w > 0 ? picture(s, w, h) : NULL;
    if (px) {
        image_patch_grid(px, w, h, grid);
        picture_draw(s, r.y + 1, r.x, px, w, h);
        free(px);
    }
    Rect right = {r.y, r.x + w + 1, r.h, r.w - w - 1};
    if (right.w > 10) matrix_view(s, right, m, "patches", "C·p·p pixels", "");
}

/* ---------------------------------------------------------------- logits */

// A bar of `frac` of w cells, with eighth blocks at the end when UTF-8 allows.
void bar_draw(const State *s, int y, int x, int w, double frac) {
    static const char *const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    int units = (int)lround(frac * w * 8);
    if (units < 0) units = 0;
    int full = units / 8;
    for (int i = 0; i < full && i < w; i++) ui_text(y, x + i, 1, ROLE_BAR, ui_glyph(s, "█", "#"));
    if (s->utf8 && units % 8 && full < w) ui_text(y, x + full, 1, ROLE_BAR, eighths[units % 8]);
}

// The unmodified pass's logits while a what-if is in force, else NULL.
static const Tensor *baseline_logits(const State *s) {
    if (!state_whatif(s)) return NULL;
    const HistEntry *e = history_get(&s->baseline, stepper_find(&s->stepper, "logits"));
    return e && e->kept ? &e->t : NULL;
}

static void logits_view(const State *s, Rect r, const Tensor *t) {
    const int K = t->shape[t->ndim - 1];
    const float *z = t->data;
    const Tensor *was = baseline_logits(s);
    // softmax in double: the probabilities a learner compares with PyTorch's
    double *p = malloc(2 * (size_t)K * sizeof *p), *p_was = p ? p + K : NULL;
    const int show = mini(r.h - 1, K - s->rank_offset);
    int *idx = malloc((size_t)(s->rank_offset + maxi(show, 1)) * sizeof *idx);
    if (!idx || !p) {
        free(idx), free(p);
        return;
    }
    const double T = s->temperature;
    logits_probs_at(p, t, T);
    if (was) logits_probs_at(p_was, was, T);
    double entropy = 0; // nats: 0 when sure, ln K when every class is as likely
    for (int k = 0; k < K; k++)
        if (p[k] > 0) entropy -= p[k] * log(p[k]);
    const int got = ops_top_k(idx, s->rank_offset + maxi(show, 1), z, K);
    if (T == 1.0)
        ui_printf(r.y, r.x, r.w, ROLE_HEADING, "top of %d classes · entropy %.3f nats · logit · "
                  "softmax probability%s · bar: 0 to 1, │ = 1/%d · Tab ↑ ↓ · + − temperature", K,
                  entropy, was ? " · (the unmodified pass's)" : "", K);
    else // the same order at every T: only how sure it sounds changes
        ui_printf(r.y, r.x, r.w, ROLE_HEADING, "softmax(logit / T) at T = %.3g (+ −) · entropy "
                  "%.3f nats · top of %d classes%s · bar: 0 to 1, │ = 1/%d", T, entropy, K,
                  was ? " · (the unmodified pass's)" : "", K);
    const int label_w = mini(28, maxi(10, r.w - (was ? 53 : 44)));
    for (int i = 0; i < show && s->rank_offset + i < got; i++) {
        const int k = idx[s->rank_offset + i], y = r.y + 1 + i;
        char buf[64];
        const char *label = labels_name(&s->labels, k); // NULL without names
        if (!label || !label[0]) snprintf(buf, sizeof buf, "class %d", k), label = buf;
        ui_printf(y, r.x, 5, ROLE_DIM, "%4d", s->rank_offset + i + 1);
        ui_text(y, r.x + 5, label_w, ROLE_NORMAL, label);
        int x = r.x + 6 + label_w;
        x += ui_printf(y, x, r.x + r.w - x, ROLE_NORMAL, "%8.3f  %6.4f ", (double)z[k], p[k]);
        if (was) x += ui_printf(y, x, r.x + r.w - x, ROLE_DIM, "(%6.4f) ", p_was[k]);
        // the bar is the probability itself, 0 to 1, with uniform (1/K) marked: an
        // uncertain model shows short bars, not a full one for its first class
        const int bar_w = r.x + r.w - x;
        bar_draw(s, y, x, bar_w, p[k]);
        const int tick = x + (int)lround((double)bar_w / K);
        if (bar_w > 4 && tick > x + (int)lround(p[k] * bar_w))
            ui_text(y, tick, 1, ROLE_DIM, ui_glyph(s, "│", "|"));
    }
    free(idx);
    free(p);
}

/* ---------------------------------------------------------------- views */

// How many values per line make a wrapped vector of n values largest on an
// area of w columns × px pixel rows (each value a k × k square); the squarer on ties.
static int vector_wrap(int n, int w, int px) {
    int best = 16, best_k = -1, best_skew = 1 << 30;
    for (int wrap = 8; wrap <= 256; wrap *= 2) {
        const int rows = (n + wrap - 1) / wrap;
        const int k = mini(w / wrap, px / rows), skew = abs(wrap - rows);
        if (k > best_k || (k == best_k && skew < best_skew))
            best = wrap, best_k = k, best_skew = skew;
    }
    return best;
}

// The D features of the cls row, wrapped into lines (NaN-padded) and drawn as a heatmap.
static void vector_view(const State *s, Rect r, Mat m, bool classes) {
    const int wrap = vector_wrap(m.cols, r.w - 4, (r.h - 1) * ui_pixel_rows(s));
    const int rows = (m.cols + wrap - 1) / wrap;
    float *g = malloc((size_t)wrap * rows * sizeof *g);
    if (!g) return;
    for (int i = 0; i < wrap * rows; i++) g[i] = i < m.cols ? m.data[i] : NAN;
    char extra[64], per_line[32];
    snprintf(extra, sizeof extra, classes ? "%d classes: " : "cls token, %d features: ", m.cols);
    snprintf(per_line, sizeof per_line, "lines of %d", wrap);
    matrix_view(s, r, (Mat){g, rows, wrap}, per_line, classes ? "classes" : "features", extra);
    free(g);
}

// grad.input: |∂ logit / ∂ pixel|, the largest over channels, as a heatmap
// beside each patch's share of it laid over the picture: a saliency map.
static void saliency_view(const State *s, Rect r, const Tensor *g) {
    const int C = g->shape[1], S = g->shape[2], grid = state_grid(s), P = grid * grid;
    const int p = s->cfg->patch_size;
    float *mag = malloc((size_t)S * S * sizeof *mag), *patch_t = calloc((size_t)P, sizeof *patch_t);
    if (!mag || !patch_t) goto done;
    double total = 0;
    for (int i = 0; i < S * S; i++) {
        float m = 0;
        for (int c = 0; c < C; c++) m = fmaxf(m, fabsf(g->data[(size_t)c * S * S + i]));
        mag[i] = m;
        patch_t[i / S / p * grid + i % S / p] += m;
        total += m;
    }
    int best = 0;
    for (int q = 1; q < P; q++)
        if (patch_t[q] > patch_t[best]) best = q;
    const float top = patch_t[best];
    for (int q = 0; q < P; q++) patch_t[q] = top > 0 ? patch_t[q] / top : 0;
    const char *name = labels_name(&s->labels, s->backward_class);
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "saliency: |∂ logit(%s) / ∂ pixel|, largest over "
              "channels · each patch's sum over the image", name && name[0] ? name : "?");
    int px_h, side = picture_side(s, r.h - 2, (r.w - 2) / 2, &px_h);
    int cw, ch;
    const HeatScale sc = heat_draw(s, (Rect){r.y + 1, r.x, px_h / ui_pixel_rows(s), side},
                                   (Mat){mag, S, S}, &cw, &ch);
    legend_draw(s, r.y + r.h - 1, r.x, side + 2, &sc, true);
    const int ox = r.x + side + 2;
    if (ox + side <= r.x + r.w) patches_over_image(s, r.y + 1, ox, side, px_h, patch_t,
                                                   RAMP_SEQUENTIAL, -1);
    const int ty = r.y + 1 + px_h / ui_pixel_rows(s);
    if (ty < r.y + r.h - 1 && total > 0)
        ui_printf(ty, r.x, r.w, ROLE_DIM, "most: token %d (%d,%d), %.1f%% of the total "
                  "(uniform %.1f%%)", best + 1, best / grid, best % grid, 100.0 * top / total,
                  100.0 / P);
done:
    free(mag), free(patch_t);
}

// With a reference stage (=): this stage minus it, as the matrix view draws.
static bool compare_view(const State *s, Rect r, const PipeNode *n, const HistEntry *e) {
    if (!s->compare[0] || e->t.ndim != 3) return false;
    float *d = malloc(e->t.numel * sizeof *d);
    if (!d || !state_compare(s, e, d)) {
        free(d);
        return false;
    }
    char extra[160];
    snprintf(extra, sizeof extra, "%s − %s (= off) · ", n->name, s->compare);
    matrix_view(s, r, (Mat){d, e->t.shape[1], e->t.shape[2]}, "tokens",
                strstr(n->stage->axes, "M") ? "M features" : "D features", extra);
    free(d);
    return true;
}

static void pending_draw(const State *s, Rect r) {
    const Stepper *st = &s->stepper;
    ui_text(r.y + 1, r.x + 2, r.w - 2, ROLE_PENDING, "not computed yet.");
    ui_printf(r.y + 3, r.x + 2, r.w - 2, ROLE_NORMAL, "The forward pass is at %s (%d of %d).",
              st->done ? st->nodes[st->done - 1].name : "the start", st->done, st->count);
    ui_text(r.y + 4, r.x + 2, r.w - 2, ROLE_NORMAL,
            "s steps · b sets a breakpoint here · c continues to it");
}

static void dropped_draw(const State *s, Rect r) {
    char budget[VIT_NUM_BUF];
    ui_text(r.y + 1, r.x + 2, r.w - 2, ROLE_ERROR, "values dropped to keep the history small.");
    ui_printf(r.y + 3, r.x + 2, r.w - 2, ROLE_NORMAL, "The history keeps at most %s "
              "(--history-mb); the statistics above", vit_bytes(budget, (double)s->history.budget));
    ui_text(r.y + 4, r.x + 2, r.w - 2, ROLE_NORMAL,
            "are of the whole tensor. r restarts the pass.");
}

void view_draw(const State *s) {
    const Rect r = s->layout.view;
    const PipeNode *n = state_node(s);
    const HistEntry *e = state_entry(s);
    if (r.h < 3 || r.w < 10) return;
    if (s->importance.shown && !s->backward) { // I: head importance instead of the stage
        importance_draw(s, r);
        return;
    }
    if (positions_shown(s)) { // E on embed: one patch's position embedding against the others
        positions_view(s, r);
        return;
    }
    if (fingerprints_shown(s)) { // F: every head's three numbers, whatever layers are computed
        fingerprints_view(s, r);
        return;
    }
    if (lens_shown(s)) { // Y: the strip of every depth, whatever of it is computed
        lens_view(s, r);
        return;
    }
    if (occlusion_shown(s)) { // O: computed between passes, for the input the pass sees
        occlusion_view(s, r);
        return;
    }
    if (neuron_shown(s)) { // N: the cursor's score taken apart, from the recorded q and k
        neuron_view(s, r);
        return;
    }
    if (patching_shown(s)) { // C: computed between passes, for the input the pass sees
        patching_view(s, r);
        return;
    }
    if (!e) {
        pending_draw(s, r);
        return;
    }
    if (!e->kept) {
        dropped_draw(s, r);
        return;
    }
    const Mat m = tensor_slice(&e->t, s->plane);
    if (s->numbers) { // the matrix the picture shows: the head, or the heads' mean or max
        const size_t nn = e->t.ndim == 4 ? (size_t)e->t.shape[2] * e->t.shape[3] : 1;
        float *scratch = malloc(nn * sizeof *scratch);
        if (scratch) numbers_view(s, r, state_shown_matrix(s, &e->t, scratch), &e->t);
        free(scratch);
        return;
    }
    char head[64] = "";
    ViewKind kind = view_kind_for(n->stage);
    if (s->backward && kind == VIEW_LOGITS) kind = VIEW_VECTOR; // a gradient, not scores
    switch (kind) {
    case VIEW_IMAGE:
        if (s->backward) saliency_view(s, r, &e->t);
        else image_view(s, r);
        break;
    case VIEW_PATCHES: patches_view(s, r, m); break;
    case VIEW_ATTENTION: attention_view(s, r, &e->t); break;
    case VIEW_VECTOR: vector_view(s, r, m, strcmp(n->stage->name, "logits") == 0); break;
    case VIEW_LOGITS: logits_view(s, r, &e->t); break;
    case VIEW_MATRIX:
        if (compare_view(s, r, n, e)) break;
        if (e->t.ndim == 4)
            snprintf(head, sizeof head, "head %d of %d ([ ]%s) · ", s->plane, e->t.shape[1],
                     s->heads == HEADS_MEAN  ? "; the maps: mean"
                     : s->heads == HEADS_MAX ? "; the maps: max" : "");
        if (stepper_is_update(n)) matrix_view(s, r, m, "rows", "columns", head); // a parameter's
        else matrix_view(s, r, m, "tokens", strstr(n->stage->axes, "Dh") ? "Dh"
                         : strstr(n->stage->axes, "M") ? "M features" : "D features", head);
        break;
    }
}

/* ------------------------------------------------------------------ keys */

static UiAction cmd_numbers(State *s, int key) {
    s->numbers = !s->numbers;
    state_message(s, s->numbers ? "numbers (v: heatmap)" : "heatmap (v: numbers)");
    return ACT_NONE;
}

// [ ] and the digits: the head of q, k, v and the attention maps, or the
// input's channel. Two digits in a row make a head number (1 1: head 11).
static UiAction cmd_plane(State *s, int key) {
    static int last_digit = -1; // the digit before, while digits follow each other
    const HistEntry *e = state_entry(s);
    const int planes = e ? tensor_planes(&e->t) : 1;
    const bool is_digit = key >= '0' && key <= '9';
    if (planes <= 1) {
        if (!strcmp(state_node(s)->stage->name, "input"))
            state_message(s, "the input has one channel (grey): nothing for [ ] and 0-9 to choose");
        else
            state_message(s, "%s has no heads: [ ] and 0-9 choose a head of attn.q, k, v, scores, "
                          "scaled, probs, or a channel of an RGB input", state_node(s)->name);
        last_digit = -1;
        return ACT_NONE;
    }
    if (key == '[') s->plane = (s->plane + planes - 1) % planes;
    else if (key == ']') s->plane = (s->plane + 1) % planes;
    else if (last_digit >= 0 && last_digit * 10 + (key - '0') < planes)
        s->plane = last_digit * 10 + (key - '0');
    else if (key - '0' < planes) s->plane = key - '0';
    else {
        state_message(s, "this tensor has %d planes (0–%d)", planes, planes - 1);
        last_digit = -1;
        return ACT_NONE;
    }
    last_digit = is_digit ? key - '0' : -1;
    s->heads = HEADS_ONE;
    char name[48];
    state_plane_name(s, &e->t, name, sizeof name);
    state_message(s, "%s", name);
    return ACT_NONE;
}

static UiAction cmd_heads(State *s, int key) {
    if (view_kind_for(state_node(s)->stage) != VIEW_ATTENTION) {
        state_message(s, "m combines the heads of an attention map (attn.scores, scaled, probs); "
                      "%s shows one head at a time", state_node(s)->name);
        return ACT_NONE;
    }
    s->heads = (HeadMode)((s->heads + 1) % 3);
    state_message(s, "attention: %s", head_mode_names[s->heads]);
    return ACT_NONE;
}

static UiAction cmd_query(State *s, int key) {
    const int N = vit_num_tokens(s->cfg);
    s->query = (s->query + (key == '>' ? 1 : N - 1)) % N;
    return ACT_NONE;
}

static const char *const attn_view_names[ATTN_VIEWS] = {
    "the map, and the query's row over the image", "every head's row for the query",
    "the rollout through this block", "the query's softmax, and at a temperature (+ -)",
    "every layer and head for the query"};

static UiAction cmd_attn_view(State *s, int key) {
    if (view_kind_for(state_node(s)->stage) != VIEW_ATTENTION) {
        state_message(s, "a switches the views of an attention stage (attn.scores, scaled, probs)");
        return ACT_NONE;
    }
    // the backward has the map and the gradient-weighted rollout (gradients are signed)
    s->attn_view = s->backward ? (s->attn_view == ATTN_MAP ? ATTN_ROLLOUT : ATTN_MAP)
                               : (AttnView)((s->attn_view + 1) % ATTN_VIEWS);
    state_message(s, "attention: %s", s->backward && s->attn_view == ATTN_ROLLOUT
                                           ? "the gradient-weighted rollout from the last block"
                                           : attn_view_names[s->attn_view]);
    return ACT_NONE;
}

// x: the shown head of this block off or on again; X: the block's whole attention.
// =: this stage becomes the reference others are compared with (again: off).
static UiAction cmd_compare(State *s, int key) {
    const PipeNode *n = state_node(s);
    if (s->compare[0] && !strcmp(s->compare, n->name)) {
        s->compare[0] = '\0';
        state_message(s, "no comparison");
        return ACT_NONE;
    }
    snprintf(s->compare, sizeof s->compare, "%s", n->name);
    state_message(s, "stages of its shape now show themselves minus %s (= here again: off)",
                  n->name);
    return ACT_NONE;
}

// A: how attention maps are scaled; o: how much an overlay covers the image.
static UiAction cmd_scale(State *s, int key) {
    static const char *const names[SCALE_MODES] = {"each map's own range", "0 to its largest value",
                                                   "0 to 1"};
    s->scale = (ScaleMode)((s->scale + 1) % SCALE_MODES);
    state_message(s, "attention colours: %s", names[s->scale]);
    return ACT_NONE;
}

static UiAction cmd_opacity(State *s, int key) {
    s->opacity = s->opacity >= 0.85f ? 0.3f : s->opacity + 0.2f;
    state_message(s, "overlay: %.0f%% colour, %.0f%% image", 100.0 * s->opacity,
                  100.0 * (1 - s->opacity));
    return ACT_NONE;
}

// #: hold the matrix views' colour scale at this stage's range (again: let go),
// so the residual stream can be compared honestly from stage to stage.
static UiAction cmd_lock(State *s, int key) {
    const HistEntry *e = state_entry(s);
    if (s->locked || !e) {
        s->locked = false;
        state_message(s, "each matrix on its own scale again");
        return ACT_NONE;
    }
    float lo = e->stats.min, hi = e->stats.max;
    if (lo < 0 && hi > 0) lo = -fmaxf(-lo, hi), hi = -lo; // signed: symmetric, as heat_scale()
    s->locked = true, s->locked_lo = lo, s->locked_hi = hi;
    state_message(s, "every matrix now on %s's scale, %.3g to %.3g (# lets go)", state_node(s)->name,
                  (double)lo, (double)hi);
    return ACT_NONE;
}

// Z: maps drawn at full resolution around the cursor, or whole again.
static UiAction cmd_zoom(State *s, int key) {
    s->zoom = !s->zoom;
    state_message(s, s->zoom ? "zoom: one value a cell around the cursor (Z again: the whole map)"
                             : "the whole map");
    return ACT_NONE;
}

// H J K L: the attention map's key cursor across the patch grid.
static UiAction cmd_key(State *s, int key) {
    if (view_kind_for(state_node(s)->stage) != VIEW_ATTENTION) return ACT_UNHANDLED;
    const int dr = key == 'J' ? 1 : key == 'K' ? -1 : 0, dc = key == 'L' ? 1 : key == 'H' ? -1 : 0;
    s->key = token_step(s->key, dr, dc, state_grid(s));
    return ACT_NONE;
}

// + −: the temperature of the softmax view and of the logits' probabilities, by √2
// a press (0.05 to 20).
static UiAction cmd_temperature(State *s, int key) {
    const ViewKind kind = view_kind_for(state_node(s)->stage);
    if (kind != VIEW_LOGITS && (s->attn_view != ATTN_SOFTMAX || kind != VIEW_ATTENTION)) {
        state_message(s, "+ and − set a softmax's temperature: on the logits, or in the softmax "
                      "view (a on an attention stage until it shows)");
        return ACT_NONE;
    }
    const float t = key == '+' ? s->temperature * 1.41421356f : s->temperature / 1.41421356f;
    s->temperature = fabsf(t - 1.0f) < 1e-3f ? 1.0f : fminf(20.0f, fmaxf(0.05f, t));
    state_message(s, "temperature %.3g", (double)s->temperature);
    return ACT_NONE;
}

static UiAction cmd_head_off(State *s, int key) {
    const PipeNode *n = state_node(s);
    if (n->block < 0) {
        state_message(s, "x and X switch attention heads off: select a stage inside a block");
        return ACT_NONE;
    }
    const bool one = key == 'x' && s->heads == HEADS_ONE;
    if (one && !strchr(n->stage->axes, 'H')) { // no head is shown here
        state_message(s, "x switches off the head shown: select a stage with heads (attn.q … "
                      "attn.probs); X switches off this block's whole attention");
        return ACT_NONE;
    }
    s->request = REQ_HEAD;
    s->request_block = n->block;
    s->request_head = one ? s->plane : -1;
    return ACT_REQUEST;
}

// z: mask the query's patch (paint it black in the input), or unmask it.
static UiAction cmd_mask(State *s, int key) {
    if (view_kind_for(state_node(s)->stage) != VIEW_ATTENTION || s->query == 0) {
        state_message(s, "z masks the query's patch: on an attention stage, choose a patch "
                      "with < > (or Tab and the arrows)");
        return ACT_NONE;
    }
    s->request = REQ_PATCH;
    s->request_arg = s->query - 1;
    return ACT_REQUEST;
}

// Arrows with the view focused: scroll the numbers, move the query over the
// patch grid, or scroll the ranking.
static UiAction cmd_arrow(State *s, int key) {
    if (s->focus != FOCUS_VIEW) return ACT_UNHANDLED;
    const PipeNode *n = state_node(s);
    const ViewKind kind = view_kind_for(n->stage);
    const int page = maxi(1, s->layout.view.h - 3);
    int dr = 0;
    if (key == KEY_DOWN || key == KEY_UP) dr = key == KEY_DOWN ? 1 : -1;
    if (key == KEY_NPAGE || key == KEY_PPAGE) dr = key == KEY_NPAGE ? page : -page;
    int dc = key == KEY_RIGHT ? 1 : key == KEY_LEFT ? -1 : 0;
    if (key == KEY_HOME) s->scroll_row = s->scroll_col = s->rank_offset = s->query = 0;
    else if (key == KEY_END) { // the last row, token or rank (state_clamp() keeps it in range)
        s->scroll_row = s->rank_offset = 1 << 20;
        if (kind == VIEW_ATTENTION) s->query = vit_num_tokens(s->cfg) - 1;
    }
    else if (s->numbers) s->scroll_row += dr, s->scroll_col += dc;
    else if (kind == VIEW_ATTENTION)
        s->query = token_step(s->query, dr < 0 ? -1 : dr > 0 ? 1 : 0, dc, state_grid(s));
    else if (kind == VIEW_LOGITS) s->rank_offset += dr;
    else s->cursor_row += dr, s->cursor_col += dc; // a matrix: the cell cursor
    state_clamp(s);
    return ACT_NONE;
}

static const KeyBinding bindings[] = {
    {{'v'}, "v", "heatmap ↔ numbers", cmd_numbers},
    {{'[', ']'}, "[ ]", "previous / next head (or image channel)", cmd_plane},
    {{'0', '1', '2', '3', '4'}, "0-9", "head 0 … 9; two digits in a row: head 10 and up",
     cmd_plane},
    {{'5', '6', '7', '8', '9'}, "", "", cmd_plane},
    {{'m'}, "m", "attention: one head → mean → max over heads", cmd_heads},
    {{'<', '>'}, "< >", "previous / next query token (cls, token 1, …)", cmd_query},
    {{'a'}, "a", "attention: map → every head → rollout → softmax → every layer", cmd_attn_view},
    {{'Y'}, "Y", "logit lens: on a block's stage, each block's answer (norm + head on [cls])",
     cmd_lens},
    {{'F'}, "F", "head fingerprints: each head's attention distance, entropy, share on [cls]",
     cmd_fingerprints},
    {{'E'}, "E", "on embed: position similarity, one patch's pos_embed against each (arrows move it)",
     cmd_positions},
    {{'O'}, "O", "occlusion (each patch blacked out) beside the attention maps, deletion under each",
     cmd_occlusion},
    {{'N'}, "N", "neuron view: the cursor's score, q⊙k to probability", cmd_neuron},
    {{'C'}, "C", "patching: on a block's stage, one token of the next picture put in, p per patch",
     cmd_patching},
    {{'+', '-'}, "+ -", "the temperature of the softmax view or the logits up / down (×√2)",
     cmd_temperature},
    {{'H', 'J', 'K', 'L'}, "H J K L", "the attention map's key cursor across the grid", cmd_key},
    {{'='}, "=", "compare: stages of this shape show themselves minus this one", cmd_compare},
    {{'A'}, "A", "attention colours: own range → 0 to max → 0 to 1 (│ marks 1/N)", cmd_scale},
    {{'o'}, "o", "overlays: more colour or more image", cmd_opacity},
    {{'#'}, "#", "hold the matrices' colour scale at this stage's (again: let go)", cmd_lock},
    {{'Z'}, "Z", "zoom: the map at full resolution around the cursor (again: whole)", cmd_zoom},
    {{'x'}, "x", "what-if: switch the head shown off (on again); with m, the whole block",
     cmd_head_off},
    {{'X'}, "X", "what-if: switch this block's whole attention off (on again)", cmd_head_off},
    {{'z'}, "z", "what-if: mask the query's patch in the input (unmask)", cmd_mask},
    {{'P'}, "P", "on the input: paint it by hand, the pass rerunning after each stroke",
     paint_toggle},
    {{KEY_UP, KEY_DOWN, KEY_LEFT, KEY_RIGHT}, "arrows",
     "(view focused) move the cell cursor or the query, scroll numbers or ranking", cmd_arrow},
    {{KEY_NPAGE, KEY_PPAGE, KEY_HOME, KEY_END}, "PgUp PgDn Home End",
     "(view focused) page; Home, End: the first, the last", cmd_arrow},
};

const KeyTable view_keys = {"The view (right)", bindings, sizeof bindings / sizeof bindings[0]};

UiAction view_key(State *s, int key) { return keytable_dispatch(&view_keys, s, key); }
