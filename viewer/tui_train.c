/**
 * @file tui_train.c
 * @brief Drawing the training screen (`vitview --train`) from a TrainView:
 *        the loss and accuracy curves in braille dots over the run's steps,
 *        the learning-rate schedule under them, the numbers, [cls]'s attention
 *        over a picture, the panel of pictures with their predictions, the
 *        layers' health and the confusion matrix.
 *
 * Only reads the view (train_view.h); the shared drawing helpers (tui_ui.c,
 * tui_view.c) take a State for the terminal's colours and UTF-8, so this file
 * keeps one with just those filled in.
 */
#include "tui_train.h"
#include "format.h"
#include "heatmap.h"
#include "render_image.h"
#include "tui.h"
#include "tui_draw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// What the shared helpers read of a State: the colours and UTF-8 (set by ui_start()).
static State look;

void train_screen_start(TrainView *v, bool mono) {
    ui_start(&look, mono);
    v->colour = look.colour;
    v->utf8 = look.utf8;
    train_view_resize(v, COLS, LINES);
}

void train_screen_stop(void) { ui_stop(); }

void train_screen_resize(TrainView *v) { train_view_resize(v, COLS, LINES); }

/* ------------------------------------------------------------- charts */

enum { AXIS_W = 7 }; // "0.1234┤": the y labels and the axis line left of every plot

// A braille cell's eight dots as ASCII: ' on the upper half, . on the lower, : on both.
static const char *ascii_dots(uint8_t bits) {
    const bool up = bits & 0x1b, down = bits & 0xe4; // dots 1 2 4 5, dots 3 6 7 8
    return up && down ? ":" : up ? "'" : ".";
}

static void dots_cell(int y, int x, uint8_t bits, Role role) {
    if (!bits) return;
    if (!look.utf8) {
        ui_text(y, x, 1, role, ascii_dots(bits));
        return;
    }
    char glyph[4] = {(char)0xe2, (char)(0xa0 | (bits >> 6)), (char)(0x80 | (bits & 0x3f)), 0};
    ui_text(y, x, 1, role, glyph); // U+2800 + bits in UTF-8
}

// The x axis under a plot: a line with a tick at each epoch's end.
static void x_axis(const TrainView *v, int y, int x, int W) {
    attrset(ui_role(ROLE_DIM));
    mvhline(y, x, ACS_HLINE, W);
    for (int e = 1; e < v->epochs && v->total_steps > 0; e++) {
        const int c = (int)((int64_t)e * v->steps_per_epoch * W / v->total_steps);
        if (c < W) mvaddch(y, x + c, ACS_BTEE);
    }
    attrset(A_NORMAL);
}

// A series over the run's steps (train), its epochs' values as marks (validation).
typedef struct {
    const char *title;      // e.g. "loss"
    const Series *steps;    // one value per step
    const Series *epochs;   // one value per finished epoch
    bool percent;           // values are fractions shown as %, on a fixed 0-100 % axis
} Chart;

static void y_label(int y, int x, float value, bool percent) {
    if (percent) ui_printf(y, x, AXIS_W - 1, ROLE_DIM, "%5.0f%%", 100.0 * value);
    else ui_printf(y, x, AXIS_W - 1, ROLE_DIM, "%6.3g", (double)value);
    attrset(ui_role(ROLE_DIM));
    mvaddch(y, x + AXIS_W - 1, ACS_RTEE);
    attrset(A_NORMAL);
}

