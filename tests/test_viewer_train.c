/**
 * @file test_viewer_train.c
 * @brief The training screen's parts that need no terminal (viewer/train_view.h,
 *        viewer/train_panel.h): the charts' columns, range and braille dots,
 *        the layout at 80×24 and 160×50, the keys, the cost of watching, and
 *        the panel's pass against the model's own.
 *
 * Expected values are worked out by hand in the comments, or come from a
 * plain vit_forward() of the model with a trace recorder: never from the code
 * under test.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "../viewer/format.h"
#include "../viewer/train_panel.h"
#include "../viewer/train_view.h"
#include "base/rng.h"
#include "base/trace.h"

/* -------------------------------------------------------------- charts */

// 10 steps over 5 columns: two steps a column, each column their mean.
static void test_columns_mean_two_steps_each(void) {
    const float y[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    float out[5];
    chart_columns(out, 5, y, 10, 10);
    const float want[5] = {0.5f, 2.5f, 4.5f, 6.5f, 8.5f};
    for (int c = 0; c < 5; c++) CU_ASSERT_DOUBLE_EQUAL(out[c], want[c], 1e-6);
}

// Three of ten steps taken: the curve reaches the second column, the rest is empty.
static void test_columns_grow_from_the_left(void) {
    const float y[3] = {4, 2, 7};
    float out[5];
    chart_columns(out, 5, y, 3, 10);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 3.0, 1e-6); // steps 0 and 1
    CU_ASSERT_DOUBLE_EQUAL(out[1], 7.0, 1e-6); // step 2 alone (step 3 not taken)
    for (int c = 2; c < 5; c++) CU_ASSERT_TRUE(isnan(out[c]));
}

// Fewer steps than columns: each step spans whole columns; a NaN loss is skipped.
static void test_columns_stretch_and_skip_nan(void) {
    const float y[2] = {1, NAN};
    float out[4];
    chart_columns(out, 4, y, 2, 2);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 1.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 1.0, 1e-6);
    CU_ASSERT_TRUE(isnan(out[2]));
    CU_ASSERT_TRUE(isnan(out[3]));
}

