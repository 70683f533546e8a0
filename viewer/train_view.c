/**
 * @file train_view.c
 * @brief The training screen's state: series, layout, keys and the charts'
 *        arithmetic (see train_view.h). No curses here.
 */
#include "train_view.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* ------------------------------------------------------------- series */

void series_push(Series *s, float value) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = vit_realloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n++] = value;
}

void series_free(Series *s) {
    free(s->v);
    *s = (Series){0};
}

/* --------------------------------------------------------------- setup */

void train_view_init(TrainView *v, int depth, int heads, int classes, int grid,
                     int64_t total_steps, int steps_per_epoch, int epochs,
                     const float *schedule) {
    *v = (TrainView){.depth = depth, .heads = heads, .classes = classes, .grid = grid,
                     .total_steps = total_steps, .steps_per_epoch = steps_per_epoch,
                     .epochs = epochs, .redraw_ms = TRAIN_REDRAW_MS,
                     .layer = depth - 1}; // the last layer's [cls] row sharpens most
    v->schedule = vit_malloc((size_t)(total_steps > 0 ? total_steps : 1) * sizeof *v->schedule);
    if (total_steps > 0) memcpy(v->schedule, schedule, (size_t)total_steps * sizeof *schedule);
    v->attention = vit_calloc((size_t)grid * grid, sizeof *v->attention);
    v->class_names = vit_calloc((size_t)classes, sizeof *v->class_names);
    for (int c = 0; c < classes; c++) // numbers until the panel names them
        snprintf(v->class_names[c], sizeof v->class_names[c], "%d", c);
}

void train_view_free(TrainView *v) {
    series_free(&v->train_loss);
    series_free(&v->train_acc);
    series_free(&v->val_loss);
    series_free(&v->val_acc);
    free(v->schedule);
    free(v->layers);
    free(v->confusion);
    free(v->class_names);
    free(v->thumbs);
    free(v->truth);
    free(v->predicted);
    free(v->prob);
    free(v->attention);
    memset(v, 0, sizeof *v);
}

void train_view_resize(TrainView *v, int cols, int rows) { v->layout = train_layout(cols, rows); }

void train_view_message(TrainView *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
}

double train_view_overhead(const TrainView *v) {
    const double all = v->train_seconds + v->watch_seconds;
    return all > 0 ? v->watch_seconds / all : 0;
}

bool train_view_redraw_due(const TrainView *v, double since_s) {
    return since_s * 1000 >= v->redraw_ms && since_s * TRAIN_WATCH_BUDGET >= v->redraw_seconds;
}

int train_view_epoch(const TrainView *v) {
    if (v->steps_per_epoch <= 0) return 1;
    int64_t e = v->step / v->steps_per_epoch + 1;
    if (e > v->epochs) e = v->epochs;
    return (int)e;
}

/* -------------------------------------------------------------- layout */

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// Two halves under the title: the curves on the left (loss, accuracy, the
// schedule, the numbers), the model on the right (its attention, the pictures,
// the layers or the confusion matrix). With room for both, the layers table
// goes under the curves and the confusion matrix under the pictures.
TrainLayout train_layout(int cols, int rows) {
    TrainLayout l = {.cols = cols, .rows = rows};
    if (cols < TRAIN_MIN_COLS || rows < TRAIN_MIN_ROWS) {
        l.too_small = true;
        return l;
    }
    const int body_y = 1, body_h = rows - 2;
    l.title = (Rect){0, 0, 1, cols};
    l.status = (Rect){rows - 1, 0, 1, cols};
    const int left_w = cols / 2, right_x = left_w + 1, right_w = cols - right_x;
    l.sep_x = left_w;
    l.both = cols >= 120 && rows >= 40;
    // the left half, top to bottom
    const int lr_h = l.both ? 5 : 3, facts_h = l.both ? 4 : body_h >= 22 ? 4 : 3;
    const int layers_h = l.both ? clamp(body_h / 4, 6, 14) : 0;
    const int charts_h = body_h - lr_h - facts_h - layers_h;
    const int loss_h = (charts_h + 1) / 2, acc_h = charts_h - loss_h;
    int y = body_y;
    l.loss = (Rect){y, 0, loss_h, left_w}, y += loss_h;
    l.accuracy = (Rect){y, 0, acc_h, left_w}, y += acc_h;
    l.lr = (Rect){y, 0, lr_h, left_w}, y += lr_h;
    l.facts = (Rect){y, 0, facts_h, left_w}, y += facts_h;
    if (l.both) l.layers = (Rect){y, 0, body_y + body_h - y, left_w};
    // the right half
    y = body_y;
    const int pictures_h = l.both ? clamp(body_h / 4, 6, 12) : body_h * 3 / 11;
    const int confusion_h = clamp(body_h * 3 / 8, 8, 16); // with both: a row per class
    const int attention_h = l.both ? body_h - pictures_h - confusion_h : (body_h * 2 + 4) / 5;
    l.attention = (Rect){y, right_x, attention_h, right_w}, y += attention_h;
    l.pictures = (Rect){y, right_x, pictures_h, right_w}, y += pictures_h;
    l.confusion = (Rect){y, right_x, body_y + body_h - y, right_w};
    if (!l.both) l.layers = l.confusion; // one pane, Tab switches
    return l;
}