static void chart_draw(const TrainView *v, Rect r, const Chart *c) {
    const int W = r.w - AXIS_W - 1, H = r.h - 2; // a title row above, the axis below
    if (W < 4 || H < 2) return;
    const Series *s = c->steps, *e = c->epochs;
    float lo = 0, hi = 1;
    if (!c->percent) { // the range of both series
        float lo1, hi1, lo2, hi2;
        chart_range(&lo1, &hi1, s->v, s->n);
        chart_range(&lo2, &hi2, e->v, e->n);
        lo = fminf(lo1, lo2), hi = e->n ? fmaxf(hi1, hi2) : hi1;
    }
    // the title: the last values of both
    const double last = s->n ? s->v[s->n - 1] : NAN, scale = c->percent ? 100 : 1;
    int x = r.x + ui_text(r.y, r.x, r.w, ROLE_HEADING, c->title);
    x += ui_printf(r.y, x, r.x + r.w - x, ROLE_BAR, "  %s train %.4g%s", look.utf8 ? "⠤" : ".",
                   scale * last, c->percent ? "%" : "");
    if (e->n)
        ui_printf(r.y, x, r.x + r.w - x, ROLE_KEY, "  %s val %.4g%s", look.utf8 ? "◆" : "o",
                  scale * e->v[e->n - 1], c->percent ? "%" : "");
    else ui_printf(r.y, x, r.x + r.w - x, ROLE_DIM, "  %s val: each epoch's end",
                   look.utf8 ? "◆" : "o");
    // the plot
    const int px = r.x + AXIS_W, py = r.y + 1;
    float *cols = malloc((size_t)2 * W * sizeof *cols);
    uint8_t *cells = malloc((size_t)W * H);
    if (cols && cells) {
        chart_columns(cols, 2 * W, s->v, s->n, v->total_steps);
        chart_dots(cells, W, H, cols, lo, hi);
        for (int cy = 0; cy < H; cy++)
            for (int cx = 0; cx < W; cx++)
                dots_cell(py + cy, px + cx, cells[cy * W + cx], ROLE_BAR);
    }
    free(cols);
    free(cells);
    for (int i = 0; i < e->n && v->total_steps > 0; i++) { // validation: a mark at the epoch's end
        const int64_t at = (int64_t)(i + 1) * v->steps_per_epoch - 1;
        const int cx = (int)(at * W / v->total_steps), cy = chart_row(e->v[i], lo, hi, H);
        if (cy >= 0 && cx < W) ui_text(py + cy, px + cx, 1, ROLE_KEY, look.utf8 ? "◆" : "o");
    }
    y_label(py, r.x, hi, c->percent);
    y_label(py + H - 1, r.x, lo, c->percent);
    for (int cy = 1; cy < H - 1; cy++) {
        attrset(ui_role(ROLE_DIM));
        mvaddch(py + cy, r.x + AXIS_W - 1, ACS_VLINE);
        attrset(A_NORMAL);
    }
    x_axis(v, py + H, px - 1, W + 1);
}

// The learning rate of every step, drawn whole (the part run so far bright),
// on the same x axis as the curves above it.
static void schedule_draw(const TrainView *v, Rect r) {
    const int W = r.w - AXIS_W - 1, H = r.h - 1;
    if (W < 4 || H < 1 || v->total_steps <= 0) return;
    float peak = 0;
    for (int64_t i = 0; i < v->total_steps; i++) peak = fmaxf(peak, v->schedule[i]);
    int x = r.x + ui_text(r.y, r.x, r.w, ROLE_HEADING, "learning rate");
    ui_printf(r.y, x, r.x + r.w - x, ROLE_DIM, "  %.3g now, peak %.3g: warm-up, then cosine",
              v->lr, (double)peak);
    float *cols = malloc((size_t)2 * W * sizeof *cols);
    uint8_t *cells = malloc((size_t)W * H);
    if (cols && cells) {
        chart_columns(cols, 2 * W, v->schedule, (int)v->total_steps, v->total_steps);
        chart_dots(cells, W, H, cols, 0, peak > 0 ? peak : 1);
        const int done = (int)(v->step * W / v->total_steps); // columns the run has passed
        for (int cy = 0; cy < H; cy++)
            for (int cx = 0; cx < W; cx++)
                dots_cell(r.y + 1 + cy, r.x + AXIS_W + cx, cells[cy * W + cx],
                          cx < done ? ROLE_FORMULA : ROLE_PENDING);
    }
    free(cols);
    free(cells);
}

// The mean of a series' values from index `from` on (NAN: none).
static double mean_from(const Series *s, int from) {
    double sum = 0;
    int n = 0;
    for (int i = from < 0 ? 0 : from; i < s->n; i++)
        if (isfinite(s->v[i])) sum += s->v[i], n++;
    return n ? sum / n : NAN;
}