static void test_range(void) {
    float lo, hi;
    const float pos[3] = {1, 3, NAN};
    chart_range(&lo, &hi, pos, 3);
    CU_ASSERT_DOUBLE_EQUAL(lo, 0.0, 1e-6);  // from 0
    CU_ASSERT_DOUBLE_EQUAL(hi, 3.15, 1e-5); // 3 + 3/20
    const float both[2] = {-2, 2};
    chart_range(&lo, &hi, both, 2);
    CU_ASSERT_DOUBLE_EQUAL(lo, -2.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(hi, 2.2, 1e-5); // 2 + 4/20
    chart_range(&lo, &hi, NULL, 0);
    CU_ASSERT_DOUBLE_EQUAL(lo, 0.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(hi, 1.0, 1e-6);
}

static void test_row(void) {
    CU_ASSERT_EQUAL(chart_row(0, 0, 1, 4), 3); // the bottom
    CU_ASSERT_EQUAL(chart_row(1, 0, 1, 4), 0); // the top
    CU_ASSERT_EQUAL(chart_row(0.5f, 0, 1, 5), 2);
    CU_ASSERT_EQUAL(chart_row(7, 0, 1, 4), 0);  // clamped
    CU_ASSERT_EQUAL(chart_row(-7, 0, 1, 4), 3);
    CU_ASSERT_EQUAL(chart_row(NAN, 0, 1, 4), -1);
}

// Braille dots: bits 0x01 0x02 0x04 0x40 down the left column, 0x08 0x10 0x20 0x80 the right.
static void test_dots(void) {
    uint8_t cell;
    const float flat[2] = {0, 0};
    chart_dots(&cell, 1, 1, flat, 0, 1);
    CU_ASSERT_EQUAL(cell, 0x40 | 0x80); // both dots of the bottom row
    const float rise[2] = {0, 1};
    chart_dots(&cell, 1, 1, rise, 0, 1);
    // left: the bottom dot; right: the top and the jump down to just above the left's
    CU_ASSERT_EQUAL(cell, 0x40 | 0x08 | 0x10 | 0x20);
    const float gap[2] = {NAN, 1};
    chart_dots(&cell, 1, 1, gap, 0, 1);
    CU_ASSERT_EQUAL(cell, 0x08); // nothing before it to join
    // two cells high: the value 1 is in the upper cell, 0 in the lower
    uint8_t cells[2];
    const float two[2] = {1, 1};
    chart_dots(cells, 1, 2, two, 0, 1);
    CU_ASSERT_EQUAL(cells[0], 0x01 | 0x08);
    CU_ASSERT_EQUAL(cells[1], 0);
}

/* -------------------------------------------------------------- layout */

static bool inside(Rect r, int cols, int rows) {
    return r.x >= 0 && r.y >= 0 && r.w > 0 && r.h > 0 && r.x + r.w <= cols && r.y + r.h <= rows;
}

// Every pane inside the screen, none on another (the shared pane counted once).
static void check_train_layout(const TrainLayout *l) {
    CU_ASSERT_FALSE_FATAL(l->too_small);
    const Rect panes[10] = {l->title, l->loss, l->accuracy, l->lr, l->facts, l->attention,
                            l->pictures, l->confusion, l->status, l->layers};
    const int n = l->both ? 10 : 9;
    for (int i = 0; i < n; i++) {
        CU_ASSERT(inside(panes[i], l->cols, l->rows));
        for (int j = i + 1; j < n; j++) CU_ASSERT_FALSE(rect_overlap(panes[i], panes[j]));
    }
    CU_ASSERT_EQUAL(l->status.y, l->rows - 1);
    CU_ASSERT(l->sep_x >= l->loss.x + l->loss.w);      // the curves left of the line
    CU_ASSERT(l->attention.x > l->sep_x);              // the model right of it
    CU_ASSERT_EQUAL(l->lr.x, l->loss.x);               // the schedule under the curves,
    CU_ASSERT_EQUAL(l->lr.w, l->loss.w);               // on their x axis
    CU_ASSERT(l->loss.h >= 6 && l->accuracy.h >= 6);   // a title, four rows of dots, the axis
}

static void test_layout_80x24(void) {
    const TrainLayout l = train_layout(80, 24);
    check_train_layout(&l);
    CU_ASSERT_FALSE(l.both); // Tab switches the layers and the confusion matrix
    CU_ASSERT_EQUAL(l.layers.y, l.confusion.y);
    CU_ASSERT_EQUAL(l.layers.h, l.confusion.h);
    CU_ASSERT(l.confusion.h >= 6);  // a heading and ten classes in five half-block rows
    CU_ASSERT(l.attention.h >= 8);  // a heading, a 28-pixel picture in 7 rows
}

static void test_layout_160x50(void) {
    const TrainLayout l = train_layout(160, 50), small = train_layout(80, 24);
    check_train_layout(&l);
    CU_ASSERT_TRUE(l.both);
    CU_ASSERT(l.confusion.h >= 11); // a heading and a row per class, the counts in the cells
    CU_ASSERT(l.layers.h >= 7);     // a heading and six blocks at least
    CU_ASSERT(l.loss.w > small.loss.w && l.loss.h > small.loss.h); // the room goes to the curves
    CU_ASSERT(l.attention.h > small.attention.h);
}

static void test_layout_every_size(void) {
    for (int cols = TRAIN_MIN_COLS; cols <= 200; cols += 9)
        for (int rows = TRAIN_MIN_ROWS; rows <= 64; rows += 5) {
            const TrainLayout l = train_layout(cols, rows);
            check_train_layout(&l);
        }
    CU_ASSERT_TRUE(train_layout(TRAIN_MIN_COLS - 1, 30).too_small);
    CU_ASSERT_TRUE(train_layout(100, TRAIN_MIN_ROWS - 1).too_small);
}

/* ---------------------------------------------------------------- keys */

static void make_view(TrainView *v) {
    const float schedule[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    train_view_init(v, 3, 4, 10, 7, 4, 2, 2, schedule);
    v->pictures = 5;
    train_view_resize(v, 80, 24);
}

static void test_keys_pause_and_step(void) {
    TrainView v;
    make_view(&v);
    CU_ASSERT_EQUAL(train_view_key(&v, '.'), TV_NONE); // running: . only says how
    CU_ASSERT_PTR_NOT_NULL(strstr(v.message, "paused"));
    CU_ASSERT_EQUAL(train_view_key(&v, ' '), TV_NONE);
    CU_ASSERT_TRUE(v.paused);
    CU_ASSERT_EQUAL(train_view_key(&v, '.'), TV_STEP);
    CU_ASSERT_EQUAL(train_view_key(&v, 'd'), TV_DEBUG); // paused: the debugger on the next step
    CU_ASSERT_EQUAL(train_view_key(&v, ' '), TV_NONE);
    CU_ASSERT_FALSE(v.paused);
    CU_ASSERT_EQUAL(train_view_key(&v, 'd'), TV_NONE); // running: d only says how
    CU_ASSERT_PTR_NOT_NULL(strstr(v.message, "d opens the debugger on the next step while paused"));
    CU_ASSERT_EQUAL(train_view_key(&v, 'q'), TV_QUIT);
    v.finished = true;
    CU_ASSERT_EQUAL(train_view_key(&v, ' '), TV_NONE);
    CU_ASSERT_FALSE(v.paused); // nothing left to pause
    v.paused = true;
    CU_ASSERT_EQUAL(train_view_key(&v, 'd'), TV_NONE); // nor to debug
    CU_ASSERT_PTR_NOT_NULL(strstr(v.message, "no step left"));
    train_view_free(&v);
}

static void test_keys_choose_what_is_drawn(void) {
    TrainView v;
    make_view(&v);
    CU_ASSERT_EQUAL(v.layer, 2); // the last layer first
    CU_ASSERT_EQUAL(train_view_key(&v, '{'), TV_PANEL);
    CU_ASSERT_EQUAL(v.picture, 4); // wraps to the last of 5
    CU_ASSERT_EQUAL(train_view_key(&v, '}'), TV_PANEL);
    CU_ASSERT_EQUAL(v.picture, 0);
    CU_ASSERT_EQUAL(train_view_key(&v, 'j'), TV_NONE); // no layer 3
    CU_ASSERT_EQUAL(v.layer, 2);
    CU_ASSERT_EQUAL(train_view_key(&v, 'k'), TV_PANEL);
    CU_ASSERT_EQUAL(v.layer, 1);
    CU_ASSERT_EQUAL(train_view_key(&v, '['), TV_PANEL);
    CU_ASSERT_EQUAL(v.head, 3); // wraps to the last of 4
    CU_ASSERT_EQUAL(train_view_key(&v, '2'), TV_PANEL);
    CU_ASSERT_EQUAL(v.head, 2);
    CU_ASSERT_EQUAL(train_view_key(&v, '7'), TV_NONE); // heads are 0 to 3
    CU_ASSERT_EQUAL(v.head, 2);
    CU_ASSERT_EQUAL(train_view_key(&v, 'Z'), TV_UNHANDLED);
    train_view_free(&v);
}

static void test_keys_redraw_help_tab(void) {
    TrainView v;
    make_view(&v);
    CU_ASSERT_EQUAL(v.redraw_ms, TRAIN_REDRAW_MS);
    train_view_key(&v, '+');
    CU_ASSERT_EQUAL(v.redraw_ms, TRAIN_REDRAW_MS / 2);
    for (int i = 0; i < 10; i++) train_view_key(&v, '+');
    CU_ASSERT_EQUAL(v.redraw_ms, TRAIN_REDRAW_MIN_MS);
    for (int i = 0; i < 20; i++) train_view_key(&v, '-');
    CU_ASSERT_EQUAL(v.redraw_ms, TRAIN_REDRAW_MAX_MS);
    CU_ASSERT_EQUAL(v.detail, DETAIL_LAYERS);
    train_view_key(&v, '\t');
    CU_ASSERT_EQUAL(v.detail, DETAIL_CONFUSION);
    train_view_key(&v, '?');
    CU_ASSERT_TRUE(v.help);
    CU_ASSERT_EQUAL(train_view_key(&v, 'q'), TV_NONE); // closes the help, does not stop
    CU_ASSERT_FALSE(v.help);
    int n;
    const TrainKey *keys = train_view_keys(&n);
    CU_ASSERT(n >= 10);
    for (int i = 0; i < n; i++) CU_ASSERT_PTR_NOT_NULL(keys[i].fn);
    train_view_free(&v);
}

static void test_overhead_and_clock(void) {
    TrainView v;
    make_view(&v);
    CU_ASSERT_DOUBLE_EQUAL(train_view_overhead(&v), 0.0, 1e-12); // nothing measured yet
    v.train_seconds = 95, v.watch_seconds = 5;
    CU_ASSERT_DOUBLE_EQUAL(train_view_overhead(&v), 0.05, 1e-12);
    // a redraw is due after the interval, and after its cost over the budget: 3 % of the time
    v.redraw_seconds = 0.003;
    CU_ASSERT_FALSE(train_view_redraw_due(&v, 0.1));  // 100 ms < the interval
    CU_ASSERT_TRUE(train_view_redraw_due(&v, 0.25));  // 3 ms ≤ 3 % of 250 ms
    v.redraw_seconds = 0.03;                          // a slow one: 30 ms
    CU_ASSERT_FALSE(train_view_redraw_due(&v, 0.5));  // 3 % of 0.5 s is 15 ms
    CU_ASSERT_TRUE(train_view_redraw_due(&v, 1.0));   // 3 % of 1 s is 30 ms
    CU_ASSERT_EQUAL(train_view_epoch(&v), 1);
    v.step = 2;
    CU_ASSERT_EQUAL(train_view_epoch(&v), 2);
    v.step = 4; // finished: still the last epoch
    CU_ASSERT_EQUAL(train_view_epoch(&v), 2);
    char buf[16];
    CU_ASSERT_STRING_EQUAL(fmt_clock(buf, sizeof buf, 125), "0:02:05");
    CU_ASSERT_STRING_EQUAL(fmt_clock(buf, sizeof buf, 3600 + 61), "1:01:01");
    CU_ASSERT_STRING_EQUAL(fmt_clock(buf, sizeof buf, NAN), "-:--:--");
    char ascii[32]; // the layers table's headings on a terminal without UTF-8
    CU_ASSERT_STRING_EQUAL(fmt_ascii(ascii, sizeof ascii, "‖∇‖ ‖Δθ‖/‖θ‖"), "|g| |dw|/|w|");
    train_view_free(&v);
}

/* --------------------------------------------------------------- panel */

// A data set of six 8×8 grey pictures, labels 2 0 2 1 0 1 of three classes.
static const unsigned char LABELS[6] = {2, 0, 2, 1, 0, 1};

static Dataset tiny_dataset(unsigned char *pixels) {
    for (int i = 0; i < 6 * 64; i++) pixels[i] = (unsigned char)((i * 37) % 256);
    return (Dataset){.count = 6, .channels = 1, .size = 8, .classes = 3, .pixels = pixels,
                     .labels = LABELS};
}

static void test_panel_picks_a_picture_per_class(void) {
    unsigned char pixels[6 * 64];
    const Dataset d = tiny_dataset(pixels);
    int idx[8];
    CU_ASSERT_EQUAL(train_panel_pick(idx, &d, 8), 3);
    CU_ASSERT_EQUAL(idx[0], 1); // the first 0
    CU_ASSERT_EQUAL(idx[1], 3); // the first 1
    CU_ASSERT_EQUAL(idx[2], 0); // the first 2
    CU_ASSERT_EQUAL(train_panel_pick(idx, &d, 2), 2);
}

// The panel's pass (a batch of three, on a probe) against the model's own pass of
// one picture recorded by the trace: the same [cls] row and the same prediction.
static void test_panel_matches_the_model(void) {
    unsigned char pixels[6 * 64];
    const Dataset d = tiny_dataset(pixels);
    const VitConfig cfg = {.image_size = 8, .patch_size = 2, .channels = 1, .dim = 8,
                           .depth = 2, .heads = 2, .mlp_dim = 16, .num_classes = 3,
                           .ln_eps = 1e-6f};
    Vit vit;
    VitError err;
    const VitInit init = vit_init_timm(5);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &cfg, &init, &err), VIT_OK);
    TrainView v;
    const float lr = 0;
    train_view_init(&v, cfg.depth, cfg.heads, cfg.num_classes, 4, 1, 1, 1, &lr);
    TrainPanel p;
    CU_ASSERT_EQUAL_FATAL(train_panel_init(&p, &v, &vit, &d, 0.5f, 0.25f, &err), VIT_OK);
    CU_ASSERT_EQUAL(v.pictures, 3);
    CU_ASSERT_EQUAL(v.truth[2], 2);
    CU_ASSERT_EQUAL(v.thumbs[64 + 5].r, pixels[3 * 64 + 5]); // picture 1 is image 3
    v.picture = 1, v.layer = 1, v.head = 1;
    CU_ASSERT_EQUAL_FATAL(train_panel_update(&p, &v, &err), VIT_OK);
    CU_ASSERT_TRUE(v.has_panel);

    // the reference: image 3 alone through the model, normalised by hand
    Tensor x = tensor_new(4, 1, 1, 8, 8);
    for (int k = 0; k < 64; k++) x.data[k] = (pixels[3 * 64 + k] / 255.0f - 0.5f) / 0.25f;
    TraceRecorder rec = {0};
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, trace_record, &rec, &err), VIT_OK);
    const Tensor *probs = trace_find(&rec, "blocks.1.attn.probs"); // (1, 2, 17, 17)
    CU_ASSERT_PTR_NOT_NULL_FATAL(probs);
    const float *row = probs->data + (size_t)1 * 17 * 17; // head 1, query [cls]
    CU_ASSERT_DOUBLE_EQUAL(v.attention_cls, row[0], 1e-5);
    double sum = v.attention_cls;
    for (int k = 1; k < 17; k++) {
        CU_ASSERT_DOUBLE_EQUAL(v.attention[k - 1], row[k], 1e-5);
        sum += v.attention[k - 1];
    }
    CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-5); // a softmax row
    const float *logits = trace_find(&rec, "logits")->data;
    int best = 0;
    for (int y = 1; y < 3; y++)
        if (logits[y] > logits[best]) best = y;
    CU_ASSERT_EQUAL(v.predicted[1], best);
    double z = 0;
    for (int y = 0; y < 3; y++) z += exp(logits[y] - logits[best]);
    CU_ASSERT_DOUBLE_EQUAL(v.prob[1], 1.0 / z, 1e-5);
    trace_recorder_free(&rec);
    tensor_free(&x);
    train_panel_free(&p);
    train_view_free(&v);
    vit_free(&vit); // the probe borrowed these weights: still whole to free here
}

CU_TestInfo tests_viewer_train[] = {
    {"chart columns: the mean of their steps", test_columns_mean_two_steps_each},
    {"chart columns: the curve grows from the left", test_columns_grow_from_the_left},
    {"chart columns: few steps stretch, NaN skipped", test_columns_stretch_and_skip_nan},
    {"chart range", test_range},
    {"chart row", test_row},
    {"braille dots", test_dots},
    {"layout 80x24: one pane for layers and confusion", test_layout_80x24},
    {"layout 160x50: everything at once", test_layout_160x50},
    {"layout at every size", test_layout_every_size},
    {"keys: pause, step, stop", test_keys_pause_and_step},
    {"keys: picture, layer, head", test_keys_choose_what_is_drawn},
    {"keys: redraw interval, Tab, help", test_keys_redraw_help_tab},
    {"the cost of watching; the clock; ASCII headings", test_overhead_and_clock},
    {"panel: a picture per class", test_panel_picks_a_picture_per_class},
    {"panel: its pass is the model's", test_panel_matches_the_model},
    CU_TEST_INFO_NULL,
};