/* ---------------------------------------------------------------- keys */

static TrainAction key_pause(TrainView *v, int key) {
    if (v->finished) {
        train_view_message(v, "the run is finished: q leaves");
        return TV_NONE;
    }
    v->paused = !v->paused;
    train_view_message(v, v->paused ? "paused: . takes one step, d debugs it, space resumes" : "running");
    return TV_NONE;
}

// . and d act on the next step, and only while paused: `a`, or a line saying why not.
static TrainAction on_next_step(TrainView *v, TrainAction a, const char *key_does) {
    if (v->finished) {
        train_view_message(v, "the run is finished: no step left");
        return TV_NONE;
    }
    if (!v->paused) {
        train_view_message(v, "%s while paused (space pauses)", key_does);
        return TV_NONE;
    }
    return a;
}

static TrainAction key_step(TrainView *v, int key) {
    return on_next_step(v, TV_STEP, ". takes one step");
}

static TrainAction key_debug(TrainView *v, int key) {
    return on_next_step(v, TV_DEBUG, "d opens the debugger on the next step");
}

static TrainAction key_picture(TrainView *v, int key) {
    if (v->pictures <= 1) {
        train_view_message(v, "the panel has one picture");
        return TV_NONE;
    }
    v->picture = (v->picture + (key == '}' ? 1 : v->pictures - 1)) % v->pictures;
    train_view_message(v, "picture %d of %d", v->picture + 1, v->pictures);
    return TV_PANEL;
}

static TrainAction key_layer(TrainView *v, int key) {
    const int to = v->layer + (key == 'j' ? 1 : -1);
    if (to < 0 || to >= v->depth) {
        train_view_message(v, "layers are 0 to %d", v->depth - 1);
        return TV_NONE;
    }
    v->layer = to;
    return TV_PANEL;
}

static TrainAction key_head(TrainView *v, int key) {
    if (key >= '0' && key <= '9') {
        if (key - '0' >= v->heads) {
            train_view_message(v, "heads are 0 to %d", v->heads - 1);
            return TV_NONE;
        }
        v->head = key - '0';
    } else v->head = (v->head + (key == ']' ? 1 : v->heads - 1)) % v->heads;
    return TV_PANEL;
}

static TrainAction key_redraw(TrainView *v, int key) {
    const int ms = key == '+' ? v->redraw_ms / 2 : v->redraw_ms * 2;
    v->redraw_ms = clamp(ms, TRAIN_REDRAW_MIN_MS, TRAIN_REDRAW_MAX_MS);
    train_view_message(v, "redraw every %d ms", v->redraw_ms);
    return TV_NONE;
}

static TrainAction key_detail(TrainView *v, int key) {
    if (v->layout.both) {
        train_view_message(v, "both the layers and the confusion matrix are shown");
        return TV_NONE;
    }
    v->detail = v->detail == DETAIL_LAYERS ? DETAIL_CONFUSION : DETAIL_LAYERS;
    return TV_NONE;
}