static void facts_draw(const TrainView *v, Rect r) {
    const int first = (train_view_epoch(v) - 1) * v->steps_per_epoch; // this epoch's first step
    const double loss = mean_from(&v->train_loss, first), acc = mean_from(&v->train_acc, first);
    char eta[16], speed[32];
    fmt_clock(eta, sizeof eta, v->eta_s);
    fmt_si(speed, sizeof speed, v->images_per_s);
    int y = r.y;
    if (y < r.y + r.h)
        ui_printf(y++, r.x, r.w, ROLE_NORMAL, "epoch %d so far: loss %.4f, accuracy %.1f%%",
                  train_view_epoch(v), loss, 100 * acc);
    if (y < r.y + r.h) {
        if (v->val_loss.n)
            ui_printf(y++, r.x, r.w, ROLE_NORMAL, "validation: loss %.4f, accuracy %.2f%%",
                      (double)v->val_loss.v[v->val_loss.n - 1],
                      100.0 * v->val_acc.v[v->val_acc.n - 1]);
        else ui_text(y++, r.x, r.w, ROLE_DIM, "validation: at the end of the epoch");
    }
    if (y < r.y + r.h)
        ui_printf(y++, r.x, r.w, ROLE_NORMAL, "‖∇‖ %.3g · %s img/s · ETA %s", v->grad_norm, speed,
                  eta);
    if (y < r.y + r.h)
        ui_printf(y++, r.x, r.w, ROLE_DIM, "watching costs %.1f%% of the time (redraw %d ms)",
                  100 * train_view_overhead(v), v->redraw_ms);
}

/* ------------------------------------------------------------- the model */

// A picture of the panel, side × px_h pixels, with one value per patch laid
// over it when patch_t is given (in monochrome: the values as characters).
static void thumb_draw(const TrainView *v, int y, int x, int side, int px_h, int picture,
                       const float *patch_t) {
    if (v->colour == COLOUR_MONO && patch_t) {
        for (int py = 0; py < px_h; py++)
            for (int pxx = 0; pxx < side; pxx++)
                mvaddch(y + py, x + pxx,
                        (chtype)ramp_ascii(patch_t[image_patch_at(pxx, py, side, px_h, v->grid)]));
        return;
    }
    Rgb *px = malloc((size_t)side * px_h * sizeof *px);
    if (!px) return;
    image_resample(px, side, px_h, v->thumbs + (size_t)picture * v->S * v->S, v->S, v->S);
    if (patch_t) image_overlay(px, side, px_h, patch_t, v->grid, RAMP_SEQUENTIAL, 0.6f, v->colour);
    picture_draw(&look, y, x, px, side, px_h);
    free(px);
}

static void attention_draw(const TrainView *v, Rect r) {
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "[cls] attention · layer %d of %d · head %d of %d",
              v->layer, v->depth, v->head, v->heads);
    if (!v->has_panel || v->pictures == 0) {
        ui_text(r.y + 1, r.x, r.w, ROLE_DIM, "after the first step");
        return;
    }
    const int rows = r.h - 2; // the heading above, the numbers below
    int px_h, side = square_side(&look, rows, (r.w - 2) / 2, &px_h);
    const int fit = image_fit_side(side, v->S); // whole pixels when they fit
    if (fit < side && fit % 2 == 0) side = fit, px_h = side / 2 * ui_pixel_rows(&look);
    if (side < 4) return;
    const int P = v->grid * v->grid;
    float *patch_t = malloc((size_t)P * sizeof *patch_t);
    if (!patch_t) return;
    HeatScale sc = heat_scale(v->attention, (size_t)P);
    sc.lo = 0; // from nothing: how much of [cls]'s attention each patch holds
    float top = 0;
    int best = 0;
    for (int p = 0; p < P; p++) {
        patch_t[p] = heat_position(&sc, v->attention[p]);
        if (v->attention[p] > top) top = v->attention[p], best = p;
    }
    thumb_draw(v, r.y + 1, r.x, side, px_h, v->picture, NULL);
    thumb_draw(v, r.y + 1, r.x + side + 2, side, px_h, v->picture, patch_t);
    free(patch_t);
    const int y = r.y + 1 + px_h / ui_pixel_rows(&look);
    const int truth = v->truth[v->picture], pred = v->predicted[v->picture];
    const int tx = r.x + 2 * side + 4, tw = r.x + r.w - tx;
    if (tw >= 12) { // beside the pictures: what they are
        ui_printf(r.y + 1, tx, tw, ROLE_NORMAL, "picture %d of %d", v->picture + 1, v->pictures);
        ui_printf(r.y + 2, tx, tw, ROLE_DIM, "is %s", v->class_names[truth]);
        ui_printf(r.y + 3, tx, tw, pred == truth ? ROLE_BAR : ROLE_ERROR, "seen as %s",
                  v->class_names[pred]);
        ui_printf(r.y + 4, tx, tw, ROLE_NORMAL, "p = %.3f", (double)v->prob[v->picture]);
        // how spread [cls]'s row is: ln N when even, falling as it sharpens
        float *row = malloc((size_t)(P + 1) * sizeof *row);
        if (row && r.y + 7 < y) { // above the caption's row
            row[0] = v->attention_cls;
            memcpy(row + 1, v->attention, (size_t)P * sizeof *row);
            ui_printf(r.y + 6, tx, tw, ROLE_DIM, "entropy %.3f nats", entropy_nats(row, P + 1));
            ui_printf(r.y + 7, tx, tw, ROLE_DIM, "even: %.3f (ln %d)", log(P + 1.0), P + 1);
        }
        free(row);
    }
    if (y < r.y + r.h)
        ui_printf(y, r.x, r.w, ROLE_DIM, "to itself %.4f · most %.4f on patch (%d,%d)",
                  (double)v->attention_cls, (double)top, best / v->grid, best % v->grid);
}

static void pictures_draw(const TrainView *v, Rect r) {
    ui_text(r.y, r.x, r.w, ROLE_HEADING, "held-out pictures: the model's answer now");
    if (v->pictures == 0) return;
    const int rows = r.h - 2; // the heading above, the answers below
    const int slot = r.w / (v->pictures < 4 ? v->pictures : 4) >= 14 ? 14 : 12;
    int px_h, side = square_side(&look, rows, slot - 2, &px_h);
    if (side < 2) return;
    const int fit = r.w / slot > 0 ? r.w / slot : 1;
    const int shown = fit < v->pictures ? fit : v->pictures;
    int first = v->picture - shown + 1; // a window of the panel that holds the chosen picture
    if (first < 0) first = 0;
    for (int i = 0; i < shown; i++) {
        const int p = first + i, x = r.x + i * slot;
        thumb_draw(v, r.y + 1, x, side, px_h, p, NULL);
        const int y = r.y + 1 + px_h / ui_pixel_rows(&look);
        if (!v->has_panel || y >= r.y + r.h) continue;
        const bool right = v->predicted[p] == v->truth[p];
        char label[64];
        snprintf(label, sizeof label, "%s%.0f%% %s", p == v->picture ? ">" : "",
                 100.0 * v->prob[p], v->class_names[v->predicted[p]]);
        ui_text(y, x, slot - 1, p == v->picture ? ROLE_SELECTED : right ? ROLE_BAR : ROLE_ERROR,
                label);
    }
}

static void layers_draw(const TrainView *v, Rect r) {
    // columns: the name, ‖∇‖, ‖θ‖, the ratio; narrower in a narrow pane. The
    // headings are right-aligned over the numbers, which end at the ends[].
    const bool wide = r.w >= 46;
    const int name_w = wide ? 12 : 10, num_w = wide ? 9 : 7, ratio_w = wide ? 11 : 9;
    const int ends[3] = {name_w + 1 + num_w, name_w + 2 + 2 * num_w,
                         name_w + 3 + 2 * num_w + ratio_w};
    ui_text(r.y, r.x, r.w, ROLE_HEADING, "layers");
    if (r.w >= ends[2]) {
        ui_text(r.y, r.x + ends[0] - 3, 3, ROLE_HEADING, "‖∇‖");
        ui_text(r.y, r.x + ends[1] - 3, 3, ROLE_HEADING, "‖θ‖");
        ui_text(r.y, r.x + ends[2] - 8, 8, ROLE_HEADING, "‖Δθ‖/‖θ‖");
    }
    if (v->layer_rows == 0) {
        ui_text(r.y + 1, r.x, r.w, ROLE_DIM, "measured after each redraw: none yet");
        return;
    }
    const int bar_x = r.x + ends[2] + 1, bar_w = r.x + r.w - bar_x;
    for (int i = 0; i < v->layer_rows && i + 1 < r.h; i++) {
        const LayerHealth *l = &v->layers[i];
        const double ratio = l->update_ratio;
        // about 1e-3 per step is the usual health: far above, steps too big; far below, stuck
        const bool odd = !(ratio > 1e-5 && ratio < 1e-2);
        const int y = r.y + 1 + i;
        ui_printf(y, r.x, mini(r.w, ends[1]), ROLE_NORMAL, "%-*.*s %*.3g %*.3g", name_w, name_w,
                  l->name, num_w, l->grad_norm, num_w, l->weight_norm);
        if (r.w >= ends[2])
            ui_printf(y, r.x + ends[1] + 1, ratio_w, odd ? ROLE_ERROR : ROLE_NORMAL, "%*.2e",
                      ratio_w, ratio);
        if (bar_w >= 8 && ratio > 0) // log10 of the ratio from 1e-6 to 1e-1
            bar_draw(&look, y, bar_x, bar_w - 1, (log10(ratio) + 6) / 5);
    }
}