static TrainAction key_help(TrainView *v, int key) {
    v->help = true;
    return TV_NONE;
}

static TrainAction key_quit(TrainView *v, int key) { return TV_QUIT; }

static const TrainKey bindings[] = {
    {{' '}, "space", "pause / resume the training", key_pause},
    {{'.'}, ".", "while paused: one optimizer step", key_step},
    {{'d'}, "d", "while paused: the debugger on the next step (its forward, backward and "
                 "AdamW update, on a copy: q comes back, the run as if unwatched)", key_debug},
    {{'}', '{'}, "} {", "next / previous picture of the panel (its attention is drawn)",
     key_picture},
    {{'j', 'k'}, "j k ↓ ↑", "next / previous layer of the attention", key_layer},
    {{'[', ']'}, "[ ]", "previous / next head", key_head},
    {{'0', '1', '2', '3', '4'}, "0-9", "head 0 … 9", key_head},
    {{'5', '6', '7', '8', '9'}, "", "", key_head},
    {{'+', '-'}, "+ -", "redraw more / less often (the cost is in the status row)", key_redraw},
    {{'\t'}, "Tab", "the layers table ↔ the confusion matrix (when only one fits)",
     key_detail},
    {{'?'}, "?", "this help (any key closes it)", key_help},
    {{'q'}, "q", "stop: a checkpoint is saved, as Ctrl-C does in vit train", key_quit},
};

const TrainKey *train_view_keys(int *count) {
    *count = (int)(sizeof bindings / sizeof bindings[0]);
    return bindings;
}

TrainAction train_view_key(TrainView *v, int key) {
    if (v->help) { // any key closes the help
        v->help = false;
        return TV_NONE;
    }
    for (size_t i = 0; i < sizeof bindings / sizeof bindings[0]; i++)
        for (const int *k = bindings[i].keys; *k; k++)
            if (*k == key) return bindings[i].fn(v, key);
    return TV_UNHANDLED;
}

/* -------------------------------------------------------------- charts */

void chart_columns(float *out, int W, const float *y, int n, int64_t total) {
    for (int c = 0; c < W; c++) {
        int64_t a = (int64_t)c * total / W, b = (int64_t)(c + 1) * total / W;
        if (b <= a) b = a + 1;
        if (b > n) b = n;
        double sum = 0;
        int count = 0;
        for (int64_t i = a; i < b; i++)
            if (isfinite(y[i])) sum += y[i], count++;
        out[c] = count ? (float)(sum / count) : NAN;
    }
}

void chart_range(float *lo, float *hi, const float *v, int n) {
    float a = 0, b = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        if (v[i] < a) a = v[i];
        if (v[i] > b) b = v[i];
    }
    if (b == -INFINITY) { // nothing yet: the unit range
        *lo = 0, *hi = 1;
        return;
    }
    b += (b - a) / 20;
    if (b <= a) b = a + 1;
    *lo = a, *hi = b;
}

int chart_row(float value, float lo, float hi, int H) {
    if (isnan(value) || H <= 0) return -1;
    float t = hi > lo ? (value - lo) / (hi - lo) : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return (H - 1) - (int)lroundf(t * (float)(H - 1));
}

// The bit of dot (dx, dy) of a braille cell, dx in 0..1, dy in 0..3 from the top
// (Unicode's dot numbering: 1 2 3 7 down the left, 4 5 6 8 down the right).
static const uint8_t dot_bit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

void chart_dots(uint8_t *cells, int W, int H, const float *y, float lo, float hi) {
    memset(cells, 0, (size_t)W * H);
    int prev = -1;
    for (int x = 0; x < 2 * W; x++) {
        const int r = chart_row(y[x], lo, hi, 4 * H);
        if (r < 0) {
            prev = -1;
            continue;
        }
        int from = prev < 0 ? r : prev;
        if (from != r) from += from < r ? 1 : -1; // the previous column has its own dot
        const int top = from < r ? from : r, bottom = from < r ? r : from;
        for (int d = top; d <= bottom; d++) // the jump from the previous column, filled
            cells[(d / 4) * W + x / 2] |= dot_bit[d % 4][x % 2];
        prev = r;
    }
}