// The shade of a cell: its share of the true class's pictures.
static float share(const int *row, int Y, int col) {
    long total = 0;
    for (int c = 0; c < Y; c++) total += row[c];
    return total ? (float)row[col] / (float)total : NAN;
}

static void confusion_draw(const TrainView *v, Rect r) {
    const int Y = v->classes;
    ui_text(r.y, r.x, r.w, ROLE_HEADING, "confusion (validation): true ↓ predicted →");
    if (!v->confusion) {
        ui_text(r.y + 1, r.x, r.w, ROLE_DIM, "filled in by each epoch's validation");
        return;
    }
    int name_w = 0;
    for (int c = 0; c < Y; c++) {
        const int n = (int)strlen(v->class_names[c]);
        if (n > name_w) name_w = n;
    }
    if (name_w > 11) name_w = 11;
    const int cell_w = (r.w - name_w - 1) / Y;
    if (cell_w >= 5 && r.h >= Y + 1) { // room for the counts: one row and a number per cell
        for (int t = 0; t < Y; t++) {
            const int y = r.y + 1 + t;
            ui_printf(y, r.x, name_w, ROLE_DIM, "%-*.*s", name_w, name_w, v->class_names[t]);
            for (int p = 0; p < Y; p++) {
                char text[16];
                snprintf(text, sizeof text, "%*d ", cell_w - 1, v->confusion[t * Y + p]);
                ui_heat_text(&look, y, r.x + name_w + 1 + p * cell_w, RAMP_SEQUENTIAL,
                             share(v->confusion + t * Y, Y, p), text);
            }
        }
        return;
    }
    // small: two classes per row in half blocks, two columns a class, no numbers
    const int pr = ui_pixel_rows(&look);
    for (int t = 0; t < Y; t += pr) {
        const int y = r.y + 1 + t / pr;
        if (y >= r.y + r.h) break;
        ui_printf(y, r.x, 3, ROLE_DIM, pr == 2 && t + 1 < Y ? "%d%d" : "%d", t, t + 1);
        for (int p = 0; p < Y; p++) {
            const float top = share(v->confusion + t * Y, Y, p);
            const float bottom =
                pr == 2 && t + 1 < Y ? share(v->confusion + (t + 1) * Y, Y, p) : NAN;
            for (int k = 0; k < 2; k++)
                ui_heat(&look, y, r.x + 3 + 2 * p + k, RAMP_SEQUENTIAL, top, bottom);
        }
    }
    long right = 0, all = 0;
    for (int t = 0; t < Y; t++)
        for (int p = 0; p < Y; p++) {
            all += v->confusion[t * Y + p];
            if (t == p) right += v->confusion[t * Y + p];
        }
    const int tx = r.x + 3 + 2 * Y + 2;
    if (tx + 10 < r.x + r.w) {
        ui_printf(r.y + 1, tx, r.x + r.w - tx, ROLE_NORMAL, "%ld of %ld", right, all);
        ui_text(r.y + 2, tx, r.x + r.w - tx, ROLE_DIM, "on the diagonal");
        ui_text(r.y + 3, tx, r.x + r.w - tx, ROLE_DIM, "Tab: the layers");
    }
}

/* -------------------------------------------------------------- frame */

static void title_row(const TrainView *v) {
    const Rect r = v->layout.title;
    attrset(ui_role(ROLE_TITLE));
    mvhline(r.y, r.x, ' ', r.w);
    attrset(A_NORMAL);
    char eta[16], model[112] = ""; // the model named when there is room for it
    if (r.w >= 120) snprintf(model, sizeof model, " · %s", v->model);
    int x = ui_printf(r.y, r.x, r.w, ROLE_TITLE, " vitview --train%s · epoch %d/%d · step "
                      "%lld/%lld · ETA %s ", model, train_view_epoch(v), v->epochs,
                      (long long)v->step, (long long)v->total_steps,
                      fmt_clock(eta, sizeof eta, v->eta_s));
    if (v->message[0] && x < r.w - 10)
        ui_printf(r.y, x + 1, r.w - x - 1, ROLE_MESSAGE, " %s ", v->message);
}

static void status_row(const TrainView *v) {
    const Rect r = v->layout.status;
    attrset(ui_role(ROLE_STATUS));
    mvhline(r.y, r.x, ' ', r.w);
    attrset(A_NORMAL);
    const char *what = v->finished ? "finished" : v->paused ? "paused" : "running";
    int x = ui_printf(r.y, r.x, r.w, ROLE_STATUS, " %s · step %lld · watching %.1f%% ", what,
                      (long long)v->step, 100 * train_view_overhead(v));
    ui_text(r.y, r.x + x, r.w - x, ROLE_STATUS,
            "│ space pause . step } { picture j k layer [ ] head + - redraw Tab ? q stop");
}

static void help_box(const TrainView *v) {
    int n;
    const TrainKey *keys = train_view_keys(&n);
    const int w = v->layout.cols - 8 < 76 ? v->layout.cols - 8 : 76, h = n + 3;
    const Rect frame = {(v->layout.rows - h) / 2, (v->layout.cols - w) / 2, h, w};
    ui_clear(frame);
    attrset(ui_role(ROLE_HEADING));
    mvhline(frame.y, frame.x, ACS_HLINE, frame.w);
    mvhline(frame.y + frame.h - 1, frame.x, ACS_HLINE, frame.w);
    mvvline(frame.y, frame.x, ACS_VLINE, frame.h);
    mvvline(frame.y, frame.x + frame.w - 1, ACS_VLINE, frame.h);
    attrset(A_NORMAL);
    ui_text(frame.y, frame.x + 2, frame.w - 4, ROLE_HEADING, " keys of the training screen ");
    int y = frame.y + 1;
    for (int i = 0; i < n; i++) {
        if (!keys[i].label[0]) continue; // a second row of a binding listed once
        ui_text(y, frame.x + 2, 9, ROLE_KEY, keys[i].label);
        ui_text(y++, frame.x + 12, frame.w - 14, ROLE_NORMAL, keys[i].help);
    }
    ui_text(y, frame.x + 2, frame.w - 4, ROLE_DIM, "any key closes this");
}

void train_screen_draw(const TrainView *v) {
    erase();
    const TrainLayout *l = &v->layout;
    if (l->too_small) {
        ui_printf(0, 0, l->cols, ROLE_ERROR, "%dx%d: the training screen needs %dx%d", l->cols,
                  l->rows, TRAIN_MIN_COLS, TRAIN_MIN_ROWS);
        refresh();
        return;
    }
    title_row(v);
    const Chart loss = {"loss", &v->train_loss, &v->val_loss, false};
    const Chart acc = {"accuracy", &v->train_acc, &v->val_acc, true};
    chart_draw(v, l->loss, &loss);
    chart_draw(v, l->accuracy, &acc);
    schedule_draw(v, l->lr);
    facts_draw(v, l->facts);
    attrset(ui_role(ROLE_DIM));
    mvvline(l->title.y + 1, l->sep_x, ACS_VLINE, l->rows - 2);
    attrset(A_NORMAL);
    attention_draw(v, l->attention);
    pictures_draw(v, l->pictures);
    if (l->both) {
        layers_draw(v, l->layers);
        confusion_draw(v, l->confusion);
    } else if (v->detail == DETAIL_LAYERS) layers_draw(v, l->layers);
    else confusion_draw(v, l->confusion);
    status_row(v);
    if (v->help) help_box(v);
    refresh();
}
